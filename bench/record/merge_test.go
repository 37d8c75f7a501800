package record

import (
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/workload"
)

func roundOf(start time.Time, iops ...float64) *Record {
	r := &Record{Schema: Schema, ID: "r" + start.Format("150405"), Label: "xfs", Start: start, End: start.Add(time.Minute), Repeat: len(iops),
		Target: Target{Path: "/mnt/x"}, Warnings: []string{"same warning"}}
	wr := WorkloadResult{Params: workload.Workload{Name: "rnd4k", RW: "randread"}}
	for i, v := range iops {
		wr.Runs = append(wr.Runs, Repetition{Index: i + 1, Start: start.Add(time.Duration(i) * time.Second),
			Read: &DirResult{IOs: uint64(v), IOPS: v, BWBytesPerS: v * 4096}})
	}
	wr.Summarize()
	r.Workloads = []WorkloadResult{wr}
	return r
}

// Rounds taken between other conditions' become one record: runs in
// order, numbered again, summaries of all of them, warnings once.
func TestMergeRounds(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	m, err := MergeRounds("merged", []*Record{roundOf(t0, 100), roundOf(t0.Add(2*time.Minute), 300), roundOf(t0.Add(4*time.Minute), 200)})
	if err != nil {
		t.Fatal(err)
	}
	wr := m.Workloads[0]
	if m.ID != "merged" || m.Order != OrderInterleaved || m.Repeat != 3 || len(wr.Runs) != 3 || !m.Start.Equal(t0) || !m.End.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("merged %+v", m)
	}
	for i, r := range wr.Runs {
		if r.Index != i+1 {
			t.Errorf("run %d numbered %d", i, r.Index)
		}
	}
	if s := wr.Summary["read"]; s.IOPS.Median != 200 || s.IOPS.Min != 100 || s.IOPS.Max != 300 || s.IOPS.N != 3 {
		t.Errorf("summary %+v", s.IOPS)
	}
	if len(m.Warnings) != 1 {
		t.Errorf("warnings %q", m.Warnings)
	}
	other := roundOf(t0, 1)
	other.Label = "ext4"
	if _, err := MergeRounds("x", []*Record{roundOf(t0, 1), other}); err == nil || !strings.Contains(err.Error(), "round 2") {
		t.Errorf("rounds of two labels merged: %v", err)
	}
}

// Each round takes every condition once, the first rotating, so over the
// rounds each condition is first as often as the others.
func TestRoundOrder(t *testing.T) {
	var got []string
	for r := range 4 {
		s := ""
		for _, i := range RoundOrder(r, 3) {
			s += string(rune('a' + i))
		}
		got = append(got, s)
	}
	if strings.Join(got, " ") != "abc bca cab abc" {
		t.Errorf("rounds %q, want abc bca cab abc", got)
	}
}
