package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/atomicfile"
	"github.com/diskprep/diskprep/internal/testenv"
)

// Signals, SIGKILL and concurrent runs need real processes: these tests
// build the command and run it on loop-device filesystems.

// faultBuild builds the command into a temporary directory.
func faultBuild(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "diskprep")
	if err := testenv.BuildDiskprep(bin, "", "."); err != nil {
		t.Fatal(err)
	}
	return bin
}

// faultBuffer is a bytes.Buffer a process writes while the test reads it.
type faultBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *faultBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *faultBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type faultProc struct {
	cmd            *exec.Cmd
	stdout, stderr *faultBuffer
}

// faultStart starts the built command; a minute is the hang guard.
func faultStart(t *testing.T, bin string, args ...string) *faultProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	p := &faultProc{cmd: exec.CommandContext(ctx, bin, args...), stdout: &faultBuffer{}, stderr: &faultBuffer{}}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// wait returns the exit code (-1 when killed by a signal).
func (p *faultProc) wait(t *testing.T) int {
	t.Helper()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// faultWaitFor polls until cond holds; it fails the test after 30 s.
func faultWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// faultLaidOut reports whether dir holds a test file of at least size bytes:
// the run is past its layout and measuring.
func faultLaidOut(dir string, size int64) func() bool {
	return func() bool {
		paths, _ := filepath.Glob(filepath.Join(dir, bench.TestFileName("*")))
		for _, p := range paths {
			if fi, err := os.Stat(p); err == nil && fi.Size() >= size {
				return true
			}
		}
		return false
	}
}

func faultLastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// faultStoreRecords lists the store, failing on any unreadable file in it.
func faultStoreRecords(t *testing.T, dir string) []record.Entry {
	t.Helper()
	entries, warnings, err := record.List(dir)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("store %s: %v %v", dir, warnings, err)
	}
	return entries
}

func faultLoopExt4(t *testing.T, size int64) string {
	t.Helper()
	loop := testenv.NewLoop(t, size, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.ext4", "-F", "-q", loop.Dev)
	return testenv.Mount(t, loop.Dev)
}

// TestPrivilegedBenchSignals: SIGINT, SIGTERM and SIGHUP during a
// measurement end the process with 128+n and one line naming the signal,
// the test file removed and nothing saved; with --keep-partial what was
// measured is saved, marked partial.
func TestPrivilegedBenchSignals(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	bin := faultBuild(t)
	mnt := faultLoopExt4(t, 64<<20)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "results")
			p := faultStart(t, bin, "bench", mnt, "--workload", "rw=randread,bs=4k,size=8M,runtime=30s", "--results", store)
			faultWaitFor(t, "layout", faultLaidOut(mnt, 8<<20))
			sent := time.Now()
			p.cmd.Process.Signal(sig)
			code := p.wait(t)
			t.Logf("%v: exit %d after %s: %s", sig, code, time.Since(sent).Round(time.Millisecond), strings.TrimSpace(p.stderr.String()))
			if code != 128+int(sig) || p.stderr.String() != "diskprep: interrupted by "+signalName(sig)+"; test file removed, no result saved\n" {
				t.Errorf("exit %d, stderr %q", code, p.stderr)
			}
			if left := entries(t, mnt); strings.Join(left, ",") != "lost+found" {
				t.Errorf("mount holds %v", left)
			}
			if saved := entries(t, store); len(saved) != 0 {
				t.Errorf("store holds %v", saved)
			}
		})
	}
	t.Run("device", func(t *testing.T) {
		raw := testenv.NewLoop(t, 16<<20, testenv.LoopOptions{})
		store := filepath.Join(t.TempDir(), "results")
		p := faultStart(t, bin, "bench", raw.Dev, "-v", "--workload", "rw=randread,bs=4k,size=8M,runtime=30s", "--results", store)
		faultWaitFor(t, "the workload", func() bool { return strings.Contains(p.stderr.String(), `msg="workload started"`) })
		p.cmd.Process.Signal(syscall.SIGTERM)
		// No test file on a device: the message does not claim one.
		if code := p.wait(t); code != 143 || faultLastLine(p.stderr.String()) != "diskprep: interrupted by SIGTERM; no result saved" {
			t.Errorf("exit %d, stderr ends %q", code, faultLastLine(p.stderr.String()))
		}
		if saved := entries(t, store); len(saved) != 0 {
			t.Errorf("store holds %v", saved)
		}
	})
	t.Run("keep-partial", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "results")
		p := faultStart(t, bin, "bench", mnt, "--keep-partial", "-v", "--results", store,
			"--workload", "name=first,rw=randread,bs=4k,size=8M,runtime=1s",
			"--workload", "name=second,rw=randread,bs=4k,size=8M,runtime=30s")
		faultWaitFor(t, "the second workload", func() bool {
			return strings.Contains(p.stderr.String(), `msg="workload started" workload=second`)
		})
		p.cmd.Process.Signal(syscall.SIGINT)
		code := p.wait(t)
		saved := faultStoreRecords(t, store)
		if code != 130 || len(saved) != 1 || faultLastLine(p.stderr.String()) != "diskprep: interrupted by SIGINT; partial result saved as "+saved[0].Path {
			t.Fatalf("exit %d, %d records, stderr ends %q", code, len(saved), faultLastLine(p.stderr.String()))
		}
		rec := saved[0].Record
		if !rec.Partial || len(rec.Workloads[0].Runs) != 1 || len(rec.Workloads[1].Runs) != 0 {
			t.Errorf("partial record: partial %v, runs %d/%d", rec.Partial, len(rec.Workloads[0].Runs), len(rec.Workloads[1].Runs))
		}
		if left := entries(t, mnt); strings.Join(left, ",") != "lost+found" {
			t.Errorf("mount holds %v", left)
		}
	})
}

