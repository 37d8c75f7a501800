package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/internal/testenv"
)

// The last line of an interruption names the signal, says what the command
// left, adds any failure besides the interruption, and never shows the
// cancellation's own "context canceled".
func TestInterruptionLine(t *testing.T) {
	hup, cancelHup := context.WithCancelCause(context.Background())
	cancelHup(signalCause{syscall.SIGHUP})
	plain, cancelPlain := context.WithCancel(context.Background())
	cancelPlain()
	canceled := fmt.Errorf("mkfs.ext4 /dev/loop3p1: %w: signal: killed", context.Canceled)
	// What the real runner returns for a program killed by the cancellation.
	runCtx, cancelRun := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancelRun)
	_, killed := disk.ExecRunner{}.Run(runCtx, "sleep", "10")
	if !errors.Is(killed, context.Canceled) {
		t.Fatalf("runner: %v, want a cancellation", killed)
	}
	cleanup := errors.New("release /tmp/a.img: detach /dev/loop3: device or resource busy")
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"signal, bare cancellation", hup, context.Canceled, "interrupted by SIGHUP"},
		{"no signal", plain, canceled, "interrupted"},
		{"what was left", hup, interrupted("; test file removed, no result saved", canceled), "interrupted by SIGHUP; test file removed, no result saved"},
		{"cleanup failed", hup, errors.Join(fmt.Errorf("bench xfs: %w", canceled), cleanup), "interrupted by SIGHUP; " + cleanup.Error()},
		{"left and failed", hup, interrupted("; no result saved", errors.Join(canceled, cleanup)), "interrupted by SIGHUP; no result saved; " + cleanup.Error()},
		{"wrapped join", hup, fmt.Errorf("fscompare: %w", errors.Join(canceled, cleanup)), "interrupted by SIGHUP; " + cleanup.Error()},
		{"program killed", hup, interrupted(" after making ext4", fmt.Errorf("mount /dev/loop3p1: %w", killed)), "interrupted by SIGHUP after making ext4"},
		{"program killed, cleanup failed", hup, errors.Join(fmt.Errorf("mount: %w", killed), cleanup), "interrupted by SIGHUP; " + cleanup.Error()},
	}
	for _, c := range cases {
		if got := interruptionLine(c.ctx, c.err); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// runOn ends a command cancelled by a signal with exit 128+n and one line,
// whatever error the command returned; without a signal, with 130.
func TestSignalExitCodes(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(signalCause{sig})
		var out, errb bytes.Buffer
		// inventory reads the facts first: a cancelled context ends it there.
		code := runOn(ctx, nil, []string{"diskprep", "inventory"}, strings.NewReader(""), &out, &errb)
		want := map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGHUP: 129, syscall.SIGTERM: 143}[sig]
		if code != want || errb.String() != "diskprep: interrupted by "+signalName(sig)+"\n" {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line", sig, code, errb.String(), want)
		}
	}
}

