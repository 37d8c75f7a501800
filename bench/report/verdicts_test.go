package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

// TestVerdictsInEveryReport: why repetitions stopped, the steady-state
// verdict and the device health are said by the record's table and
// Markdown and by every comparison format.
func TestVerdictsInEveryReport(t *testing.T) {
	rec := ct.Record(ct.Opts{ID: ct.ID(1), Label: "ssd", Workloads: []ct.Workload{
		{Name: "rnd4k-write", RW: "randwrite", BS: 4 << 10, MBps: []float64{400, 300, 200, 201, 199, 200, 202}},
		{Name: "seq1m-read", RW: "read", MBps: []float64{500, 501, 502}},
	}})
	var vals []float64
	for _, r := range rec.Workloads[0].Runs {
		vals = append(vals, r.Write.IOPS)
	}
	ss := record.JudgeSteady("iops", vals)
	rec.Workloads[0].SteadyState = &ss
	rec.Workloads[1].RepeatStop = "stopped after 3 runs: the 95% interval of the median is within ±0.2% (goal ±3.5%)"
	temp := 41.0
	rec.Health = &record.Health{Device: "/dev/sdb", Tool: "smartctl 7.3", Before: &record.HealthReading{TemperatureC: &temp}, After: &record.HealthReading{TemperatureC: &temp}}
	want := []string{
		"rnd4k-write: steady state reached at round 7 (rounds 3–7",
		"seq1m-read: stopped after 3 runs: the 95% interval",
		"device health of /dev/sdb (smartctl 7.3): temperature 41 → 41 °C",
	}
	for _, format := range []string{"table", "markdown"} {
		var b bytes.Buffer
		if err := Record(&b, format, rec); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("record %s lacks %q:\n%s", format, w, b.String())
			}
		}
	}
	fresh := ct.Record(ct.Opts{ID: ct.ID(2), Label: "fresh", Workloads: []ct.Workload{
		{Name: "rnd4k-write", RW: "randwrite", BS: 4 << 10, MBps: []float64{400, 390, 410}},
	}})
	c, err := compare.Compare([]*record.Record{rec, fresh}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A comparison says them one line per kind and column.
	want = []string{
		"ssd: steady state: rnd4k-write reached at round 7",
		"ssd: runs of --repeat auto: seq1m-read 3",
		"ssd: device health of /dev/sdb (smartctl 7.3): temperature 41 → 41 °C",
		"rnd4k-write: compares a steady-state result with a fresh one (ssd at steady state (round 7); fresh fresh (no --steady-state))",
	}
	for _, format := range []string{"table", "markdown", "html", "json"} {
		var b bytes.Buffer
		if err := Write(&b, format, c); err != nil {
			t.Fatal(err)
		}
		// The table wraps long warnings at 120 columns: compare its
		// words, not its line breaks.
		got := strings.Join(strings.Fields(b.String()), " ")
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("comparison %s lacks %q", format, w)
			}
		}
	}
}
