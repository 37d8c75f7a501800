package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
)

// changeEntry is one point of the change chart: a row's metric in one
// non-baseline group, against the row's baseline.
type changeEntry struct {
	row, group string
	v, base    compare.Value
}

// changeSection is one metric's entries, by row.
type changeSection struct {
	metric string
	rows   [][]changeEntry
}

// changeSections gathers the change chart's points. IOPS is left out when
// it changes exactly as MB/s does (every row of one block size: bytes
// per I/O fixed), which the chart then says.
func changeSections(c *compare.Comparison) (out []changeSection, iopsAlike bool) {
	mbps, iops := -1, -1
	for mi, m := range c.Metrics {
		switch m {
		case compare.MetricMBps:
			mbps = mi
		case compare.MetricIOPS:
			iops = mi
		}
	}
	iopsAlike = mbps >= 0 && iops >= 0
	for _, r := range c.Rows {
		for gi, cell := range r.Cells {
			if gi == r.Baseline || !cell.Present || !iopsAlike {
				continue
			}
			a, b := cell.Metrics[mbps], cell.Metrics[iops]
			iopsAlike = a.Verdict == b.Verdict && (a.ChangePct == nil) == (b.ChangePct == nil) &&
				(a.ChangePct == nil || math.Abs(*a.ChangePct-*b.ChangePct) < 0.05)
		}
	}
	for mi, m := range c.Metrics {
		if mi == iops && iopsAlike {
			continue
		}
		s := changeSection{metric: m}
		for _, r := range c.Rows {
			var es []changeEntry
			base := r.Cells[r.Baseline]
			for gi, cell := range r.Cells {
				if gi == r.Baseline || !cell.Present || !base.Present {
					continue
				}
				es = append(es, changeEntry{row: r.Name, group: c.Groups[gi].Name, v: cell.Metrics[mi], base: base.Metrics[mi]})
			}
			if len(es) > 0 {
				s.rows = append(s.rows, es)
			}
		}
		if len(s.rows) > 0 {
			out = append(out, s)
		}
	}
	return out, iopsAlike
}

// changeWords is the right-hand text of a point and its class.
func changeWords(v compare.Value) (string, string) {
	switch v.Verdict {
	case compare.VerdictSignificant:
		word, cls := "worse", "worse"
		if v.Better {
			word, cls = "better", "better"
		}
		s := word
		if v.ChangePct != nil {
			s = pct(*v.ChangePct) + " " + word
		}
		if v.P != nil {
			s += ", " + pValue(*v.P)
		}
		return s, cls
	case compare.VerdictSame:
		s := "no significant difference"
		if v.ChangePct != nil {
			s = pct(*v.ChangePct) + ": " + s
		}
		return s, "same"
	case compare.VerdictEngineBound:
		if v.ChangePct != nil {
			return pct(*v.ChangePct) + ": engine-bound, not judged", "same"
		}
		return "engine-bound, not judged", "same"
	case compare.VerdictUnstable:
		if v.DriftPct != nil {
			return fmt.Sprintf("unstable: %s drifted %s", v.DriftIn, pct(*v.DriftPct)), "same"
		}
		return "unstable", "same"
	case compare.VerdictTooFew:
		if v.ChangePct != nil {
			return pct(*v.ChangePct) + ": too few runs to judge", "same"
		}
		return "too few runs to judge", "same"
	}
	return v.Verdict, "same"
}

// pointClass is how a point is drawn: filled in the colour of better or
// worse when the change is real, hollow grey when it is not, a hollow
// diamond when there are too few runs to tell.
func pointClass(v compare.Value) string {
	switch v.Verdict {
	case compare.VerdictSignificant:
		if v.Better {
			return "better"
		}
		return "worse"
	case compare.VerdictSame:
		return "same"
	case compare.VerdictUnstable:
		return "unstable"
	}
	return "toofew"
}

