package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
)

// fakeEngine records what Run asks of the engine and answers with synthetic
// results, so orchestration is tested without I/O.
type fakeEngine struct {
	mu    sync.Mutex
	calls []engine.Params
	// names are the files the calls' paths led to when made (a held
	// file's /proc/self/fd link read back).
	names   []string
	layouts []int64
	// sizeAt is the test file's size seen at each Run call.
	sizeAt []int64
	// onRun may replace the result or fail (nil: a synthetic success).
	onRun func(ctx context.Context, n int, p engine.Params) (*engine.Result, error)
}

func (f *fakeEngine) Run(ctx context.Context, p engine.Params) (*engine.Result, error) {
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, p)
	f.names = append(f.names, heldName(p.Path))
	var size int64 = -1
	if fi, err := os.Stat(p.Path); err == nil {
		size = fi.Size()
	}
	f.sizeAt = append(f.sizeAt, size)
	f.mu.Unlock()
	if p.Progress != nil {
		p.Progress(engine.Snapshot{Elapsed: 500 * time.Millisecond, ReadIOs: 100, ReadBytes: 100 * uint64(p.BlockSize)})
		p.Progress(engine.Snapshot{Elapsed: time.Second, ReadIOs: 300, ReadBytes: 300 * uint64(p.BlockSize)})
	}
	if f.onRun != nil {
		return f.onRun(ctx, n, p)
	}
	var r, w uint64
	switch {
	case p.RW == engine.RandRW:
		r, w = 60, 40
	case p.RW.Writes():
		w = 100
	default:
		r = 100
	}
	return syntheticResult(r, w, uint64(p.BlockSize), 1), nil
}

func (f *fakeEngine) Layout(ctx context.Context, path string, size int64, data engine.DataPattern) error {
	f.mu.Lock()
	f.layouts = append(f.layouts, size)
	f.mu.Unlock()
	// Sparse is enough for the fake: it only has to exist at that size.
	return os.Truncate(path, size)
}

