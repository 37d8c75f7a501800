package report

import (
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

// drawnShape is one drawn element that is not text, as the segments of its
// outline (lines, paths, polylines) or as its bounding box (bars,
// markers, filled areas), in the coordinates of its drawing.
type drawnShape struct {
	what   string
	segs   [][4]float64
	box    [4]float64 // x0, y0, x1, y1
	hasBox bool
	chart  string
}

// chartShapes parses an SVG and returns every grid line, axis, bar, range,
// point and line it draws, except the background.
func chartShapes(t *testing.T, s string) []drawnShape {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	var offsets []float64
	chart := ""
	var out []drawnShape
	num := func(a map[string]string, k string) float64 {
		v, _ := strconv.ParseFloat(a[k], 64)
		return v
	}
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
			a := map[string]string{}
			for _, at := range e.Attr {
				a[at.Name.Local] = at.Value
			}
			off := 0.0
			if len(offsets) > 0 {
				off = offsets[len(offsets)-1]
			}
			what := e.Name.Local + "." + a["class"]
			switch e.Name.Local {
			case "svg":
				if chart == "" {
					chart = a["data-chart"]
				}
			case "g":
				if tr := a["transform"]; strings.HasPrefix(tr, "translate(0 ") {
					v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(tr, "translate(0 "), ")"), 64)
					off += v
					chart = a["data-chart"]
				}
			case "line":
				out = append(out, drawnShape{what: what, chart: chart, segs: [][4]float64{{num(a, "x1"), num(a, "y1") + off, num(a, "x2"), num(a, "y2") + off}}})
			case "rect":
				if !strings.Contains(a["class"], "bg") {
					x, y := num(a, "x"), num(a, "y")+off
					out = append(out, drawnShape{what: what, chart: chart, hasBox: true, box: [4]float64{x, y, x + num(a, "width"), y + num(a, "height")}})
				}
			case "circle":
				r := num(a, "r")
				cx, cy := num(a, "cx"), num(a, "cy")+off
				out = append(out, drawnShape{what: what, chart: chart, hasBox: true, box: [4]float64{cx - r, cy - r, cx + r, cy + r}})
			case "polygon", "polyline":
				var pts [][2]float64
				for _, p := range strings.Fields(a["points"]) {
					xs, ys, _ := strings.Cut(p, ",")
					x, _ := strconv.ParseFloat(xs, 64)
					y, _ := strconv.ParseFloat(ys, 64)
					pts = append(pts, [2]float64{x, y + off})
				}
				sh := drawnShape{what: what, chart: chart}
				if e.Name.Local == "polygon" {
					sh.hasBox = true
					sh.box = [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
					for _, p := range pts {
						sh.box = [4]float64{math.Min(sh.box[0], p[0]), math.Min(sh.box[1], p[1]), math.Max(sh.box[2], p[0]), math.Max(sh.box[3], p[1])}
					}
				} else {
					for i := 1; i < len(pts); i++ {
						sh.segs = append(sh.segs, [4]float64{pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1]})
					}
				}
				out = append(out, sh)
			case "path":
				out = append(out, drawnShape{what: what, chart: chart, segs: pathSegments(t, a["d"], off)})
			}
			offsets = append(offsets, off)
		case xml.EndElement:
			offsets = offsets[:len(offsets)-1]
		}
	}
	return out
}

// pathSegments reads the M, L, H and V commands (absolute) the charts
// write into segments.
func pathSegments(t *testing.T, d string, off float64) [][4]float64 {
	t.Helper()
	var segs [][4]float64
	var x, y float64
	i := 0
	readNum := func() float64 {
		for i < len(d) && (d[i] == ' ' || d[i] == ',') {
			i++
		}
		j := i
		for j < len(d) && (d[j] == '-' || d[j] == '.' || d[j] >= '0' && d[j] <= '9' || d[j] == 'e') {
			j++
		}
		v, err := strconv.ParseFloat(d[i:j], 64)
		if err != nil {
			t.Fatalf("path %q: %v", d, err)
		}
		i = j
		return v
	}
	for i < len(d) {
		c := d[i]
		i++
		switch c {
		case ' ', ',':
		case 'M':
			x, y = readNum(), readNum()+off
		case 'L':
			nx, ny := readNum(), readNum()+off
			segs = append(segs, [4]float64{x, y, nx, ny})
			x, y = nx, ny
		case 'H':
			nx := readNum()
			segs = append(segs, [4]float64{x, y, nx, y})
			x = nx
		case 'V':
			ny := readNum() + off
			segs = append(segs, [4]float64{x, y, x, ny})
			y = ny
		case 'Z', 'z':
		default:
			t.Fatalf("path %q: command %q the test does not read", d, c)
		}
	}
	return segs
}

