package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUnsafeStore is wrapped when root is asked to write into a results
// store that another user could change: through such a directory, or a
// link in its path, that user decides which file root creates or removes.
var ErrUnsafeStore = errors.New("refused for safety")

// CheckStore reports whether dir can take records before anything is
// measured: it must be a directory or not exist yet (Save makes it), and,
// when root writes it, neither it nor a directory above it may be
// changeable by another user.
func CheckStore(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		return fmt.Errorf("results store %s is not a directory", dir)
	}
	// The owners before stat's own error: with fs.protected_symlinks the
	// kernel answers root's stat through another user's link in /tmp with
	// EACCES, and the refusal says why and what to do.
	if err := checkStoreOwners(dir); err != nil {
		return fmt.Errorf("results store %s: %w", dir, err)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("results store: %w", err)
	}
	return nil
}

// checkStoreOwners is ownersOK for root. Another user's store is that
// user's business: they can change only what they could write anyway.
func checkStoreOwners(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return ownersOK(dir, 0)
}

// ownersOK walks dir from / the way the kernel resolves it, following
// each symbolic link, and fails (wrapping ErrUnsafeStore) at the first
// directory owned by a user other than root and trusted, or writable by
// its group or others without the sticky bit, and at a symbolic link owned
// by such a user. It stops at the first part that does not exist yet:
// what MkdirAll makes below is root's. trusted lets a test run it as the
// user it is.
func ownersOK(dir string, trusted uint32) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	refuse := func(why string) error {
		return fmt.Errorf("%s; root writes records only where no other user can change the path (make it root's and not group- or world-writable, or choose another --results): %w", why, ErrUnsafeStore)
	}
	trustedUID := func(uid uint32) bool { return uid == 0 || uid == trusted }
	cur := "/"
	todo := strings.Split(abs, "/")
	for links := 0; ; {
		fi, err := os.Lstat(cur)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner in its stat", cur)
		}
		switch {
		case !trustedUID(st.Uid):
			return refuse(fmt.Sprintf("%s is owned by uid %d", cur, st.Uid))
		case fi.Mode()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
			return refuse(fmt.Sprintf("%s is writable by other users (mode %v)", cur, fi.Mode().Perm()))
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s: %w", cur, syscall.ENOTDIR)
		}
		next := ""
		for len(todo) > 0 && next == "" {
			next, todo = todo[0], todo[1:]
			switch next {
			case ".":
				next = ""
			case "..":
				cur, next = filepath.Dir(cur), ""
			}
		}
		if next == "" {
			return nil
		}
		path := filepath.Join(cur, next)
		fi, err = os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = path
			continue
		}
		st, ok = fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner in its stat", path)
		}
		if !trustedUID(st.Uid) {
			return refuse(fmt.Sprintf("%s is a symbolic link owned by uid %d", path, st.Uid))
		}
		if links++; links > 40 {
			return fmt.Errorf("%s: %w", abs, syscall.ELOOP)
		}
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
}