// notifySignals cancels with the first signal as the cause; a second one
// during the cleanup is said once and ignored, not a second cancellation
// nor the end of the process.
func TestSignalSecondIgnoredDuringCleanup(t *testing.T) {
	errb := &syncBuffer{}
	ctx, stop := notifySignals(context.Background(), errb)
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not cancel the context")
	}
	if sig, ok := signalOf(ctx); !ok || sig != syscall.SIGHUP {
		t.Fatalf("cause %v, want SIGHUP", context.Cause(ctx))
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(errb.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a second note would come now
	// Two signals sent together reach the process in either order: the
	// note names whichever came first, once.
	want := regexp.MustCompile(`^diskprep: SIG(INT|TERM) ignored: cleaning up after SIGHUP first \(SIGKILL stops at once\)\n$`)
	if !want.MatchString(errb.String()) {
		t.Errorf("stderr %q, want one line matching %s", errb.String(), want)
	}
	if sig, _ := signalOf(ctx); sig != syscall.SIGHUP {
		t.Errorf("cause became %v", sig)
	}
}

// TestSignalBenchDirectory: a real bench in a directory on this machine's
// own filesystem, ended by SIGHUP (a dropped ssh session) or SIGTERM once
// its test file is laid out: exit 128+n, the last line names the signal
// and the cleanup, and the test file is gone. Needs no root.
func TestSignalBenchDirectory(t *testing.T) {
	bin := faultBuild(t)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(signalName(sig), func(t *testing.T) {
			dir, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
			p := faultStart(t, bin, "bench", dir, "--set", "quick", "--size", "16M", "--runtime", "30s", "--results", store)
			faultWaitFor(t, "layout", faultLaidOut(dir, 16<<20))
			sent := time.Now()
			p.cmd.Process.Signal(sig)
			code := p.wait(t)
			stderr := p.stderr.String()
			t.Logf("%v: exit %d after %s: %q", sig, code, time.Since(sent).Round(time.Millisecond), stderr)
			want := "diskprep: interrupted by " + signalName(sig) + "; test file removed, no result saved"
			if code != 128+int(sig) || faultLastLine(stderr) != want || strings.Contains(stderr, "context canceled") {
				t.Errorf("exit %d, stderr %q; want %d and last line %q", code, stderr, 128+int(sig), want)
			}
			if left := entries(t, dir); len(left) != 0 {
				t.Errorf("directory holds %v", left)
			}
			if saved := entries(t, store); len(saved) != 0 {
				t.Errorf("store holds %v", saved)
			}
		})
	}
}

// TestPrivilegedSignalPrepareImage: SIGHUP in the middle of prepare --image
// (once the loop device is attached) ends with 129 and one line, and leaves
// no loop device on the image: a new image is removed again, an existing
// one (the second round: made, then released) is kept and detached. The
// same command run again converges, and release then leaves nothing
// attached.
func TestPrivilegedSignalPrepareImage(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "sgdisk", "findmnt")
	bin := faultBuild(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "sig.img"), filepath.Join(dir, "m")
	attached := func() string {
		out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img)
		return strings.TrimSpace(out)
	}
	t.Cleanup(func() {
		testenv.Run("umount", mnt)
		for _, dev := range strings.Fields(attached()) {
			t.Errorf("%s still attached to %s: detaching", dev, img)
			testenv.Run("losetup", "-d", dev)
		}
	})
	args := []string{"prepare", "--image", img, "--size", "64M", "--fs", "ext4", "--mount", mnt, "--yes"}
	for _, round := range []string{"new image", "existing image"} {
		p := faultStart(t, bin, append(args, "-v")...)
		faultWaitFor(t, "the loop device", func() bool { return strings.Contains(p.stderr.String(), `msg="attach image: finished"`) })
		p.cmd.Process.Signal(syscall.SIGHUP)
		code := p.wait(t)
		stderr := p.stderr.String()
		last := faultLastLine(stderr)
		t.Logf("%s: exit %d, last line %q", round, code, last)
		// -v logs each step's error in full; the last line is what anyone sees.
		if code != 129 || !strings.HasPrefix(last, "diskprep: interrupted by SIGHUP") ||
			strings.Contains(last, "context canceled") || strings.Contains(last, "signal: killed") {
			t.Fatalf("%s: exit %d, stderr:\n%s", round, code, stderr)
		}
		_, statErr := os.Stat(img)
		switch {
		case strings.Contains(last, "while making image"):
			if !os.IsNotExist(statErr) {
				t.Errorf("%s: image left after the interruption: %v", round, statErr)
			}
		case strings.Contains(last, " is detached; run the same command again"):
			if statErr != nil {
				t.Errorf("%s: image gone: %v", round, statErr)
			}
		default:
			t.Errorf("%s: the last line says neither the image removed nor its loop device detached", round)
		}
		if dev := attached(); dev != "" {
			t.Errorf("%s: %s left attached after the interruption", round, dev)
		}
		again := faultStart(t, bin, args...)
		if code := again.wait(t); code != 0 {
			t.Fatalf("%s: rerun: exit %d\n%s", round, code, again.stderr)
		}
		if out := testenv.MustRun(t, "findmnt", "-n", "-o", "TARGET", mnt); strings.TrimSpace(out) != mnt {
			t.Errorf("%s: rerun: findmnt %q", round, out)
		}
		rel := faultStart(t, bin, "release", img)
		if code := rel.wait(t); code != 0 {
			t.Fatalf("%s: release: exit %d\n%s%s", round, code, rel.stdout, rel.stderr)
		}
		if dev := attached(); dev != "" {
			t.Errorf("%s: %s still attached after release", round, dev)
		}
	}
}

