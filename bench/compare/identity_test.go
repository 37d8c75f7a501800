package compare

import (
	"slices"
	"strings"
	"testing"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
)

func rowNamesOf(c *Comparison) []string {
	var out []string
	for _, r := range c.Rows {
		out = append(out, r.Name)
	}
	return out
}

// The seed's mistake (issue 12): three fio runs all named "file1", a read
// and a write among them, imported with one label, must not be pooled as
// repetitions of one workload "file1".
func TestSameNameDifferentParametersNeverPooled(t *testing.T) {
	mk := func(id, label, rw string, mbps float64) *record.Record {
		return ct.Record(ct.Opts{ID: id, Label: label, Workloads: []ct.Workload{{Name: "file1", RW: rw, BS: 32 << 20, MBps: []float64{mbps}}}})
	}
	recs := []*record.Record{
		mk("1", "direct", "read", 380), mk("2", "direct", "write", 231),
		mk("3", "vmdk", "read", 386), mk("4", "vmdk", "write", 206),
	}
	c, err := Compare(recs, Options{By: ByLabel})
	if err != nil {
		t.Fatal(err)
	}
	if got := rowNamesOf(c); !slices.Equal(got, []string{"file1 (rw=read)", "file1 (rw=write)"}) {
		t.Fatalf("rows %v", got)
	}
	for _, r := range c.Rows {
		for gi, cell := range r.Cells {
			if cell.N != 1 {
				t.Errorf("%s in %s: %d values pooled, want 1", r.Name, c.Groups[gi].Name, cell.N)
			}
		}
	}
	if v := cellOf(t, c, "file1 (rw=write)", 1, MetricMBps); v.ChangePct == nil || *v.ChangePct > -10.8 || *v.ChangePct < -10.9 {
		t.Errorf("write change %v, want 206/231-1", deref(v.ChangePct))
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "not matched") || strings.Contains(w, "no measurement") {
			t.Errorf("every row is matched, yet %q", w)
		}
	}
}

// A name is a label: workloads of the same parameters meet under the
// baseline's name; a record's own alike workloads stay apart, matched by
// name.
func TestRowsMatchOnParameters(t *testing.T) {
	a := ct.Record(ct.Opts{ID: "1", Label: "a", Workloads: []ct.Workload{
		{Name: "seqread", MBps: []float64{500}}, {Name: "video-read", BS: 4 << 20, MBps: []float64{300}}, {Name: "video-reread", BS: 4 << 20, MBps: []float64{310}},
	}})
	b := ct.Record(ct.Opts{ID: "2", Label: "b", Workloads: []ct.Workload{
		{Name: "video-reread", BS: 4 << 20, MBps: []float64{320}}, {Name: "seq1m-read", MBps: []float64{450}}, {Name: "video-read", BS: 4 << 20, MBps: []float64{290}},
	}})
	c, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rowNamesOf(c); !slices.Equal(got, []string{"seqread", "video-read", "video-reread"}) {
		t.Fatalf("rows %v", got)
	}
	for row, want := range map[string]float64{"seqread": 450, "video-read": 290, "video-reread": 320} {
		if v := cellOf(t, c, row, 1, MetricMBps); v.Median != want {
			t.Errorf("%s in b: %v, want %v", row, v.Median, want)
		}
	}
}

// Unknown parameters (fio's text output does not print size or direct)
// match anything; known ones must agree. Rows that cannot be matched are
// said once per row, naming every group.
func TestUnknownParametersAndUnmatchedRows(t *testing.T) {
	a := ct.Record(ct.Opts{ID: "1", Label: "a", Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{500}}, {Name: "seqwrite", RW: "write", MBps: []float64{400}}}})
	b := ct.Record(ct.Opts{ID: "2", Label: "b", Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{450}}}})
	b.Workloads[0].Params.Unknown = []string{"size", "direct"}
	b.Workloads[0].Params.SizeBytes = 0
	d := ct.Record(ct.Opts{ID: "3", Label: "d", Workloads: []ct.Workload{{Name: "seqread", BS: 4 << 20, MBps: []float64{450}}}})
	c, err := Compare([]*record.Record{a, b, d}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rowNamesOf(c); !slices.Equal(got, []string{"seqread (bs=1M)", "seqwrite", "seqread (bs=4M)"}) {
		t.Fatalf("rows %v", got)
	}
	if !c.Rows[0].Cells[1].Present || c.Rows[0].Cells[2].Present {
		t.Errorf("b's seqread (size unknown) should match a's; d's (bs=4M) should not")
	}
	var unmatched []string
	for _, w := range c.Warnings {
		if strings.Contains(w, "not matched") || strings.Contains(w, "no measurement") {
			unmatched = append(unmatched, w)
		}
	}
	want := []string{
		`seqread: not matched across label, the parameters differ (bs=1M in a, b; bs=4M in d): shown as 2 rows`,
		`seqwrite: no measurement in label "b", "d"`,
	}
	if !slices.Equal(unmatched, want) {
		t.Errorf("unmatched warnings\n%q\nwant\n%q", unmatched, want)
	}
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "size=256M in a, size=unknown in b") {
		t.Errorf("the unknown size should be said: %q", c.Warnings)
	}
}

// TestDistributionIdentity: a skewed workload is not the uniform one of
// the same name (issue 12: identity is the parameters), and a record from
// before distributions existed is the uniform one.
func TestDistributionIdentity(t *testing.T) {
	uniform := workload.Workload{Name: "rnd4k", RW: "randread", BlockBytes: 4096, SizeBytes: 1 << 30, Jobs: 1, IODepth: 32, Direct: true}
	zipf := uniform
	zipf.Distribution = "zipf:1.2"
	zoned := uniform
	zoned.Distribution = "zoned:90/10:10/90"
	if identityOf(uniform, "read").compatible(identityOf(zipf, "read")) {
		t.Error("zipf and uniform reads are the same row")
	}
	if identityOf(zipf, "read").compatible(identityOf(zoned, "read")) {
		t.Error("zipf and zoned reads are the same row")
	}
	if !identityOf(zipf, "read").compatible(identityOf(zipf, "read")) {
		t.Error("the same zipf read is two rows")
	}
	if got := identityOf(uniform, "read")["distribution"]; got != "random" {
		t.Errorf("uniform distribution identity %q", got)
	}
	if !strings.Contains(paramsOf(zipf).String(), "distribution=zipf:1.2") {
		t.Errorf("params %q do not show the distribution", paramsOf(zipf).String())
	}
}
