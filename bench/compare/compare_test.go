package compare

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
)

var t0 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func TestMannWhitneyExact(t *testing.T) {
	// Complete separation of 5 against 5: U=0, and only 2 of the C(10,5)=252
	// arrangements are that extreme.
	u, p, exact := mannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	if u != 0 || !exact || math.Abs(p-2.0/252) > 1e-12 {
		t.Errorf("separated 5v5: u=%v p=%v exact=%v, want 0, %v, exact", u, p, exact, 2.0/252)
	}
	// Interleaved: as central as it gets, p = 1.
	if _, p, _ := mannWhitney([]float64{1, 4, 5, 8}, []float64{2, 3, 6, 7}); p != 1 {
		t.Errorf("interleaved: p=%v, want 1", p)
	}
	// All values tied: no evidence at all.
	if _, p, _ := mannWhitney([]float64{3, 3, 3}, []float64{3, 3, 3}); p != 1 {
		t.Errorf("all tied: p=%v, want 1", p)
	}
	// Symmetric: swapping the samples changes U but not p.
	_, p1, _ := mannWhitney([]float64{1, 2, 7, 9}, []float64{3, 5, 6, 11, 12})
	_, p2, _ := mannWhitney([]float64{3, 5, 6, 11, 12}, []float64{1, 2, 7, 9})
	if math.Abs(p1-p2) > 1e-12 {
		t.Errorf("p depends on order: %v vs %v", p1, p2)
	}
}

func TestMannWhitneyNormal(t *testing.T) {
	var a, b []float64
	for i := range 10 {
		a = append(a, float64(i))
		b = append(b, float64(100+i))
	}
	// C(20,10) = 184756 arrangements: normal approximation. By hand:
	// sigma = sqrt(10*10*21/12) = 13.2288, z = (50-0.5)/sigma = 3.7418,
	// p = erfc(z/sqrt 2) = 1.827e-4.
	u, p, exact := mannWhitney(a, b)
	if exact || u != 0 || math.Abs(p-1.827e-4) > 0.005e-4 {
		t.Errorf("10v10 separated: u=%v p=%v exact=%v, want 0, 1.827e-4, approx", u, p, exact)
	}
}

func TestMinAttainableP(t *testing.T) {
	cases := []struct {
		n1, n2 int
		judge  bool
	}{{1, 1, false}, {2, 4, false}, {3, 3, false}, {3, 4, false}, {3, 5, true}, {4, 4, true}, {5, 5, true}}
	for _, c := range cases {
		if got := minAttainableP(c.n1, c.n2) <= Alpha; got != c.judge {
			t.Errorf("n=%d,%d: can judge %v, want %v (min p %v)", c.n1, c.n2, got, c.judge, minAttainableP(c.n1, c.n2))
		}
	}
}

func rec(id, label string, mbps ...float64) *record.Record {
	return ct.Record(ct.Opts{ID: id, Label: label, Workloads: []ct.Workload{{Name: "seqread", MBps: mbps}}})
}

func cellOf(t *testing.T, c *Comparison, row string, group int, metric string) Value {
	t.Helper()
	for _, r := range c.Rows {
		if r.Name != row {
			continue
		}
		cell := r.Cells[group]
		if !cell.Present {
			t.Fatalf("%s: group %d missing", row, group)
		}
		for i, m := range c.Metrics {
			if m == metric {
				return cell.Metrics[i]
			}
		}
	}
	t.Fatalf("no row %s metric %s", row, metric)
	return Value{}
}

