package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/atomicfile"
)

// TestRunTargetRemovedMidRun removes the target directory while the first
// of two workloads runs: the run stops before the second (whose test file
// would otherwise be made again wherever the path now leads), saves nothing
// and says why.
func TestRunTargetRemovedMidRun(t *testing.T) {
	for _, specs := range [][]string{
		{"name=a,rw=randread,size=1M,runtime=1s", "name=b,rw=randwrite,size=1M,runtime=1s"},
		{"name=only,rw=randread,size=1M,runtime=1s"}, // caught after the last workload too
	} {
		t.Run(specs[0], func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "sub")
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			results := t.TempDir()
			fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
				if n == 0 {
					if err := os.RemoveAll(target); err != nil {
						t.Error(err)
					}
				}
				return syntheticResult(100, 0, uint64(p.BlockSize), 1), nil
			}}
			rec, err := Run(context.Background(), workload.Request{Target: target, Specs: specs},
				Options{Host: syntheticHost(), ResultsDir: results, Engine: fake})
			if err == nil || !strings.Contains(err.Error(), "went away during the run") || rec != nil {
				t.Fatalf("rec %v, err %v", rec, err)
			}
			t.Logf("error: %v", err)
			if len(fake.calls) != 1 {
				t.Errorf("engine ran %d workloads after the target went away", len(fake.calls))
			}
			if left := dirEntries(t, results); len(left) != 0 {
				t.Errorf("store holds %v", left)
			}
			if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("target made again: %v", err)
			}
		})
	}
}

// TestRunTargetReplacedMidRun: a new directory at the same path (removed and
// made again) is not the target the run started on either.
func TestRunTargetReplacedMidRun(t *testing.T) {
	target := filepath.Join(t.TempDir(), "sub")
	os.Mkdir(target, 0o755)
	fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		name := heldName(p.Path)
		os.RemoveAll(target)
		os.Mkdir(target, 0o755)
		os.WriteFile(name, nil, 0o600) // same name, another file
		return syntheticResult(100, 0, uint64(p.BlockSize), 1), nil
	}}
	_, err := Run(context.Background(), workload.Request{Target: target, Specs: []string{"rw=read,size=1M,runtime=1s"}},
		Options{Host: syntheticHost(), ResultsDir: t.TempDir(), Engine: fake})
	if err == nil || !strings.Contains(err.Error(), "another file is at its path") {
		t.Fatalf("err %v", err)
	}
	// The stranger's file is not removed by name: only the run's own file
	// (already gone with the old directory) would be.
	if left := dirEntries(t, target); len(left) != 1 {
		t.Errorf("target holds %v", left)
	}
}

// TestRunFilesystemFull: the engine fails with ENOSPC (something else
// filled the filesystem after the free-space check): the error names the
// target and ENOSPC, the test file goes, nothing is saved.
func TestRunFilesystemFull(t *testing.T) {
	target, results := t.TempDir(), t.TempDir()
	fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		return nil, fmt.Errorf("write %s: %w", p.Path, unix.ENOSPC)
	}}
	_, err := Run(context.Background(), workload.Request{Target: target, Specs: []string{"rw=write,size=1M,runtime=1s"}},
		Options{Host: syntheticHost(), ResultsDir: results, Engine: fake})
	if !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), target+" filled up during the run") ||
		!strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("err %v", err)
	}
	if left := append(dirEntries(t, target), dirEntries(t, results)...); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestLeftovers: a test file nobody holds is a killed run's leftover: the