// heldName is the file a held file's /proc/self/fd link leads to, or p.
func heldName(p string) string {
	if strings.HasPrefix(p, "/proc/self/fd/") {
		if n, err := os.Readlink(p); err == nil {
			return n
		}
	}
	return p
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

func TestRunDirectory(t *testing.T) {
	target, results := t.TempDir(), filepath.Join(t.TempDir(), "results")
	fake := &fakeEngine{}
	var progress []Progress
	rec, err := Run(context.Background(), workload.Request{
		Target: target, Set: "quick", Label: "demo", Repeat: 2,
		Overrides: workload.Overrides{Size: 8 << 20, Runtime: time.Second},
	}, Options{
		Host: syntheticHost(), ToolVersion: "v-test", ResultsDir: results, Engine: fake,
		Progress: func(p Progress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if left := dirEntries(t, target); len(left) != 0 {
		t.Errorf("target directory keeps %v", left)
	}
	saved := dirEntries(t, results)
	if len(saved) != 1 || saved[0] != rec.ID+".json" {
		t.Fatalf("store holds %v, want %s.json", saved, rec.ID)
	}
	back, err := record.ReadFile(filepath.Join(results, saved[0]))
	if err != nil {
		t.Fatal(err)
	}
	if back.Label != "demo" || back.Set != "quick" || back.Repeat != 2 || back.ToolVersion != "v-test" ||
		back.Host.Hostname != "bench-host" || back.Target.Kind != record.KindDir || back.Target.Path != target || back.Partial {
		t.Errorf("record header %+v", back)
	}
	if back.Target.TestFile != filepath.Join(target, TestFileName(rec.ID)) {
		t.Errorf("test file %s", back.Target.TestFile)
	}
	if back.Target.FSType == "" || back.Target.MountPoint == "" {
		t.Errorf("filesystem of the target not identified: %+v", back.Target)
	}

	// Rounds: every workload once, then again.
	var order []string
	for i, p := range fake.calls {
		if fake.names[i] != back.Target.TestFile || !strings.HasPrefix(p.Path, "/proc/self/fd/") {
			t.Errorf("engine got path %s (%s), want the held test file", p.Path, fake.names[i])
		}
		if p.Size != 8<<20 || p.Runtime != time.Second || !p.Direct {
			t.Errorf("params %+v", p)
		}
		order = append(order, string(p.RW)+"/"+bsName(p.BlockSize))
	}
	want := "read/1M write/1M randread/4k randwrite/4k"
	if got := strings.Join(order, " "); got != want+" "+want {
		t.Errorf("run order %s", got)
	}
	// Laid out once, to the extent, before the first workload.
	if len(fake.layouts) != 1 || fake.layouts[0] != 8<<20 || fake.sizeAt[0] != 8<<20 {
		t.Errorf("layouts %v, file sizes at runs %v", fake.layouts, fake.sizeAt)
	}
	for _, wr := range back.Workloads {
		if len(wr.Runs) != 2 || wr.Runs[0].Index != 1 || wr.Runs[1].Index != 2 {
			t.Errorf("%s: runs %+v", wr.Params.Name, wr.Runs)
		}
		if len(wr.Summary) != 1 {
			t.Errorf("%s: summary %v", wr.Params.Name, wr.Summary)
		}
	}
	// One line for the warning all four workloads share.
	if !strings.Contains(strings.Join(record.Warnings(back), "\n"), "seq1m-read, seq1m-write, rnd4k-read, rnd4k-write: runtime 1s is under 3s") {
		t.Errorf("warnings %q", record.Warnings(back))
	}

	// Progress: one layout line, then live figures with an ETA that shrinks.
	if len(progress) == 0 || progress[0].Phase != "layout" {
		t.Fatalf("progress %+v", progress)
	}
	last := progress[len(progress)-1]
	if last.Index != 8 || last.Count != 8 || last.Repetition != 2 || last.Workload != "rnd4k-write" {
		t.Errorf("last progress %+v", last)
	}
	first := progress[2] // second snapshot of the first workload
	if first.ReadIOPS != 400 || first.ETA != 7*time.Second {
		t.Errorf("progress of first run %+v (want 200 I/Os in 0.5 s, 7 s to go)", first)
	}
	// What the progress line says of it (report.ProgressLine, tested
	// there on this same Progress): "[1/8] seq1m-read (run 1/2)".
	if first.Index != 1 || first.Count != 8 || first.Workload != "seq1m-read" || first.Repetition != 1 || first.Repeat != 2 {
		t.Errorf("progress of first run %+v (want [1/8] seq1m-read, run 1/2)", first)
	}
}

func bsName(n int64) string {
	if n >= 1<<20 {
		return "1M"
	}
	return "4k"
}

func TestRunVideoFirstWrite(t *testing.T) {
	target := t.TempDir()
	fake := &fakeEngine{}
	rec, err := Run(context.Background(), workload.Request{Target: target, Set: "video", Overrides: workload.Overrides{Size: 4 << 20}}, Options{Engine: fake})
	if err != nil {
		t.Fatal(err)
	}
	// The first write meets a fresh (sparse) file, and nothing was laid out:
	// each read follows a full size-based write.
	if len(fake.layouts) != 0 {
		t.Errorf("video laid out the file: %v", fake.layouts)
	}
	if len(fake.calls) != 4 || fake.calls[0].Runtime != 0 || !fake.calls[0].Fsync {
		t.Errorf("video calls %+v", fake.calls)
	}
	rows := record.Rows(rec)
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != "video-first-write video-read video-rewrite video-reread" {
		t.Errorf("rows %v", names)
	}
	if left := dirEntries(t, target); len(left) != 0 {
		t.Errorf("target keeps %v", left)
	}
}

func TestRunCancel(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "discard", true: "keep-partial"}[keep], func(t *testing.T) {
			target, results := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
				if n < 2 && p.RW.Writes() {
					return syntheticResult(0, 100, uint64(p.BlockSize), 1), nil
				}
				if n < 2 {
					return syntheticResult(100, 0, uint64(p.BlockSize), 1), nil
				}
				cancel() // Ctrl-C during the third workload
				<-ctx.Done()
				return nil, ctx.Err()
			}}
			rec, err := Run(ctx, workload.Request{Target: target, Set: "quick", KeepPartial: keep, Overrides: workload.Overrides{Size: 4 << 20}},
				Options{Engine: fake, ResultsDir: results})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
			if left := dirEntries(t, target); len(left) != 0 {
				t.Errorf("test file left behind: %v", left)
			}
			saved := dirEntries(t, results)
			if !keep {
				if rec != nil || len(saved) != 0 {
					t.Errorf("record written without --keep-partial: %v", saved)
				}
				return
			}
			if rec == nil || !rec.Partial || len(saved) != 1 {
				t.Fatalf("partial record %v, store %v", rec, saved)
			}
			back, err := record.ReadFile(filepath.Join(results, saved[0]))
			if err != nil || !back.Partial {
				t.Fatalf("saved record: %v", err)
			}
			if len(back.Workloads[0].Runs) != 1 || len(back.Workloads[1].Runs) != 1 || len(back.Workloads[2].Runs) != 0 {
				t.Errorf("partial runs: %d %d %d", len(back.Workloads[0].Runs), len(back.Workloads[1].Runs), len(back.Workloads[2].Runs))
			}
			if len(record.Rows(back)) != 2 {
				t.Errorf("rows of a partial record: %v", record.Rows(back))
			}
		})
	}
}