func TestVerdicts(t *testing.T) {
	cases := []struct {
		name    string
		base    []float64
		other   []float64
		verdict string
		better  bool
	}{
		{"clearly slower", []float64{500, 505, 498, 502, 501}, []float64{400, 404, 398, 401, 399}, VerdictSignificant, false},
		{"clearly faster", []float64{500, 505, 498, 502}, []float64{600, 606, 598, 603}, VerdictSignificant, true},
		{"same within noise", []float64{500, 510, 490, 505, 495}, []float64{502, 493, 508, 497, 500}, VerdictSame, false},
		{"single runs", []float64{500}, []float64{400}, VerdictTooFew, false},
		{"two runs", []float64{500, 501}, []float64{400, 401}, VerdictTooFew, false},
		{"three against three", []float64{500, 501, 502}, []float64{400, 401, 402}, VerdictTooFew, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmp, err := Compare([]*record.Record{rec("a", "before", c.base...), rec("b", "after", c.other...)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if cmp.By != ByLabel || !cmp.AutoBy {
				t.Errorf("by %q auto %v, want label chosen automatically", cmp.By, cmp.AutoBy)
			}
			base := cellOf(t, cmp, "seqread", 0, MetricMBps)
			if base.Verdict != VerdictBaseline || base.ChangePct != nil {
				t.Errorf("baseline cell: %+v", base)
			}
			v := cellOf(t, cmp, "seqread", 1, MetricMBps)
			if v.Verdict != c.verdict {
				t.Errorf("verdict %q (p=%v), want %q", v.Verdict, deref(v.P), c.verdict)
			}
			if v.Verdict == VerdictSignificant && v.Better != c.better {
				t.Errorf("better=%v, want %v", v.Better, c.better)
			}
			want := (hodgesLehmann(sortedValues(pairRatios(c.base, c.other))) - 1) * 100
			if v.ChangePct == nil || math.Abs(*v.ChangePct-want) > 1e-9 {
				t.Errorf("change %v, want %v", deref(v.ChangePct), want)
			}
			if v.Verdict == VerdictTooFew && v.P != nil {
				t.Errorf("a p-value was computed where no verdict is possible")
			}
			if v.Verdict == VerdictSignificant && (v.CILowPct == nil || *v.CILowPct > want || *v.CIHighPct < want) {
				t.Errorf("interval [%v, %v] should hold the change %v", deref(v.CILowPct), deref(v.CIHighPct), want)
			}
			// IOPS follow MB/s at a fixed block size: same verdict.
			if iv := cellOf(t, cmp, "seqread", 1, MetricIOPS); iv.Verdict != c.verdict {
				t.Errorf("IOPS verdict %q, want %q", iv.Verdict, c.verdict)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestLatencyLowerIsBetter(t *testing.T) {
	// Faster throughput at queue depth 1 means lower latency: better both ways.
	cmp, err := Compare([]*record.Record{
		rec("a", "old", 500, 505, 498, 502, 501), rec("b", "new", 600, 606, 598, 603, 601),
	}, Options{Latency: true})
	if err != nil {
		t.Fatal(err)
	}
	v := cellOf(t, cmp, "seqread", 1, MetricLatP99)
	if v.Verdict != VerdictSignificant || !v.Better || *v.ChangePct >= 0 {
		t.Errorf("latency cell %+v: want significant, better, negative change", v)
	}
}

func TestPoolingRecordsOfAGroup(t *testing.T) {
	// Three single-run records with the same label are three repetitions.
	recs := []*record.Record{
		rec("a1", "xfs", 500), rec("b1", "ext4", 400), rec("a2", "xfs", 502),
		rec("b2", "ext4", 401), rec("a3", "xfs", 498), rec("b3", "ext4", 399),
		rec("a4", "xfs", 501), rec("b4", "ext4", 402),
	}
	cmp, err := Compare(recs, Options{By: ByLabel})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Groups) != 2 || cmp.Groups[0].Name != "xfs" || len(cmp.Groups[0].RecordIDs) != 4 {
		t.Fatalf("groups %+v", cmp.Groups)
	}
	v := cellOf(t, cmp, "seqread", 1, MetricMBps)
	if len(v.Values) != 4 || v.Verdict != VerdictSignificant || v.Min != 399 || v.Max != 402 {
		t.Errorf("pooled cell %+v", v)
	}
}

func TestGroupingAndComparability(t *testing.T) {
	w := []ct.Workload{{Name: "seqread", MBps: []float64{500}}}
	xfs := ct.Record(ct.Opts{ID: "1", FS: "xfs", Workloads: w})
	ext4 := ct.Record(ct.Opts{ID: "2", FS: "ext4", Kernel: "6.1.0", Workloads: w})
	cmp, err := Compare([]*record.Record{xfs, ext4}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.By != ByFS {
		t.Errorf("auto by %q, want fs (labels empty, filesystems differ)", cmp.By)
	}
	joined := strings.Join(cmp.Warnings, "\n")
	if !strings.Contains(joined, "Kernel") || strings.Contains(joined, "Filesystem") {
		t.Errorf("warnings should name the kernel and not the grouping fs:\n%s", joined)
	}
	env := map[string]string{}
	for _, f := range cmp.Environment {
		env[f.Key] = f.Value
	}
	if env["cpu"] == "" || env["host"] != "box1" || env["kernel"] != "" || env["fs"] != "" {
		t.Errorf("environment %v: want shared cpu and host, not kernel or fs", env)
	}
	ids := map[string]string{}
	for _, f := range cmp.Groups[1].Identity {
		ids[f.Key] = f.Value
	}
	if ids["kernel"] != "6.1.0" || ids["fs"] != "ext4" {
		t.Errorf("ext4 column identity %v", ids)
	}

	// Grouped by label with different filesystems: now fs is a caveat.
	xfs.Label, ext4.Label = "a", "b"
	cmp, _ = Compare([]*record.Record{xfs, ext4}, Options{By: ByLabel})
	if !strings.Contains(strings.Join(cmp.Warnings, "\n"), "Filesystem") {
		t.Errorf("by label, differing fs not warned: %q", cmp.Warnings)
	}
}

func TestParamDifferencesWarned(t *testing.T) {
	a := ct.Record(ct.Opts{ID: "1", Label: "a", Workloads: []ct.Workload{{Name: "seqread", BS: 1 << 20, MBps: []float64{500}}}})
	b := ct.Record(ct.Opts{ID: "2", Label: "b", Workloads: []ct.Workload{{Name: "seqread", BS: 128 << 10, MBps: []float64{450}}}})
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(cmp.Warnings, "\n")
	if !strings.Contains(joined, "bs=1M in a") || !strings.Contains(joined, "bs=128k in b") {
		t.Errorf("block size difference not named: %q", joined)
	}
	if !strings.Contains(cmp.Rows[0].Params, "bs=1M") {
		t.Errorf("params %q: want the baseline's", cmp.Rows[0].Params)
	}
}

func TestMissingRowsAndBadInput(t *testing.T) {
	a := ct.Record(ct.Opts{ID: "1", Label: "a", Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{500}}}})
	b := ct.Record(ct.Opts{ID: "2", Label: "b", Workloads: []ct.Workload{{Name: "seqwrite", RW: "write", MBps: []float64{400}}}})
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) != 2 || cmp.Rows[0].Cells[1].Present || cmp.Rows[1].Cells[0].Present {
		t.Errorf("rows %+v", cmp.Rows)
	}
	// A row the baseline lacks is judged against the first column that
	// has it (here the only one), and the comparison says so.
	if v := cmp.Rows[1].Cells[1].Metrics[0]; v.Verdict != VerdictBaseline || cmp.Rows[1].Baseline != 1 || cmp.Rows[0].Baseline != 0 {
		t.Errorf("cell without a baseline: verdict %q, row baselines %d, %d", v.Verdict, cmp.Rows[0].Baseline, cmp.Rows[1].Baseline)
	}
	if !slices.Contains(cmp.Warnings, `seqwrite: not measured in the baseline "a": compared with the first column that has them`) {
		t.Errorf("own baseline not said: %q", cmp.Warnings)
	}
	if _, err := Compare(nil, Options{}); !errors.Is(err, ErrNothing) {
		t.Errorf("no records: %v", err)
	}
	if _, err := Compare([]*record.Record{a}, Options{By: "colour"}); !errors.Is(err, ErrUsage) {
		t.Errorf("unknown by: %v", err)
	}
	empty := ct.Record(ct.Opts{ID: "3"})
	if _, err := Compare([]*record.Record{empty}, Options{}); !errors.Is(err, ErrNothing) {
		t.Errorf("record without workloads: %v", err)
	}
}

func TestAutoByFallsBackToRecord(t *testing.T) {
	a, b := rec("r1", "", 500), rec("r2", "", 400)
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.By != ByRecord || len(cmp.Groups) != 2 || cmp.Groups[1].Name != "r2" {
		t.Errorf("by %q groups %+v", cmp.By, cmp.Groups)
	}
}

func TestQuickShape(t *testing.T) {
	a := ct.Quick(ct.ID(1), "xfs", "xfs", 1, 5, t0)
	b := ct.Quick(ct.ID(2), "ext4", "ext4", 0.9, 5, t0.Add(time.Hour))
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) != 4 {
		t.Fatalf("rows %d", len(cmp.Rows))
	}
	for _, r := range cmp.Rows {
		v := r.Cells[1].Metrics[0]
		if v.Verdict != VerdictSignificant || math.Abs(*v.ChangePct+10) > 0.5 {
			t.Errorf("%s: %s %v, want significant -10%%", r.Name, v.Verdict, deref(v.ChangePct))
		}
	}
}

func TestPartialRecordWarned(t *testing.T) {
	a, b := rec("p1", "a", 500), rec("p2", "b", 400)
	b.Partial = true
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cmp.Warnings, "\n"), "record p2 is partial") {
		t.Errorf("warnings %q", cmp.Warnings)
	}
}

