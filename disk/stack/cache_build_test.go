package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
)

// oneRun answers one expected argv with err, and fails the test on any
// other call.
type oneRun struct {
	t    *testing.T
	argv []string
	err  error
	n    int
}

func (r *oneRun) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.t.Helper()
	r.n++
	if got := append([]string{name}, args...); r.n > 1 || fmt.Sprint(got) != fmt.Sprint(r.argv) {
		r.t.Errorf("call %d: got %q, want %q once", r.n, got, r.argv)
		return nil, errors.New("unexpected call")
	}
	return nil, r.err
}

func (r *oneRun) done() {
	r.t.Helper()
	if r.n != 1 {
		r.t.Errorf("%d calls, want 1: %q", r.n, r.argv)
	}
}

// FlushWriteCache asks dm-writecache itself to write everything back: one
// dmsetup message, its failure named with the device.
func TestFlushWriteCache(t *testing.T) {
	argv := []string{"dmsetup", "message", "/dev/mapper/cachebench-cachebench", "0", "flush"}
	r := &oneRun{t: t, argv: argv}
	if err := FlushWriteCache(context.Background(), "/dev/mapper/cachebench-cachebench", disk.Deps{Runner: r}); err != nil {
		t.Fatal(err)
	}
	r.done()
	failed := &disk.RunError{Argv: argv, ExitCode: 1, Stderr: "device-mapper: message ioctl on cachebench-cachebench failed: Device or resource busy",
		Err: errors.New("exit status 1")}
	r = &oneRun{t: t, argv: argv, err: failed}
	err := FlushWriteCache(context.Background(), "/dev/mapper/cachebench-cachebench", disk.Deps{Runner: r})
	if !errors.Is(err, failed) || !strings.HasPrefix(err.Error(), "flush the write cache of /dev/mapper/cachebench-cachebench: ") {
		t.Errorf("err %v", err)
	}
	r.done()
}
