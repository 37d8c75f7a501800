package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// ownersOK, run as the test's own user (trusted), refuses a path another
// user could change through a mode: a directory writable by group or
// others without the sticky bit, reached directly, below a missing part,
// or through a link (absolute, relative, with ..). A sticky directory, a
// missing store under a good one and a link to a good directory pass.
func TestOwnersOKModes(t *testing.T) {
	me := uint32(os.Geteuid())
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	good := mk("good", 0o755)
	open := mk("open", 0o777)
	group := mk("group", 0o775)
	sticky := mk("sticky", 0o777|os.ModeSticky)
	link := func(name, target string) string {
		p := filepath.Join(good, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := filepath.Join(good, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want string // "" passes
	}{
		{good, ""},
		{filepath.Join(good, "not", "yet"), ""},
		{sticky, ""},
		{filepath.Join(sticky, "results"), ""},
		{link("to-good", good), ""},
		{link("to-sticky", "../sticky"), ""},
		{open, open + " is writable by other users (mode -rwxrwxrwx)"},
		{group, group + " is writable by other users (mode -rwxrwxr-x)"},
		{filepath.Join(open, "not", "yet"), open + " is writable by other users"},
		{link("to-open", open), open + " is writable by other users"},
		{filepath.Join(link("to-open-rel", "../good/../open"), "results"), open + " is writable by other users"},
		{filepath.Join(file, "results"), file + ": not a directory"},
	} {
		err := ownersOK(c.dir, me)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.dir, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		case c.want != "" && strings.Contains(c.want, "writable") && !errors.Is(err, ErrUnsafeStore):
			t.Errorf("%s: %v does not wrap ErrUnsafeStore", c.dir, err)
		}
	}
}

// A directory owned by a user other than root and the trusted one is
// refused, whatever its mode; run without root, the test's own files are
// such a user's when only root is trusted.
func TestOwnersOKOwner(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root the test's files are root's: TestPrivilegedStoreOwners covers this")
	}
	dir := t.TempDir()
	err := ownersOK(dir, 0)
	if !errors.Is(err, ErrUnsafeStore) || !strings.Contains(err.Error(), fmt.Sprintf("is owned by uid %d", os.Geteuid())) {
		t.Errorf("another user's directory: %v", err)
	}
	if err := ownersOK(dir, uint32(os.Geteuid())); err != nil {
		t.Errorf("the trusted user's directory: %v", err)
	}
}

// As root, for real: Save, CheckStore and Remove refuse a store in, or
// reached through a link owned by, another user (nobody, 65534), and
// create nothing there; a store only root can change takes the record,
// made 0755. That user's directory and links are made by a process of
// theirs, in a sticky world-writable directory as /tmp is, and refused
// with the kernel's fs.protected_symlinks off and on alike.
func TestPrivilegedStoreOwners(t *testing.T) {
	const nobody = testenv.Nobody
	base := testenv.SharedDir(t)
	userDir := filepath.Join(base, "user")
	rootOnly := filepath.Join(base, "root-only")
	if err := os.Mkdir(rootOnly, 0o700); err != nil {
		t.Fatal(err)
	}
	// The user's link into root's directory, from their own directory and
	// from the shared one.
	userLink := filepath.Join(userDir, "results")
	strayLink := filepath.Join(base, "stray")
	testenv.AsNobody(t, base, `mkdir -m 700 user && ln -s "$1" user/results && ln -s "$1" stray`, rootOnly)
	rec := recWithID("20261130T061500Z-aaaa")
	testenv.ProtectedSymlinks(t, func(t *testing.T) {
		for _, c := range []struct{ dir, want string }{
			{filepath.Join(userDir, "new"), userDir + " is owned by uid 65534"},
			{userLink, userDir + " is owned by uid 65534"},
			{strayLink, strayLink + " is a symbolic link owned by uid 65534"},
			{filepath.Join(strayLink, "new"), strayLink + " is a symbolic link owned by uid 65534"},
		} {
			err := Save(c.dir, rec)
			if !errors.Is(err, ErrUnsafeStore) || !errors.Is(err, ErrNotSaved) || !strings.Contains(err.Error(), "result not saved in "+c.dir+": "+c.want+"; root writes records only where no other user can change the path") {
				t.Errorf("Save(%s): %v", c.dir, err)
			}
			if err := CheckStore(c.dir); !errors.Is(err, ErrUnsafeStore) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckStore(%s): %v", c.dir, err)
			}
		}
		for _, d := range []string{userDir, rootOnly} {
			if des, _ := os.ReadDir(d); len(des) > 1 || (len(des) == 1 && des[0].Name() != "results") {
				t.Errorf("%s holds %v after the refusals", d, des)
			}
		}
	})

	good := filepath.Join(rootOnly, "store")
	if err := Save(good, rec); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(good); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("new store: %v %v", fi.Mode(), err)
	}
	// A store handed to another user later: its records can no longer be
	// removed (nor saved) by root.
	if err := os.Chown(good, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := Remove(good, rec.ID); !errors.Is(err, ErrUnsafeStore) {
		t.Errorf("Remove from another user's store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(good, rec.ID+".json")); err != nil {
		t.Errorf("record gone after a refused Remove: %v", err)
	}
	// Reading it is still allowed: its files are untrusted input anyway.
	if entries, _, err := List(good); err != nil || len(entries) != 1 {
		t.Errorf("List of another user's store: %v %v", entries, err)
	}
	if err := os.Chmod(good, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(good, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := Save(good, recWithID("20261130T061500Z-bbbb")); !errors.Is(err, ErrUnsafeStore) || !strings.Contains(err.Error(), good+" is writable by other users (mode -rwxrwxrwx)") {
		t.Errorf("Save into a world-writable store: %v", err)
	}
}
