package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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
//
// Between the create and the flock another run's removeLeftovers could
// take the new file for a killed run's (unlocked): it locks it first and
// removes it. The flock then fails, or the path no longer leads to the
// file once locked; either way the file is made again once the remover is
// done with it, so a file that is locked and still at its path is this
// run's for good.
func createTestFile(path string) (*testFile, error) {
	for attempt := 0; ; attempt++ {
		tf, err := createTestFileOnce(path)
		switch {
		case errors.Is(err, errTestFileTaken):
		case attempt > 0 && errors.Is(err, unix.EEXIST):
			// The remover has not unlinked it yet.
		default:
			return tf, err
		}
		if attempt == 50 {
			return nil, fmt.Errorf("create test file %s: another process keeps removing it", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var errTestFileTaken = errors.New("test file taken for a leftover")

func createTestFileOnce(path string) (*testFile, error) {
	// Not through a link at the directory's own name (one put there
	// since the target's checks): the test file goes where they looked.
	dfd, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create test file: %w", &os.PathError{Op: "open", Path: filepath.Dir(path), Err: err})
	}
	dir := os.NewFile(uintptr(dfd), filepath.Dir(path))
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
	err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	var now unix.Stat_t
	if errors.Is(err, unix.EWOULDBLOCK) ||
		unix.Fstatat(int(dir.Fd()), name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		// A remover of leftovers holds it, or has unlinked it: the name
		// is no longer this run's to remove.
		tf.file.Close()
		tf.dir.Close()
		return nil, errTestFileTaken
	}
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
	var err error
	var st unix.Stat_t
	if unix.Fstatat(int(tf.dir.Fd()), tf.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && (st.Dev != tf.dev || st.Ino != tf.ino) {
		// Another file, or a link, is at the name now: not the run's to
		// remove. The run's own, moved elsewhere, gives its space back.
		tf.file.Truncate(0)
	} else {
		err = unix.Unlinkat(int(tf.dir.Fd()), tf.name, 0)
	}
	tf.file.Close()
	tf.dir.Close()
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove test file: %w", &os.PathError{Op: "unlink", Path: tf.path, Err: err})
	}
	return nil
}

// removeLeftovers deletes the test files in dir that runs killed outright
// (SIGKILL, a power cut) left, so that a rerun converges: no stale file
// takes the space the run needs or stays behind for good. It returns one
// line for each file removed. A file goes only when this process may call
// it a leftover for sure: a regular file (not a link) of its own user,
// which it locks (no live run holds it) and still finds at its path once
// locked. Files of a run going on now, of another user, or on a
// filesystem without flock stay; leftovers names them.
func removeLeftovers(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, TestFileName("*")))
	var removed []string
	for _, p := range paths {
		if size, ok := removeLeftover(p); ok {
			removed = append(removed, fmt.Sprintf("removed %s (%s), the test file of an earlier run that was killed", p, units.FormatSize(size)))
		}
	}
	if len(removed) > 0 {
		// XFS frees an unlinked file's blocks in the background: until
		// then the free space the run is about to judge does not count
		// them (seen: 56 MiB free instead of 312). A syncfs waits for it.
		if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			unix.Syncfs(fd)
			unix.Close(fd)
		}
	}
	return removed
}

func removeLeftover(path string) (size uint64, ok bool) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uint32(os.Geteuid()) {
		return 0, false
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd) // after the unlink: the lock is held until then
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return 0, false // a live run's, or no flock here: in doubt, kept
	}
	var held, now unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(path, &now) != nil || now.Dev != held.Dev || now.Ino != held.Ino {
		return 0, false
	}
	if unix.Unlink(path) != nil {
		return 0, false
	}
	return uint64(held.Size), true
}

// leftovers names test files of earlier runs in dir that removeLeftovers
// left: files of runs that were killed (nobody holds their lock) but are
// not this user's, with how to remove them; files of a run going on now,
// which share the disk with this one.
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

// noSpaceHint says what would free space in dir for a test file: a
// smaller --size, the leftovers of killed runs removeLeftovers left (of
// another user), the runs going on there now.
func noSpaceHint(dir string) string {
	paths, _ := filepath.Glob(filepath.Join(dir, TestFileName("*")))
	var stale []string
	live := 0
	for _, p := range paths {
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if testFileInUse(p) {
			live++
		} else {
			stale = append(stale, p)
		}
	}
	hint := "lower --size"
	if len(stale) > 0 {
		hint += ", or remove the test files killed runs left there (rm " + strings.Join(stale, " ") + ")"
	}
	if live > 0 {
		hint += fmt.Sprintf(", or wait for the %d other bench(es) running there now", live)
	}
	return hint
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
