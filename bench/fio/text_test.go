package fio

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
)

func importFile(t *testing.T, path string, opts ImportOptions) (*record.Record, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Source == "" {
		opts.Source = filepath.Base(path)
	}
	rec, warns, err := Import(data, opts)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rec, warns
}

func names(rec *record.Record) []string {
	var out []string
	for _, r := range record.Rows(rec) {
		out = append(out, r.Name)
	}
	return out
}

// The seed's three commands (scaled down) as fio 3.33 printed them, in
// each form: the same rows, named from what each did, whatever -name was.
func TestImportSeedCapturesEveryForm(t *testing.T) {
	want := map[string][]string{"seqread": {"seqread"}, "seqwrite": {"seqwrite"}, "randrw": {"randread", "randwrite"}}
	for cmd, rows := range want {
		for _, form := range []string{"txt", "terse", "json"} {
			file := fmt.Sprintf("fio-3.33-seed-%s.%s", cmd, form)
			rec, _ := importFile(t, file, ImportOptions{})
			if got := names(rec); !slices.Equal(got, rows) {
				t.Errorf("%s: rows %v, want %v", file, got, rows)
			}
			wr := rec.Workloads[0]
			wantRW := map[string]string{"seqread": "read", "seqwrite": "write", "randrw": "randrw"}[cmd]
			if wr.Params.RW != wantRW {
				t.Errorf("%s: rw %q, want %q", file, wr.Params.RW, wantRW)
			}
			if form != "terse" && (wr.Params.BlockBytes != 4<<20 || wr.Params.Jobs != 4 || wr.Params.IODepth != 1) {
				t.Errorf("%s: bs %d jobs %d iodepth %d, want 4 MiB, 4, 1 (the command's)", file, wr.Params.BlockBytes, wr.Params.Jobs, wr.Params.IODepth)
			}
		}
	}
}

// Every figure fio printed in the normal output arrives converted to
// bytes and nanoseconds: fio-3.33-seed-seqread.txt says
//
//	read: IOPS=412, BW=1649MiB/s (1729MB/s)(1024MiB/621msec)
//	clat (usec): min=2441, max=13767, avg=9563.77 ... 50.00th=[ 9503] 99.00th=[12518] 99.90th=[13829]
//	issued rwts: total=256,0,0,0
func TestImportNormalFio3Figures(t *testing.T) {
	rec, warns := importFile(t, "fio-3.33-seed-seqread.txt", ImportOptions{})
	wr := rec.Workloads[0]
	r := wr.Runs[0].Read
	if r == nil || wr.Runs[0].Write != nil {
		t.Fatalf("directions %+v", wr.Runs[0])
	}
	if r.IOPS != 412 || r.BWBytesPerS != 1649*1048576 || r.IOBytes != 1024*1048576 || r.RuntimeMS != 621 || r.IOs != 256 {
		t.Errorf("read %+v", r)
	}
	if r.LatNS.P99 != 12518e3 || r.LatNS.P999 != 13829e3 || r.LatNS.P50 != 9503e3 || r.LatNS.Min != 2441e3 || r.LatNS.Max != 13767e3 {
		t.Errorf("latency %+v", r.LatNS)
	}
	if math.Abs(r.LatNS.Mean-9563.77e3) > 1e-3 {
		t.Errorf("mean %v", r.LatNS.Mean)
	}
	if wr.Params.Engine != "psync" || wr.Params.Name != "seqread" {
		t.Errorf("params %+v", wr.Params)
	}
	for _, k := range []string{"size", "direct", "runtime"} {
		if !slices.Contains(wr.Params.Unknown, k) {
			t.Errorf("%s should be unknown (the normal output does not print it): %v", k, wr.Params.Unknown)
		}
	}
	if slices.Contains(wr.Params.Unknown, "bs") || slices.Contains(wr.Params.Unknown, "jobs") {
		t.Errorf("bs and jobs are printed, not unknown: %v", wr.Params.Unknown)
	}
	if rec.Start.Year() != 2026 || !strings.Contains(rec.Warnings[0], "fio normal output") {
		t.Errorf("start %v warnings %q", rec.Start, rec.Warnings)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}
}

