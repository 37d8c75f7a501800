package bench

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/workload"
)

// TestRunSteadyState: rounds run until the last five are steady, each
// workload on its own (a flat one stops at round 5, a settling one later),
// the record says at which round, and the summary is of the window.
func TestRunSteadyState(t *testing.T) {
	// rnd: 4 KiB writes falling from 3000 to 1000 IOPS over the first
	// rounds (a fresh SSD), then flat; seq: flat from the start.
	rnd := []uint64{6000, 5000, 4000, 3000, 2000, 2000, 2020, 1980, 2000, 2010}
	var rndRound, seqRound atomic.Int32
	fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		if p.RW == engine.RandWrite {
			i := rndRound.Add(1) - 1
			return syntheticResult(0, rnd[min(int(i), len(rnd)-1)], 4096, 1), nil
		}
		seqRound.Add(1)
		return syntheticResult(100, 0, 1<<20, 1), nil
	}}
	req := workload.Request{Target: t.TempDir(), SteadyState: true, Specs: []string{
		"name=rnd,rw=randwrite,bs=4k,size=1M,runtime=1s", "name=seq,rw=read,bs=1M,size=1M,runtime=1s",
	}}
	rec, err := Run(context.Background(), req, Options{Engine: fake})
	if err != nil {
		t.Fatal(err)
	}
	seq, rndW := rec.Workloads[1], rec.Workloads[0]
	if seqRound.Load() != 5 || len(seq.Runs) != 5 || seq.SteadyState == nil || !seq.SteadyState.Reached || seq.SteadyState.Round != 5 {
		t.Errorf("flat workload: %d rounds, verdict %+v; want steady at round 5", seqRound.Load(), seq.SteadyState)
	}
	// Rounds 5–9 (2000..2010 IOs over 2 s): the window closing at 9.
	ss := rndW.SteadyState
	if ss == nil || !ss.Reached || ss.Round != 9 || len(rndW.Runs) != 9 || ss.Metric != "iops" {
		t.Fatalf("settling workload: %d rounds, verdict %+v; want steady at round 9 on iops", len(rndW.Runs), ss)
	}
	if s := rndW.Summary["write"].IOPS; s.N != 5 || s.Max > 1010.1 || s.Min < 989.9 {
		t.Errorf("summary %+v: not the window's rounds 5–9", s)
	}
	if rec.Repeat != 25 {
		t.Errorf("record repeat %d, want the most rounds, 25", rec.Repeat)
	}
	for _, w := range rec.Workloads {
		if len(w.Warnings) > 0 && strings.Contains(strings.Join(w.Warnings, " "), "not reached") {
			t.Errorf("warnings %q", w.Warnings)
		}
	}
}

func TestRunSteadyStateNotReached(t *testing.T) {
	var n atomic.Int32
	fake := &fakeEngine{onRun: func(ctx context.Context, _ int, p engine.Params) (*engine.Result, error) {
		i := n.Add(1)
		return syntheticResult(uint64(100+60*(i%2)), 0, 1<<20, 1), nil // ±23%: never steady
	}}
	req := workload.Request{Target: t.TempDir(), SteadyState: true, Specs: []string{"name=osc,rw=read,bs=1M,size=1M,runtime=1s"}}
	rec, err := Run(context.Background(), req, Options{Engine: fake})
	if err != nil {
		t.Fatal(err)
	}
	wr := rec.Workloads[0]
	if n.Load() != 25 || wr.SteadyState == nil || wr.SteadyState.Reached || len(wr.SteadyState.Values) != 25 {
		t.Fatalf("%d rounds, verdict %+v; want 25 rounds, not reached", n.Load(), wr.SteadyState)
	}
	if !strings.Contains(strings.Join(wr.Warnings, "\n"), "osc: steady state not reached in 25 rounds") {
		t.Errorf("warnings %q", wr.Warnings)
	}
	if wr.Summary["read"].IOPS.N != 5 {
		t.Errorf("summary of %d rounds, want the last 5", wr.Summary["read"].IOPS.N)
	}
}

func TestSteadyStateBadInput(t *testing.T) {
	fake := &fakeEngine{}
	dir := t.TempDir()
	for name, req := range map[string]workload.Request{
		"size-based":               {Target: dir, SteadyState: true, Specs: []string{"rw=write,bs=1M,size=1M,runtime=0"}},
		"video set":                {Target: dir, SteadyState: true, Set: "video"},
		"with repeat":              {Target: dir, SteadyState: true, Repeat: 3, Specs: []string{"rw=read,size=1M,runtime=1s"}},
		"repeat auto":              {Target: dir, SteadyState: true, Repeat: 10, RepeatAuto: true, Specs: []string{"rw=read,size=1M,runtime=1s"}},
		"precondition a directory": {Target: dir, Precondition: true, AllowDeviceWrite: true, Specs: []string{"rw=read,size=1M,runtime=1s"}},
	} {
		rec, err := Run(context.Background(), req, Options{Engine: fake, ResultsDir: t.TempDir()})
		if !errors.Is(err, workload.ErrUsage) || rec != nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (record %v), want one usage error line", name, err, rec != nil)
		}
	}
	if len(fake.calls) != 0 {
		t.Errorf("the engine ran %d times", len(fake.calls))
	}
}
