package testenv

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestLoopLifecycle(t *testing.T) {
	RequirePrivileged(t, "mkfs.ext4")
	var dev, img string
	t.Run("inner", func(t *testing.T) {
		l := NewLoop(t, 64<<20, LoopOptions{SectorSize: 4096})
		dev, img = l.Dev, l.Image
		b, err := os.ReadFile("/sys/block/" + strings.TrimPrefix(dev, "/dev/") + "/queue/logical_block_size")
		if err != nil || strings.TrimSpace(string(b)) != "4096" {
			t.Fatalf("logical block size %q %v", b, err)
		}
		MustRun(t, "mkfs.ext4", "-q", dev)
		Mount(t, dev)
	})
	if stillAttached(dev, img) {
		t.Fatalf("%s still attached", dev)
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Fatalf("image %s not removed", img)
	}
}

func TestLoopCleanupDropsPartitions(t *testing.T) {
	RequirePrivileged(t, "sgdisk", "partx")
	var dev string
	t.Run("inner", func(t *testing.T) {
		l := NewLoop(t, 64<<20, LoopOptions{})
		dev = l.Dev
		MustRun(t, "sgdisk", "-n", "1:2048:+16M", "-n", "2:0:0", l.Dev)
		MustRun(t, "partx", "-a", l.Dev)
		if _, err := os.Stat("/sys/block/" + strings.TrimPrefix(dev, "/dev/") + "/" + strings.TrimPrefix(dev, "/dev/") + "p2"); err != nil {
			t.Fatalf("partition not registered: %v", err)
		}
	})
	name := strings.TrimPrefix(dev, "/dev/")
	if _, err := os.Stat("/sys/block/" + name + "/" + name + "p1"); err == nil {
		t.Fatalf("%sp1 still registered after cleanup", dev)
	}
}

// The skip rules themselves: a fake testing.TB records whether a test
// would skip or fail, with and without DISKPREP_REQUIRE_PRIVILEGED=1.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, strings.TrimSpace(fmt.Sprintln(args...))
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func outcome(f func(t testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r
}

func TestUnavailable(t *testing.T) {
	cause := errors.New("io_uring_setup: operation not permitted")
	for _, c := range []struct {
		required, absent bool
		skip, fail       bool
		says             string
	}{
		{required: false, absent: false, skip: true, says: "not usable here"},
		{required: true, absent: false, fail: true, says: "DISKPREP_REQUIRE_PRIVILEGED=1 but"},
		{required: false, absent: true, skip: true, says: "this machine lacks io_uring"},
		{required: true, absent: true, skip: true, says: "this machine lacks io_uring"},
	} {
		v := ""
		if c.required {
			v = "1"
		}
		t.Setenv("DISKPREP_REQUIRE_PRIVILEGED", v)
		r := outcome(func(tb testing.TB) { Unavailable(tb, "io_uring", c.absent, cause) })
		if r.skipped != c.skip || r.failed != c.fail || !strings.Contains(r.msg, c.says) || !strings.Contains(r.msg, cause.Error()) {
			t.Errorf("required=%v absent=%v: skipped=%v failed=%v %q; want skipped=%v failed=%v saying %q and the cause",
				c.required, c.absent, r.skipped, r.failed, r.msg, c.skip, c.fail, c.says)
		}
	}
}