// The terse line of fio-3.33-seed-randrw.terse: read kb 458752, bw 928647
// KiB/s, 226 IOPS, 494 ms, clat 99% 11468 µs; write kb 589824, 1193975
// KiB/s, 291 IOPS, clat 99% 24510 µs; KiB converted, and said.
func TestImportTerseFigures(t *testing.T) {
	rec, warns := importFile(t, "fio-3.33-seed-randrw.terse", ImportOptions{})
	run := rec.Workloads[0].Runs[0]
	if run.Read.IOBytes != 458752*1024 || run.Read.BWBytesPerS != 928647*1024 || run.Read.IOPS != 226 || run.Read.RuntimeMS != 494 || run.Read.LatNS.P99 != 11468e3 {
		t.Errorf("read %+v", run.Read)
	}
	if run.Write.IOBytes != 589824*1024 || run.Write.BWBytesPerS != 1193975*1024 || run.Write.IOPS != 291 || run.Write.LatNS.P99 != 24510e3 || run.Write.LatNS.P999 != 25559e3 {
		t.Errorf("write %+v", run.Write)
	}
	if math.Abs(run.CPUSysS-0.468506/100*0.494) > 1e-9 {
		t.Errorf("cpu sys %v", run.CPUSysS)
	}
	joined := strings.Join(rec.Warnings, "\n")
	if !strings.Contains(joined, "base 2 (KiB)") {
		t.Errorf("the record does not say the KiB were converted: %q", rec.Warnings)
	}
	if !strings.Contains(strings.Join(warns, "\n"), `rw=randrw taken from the file name "fio-3.33-seed-randrw.terse"`) {
		t.Errorf("warnings %q", warns)
	}
}

func TestImportSeveralJobs(t *testing.T) {
	// Two jobs in two groups: options from each job's header.
	rec, _ := importFile(t, "fio-3.33-two-jobs.txt", ImportOptions{})
	if got := names(rec); !slices.Equal(got, []string{"seqread-vmdk", "randwrite-oltp"}) {
		t.Errorf("rows %v", got)
	}
	oltp := rec.Workloads[1].Params
	if oltp.BlockBytes != 64<<10 || oltp.IODepth != 4 || oltp.Engine != "libaio" || oltp.RW != "randwrite" {
		t.Errorf("oltp params %+v", oltp)
	}
	// Terse says nothing of rw: the job name "vmdk-seqread" does, "oltp"
	// and the file name do not.
	rec, warns := importFile(t, "fio-3.33-two-jobs.terse", ImportOptions{})
	if got := names(rec); !slices.Equal(got, []string{"seqread-vmdk", "write-oltp"}) {
		t.Errorf("terse rows %v", got)
	}
	if p := rec.Workloads[1].Params; p.RW != "" || !slices.Contains(p.Unknown, "rw") {
		t.Errorf("oltp's rw should be unknown: %+v", p)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "job oltp: fio terse output does not say whether the I/O was sequential or random") {
		t.Errorf("warnings %q", warns)
	}

	// numjobs=2 without group_reporting: two blocks (lines) of one name
	// are one workload of 2 jobs, rates summed.
	for _, file := range []string{"fio-3.33-randrw-numjobs2.txt", "fio-3.33-randrw-numjobs2.terse"} {
		rec, warns := importFile(t, file, ImportOptions{})
		if len(rec.Workloads) != 1 || rec.Workloads[0].Params.Jobs != 2 {
			t.Fatalf("%s: %d workloads, jobs %d", file, len(rec.Workloads), rec.Workloads[0].Params.Jobs)
		}
		if !strings.Contains(strings.Join(warns, "\n"), "2 jobs reported separately") {
			t.Errorf("%s: warnings %q", file, warns)
		}
	}
	rec, _ = importFile(t, "fio-3.33-randrw-numjobs2.txt", ImportOptions{})
	// read: IOPS=114 and IOPS=109 in the two blocks.
	if got := rec.Workloads[0].Runs[0].Read.IOPS; got != 114+109 {
		t.Errorf("read IOPS %v, want the sum of the blocks", got)
	}
}

// fio 2.x's layout, hand-written from its stat.c and public outputs: KB/s
// and MB/s are base 2, "iops=1.2K" and "max=1973.2K" carry num2str's
// powers of 1000.
func TestImportNormalFio2(t *testing.T) {
	rec, warns := importFile(t, "fio-2.x-normal-handwritten.txt", ImportOptions{})
	if len(rec.Workloads) != 1 || rec.Workloads[0].Params.Name != "randwrite" || rec.Workloads[0].Params.BlockBytes != 4<<20 {
		t.Fatalf("workloads %+v", rec.Workloads)
	}
	w := rec.Workloads[0].Runs[0].Write
	if want := 518041*1024 + 1011.3*1048576; math.Abs(w.BWBytesPerS-want) > 1e-3 {
		t.Errorf("bw %v, want %v (KB and MB of 1024)", w.BWBytesPerS, want)
	}
	if w.IOPS != 126+1200 || w.IOBytes != 2*30402*1048576 || w.IOs != 2*7600 || w.RuntimeMS != 60095 {
		t.Errorf("write %+v", w)
	}
	if w.LatNS.Max != 1973.2e6 {
		t.Errorf("max %v, want 1973.2K µs", w.LatNS.Max)
	}
	if !strings.Contains(strings.Join(rec.Warnings, "\n"), "fio-2.14 printed KB, MB and KB/s, MB/s in base 2") {
		t.Errorf("record warnings %q", rec.Warnings)
	}
	_ = warns
}

