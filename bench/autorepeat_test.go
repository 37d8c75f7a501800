package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
)

// runAuto runs one seqread under --repeat auto:max against an engine
// whose n-th run takes elapsed(n): the same I/O in more time is less
// throughput.
func runAuto(t *testing.T, max int, elapsed func(n int) time.Duration) *record.Record {
	t.Helper()
	fake := &fakeEngine{onRun: func(_ context.Context, n int, p engine.Params) (*engine.Result, error) {
		res := syntheticResult(100, 0, uint64(p.BlockSize), 1)
		res.Elapsed = elapsed(n)
		return res, nil
	}}
	rec, err := Run(context.Background(), workload.Request{
		Target: t.TempDir(), Specs: []string{"name=seqread,rw=read,bs=1M,size=8M,runtime=1s"},
		Repeat: max, RepeatAuto: true,
	}, Options{Host: syntheticHost(), Engine: fake})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestRepeatAutoStable(t *testing.T) {
	rec := runAuto(t, 10, func(int) time.Duration { return 2 * time.Second })
	wr := rec.Workloads[0]
	if len(wr.Runs) != workload.AutoRepeatMin || !rec.RepeatAuto || rec.Repeat != 10 {
		t.Fatalf("%d runs (auto %v, max %d), want %d: a stable target stops at the minimum", len(wr.Runs), rec.RepeatAuto, rec.Repeat, workload.AutoRepeatMin)
	}
	if !strings.HasPrefix(wr.RepeatStop, "stopped after 3 runs: the 95% interval of the median is within ±0.0%") {
		t.Errorf("repeat stop %q", wr.RepeatStop)
	}
}

func TestRepeatAutoSettles(t *testing.T) {
	// 2.0, 2.2, 1.8 s, then 2.0 s: after three runs the median's interval
	// is ±10%; more runs at the median narrow it until it is within ±3.5%.
	times := []time.Duration{2000, 2200, 1800}
	rec := runAuto(t, 10, func(n int) time.Duration {
		if n < len(times) {
			return times[n] * time.Millisecond
		}
		return 2 * time.Second
	})
	wr := rec.Workloads[0]
	if n := len(wr.Runs); n <= 3 || n >= 10 {
		t.Errorf("%d runs, want more than 3 and fewer than the maximum", n)
	}
	if !strings.Contains(wr.RepeatStop, "within") {
		t.Errorf("repeat stop %q", wr.RepeatStop)
	}
	// Every repetition is kept.
	if len(wr.Runs) != int(wr.Summary["read"].BWBytesPerS.N) {
		t.Errorf("summary over %d of %d runs", wr.Summary["read"].BWBytesPerS.N, len(wr.Runs))
	}
}

func TestRepeatAutoNoisyStopsAtMax(t *testing.T) {
	rec := runAuto(t, 4, func(n int) time.Duration { return time.Duration(1000+700*(n%2)) * time.Millisecond })
	wr := rec.Workloads[0]
	if len(wr.Runs) != 4 || !strings.HasPrefix(wr.RepeatStop, "stopped at the most runs allowed, 4") {
		t.Errorf("%d runs, stop %q", len(wr.Runs), wr.RepeatStop)
	}
	if !strings.Contains(strings.Join(wr.Warnings, "\n"), "seqread: not stable after 4 runs") {
		t.Errorf("warnings %q", wr.Warnings)
	}
}

func TestParseRepeat(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		auto bool
		err  string
	}{
		{"1", 1, false, ""}, {"5", 5, false, ""}, {"auto", 10, true, ""}, {"auto:6", 6, true, ""},
		{"auto:1", 0, false, "--repeat auto:1: MAX must be 3..100"}, {"auto:101", 0, false, "MAX must be 3..100"},
		{"auto:x", 0, false, "want N, auto or auto:MAX"}, {"autox", 0, false, "want N, auto or auto:MAX"},
		{"0", 0, false, "--repeat 0: must be at least 1"}, {"many", 0, false, "want N, auto or auto:MAX"},
	} {
		n, auto, err := workload.ParseRepeat("--repeat", c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || n != c.n || auto != c.auto {
			t.Errorf("%q: %d %v %v, want %d %v", c.in, n, auto, err, c.n, c.auto)
		}
	}
}
