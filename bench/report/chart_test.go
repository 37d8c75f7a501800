package report

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
)

// TestChangeChartMarks: a real change is a filled point in the colour of
// better or worse with a solid interval; no significant difference a
// hollow grey point with a dashed one; too few runs a hollow diamond.
func TestChangeChartMarks(t *testing.T) {
	c := comparison(t, true)
	want := map[string]int{}
	for _, r := range c.Rows {
		for gi, cell := range r.Cells {
			if gi == r.Baseline || !cell.Present {
				continue
			}
			for mi, m := range c.Metrics {
				if m == compare.MetricIOPS {
					continue // changes as MB/s: not drawn twice
				}
				want[pointClass(cell.Metrics[mi])]++
			}
		}
	}
	if want["worse"] == 0 || want["same"] == 0 || want["toofew"] == 0 {
		t.Fatalf("fixture lacks a kind of verdict: %v", want)
	}
	s := changeChart(c, "x", svgWide).svg(false)
	for cls, n := range want {
		// The legend draws one of each.
		if got := strings.Count(s, `class="pt `+cls+`"`) - 1; got != n {
			t.Errorf("%d %s points, want %d", got, cls, n)
		}
	}
	if got := strings.Count(s, `class="ci worse"`); got != want["worse"] {
		t.Errorf("%d intervals of worse points, want %d", got, want["worse"])
	}
	for _, rule := range []string{"svg.chart .ci.same,svg.chart .ci.toofew,svg.chart .ci.unstable{stroke-dasharray:4 3}", "svg.chart .pt.same,svg.chart .pt.toofew,svg.chart .pt.unstable{fill:#ffffff"} {
		if !strings.Contains(chartCSS, rule) {
			t.Errorf("chart styles lack %q", rule)
		}
	}
	// The zero line is drawn, and ticks of both signs.
	if !strings.Contains(s, `class="zero"`) || !strings.Contains(s, ">-10%<") || !strings.Contains(s, ">+10%<") {
		t.Error("change chart has no zero line or no ticks around it")
	}
}

func TestSpreadLabels(t *testing.T) {
	got := spreadLabels([]float64{102, 100, 300, 101}, 15, 0, 400)
	if want := []float64{130, 100, 300, 115}; !slices.Equal(got, want) {
		t.Errorf("spread %v, want %v (order kept, 15 apart)", got, want)
	}
	got = spreadLabels([]float64{395, 390}, 15, 0, 400)
	if want := []float64{400, 385}; !slices.Equal(got, want) {
		t.Errorf("at the bottom: %v, want %v", got, want)
	}
}

func TestBucketed(t *testing.T) {
	a, b := make([]float64, 600), make([]float64, 600)
	for i := range a {
		a[i], b[i] = float64(i), float64(i)+10
	}
	mid, lo, hi := bucketed([][]float64{a, b}, 4)
	if len(mid) != 150 || mid[0] != 6.5 || lo[0] != 0 || hi[0] != 13 || mid[149] != 602.5 {
		t.Errorf("buckets: %d, first %v [%v, %v], last %v", len(mid), mid[0], lo[0], hi[0], mid[len(mid)-1])
	}
}

// TestEndLabelsAtTheirLines: each line's name is written at the height of
// the line's last point (when the lines end apart), so no label sits
// beside another line.
func TestEndLabelsAtTheirLines(t *testing.T) {
	d := timeSeries("x", "r", svgSmall, "t", "s", "MB/s", []tsSeries{
		{name: "slow", reps: [][]float64{{100, 110, 105}}},
		{name: "fast", group: 1, reps: [][]float64{{500, 520, 510}, {505, 515, 500}}},
	})
	s := d.svg(false)
	lastY := map[string]float64{}
	for _, m := range regexp.MustCompile(`points="([^"]*)"><title>(\w+):`).FindAllStringSubmatch(s, -1) {
		pts := strings.Fields(m[1])
		_, y, _ := strings.Cut(pts[len(pts)-1], ",")
		lastY[m[2]], _ = strconv.ParseFloat(y, 64)
	}
	boxes, _, _ := chartTexts(t, s)
	for _, name := range []string{"slow", "fast"} {
		// The last text of that name: the legend comes first.
		i := -1
		for j, b := range boxes {
			if b.text == name {
				i = j
			}
		}
		if i < 0 {
			t.Fatalf("no label %q", name)
		}
		mid := (boxes[i].top + boxes[i].bottom) / 2
		if math.Abs(mid-lastY[name]) > 6 {
			t.Errorf("label %q at y %.0f, its line ends at %.0f", name, mid, lastY[name])
		}
	}
}

func TestTicks(t *testing.T) {
	if got := logTicks(150e3, 12e6); !slices.Equal(got, []float64{1e6, 1e7}) && !slices.Equal(got, []float64{2e5, 5e5, 1e6, 2e6, 5e6, 1e7}) {
		t.Errorf("log ticks %v", got)
	}
	if got := logTicks(2e3, 3e4); !slices.Equal(got, []float64{2e3, 5e3, 1e4, 2e4}) {
		t.Errorf("log ticks over a decade %v", got)
	}
	x := func(r float64) float64 { return 100 + math.Log(r)*200 }
	got := changeTicks(0.45, 2.2, x)
	for _, want := range []float64{-50, 0, 100} {
		if !slices.Contains(got, want) {
			t.Errorf("change ticks %v lack %v", got, want)
		}
	}
	for i := 1; i < len(got); i++ {
		a, b := x(1+got[i-1]/100), x(1+got[i]/100)
		if b-a < (textExtent(tickPct(got[i-1]), fontTick, false)+textExtent(tickPct(got[i]), fontTick, false))/2 {
			t.Errorf("ticks %v and %v overlap", got[i-1], got[i])
		}
	}
	if ticks, top := linearTicks(6558, 4); top != 8000 || len(ticks) != 5 {
		t.Errorf("linear ticks %v top %v", ticks, top)
	}
}

// An unstable cell says which side drifted and how far, in the table and
// in the change chart, where it is a hollow square of its own.
func TestUnstableCellShown(t *testing.T) {
	d := -23.5
	v := compare.Value{Metric: compare.MetricMBps, Verdict: compare.VerdictUnstable, DriftPct: &d, DriftIn: "ext4"}
	if got := changeText(v); got != "unstable: ext4 drifted -23.5% during its runs" {
		t.Errorf("table: %q", got)
	}
	if w, cls := changeWords(v); w != "unstable: ext4 drifted -23.5%" || cls != "same" || pointClass(v) != "unstable" {
		t.Errorf("chart: %q %q %q", w, cls, pointClass(v))
	}
}