// next run removes it before judging the free space, and says so; one a
// live run holds is named as such and stays; a link of that name is not
// followed, nor removed.
func TestLeftovers(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, TestFileName("20261130T000000Z-dead"))
	os.WriteFile(stale, make([]byte, 4096), 0o600)
	live, err := createTestFile(filepath.Join(dir, TestFileName("20261130T000000Z-live")))
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	elsewhere := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(elsewhere, []byte("keep"), 0o600)
	link := filepath.Join(dir, TestFileName("20261130T000000Z-link"))
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "unrelated.tmp"), nil, 0o600)

	var notes strings.Builder
	rec, err := Run(context.Background(), workload.Request{Target: dir, Specs: []string{"rw=read,size=1M,runtime=1s"}},
		Options{Host: syntheticHost(), Engine: &fakeEngine{}, Notes: &notes})
	if err != nil {
		t.Fatal(err)
	}
	if want := "removed " + stale + " (4 KiB), the test file of an earlier run that was killed\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's test file is still there: %v", err)
	}
	all := strings.Join(rec.Warnings, "\n")
	if !strings.Contains(all, live.path+" (0 B) is the test file of another bench running now") {
		t.Errorf("no in-use warning in %q", all)
	}
	if strings.Contains(all, "unrelated") || strings.Contains(all, stale) {
		t.Errorf("warnings %q", all)
	}
	for _, p := range []string{live.path, link, elsewhere, filepath.Join(dir, "unrelated.tmp")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestLeftoverRemoverRace: a run's new test file taken for a leftover by
// another run's remover between its create and its flock is made again,
// and is the run's once created: the remover's lock makes the creator's
// flock fail, its unlink makes the path lead elsewhere.
func TestLeftoverRemoverRace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TestFileName("20261130T000000Z-race"))
	for round := range 200 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 50 {
				removeLeftover(path)
			}
		}()
		tf, err := createTestFile(path)
		<-done
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := tf.check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, ok := removeLeftover(path); ok {
			t.Fatalf("round %d: a live run's test file was removed", round)
		}
		if err := tf.remove(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunIDClash: a record already holding the run's id (another run
// started in the same second with the same random bits) makes the run take
// another id; both records stay.
func TestRunIDClash(t *testing.T) {
	target, results := t.TempDir(), t.TempDir()
	var clashed string
	fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		// The test file's name carries the run's id.
		clashed = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(heldName(p.Path)), "diskprep-bench."), ".tmp")
		if err := record.Save(results, recWithID(clashed)); err != nil {
			t.Error(err)
		}
		return syntheticResult(100, 0, uint64(p.BlockSize), 1), nil
	}}
	rec, err := Run(context.Background(), workload.Request{Target: target, Specs: []string{"rw=read,size=1M,runtime=1s"}},
		Options{Host: syntheticHost(), ResultsDir: results, Engine: fake})
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID == clashed || !strings.HasPrefix(rec.ID, clashed[:len("20060102T150405Z-")]) {
		t.Errorf("id %s after a clash with %s", rec.ID, clashed)
	}
	entries, warnings, err := record.List(results)
	if err != nil || len(entries) != 2 || len(warnings) != 0 {
		t.Fatalf("store: %d entries, %v, %v", len(entries), warnings, err)
	}
}

// TestStoreConcurrentReaders saves records while readers list and load the
// store in parallel: a reader never sees a partial record (no warning, no
// error), and every record it sees is whole.
func TestStoreConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	// A killed writer's temp file, half written: never read.
	os.WriteFile(filepath.Join(dir, atomicfile.TempPrefix+"20261130T000000Z-dead.json-123"), []byte(`{"schema":"diskprep/result/v1","id":`), 0o644)
	const writes = 60
	big := syntheticRecord()
	// A record of some 100 KiB, so a torn read would be likely if
	// Save were not atomic.
	for len(big.Workloads) < 12 {
		big.Workloads = append(big.Workloads, syntheticRecord().Workloads...)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		base := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
		for i := range writes {
			r := *big
			r.ID = fmt.Sprintf("%s-%04x", base.Add(time.Duration(i)*time.Second).Format("20060102T150405Z"), i)
			if err := record.Save(dir, &r); err != nil {
				writeErr = err
				return
			}
		}
	}()
	var lists, loads, readErrs atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				entries, warnings, err := record.List(dir)
				lists.Add(1)
				if err != nil || len(warnings) != 0 {
					readErrs.Add(1)
					t.Errorf("list: %v %v", warnings, err)
					return
				}
				for _, en := range entries {
					if len(en.Record.Workloads) != len(big.Workloads) {
						readErrs.Add(1)
						t.Errorf("%s: %d workloads", en.Path, len(en.Record.Workloads))
					}
				}
				if n := len(entries); n > 0 {
					if _, err := record.Load(dir, entries[n-1].Record.ID); err != nil {
						readErrs.Add(1)
						t.Errorf("load: %v", err)
					}
					loads.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	entries, _, _ := record.List(dir)
	t.Logf("%d records written while %d lists and %d loads ran; %d reader errors", writes, lists.Load(), loads.Load(), readErrs.Load())
	if len(entries) != writes || readErrs.Load() != 0 {
		t.Errorf("store holds %d records, readers saw %d errors", len(entries), readErrs.Load())
	}
}

