//go:build crashtest

package crashtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/internal/atomicfile"
	"github.com/diskprep/diskprep/internal/testenv"
	"golang.org/x/sys/unix"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	// Every run edits a temporary fstab (--fstab): the machine's own must
	// come out as it went in.
	etcBefore, _ := os.ReadFile("/etc/fstab")
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if etcAfter, _ := os.ReadFile("/etc/fstab"); !bytes.Equal(etcBefore, etcAfter) {
		fmt.Fprintf(os.Stderr, "/etc/fstab changed during the crash tests:\n%s", etcAfter)
		code = 1
	}
	os.Exit(code)
}

// binary builds cmd/diskprep once per test run: the crash tests kill a real
// process, so they need the real program.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "diskprep-crashtest-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "diskprep")
		buildErr = testenv.BuildDiskprep(binPath, "", "../../cmd/diskprep", "crashtest")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	// go test caches results by the files a test opens: the binary, new
	// each run, keeps a cached pass from hiding a change to the sources.
	if _, err := os.Stat(binPath); err != nil {
		t.Fatal(err)
	}
	return binPath
}

// outcome is how one diskprep process ended.
type outcome struct {
	pid            int
	code           int  // exit code; -1 when killed
	killed         bool // by SIGKILL
	stdout, stderr string
}

func (o outcome) String() string {
	if o.killed {
		return fmt.Sprintf("pid %d killed\n%s%s", o.pid, o.stdout, o.stderr)
	}
	return fmt.Sprintf("pid %d exit %d\n%s%s", o.pid, o.code, o.stdout, o.stderr)
}

// start runs the binary in its own process group, so that what it started
// (mkfs) can be killed with it, as a crash of the machine would.
func start(t *testing.T, crashAt string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if crashAt != "" {
		cmd.Env = append(cmd.Env, disk.CrashEnv+"="+crashAt)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errb
}

func wait(t *testing.T, cmd *exec.Cmd, out, errb *bytes.Buffer) outcome {
	t.Helper()
	err := cmd.Wait()
	o := outcome{pid: cmd.Process.Pid, code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		o.killed = true
	} else if err != nil && o.code < 0 {
		t.Fatalf("%s: %v", cmd, err)
	}
	// The crash takes the children too (a mkfs still writing). They are
	// not ours to reap, so wait until the group is gone.
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 500 && groupRunning(pgid); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	return o
}

// groupRunning says whether a process of group pgid is still running;
// killed orphans linger as zombies until init reaps them, harmlessly.
func groupRunning(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

func diskprep(t *testing.T, crashAt string, args ...string) outcome {
	t.Helper()
	cmd, out, errb := start(t, crashAt, args...)
	return wait(t, cmd, out, errb)
}

// fstabLines parses the fstab; a file that does not parse is a failure.
func fstabLines(t *testing.T, path string) ([]byte, []fstab.Line) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read fstab: %v", err)
	}
	lines, err := fstab.Parse(b)
	if err != nil {
		t.Fatalf("fstab does not parse: %v\n%s", err, b)
	}
	return b, lines
}

func entriesFor(lines []fstab.Line, point string) []fstab.Entry {
	var out []fstab.Entry
	for _, l := range lines {
		if l.Entry != nil && filepath.Clean(l.Entry.File) == point {
			out = append(out, *l.Entry)
		}
	}
	return out
}

// checkFstabWhole says the fstab is exactly the old file or one that is the
// old file plus diskprep's marker and one entry for point, nothing torn.
func checkFstabWhole(t *testing.T, path string, old []byte, point string) {
	t.Helper()
	b, lines := fstabLines(t, path)
	if bytes.Equal(b, old) {
		return
	}
	if !bytes.HasPrefix(b, old) {
		t.Errorf("fstab is neither the old file nor the old file with a line added:\n%s", b)
		return
	}
	if n := len(entriesFor(lines, point)); n != 1 {
		t.Errorf("fstab has %d entries for %s:\n%s", n, point, b)
	}
	oldLines, _ := fstab.Parse(old)
	if len(lines) != len(oldLines)+2 {
		t.Errorf("fstab has %d lines, want the old %d plus a marker and an entry:\n%s", len(lines), len(oldLines), b)
	}
}

// checkPrepared asserts the requested end state: a clean GPT, the
// filesystem on partition 1, mounted at mnt, one fstab line by its UUID,
// the rest of fstab untouched, no temporary files beside it.
func checkPrepared(t *testing.T, dev, fsType, label, mnt, fstabPath string, oldFstab []byte) {
	t.Helper()
	if out, err := testenv.Run("sgdisk", "-v", dev); err != nil || !strings.Contains(out, "No problems found") {
		t.Errorf("sgdisk -v %s: %v\n%s", dev, err, out)
	}
	part := dev + "p1"
	typ, _ := testenv.Run("blkid", "-p", "-s", "TYPE", "-o", "value", part)
	lab, _ := testenv.Run("blkid", "-p", "-s", "LABEL", "-o", "value", part)
	uuid, _ := testenv.Run("blkid", "-p", "-s", "UUID", "-o", "value", part)
	if strings.TrimSpace(typ) != fsType || strings.TrimSpace(lab) != label {
		t.Errorf("blkid %s: TYPE=%q LABEL=%q, want %s %s", part, typ, lab, fsType, label)
	}
	src, _ := testenv.Run("findmnt", "-n", "-o", "SOURCE", "--mountpoint", mnt)
	if strings.TrimSpace(src) != part {
		t.Errorf("%s is mounted from %q, want %s", mnt, strings.TrimSpace(src), part)
	}
	b, lines := fstabLines(t, fstabPath)
	es := entriesFor(lines, mnt)
	if len(es) != 1 || !strings.EqualFold(es[0].Spec, "UUID="+strings.TrimSpace(uuid)) {
		t.Errorf("fstab entries for %s: %+v, want one for UUID=%s:\n%s", mnt, es, strings.TrimSpace(uuid), b)
	}
	if !bytes.HasPrefix(b, oldFstab) {
		t.Errorf("fstab lost its old lines:\n%s", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(fstabPath))
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) {
			t.Errorf("temporary file %s left beside fstab", e.Name())
		}
	}
}

// lockHolder is the pid in diskprep's lock file for dev, "" when empty.
func lockHolder(t *testing.T, dev string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/run/diskprep/locks/%d:%d.lock", unix.Major(st.Rdev), unix.Minor(st.Rdev)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func newFstab(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	path := filepath.Join(dir, "fstab")
	old := []byte("# crash test stand-in for /etc/fstab\n/dev/vda1\t/\txfs\tdefaults\t0 0\n")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, old
}
