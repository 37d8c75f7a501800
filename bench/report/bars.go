package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/internal/units"
)

// bsClass is a row's block size from its parameters ("bs=4k"), in bytes;
// 0 when the record does not know it.
func bsClass(r compare.Row) uint64 {
	for _, f := range strings.Fields(r.Params) {
		if v, ok := strings.CutPrefix(f, "bs="); ok {
			if n, err := units.ParseSize(v); err == nil {
				return n
			}
		}
	}
	return 0
}

// rowsByBlockSize groups the rows by block size, largest first: 4k random
// I/O and 1M streams are not drawn on one linear axis, where the small
// ones would be slivers.
func rowsByBlockSize(c *compare.Comparison) ([]uint64, map[uint64][]compare.Row) {
	by := map[uint64][]compare.Row{}
	var sizes []uint64
	for _, r := range c.Rows {
		bs := bsClass(r)
		if _, ok := by[bs]; !ok {
			sizes = append(sizes, bs)
		}
		by[bs] = append(by[bs], r)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] > sizes[j] })
	return sizes, by
}

func bsText(bs uint64) string {
	if bs == 0 {
		return "block size unknown"
	}
	return units.FormatSizeShort(bs) + " blocks"
}

// barPanels draws MB/s and IOPS per block size, one panel each.
func barPanels(c *compare.Comparison, id string, w float64) []*svgDoc {
	sizes, by := rowsByBlockSize(c)
	var out []*svgDoc
	for _, bs := range sizes {
		for mi, m := range c.Metrics {
			if m == compare.MetricLatP99 || m == compare.MetricHostCPU {
				continue
			}
			out = append(out, barPanel(c, by[bs], mi, bs, fmt.Sprintf("%s-%s-%d", id, slug(m), bs), w))
		}
	}
	return out
}

// barLabel is the text at a bar's end: the median, and against the
// baseline the change when it is real, ≈ when it is not.
func barLabel(metric string, v compare.Value, isBase bool) string {
	s := metricValue(metric, v.Median)
	if isBase {
		return s
	}
	switch v.Verdict {
	case compare.VerdictSignificant:
		if v.ChangePct != nil {
			s += "  " + pct(*v.ChangePct)
		}
	case compare.VerdictSame:
		s += "  ≈"
	}
	return s
}

// barPanel draws one metric of rows (one block size) as horizontal bars,
// one per group, with a linear axis of nice ticks and its unit.
func barPanel(c *compare.Comparison, rows []compare.Row, mi int, bs uint64, id string, w float64) *svgDoc {
	metric := c.Metrics[mi]
	d := &svgDoc{id: id, w: w, kind: "bars-" + slug(metric)}
	unit := metric
	d.title = fmt.Sprintf("%s, %s", chartTitle(metric), bsText(bs))
	y := d.heading(d.title, "median of the repetitions; the thin line spans min–max; longer is better; ≈: no significant difference from the baseline")
	maxV, labelW, valueW := 0.0, 0.0, 0.0
	for _, r := range rows {
		labelW = math.Max(labelW, textExtent(r.Name, fontBase, true)-40)
		for gi, cell := range r.Cells {
			labelW = math.Max(labelW, textExtent(c.Groups[gi].Name, fontBase, false))
			if cell.Present {
				v := cell.Metrics[mi]
				maxV = math.Max(maxV, v.Max)
				valueW = math.Max(valueW, textExtent(barLabel(metric, v, gi == r.Baseline), fontBase, false))
			}
		}
	}
	labelW = math.Min(labelW+22, w*0.34)
	valueW = math.Min(valueW+14, w*0.3)
	x0, x1 := labelW, w-valueW-6
	ticks, top := linearTicks(maxV, int(math.Max(4, math.Min(8, (x1-x0)/80))))
	x := func(v float64) float64 { return x0 + v/top*(x1-x0) }
	const barH, gap = 15.0, 4.0
	var desc []string
	var bars strings.Builder
	// The grid and the axis run beside each row's bars only, not through
	// the row names above them.
	type span struct{ a, b float64 }
	var spans []span
	// Where the value labels are: a grid line stops short of them, or
	// it would turn "+22.1%" into "-22.1%" or 65762 into another number.
	var labels []textRect
	for _, r := range rows {
		d.text(10, y+13, "start", "head", fitText(r.Name, fontBase, true, w-20))
		y += 20
		spans = append(spans, span{y - 3, 0})
		for gi, cell := range r.Cells {
			if !cell.Present {
				continue
			}
			g := c.Groups[gi].Name
			d.text(labelW-8, y+11.5, "end", "", fitAmong(g, groupNames(c), fontBase, false, labelW-16))
			v := cell.Metrics[mi]
			wv := math.Max(x(v.Median)-x0, 1)
			fmt.Fprintf(&bars, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.0f"><title>%s</title></rect>`+"\n",
				barClass(gi), x0, y, wv, barH, esc(fmt.Sprintf("%s, %s: %s %s, %s", r.Name, g, valueText(metric, v), metric, nText(len(v.Values)))))
			end := x0 + wv
			if len(v.Values) > 1 {
				cy := y + barH/2
				fmt.Fprintf(&bars, `<path class="range" d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f"/>`+"\n", x(v.Min), cy, x(v.Max), x(v.Min), cy-4, cy+4, x(v.Max), cy-4, cy+4)
				end = math.Max(end, x(v.Max))
			}
			lbl := barLabel(metric, v, gi == r.Baseline)
			d.text(end+6, y+11.5, "start", "", lbl)
			labels = append(labels, boxOf(end+6, y+11.5, "start", lbl, fontBase, false))
			desc = append(desc, fmt.Sprintf("%s %s %s", r.Name, g, valueText(metric, v)))
			y += barH + gap
		}
		spans[len(spans)-1].b = y + 4
		y += 8
	}
	spans[len(spans)-1].b = y
	for _, sp := range spans {
		for _, t := range ticks {
			for _, seg := range clearOf(x(t), sp.a, sp.b, labels) {
				d.line("grid", x(t), seg[0], x(t), seg[1])
			}
		}
		d.line("axis", x0, sp.a, x0, sp.b)
	}
	d.b.WriteString(bars.String())
	d.line("axis", x0, y, x1, y)
	for _, t := range ticks {
		d.text(x(t), y+15, "middle", "tick", axisNum(t, ticks[len(ticks)-1]))
	}
	d.text(x1, y+31, "end", "muted", unit)
	d.h = y + 40
	d.desc = metric + " medians: " + strings.Join(desc, "; ") + "."
	return d
}

// barClass is the class of group gi's bars: its colour, and past the 8
// colours an outline in the text colour, so that a bar is not taken for
// the bar of the column 8 before it.
func barClass(gi int) string {
	if gi >= len(light.series) {
		return series(gi) + " alt"
	}
	return series(gi)
}

// groupNames are the names of the comparison's columns.
func groupNames(c *compare.Comparison) []string {
	out := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		out[i] = g.Name
	}
	return out
}

func nText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

func chartTitle(metric string) string {
	switch metric {
	case compare.MetricMBps:
		return "Throughput, MB/s (10^6 bytes/s)"
	case compare.MetricIOPS:
		return "IOPS"
	}
	return "p99 completion latency"
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
