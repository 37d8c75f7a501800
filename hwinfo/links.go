package hwinfo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUntrustedLink is wrapped by a LinkError: a path given to diskprep
// reaches what it names through a symbolic link that another user made,
// or could have replaced, so that user, not the one who typed the path,
// would choose the device root partitions, benchmarks or releases.
var ErrUntrustedLink = errors.New("another user's link")

// LinkFS reads a path's parts without following a final link, as os.Lstat
// and os.Readlink do (disk.Host is one).
type LinkFS interface {
	Lstat(path string) (fs.FileInfo, error)
	Readlink(path string) (string, error)
}

// LiveLinks is the LinkFS of the running machine.
type LiveLinks struct{}

func (LiveLinks) Lstat(path string) (fs.FileInfo, error) { return os.Lstat(path) }
func (LiveLinks) Readlink(path string) (string, error)   { return os.Readlink(path) }

// LinkError is the refusal of a path through a link root must not follow.
type LinkError struct {
	// Link is the link refused, as the walk reached it (the links before
	// it followed).
	Link string
	// Why says what makes it another user's: its owner, or its
	// directory's owner or mode.
	Why string
	// Target is what the whole path names, every link followed, read
	// without opening anything; "" when a part of it does not exist.
	Target string
	// Device says Target is a block device node.
	Device bool
}

// Error names the link, why it is refused and what to give instead:
// "/tmp/x is a link owned by uid 65534; give the device itself (/dev/loop3)".
func (e *LinkError) Error() string {
	instead := "give the path itself, without the link"
	switch {
	case e.Target != "" && e.Device:
		instead = "give the device itself (" + e.Target + ")"
	case e.Target != "":
		instead = "give the path itself (" + e.Target + ")"
	}
	return e.Link + " is a link " + e.Why + "; " + instead
}

func (e *LinkError) Is(target error) bool { return target == ErrUntrustedLink }

// FollowTrustedLinks is path, made absolute, with every symbolic link on
// it followed, final component and directories alike, as the kernel would
// resolve it; but it reads each link with lstat and readlink first and
// refuses (a *LinkError) one that a user other than root and the caller
// (the effective uid) made or could replace:
//
//   - a link owned by another user;
//   - a link in a directory owned by another user (they may replace
//     anything in it);
//   - a link in a directory other users may write (group or world) that
//     is not sticky: any of them may replace it between this walk and the
//     use of the path.
//
// That is the kernel's fs.protected_symlinks rule for root (which refuses
// another user's link in a sticky world-writable directory not theirs),
// whatever the sysctl says, and beyond it: a user's link in their own
// directory, and any link in a non-sticky writable one. Root's own links
// in root's directories (/dev/disk/by-id, udev's) are followed.
//
// Nothing is opened. A path that does not resolve (a part missing, not a
// directory, a loop) is that error, unless a link refused came first.
// lfs nil is the live machine.
func FollowTrustedLinks(lfs LinkFS, path string) (string, error) {
	return followTrustedLinks(lfs, path, uint32(os.Geteuid()))
}

// maxLinks is the kernel's limit on links followed in one path (ELOOP).
const maxLinks = 40

func followTrustedLinks(lfs LinkFS, path string, euid uint32) (string, error) {
	if lfs == nil {
		lfs = LiveLinks{}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	trusted := func(uid uint32) bool { return uid == 0 || uid == euid }
	var refused *LinkError
	fail := func(err error) (string, error) {
		if refused != nil {
			return "", refused
		}
		return "", err
	}
	cur, curDir := "/", true // cur is resolved: no links in it
	todo := strings.Split(abs, "/")
	for links := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch {
		case name == "":
			continue
		case !curDir:
			return fail(&fs.PathError{Op: "lstat", Path: cur, Err: syscall.ENOTDIR})
		case name == ".":
			continue
		case name == "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := lfs.Lstat(next)
		if err != nil {
			return fail(err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur, curDir = next, fi.IsDir()
			continue
		}
		if links++; links > maxLinks {
			return fail(&fs.PathError{Op: "lstat", Path: abs, Err: syscall.ELOOP})
		}
		if refused == nil {
			refused = judgeLink(lfs, next, fi, cur, trusted)
		}
		target, err := lfs.Readlink(next)
		if err != nil {
			return fail(err)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if refused != nil {
		refused.Target = cur
		if fi, err := lfs.Lstat(cur); err == nil && fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0 {
			refused.Device = true
		}
		return "", refused
	}
	return cur, nil
}

// judgeLink refuses the link at path (fi its lstat), in the resolved
// directory dir, when a user not trusted made it or could replace it.
func judgeLink(lfs LinkFS, path string, fi fs.FileInfo, dir string, trusted func(uint32) bool) *LinkError {
	uid, ok := ownerUID(fi)
	if !ok {
		return nil // no owner to judge by (not a Linux stat)
	}
	if !trusted(uid) {
		return &LinkError{Link: path, Why: fmt.Sprintf("owned by uid %d", uid)}
	}
	di, err := lfs.Lstat(dir)
	if err != nil {
		return nil
	}
	duid, ok := ownerUID(di)
	if !ok {
		return nil
	}
	perm := di.Mode().Perm()
	switch {
	case !trusted(duid):
		return &LinkError{Link: path, Why: fmt.Sprintf("in %s, a directory owned by uid %d", dir, duid)}
	case perm&0o022 != 0 && di.Mode()&fs.ModeSticky == 0:
		return &LinkError{Link: path, Why: fmt.Sprintf("in %s, which other users may write (mode %04o)", dir, perm)}
	}
	return nil
}

func ownerUID(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