// fscompareSignalRig is the fscompare signal tests' rig: the fault build,
// an image path, a mount point and a store in a temporary directory, and
// a cleanup that unmounts and detaches whatever a failing run left.
func fscompareSignalRig(t *testing.T) (bin, img, mnt, store string) {
	t.Helper()
	testenv.RequirePrivileged(t, "mkfs.ext4", "sgdisk", "findmnt")
	bin = faultBuild(t)
	dir := t.TempDir()
	img, mnt, store = filepath.Join(dir, "fc.img"), filepath.Join(dir, "m"), filepath.Join(dir, "results")
	t.Cleanup(func() {
		if out, _ := testenv.Run("findmnt", "-n", mnt); strings.TrimSpace(out) != "" {
			testenv.Run("umount", mnt)
		}
		out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img)
		for _, dev := range strings.Fields(out) {
			testenv.Run("losetup", "-d", dev)
		}
	})
	return bin, img, mnt, store
}

// fscompareLeftNothing fails t when the image is still attached or
// mounted, or still there.
func fscompareLeftNothing(t *testing.T, img, mnt string) {
	t.Helper()
	if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
		t.Errorf("%s still attached to the image", out)
	}
	if out, _ := testenv.Run("findmnt", "-n", mnt); strings.TrimSpace(out) != "" {
		t.Errorf("still mounted: %s", out)
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Errorf("image left: %v", err)
	}
}

// TestPrivilegedSignalFSCompareImage: SIGHUP while fscompare --image
// measures releases what it prepared and removes the image it made: exit
// 129, one last line saying so, no loop device, mount, test file or
// record left.
func TestPrivilegedSignalFSCompareImage(t *testing.T) {
	bin, img, mnt, store := fscompareSignalRig(t)
	p := faultStart(t, bin, "fscompare", "--image", img, "--size", "1G", "--fs", "xfs,ext4", "--mount", mnt,
		"--runtime", "30s", "--repeat", "1", "--results", store, "--yes")
	faultWaitFor(t, "the test file", faultLaidOut(mnt, 16<<20))
	p.cmd.Process.Signal(syscall.SIGHUP)
	code := p.wait(t)
	stderr := p.stderr.String()
	t.Logf("exit %d, stderr:\n%s", code, stderr)
	want := "diskprep: interrupted by SIGHUP; released " + img + ", removed the image this run made"
	if code != 129 || faultLastLine(stderr) != want || strings.Contains(stderr, "context canceled") {
		t.Errorf("exit %d, last line %q; want 129 and %q", code, faultLastLine(stderr), want)
	}
	fscompareLeftNothing(t, img, mnt)
	if left := entries(t, mnt); len(left) != 0 {
		t.Errorf("mount point holds %v", left)
	}
	if saved := entries(t, store); len(saved) != 0 {
		t.Errorf("store holds %v", saved)
	}
}

