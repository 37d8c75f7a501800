package report

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSeriesStylesDistinct: up to 16 columns, no two share colour, dash
// pattern and marker shape; two of one colour differ in both dash and
// shape; the first 8 keep their styles (8 colours, their own dashes, the
// first 4 shapes).
func TestSeriesStylesDistinct(t *testing.T) {
	for n := 1; n <= 16; n++ {
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				a, b := styleOf(i), styleOf(j)
				if a == b {
					t.Errorf("%d columns: %d and %d share colour, dash and marker %+v", n, i, j, a)
				}
				if a.colour == b.colour && (a.dash == b.dash || a.marker == b.marker) {
					t.Errorf("%d columns: %d and %d share a colour and a dash or a shape: %+v %+v", n, i, j, a, b)
				}
			}
		}
	}
	for i := range 8 {
		if s := styleOf(i); s != (seriesStyle{colour: i, dash: i, marker: i % 4}) {
			t.Errorf("column %d: style %+v changed", i, s)
		}
	}
}

var (
	legendEntry = regexp.MustCompile(`<line class="line (s\d)" x1="([\d.]+)" y1="([\d.]+)" [^>]*stroke-dasharray="([^"]*)"/>\n(<[^>]*/>)\n<text [^>]*>([^<]*)</text>`)
	plotLine    = regexp.MustCompile(`<polyline class="line (s\d)" stroke-dasharray="([^"]*)" points="([\d.]+),([\d.]+)[^"]*"><title>([^:]*):[^<]*</title></polyline>\n(<[^>]*/>)`)
	markerNums  = regexp.MustCompile(`-?[\d.]+`)
)

// shape is a marker element's tag and numbers, its coordinates made
// relative to its centre: the same shape drawn anywhere gives the same
// numbers (give or take the 0.1 the SVG is written to).
type shape struct {
	tag  string
	nums []float64
}

func shapeOf(t *testing.T, el string, cx, cy float64) shape {
	t.Helper()
	tag, _, _ := strings.Cut(strings.TrimPrefix(el, "<"), " ")
	_, attrs, _ := strings.Cut(el, `"pt `)
	_, attrs, _ = strings.Cut(attrs, `"`)
	sh := shape{tag: tag}
	for k, f := range markerNums.FindAllString(attrs, -1) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		// x and y alternate in points, come first in rect (x y) and
		// circle (cx cy); width, height and r are kept.
		switch {
		case tag == "polygon" && k%2 == 0, tag != "polygon" && k == 0:
			v -= cx
		case tag == "polygon", k == 1:
			v -= cy
		}
		sh.nums = append(sh.nums, v)
	}
	return sh
}

func (a shape) same(b shape) bool {
	if a.tag != b.tag || len(a.nums) != len(b.nums) {
		return false
	}
	for i := range a.nums {
		if math.Abs(a.nums[i]-b.nums[i]) > 0.25 {
			return false
		}
	}
	return true
}

type look struct {
	colour, dash string
	shape        shape
}

func (a look) same(b look) bool {
	return a.colour == b.colour && a.dash == b.dash && a.shape.same(b.shape)
}

// TestLegendDrawsEachStyle: a time series of 2 to 16 columns has a legend
// entry per column, drawn in the colour, dash and shape of that column's
// line and points, and no two entries look the same.
func TestLegendDrawsEachStyle(t *testing.T) {
	for n := 2; n <= 16; n++ {
		var lines []tsSeries
		for i := range n {
			lines = append(lines, tsSeries{name: fmt.Sprintf("col%02d", i), group: i, reps: [][]float64{{float64(100 + 10*i), float64(105 + 10*i), float64(102 + 10*i)}}})
		}
		s := timeSeries("x", "r", svgSmall, "t", "s", "MB/s", lines).svg(false)
		inPlot := map[string]look{}
		for _, m := range plotLine.FindAllStringSubmatch(s, -1) {
			// The line's first marker sits on its first point.
			x, _ := strconv.ParseFloat(m[3], 64)
			y, _ := strconv.ParseFloat(m[4], 64)
			inPlot[m[5]] = look{m[1], m[2], shapeOf(t, m[6], x, y)}
		}
		entries := legendEntry.FindAllStringSubmatch(s, -1)
		if len(entries) != n || len(inPlot) != n {
			t.Fatalf("%d columns: %d legend entries, %d lines", n, len(entries), len(inPlot))
		}
		var seen []look
		for i, m := range entries {
			x, _ := strconv.ParseFloat(m[2], 64)
			y, _ := strconv.ParseFloat(m[3], 64)
			name := m[6]
			if want := fmt.Sprintf("col%02d", i); name != want {
				t.Errorf("%d columns: legend entry %d is %q, want %q", n, i, name, want)
			}
			got := look{m[1], m[4], shapeOf(t, m[5], x+15, y)}
			for j, prev := range seen {
				if prev.same(got) {
					t.Errorf("%d columns: col%02d and %s look the same in the legend: %+v", n, j, name, got)
				}
			}
			seen = append(seen, got)
			if p := inPlot[name]; !p.same(got) {
				t.Errorf("%d columns: %s's legend shows %+v, its line and points are %+v", n, name, got, p)
			}
		}
	}
}

// TestBarsPastEightOutlined: in the nine-column store's bar panels the
// ninth column's bars, which share the first's colour, are outlined and
// the first's are not.
func TestBarsPastEightOutlined(t *testing.T) {
	c := storeComparison(t)
	if len(c.Groups) != 9 {
		t.Fatalf("store has %d columns, want 9", len(c.Groups))
	}
	bar := regexp.MustCompile(`<rect class="bar ([^"]*)"[^>]*><title>[^,]*, ([^:]*):`)
	classes := map[string]map[string]bool{}
	for _, d := range barPanels(c, "bars", svgSmall) {
		for _, m := range bar.FindAllStringSubmatch(d.svg(false), -1) {
			if classes[m[2]] == nil {
				classes[m[2]] = map[string]bool{}
			}
			classes[m[2]][m[1]] = true
		}
	}
	first, ninth := c.Groups[0].Name, c.Groups[8].Name
	if !classes[first]["s0"] || len(classes[first]) != 1 {
		t.Errorf("first column's bars: %v, want s0 only", classes[first])
	}
	if !classes[ninth]["s0 alt"] || len(classes[ninth]) != 1 {
		t.Errorf("ninth column's bars: %v, want s0 alt only", classes[ninth])
	}
	if !strings.Contains(chartCSS, "svg.chart .bar.alt{stroke:") {
		t.Error("no outline style for the bars past 8 colours")
	}
}
