// Package guesttest runs commands inside a QEMU guest with a real Debian
// kernel and emulated disks, through scripts/guest.sh, for the guest test
// tier: the paths a loop device cannot show (udev, the kernel's partition
// parser, device-mapper, md, NVMe and SATA identities, reboots).
//
// Tests call Require first. It skips when the guest cannot boot here, except
// when DISKPREP_REQUIRE_GUEST=1 (CI), where a skip would hide a broken tier
// and so fails instead.
//
// A package's own tests run in the guest as a static test binary: build it
// into the share, copy the test data onto the guest's disk-backed root (9p
// reads file by file, many times slower), and run it from the package's
// directory there, with the guest's diskprep at /usr/local/bin/diskprep:
//
//	share := t.TempDir()
//	bin := guesttest.TestBinary(t, "./disk", share)
//	r := guesttest.Run(t, guesttest.Options{Share: share, Disks: ...}, "sh", "-c",
//		"mkdir -p /root/t && cd /src && cp -r --parents disk/testdata hwinfo/testdata /root/t/ && "+
//			"cd /root/t/disk && DISKPREP_REQUIRE_PRIVILEGED=1 /share/"+bin+" -test.v")
package guesttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Exit codes of scripts/guest.sh that are its own, not the command's.
const (
	ExitBadInput  = 2   // bad arguments; nothing was started
	ExitTimeout   = 124 // --timeout ran out
	ExitNoReport  = 125 // the guest did not boot or did not report
	ExitInterrupt = 130
)

// Required reports whether guest tests must run (CI sets it).
func Required() bool { return os.Getenv("DISKPREP_REQUIRE_GUEST") == "1" }

// SkipOrFail skips the test, or fails it when guest tests are required.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("DISKPREP_REQUIRE_GUEST=1 but: %s", msg)
	}
	t.Skip(msg)
}

// Options are scripts/guest.sh's flags.
type Options struct {
	Disks   []string      // --disk KIND:SIZE[:key=value,...], in order
	State   string        // --state: images kept between calls (console logs in State/run/); "" = fresh each call
	Share   string        // --share: read-write at /share in the guest
	Boots   int           // --boots; 0 means 1
	Systemd bool          // --systemd
	TPM     bool          // --tpm: a TPM 2.0 whose state is kept under State
	SSH     int           // --ssh PORT: the guest's sshd on 127.0.0.1:PORT; 0 for none
	Timeout time.Duration // --timeout; 0 means the script's default
	Env     []string      // extra environment for the script (DISKPREP_GUEST_*)
}

// Args is the script's argument list for opt and command.
func (opt Options) Args(command ...string) []string {
	var a []string
	for _, d := range opt.Disks {
		a = append(a, "--disk", d)
	}
	if opt.State != "" {
		a = append(a, "--state", opt.State)
	}
	if opt.Share != "" {
		a = append(a, "--share", opt.Share)
	}
	if opt.Boots > 0 {
		a = append(a, "--boots", strconv.Itoa(opt.Boots))
	}
	if opt.Systemd {
		a = append(a, "--systemd")
	}
	if opt.TPM {
		a = append(a, "--tpm")
	}
	if opt.SSH > 0 {
		a = append(a, "--ssh", strconv.Itoa(opt.SSH))
	}
	if opt.Timeout > 0 {
		a = append(a, "--timeout", strconv.Itoa(int((opt.Timeout+time.Second-1)/time.Second))+"s")
	}
	return append(append(a, "--"), command...)
}

// Result is what one call of the script gave.
type Result struct {
	Stdout   string
	Stderr   string
	ExitCode int
	Elapsed  time.Duration
}

// Script is the path of scripts/guest.sh in the tree this package is in.
func Script() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "scripts", "guest.sh")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Exec runs the script with opt and command and returns what it gave,
// whatever its exit code. An error means it could not be started at all.
func Exec(ctx context.Context, opt Options, command ...string) (Result, error) {
	script, err := Script()
	if err != nil {
		return Result{}, fmt.Errorf("find scripts/guest.sh: %w", err)
	}
	cmd := exec.CommandContext(ctx, script, opt.Args(command...)...)
	cmd.Env = append(os.Environ(), opt.Env...)
	// On cancel the script gets SIGTERM and cleans up (stops QEMU) before
	// it exits. Not SIGINT: a shell starts background jobs with SIGINT
	// ignored, and a script cannot trap a signal ignored when it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	// The same when this process dies without cancelling: go test's own
	// timeout panics and exits, and the script, left behind, would keep
	// its guest running and its images in /tmp.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.ExitCode = ee.ExitCode()
	default:
		return r, fmt.Errorf("%s: %w", script, err)
	}
	return r, nil
}