// TestRunEngineFailsOnMissingFile: when the engine fails because the test
// file went away between workloads (it reports a missing target as bad
// parameters, a usage error), the run reports the target going away.
func TestRunEngineFailsOnMissingFile(t *testing.T) {
	target := filepath.Join(t.TempDir(), "sub")
	os.Mkdir(target, 0o755)
	fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		os.RemoveAll(target)
		return nil, fmt.Errorf("%w: target %s does not exist", engine.ErrParams, p.Path)
	}}
	_, err := Run(context.Background(), workload.Request{Target: target, Specs: []string{"rw=read,size=1M,runtime=1s"}},
		Options{Host: syntheticHost(), Engine: fake})
	if err == nil || errors.Is(err, workload.ErrUsage) || !strings.Contains(err.Error(), "went away during the run") {
		t.Fatalf("err %v", err)
	}
}

// TestRunNoSpaceNamesLeftovers: when the test file of another bench
// running there now is what leaves too little space, the refusal says so.
func TestRunNoSpaceNamesLeftovers(t *testing.T) {
	dir := t.TempDir()
	live, err := createTestFile(filepath.Join(dir, TestFileName("20261130T000000Z-live")))
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	_, err = Run(context.Background(), workload.Request{Target: dir, Specs: []string{"rw=read,size=1P,runtime=1s"}},
		Options{Host: syntheticHost(), Engine: &fakeEngine{}})
	if err == nil || !strings.Contains(err.Error(), "not enough free space") || !strings.Contains(err.Error(), "(lower --size, or wait for the 1 other bench(es) running there now)") {
		t.Fatalf("err %v", err)
	}
}

// TestRunSaveFails: a store that cannot take the record (here a path under
// a regular file) does not lose the run: Run returns the whole record with
// an error wrapping record.ErrNotSaved that names the store and the cause.
func TestRunSaveFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(file, "results")
	rec, err := Run(context.Background(), workload.Request{Target: t.TempDir(), Specs: []string{"rw=read,size=1M,runtime=1s"}},
		Options{Host: syntheticHost(), ResultsDir: results, Engine: &fakeEngine{}})
	if !errors.Is(err, record.ErrNotSaved) || !errors.Is(err, unix.ENOTDIR) || !strings.HasPrefix(err.Error(), "result not saved in "+results+": ") {
		t.Fatalf("err %v", err)
	}
	if rec == nil || rec.Partial || len(rec.Workloads) != 1 || len(rec.Workloads[0].Runs) != 1 {
		t.Fatalf("record %+v", rec)
	}
}

// A user who may write the target directory swaps the test file's name
// for a link to a file of root's while the run lays the test file out:
// nothing reaches that file (the engine opens the file the run made, not
// its name again), and the run stops, the name no longer leading to it.
// With the real engine, as it opens and writes.
func TestRunTestFileSwappedForLink(t *testing.T) {
	target, results := t.TempDir(), t.TempDir()
	victim := filepath.Join(t.TempDir(), "shadow")
	secret := []byte("root:$6$keep-me:19000:0:99999:7:::\n")
	if err := os.WriteFile(victim, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	swapped := ""
	progress := func(p Progress) {
		if p.Phase != "layout" || swapped != "" {
			return
		}
		des, _ := os.ReadDir(target)
		for _, d := range des {
			name := filepath.Join(target, d.Name())
			if err := os.Rename(name, name+".moved"); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(victim, name); err != nil {
				t.Error(err)
			}
			swapped = name
		}
	}
	_, err := Run(context.Background(), workload.Request{Target: target, Specs: []string{"rw=write,size=1M,runtime=0", "rw=read,size=1M,runtime=0"}},
		Options{Host: syntheticHost(), ResultsDir: results, Progress: progress})
	if swapped == "" {
		t.Fatal("no test file to swap at the layout")
	}
	if err == nil || !strings.Contains(err.Error(), "another file is at its path") {
		t.Errorf("run on a swapped test file: %v, want it stopped", err)
	}
	if b, _ := os.ReadFile(victim); !bytes.Equal(b, secret) {
		t.Errorf("the file the link leads to was written: %d bytes now", len(b))
	}
	if fi, err := os.Lstat(swapped); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the stranger's link at %s was removed: %v", swapped, err)
	}
	if fi, err := os.Stat(swapped + ".moved"); err != nil || fi.Size() != 0 {
		t.Errorf("the run's own file, moved away, keeps its space: %v", err)
	}
}