// ratioDomain is the log-ratio axis range holding every point, interval
// and noise band, and 0 with some room around it.
func ratioDomain(secs []changeSection) (lo, hi float64) {
	lo, hi = 0.95, 1.05
	add := func(pctv float64) {
		r := 1 + pctv/100
		if r > 0.001 {
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
	}
	for _, s := range secs {
		for _, es := range s.rows {
			for _, e := range es {
				if e.v.ChangePct != nil {
					add(*e.v.ChangePct)
				}
				if e.v.CILowPct != nil && e.v.CIHighPct != nil {
					add(*e.v.CILowPct)
					add(*e.v.CIHighPct)
				}
				if e.base.Median > 0 && len(e.base.Values) > 1 {
					add((e.base.Min/e.base.Median - 1) * 100)
					add((e.base.Max/e.base.Median - 1) * 100)
				}
			}
		}
	}
	pad := (math.Log(hi) - math.Log(lo)) * 0.06
	return math.Exp(math.Log(lo) - pad), math.Exp(math.Log(hi) + pad)
}

var changeTickPct = []float64{-99, -95, -90, -80, -75, -50, -30, -20, -10, -5, -2, -1, 0, 1, 2, 5, 10, 20, 25, 50, 100, 200, 300, 500, 1000, 2000, 5000}

// changeTicks picks the tick percentages within [lo, hi] whose labels do
// not collide, starting from 0 and going outwards.
func changeTicks(lo, hi float64, x func(float64) float64) []float64 {
	var in []float64
	for _, p := range changeTickPct {
		if r := 1 + p/100; r >= lo && r <= hi {
			in = append(in, p)
		}
	}
	// Roundest first: 0, halving and doubling, then the finer steps.
	rank := func(p float64) int {
		for i, q := range []float64{0, -50, 100, -90, 900, -20, 25, -75, 300, 10, -10, 50, 200, -30, 20, 5, -5, 1000, -95, 2, -2, 500, 1, -1, -80, 2000, -99, 5000} {
			if p == q {
				return i
			}
		}
		return 99
	}
	sort.SliceStable(in, func(i, j int) bool { return rank(in[i]) < rank(in[j]) })
	type span struct{ a, b float64 }
	var placed []span
	var out []float64
	for _, p := range in {
		cx := x(1 + p/100)
		w := textExtent(tickPct(p), fontTick, false)
		s := span{cx - w/2 - 6, cx + w/2 + 6}
		ok := true
		for _, q := range placed {
			ok = ok && (s.b < q.a || s.a > q.b)
		}
		if ok {
			placed = append(placed, s)
			out = append(out, p)
		}
	}
	sort.Float64s(out)
	return out
}

func tickPct(p float64) string {
	if p == 0 {
		return "0"
	}
	return fmt.Sprintf("%+g%%", p)
}

// changeChart is the forest plot: per metric, workload and non-baseline
// group, the change against the baseline as a point with its interval
// (at the comparison's level), on a log-ratio axis (halving and doubling equally far from
// the zero line), over the baseline's own run-to-run spread shaded.
func changeChart(c *compare.Comparison, id string, w float64) *svgDoc {
	secs, iopsAlike := changeSections(c)
	d := &svgDoc{id: id, w: w, kind: "change"}
	base := c.Groups[0].Name
	d.title = "Change against " + base
	sub := "Each point is a column's change against the baseline (Hodges–Lehmann) with its " + compare.LevelText(c.CILevel) + " interval; the shaded band is the baseline's own run-to-run spread (min–max). " +
		"Filled: a real change (Mann–Whitney, Benjamini–Hochberg corrected, interval clear of zero); hollow grey: no significant difference or too few runs to judge."
	if iopsAlike {
		sub += " IOPS change exactly as MB/s (same block sizes): not drawn twice."
	}
	y := d.heading(d.title, sub)
	if len(secs) == 0 {
		d.text(10, y+4, "start", "muted", "nothing to compare: every row is in one column only")
		d.h = y + 20
		d.desc = "No row is measured in two columns."
		return d
	}
	single := len(c.Groups) == 2
	labelW, rightW := 0.0, 0.0
	for _, s := range secs {
		for _, es := range s.rows {
			labelW = math.Max(labelW, textExtent(es[0].row, fontBase, true))
			for _, e := range es {
				if !single {
					labelW = math.Max(labelW, textExtent(e.group, fontBase, false)+14)
				}
				t, _ := changeWords(e.v)
				rightW = math.Max(rightW, textExtent(t, fontBase, false))
			}
		}
	}
	labelW = math.Min(labelW+22, w*0.3)
	rightW = math.Min(rightW+16, w*0.34)
	x0, x1 := labelW, w-rightW-6
	lo, hi := ratioDomain(secs)
	x := func(r float64) float64 {
		r = math.Min(math.Max(r, lo), hi)
		return x0 + (math.Log(r)-math.Log(lo))/(math.Log(hi)-math.Log(lo))*(x1-x0)
	}
	ticks := changeTicks(lo, hi, x)
	const lineH = 22.0
	var desc []string
	for _, s := range secs {
		y += 8
		d.text(10, y+4, "start", "head", metricTitle(s.metric))
		y += 14
		top := y
		// Grid and zero line first, points over them.
		var body strings.Builder
		inner := &svgDoc{w: w}
		for _, es := range s.rows {
			if !single {
				inner.text(10, y+lineH/2+4.5, "start", "head", fitText(es[0].row, fontBase, true, labelW-14))
				y += lineH
			}
			n := float64(len(es))
			// The baseline's spread, behind the row's points.
			if b := es[0].base; b.Median > 0 && len(b.Values) > 1 {
				bx0, bx1 := x(b.Min/b.Median), x(b.Max/b.Median)
				inner.f(`<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`+"\n",
					bx0, y+2, math.Max(bx1-bx0, 1), n*lineH-4, esc(fmt.Sprintf("%s: %s run-to-run spread %s to %s", es[0].row, base, pct((b.Min/b.Median-1)*100), pct((b.Max/b.Median-1)*100))))
			}
			for _, e := range es {
				cy := y + lineH/2
				label := e.group
				if single {
					label = e.row
				}
				cls := ""
				if single {
					cls = "head"
				}
				among := groupNames(c)
				if single {
					among = nil
				}
				inner.text(labelW-10, cy+4.5, "end", cls, fitAmong(label, among, fontBase, single, labelW-20))
				pc := pointClass(e.v)
				if e.v.CILowPct != nil && e.v.CIHighPct != nil {
					cl, ch := x(1+*e.v.CILowPct/100), x(1+*e.v.CIHighPct/100)
					inner.f(`<path class="ci %s" d="M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fV%.1f"/>`+"\n", pc, cl, cy-5, cy+5, cl, cy, ch, ch, cy-5, cy+5)
				}
				words, wcls := changeWords(e.v)
				if e.v.ChangePct != nil {
					px := x(1 + *e.v.ChangePct/100)
					tip := esc(fmt.Sprintf("%s, %s, %s: %s", e.row, e.group, s.metric, changeText(e.v)))
					if pc == "unstable" {
						inner.f(`<rect class="pt unstable" x="%.1f" y="%.1f" width="10" height="10"><title>%s</title></rect>`+"\n", px-5, cy-5, tip)
					} else if pc == "toofew" {
						inner.f(`<polygon class="pt toofew" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"><title>%s</title></polygon>`+"\n", px, cy-6, px+6, cy, px, cy+6, px-6, cy, tip)
					} else {
						inner.f(`<circle class="pt %s" cx="%.1f" cy="%.1f" r="5.5"><title>%s</title></circle>`+"\n", pc, px, cy, tip)
					}
				}
				inner.text(x1+10, cy+4.5, "start", wcls, fitText(words, fontBase, false, w-x1-14))
				desc = append(desc, fmt.Sprintf("%s %s %s: %s", e.row, e.group, s.metric, changeText(e.v)))
				y += lineH
			}
		}
		for _, p := range ticks {
			if p != 0 {
				px := x(1 + p/100)
				body.WriteString(fmt.Sprintf(`<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", px, top, px, y))
			}
		}
		d.b.WriteString(body.String())
		d.b.WriteString(inner.b.String())
		// The zero line over the noise bands, which would hide it.
		d.line("zero", x(1), top, x(1), y)
		d.line("axis", x0, y, x1, y)
		for _, p := range ticks {
			d.text(x(1+p/100), y+15, "middle", "tick", tickPct(p))
		}
		y += 20
	}
	y += 6
	// Wrapped, not cut: a caption that ends "are equall…" says nothing.
	for _, l := range wrapPx("change against "+base+", log scale (−50% and +100% are equally far from 0)", fontTick, w-x0-10) {
		d.text(x0, y+4, "start", "muted", l)
		y += 16
	}
	y += 2
	y = changeLegend(d, y, c.Drifted > 0)
	d.h = y + 6
	d.desc = strings.Join(desc, "; ") + "."
	return d
}

func metricTitle(metric string) string {
	switch metric {
	case compare.MetricMBps:
		return "Throughput (MB/s): right is better"
	case compare.MetricIOPS:
		return "IOPS: right is better"
	case compare.MetricHostCPU:
		return "Host CPU per I/O: left is better"
	}
	return "p99 latency: left is better"
}

// changeLegend explains the marks, wrapped to the chart's width.
func changeLegend(d *svgDoc, y float64, unstable bool) float64 {
	items := []struct{ cls, text string }{
		{"better", "better (p<0.05)"}, {"worse", "worse (p<0.05)"}, {"same", "no significant difference"},
		{"toofew", "too few runs to judge"}, {"band", "baseline's run-to-run spread"},
	}
	if unstable {
		items = append(items, struct{ cls, text string }{"unstable", "unstable: drifted during its runs"})
	}
	x := 10.0
	y += 6
	for _, it := range items {
		wd := 22 + textExtent(it.text, fontTick, false) + 16
		if x > 10 && x+wd > d.w-10 {
			x, y = 10, y+20
		}
		switch it.cls {
		case "band":
			d.f(`<rect class="band" x="%.1f" y="%.1f" width="14" height="12"/>`+"\n", x, y-6)
		case "toofew":
			d.f(`<polygon class="pt toofew" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`+"\n", x+7, y-6, x+13, y, x+7, y+6, x+1, y)
		case "unstable":
			d.f(`<rect class="pt unstable" x="%.1f" y="%.1f" width="10" height="10"/>`+"\n", x+2, y-5)
		default:
			d.f(`<circle class="pt %s" cx="%.1f" cy="%.1f" r="5.5"/>`+"\n", it.cls, x+7, y)
		}
		d.text(x+22, y+4, "start", "tick", it.text)
		x += wd
	}
	return y + 12
}