func TestRunCancelBeforeAnyMeasurement(t *testing.T) {
	target, results := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec, err := Run(ctx, workload.Request{Target: target, KeepPartial: true, Overrides: workload.Overrides{Size: 1 << 20}}, Options{Engine: &fakeEngine{}, ResultsDir: results})
	if !errors.Is(err, context.Canceled) || rec != nil {
		t.Errorf("rec %v err %v", rec, err)
	}
	if left := append(dirEntries(t, target), dirEntries(t, results)...); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestRunEngineFailure(t *testing.T) {
	target, results := t.TempDir(), t.TempDir()
	boom := errors.New("pwrite: input/output error")
	fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) { return nil, boom }}
	_, err := Run(context.Background(), workload.Request{Target: target, Set: "quick", KeepPartial: true, Overrides: workload.Overrides{Size: 4 << 20}},
		Options{Engine: fake, ResultsDir: results})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "seq1m-read") {
		t.Errorf("err %v", err)
	}
	// The one line names the target, so a user with several disks knows
	// which one fails (a device's own path, or a directory and its device).
	if err == nil || !strings.Contains(err.Error(), "workload seq1m-read on "+target) {
		t.Errorf("err %v does not name the target %s", err, target)
	}
	if left := append(dirEntries(t, target), dirEntries(t, results)...); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// Parameters the engine rejects are the user's to fix: a usage error.
	fake.onRun = func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		return nil, errors.Join(errors.New("bs not aligned"), engine.ErrParams)
	}
	_, err = Run(context.Background(), workload.Request{Target: target, Set: "quick", Overrides: workload.Overrides{Size: 4 << 20}}, Options{Engine: fake})
	if !errors.Is(err, workload.ErrUsage) {
		t.Errorf("engine parameter error is not a usage error: %v", err)
	}
	if left := dirEntries(t, target); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestRunBadTargets(t *testing.T) {
	dir := t.TempDir()
	fake := &fakeEngine{}
	run := func(req workload.Request) error {
		_, err := Run(context.Background(), req, Options{Engine: fake, ResultsDir: filepath.Join(dir, "results")})
		return err
	}
	if err := run(workload.Request{Target: filepath.Join(dir, "nope")}); !errors.Is(err, workload.ErrUsage) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing target: %v", err)
	}
	if err := run(workload.Request{Target: "/dev/null"}); !errors.Is(err, workload.ErrUsage) {
		t.Errorf("character device: %v", err)
	}
	// More than the filesystem has: refused before anything is created.
	err := run(workload.Request{Target: dir, Overrides: workload.Overrides{Size: 1 << 50}})
	if err == nil || errors.Is(err, workload.ErrUsage) || !strings.Contains(err.Error(), "not enough free space") {
		t.Errorf("no space: %v", err)
	}
	if left := dirEntries(t, dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if err := run(workload.Request{Target: dir, Set: "nope"}); !errors.Is(err, workload.ErrUsage) {
		t.Errorf("unknown set: %v", err)
	}

	// A regular file is used in place: too small is a usage error, big
	// enough is run without layout and kept.
	file := filepath.Join(dir, "data.img")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(workload.Request{Target: file, Overrides: workload.Overrides{Size: 2 << 20}}); !errors.Is(err, workload.ErrUsage) || !strings.Contains(err.Error(), "file") {
		t.Errorf("small file: %v", err)
	}
	rec, err := Run(context.Background(), workload.Request{Target: file, Specs: []string{"rw=randread,size=1M"}}, Options{Engine: fake})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Target.Kind != record.KindFile || rec.Target.TestFile != "" || len(fake.layouts) != 0 || fake.names[len(fake.names)-1] != file {
		t.Errorf("file target: %+v, layouts %v", rec.Target, fake.layouts)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != 1<<20 {
		t.Errorf("file target changed: %v %v", fi, err)
	}
}

func TestRunPreparedMarker(t *testing.T) {
	// The marker is read from the mount root; a test directory is rarely a
	// mount root, so check the reader on its own.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, record.PreparedMarker), []byte(`{"schema":"diskprep/prepared/v1","fs":"xfs","uuid":"u","mkfs_argv":["mkfs.xfs","-f","/dev/loop0"],"mkfs_version":"6.4.0","mount_opts":"noatime","prepared_at":"2026-11-30T06:00:00Z"}`), 0o644)
	p := readPrepared(dir)
	if p == nil || p.FSType != "xfs" || strings.Join(p.MkfsArgv, " ") != "mkfs.xfs -f /dev/loop0" || p.MountOptions != "noatime" || p.MkfsVersion != "6.4.0" {
		t.Errorf("prepared %+v", p)
	}
	os.WriteFile(filepath.Join(dir, record.PreparedMarker), []byte(`{garbage`), 0o644)
	if readPrepared(dir) != nil || readPrepared(t.TempDir()) != nil {
		t.Error("corrupt or missing marker read as prepared")
	}
}

func TestRunRemovesLeftovers(t *testing.T) {
	target := t.TempDir()
	old := filepath.Join(target, TestFileName("20261129T000000Z-dead"))
	if err := os.WriteFile(old, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := Run(context.Background(), workload.Request{Target: target, Overrides: workload.Overrides{Size: 1 << 20}}, Options{Engine: &fakeEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(rec.Warnings, "\n"), old) {
		t.Errorf("warnings %q name the leftover removed", rec.Warnings)
	}
	// Nobody holds it: a killed run's, removed; the run's own went too.
	if left := dirEntries(t, target); len(left) != 0 {
		t.Errorf("target holds %v", left)
	}
}
