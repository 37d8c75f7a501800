package record

import (
	"regexp"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{5}, Stat{5, 5, 5, 1}},
		{[]float64{3, 1, 2}, Stat{2, 1, 3, 3}},
		{[]float64{4, 1, 3, 2}, Stat{2.5, 1, 4, 4}},
		{[]float64{10, 10, 1000, 10, 9}, Stat{10, 9, 1000, 5}},
	}
	for _, tc := range tests {
		in := append([]float64(nil), tc.in...)
		if got := Summarize(tc.in); got != tc.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("Summarize reordered its input")
			}
		}
	}
}

// TestSummaryFromRepetitions checks the summary against the repetitions'
// own numbers, computed here independently.

func TestNewID(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 15, 0, 0, time.FixedZone("CET", 3600))
	id := NewID(at)
	if !regexp.MustCompile(`^20261130T051500Z-[0-9a-f]{4}$`).MatchString(id) {
		t.Errorf("id %q", id)
	}
	later := NewID(at.Add(time.Second))
	if !(id < later) {
		t.Errorf("ids do not sort by time: %s %s", id, later)
	}
}