// TestPrivilegedBenchKilled: SIGKILL leaves no record (at most a temp file
// readers skip) and its test file; the same command run again removes
// that file, saying so in one line, measures and saves its record, and
// leaves the directory as it was. A leftover of another user's is named,
// with the rm that removes it, and kept.
func TestPrivilegedBenchKilled(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	bin := faultBuild(t)
	mnt := faultLoopExt4(t, 64<<20)
	store := filepath.Join(t.TempDir(), "results")
	args := []string{"bench", mnt, "--workload", "rw=randread,bs=4k,size=8M,runtime=2s", "--results", store, "-o", "json"}
	p := faultStart(t, bin, args...)
	faultWaitFor(t, "layout", faultLaidOut(mnt, 8<<20))
	p.cmd.Process.Kill()
	if code := p.wait(t); code != -1 {
		t.Fatalf("exit %d after SIGKILL", code)
	}
	for _, name := range entries(t, store) {
		if !atomicfile.IsTemp(name) {
			t.Errorf("store holds %s after SIGKILL", name)
		}
	}
	left, _ := filepath.Glob(filepath.Join(mnt, bench.TestFileName("*")))
	if len(left) != 1 {
		t.Fatalf("test files after SIGKILL: %v", left)
	}

	// A writer killed inside Save leaves at most its temp file: readers
	// skip it without a word.
	os.MkdirAll(store, 0o755)
	os.WriteFile(filepath.Join(store, atomicfile.TempPrefix+"20261130T000000Z-dead.json-1"), []byte(`{"schema":"diskprep/result/v1","id":"2026`), 0o644)
	// And another user's leftover, which is theirs to remove.
	theirs := filepath.Join(mnt, bench.TestFileName("20261130T000000Z-theirs"))
	os.WriteFile(theirs, make([]byte, 4096), 0o600)
	if err := os.Chown(theirs, testenv.Nobody, testenv.Nobody); err != nil {
		t.Fatal(err)
	}

	again := faultStart(t, bin, args...)
	code, stdout, stderr := again.wait(t), again.stdout.String(), again.stderr.String()
	if code != 0 {
		t.Fatalf("the same command after SIGKILL: exit %d %s", code, stderr)
	}
	removed := "removed " + left[0] + " (8 MiB), the test file of an earlier run that was killed\n"
	warnTheirs := "warning: " + theirs + " (4 KiB) is a test file left by an earlier run that was killed: remove it (rm " + theirs + ")\n"
	if !strings.HasPrefix(stderr, removed) || !strings.Contains(stderr, warnTheirs) {
		t.Errorf("stderr does not start with %q and name the other user's file:\n%s", removed, stderr)
	}
	var rec record.Record
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil || strings.Contains(strings.Join(rec.Warnings, "\n"), left[0]) {
		t.Errorf("record warnings %q (%v)", rec.Warnings, err)
	}
	if got := entries(t, mnt); strings.Join(got, ",") != "diskprep-bench.20261130T000000Z-theirs.tmp,lost+found" {
		t.Errorf("mount holds %v", got)
	}
	code, stdout, stderr = runCLI(t, "results", "list", "--results", store)
	if code != 0 || strings.Contains(stderr, "skipped") || !strings.Contains(stdout, rec.ID) {
		t.Errorf("results list: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestPrivilegedBenchTargetGoesAway: the target directory removed, or its
// filesystem lazily unmounted, while the process measures: exit 1 with one
// line saying so, nothing saved, the test file gone.
func TestPrivilegedBenchTargetGoesAway(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	bin := faultBuild(t)
	for _, how := range []string{"rm -r", "umount -l"} {
		t.Run(how, func(t *testing.T) {
			loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
			testenv.MustRun(t, "mkfs.ext4", "-F", "-q", loop.Dev)
			mnt := testenv.Mount(t, loop.Dev)
			target := mnt
			if how == "rm -r" {
				target = filepath.Join(mnt, "sub")
				os.Mkdir(target, 0o755)
			}
			store := filepath.Join(t.TempDir(), "results")
			p := faultStart(t, bin, "bench", target, "--results", store,
				"--workload", "name=a,rw=randread,bs=4k,size=8M,runtime=2s", "--workload", "name=b,rw=randwrite,bs=4k,size=8M,runtime=2s")
			faultWaitFor(t, "layout", faultLaidOut(target, 8<<20))
			if how == "rm -r" {
				if err := os.RemoveAll(target); err != nil {
					t.Fatal(err)
				}
			} else {
				testenv.MustRun(t, "umount", "-l", mnt)
			}
			code := p.wait(t)
			stderr := p.stderr.String()
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "diskprep: test file ") ||
				!strings.Contains(stderr, "went away during the run (target directory removed or its filesystem unmounted?)") {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
			if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("store made: %v", entries(t, store))
			}
			if left := entries(t, target); len(left) != 0 {
				t.Errorf("%s holds %v", target, left)
			}
			if how == "umount -l" {
				again := testenv.Mount(t, loop.Dev)
				if left := entries(t, again); strings.Join(left, ",") != "lost+found" {
					t.Errorf("filesystem holds %v after the run", left)
				}
			}
		})
	}
}

// TestPrivilegedBenchFilesystemFills: another writer takes the free space
// the moment the test file appears (inotify), before the run lays it out:
// exit 1, one line naming ENOSPC, the test file removed, nothing saved.
// The layout of 160 MiB of data takes far longer than the filler's
// fallocate; should the filler still lose, the run is simply repeated.
func TestPrivilegedBenchFilesystemFills(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	bin := faultBuild(t)
	mnt := faultLoopExt4(t, 256<<20)
	store := filepath.Join(t.TempDir(), "results")
	for attempt := 1; ; attempt++ {
		ino, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.InotifyAddWatch(ino, mnt, unix.IN_CREATE); err != nil {
			t.Fatal(err)
		}
		filled := make(chan string, 1)
		go func() {
			defer unix.Close(ino)
			fds := []unix.PollFd{{Fd: int32(ino), Events: unix.POLLIN}}
			if n, _ := unix.Poll(fds, 30_000); n <= 0 {
				filled <- ""
				return
			}
			filled <- faultFill(mnt)
		}()
		p := faultStart(t, bin, "bench", mnt, "--workload", "rw=randread,bs=4k,size=160M,runtime=1s", "--results", store)
		code := p.wait(t)
		filler := <-filled
		stderr := p.stderr.String()
		os.Remove(filler)
		if code == 0 && attempt < 3 {
			t.Logf("attempt %d: the filler came too late; again", attempt)
			os.RemoveAll(store)
			continue
		}
		t.Logf("attempt %d: exit %d: %s", attempt, code, strings.TrimSpace(stderr))
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, mnt+" filled up during the run") ||
			!strings.Contains(stderr, "no space left on device") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		if left := entries(t, mnt); strings.Join(left, ",") != "lost+found" {
			t.Errorf("mount holds %v", left)
		}
		if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("store made: %v", entries(t, store))
		}
		return
	}
}

