package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// claimDevice holds a block device for the writes of a run, from the
// busy check to the end: diskprep's lock on its device number (a prepare
// or release of it refuses meanwhile) and an exclusive open (the kernel
// then refuses a mount, a stack or another tool's exclusive open). The
// engine's own opens are not exclusive, so they still succeed.
func (t *target) claimDevice() (release func(), err error) {
	return claim(t.roots, t.path, t.major, t.minor)
}

// A Claim is a block device held for writes as a run holds it, taken by
// a caller before it looks at what is on the device and asks about it:
// nothing else can then write there between the look and the run. Run
// writes to a device of Options.Claims without claiming it again.
type Claim struct {
	major, minor uint32
	release      func()
}

// ClaimDevice claims the block device at path (roots: where the lock
// goes); Release ends the claim.
func ClaimDevice(roots hwinfo.Roots, path string) (*Claim, error) {
	major, minor, err := engine.DeviceOf(path)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", path, err)
	}
	release, err := claim(roots, path, major, minor)
	if err != nil {
		return nil, err
	}
	return &Claim{major: major, minor: minor, release: release}, nil
}

// Release ends the claim; a second call does nothing.
func (c *Claim) Release() {
	if c != nil && c.release != nil {
		c.release()
		c.release = nil
	}
}

// Holds says whether the claim is on the block device at path.
func (c *Claim) Holds(path string) bool {
	major, minor, err := engine.DeviceOf(path)
	return err == nil && c.on(major, minor)
}

// on says whether the claim, not yet released, is on device major:minor.
func (c *Claim) on(major, minor uint32) bool {
	return c != nil && c.release != nil && c.major == major && c.minor == minor
}

func claim(roots hwinfo.Roots, path string, major, minor uint32) (release func(), err error) {
	majmin := fmt.Sprintf("%d:%d", major, minor)
	lockPath := roots.DeviceLockPath(majmin)
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	lock, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid, _ := roots.LockHeld(lockPath)
			return nil, fmt.Errorf("will not write to %s: another diskprep (pid %s) holds it (lock %s): %w", path, pid, lockPath, ErrRefused)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	dev, err := os.OpenFile(path, os.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		lock.Close()
		if errors.Is(err, unix.EBUSY) {
			// What holds it, as the target's checks would say.
			why := fmt.Sprintf("%s is in use (exclusive open refused)", path)
			name := ""
			if link, err := os.Readlink(roots.SysPath("dev/block", majmin)); err == nil {
				name = filepath.Base(link)
			}
			if uses := roots.LiveUses(name, majmin, path); len(uses) > 0 {
				why = useText(uses[0], path)
			}
			return nil, fmt.Errorf("will not write to %s: %s: %w", path, why, ErrRefused)
		}
		return nil, fmt.Errorf("claim %s: %w", path, err)
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
