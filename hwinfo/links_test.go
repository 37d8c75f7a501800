package hwinfo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// linkTree is a LinkFS from a table: each path a directory, a link (its
// target) or a device node, with owner and mode; the directories above
// an entry are root's 0755 unless listed.
type linkTree map[string]linkNode

type linkNode struct {
	mode fs.FileMode
	uid  uint32
	link string
}

func (lt linkTree) Lstat(p string) (fs.FileInfo, error) {
	if n, ok := lt[p]; ok {
		return linkInfo{n}, nil
	}
	for q := range lt {
		if p == "/" || strings.HasPrefix(q, p+"/") {
			return linkInfo{linkNode{mode: fs.ModeDir | 0o755}}, nil
		}
	}
	return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
}

func (lt linkTree) Readlink(p string) (string, error) {
	if n, ok := lt[p]; ok && n.mode&fs.ModeSymlink != 0 {
		return n.link, nil
	}
	return "", &fs.PathError{Op: "readlink", Path: p, Err: syscall.EINVAL}
}

type linkInfo struct{ n linkNode }

func (i linkInfo) Name() string       { return "" }
func (i linkInfo) Size() int64        { return 0 }
func (i linkInfo) Mode() fs.FileMode  { return i.n.mode }
func (i linkInfo) ModTime() time.Time { return time.Time{} }
func (i linkInfo) IsDir() bool        { return i.n.mode.IsDir() }
func (i linkInfo) Sys() any           { return &syscall.Stat_t{Uid: i.n.uid} }

func symlink(to string, uid uint32) linkNode {
	return linkNode{mode: fs.ModeSymlink | 0o777, uid: uid, link: to}
}

// The rule, link by link: another user's link is refused wherever it is
// on the path, and so is a link of root's (or the caller's) where another
// user could replace it; the refusal names the link, why, and what the
// path leads to, read without opening anything.
func TestFollowTrustedLinks(t *testing.T) {
	const user, caller = 65534, 1000
	tree := linkTree{
		"/dev/sdb":                      {mode: fs.ModeDevice | 0o660},
		"/dev/tty0":                     {mode: fs.ModeDevice | fs.ModeCharDevice | 0o620},
		"/dev/disk/by-id/ata-X":         symlink("../../sdb", 0),
		"/dev/disk/by-id/chain":         symlink("/dev/disk/by-id/ata-X", 0),
		"/root/f":                       {mode: 0o600},
		"/tmp":                          {mode: fs.ModeDir | fs.ModeSticky | 0o777},
		"/tmp/x":                        symlink("/dev/sdb", user),
		"/tmp/d":                        symlink("/dev", user),
		"/tmp/f":                        symlink("/root/f", user),
		"/tmp/gone":                     symlink("/dev/nothing", user),
		"/tmp/tty":                      symlink("/dev/tty0", user),
		"/tmp/root":                     symlink("/dev/sdb", 0),
		"/tmp/mine":                     symlink("/dev/sdb", caller),
		"/tmp/hop":                      symlink("/tmp/x", 0),
		"/tmp/loop":                     symlink("loop", 0),
		"/home/u":                       {mode: fs.ModeDir | 0o755, uid: user},
		"/home/u/l":                     symlink("/dev/sdb", 0),
		"/home/shared":                  {mode: fs.ModeDir | fs.ModeSticky | 0o777, uid: user},
		"/home/shared/l":                symlink("/dev/sdb", 0),
		"/srv/drop":                     {mode: fs.ModeDir | 0o777},
		"/srv/drop/l":                   symlink("/dev/sdb", 0),
		"/srv/team":                     {mode: fs.ModeDir | 0o775},
		"/srv/team/l":                   symlink("/dev/sdb", 0),
		"/srv/ok/l":                     symlink("../../dev/./disk/by-id/ata-X", 0),
		"/dev/disk/by-id/ata-X-through": symlink("/tmp/d/sdb", 0),
	}
	for _, c := range []struct {
		path string
		euid uint32
		want string // the path followed, or the refusal; "!" + an error
	}{
		{"/dev/sdb", 0, "/dev/sdb"},
		{"/dev/disk/by-id/ata-X", 0, "/dev/sdb"},
		{"/dev/disk/by-id/chain", 0, "/dev/sdb"},
		{"/dev/disk/by-id/../by-id/ata-X", 0, "/dev/sdb"},
		{"/srv/ok/l", 0, "/dev/sdb"},
		{"/tmp/root", 0, "/dev/sdb"},
		{"/tmp/mine", caller, "/dev/sdb"},
		{"/tmp/root", caller, "/dev/sdb"},

		{"/tmp/x", 0, "/tmp/x is a link owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/tmp/mine", 0, "/tmp/mine is a link owned by uid 1000; give the device itself (/dev/sdb)"},
		{"/tmp/x", caller, "/tmp/x is a link owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/tmp/d/sdb", 0, "/tmp/d is a link owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/tmp/d/disk/by-id/ata-X", 0, "/tmp/d is a link owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/tmp/hop", 0, "/tmp/x is a link owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/dev/disk/by-id/ata-X-through", 0, "/tmp/d is a link owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/tmp/f", 0, "/tmp/f is a link owned by uid 65534; give the path itself (/root/f)"},
		{"/tmp/tty", 0, "/tmp/tty is a link owned by uid 65534; give the path itself (/dev/tty0)"},
		{"/tmp/gone", 0, "/tmp/gone is a link owned by uid 65534; give the path itself, without the link"},
		{"/tmp/d/nothing", 0, "/tmp/d is a link owned by uid 65534; give the path itself, without the link"},
		{"/home/u/l", 0, "/home/u/l is a link in /home/u, a directory owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/home/shared/l", 0, "/home/shared/l is a link in /home/shared, a directory owned by uid 65534; give the device itself (/dev/sdb)"},
		{"/srv/drop/l", 0, "/srv/drop/l is a link in /srv/drop, which other users may write (mode 0777); give the device itself (/dev/sdb)"},
		{"/srv/team/l", 0, "/srv/team/l is a link in /srv/team, which other users may write (mode 0775); give the device itself (/dev/sdb)"},

		{"/dev/nothing", 0, "!" + fs.ErrNotExist.Error()},
		{"/dev/sdb/x", 0, "!" + syscall.ENOTDIR.Error()},
		{"/tmp/loop", 0, "!" + syscall.ELOOP.Error()},
	} {
		got, err := followTrustedLinks(tree, c.path, c.euid)
		var le *LinkError
		switch {
		case strings.HasPrefix(c.want, "!"):
			if err == nil || errors.As(err, &le) || !strings.Contains(err.Error(), c.want[1:]) {
				t.Errorf("%s as %d: %q %v, want the error %q", c.path, c.euid, got, err, c.want[1:])
			}
		case strings.HasPrefix(c.want, "/") && !strings.Contains(c.want, " "):
			if err != nil || got != c.want {
				t.Errorf("%s as %d: %q %v, want %s", c.path, c.euid, got, err, c.want)
			}
		default:
			if !errors.As(err, &le) || !errors.Is(err, ErrUntrustedLink) || err.Error() != c.want || got != "" {
				t.Errorf("%s as %d: %q %v, want the refusal %q", c.path, c.euid, got, err, c.want)
			}
		}
	}
}