// faultFill allocates all free space under dir in one file, as another writer
// would, and returns its path.
func faultFill(dir string) string {
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		return path
	}
	defer f.Close()
	var off int64
	for chunk := int64(256 << 20); chunk >= 4096; {
		if err := unix.Fallocate(int(f.Fd()), 0, off, chunk); err != nil {
			chunk /= 2
			continue
		}
		off += chunk
	}
	return path
}

// TestPrivilegedBenchConcurrentStore: rounds of two bench processes in one
// directory writing into one store, while readers list and compare the
// store in a loop: every process succeeds, every record is whole and
// readable, and no reader ever sees a partial file.
func TestPrivilegedBenchConcurrentStore(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	bin := faultBuild(t)
	mnt := faultLoopExt4(t, 64<<20)
	store := filepath.Join(t.TempDir(), "results")
	const rounds, procs = 3, 2
	// A killed writer's half-written temp file is there all along.
	os.MkdirAll(store, 0o755)
	os.WriteFile(filepath.Join(store, atomicfile.TempPrefix+"20261130T000000Z-dead.json-1"), []byte(`{"schema":"diskprep/result/v1","id":"2026`), 0o644)

	stop := make(chan struct{})
	var readers sync.WaitGroup
	var mu sync.Mutex
	var reads int
	var readErrs []string
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var out, errb bytes.Buffer
				e := &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Format: "json", ResultsDir: store}
				var err error
				if r == 0 {
					err = runResultsList(context.Background(), recordFilter{}, e)
				} else {
					err = runCompare(context.Background(), compareOptions{}, e)
				}
				mu.Lock()
				reads++
				// An empty store (the first round) is not a read error.
				if err != nil && !errors.Is(err, compare.ErrNothing) {
					readErrs = append(readErrs, err.Error())
				}
				if strings.Contains(errb.String(), "skipped") {
					readErrs = append(readErrs, strings.TrimSpace(errb.String()))
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}

	var ids []string
	for round := 1; round <= rounds; round++ {
		var ps []*faultProc
		for i := range procs {
			ps = append(ps, faultStart(t, bin, "bench", mnt, "--workload", "rw=randread,bs=4k,size=8M,runtime=1s",
				"--label", fmt.Sprintf("r%d-p%d", round, i), "--results", store, "-o", "json", "-q"))
		}
		for _, p := range ps {
			code := p.wait(t)
			var rec record.Record
			if err := json.Unmarshal([]byte(p.stdout.String()), &rec); code != 0 || err != nil {
				t.Fatalf("round %d: exit %d, %v: %s", round, code, err, p.stderr)
			}
			ids = append(ids, rec.ID)
		}
	}
	close(stop)
	readers.Wait()

	saved := faultStoreRecords(t, store)
	t.Logf("%d rounds of %d concurrent runs: %d records; %d reads of the store during the runs, %d errors", rounds, procs, len(saved), reads, len(readErrs))
	if len(saved) != rounds*procs {
		t.Errorf("store holds %d records, want %d (ids %v)", len(saved), rounds*procs, ids)
	}
	for _, en := range saved {
		if len(en.Record.Workloads) != 1 || len(en.Record.Workloads[0].Runs) != 1 || en.Record.Partial {
			t.Errorf("%s is not whole", en.Path)
		}
	}
	if len(readErrs) != 0 {
		t.Errorf("readers saw: %q", readErrs)
	}
	if left := entries(t, mnt); strings.Join(left, ",") != "lost+found" {
		t.Errorf("mount holds %v", left)
	}
}

