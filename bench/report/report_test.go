package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/golden"
)

var t0 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

// fixture is three filesystems on one disk: xfs and ext4 with five
// repetitions each (ext4 clearly slower on three rows, the same on one),
// btrfs with a single run that cannot be judged, and a kernel that differs.
func fixture() []*record.Record {
	w := func(name, rw string, bs uint64, first bool, v ...float64) ct.Workload {
		return ct.Workload{Name: name, RW: rw, BS: bs, MBps: v, SlowFirstSecond: first}
	}
	xfs := ct.Record(ct.Opts{ID: ct.ID(1), Label: "xfs", FS: "xfs", Start: t0, Workloads: []ct.Workload{
		w("seq1m-read", "read", 1<<20, false, 520, 525, 515, 522, 518),
		w("seq1m-write", "write", 1<<20, true, 480, 484, 476, 482, 478),
		w("rnd4k-read", "randread", 4<<10, false, 40, 40.4, 39.6, 40.2, 39.8),
		w("mixed", "randrw", 4<<10, false, 30, 30.3, 29.7, 30.1, 29.9),
	}})
	ext4 := ct.Record(ct.Opts{ID: ct.ID(2), Label: "ext4", FS: "ext4", Start: t0.Add(time.Hour), Workloads: []ct.Workload{
		w("seq1m-read", "read", 1<<20, false, 468, 472, 464, 470, 466),
		w("seq1m-write", "write", 1<<20, true, 432, 436, 428, 434, 430),
		w("rnd4k-read", "randread", 4<<10, false, 40.1, 39.7, 40.3, 39.9, 40.0),
		w("mixed", "randrw", 4<<10, false, 27, 27.3, 26.7, 27.1, 26.9),
	}})
	btrfs := ct.Record(ct.Opts{ID: ct.ID(3), Label: "btrfs", FS: "btrfs", Kernel: "6.1.0-26-amd64", Start: t0.Add(2 * time.Hour), Workloads: []ct.Workload{
		w("seq1m-read", "read", 1<<20, false, 500),
		w("seq1m-write", "write", 1<<20, true, 300),
		w("rnd4k-read", "randread", 4<<10, false, 38),
	}})
	return []*record.Record{xfs, ext4, btrfs}
}

func comparison(t *testing.T, latency bool) *compare.Comparison {
	t.Helper()
	c, err := compare.Compare(fixture(), compare.Options{Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGoldenComparison(t *testing.T) {
	for _, format := range Formats {
		for _, lat := range []bool{false, true} {
			name := "compare." + format
			if lat {
				if format != "table" && format != "markdown" {
					continue
				}
				name = "compare-latency." + format
			}
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := Write(&buf, format, comparison(t, lat)); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, name, buf.Bytes())
			})
		}
	}
}

func TestGoldenRecord(t *testing.T) {
	rec := fixture()[0]
	rec.Warnings = []string{"CPU frequency governor is powersave of 32 CPUs, not performance: clock scaling adds variance"}
	for _, format := range RecordFormats {
		var buf bytes.Buffer
		if err := Record(&buf, format, rec); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "record."+format, buf.Bytes())
	}
	if err := Record(io.Discard, "xml", rec); err == nil {
		t.Error("unknown record format accepted")
	}
}

func TestTableSaysWhatItMeans(t *testing.T) {
	var buf bytes.Buffer
	if err := Table(&buf, comparison(t, false)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"-10.0% worse (p=0.008",                       // seq1m-read ext4 vs xfs
		"no significant difference (p=",               // rnd4k-read
		"-3.8% (n too small to judge)",                // seq1m-read btrfs: 500 vs 520
		"records differ in Kernel, not only in label", // the comparability warning
		"Mann–Whitney", "Kernel", "5.14.0-427.el9.x86_64", "6.1.0-26-amd64",
		"mixed-read", "mixed-write",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The CPU is shared: shown once, in the environment, not per column.
	if n := strings.Count(out, "AMD EPYC 7302P"); n != 1 {
		t.Errorf("shared CPU shown %d times, want once", n)
	}
}

// svgBlocks returns every <svg>…</svg> of an HTML page.
func svgBlocks(t *testing.T, page string) []string {
	t.Helper()
	var out []string
	for {
		i := strings.Index(page, "<svg")
		if i < 0 {
			return out
		}
		j := strings.Index(page[i:], "</svg>")
		if j < 0 {
			t.Fatal("unterminated <svg>")
		}
		out = append(out, page[i:i+j+len("</svg>")])
		page = page[i+j+len("</svg>"):]
	}
}

// svgInfo parses one SVG strictly as XML and counts its elements.
type svgInfo struct {
	chart, row string
	counts     map[string]int
	title      string
}

func parseSVG(t *testing.T, s string) svgInfo {
	t.Helper()
	info := svgInfo{counts: map[string]int{}}
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	depth := 0
	inTitle := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, s)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			info.counts[e.Name.Local]++
			if e.Name.Local == "svg" {
				for _, a := range e.Attr {
					switch a.Name.Local {
					case "data-chart":
						info.chart = a.Value
					case "data-row":
						info.row = a.Value
					}
				}
			}
			inTitle = e.Name.Local == "title" && depth == 2
		case xml.CharData:
			if inTitle {
				info.title += string(e)
			}
		case xml.EndElement:
			depth--
			inTitle = false
		}
	}
	return info
}

