package report

import (
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

// cpuComparison is a plain column against an encrypted one, with the
// host's CPU per I/O asked for and no latency.
func cpuComparison(t *testing.T) *compare.Comparison {
	t.Helper()
	mk := func(id, label string, us float64, mbps ...float64) *record.Record {
		r := ct.Record(ct.Opts{ID: id, Label: label, Workloads: []ct.Workload{{Name: "seq1m-read", RW: "read", BS: 1 << 20, MBps: mbps}}})
		for i := range r.Workloads[0].Runs {
			r.Workloads[0].Runs[i].HostCPUNSPerIO = (us + float64(i)) * 1e3
		}
		return r
	}
	c, err := compare.Compare([]*record.Record{
		mk("a", "xfs", 150, 700, 710, 690, 705, 695),
		mk("b", "xfs+luks2", 18000, 58, 57, 59, 58, 56),
	}, compare.Options{CPU: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The host's CPU per I/O is a panel of its own in the change chart,
// titled for what it is (lower is better), never as p99 latency; and
// nothing in its charts crosses a label.
func TestHostCPUChart(t *testing.T) {
	c := cpuComparison(t)
	var buf strings.Builder
	if err := HTML(&buf, c); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "Host CPU per I/O: left is better") || strings.Contains(page, "p99 latency: left is better") {
		t.Errorf("the change chart does not title the host's CPU per I/O as such")
	}
	if !strings.Contains(page, "18.0 ms") {
		t.Errorf("the results table lacks the encrypted column's 18.0 ms of CPU per I/O")
	}
	for i, b := range svgBlocks(t, page) {
		checkNothingCrossesText(t, "host CPU chart "+string(rune('0'+i)), b)
	}
}
