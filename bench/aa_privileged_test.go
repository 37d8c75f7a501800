package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// aaWorkloads are the A/A test's four workloads: reads only (a device
// needs no --allow-device-write for them), short, of four shapes.
var aaWorkloads = []string{
	"name=seq1m,rw=read,bs=1M,iodepth=1,size=64M,runtime=100ms",
	"name=rnd4k,rw=randread,bs=4k,iodepth=1,size=64M,runtime=100ms",
	"name=rnd4k-q8,rw=randread,bs=4k,iodepth=8,size=64M,runtime=100ms",
	"name=seq128k-q4,rw=read,bs=128k,iodepth=4,size=64M,runtime=100ms",
}

// aaRuns is the repetitions a side per trial: 5, the README's advice.
const aaRuns = 5

// An A/A test of the comparison: the same device benchmarked as label a
// and as label b, compared by label, in many trials. Every change it
// calls better or worse is a false positive. Four conditions: the sides'
// repetitions blocked (all of a, then all of b) or interleaved (a, b, a,
// b, ...), on a quiet machine or with a CPU hog started halfway through
// the trial (for blocked order: during the second half of b's runs).
// Interleaved order must keep the false-positive rate at 5% or less in
// both; blocked order is printed beside it, to show what interleaving
// buys. DISKPREP_AA_TRIALS raises the 20 trials (scripts/bench-aa.sh).
func TestPrivilegedAAFalsePositives(t *testing.T) {
	testenv.RequirePrivileged(t, "sh")
	trials := 20
	if n, err := strconv.Atoi(os.Getenv("DISKPREP_AA_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	loop := testenv.NewLoop(t, 128<<20, testenv.LoopOptions{})
	if err := engine.Layout(context.Background(), loop.Image, 128<<20, engine.DataPattern{}); err != nil {
		t.Fatal(err)
	}
	testenv.MustRun(t, "blockdev", "--flushbufs", loop.Dev)
	host := liveHost(t)
	type result struct {
		name          string
		tested, calls int
		unstable      int
	}
	var results []result
	for _, c := range []struct {
		name        string
		interleaved bool
		hog         bool
	}{
		{"interleaved, quiet", true, false},
		{"interleaved, CPU hog from halfway", true, true},
		{"blocked, quiet", false, false},
		{"blocked, CPU hog from halfway", false, true},
	} {
		r := result{name: c.name}
		for trial := range trials {
			recs := aaTrial(t, loop.Dev, host, c.interleaved, c.hog, trial)
			cmp, err := compare.Compare(recs, compare.Options{By: compare.ByLabel, Baseline: "a"})
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range cmp.Rows {
				v := row.Cells[1].Metrics[0] // MB/s; IOPS is the same figure
				switch v.Verdict {
				case compare.VerdictSignificant:
					r.calls++
					r.tested++
				case compare.VerdictSame, compare.VerdictEngineBound:
					r.tested++
				case compare.VerdictUnstable:
					r.tested++
					r.unstable++
				}
			}
		}
		results = append(results, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A/A test: %d trials x %d workloads, %d runs a side, same device as label a and b\n", trials, len(aaWorkloads), aaRuns)
	fmt.Fprintf(&b, "%-36s %6s %6s %7s  %-17s %s\n", "ORDER, LOAD", "CELLS", "CALLED", "RATE", "95% INTERVAL", "UNSTABLE")
	for _, r := range results {
		lo, hi := wilson(r.calls, r.tested)
		fmt.Fprintf(&b, "%-36s %6d %6d %6.1f%%  %5.1f%% to %5.1f%%  %d\n", r.name, r.tested, r.calls, 100*float64(r.calls)/float64(max(r.tested, 1)), 100*lo, 100*hi, r.unstable)
	}
	t.Log("\n" + b.String())
	for _, r := range results[:2] {
		if r.tested < trials*len(aaWorkloads)/2 {
			t.Errorf("%s: only %d cells tested", r.name, r.tested)
		}
		if rate := float64(r.calls) / float64(max(r.tested, 1)); rate > 0.05 {
			t.Errorf("%s: %d of %d cells called a change between a device and itself (%.1f%%, over 5%%)", r.name, r.calls, r.tested, 100*rate)
		}
	}
}

// aaTrial benchmarks dev aaRuns times as label a and as label b, in the
// order asked, one repetition a record, and returns the records.
func aaTrial(t *testing.T, dev string, host *hwinfo.Host, interleaved, hog bool, trial int) []*record.Record {
	t.Helper()
	var order []string
	for i := range 2 * aaRuns {
		switch {
		case interleaved && (i+trial)%2 == 0, !interleaved && i < aaRuns:
			order = append(order, "a")
		default:
			order = append(order, "b")
		}
	}
	var recs []*record.Record
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for i, label := range order {
		// The load changes at the same run in either order: halfway
		// through b's runs when they are blocked.
		if hog && i == aaRuns+aaRuns/2 {
			stop = cpuHog(t)
		}
		rec, err := Run(context.Background(), workload.Request{Target: dev, Specs: aaWorkloads, Repeat: 1, Label: label},
			Options{Host: host})
		if err != nil {
			t.Fatalf("trial %d run %d (%s): %v", trial, i, label, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// cpuHog keeps one CPU busy in another process until stopped.
func cpuHog(t *testing.T) func() {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// wilson is the 95% Wilson score interval of k successes in n trials.
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	z := 1.959963984540054
	p := float64(k) / float64(n)
	nf := float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return math.Max(0, c-h), math.Min(1, c+h)
}