func TestImportBadOutput(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	seq := read("fio-3.33-seed-seqread.txt")
	terse := read("fio-3.33-seed-seqread.terse")
	js := read("fio-3.33-seed-seqread.json")
	cases := map[string]struct{ in, msg string }{
		"err=27 normal":        {read("fio-3.33-err27-efbig.txt"), "job big failed: fio reported err=27"},
		"err=27 terse":         {read("fio-3.33-err27-efbig.terse"), "job big failed: fio reported err=27"},
		"err=27 json":          {read("fio-3.33-err27-efbig.json"), "job big failed: fio reported err=27"},
		"err=1 before the run": {read("fio-3.33-err1-unlink.txt"), "a fio job failed: fio: pid=0, err=1/"},
		"normal cut off":       {seq[:strings.Index(seq, "cpu ")], `truncated fio output: job file1 has no "Run status group"`},
		"normal header only":   {seq[:strings.Index(seq, "  read:")] + "\nRun status group 0 (all jobs):\n", "job file1: a result header without read or write figures"},
		"json cut off":         {js[:len(js)/2], "truncated or corrupt fio JSON"},
		"terse field missing":  {strings.Replace(terse, ";0;0;", ";0;", 1), "terse version 3 line with 129 fields, want 121 plus 9 per disk"},
		"terse version 2":      {"2" + terse[1:], "terse version 2 is not supported"},
	}
	for name, c := range cases {
		_, _, err := Import([]byte(c.in), ImportOptions{})
		if !errors.Is(err, ErrBadOutput) || !strings.Contains(err.Error(), c.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want ErrBadOutput saying %q on one line", name, err, c.msg)
		}
	}
}