func TestHTMLSelfContainedAndCharts(t *testing.T) {
	c := comparison(t, false)
	var buf bytes.Buffer
	if err := HTML(&buf, c); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script", "http://", "https://", "url(", "@import", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: not self-contained", bad)
		}
	}
	for _, want := range []string{"prefers-color-scheme: dark", "<table>", "Environment", "Mann–Whitney"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	blocks := svgBlocks(t, page)
	byKind := map[string][]svgInfo{}
	for _, b := range blocks {
		info := parseSVG(t, b)
		if info.title == "" {
			t.Errorf("chart %s %s has no <title>", info.chart, info.row)
		}
		byKind[info.chart] = append(byKind[info.chart], info)
	}
	rows := len(c.Rows)
	// Present cells: every row in xfs and ext4; btrfs lacks mixed-read/-write.
	present := 0
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			if cell.Present {
				present++
			}
		}
	}
	// One panel per block size (1M and 4k here) and metric; together
	// they draw one bar per present cell.
	for _, kind := range []string{"bars-mb-s", "bars-iops"} {
		if len(byKind[kind]) != 2 {
			t.Fatalf("%d %s panels, want 2 (1M and 4k blocks)", len(byKind[kind]), kind)
		}
		got := 0
		for _, info := range byKind[kind] {
			got += info.counts["rect"] - 1 // less the background
		}
		if got != present {
			t.Errorf("%s: %d bars, want %d (one per present cell)", kind, got, present)
		}
	}
	// The change chart: one point per non-baseline present cell and metric
	// drawn (IOPS changes as MB/s here, so MB/s only).
	if len(byKind["change"]) != 1 {
		t.Fatalf("%d change charts, want 1", len(byKind["change"]))
	}
	points := 0
	for _, r := range c.Rows {
		for gi, cell := range r.Cells {
			if gi != r.Baseline && cell.Present {
				points++
			}
		}
	}
	if got := byKind["change"][0].counts["circle"] + byKind["change"][0].counts["polygon"] - 4; got != points { // less the legend's four
		t.Errorf("change chart: %d points, want %d", got, points)
	}
	if len(byKind["latency"]) != rows {
		t.Fatalf("%d latency charts, want %d", len(byKind["latency"]), rows)
	}
	for _, info := range byKind["latency"] {
		want := 0
		for _, r := range c.Rows {
			if r.Name == info.row {
				for _, cell := range r.Cells {
					if cell.Present {
						want++
					}
				}
			}
		}
		if info.counts["polyline"] != want {
			t.Errorf("latency %s: %d curves, want %d (one per present group)", info.row, info.counts["polyline"], want)
		}
	}
	// Over time: one line per present group (the median of its
	// repetitions, their spread shaded), not one per repetition.
	ts := 0
	for _, info := range byKind["timeseries"] {
		ts++
		want := 0
		for _, r := range c.Rows {
			if r.Name == info.row {
				for _, cell := range r.Cells {
					if cell.Present {
						want++
					}
				}
			}
		}
		if info.counts["polyline"] != want {
			t.Errorf("time series %s: %d lines, want %d (one per present group)", info.row, info.counts["polyline"], want)
		}
	}
	if ts != rows {
		t.Errorf("%d time-series charts, want %d", ts, rows)
	}
}

