package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockDevice takes diskprep's exclusive lock for a device, keyed by its
// device number so /dev/sdb and /dev/disk/by-id/... are one lock. The file
// holds the owner's pid so a refusal can name it. The lock dies with the
// process, so a crashed run never leaves a disk locked.
func lockDevice(runDir, device, devnum string) (unlock func(), err error) {
	dir := filepath.Join(runDir, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", device, err)
	}
	path := filepath.Join(dir, devnum+".lock")
	return flockFile(path, device)
}

func flockFile(path, what string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(b))
			if _, perr := strconv.Atoi(holder); perr != nil {
				holder = "unknown"
			}
			return nil, refuse(what, fmt.Sprintf("another diskprep (pid %s) holds %s (lock %s)", holder, what, path))
		}
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		// Empty the pid before unlocking so a stale pid is never read.
		f.Truncate(0)
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
