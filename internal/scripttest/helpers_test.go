package scripttest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func script(t testing.TB, name string) string {
	return filepath.Join(repoRoot(t), "scripts", name)
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// diskprepBinary builds cmd/diskprep once per test binary, into a directory
// every user can read (the not-root case runs it as nobody).
func diskprepBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scripttest-bin-")
		if err != nil {
			buildErr = err
			return
		}
		os.Chmod(dir, 0o755)
		builtBin = filepath.Join(dir, "diskprep")
		buildErr = testenv.BuildDiskprep(builtBin, repoRoot(t), "./cmd/diskprep")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// result is one run of a program.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return "exit " + strconv.Itoa(r.code) + "\nstdout:\n" + r.stdout + "stderr:\n" + r.stderr
}

// runEnv runs argv with exactly env (no inheritance) and returns its exit
// code and output.
func runEnv(t testing.TB, env []string, dir string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	return r
}

// baseEnv is a small, fixed environment: the tests must not depend on the
// caller's, and the bootstrap's variables point into dir.
func baseEnv(path string, extra ...string) []string {
	return append([]string{"PATH=" + path, "HOME=/root", "LANG=C", "TMPDIR=" + os.TempDir()}, extra...)
}

// stateEnv points every path the bootstrap writes into dir.
func stateEnv(dir string) []string {
	return []string{
		"DISKPREP_STATE_DIR=" + filepath.Join(dir, "state"),
		"DISKPREP_LOG=" + filepath.Join(dir, "log", "bootstrap.log"),
		"DISKPREP_CONF_DIR=" + filepath.Join(dir, "conf"),
		"DISKPREP_BINDIR=" + filepath.Join(dir, "bin"),
		"DISKPREP_RESULTS=" + filepath.Join(dir, "results"),
	}
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// oneLine checks that s is exactly one non-empty line.
func oneLine(t testing.TB, what, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || strings.TrimSpace(s) == "" {
		t.Errorf("%s: want one line, got %q", what, s)
	}
}
