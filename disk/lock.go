package disk

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// lockDevice takes diskprep's exclusive lock for a device, keyed by its
// device number so /dev/sdb and /dev/disk/by-id/... are one lock. The file
// holds the owner's pid so a refusal can name it. The lock dies with the
// process, so a crashed run never leaves a disk locked.
func (a *applier) lockDevice(device, devnum string) (unlock func(), err error) {
	return a.host.Lock(a.roots.DeviceLockPath(devnum), device)
}

// lockImage is lockDevice for an image file, keyed by its real path.
func (a *applier) lockImage(path string) (func(), error) {
	return a.host.Lock(a.roots.ImageLockPath(path), path)
}

// held counts the locks this process holds, by file: flock(2) locks belong
// to an open file, so a second open by the same process would be refused
// as if another diskprep held it. LockTarget takes a lock before planning
// that Apply then takes again. It is process-wide, as the locks are: not a
// seam, the live host's bookkeeping.
var (
	heldMu sync.Mutex
	held   = map[string]int{}
)

// lockHolder reads the pid of the process holding the lock at path. The
// holder writes it just after taking the lock, so right then the file is
// empty or still names a killed earlier holder: wait a little for a pid
// that is alive.
func lockHolder(path string) string {
	for range 100 {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
				return strconv.Itoa(pid)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "unknown"
}