// On a real file system, as whoever runs the tests: a link of the
// caller's own in a sticky directory is followed, one in a directory
// others may write without the sticky bit is not; as root, a link whose
// owner is another user is refused too, and a relative path is resolved
// from the working directory.
func TestFollowTrustedLinksLive(t *testing.T) {
	dir := t.TempDir()
	dir, err := filepath.EvalSymlinks(dir) // TMPDIR may itself be a link
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mkdir := func(name string, mode fs.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		l := filepath.Join(p, "l")
		if err := os.Symlink("../file", l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	sticky, open := mkdir("sticky", 0o777|fs.ModeSticky), mkdir("open", 0o777)
	if got, err := FollowTrustedLinks(nil, sticky); err != nil || got != file {
		t.Errorf("own link in a sticky directory: %q %v, want %s", got, err, file)
	}
	_, err = FollowTrustedLinks(nil, open)
	if want := open + " is a link in " + filepath.Dir(open) + ", which other users may write (mode 0777); give the path itself (" + file + ")"; err == nil || err.Error() != want {
		t.Errorf("own link in a directory open to all: %v, want %q", err, want)
	}
	if os.Geteuid() != 0 {
		t.Skip("the rest needs root, to give a link to another user")
	}
	if err := os.Lchown(sticky, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = FollowTrustedLinks(nil, sticky)
	if want := sticky + " is a link owned by uid 65534; give the path itself (" + file + ")"; err == nil || err.Error() != want {
		t.Errorf("another user's link: %v, want %q", err, want)
	}
	t.Chdir(filepath.Dir(sticky))
	if _, err = FollowTrustedLinks(nil, "l"); err == nil || !strings.HasPrefix(err.Error(), sticky+" is a link owned by uid 65534") {
		t.Errorf("relative path: %v", err)
	}
}