// TestPrivilegedSignalBenchFileKept: when the test file cannot be removed
// after a SIGHUP (its directory made immutable meanwhile), the last line
// says why instead of claiming it was removed.
func TestPrivilegedSignalBenchFileKept(t *testing.T) {
	testenv.RequirePrivileged(t, "chattr")
	bin := faultBuild(t)
	dir, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
	t.Cleanup(func() { testenv.Run("chattr", "-i", dir) }) // before TempDir's removal
	p := faultStart(t, bin, "bench", dir, "--set", "quick", "--size", "16M", "--runtime", "30s", "--results", store)
	faultWaitFor(t, "layout", faultLaidOut(dir, 16<<20))
	if out, err := testenv.Run("chattr", "+i", dir); err != nil {
		p.cmd.Process.Kill()
		p.wait(t)
		testenv.Unavailable(t, "chattr +i on "+dir, false, fmt.Errorf("%w: %s", err, out))
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	code := p.wait(t)
	last := faultLastLine(p.stderr.String())
	t.Logf("exit %d, last line %q", code, last)
	if code != 129 || !strings.HasPrefix(last, "diskprep: interrupted by SIGHUP; no result saved; remove test file: unlink "+dir+"/") ||
		strings.Contains(last, "test file removed") || strings.Contains(last, "context canceled") {
		t.Errorf("exit %d, last line %q", code, last)
	}
	if left := entries(t, dir); len(left) != 1 {
		t.Errorf("directory holds %v, want the one test file", left)
	}
}

// TestSignalBenchStderrGone: SIGHUP when nothing reads stderr any more (the
// ssh session's pipe closed, or tee killed by the same Ctrl-C): the
// cleanup still runs to its end and the exit is 129, not a death by
// SIGPIPE at the first line written.
func TestSignalBenchStderrGone(t *testing.T) {
	bin := faultBuild(t)
	dir, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", dir, "--set", "quick", "--size", "16M", "--runtime", "30s", "--results", store)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	faultWaitFor(t, "layout", faultLaidOut(dir, 16<<20))
	r.Close()
	cmd.Process.Signal(syscall.SIGHUP)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 129 {
		t.Errorf("exit %d (%v), want 129", code, cmd.ProcessState)
	}
	if left := entries(t, dir); len(left) != 0 {
		t.Errorf("directory holds %v", left)
	}
}

// TestPrivilegedSignalFSCompareOutputClosed: fscompare's output read by a
// pipe that closes early (diskprep fscompare ... 2>&1 | head -3) ends as
// an interruption, not as Go's default death at the next write: exit 141
// (128+SIGPIPE), the image released and removed, no record kept. Before
// the fix, the process died with its image mounted and attached.
func TestPrivilegedSignalFSCompareOutputClosed(t *testing.T) {
	bin, img, mnt, store := fscompareSignalRig(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "fscompare", "--image", img, "--size", "1G", "--fs", "xfs,ext4", "--mount", mnt,
		"--runtime", "30s", "--repeat", "1", "--results", store, "--yes")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Read as head does until the measuring began, then stop reading.
	sc := bufio.NewScanner(r)
	for sc.Scan() && !strings.Contains(sc.Text(), "running set") {
	}
	r.Close()
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 141 {
		t.Errorf("exit %d (%v), want 141", code, cmd.ProcessState)
	}
	fscompareLeftNothing(t, img, mnt)
	if saved := entries(t, store); len(saved) != 0 {
		t.Errorf("store holds %v", saved)
	}
}

// A read-only command whose reader closes early ends quietly, as other
// tools do: no "interrupted" line, no "broken pipe" error, an exit (0 when
// it returned before the signal arrived, else 141) rather than a death by
// SIGPIPE.
func TestOutputClosedEndsQuietly(t *testing.T) {
	bin := faultBuild(t)
	cmd := exec.Command(bin, "--help")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = w, &errb
	r.Close() // nothing will read
	cmd.Run()
	if st := cmd.ProcessState; !st.Exited() || st.ExitCode() != 0 && st.ExitCode() != 141 || errb.Len() != 0 {
		t.Errorf("%v, stderr %q; want exit 0 or 141 and nothing said", st, errb.String())
	}
	w.Close()
}
