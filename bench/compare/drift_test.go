package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

func TestMannKendall(t *testing.T) {
	// Five rising values: one order of 120 gives S = 10, so p = 2/120.
	if s, p := mannKendall([]float64{1, 2, 3, 4, 5}); s != 10 || math.Abs(p-2.0/120) > 1e-12 {
		t.Errorf("rising: S=%d p=%v", s, p)
	}
	if s, p := mannKendall([]float64{3, 1, 4, 1.5, 5, 9, 2, 6}); s == 0 || p < 0.1 {
		t.Errorf("no trend: S=%d p=%v", s, p)
	}
	// The normal approximation past 10 values: 12 rising.
	xs := make([]float64, 12)
	for i := range xs {
		xs[i] = float64(i)
	}
	if _, p := mannKendall(xs); p > 1e-4 {
		t.Errorf("12 rising: p=%v", p)
	}
	if d := driftPct([]float64{100, 102, 104, 106, 108}); math.Abs(d-8/104.0*100) > 1e-9 {
		t.Errorf("drift %v", d)
	}
}

// Under no trend, the per-side test keeps its level: about 5% of random
// sequences are called trending, not more.
func TestMannKendallLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hits := 0
	const trials = 4000
	for range trials {
		xs := make([]float64, 5+rng.IntN(6))
		for i := range xs {
			xs[i] = rng.NormFloat64()
		}
		if _, p := mannKendall(xs); p <= Alpha {
			hits++
		}
	}
	if rate := float64(hits) / trials; rate > 0.06 {
		t.Errorf("false trend rate %.3f over %d random sequences", rate, trials)
	}
}

// A side whose runs slid steadily (a load that grew during them) makes the
// cell unstable, with how far it went, instead of better or worse; the
// runs are read in the order they ran, not the records' order.
func TestDriftMakesCellUnstable(t *testing.T) {
	start := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	base := ct.Record(ct.Opts{ID: "a", Label: "a", Start: start, Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{500, 502, 499, 501, 500, 498, 503, 500}}}})
	// Falling 4% a run: 600, 576, ...; as records go, the second half
	// ran first, so only the start times put them in order.
	slid := []float64{600, 576, 553, 531, 510, 489, 470, 451}
	late := ct.Record(ct.Opts{ID: "b2", Label: "b", Start: start.Add(time.Hour), Workloads: []ct.Workload{{Name: "seqread", MBps: slid[4:]}}})
	early := ct.Record(ct.Opts{ID: "b1", Label: "b", Start: start.Add(30 * time.Minute), Workloads: []ct.Workload{{Name: "seqread", MBps: slid[:4]}}})
	c, err := Compare([]*record.Record{base, late, early}, Options{By: ByLabel})
	if err != nil {
		t.Fatal(err)
	}
	v := cellOf(t, c, "seqread", 1, MetricMBps)
	if v.Verdict != VerdictUnstable || v.DriftPct == nil || *v.DriftPct > -20 || v.DriftIn != "b" || v.Better {
		t.Fatalf("cell %+v drift %v", v, deref(v.DriftPct))
	}
	if iops := cellOf(t, c, "seqread", 1, MetricIOPS); iops.Verdict != VerdictUnstable {
		t.Errorf("the IOPS of the same runs: %+v", iops)
	}
	if c.Drifted != 1 || !strings.Contains(c.Method, "Mann–Kendall") { // MB/s; IOPS is its twin
		t.Errorf("drifted %d, method %q", c.Drifted, c.Method)
	}
	// The same values shuffled out of their trend: a verdict again.
	flat := []float64{531, 600, 470, 553, 489, 576, 451, 510}
	c, err = Compare([]*record.Record{base, ct.Record(ct.Opts{ID: "b", Label: "b", Start: start.Add(time.Hour), Workloads: []ct.Workload{{Name: "seqread", MBps: flat}}})}, Options{By: ByLabel})
	if err != nil {
		t.Fatal(err)
	}
	if v := cellOf(t, c, "seqread", 1, MetricMBps); v.Verdict == VerdictUnstable {
		t.Errorf("no trend, yet %+v", v)
	}
}