// booted is set once a guest has booted in this test process: from then on a
// guest that does not boot is a failure, not a reason to skip.
var booted atomic.Bool

// Require skips (or fails, under DISKPREP_REQUIRE_GUEST=1) unless a guest can
// be booted here: root, Linux on amd64, and the script. Whether QEMU really
// boots shows on the first Run, which skips the same way if it does not.
func Require(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		SkipOrFail(t, "guest test: needs linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if os.Geteuid() != 0 {
		SkipOrFail(t, "guest test: needs root (the guest's root file system is built as root)")
	}
	if _, err := Script(); err != nil {
		SkipOrFail(t, "guest test: %v", err)
	}
}

// Run runs command in a guest and returns its result. It fails the test when
// the guest itself failed (timeout, interrupt, no report after an earlier
// boot worked) and skips like Require when the first guest of the process
// does not boot. Exit 2 is returned as it is: the script's bad input cannot be
// told from a command's own exit 2.
func Run(t testing.TB, opt Options, command ...string) Result {
	t.Helper()
	Require(t)
	var remaining time.Duration
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if at, ok := d.Deadline(); ok {
			remaining = time.Until(at)
		}
	}
	load, cpus := loadAverage(), runtime.NumCPU()
	b := budgetFor(opt.Timeout, load, cpus, remaining)
	if b.guest != opt.Timeout && opt.Timeout > 0 {
		t.Logf("guest: --timeout %v made %v (load %.1f on %d CPUs; %v left before go test's deadline)", opt.Timeout, b.guest, load, cpus, remaining.Round(time.Second))
	}
	opt.Timeout = b.guest
	ctx, cancel := context.WithTimeout(context.Background(), b.call)
	defer cancel()
	r, err := Exec(ctx, opt, command...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guest: %s (exit %d, %.1fs)", strings.Join(command, " "), r.ExitCode, r.Elapsed.Seconds())
	switch r.ExitCode {
	case ExitNoReport:
		if !booted.Load() {
			SkipOrFail(t, "guest test: the guest does not boot here: %s", lastLines(r.Stderr, 8))
		}
		t.Fatalf("guest did not report (exit %d): %s\nstdout:\n%s", r.ExitCode, r.Stderr, r.Stdout)
	case ExitTimeout, ExitInterrupt:
		t.Fatalf("guest failed (exit %d): %s\nstdout:\n%s", r.ExitCode, r.Stderr, r.Stdout)
	}
	booted.Store(true)
	return r
}

// defaultTimeout is scripts/guest.sh's own --timeout.
const defaultTimeout = 5 * time.Minute

// budget is how long one guest may run (--timeout) and the whole call of
// the script (building its images on a first call, booting, stopping).
type budget struct{ guest, call time.Duration }

// budgetFor stretches a guest's timeout by the machine's load, so that a
// test written for a quiet machine does not time out on a busy one (a
// guest under TCG is CPU-bound: two of them on two cores with a third
// process busy get two thirds of the time each), and ends both before go
// test's deadline (remaining; 0 when there is none), leaving 90 s for
// the script to stop QEMU and remove its images: go test's own timeout
// kills the test process outright, with no cleanup and no message of the
// test's. A guest's timeout is never stretched past 3 times what the test
// asked.
func budgetFor(want time.Duration, load float64, cpus int, remaining time.Duration) budget {
	if want <= 0 {
		want = defaultTimeout
	}
	stretch := 1.0
	if cpus > 0 && load > float64(cpus) {
		stretch = min(load/float64(cpus), 3)
	}
	b := budget{guest: time.Duration(float64(want) * stretch).Round(time.Second)}
	b.call = max(20*time.Minute, b.guest+5*time.Minute)
	if remaining > 0 {
		b.call = min(b.call, remaining-30*time.Second)
		b.guest = min(b.guest, remaining-90*time.Second)
	}
	b.guest = max(b.guest, time.Second)
	b.call = max(b.call, b.guest)
	return b
}

// loadAverage is the host's one-minute load average (0 when unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// TestBinary builds the test binary of package pkg (an import path or
// ./dir relative to the module root), static so it runs in the guest, into
// dir (usually Options.Share) and returns its base name. The guest runs it
// as /share/NAME, or copies it first: cp /share/NAME /root/.
func TestBinary(t testing.TB, pkg, dir string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	name := strings.NewReplacer("/", "_", ".", "_").Replace(strings.Trim(pkg, "./")) + ".test"
	cmd := exec.Command("go", "test", "-c", "-o", filepath.Join(dir, name), pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c %s: %v\n%s", pkg, err, out)
	}
	return name
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
