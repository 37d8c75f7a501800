package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/internal/units"
)

// testFile is the file a directory target gets for the length of a run.
//
// It holds the directory open so the file can still be removed when its
// path no longer leads there (the filesystem lazily unmounted, umount -l),
// and holds an flock on the file so the next run tells the leftover of a
// killed run (lock released by the kernel) from the file of a run going on
// now (lock held).
type testFile struct {
	path     string
	name     string
	dir      *os.File
	file     *os.File // open only for the lock
	dev, ino uint64
}

// createTestFile makes path, which must not exist, and locks it.
func createTestFile(path string) (*testFile, error) {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("create test file: %w", err)
	}
	name := filepath.Base(path)
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("create test file: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	tf := &testFile{path: path, name: name, dir: dir, file: os.NewFile(uintptr(fd), path)}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		tf.remove()
		return nil, fmt.Errorf("create test file: %w", err)
	}
	tf.dev, tf.ino = st.Dev, st.Ino
	// Advisory only: a filesystem without flock (some FUSE) still benches,
	// its leftovers are just reported as possibly in use.
	_ = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	return tf, nil
}

// check reports an error when tf's path no longer leads to the file the run
// made: the directory was removed, or its filesystem unmounted (lazily,
// while the run kept it busy). Going on would measure, or lay out a new
// test file on, whatever filesystem is under the path now.
func (tf *testFile) check() error {
	var st unix.Stat_t
	err := unix.Stat(tf.path, &st)
	if err == nil && st.Dev == tf.dev && st.Ino == tf.ino {
		return nil
	}
	if err == nil {
		err = errors.New("another file is at its path")
	}
	return fmt.Errorf("test file %s went away during the run (target directory removed or its filesystem unmounted?): %w", tf.path, err)
}

// remove deletes the test file through the held directory, so it goes even
// from a lazily unmounted filesystem, and releases everything. A file
// already gone is not an error.
func (tf *testFile) remove() error {
	err := unix.Unlinkat(int(tf.dir.Fd()), tf.name, 0)
	tf.file.Close()
	tf.dir.Close()
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove test file: %w", &os.PathError{Op: "unlink", Path: tf.path, Err: err})
	}
	return nil
}

// leftovers names test files of earlier runs in dir: files of runs that
// were killed (nobody holds their lock) are safe to remove and the warning
// says how; files of a run going on now share the disk with this one.
func leftovers(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, TestFileName("*")))
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		size := units.FormatSize(uint64(fi.Size()))
		switch testFileInUse(p) {
		case false:
			out = append(out, fmt.Sprintf("%s (%s) is a test file left by an earlier run that was killed: remove it (rm %s)", p, size, p))
		default:
			out = append(out, fmt.Sprintf("%s (%s) is the test file of another bench running now in this directory: both runs share the disk, so both measure less", p, size))
		}
	}
	return out
}

// testFileInUse reports whether a live run holds path's lock. When the lock
// cannot be probed it answers true: a file in doubt is never called stale.
func testFileInUse(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}
