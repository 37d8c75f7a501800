package disk

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
)

// scriptedRunner plays back expected calls in order, failing the test on
// any other argv. A call with pass set runs the real program.
type scriptedRunner struct {
	t     *testing.T
	calls []scriptedCall
	next  int
}

type scriptedCall struct {
	argv []string
	out  string
	err  error
	pass bool
}

func (r *scriptedRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.t.Helper()
	argv := append([]string{name}, args...)
	if r.next >= len(r.calls) {
		r.t.Errorf("unexpected call %q", argv)
		return nil, errors.New("unexpected call")
	}
	c := r.calls[r.next]
	r.next++
	if fmt.Sprint(argv) != fmt.Sprint(c.argv) {
		r.t.Errorf("call %d: got %q, want %q", r.next, argv, c.argv)
		return nil, errors.New("unexpected argv")
	}
	if c.pass {
		return ExecRunner{}.Run(ctx, name, args...)
	}
	return []byte(c.out), c.err
}

func (r *scriptedRunner) done() {
	r.t.Helper()
	if r.next != len(r.calls) {
		r.t.Errorf("%d of %d expected calls made; missing %q", r.next, len(r.calls), r.calls[r.next].argv)
	}
}

func TestApplyMissingMkfsNamesPackage(t *testing.T) {
	pl := fixedUUIDs(t)
	for fs, pkg := range map[string]string{"xfs": "xfsprogs", "ext4": "e2fsprogs"} {
		plan, err := pl.PlanDisk(Request{Device: "sdb", Partitions: []PartSpec{{FS: fs}}}, hostWith(blankDisk("sdb", 20*gib, 512, 512, 0)))
		if err != nil {
			t.Fatal(err)
		}
		plan.Device = "/nonexistent/sdb" // the check must come before any device access
		r := &scriptedRunner{t: t, calls: []scriptedCall{{argv: []string{"mkfs." + fs, "-V"}, err: &RunError{Argv: []string{"mkfs." + fs, "-V"}, ExitCode: -1, Err: exec.ErrNotFound}}}}
		_, err = Apply(context.Background(), plan, Deps{Runner: r, Roots: hwinfo.Roots{Root: t.TempDir()}})
		if !errors.Is(err, ErrMissingProgram) || !strings.Contains(err.Error(), pkg) {
			t.Errorf("%s: %v", fs, err)
		}
		r.done()
	}
}

func TestExecRunnerError(t *testing.T) {
	_, err := ExecRunner{}.Run(context.Background(), "sh", "-c", "echo oops >&2; exit 3")
	var re *RunError
	if !errors.As(err, &re) || re.ExitCode != 3 || !strings.Contains(err.Error(), "sh -c 'echo oops >&2; exit 3': exit status 3: oops") {
		t.Errorf("%v", err)
	}
	_, err = ExecRunner{}.Run(context.Background(), "diskprep-no-such-program")
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing program: %v", err)
	}
	out, err := ExecRunner{}.Run(context.Background(), "sh", "-c", "echo a; echo b >&2")
	if err != nil || string(out) != "a\nb\n" {
		t.Errorf("%q %v", out, err)
	}
}

// liveApplier reads the live machine, for the privileged tests' checks.
func liveApplier() *applier { return newApplier(Deps{}) }
