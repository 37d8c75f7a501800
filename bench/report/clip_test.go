package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

// textBox is one label of a chart, where the renderer put it and how
// much room its text takes (estimated from the font's advance widths).
type textBox struct {
	chart, text            string
	x0, x1, top, bottom    float64
	chartW, chartH, offset float64
}

// chartTexts parses an SVG strictly and returns every text's box, in the
// coordinates of its drawing (groups translated down in a stacked file).
func chartTexts(t *testing.T, s string) (boxes []textBox, w, h float64) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	var offsets []float64
	chart := ""
	var cur *textBox
	var curClass, anchor string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			off := 0.0
			if len(offsets) > 0 {
				off = offsets[len(offsets)-1]
			}
			switch e.Name.Local {
			case "svg":
				if w == 0 {
					var x, y float64
					fmt.Sscanf(attr["viewBox"], "%g %g %g %g", &x, &y, &w, &h)
					chart = attr["data-chart"]
				}
			case "g":
				if tr := attr["transform"]; strings.HasPrefix(tr, "translate(0 ") {
					v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(tr, "translate(0 "), ")"), 64)
					off += v
					chart = attr["data-chart"]
				}
			case "text":
				x, _ := strconv.ParseFloat(attr["x"], 64)
				y, _ := strconv.ParseFloat(attr["y"], 64)
				cur = &textBox{chart: chart, x0: x, top: y + off, chartW: w, chartH: h, offset: off}
				curClass, anchor = attr["class"], attr["text-anchor"]
			}
			offsets = append(offsets, off)
		case xml.CharData:
			if cur != nil {
				cur.text += string(e)
			}
		case xml.EndElement:
			offsets = offsets[:len(offsets)-1]
			if e.Name.Local == "text" && cur != nil {
				size, bold := textStyle(curClass)
				ext := textExtent(cur.text, size, bold)
				switch anchor {
				case "middle":
					cur.x0 -= ext / 2
				case "end":
					cur.x0 -= ext
				}
				cur.x1 = cur.x0 + ext
				// Baseline at y: ascenders reach about 0.76 em above,
				// descenders 0.24 em below (DejaVu Sans).
				cur.bottom = cur.top + 0.24*size
				cur.top -= 0.76 * size
				boxes = append(boxes, *cur)
				cur = nil
			}
		}
	}
	return boxes, w, h
}

// checkNoClipping fails when a label passes its drawing's edge or lies
// over another label.
func checkNoClipping(t *testing.T, name, s string) {
	t.Helper()
	boxes, w, h := chartTexts(t, s)
	if w <= 0 || h <= 0 {
		t.Fatalf("%s: no viewBox", name)
	}
	for _, b := range boxes {
		if b.x0 < -0.5 || b.x1 > w+0.5 || b.top < -0.5 || b.bottom > h+0.5 {
			t.Errorf("%s (%s): %q at x %.0f–%.0f y %.0f–%.0f passes the drawing's %.0f×%.0f", name, b.chart, b.text, b.x0, b.x1, b.top, b.bottom, w, h)
		}
	}
	// Labels closer than 6 px side by side read as one ("8 min10 min").
	for i, a := range boxes {
		for _, b := range boxes[i+1:] {
			ix := math.Min(a.x1, b.x1) - math.Max(a.x0, b.x0) + 6
			iy := math.Min(a.bottom, b.bottom) - math.Max(a.top, b.top)
			if ix > 1 && iy > 1 {
				t.Errorf("%s (%s): %q and %q overlap (%.0f×%.0f)", name, a.chart, a.text, b.text, ix, iy)
			}
		}
	}
}

