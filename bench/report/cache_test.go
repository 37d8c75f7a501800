package report

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

// cacheFigures are made up (not measured), shaped like what a bcache in
// front of a throttled HDD reads per working set and phase: IOPS and the
// hit ratio (-1: none). Below the cache it nears the SSD; above it, it is
// little better than the HDD; the skew brings much of it back.
var cacheFigures = map[string]map[string][2]float64{
	"below":      {"hdd": {160, -1}, "ssd": {21000, -1}, "cold": {170, 0.03}, "warm": {4200, 0.93}, "steady": {5100, 0.97}},
	"near":       {"hdd": {155, -1}, "ssd": {20500, -1}, "cold": {165, 0.02}, "warm": {1400, 0.71}, "steady": {1650, 0.78}},
	"above":      {"hdd": {150, -1}, "ssd": {20500, -1}, "cold": {158, 0.01}, "warm": {290, 0.38}, "steady": {310, 0.41}},
	"above-zipf": {"hdd": {165, -1}, "ssd": {22000, -1}, "cold": {240, 0.12}, "warm": {1900, 0.86}, "steady": {2300, 0.9}},
}

var cacheSetNames = []string{"below", "near", "above", "above-zipf"}

// cacheRecords are the measured records of such a run: the disks alone
// and each phase, 4k random reads at queue depth 4, five repetitions (the
// cold phase one: enough for the comparison to judge), the cache's with the
// kernel's hit ratio per run.
func cacheRecords(kind string) []*record.Record {
	wobble := []float64{1, 1.02, 0.98, 1.01, 0.99}
	var out []*record.Record
	add := func(phase, label string, reps int, sets []string) {
		var ws []ct.Workload
		for _, s := range sets {
			w := ct.Workload{Name: "ws-" + s, RW: "randread", BS: 4096}
			for i := range reps {
				w.MBps = append(w.MBps, cacheFigures[s][phase][0]*wobble[i]*4096/1e6)
			}
			ws = append(ws, w)
		}
		n := len(out) + 1
		rec := ct.Record(ct.Opts{ID: ct.ID(n), Label: label, Start: t0.Add(time.Duration(n) * time.Minute), Disk: "ST4000DM004-2CV104", Workloads: ws})
		for wi, s := range sets {
			if h := cacheFigures[s][phase][1]; h >= 0 {
				for ri := range rec.Workloads[wi].Runs {
					rec.Workloads[wi].Runs[ri].Cache = &record.CacheIO{HitRatio: &h}
				}
			}
		}
		out = append(out, rec)
	}
	// The disks alone measure every working set in one record; the cache
	// one record per set and phase, as cachebench runs them.
	add("ssd", "ssd", 5, cacheSetNames)
	for _, s := range cacheSetNames {
		add("cold", kind+" cold", 1, []string{s})
		add("warm", kind+" warm", 5, []string{s})
		add("steady", kind+" steady", 5, []string{s})
	}
	add("hdd", "hdd", 5, cacheSetNames)
	return out
}

// cacheReport is a bcache writeback run over a 4 TB HDD with a 240 MiB
// cache, its phases from cacheFigures and the comparison of its records.
func cacheReport(t *testing.T) *CacheReport {
	t.Helper()
	c, err := compare.Compare(cacheRecords("bcache"), compare.Options{By: compare.ByLabel, Baseline: "hdd"})
	if err != nil {
		t.Fatal(err)
	}
	r := &CacheReport{Kind: "bcache", Mode: "writeback", Origin: "/dev/sdb", CacheDevice: "/dev/nvme0n1p3", CachedVolume: "/dev/bcache0",
		CacheBytes: 240 << 20, Flush: &CacheFlush{DirtyBytes: 31981568, ReleaseMS: 10512},
		Warnings: []string{"bcache's sequential_cutoff is 4 MiB: sequential reads above it bypass the cache"}, Comparison: c}
	for _, rec := range c.Groups {
		for _, x := range rec.Records {
			r.Records = append(r.Records, x.ID)
		}
	}
	sizes := []uint64{120 << 20, 240 << 20, 480 << 20, 480 << 20}
	for si, name := range cacheSetNames {
		ph := func(label, phase string, size uint64) CachePhase {
			f := cacheFigures[name][phase]
			p := CachePhase{Name: label, SizeBytes: size, IOPS: f[0], BWBytesPerS: f[0] * 4096, LatP50NS: 4 / f[0] * 1e9 * 0.9, LatP99NS: 4 / f[0] * 1e9 * 3}
			if f[1] >= 0 {
				h := f[1]
				p.HitRatio = &h
			}
			return p
		}
		hdd, ssd := ph("HDD alone", "hdd", 0), ph("SSD alone", "ssd", 0)
		if si >= 1 {
			ssd.SizeBytes = 256 << 20
		}
		s := CacheSet{Name: name, SizeBytes: sizes[si], HDD: &hdd, SSD: &ssd,
			Phases:   []CachePhase{ph("cold", "cold", 0), ph("warm", "warm", 0), ph("steady", "steady", 0)},
			Sentence: fmt.Sprintf("%s (%d MiB): steady, the cache reads %.0f IOPS, %.1f times the HDD alone.", name, sizes[si]>>20, cacheFigures[name]["steady"][0], cacheFigures[name]["steady"][0]/cacheFigures[name]["hdd"][0])}
		r.Sets = append(r.Sets, s)
	}
	return r
}

