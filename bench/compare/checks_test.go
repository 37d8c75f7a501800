package compare

import (
	"strings"
	"testing"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

func hasWarning(c *Comparison, sub string) bool {
	for _, w := range c.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestHostChecks(t *testing.T) {
	mk := func(id int, label string, iowait, steal float64) *record.Record {
		r := ct.Record(ct.Opts{ID: ct.ID(id), Label: label, Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{100, 101, 99}}}})
		for i := range r.Workloads[0].Runs {
			for s := 0; s < 3; s++ {
				r.Workloads[0].Runs[i].HostSamples = append(r.Workloads[0].Runs[i].HostSamples, record.HostSample{TimeMS: float64(s+1) * 1000, CPUIOWaitPct: iowait, CPUStealPct: steal})
			}
		}
		return r
	}
	c, err := Compare([]*record.Record{mk(1, "bare", 2, 0), mk(2, "vm", 3, 12)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(c, "CPU steal 12.0% in vm against 0.0% in bare (over 9 and 9 sampled seconds)") {
		t.Errorf("no steal warning: %q", c.Warnings)
	}
	if hasWarning(c, "CPU iowait") {
		t.Errorf("iowait 2%% against 3%% warned: %q", c.Warnings)
	}
	c, err = Compare([]*record.Record{mk(1, "bare", 2, 0), mk(2, "busy", 25, 0)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(c, "CPU iowait 25.0% in busy against 2.0% in bare") || hasWarning(c, "steal") {
		t.Errorf("warnings %q", c.Warnings)
	}
}

func TestEngineSpread(t *testing.T) {
	// 1 MiB reads at ~100 MB/s: ~95 IOPS, ~10.5 ms per I/O. The engine's
	// cost varies 10–40 µs from run to run (30 µs spread).
	mk := func(id int, label string, mbps []float64) *record.Record {
		r := ct.Record(ct.Opts{ID: ct.ID(id), Label: label, Workloads: []ct.Workload{{Name: "seqread", MBps: mbps}}})
		for i := range r.Workloads[0].Runs {
			run := &r.Workloads[0].Runs[i]
			run.CPUSysS = float64(run.Read.IOs) * []float64{10e-6, 40e-6, 25e-6}[i%3]
		}
		return r
	}
	base := mk(1, "a", []float64{100, 100, 100, 100, 100})
	// 100.2 MB/s: 20 µs less per I/O, within the 30 µs spread.
	near := mk(2, "b", []float64{100.2, 100.2, 100.2, 100.2, 100.2})
	for i := range near.Workloads[0].Runs {
		// The host spent three times the CPU a read (dm-crypt's, say).
		base.Workloads[0].Runs[i].HostCPUNSPerIO = 100e3 + []float64{0, 3, 1, 4, 2}[i]
		near.Workloads[0].Runs[i].HostCPUNSPerIO = 300e3 + []float64{2, 0, 4, 1, 3}[i]
	}
	c, err := Compare([]*record.Record{base, near}, Options{CPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(c, "seqread: b and a differ by") || !hasWarning(c, "within the engine's own run-to-run spread of CPU time per I/O (30000 ns)") {
		t.Errorf("no engine-spread warning: %q", c.Warnings)
	}
	// Not judged: a difference the engine could make is no verdict.
	for _, m := range []string{MetricMBps, MetricIOPS} {
		if v := cellOf(t, c, "seqread", 1, m); v.Verdict != VerdictEngineBound || v.Better || v.P == nil {
			t.Errorf("%s: %+v, want %q", m, v, VerdictEngineBound)
		}
	}
	// The host's CPU per I/O is the cost itself: judged all the same.
	if v := cellOf(t, c, "seqread", 1, MetricHostCPU); v.Verdict != VerdictSignificant || v.Better {
		t.Errorf("host CPU per I/O, three times the baseline's: %+v, want significant, worse", v)
	}
	// 110 MB/s: about 950 µs less per I/O, far beyond the engine's spread.
	far := mk(3, "c", []float64{110, 110, 110, 110, 110})
	c, err = Compare([]*record.Record{base, far}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if hasWarning(c, "run-to-run spread") {
		t.Errorf("a 10%% difference blamed on the engine: %q", c.Warnings)
	}
	if v := cellOf(t, c, "seqread", 1, MetricMBps); v.Verdict != VerdictSignificant || !v.Better {
		t.Errorf("a 10%% faster column: %+v", v)
	}
}

// TestEngineSpreadSaidOnce: many rows and columns within the engine's
// spread make one warning with their count, not one line per pair (a
// store of a dozen runs had 20 such lines).
func TestEngineSpreadSaidOnce(t *testing.T) {
	mk := func(id int, label string, mbps float64) *record.Record {
		var ws []ct.Workload
		for _, n := range []string{"seqread", "seqwrite", "randread"} {
			ws = append(ws, ct.Workload{Name: n, MBps: []float64{mbps, mbps, mbps, mbps, mbps}})
		}
		r := ct.Record(ct.Opts{ID: ct.ID(id), Label: label, Workloads: ws})
		for w := range r.Workloads {
			for i := range r.Workloads[w].Runs {
				run := &r.Workloads[w].Runs[i]
				run.CPUSysS = float64(run.Read.IOs) * []float64{10e-6, 40e-6, 25e-6}[i%3]
			}
		}
		return r
	}
	c, err := Compare([]*record.Record{mk(1, "a", 100), mk(2, "b", 100.2), mk(3, "c", 100.1)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range c.Warnings {
		if strings.Contains(w, "engine's own run-to-run spread") {
			n++
		}
	}
	if n != 1 || !hasWarning(c, "6 results (") {
		t.Errorf("%d engine-spread warnings, want one for the 6 results: %q", n, c.Warnings)
	}
}