// pageCharts returns the charts of an HTML page and checks each.
func pageCharts(t *testing.T, name string, c *compare.Comparison) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := HTML(&buf, c); err != nil {
		t.Fatal(err)
	}
	blocks := svgBlocks(t, buf.String())
	for i, b := range blocks {
		checkNoClipping(t, fmt.Sprintf("%s chart %d", name, i), b)
	}
	buf.Reset()
	if err := SVG(&buf, c); err != nil {
		t.Fatal(err)
	}
	checkNoClipping(t, name+" standalone svg", buf.String())
	return blocks
}

// longRun is a comparison of two 10-minute runs and a 2-second one: the
// time series must stay lines, not a smear, and the 2-second run visible.
func longRun(t *testing.T) *compare.Comparison {
	mk := func(id, label string, secs int, base float64) *record.Record {
		r := ct.Record(ct.Opts{ID: id, Label: label, Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{base, base * 1.01, base * 0.99}}}})
		for i := range r.Workloads[0].Runs {
			d := r.Workloads[0].Runs[i].Read
			d.Samples = nil
			for s := range secs {
				// A slow drift and a dip every 97 s: what a throttling
				// drive or a busy neighbour looks like.
				v := base * (1 + 0.05*math.Sin(float64(s)/40+float64(i)))
				if s%97 < 3 {
					v *= 0.6
				}
				d.Samples = append(d.Samples, record.Sample{Bytes: uint64(v * 1e6)})
			}
			r.Workloads[0].Runs[i].HostSamples = []record.HostSample{{CPUUserPct: 10, CPUSystemPct: 20, CPUIOWaitPct: 5}, {CPUUserPct: 12, CPUSystemPct: 22, CPUIOWaitPct: 7}}
		}
		return r
	}
	c, err := compare.Compare([]*record.Record{
		mk("a", "bare metal, long name of a column that goes on and on", 600, 510),
		mk("b", "esx vmdk", 600, 455), mk("c", "quick", 2, 480),
	}, compare.Options{Latency: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChartsNotClipped: every label of every chart lies inside its drawing
// and over no other label: the fixture, the real store of nine columns, and
// 10-minute against 2-second runs with a long column name.
func TestChartsNotClipped(t *testing.T) {
	pageCharts(t, "fixture", comparison(t, true))
	pageCharts(t, "store", storeComparison(t))
	blocks := pageCharts(t, "long runs", longRun(t))
	for _, b := range blocks {
		info := parseSVG(t, b)
		if info.chart != "timeseries" {
			continue
		}
		for _, pl := range strings.Split(b, "<polyline")[1:] {
			pts := strings.Count(strings.SplitN(pl, `points="`, 2)[1][:strings.Index(strings.SplitN(pl, `points="`, 2)[1], `"`)], ",")
			if pts > tsMaxPoints {
				t.Errorf("time series line of %d points, want at most %d", pts, tsMaxPoints)
			}
		}
	}
}

// TestChartsReadableAtPageWidths: the page lays full-width charts at the
// page's width and small ones in a grid; at 800, 1280 and 1600 px windows
// the smallest chart text is still at least 9 px and at most 20 px, and
// the change chart's, beside the table, at least 11 px.
func TestChartsReadableAtPageWidths(t *testing.T) {
	for _, win := range []float64{800, 1280, 1600} {
		content := math.Min(win, pageMaxWidth) - 2*pagePadding
		cols := math.Max(1, math.Floor((content+gridGap)/(gridMin+gridGap)))
		cell := math.Min((content-gridGap*(cols-1))/cols, gridChartMax)
		for _, c := range []struct {
			name  string
			scale float64
			least float64
		}{{"full-width", content / svgWide, 9}, {"grid", cell / svgSmall, 9}, {"change", math.Min(content, changeMax) / changeW, 11}} {
			if px := fontTick * c.scale; px < c.least {
				t.Errorf("%.0f px window: %s chart ticks are %.1f px", win, c.name, px)
			}
			if px := fontTtl * c.scale; px > 20 {
				t.Errorf("%.0f px window: %s chart titles are %.1f px", win, c.name, px)
			}
		}
	}
}
