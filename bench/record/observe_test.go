package record

import (
	"strings"
	"testing"
)

func TestJudgeSteady(t *testing.T) {
	tests := []struct {
		name    string
		values  []float64
		reached bool
		round   int
	}{
		// Within ±3% of 100 from the start: the first window is steady.
		{"steady", []float64{100, 103, 98, 101, 99, 102, 100}, true, 5},
		// A fresh SSD falling to its steady level: the windows up to
		// rounds 4–8 hold part of the fall (120 against ~100: range
		// 20.2%), rounds 5–9 are flat.
		{"settling", []float64{300, 240, 180, 120, 101, 99, 102, 100, 98}, true, 9},
		// A steady fall of 4% a round: range 16% (under 20%) but the
		// fitted line drops 16% across the window (over 10%).
		{"drifting", []float64{100, 96, 92, 88, 84, 80, 76, 72, 68}, false, 0},
		// Flat on average (no slope) but swinging ±15%: range 30%.
		{"oscillating", []float64{85, 115, 85, 115, 85, 115, 85, 115}, false, 0},
		// Four rounds make no window, however flat.
		{"too short", []float64{100, 100, 100, 100}, false, 0},
		{"zeros", []float64{0, 0, 0, 0, 0}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := JudgeSteady("iops", tt.values)
			if s.Reached != tt.reached || s.Round != tt.round {
				t.Fatalf("JudgeSteady(%v) = reached %v round %d (range %.1f%% slope %.1f%%), want reached %v round %d",
					tt.values, s.Reached, s.Round, s.RangePct, s.SlopePct, tt.reached, tt.round)
			}
			if len(s.Values) != len(tt.values) {
				t.Errorf("values %v, want the %d rounds", s.Values, len(tt.values))
			}
		})
	}
}

func TestJudgeSteadyWindowFigures(t *testing.T) {
	// Linear 100, 102 ... 108: average 104, range 8, fit excursion 8.
	s := JudgeSteady("iops", []float64{100, 102, 104, 106, 108})
	if !s.Reached || s.WindowFirst != 1 || s.WindowAverage != 104 {
		t.Fatalf("got %+v", s)
	}
	if want := 8.0 / 104 * 100; abs(s.RangePct-want) > 1e-9 || abs(s.SlopePct-want) > 1e-9 {
		t.Errorf("range %.4f%% slope %.4f%%, want both %.4f%%", s.RangePct, s.SlopePct, want)
	}
	if v := s.Verdict(); !strings.HasPrefix(v, "steady state reached at round 5 (rounds 1–5") {
		t.Errorf("verdict %q", v)
	}
	// The last round alone off by 30%: range too wide, the window is not steady.
	s = JudgeSteady("iops", []float64{100, 100, 100, 100, 130})
	if s.Reached || !strings.HasPrefix(s.Verdict(), "steady state not reached in 5 rounds") {
		t.Errorf("got %+v: %q", s, s.Verdict())
	}
}

func TestMeasuredIsTheSteadyWindow(t *testing.T) {
	var wr WorkloadResult
	var vals []float64
	for i, bw := range []float64{300, 200, 100, 100, 100, 100, 100} {
		wr.Runs = append(wr.Runs, Repetition{Index: i + 1, Write: &DirResult{IOs: 10, IOPS: bw, BWBytesPerS: bw}, CPUSysS: 1e-6 * float64(i+1)})
		vals = append(vals, bw)
	}
	ss := JudgeSteady("iops", vals)
	wr.SteadyState = &ss
	wr.Summarize()
	if ss.Round != 7 {
		t.Fatalf("round %d, want 7", ss.Round)
	}
	m := wr.Measured()
	if len(m) != SteadyWindow || m[0].Index != 3 {
		t.Fatalf("measured %d runs from %d, want rounds 3–7", len(m), m[0].Index)
	}
	if s := wr.Summary["write"].BWBytesPerS; s.N != 5 || s.Max != 100 {
		t.Errorf("summary %+v: the fresh rounds leaked in", s)
	}
	// CPU 3..7 µs over 10 I/Os: 300..700 ns per I/O, median 500.
	if c := wr.EngineCPUNSPerIO; c == nil || c.N != 5 || abs(c.Median-500) > 1e-6 || abs(c.Min-300) > 1e-6 {
		t.Errorf("engine cost %+v, want median 500 ns of 5 runs from 300", c)
	}
	// Not asked: every run counts.
	wr.SteadyState = nil
	if len(wr.Measured()) != 7 {
		t.Errorf("without steady state %d runs measured, want 7", len(wr.Measured()))
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