// TestPrivilegedBenchKillPoints kills a one-second run at staggered points
// from start-up to after its end (hardware read, layout, measuring, saving):
// whatever the point, the store holds only whole records (and perhaps a
// temp file readers skip), and a test file is left only by a killed run.
func TestPrivilegedBenchKillPoints(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	bin := faultBuild(t)
	mnt := faultLoopExt4(t, 64<<20)
	store := filepath.Join(t.TempDir(), "results")
	killed, finished := 0, 0
	// Denser towards the end, where the record is saved (about 1.1 s in
	// here; elsewhere the points fall differently, all are valid).
	for _, ms := range []int{0, 300, 1000, 1050, 1075, 1100, 1150} {
		delay := time.Duration(ms) * time.Millisecond
		p := faultStart(t, bin, "bench", mnt, "--workload", "rw=randread,bs=4k,size=8M,runtime=1s", "--results", store, "-q")
		time.Sleep(delay)
		p.cmd.Process.Kill()
		code := p.wait(t)
		records := len(faultStoreRecords(t, store)) // fails on any unreadable file
		left, _ := filepath.Glob(filepath.Join(mnt, bench.TestFileName("*")))
		t.Logf("kill after %s: exit %d, %d records, %d test files left", delay, code, records, len(left))
		switch code {
		case -1:
			killed++
		case 0:
			finished++
			if len(left) != 0 {
				t.Errorf("a finished run left %v", left)
			}
		default:
			t.Errorf("exit %d: %s", code, p.stderr)
		}
		// A run killed after saving its record (before removing its test
		// file and exiting) leaves a whole record too: each run saves at
		// most one, and every finished run saved its own.
		if records < finished || records > finished+killed {
			t.Errorf("%d records after %d finished and %d killed runs", records, finished, killed)
		}
		for _, l := range left {
			os.Remove(l)
		}
	}
	t.Logf("%d runs killed, %d finished before the kill", killed, finished)
	if killed == 0 {
		t.Error("no run was killed")
	}
}
