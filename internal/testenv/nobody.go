package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Nobody is the uid and gid of the local user the privileged tests play
// the attacker with: what root's commands must not trust is planted by a
// process of this user's, as it would be on a real host, not made by root
// and handed over with chown (which would show nothing of what the kernel
// lets or stops such a user doing).
const Nobody = 65534

// SharedDir is a directory as /tmp and /var/tmp are: root's, writable by
// everyone and sticky, reachable by Nobody, removed with t's temporary
// directories. t.TempDir's own directories are 0700, so the ones on the
// way to it are opened up; the directory above them (TMPDIR) must be
// reachable by every user, as /tmp is, or the test skips (fails when
// privileged tests are required).
func SharedDir(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "privileged test: needs root to run a process as uid %d", Nobody)
	}
	dir := t.TempDir()
	for d := dir; d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		mode := fi.Mode().Perm() | 0o755
		if d == dir {
			mode = 0o777 | os.ModeSticky
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := asNobody("/", `test -d "$1" && test -w "$1" && test -x "$1"`, dir); err != nil {
		SkipOrFail(t, "uid %d cannot reach %s (is every directory above it, as TMPDIR=%s, open to other users?): %v %s", Nobody, dir, os.TempDir(), err, out)
	}
	return dir
}

// AsNobody runs script with /bin/sh -c as uid and gid Nobody, with no
// supplementary groups, a bare environment and umask 022, in dir; args are
// its $1, $2 ... . It fails t when the script fails.
func AsNobody(t testing.TB, dir, script string, args ...string) {
	t.Helper()
	if out, err := asNobody(dir, script, args...); err != nil {
		t.Fatalf("as uid %d in %s: sh -c %q %q: %v\n%s", Nobody, dir, script, args, err, out)
	}
}

func asNobody(dir, script string, args ...string) ([]byte, error) {
	cmd := exec.Command("/bin/sh", append([]string{"-c", "umask 022\n" + script, "sh"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	// Groups nil: setgroups(0) drops root's supplementary groups too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// ProtectedSymlinks runs f once with the kernel's fs.protected_symlinks as
// it is, and once more with it on when it is off (it is on in the QEMU
// guest, as distributions ship it; off on some hosts), restoring the value
// after. On, the kernel itself refuses root the open of another user's
// link in a sticky world-writable directory: diskprep must refuse such a
// link by its own checks either way, with its own message and exit code,
// not fail on the kernel's EACCES. The setting is never turned off.
func ProtectedSymlinks(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	const knob = "/proc/sys/fs/protected_symlinks"
	b, err := os.ReadFile(knob)
	if err != nil {
		Unavailable(t, "fs.protected_symlinks", os.IsNotExist(err), err)
	}
	was := strings.TrimSpace(string(b))
	t.Run("protected_symlinks="+was, f)
	if v, _ := strconv.Atoi(was); v != 0 {
		return
	}
	t.Run("protected_symlinks=1", func(t *testing.T) {
		if err := os.WriteFile(knob, []byte("1\n"), 0o644); err != nil {
			SkipOrFail(t, "set fs.protected_symlinks=1: %v", err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(knob, []byte(was+"\n"), 0o644); err != nil {
				t.Errorf("restore fs.protected_symlinks=%s: %v", was, err)
			}
		})
		f(t)
	})
}
