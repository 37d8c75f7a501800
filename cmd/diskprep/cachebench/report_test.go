package cachebench

import (
	"bytes"
	"context"
	"encoding/xml"
	"html"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// shapedFigures are made up, shaped like a cache over a throttled HDD (the
// same as bench/report's cacheFigures), per working set and phase: IOPS
// and the hit ratio (-1: none). Not a measurement.
var shapedFigures = map[string]map[string][2]float64{
	"ws-below":      {"hdd": {160, -1}, "ssd": {21000, -1}, "cold": {170, 0.03}, "warm": {4200, 0.93}, "steady": {5100, 0.97}},
	"ws-near":       {"hdd": {155, -1}, "ssd": {20500, -1}, "cold": {165, 0.02}, "warm": {1400, 0.71}, "steady": {1650, 0.78}},
	"ws-above":      {"hdd": {150, -1}, "ssd": {20500, -1}, "cold": {158, 0.01}, "warm": {290, 0.38}, "steady": {310, 0.41}},
	"ws-above-zipf": {"hdd": {165, -1}, "ssd": {22000, -1}, "cold": {240, 0.12}, "warm": {1900, 0.86}, "steady": {2300, 0.9}},
}

// realRun is a whole cachebench run on the fake machine whose benchmarks
// give records as bench writes them (every repetition, its latency and
// per-second samples), with shapedFigures and a wobble between repetitions.
func realRun(t *testing.T) *Result {
	t.Helper()
	f := &fake{volume: 3 << 30}
	d := f.deps()
	n := 0
	d.Bench = func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error) {
		phase := strings.TrimPrefix(req.Label, "lvmcache ")
		var ws []ct.Workload
		for _, spec := range req.Specs {
			w, _, err := workload.ParseSpec(spec, workload.DefaultWorkload())
			if err != nil {
				return nil, err
			}
			cw := ct.Workload{Name: w.Name, RW: w.RW, BS: w.BlockBytes}
			fig := shapedFigures[w.Name][phase]
			for i := range max(req.Repeat, 1) {
				cw.MBps = append(cw.MBps, max(fig[0], 100)*float64(w.BlockBytes)/1e6*(1+0.02*float64(i%3-1)))
			}
			ws = append(ws, cw)
		}
		n++
		rec := ct.Record(ct.Opts{ID: ct.ID(n), Label: req.Label, Start: time.Date(2026, 11, 30, 6, n, 0, 0, time.UTC), Workloads: ws})
		for wi := range rec.Workloads {
			if h := shapedFigures[rec.Workloads[wi].Params.Name][phase][1]; h >= 0 {
				for ri := range rec.Workloads[wi].Runs {
					rec.Workloads[wi].Runs[ri].Cache = &record.CacheIO{HitRatio: &h}
				}
			}
		}
		return rec, nil
	}
	o := opts()
	o.Repeat = 5
	res, err := Run(context.Background(), o, d)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func render(t *testing.T, res *Result, format string) string {
	t.Helper()
	c, err := compare.Compare(res.Measured(), compare.Options{By: compare.ByLabel, Baseline: "hdd"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.Write(&buf, format, c); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("DISKPREP_CACHE_REPORT_DIR"); dir != "" {
		if err := os.WriteFile(dir+"/run."+format, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// TestReportOfARun: a run's HTML report is one page holding its phase
// table with the figures, its chart (well-formed SVG), the comparison with
// its verdicts, and, after every chart, its sentences; the table and the
// Markdown say the same in the same order; the JSON is the result as it
// was (other scripts read diskprep/cachebench/v1).
func TestReportOfARun(t *testing.T) {
	res := realRun(t)
	page := render(t, res, "html")
	for _, tag := range []string{"<!DOCTYPE html>", "<html", "</html>", "<body>", "</body>", "<title>diskprep: "} {
		if n := strings.Count(page, tag); n != 1 {
			t.Errorf("%d × %s in the page, want one", n, tag)
		}
	}
	for _, want := range []string{
		"What the SSD cache buys: lvmcache (writethrough) over /dev/sdb", "Cached by /dev/nvme0n1, 240 MiB of cache, as the volume /dev/cachebench/cachebench",
		`<th scope="rowgroup" rowspan="5">below<br><span class="nw">120 MiB</span></th><td class="bound">HDD alone</td><td class="num"><span class="nw">160</span></td>`,
		`<td class="bound">SSD alone (256 MiB)</td><td class="num"><span class="nw">20500</span></td>`,
		`<td>steady</td><td class="num"><span class="nw">5100</span></td><td class="num"><span class="nw">20.9</span></td>`,
		`<span class="nw">97.0%</span>`, `<span class="nw">1.0%</span>`,
		"lvmcache steady", "better (p=0.008",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	lastChart := strings.LastIndex(page, "</svg>")
	at := lastChart
	for _, ws := range res.WorkingSets {
		lead, _, _ := strings.Cut(ws.Sentence, ": ")
		i := strings.Index(page[at:], "<li><strong>"+html.EscapeString(lead)+":</strong>")
		if i < 0 {
			t.Errorf("sentence of %s not after the charts and the one before", ws.Name)
			continue
		}
		at += i
	}
	if !strings.Contains(res.WorkingSets[0].Sentence, "5100 IOPS, 31.9 times the HDD alone (160), 24% of the SSD alone (21000), at a 97% hit ratio (cold 3%)") {
		t.Errorf("sentence %q", res.WorkingSets[0].Sentence)
	}
	charts := 0
	for rest := page; ; charts++ {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest, "</svg>")
		dec := xml.NewDecoder(strings.NewReader(rest[i : j+len("</svg>")]))
		dec.Strict = true
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chart %d is not well-formed XML: %v", charts, err)
			}
		}
		rest = rest[j+len("</svg>"):]
	}
	// The cache's chart, then compare's: what changed, 2 bar panels, and
	// per working set its latency and its time series.
	if charts < 1+1+2+4+4 || !strings.Contains(page, `data-chart="cache-phases"`) {
		t.Errorf("%d charts", charts)
	}

	for _, format := range []string{"table", "markdown"} {
		out := render(t, res, format)
		parts := []string{"lvmcache (writethrough) over /dev/sdb, cached by /dev/nvme0n1 (240 MiB of cache)", "below 120 MiB", "5100", "97.0%",
			"hit ratios are the kernel's counters", "5 columns against hdd", "ws-below", "better (p=0.008", "What the cache buys"}
		for _, ws := range res.WorkingSets {
			parts = append(parts, ws.Sentence)
		}
		parts = append(parts, "Records: "+res.Records[0])
		at := 0
		for _, p := range parts {
			i := strings.Index(out[at:], p)
			if i < 0 {
				t.Errorf("%s: %q not where it belongs (after byte %d)\n%s", format, p, at, out)
				break
			}
			at += i + len(p)
		}
	}
	if err := res.Write(io.Discard, "csv", nil); err == nil {
		t.Error("csv accepted")
	}
}

// TestJSONUnchanged: the JSON fields other scripts read.
func TestJSONUnchanged(t *testing.T) {
	res := realRun(t)
	var buf bytes.Buffer
	if err := res.Write(&buf, "json", nil); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`"schema": "diskprep/cachebench/v1"`, `"kind": "lvmcache"`, `"working_sets": \[`, `"name": "below"`,
		`"hdd": \{\s+"record": "[^"]+",\s+"iops": 160,`, `"steady": \{\s+"record": "[^"]+",\s+"iops": 5100,[^}]+"hit_ratio": 0.97`,
		`"ssd_size_bytes": 268435456`, `"sentence": "below \(120 MiB`, `"records": \[`} {
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("JSON lacks %s:\n%.2000s", re, buf.String())
		}
	}
	if strings.Contains(buf.String(), "<") || strings.Contains(buf.String(), "What the cache buys") {
		t.Error("the JSON holds a report")
	}
}

// TestRedacted: under --redact the report's heading and warnings hide a
// disk's serial in a by-id path, as the comparison's records do.
func TestRedacted(t *testing.T) {
	res := realRun(t)
	res.Origin = "/dev/disk/by-id/ata-ST4000DM004-2CV104_ZFN0ABCD"
	res.Warnings = []string{"the kernel's counters of " + res.Origin + " are not readable: no hit ratios"}
	red := res.Redacted()
	for _, format := range []string{"table", "html"} {
		var buf bytes.Buffer
		if err := red.Write(&buf, format, nil); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "ZFN0ABCD") || !strings.Contains(buf.String(), "/dev/disk/by-id/ata-") {
			t.Errorf("%s under --redact:\n%.600s", format, buf.String())
		}
	}
	if res.Origin != "/dev/disk/by-id/ata-ST4000DM004-2CV104_ZFN0ABCD" || len(red.Records) != len(res.Records) {
		t.Error("Redacted changed the result itself")
	}
}