func TestSVGStandalone(t *testing.T) {
	var buf bytes.Buffer
	if err := SVG(&buf, comparison(t, false)); err != nil {
		t.Fatal(err)
	}
	info := parseSVG(t, buf.String())
	// The change chart, then the MB/s and IOPS panels of 1M and 4k blocks.
	if info.chart != "stack" || info.counts["svg"] != 1 || info.counts["style"] != 1 || info.counts["g"] != 5 {
		t.Errorf("standalone svg: %+v", info)
	}
	if !strings.Contains(buf.String(), `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("standalone svg without namespace")
	}
	// Image viewers and converters (librsvg) ignore CSS custom properties:
	// a standalone chart must not depend on them.
	if strings.Contains(buf.String(), "var(") {
		t.Error("standalone svg uses CSS custom properties")
	}
}

func TestJSONRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, comparison(t, true)); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Schema string `json:"schema"`
		compare.Comparison
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != "diskprep/comparison/v1" || len(back.Groups) != 3 || len(back.Rows) != 5 || len(back.Metrics) != 3 {
		t.Errorf("decoded %s: %d groups %d rows %d metrics", back.Schema, len(back.Groups), len(back.Rows), len(back.Metrics))
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(io.Discard, "pdf", comparison(t, false)); err == nil {
		t.Error("pdf accepted")
	}
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ raw, want float64 }{{1171, 2000}, {0.3, 0.5}, {100, 100}, {101, 200}, {45, 50}, {0, 1}} {
		if got := niceStep(c.raw); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("niceStep(%v) = %v, want %v", c.raw, got, c.want)
		}
	}
}

// checkGolden compares got with testdata/name (go test -update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// TestBenchRecordGolden renders the record of bench's own golden test
// (bench/testdata/record.golden.json: a fileserver run with repetitions,
// a mixed workload and warnings) as `diskprep bench` prints it, which is
// what `results show` shows.
func TestBenchRecordGolden(t *testing.T) {
	rec, err := record.ReadFile(filepath.Join("..", "testdata", "record.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table, md bytes.Buffer
	if err := Record(&table, "table", rec); err != nil {
		t.Fatal(err)
	}
	if err := Record(&md, "markdown", rec); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "bench-record.table", table.Bytes())
	checkGolden(t, "bench-record.markdown", md.Bytes())
	if !strings.Contains(table.String(), "10^6 bytes/s") || !strings.Contains(md.String(), "10^6 bytes/s") {
		t.Error("MB/s is not said to be 10^6 bytes/s")
	}
	for _, row := range []string{"seqread", "randread", "randwrite"} {
		if !regexp.MustCompile(`(?m)^` + row + ` `).MatchString(table.String()) {
			t.Errorf("table has no %s row", row)
		}
	}
}

// Issue 25 item 7: a row showed p99 3.24 ms above p99.9 2.92 ms. The
// p99 was the median over the steady-state window, the p99.9 over every
// round, the slow rounds before the window included; both are now over
// the window, and every run's percentiles rising make the row's rise.
func TestRecordPercentilesMonotonic(t *testing.T) {
	rec := ct.Record(ct.Opts{ID: "ss", Workloads: []ct.Workload{{Name: "randwrite", RW: "randwrite", BS: 4 << 10, MBps: []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}}}})
	wr := &rec.Workloads[0]
	for i := range wr.Runs {
		// Fast early rounds (a fresh SSD), then slower steady ones.
		lat := 1e6
		if i >= 7 {
			lat = 3e6
		}
		wr.Runs[i].Write.LatNS = record.Latency{Min: lat / 4, Mean: lat / 2, P50: lat / 2, P90: lat * 0.8, P99: lat * 1.08, P999: lat * 1.2, Max: lat * 2}
	}
	wr.SteadyState = &record.SteadyState{Metric: "iops", Values: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Reached: true, Round: 12}
	wr.Summarize()
	for _, l := range recordLines(rec) {
		if l.p99 != latency(3.24e6) || l.p999 != latency(3.6e6) {
			t.Errorf("%s: p99 %s, p99.9 %s; want %s and %s", l.name, l.p99, l.p999, latency(3.24e6), latency(3.6e6))
		}
	}
}

// Issue 25 item 7: "Environment (the same for every record)" stood above
// "unknown in 2 of 3 records"; with a fact some records lack, the
// heading says it holds for the records that know it.
func TestEnvironmentHeadingWithUnknowns(t *testing.T) {
	recs := fixture()
	recs[0].Host.Kernel, recs[1].Host.Kernel = "", ""
	c, err := compare.Compare(recs, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Table(&buf, c); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "unknown in 2 of 3 records") || !strings.Contains(s, "Environment (the same for every record that knows it)") {
		t.Errorf("table:\n%s", s)
	}
	buf.Reset()
	if err := HTML(&buf, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "<p>The same for every record that knows it:</p>") {
		t.Error("HTML environment heading claims every record")
	}
}