func writeCache(t *testing.T, format string, r *CacheReport) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCache(&buf, format, r, Layout{}); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("DISKPREP_CACHE_REPORT_DIR"); dir != "" {
		// For a look in a browser.
		if err := os.WriteFile(dir+"/cache."+format, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// inOrder fails unless each of parts occurs in s after the one before.
func inOrder(t *testing.T, name, s string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		if i < 0 {
			t.Errorf("%s: %q not found after byte %d (or not at all)", name, p, at)
			continue
		}
		at += i + len(p)
	}
}

// TestCachePageIsOneDocument: the HTML is one page (one head, one body),
// its phase table holds every phase's figures, the chart comes before the
// comparison, and the sentences, the flush and the warnings end it.
func TestCachePageIsOneDocument(t *testing.T) {
	r := cacheReport(t)
	page := writeCache(t, "html", r)
	for _, tag := range []string{"<!DOCTYPE html>", "<html", "</html>", "<head>", "</head>", "<body>", "</body>", "<title>diskprep: "} {
		if n := strings.Count(page, tag); n != 1 {
			t.Errorf("%d × %s, want one: two documents in one file?", n, tag)
		}
	}
	if !strings.HasSuffix(page, "</body>\n</html>\n") {
		t.Error("the page does not end with its body")
	}
	// Every phase of every set is a row with its figures.
	row := regexp.MustCompile(`<td(?: class="bound")?>([^<]+)</td>((?:<td class="num"><span class="nw">[^<]*</span></td>){5})</tr>`)
	cells := regexp.MustCompile(`<span class="nw">([^<]*)</span>`)
	var got []string
	for _, m := range row.FindAllStringSubmatch(page, -1) {
		var vs []string
		for _, c := range cells.FindAllStringSubmatch(m[2], -1) {
			vs = append(vs, c[1])
		}
		got = append(got, m[1]+": "+strings.Join(vs, " "))
	}
	if len(got) != 20 {
		t.Fatalf("%d phase rows, want 5 for each of 4 working sets:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, want := range []string{"HDD alone: 160 0.655 22.5 ms 75.0 ms -", "SSD alone: 21000 86.0 171 µs 571 µs -",
		"cold: 170 0.696 21.2 ms 70.6 ms 3.0%", "steady: 5100 20.9 706 µs 2.35 ms 97.0%", "SSD alone (256 MiB): 20500 84.0 176 µs 585 µs -",
		"steady: 310 1.27 11.6 ms 38.7 ms 41.0%"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no row %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
	if n := strings.Count(page, `<td class="bound">`); n != 8 {
		t.Errorf("%d rows of the disks alone, want 8", n)
	}
	lastSVG := strings.LastIndex(page, "</svg>")
	parts := []string{"<h1>What the SSD cache buys: bcache (writeback) over /dev/sdb</h1>", "Cached by /dev/nvme0n1p3, 240 MiB of cache, as the volume /dev/bcache0",
		"<h2>Phases per working set</h2>", `<th scope="col" class="num">IOPS</th>`, "MB/s is 10<sup>6</sup> bytes/s", `data-chart="cache-phases"`, "<h2>The phases side by side, with significance</h2>", "5 columns against hdd: the measured records compared by label. Baseline: hdd.",
		"<h2>What changed</h2>", "<h2>Results</h2>", "better (p=0.008", `5100</span> <span class="nw">(4998–5202)`, "<h2>Over time</h2>", `<h2 id="buys">What the cache buys</h2>`}
	for _, s := range r.Sets {
		lead, rest, _ := strings.Cut(s.Sentence, ": ")
		parts = append(parts, "<li><strong>"+lead+":</strong> "+rest+"</li>")
	}
	parts = append(parts, "Flush: 30.5 MiB dirty at release; the release, flush included, took 10.5 s.", "<h3>Warnings</h3>",
		"bcache&#39;s sequential_cutoff is 4 MiB", "Records: "+r.Records[0])
	inOrder(t, "html", page, parts...)
	if i := strings.Index(page, r.Sets[0].Sentence[:10]); i < lastSVG {
		t.Errorf("the first sentence at byte %d, before the last chart (%d)", i, lastSVG)
	}
	for _, css := range []string{pageCSS, chartCSS, cacheCSS, "@media print", "prefers-color-scheme: dark"} {
		if !strings.Contains(page, css) {
			t.Errorf("the page lacks the styles %.60q", css)
		}
	}
}

// TestCacheChart: one bar per phase on a log axis, the disks alone grey,
// carried through their set as dashed lines, the hit ratio of each
// cache phase beside it, and every label inside the drawing and clear of
// the others; also with long names, unknown hit ratios, an SSD barely
// faster than the HDD and a narrow drawing.
func TestCacheChart(t *testing.T) {
	r := cacheReport(t)
	page := writeCache(t, "html", r)
	blocks := svgBlocks(t, page)
	var chart string
	for i, b := range blocks {
		checkNoClipping(t, fmt.Sprintf("cache page chart %d", i), b)
		if parseSVG(t, b).chart == "cache-phases" {
			chart = b
		}
	}
	if chart == "" {
		t.Fatal("no cache-phases chart")
	}
	info := parseSVG(t, chart)
	// 4 sets × 5 phases of IOPS, 4 × 3 of hit ratio; 4 × 2 bound lines.
	if n := strings.Count(chart, `<rect class="bar `); n != 20+12 {
		t.Errorf("%d bars, want 32", n)
	}
	if n := strings.Count(chart, `<rect class="bar bound"`); n != 8 {
		t.Errorf("%d grey bars of the disks alone, want 8", n)
	}
	if n := strings.Count(chart, `class="bound-line"`); n != 8 {
		t.Errorf("%d bound lines, want 8", n)
	}
	boxes, _, _ := chartTexts(t, chart)
	var texts []string
	for _, b := range boxes {
		texts = append(texts, b.text)
	}
	all := "\n" + strings.Join(texts, "\n") + "\n"
	for _, want := range []string{"below 120 MiB", "above-zipf 480 MiB", "HDD alone", "SSD alone", "cold", "warm", "steady",
		"5100", "21000", "97%", "3%", "100", "1000", "10k", "IOPS, log scale", "hit ratio", "0%", "50%", "100%"} {
		if !strings.Contains(all, "\n"+want+"\n") {
			t.Errorf("chart has no label %q: %q", want, texts)
		}
	}
	// Each phase in its column's colour in the comparison's charts.
	for phase, cls := range map[string]string{"cold": "s2", "warm": "s3", "steady": "s4", "HDD alone": "bound", "SSD alone": "bound"} {
		if !strings.Contains(chart, `<rect class="bar `+cls+`" x="`) || !regexp.MustCompile(`class="bar `+cls+`" [^>]+><title>below 120 MiB, `+phase+`:`).MatchString(chart) {
			t.Errorf("%s is not drawn as %s", phase, cls)
		}
	}
	if !strings.Contains(info.title, "IOPS and hit ratio per phase") {
		t.Errorf("chart title %q", info.title)
	}
	// The log axis: 5100 IOPS lies further right than 310, and 10 times
	// the IOPS is always the same distance.
	x := map[string]float64{}
	for _, m := range regexp.MustCompile(`<rect class="bar [^"]+" x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="15"><title>([^<]+): ([\d.]+) IOPS`).FindAllStringSubmatch(chart, -1) {
		var x0, w float64
		fmt.Sscan(m[1], &x0)
		fmt.Sscan(m[2], &w)
		x[m[4]] = x0 + w
	}
	if len(x) < 10 {
		t.Fatalf("bars read: %v", x)
	}
	d1, d2 := x["1650"]-x["165"], x["1400"]-x["140"]
	if _, ok := x["140"]; !ok {
		d2 = d1
	}
	if x["5100"] <= x["310"] || d1 < 50 || d1-d2 > 1 || d2-d1 > 1 {
		t.Errorf("bar ends %v: not a log axis", x)
	}

	// Harder shapes: long names, no counters, a slow SSD, narrow.
	r.Sets[0].Name = "a working set with a long name that goes on"
	r.Sets[1].Phases[1].HitRatio = nil
	r.Sets[2].SSD.IOPS = r.Sets[2].HDD.IOPS * 1.1
	r.Sets[3].HDD = nil
	for _, w := range []float64{svgWide, svgSmall} {
		s := cacheChart(r, "x", w).svg(false)
		checkNoClipping(t, fmt.Sprintf("hard cache chart at %.0f", w), s)
		if !strings.Contains(s, ">not counted<") {
			t.Error("an unknown hit ratio is not said")
		}
	}
}

// TestCacheTextOrder: the table and the Markdown say the same, in the same
// order as the page: the heading, the phases, the comparison, then what
// the cache buys, the flush, the warnings and the records.
func TestCacheTextOrder(t *testing.T) {
	r := cacheReport(t)
	for _, format := range []string{"table", "markdown"} {
		out := writeCache(t, format, r)
		parts := []string{"bcache (writeback) over /dev/sdb, cached by /dev/nvme0n1p3 (240 MiB of cache)", "HDD alone", "97.0%", "SSD alone (256 MiB)",
			cacheMethod, "5 columns against hdd", "ws-below", "better (p=", "What the cache buys"}
		for _, s := range r.Sets {
			parts = append(parts, s.Sentence)
		}
		parts = append(parts, "Flush: 30.5 MiB dirty at release", "warning: bcache's sequential_cutoff", "Records: "+strings.Join(r.Records, " ")+"\n")
		inOrder(t, format, out, parts...)
		if format == "markdown" {
			for _, want := range []string{"## bcache (writeback)", "| Working set | Phase | IOPS | MB/s | p50 | p99 | Hit ratio |\n|---|---|--:|--:|--:|--:|--:|\n", "| **below 120 MiB** | HDD alone | 160 | 0.655 | 22.5 ms | 75.0 ms | - |",
				"|  | steady | 5100 | 20.9 | 706 µs | 2.35 ms | 97.0% |", "## What the cache buys\n\n- below (120 MiB): "} {
				if !strings.Contains(out, want) {
					t.Errorf("markdown lacks %q:\n%s", want, out)
				}
			}
		} else {
			for _, l := range strings.Split(out, "\n") {
				// The sentences, the method and the records are one line each.
				if textWidth(l) > DefaultWidth && !strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "MB/s is") && !strings.HasPrefix(l, "Records:") {
					t.Errorf("table line of %d columns: %q", textWidth(l), l)
				}
			}
			if !regexp.MustCompile(`\n +steady +5100 +20\.9 +706 µs +2\.35 ms +97\.0%\n`).MatchString(out) {
				t.Errorf("table has no steady row of below:\n%s", out)
			}
		}
	}
	// Nothing measured (no working set, no comparison): still a page.
	for _, format := range CacheFormats {
		var buf bytes.Buffer
		if err := WriteCache(&buf, format, &CacheReport{Kind: "bcache", Mode: "writethrough"}, Layout{}); err != nil || !strings.Contains(buf.String(), "What the cache buys") {
			t.Errorf("%s of an empty report: %v\n%s", format, err, buf.String())
		}
	}
	if err := WriteCache(&bytes.Buffer{}, "csv", r, Layout{}); err == nil {
		t.Error("csv accepted")
	}
}
