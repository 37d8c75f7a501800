package main

import (
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench"
)

// Issue 13 item 6: fscompare's live line covers the whole comparison, not
// the filesystem being measured: every step (a filesystem's bench in a
// round of the interleaved run; its whole run, blocked).
func TestFSCompareETACoversEveryFilesystem(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f := &fsETA{steps: 3}
	// Round 1 of 3, 10 s in, the bench says 30 s left of it: the round
	// takes 40 s, and two more of those are to come.
	f.start(0, "xfs", t0)
	p := f.adjust(bench.Progress{Workload: "seq1m-read", Index: 2, Count: 4, ETA: 30 * time.Second}, t0.Add(10*time.Second))
	if p.ETA != 30*time.Second+2*40*time.Second || p.Index != 2 || p.Count != 12 || p.Workload != "xfs 1/3: seq1m-read" {
		t.Errorf("round 1: %+v", p)
	}
	f.finish(t0.Add(45 * time.Second)) // it took 45 s in the end
	// Round 2: one more round of 45 s after this one.
	f.start(1, "ext4", t0.Add(50*time.Second))
	p = f.adjust(bench.Progress{Workload: "rnd4k-read", Index: 3, Count: 4, ETA: 20 * time.Second}, t0.Add(70*time.Second))
	if p.ETA != 20*time.Second+45*time.Second || p.Index != 7 || p.Count != 12 || p.Workload != "ext4 2/3: rnd4k-read" {
		t.Errorf("round 2: %+v", p)
	}
	// The last round: only its own ETA is left.
	f.start(2, "xfs", t0.Add(100*time.Second))
	p = f.adjust(bench.Progress{Workload: "rnd4k-write", Index: 4, Count: 4, ETA: 5 * time.Second}, t0.Add(130*time.Second))
	if p.ETA != 5*time.Second || p.Index != 12 || p.Count != 12 {
		t.Errorf("round 3: %+v", p)
	}
}