func TestBaselineChoice(t *testing.T) {
	recs := []*record.Record{rec("1", "a", 500), rec("2", "b", 400), rec("3", "c", 450)}
	cmp, err := Compare(recs, Options{Baseline: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Groups[0].Name != "c" || cmp.Groups[1].Name != "a" || cmp.Groups[2].Name != "b" {
		t.Errorf("group order %v %v %v", cmp.Groups[0].Name, cmp.Groups[1].Name, cmp.Groups[2].Name)
	}
	if v := cellOf(t, cmp, "seqread", 1, MetricMBps); v.ChangePct == nil || math.Abs(*v.ChangePct-(500.0/450-1)*100) > 1e-9 {
		t.Errorf("change against c: %v", deref(v.ChangePct))
	}
	if _, err := Compare(recs, Options{Baseline: "z"}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "a, b, c") {
		t.Errorf("unknown baseline: %v", err)
	}
}

func TestRecordWarningsCarried(t *testing.T) {
	a, b := rec("1", "a", 500), rec("2", "b", 400)
	a.Warnings = []string{"shared caveat", "only a"}
	b.Warnings = []string{"shared caveat"}
	b.Workloads[0].Warnings = []string{"seqread: runtime 1s is under 3s: figures are noisy"}
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(cmp.Warnings, "\n")
	for _, want := range []string{"all records: shared caveat", "a: only a", "b: seqread: runtime 1s"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if strings.Count(joined, "shared caveat") != 1 {
		t.Errorf("shared warning repeated:\n%s", joined)
	}
}

func TestRecordWarningsMergedAcrossWorkloads(t *testing.T) {
	a := ct.Quick("q1", "a", "xfs", 1, 1, t0)
	b := ct.Quick("q2", "b", "xfs", 1, 1, t0)
	for _, r := range []*record.Record{a, b} {
		for i := range r.Workloads {
			r.Workloads[i].Warnings = []string{r.Workloads[i].Params.Name + ": runtime 2s is under 3s: figures are noisy"}
		}
	}
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "all records: seq1m-read, seq1m-write, rnd4k-read, rnd4k-write: runtime 2s is under 3s: figures are noisy"
	if !slices.Contains(cmp.Warnings, want) {
		t.Errorf("warnings %q, want %q", cmp.Warnings, want)
	}
}

// TestGroupByStack: a RAID1 against a single disk, same host and fs,
// groups by stack on its own, the columns named for the kind of storage and
// each saying what it was; records from before stacks were recorded keep
// grouping by device.
func TestGroupByStack(t *testing.T) {
	w := []ct.Workload{{Name: "seqread", MBps: []float64{900, 910, 905}}}
	raid := ct.Record(ct.Opts{ID: "1", FS: "xfs", Workloads: w})
	raid.Target.Device, raid.Target.Disk, raid.Target.Model = "md0", "sdb", "TOSHIBA DT01ACA300"
	raid.Target.Stack = []hwinfo.Layer{{Kind: "md", Device: "md0", Type: "raid1", On: []string{"sdb", "sdc"}}}
	raid.Target.StackText = "xfs on md0 raid1 of sdb+sdc"
	single := ct.Record(ct.Opts{ID: "2", FS: "xfs", Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{480, 470, 475}}}})
	single.Target.Device, single.Target.Disk, single.Target.Model = "sdd1", "sdd", "ST4000DM004"
	single.Target.StackText = "xfs on sdd1"
	cmp, err := Compare([]*record.Record{single, raid}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.By != ByStack || cmp.Groups[0].Name != "single disk" || cmp.Groups[1].Name != "raid1" {
		t.Fatalf("by %q groups %q, %q; want stack: single disk, raid1", cmp.By, cmp.Groups[0].Name, cmp.Groups[1].Name)
	}
	ids := map[string]string{}
	for _, f := range cmp.Groups[1].Identity {
		ids[f.Key] = f.Value
	}
	if ids["stack"] != "xfs on md0 raid1 of sdb+sdc" || ids["device"] != "md0 on sdb" {
		t.Errorf("raid1 column identity %v", ids)
	}
	if strings.Contains(strings.Join(cmp.Warnings, "\n"), "Disk") {
		t.Errorf("by stack, the disks differ by design: %q", cmp.Warnings)
	}
	if got := GroupKey(raid, ByDevice); got != "md0 raid1 of sdb+sdc" {
		t.Errorf("by device, the array is %q", got)
	}
	// Without stacks (older records) different disks group by device.
	raid.Target.Stack, raid.Target.StackText, single.Target.StackText = nil, "", ""
	cmp, _ = Compare([]*record.Record{single, raid}, Options{})
	if cmp.By != ByDevice {
		t.Errorf("records without stacks: by %q, want device", cmp.By)
	}
	if got := GroupKey(raid, ByStack); got != "(unknown stack)" {
		t.Errorf("unknown stack key %q", got)
	}
}

// TestUnknownIsNoDifference: a record that does not know its kernel (an
// import) is not a record of another kernel: no warning, the kernel is
// shared, said with how many records do not know it.
func TestUnknownIsNoDifference(t *testing.T) {
	a, b := rec("1", "a", 500, 501, 502), rec("2", "b", 400, 401, 402)
	b.Host.Kernel = ""
	cmp, err := Compare([]*record.Record{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(cmp.Warnings, "\n"); strings.Contains(w, "Kernel") {
		t.Errorf("unknown kernel warned as a difference: %s", w)
	}
	i := slices.IndexFunc(cmp.Environment, func(f Field) bool { return f.Key == "kernel" })
	if i < 0 || cmp.Environment[i].Value != "5.14.0-427.el9.x86_64 (unknown in 1 of 2 records)" {
		t.Errorf("environment %+v", cmp.Environment)
	}
	// Two known kernels and an unknown one still differ.
	c := rec("3", "c", 450)
	c.Host.Kernel = "6.1.0-26-amd64"
	cmp, _ = Compare([]*record.Record{a, b, c}, Options{})
	if w := strings.Join(cmp.Warnings, "\n"); !strings.Contains(w, "records differ in Kernel, not only in label (5.14.0-427.el9.x86_64 in a; unknown in b; 6.1.0-26-amd64 in c)") {
		t.Errorf("known kernels that differ not warned: %s", w)
	}
}

// TestAutoGroupingSplits: records without labels, of a raw device and a
// mounted directory on one host and the same device on another host, are
// three columns, not one "(no label)" column of repetitions; an explicit
// --by pools as asked.
func TestAutoGroupingSplits(t *testing.T) {
	raw := rec("1", "", 500, 501)
	raw.Target.Kind, raw.Target.Path, raw.Target.FSType = "device", "/dev/sdb", ""
	dir := rec("2", "", 400, 401)
	other := rec("3", "", 300, 301)
	other.Host.Hostname = "esx-guest"
	cdm := rec("4", "", 410, 411)
	cdm.Set = "cdm"
	cmp, err := Compare([]*record.Record{raw, dir, other, cdm}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range cmp.Groups {
		names = append(names, g.Name)
	}
	want := []string{"raw device", "xfs · box1 · set quick", "xfs · box1 · set cdm", "xfs · esx-guest"}
	if !slices.Equal(names, want) || cmp.By != ByFS || !slices.Equal(cmp.Split, []string{ByHost, SplitSet}) {
		t.Errorf("by %s split %v columns %q, want fs split by host, set: %q", cmp.By, cmp.Split, names, want)
	}
	if cmp, _ := Compare([]*record.Record{raw, dir}, Options{By: ByLabel}); len(cmp.Groups) != 1 || len(cmp.Split) != 0 {
		t.Errorf("--by label split: %+v", cmp.Groups)
	}
	// A baseline may be named by a part of a column's name when no
	// other column has it.
	cmp, err = Compare([]*record.Record{raw, dir, other, cdm}, Options{Baseline: "esx-guest"})
	if err != nil || cmp.Groups[0].Name != "xfs · esx-guest" {
		t.Errorf("baseline by part: %v", err)
	}
	if _, err := Compare([]*record.Record{raw, dir, other, cdm}, Options{Baseline: "xfs"}); !errors.Is(err, ErrUsage) {
		t.Errorf("ambiguous baseline accepted: %v", err)
	}
}

// The host's CPU per I/O, asked for: a metric of its own after MB/s and
// IOPS (with latency or without), judged lower-is-better; a record
// without it is "not recorded", never a zero that looks measured.
func TestHostCPUPerIO(t *testing.T) {
	withCPU := func(r *record.Record, us ...float64) *record.Record {
		for i := range r.Workloads[0].Runs {
			r.Workloads[0].Runs[i].HostCPUNSPerIO = us[i] * 1e3
		}
		return r
	}
	plain := withCPU(rec("a", "xfs", 500, 505, 498, 502, 501), 20, 21, 19, 20, 22)
	luks := withCPU(rec("b", "xfs+luks2", 480, 470, 490, 485, 475), 60, 65, 58, 61, 63)
	for _, lat := range []bool{false, true} {
		cmp, err := Compare([]*record.Record{plain, luks}, Options{CPU: true, Latency: lat})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 3, true: 4}[lat]; len(cmp.Metrics) != want || cmp.Metrics[want-1] != MetricHostCPU {
			t.Fatalf("latency %v: metrics %v, want the host's CPU last of %d", lat, cmp.Metrics, want)
		}
		base, v := cellOf(t, cmp, "seqread", 0, MetricHostCPU), cellOf(t, cmp, "seqread", 1, MetricHostCPU)
		if base.Median != 20 || v.Median != 61 || v.Verdict != VerdictSignificant || v.Better || *v.ChangePct < 150 {
			t.Errorf("latency %v: host CPU %+v against %+v: want 61 µs against 20, significant, worse, about +200%%", lat, v, base)
		}
		if m := cellOf(t, cmp, "seqread", 1, MetricMBps); m.Metric != MetricMBps || m.Median != 480 {
			t.Errorf("latency %v: MB/s cell %+v", lat, m)
		}
	}
	old := rec("c", "old", 500, 505, 498, 502, 501)
	cmp, err := Compare([]*record.Record{old, luks}, Options{CPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := cellOf(t, cmp, "seqread", 0, MetricHostCPU); len(v.Values) != 0 || math.IsInf(v.Min, 0) {
		t.Errorf("a record without the figure: %+v, want no values and finite bounds", v)
	}
	if _, err := json.Marshal(cmp); err != nil {
		t.Errorf("the comparison does not encode: %v", err)
	}
}

// A column on dm-crypt is said with its cipher, and how near its fastest
// read came to the cipher's decryption in memory (1000 MiB/s is 1048.6
// MB/s: 480 MB/s is 46%); one without the figure says why.
func TestCipherNote(t *testing.T) {
	aes := true
	luks := rec("b", "xfs+luks2", 480, 470, 490, 485, 475)
	luks.Target.Encryption = &record.Encryption{Mapper: "sdb1_crypt", LUKSVersion: 2, Cipher: "aes-xts-plain64", KeyBits: 512, SectorBytes: 4096,
		AES: &aes, CipherEncryptMiBps: 900, CipherDecryptMiBps: 1000}
	plain := rec("a", "xfs", 500, 505, 498, 502, 501)
	plain.Target.StackText = "xfs on sdb1"
	cmp, err := Compare([]*record.Record{plain, luks}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "xfs+luks2: LUKS2 aes-xts-plain64, 512-bit key, 4096-byte sectors, AES-NI: the disk through dm-crypt reached 46% of the cipher's in-memory speed reading (seqread 480 MB/s, decrypt 1049 MB/s)"
	if !slices.Contains(cmp.Notes, want) {
		t.Errorf("notes %q\nwant %q", cmp.Notes, want)
	}
	// The layer is the encrypted column's identity, results show's too.
	if !slices.ContainsFunc(cmp.Groups[1].Identity, func(f Field) bool {
		return f.Name == "Encryption" && f.Value == "LUKS2 aes-xts-plain64, 512-bit key, 4096-byte sectors, AES-NI"
	}) {
		t.Errorf("xfs+luks2's identity %+v: no encryption", cmp.Groups[1].Identity)
	}
	if !slices.ContainsFunc(cmp.Groups[0].Identity, func(f Field) bool { return f.Name == "Encryption" && f.Value == "none" }) {
		t.Errorf("xfs's identity %+v: want encryption none", cmp.Groups[0].Identity)
	}
	if slices.ContainsFunc(cmp.Notes, func(n string) bool { return strings.Contains(n, "over 100%") }) {
		t.Errorf("46%% said to be over 100%%: %q", cmp.Notes)
	}
	// The disk faster than the cipher's one run in memory: said, not
	// hidden, with why that is possible.
	luks.Target.Encryption.CipherDecryptMiBps = 300
	if cmp, err = Compare([]*record.Record{rec("a", "xfs", 500, 505, 498, 502, 501), luks}, Options{}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cmp.Notes, func(n string) bool {
		return strings.Contains(n, "reached 153% of the cipher's in-memory speed reading") && strings.HasSuffix(n, "(over 100%: the cipher was not what set the pace; cryptsetup benchmark's one run in memory read lower)")
	}) {
		t.Errorf("notes %q: want 153%% said with why", cmp.Notes)
	}
	luks.Target.Encryption.CipherDecryptMiBps, luks.Target.Encryption.CipherNote = 0, "cryptsetup benchmark: Cipher aes-xts-plain64 (with 512 bits key) is not available."
	cmp, err = Compare([]*record.Record{rec("a", "xfs", 500, 505, 498, 502, 501), luks}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cmp.Notes, func(n string) bool {
		return strings.HasSuffix(n, "AES-NI (cryptsetup benchmark: Cipher aes-xts-plain64 (with 512 bits key) is not available.)")
	}) {
		t.Errorf("notes %q: want the reason there is no figure", cmp.Notes)
	}
}
