package report

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTimePanels: a time series of more than 4 columns is drawn as one
// panel per column, on the same axes, with no label cut or over another,
// at both chart widths, for 2-second and 10-minute runs; up to 4 columns
// it stays one chart, its lines named at their ends where the names fit.
func TestTimePanels(t *testing.T) {
	panel := regexp.MustCompile(`(?s)<g class="panel" data-column="([^"]*)">(.*?)</g>`)
	axis := regexp.MustCompile(`<line class="axis" x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)"`)
	own := regexp.MustCompile(`<polyline class="line (s\d)" stroke-dasharray="[^"]*" points="([^"]*)"><title>([^:]*):`)
	for _, secs := range []int{2, 600} {
		for _, w := range []float64{svgSmall, svgWide} {
			for n := 1; n <= 12; n++ {
				name := fmt.Sprintf("%d columns of %d s at %.0f", n, secs, w)
				var lines []tsSeries
				for k := range n {
					// Column k runs at 100·(k+1) MB/s throughout, under a
					// long name for the last.
					s := tsSeries{name: fmt.Sprintf("column %d", k), group: k}
					if k == n-1 {
						s.name = "ext4 · esx-guest · a column whose name goes on and on"
					}
					rep := make([]float64, secs)
					for i := range rep {
						rep[i] = 100 * float64(k+1)
					}
					s.reps = [][]float64{rep, rep}
					lines = append(lines, s)
				}
				svg := timeSeries("x", "r", w, "Throughput over time: r", "MB/s each second", "MB/s", lines).svg(false)
				checkNoClipping(t, name, svg)
				panels := panel.FindAllStringSubmatch(svg, -1)
				if n <= maxLabelled {
					if len(panels) != 0 {
						t.Errorf("%s: %d panels, want one chart", name, len(panels))
					}
					// A name too long for the margin is not cut at the
					// line's end: the legend names it whole.
					if strings.Contains(svg, "…") {
						t.Errorf("%s: a name is cut short", name)
					}
					continue
				}
				if len(panels) != n {
					t.Fatalf("%s: %d panels, want %d", name, len(panels), n)
				}
				// Per pixel of height, the same MB/s in every panel: the
				// axes are shared. Panels side by side do not overlap.
				var heights []float64
				type span struct{ a, b, y float64 }
				var spans []span
				for k, p := range panels {
					mine := own.FindAllStringSubmatch(p[2], -1)
					ax := axis.FindStringSubmatch(p[2])
					if len(mine) != 1 || ax == nil {
						t.Fatalf("%s: panel %q has %d lines of its own and axis %v", name, p[1], len(mine), ax)
					}
					if want := esc(lines[k].name); p[1] != want || mine[0][3] != want || mine[0][1] != series(k) {
						t.Errorf("%s: panel %d is %q and draws %s %q, want %q in %s", name, k, p[1], mine[0][1], mine[0][3], want, series(k))
					}
					a, _ := strconv.ParseFloat(ax[1], 64)
					ay, _ := strconv.ParseFloat(ax[2], 64)
					b, _ := strconv.ParseFloat(ax[3], 64)
					spans = append(spans, span{a, b, ay})
					first := strings.Fields(mine[0][2])[0]
					xs, ys, _ := strings.Cut(first, ",")
					x, _ := strconv.ParseFloat(xs, 64)
					y, _ := strconv.ParseFloat(ys, 64)
					if x < a || x > b {
						t.Errorf("%s: panel %q's line starts at x %.1f, outside its axis %.1f–%.1f", name, p[1], x, a, b)
					}
					heights = append(heights, ay-y)
				}
				// Column k's height is (k+1)/n of the last's, give or take
				// the 0.1 the points are written to.
				for k, h := range heights {
					if want := heights[n-1] * float64(k+1) / float64(n); math.Abs(h-want) > 0.2 {
						t.Errorf("%s: panel %d's line is %.1f above its axis, want %.1f on a shared axis", name, k, h, want)
					}
				}
				for i, a := range spans {
					for _, b := range spans[i+1:] {
						if a.y == b.y && a.a < b.b && b.a < a.b {
							t.Errorf("%s: panels at %.0f–%.0f and %.0f–%.0f overlap", name, a.a, a.b, b.a, b.b)
						}
					}
				}
				// The time axis is labelled under the last panel of each
				// column of panels.
				cols := 2
				if w >= 700 {
					cols = 3
				}
				if got := strings.Count(svg, `class="tick">0 s<`); got != min(cols, n) {
					t.Errorf("%s: %d time axes labelled, want %d", name, got, min(cols, n))
				}
			}
		}
	}
}