// segmentHitsBox reports whether the segment passes through the box's
// inside (Liang–Barsky clipping).
func segmentHitsBox(s [4]float64, b [4]float64) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := s[2]-s[0], s[3]-s[1]
	for _, c := range [][2]float64{{-dx, s[0] - b[0]}, {dx, b[2] - s[0]}, {-dy, s[1] - b[1]}, {dy, b[3] - s[1]}} {
		p, q := c[0], c[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		r := q / p
		if p < 0 {
			t0 = math.Max(t0, r)
		} else {
			t1 = math.Min(t1, r)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}

// checkNothingCrossesText fails when a grid line, axis, bar, range, point
// or line of a chart passes through a label: a grid line through "+22.1%"
// reads as "-22.1%", through 65762 as another number.
func checkNothingCrossesText(t *testing.T, name, s string) {
	t.Helper()
	boxes, _, _ := chartTexts(t, s)
	shapes := chartShapes(t, s)
	for _, b := range boxes {
		if strings.TrimSpace(b.text) == "" {
			continue
		}
		// The inside of the glyphs' box, a pixel in from its edges:
		// touching a box's corner does not hide a sign.
		in := [4]float64{b.x0 + 1, b.top + 1, b.x1 - 1, b.bottom - 1}
		for _, sh := range shapes {
			if sh.chart != b.chart {
				continue
			}
			hit := false
			if sh.hasBox {
				hit = sh.box[0] < in[2] && sh.box[2] > in[0] && sh.box[1] < in[3] && sh.box[3] > in[1]
			}
			for _, sg := range sh.segs {
				hit = hit || segmentHitsBox(sg, in)
			}
			if hit {
				t.Errorf("%s (%s): %s crosses %q at x %.0f–%.0f y %.0f–%.0f", name, b.chart, sh.what, b.text, b.x0, b.x1, b.top, b.bottom)
			}
		}
	}
}

// shortBars is two columns where the second is much smaller and clearly
// different: its value label, "+22.1%" or "-78.0%", sits where the grid
// lines of the longer bar's axis run.
func shortBars(t *testing.T) *compare.Comparison {
	t.Helper()
	mk := func(id, label string, mbps ...float64) *record.Record {
		return ct.Record(ct.Opts{ID: id, Label: label, Workloads: []ct.Workload{
			{Name: "seq1m-read", RW: "read", BS: 1 << 20, MBps: mbps},
			{Name: "rnd4k-read", RW: "randread", BS: 4 << 10, MBps: []float64{mbps[0] / 20, mbps[1] / 20, mbps[2] / 20, mbps[3] / 20, mbps[4] / 20}},
		}})
	}
	c, err := compare.Compare([]*record.Record{
		mk("a", "fast", 5000, 5010, 4990, 5005, 4995),
		mk("b", "slow", 1100, 1102, 1098, 1101, 1099),
		mk("c", "faster", 6105, 6110, 6100, 6107, 6103),
	}, compare.Options{Latency: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChartsNothingCrossesText: in every chart of the HTML page and the
// standalone SVG, no grid line, axis, bar, range, point or line passes
// through a label or an axis caption.
func TestChartsNothingCrossesText(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *compare.Comparison
	}{{"fixture", comparison(t, true)}, {"store", storeComparison(t)}, {"long runs", longRun(t)}, {"short bars", shortBars(t)}} {
		var buf strings.Builder
		if err := HTML(&buf, tc.c); err != nil {
			t.Fatal(err)
		}
		for i, b := range svgBlocks(t, buf.String()) {
			checkNothingCrossesText(t, fmt.Sprintf("%s chart %d", tc.name, i), b)
		}
		buf.Reset()
		if err := SVG(&buf, tc.c); err != nil {
			t.Fatal(err)
		}
		checkNothingCrossesText(t, tc.name+" standalone svg", buf.String())
	}
}
