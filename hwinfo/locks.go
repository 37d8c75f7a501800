package hwinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DeviceLockPath is the file diskprep flocks while it prepares the block
// device majmin ("8:16"): keyed by device number, so /dev/sdb and
// /dev/disk/by-id/... are one lock.
func (r Roots) DeviceLockPath(majmin string) string {
	return filepath.Join(r.StateDir(), "locks", majmin+".lock")
}

// ImageLockPath is DeviceLockPath for an image file, keyed by its real path.
func (r Roots) ImageLockPath(realPath string) string {
	sum := sha256.Sum256([]byte(realPath))
	return filepath.Join(r.StateDir(), "locks", "image-"+hex.EncodeToString(sum[:8])+".lock")
}

// LockHeld says whether another process holds an flock on the file at path,
// and its pid, from proc/locks: it only reads, so it never makes a diskprep
// that is taking the lock right now fail to get it. Locks of this process
// do not count.
func (r Roots) LockHeld(path string) (pid string, held bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return "", false
	}
	b, err := os.ReadFile(r.ProcPath("locks"))
	if err != nil {
		return "", false
	}
	return flockHolder(string(b), uint64(st.Dev), st.Ino, os.Getpid())
}

// flockHolder finds in a proc/locks content the FLOCK held on inode ino of
// file-system device dev by a process other than self.
// A line: "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; waiters have
// "->" after the number and hold nothing.
func flockHolder(data string, dev, ino uint64, self int) (string, bool) {
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), ino)
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		if !sameLockID(f[5], want) || f[4] == strconv.Itoa(self) {
			continue
		}
		return f[4], true
	}
	return "", false
}

// sameLockID compares "MM:mm:inode" ids, the device numbers in hex of any
// width.
func sameLockID(a, b string) bool {
	pa, pb := strings.Split(a, ":"), strings.Split(b, ":")
	if len(pa) != 3 || len(pb) != 3 {
		return false
	}
	for i := 0; i < 2; i++ {
		x, err1 := strconv.ParseUint(pa[i], 16, 32)
		y, err2 := strconv.ParseUint(pb[i], 16, 32)
		if err1 != nil || err2 != nil || x != y {
			return false
		}
	}
	return pa[2] == pb[2]
}