// The Done-when figure of issue 12: the seed write-up's HDD table (direct
// mount, ESXi virtual disk, raw mapping), as hand-made fio-2.17 outputs
// of its three commands, compares in every form as four rows with the
// write-up's deltas against direct mount.
func TestSeedHDDTableCompares(t *testing.T) {
	// By hand from the write-up's table (MB/s and IOPS per setup):
	//   seqread   380 11 | 386 11 | 422 12      seqwrite  231 6 | 206 6 | 275 8
	//   randread 96.4  2 | 77.9 2 | 112  3      randwrite 69.8 2 | 62.3 1 | 75.5 2
	// e.g. seqwrite 206/231-1 = -10.8%, 275/231-1 = +19.0%.
	wantMBps := map[string][2]string{
		"seqread": {"+1.6", "+11.1"}, "seqwrite": {"-10.8", "+19.0"},
		"randread": {"-19.2", "+16.2"}, "randwrite": {"-10.7", "+8.2"},
	}
	wantIOPS := map[string][2]string{
		"seqread": {"+0.0", "+9.1"}, "seqwrite": {"+0.0", "+33.3"},
		"randread": {"+0.0", "+50.0"}, "randwrite": {"-50.0", "+0.0"},
	}
	for _, form := range []string{"txt", "terse", "json"} {
		t.Run(form, func(t *testing.T) {
			var recs []*record.Record
			for _, setup := range []string{"direct", "vmdk", "raw"} {
				for _, cmd := range []string{"seqread", "seqwrite", "randrw"} {
					rec, _ := importFile(t, filepath.Join("seed-hdd-handwritten", setup, cmd+"."+form), ImportOptions{Label: setup, Source: cmd + "." + form})
					recs = append(recs, rec)
				}
			}
			c, err := compare.Compare(recs, compare.Options{By: compare.ByLabel})
			if err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, r := range c.Rows {
				rows = append(rows, r.Name)
			}
			if !slices.Equal(rows, []string{"seqread", "seqwrite", "randread", "randwrite"}) {
				t.Fatalf("rows %v, want the write-up's four", rows)
			}
			for _, r := range c.Rows {
				for gi := 1; gi <= 2; gi++ {
					cell := r.Cells[gi]
					if !cell.Present || cell.N != 1 {
						t.Errorf("%s in %s: %+v", r.Name, c.Groups[gi].Name, cell)
						continue
					}
					for mi, want := range []string{wantMBps[r.Name][gi-1], wantIOPS[r.Name][gi-1]} {
						v := cell.Metrics[mi]
						if v.ChangePct == nil || fmt.Sprintf("%+.1f", *v.ChangePct) != want {
							t.Errorf("%s %s in %s: change %v, want %s%%", r.Name, v.Metric, c.Groups[gi].Name, deref(v.ChangePct), want)
						}
					}
				}
			}
			// The direct mount's seqread is 380 MiB/s: 398.5 MB/s.
			if got := c.Rows[0].Cells[0].Metrics[0].Median; math.Abs(got-380*1.048576) > 0.001 {
				t.Errorf("seqread MB/s %v, want 380 MiB/s = 398.458 MB/s", got)
			}
			for _, w := range c.Warnings {
				if strings.Contains(w, "no measurement") || strings.Contains(w, "not matched") {
					t.Errorf("warning %q", w)
				}
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

// The real captures compare too: the seed's commands printed by fio 3.33
// in its three forms (three runs each), normal output as the baseline.
// By hand from the printed figures:
//
//	seqread   normal BW=1649MiB/s; terse 1702233 KiB/s (+0.8%); JSON bw_bytes 1586029282 (-8.3%)
//	seqwrite  normal BW=2327MiB/s; terse 2576353 KiB/s (+8.1%); JSON 2097152000 (-14.1%)
//	randread  normal BW=660MiB/s;  terse 928647 KiB/s (+37.4%); JSON 755244450 (+9.1%)
//	randwrite normal BW=848MiB/s;  terse 1193975 KiB/s (+37.5%); JSON 971028578 (+9.2%)
func TestSeedCapturesCompareAcrossForms(t *testing.T) {
	var recs []*record.Record
	for _, form := range []string{"txt", "terse", "json"} {
		for _, cmd := range []string{"seqread", "seqwrite", "randrw"} {
			rec, _ := importFile(t, fmt.Sprintf("fio-3.33-seed-%s.%s", cmd, form), ImportOptions{Label: form})
			recs = append(recs, rec)
		}
	}
	c, err := compare.Compare(recs, compare.Options{By: compare.ByLabel})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"seqread +0.8% -8.3%", "seqwrite +8.1% -14.1%", "randread +37.4% +9.1%", "randwrite +37.5% +9.2%"}
	var got []string
	for _, r := range c.Rows {
		line := r.Name
		for _, cell := range r.Cells[1:] {
			line += fmt.Sprintf(" %+.1f%%", deref(cell.Metrics[0].ChangePct))
		}
		got = append(got, line)
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Imported text round-trips: import, export as fio JSON, import again,
// and the figures are the same.
func TestImportedTextRoundTrips(t *testing.T) {
	for _, file := range []string{"fio-3.33-seed-randrw.txt", "fio-3.33-seed-randrw.terse", "fio-3.33-seed-randrw.jsonplus.json", "seed-hdd-handwritten/vmdk/randrw.txt"} {
		rec, _ := importFile(t, file, ImportOptions{})
		var buf strings.Builder
		if err := Export(&buf, rec); err != nil {
			t.Fatal(err)
		}
		back, _, err := Import([]byte(buf.String()), ImportOptions{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if got, want := names(back), names(rec); !slices.Equal(got, want) || !slices.Equal(want, []string{"randread", "randwrite"}) {
			t.Errorf("%s: rows %v after the round trip, %v before", file, got, want)
		}
		if a, b := rec.Workloads[0].Params, back.Workloads[0].Params; !slices.Equal(a.Unknown, b.Unknown) || a.BlockBytes != b.BlockBytes || a.Jobs != b.Jobs || a.RW != b.RW {
			t.Errorf("%s: params %+v, back %+v", file, a, b)
		}
		for _, dir := range []string{"read", "write"} {
			a, b := rec.Workloads[0].Runs[0].Dir(dir), back.Workloads[0].Runs[0].Dir(dir)
			if math.Abs(a.BWBytesPerS-b.BWBytesPerS) > 1 || math.Abs(a.IOPS-b.IOPS) > 1e-6 || a.IOBytes != b.IOBytes || math.Abs(a.LatNS.P99-b.LatNS.P99) > 1 {
				t.Errorf("%s %s: %+v, back %+v", file, dir, a, b)
			}
		}
	}
}
