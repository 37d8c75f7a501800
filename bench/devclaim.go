package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/bench/workload"
)

// claimDevice holds a block device for the writes of a run, from the
// busy check to the end: diskprep's lock on its device number (a prepare
// or release of it refuses meanwhile) and an exclusive open (the kernel
// then refuses a mount, a stack or another tool's exclusive open). The
// engine's own opens are not exclusive, so they still succeed.
func (t *target) claimDevice() (release func(), err error) {
	majmin := fmt.Sprintf("%d:%d", t.major, t.minor)
	lockPath := t.roots.DeviceLockPath(majmin)
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", t.path, err)
	}
	lock, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", t.path, err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid, _ := t.roots.LockHeld(lockPath)
			return nil, fmt.Errorf("will not write to %s: another diskprep (pid %s) holds it (lock %s): %w", t.path, pid, lockPath, ErrRefused)
		}
		return nil, fmt.Errorf("lock %s: %w", t.path, err)
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	dev, err := os.OpenFile(t.path, os.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		lock.Close()
		if errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("will not write to %s: it is in use (exclusive open refused): %w", t.path, ErrRefused)
		}
		return nil, fmt.Errorf("claim %s: %w", t.path, err)
	}
	return func() {
		dev.Close()
		lock.Truncate(0)
		lock.Close()
	}, nil
}

// anyWrites says whether a workload of ws writes.
func anyWrites(ws []workload.Workload) bool {
	for _, w := range ws {
		if w.Writes() {
			return true
		}
	}
	return false
}
