package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
)

var percentileNames = [4]string{"p50", "p90", "p99", "p99.9"}

// percentileNines places p50, p90, p99 and p99.9 on an axis of nines
// (-log10(1-p)): the tail's steps equally apart, as latency plots do.
var percentileNines = [4]float64{math.Log10(2), 1, 2, 3}

// endLabels writes each series' name at the right of its last point,
// moved apart where lines end close together, with a leader line to the
// point when moved; names are fitted into the margin right of x.
func endLabels(d *svgDoc, x float64, ys, xs []float64, names []string, styles []int, lo, hi float64) {
	at := spreadLabels(ys, 15, lo, hi)
	for i, n := range names {
		if xs != nil && xs[i] < x-12 {
			// A line that ends early (a 2 s run beside a 10 min one) is
			// led to its label, so the label sits at its line.
			d.f(`<path class="lead %s" stroke-dasharray="1 3" d="M%.1f %.1fH%.1f"/>`+"\n", series(styles[i]), xs[i]+6, ys[i], x)
		}
		if math.Abs(at[i]-ys[i]) > 3 {
			d.f(`<path class="lead %s" d="M%.1f %.1fL%.1f %.1f"/>`+"\n", series(styles[i]), x+1, ys[i], x+8, at[i])
		}
		d.text(x+10, at[i]+4.5, "start", "", fitAmong(n, names, fontBase, false, d.w-x-14))
	}
}

// endMargin is the room end labels take: the longest name, at most a
// third of the chart.
func endMargin(names []string, w float64) float64 {
	m := 0.0
	for _, n := range names {
		m = math.Max(m, textExtent(n, fontBase, false))
	}
	return math.Min(m+22, w/3)
}

// latencyCurves draws one row's latency percentiles p50…p99.9 per group as
// curves on a log scale: the tail shows as a rising line.
func latencyCurves(c *compare.Comparison, r compare.Row, id string, w float64) *svgDoc {
	d := &svgDoc{id: id, w: w, kind: "latency", row: r.Name}
	d.title = "Latency percentiles: " + r.Name
	y := d.heading(d.title, "completion latency, median over the repetitions; logarithmic scale; lower is better")
	lo, hi := math.Inf(1), 0.0
	var names []string
	var groups []int
	for gi, cell := range r.Cells {
		if !cell.Present || cell.LatencyNS[0] <= 0 {
			continue
		}
		names = append(names, c.Groups[gi].Name)
		groups = append(groups, gi)
		for _, v := range cell.LatencyNS {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if len(groups) == 0 {
		d.text(10, y+4, "start", "muted", "no latency percentiles recorded")
		d.h = y + 20
		d.desc = "No latency percentiles were recorded for " + r.Name + "."
		return d
	}
	lo, hi = lo/1.25, hi*1.25
	ticks := logTicks(lo, hi)
	for len(ticks) < 2 {
		lo, hi = lo/3, hi*3
		ticks = logTicks(lo, hi)
	}
	tickW := 0.0
	for _, t := range ticks {
		tickW = math.Max(tickW, textExtent(tickLatency(t), fontTick, false))
	}
	if len(names) > maxLabelled {
		y = legend(d, names, groups, y)
	}
	x0 := tickW + 18
	x1 := w - 14
	if len(names) <= maxLabelled {
		x1 = w - endMargin(names, w) - 4
	}
	plotTop, plotH := y+8, 200.0
	yv := func(v float64) float64 {
		return plotTop + plotH - (math.Log(v)-math.Log(lo))/(math.Log(hi)-math.Log(lo))*plotH
	}
	xp := func(i int) float64 { return x0 + 12 + percentileNines[i]/3*(x1-x0-24) }
	for _, t := range ticks {
		d.line("grid", x0, yv(t), x1, yv(t))
		d.text(x0-6, yv(t)+4, "end", "tick", tickLatency(t))
	}
	d.line("axis", x0, plotTop+plotH, x1, plotTop+plotH)
	d.line("axis", x0, plotTop, x0, plotTop+plotH)
	for i, n := range percentileNames {
		d.text(xp(i), plotTop+plotH+16, "middle", "tick", n)
	}
	var ends []float64
	var desc []string
	for _, gi := range groups {
		cell := r.Cells[gi]
		var pts []string
		last := 0.0
		for i, v := range cell.LatencyNS {
			if v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xp(i), yv(v)))
				last = yv(v)
			}
		}
		d.f(`<polyline class="line %s" stroke-dasharray="%s" points="%s"/>`+"\n", series(gi), dashOf(gi), strings.Join(pts, " "))
		var vals []string
		for i, v := range cell.LatencyNS {
			if v > 0 {
				marker(d, gi, xp(i), yv(v))
				vals = append(vals, percentileNames[i]+" "+latency(v))
			}
		}
		ends = append(ends, last)
		desc = append(desc, c.Groups[gi].Name+": "+strings.Join(vals, ", "))
	}
	if len(names) <= maxLabelled {
		endLabels(d, x1, ends, nil, names, groups, plotTop+4, plotTop+plotH+4)
	}
	d.h = plotTop + plotH + 30
	d.desc = r.Name + " latency percentiles. " + strings.Join(desc, "; ") + "."
	return d
}

// tsSeries is one line of a time series chart: per repetition, a value
// per second; group is the index of its column, which picks its style
// (styleOf), the same in every chart.
type tsSeries struct {
	name  string
	group int
	reps  [][]float64
}

// tsMaxPoints bounds the points of a line: a 10-minute run is drawn as
// buckets of several seconds (their mean, the band their min–max), so
// lines stay lines and not a solid smear.
const tsMaxPoints = 150

// bucketed reduces a series' repetitions to the per-bucket mean of the
// per-second median across repetitions, and the min and max of every value
// in the bucket.
func bucketed(reps [][]float64, bucket int) (mid, lo, hi []float64) {
	n := 0
	for _, r := range reps {
		n = max(n, len(r))
	}
	for start := 0; start < n; start += bucket {
		var sum float64
		cnt := 0
		l, h := math.Inf(1), math.Inf(-1)
		for s := start; s < min(start+bucket, n); s++ {
			var at []float64
			for _, r := range reps {
				if s < len(r) {
					at = append(at, r[s])
					l, h = math.Min(l, r[s]), math.Max(h, r[s])
				}
			}
			if len(at) > 0 {
				sum += record.Median(at)
				cnt++
			}
		}
		if cnt > 0 {
			mid, lo, hi = append(mid, sum/float64(cnt)), append(lo, l), append(hi, h)
		}
	}
	return mid, lo, hi
}

// timeStep is a tick step for an axis of total seconds.
func timeStep(total float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		if total/s <= 6 {
			return s
		}
	}
	return 7200
}

func timeTick(s float64) string {
	if s >= 120 && math.Mod(s, 60) == 0 {
		return fmt.Sprintf("%g min", s/60)
	}
	return fmt.Sprintf("%g s", s)
}

// timeSeries draws per-second series, one line per group: the median over
// the group's repetitions, with their spread shaded, bucketed on long runs.
func timeSeries(id, row string, w float64, title, sub, unit string, lines []tsSeries) *svgDoc {
	d := &svgDoc{id: id, w: w, kind: "timeseries", row: row, title: title}
	y := d.heading(title, sub)
	n := 0
	maxV := 0.0
	var names []string
	var styles []int
	for _, s := range lines {
		names, styles = append(names, s.name), append(styles, s.group)
		for _, r := range s.reps {
			n = max(n, len(r))
			for _, v := range r {
				maxV = math.Max(maxV, v)
			}
		}
	}
	if n == 0 {
		d.text(10, y+4, "start", "muted", "no per-second samples recorded (imported or trimmed records)")
		d.h = y + 20
		d.desc = "No per-second samples were recorded for " + row + "."
		return d
	}
	if len(lines) > maxLabelled {
		return timePanels(d, y, unit, lines, n, maxV)
	}
	// The lines are named at their ends too where the names fit the
	// margin; a name cut there would only mislead: the legend names it.
	labelled := endMargin(names, math.Inf(1)) <= w/3
	if len(lines) > 1 || !labelled {
		y = legend(d, names, styles, y)
	}
	hi := maxV * 1.05
	if strings.Contains(unit, "%") && maxV <= 100 {
		hi = math.Min(hi, 100) // a share: its axis ends at 100
	}
	ticks, top := linearTicks(hi, 4)
	tickW := 0.0
	for _, t := range ticks {
		tickW = math.Max(tickW, textExtent(axisNum(t, ticks[len(ticks)-1]), fontTick, false))
	}
	x0 := tickW + 18
	x1 := w - 14
	if labelled {
		x1 = w - endMargin(names, w) - 4
	}
	plotTop, plotH := y+10, 170.0
	bucket := max(1, int(math.Ceil(float64(n)/tsMaxPoints)))
	xt := func(t float64) float64 { return x0 + t/float64(n)*(x1-x0) }
	yv := func(v float64) float64 { return plotTop + plotH - v/top*plotH }
	for _, t := range ticks {
		d.line("grid", x0, yv(t), x1, yv(t))
		d.text(x0-6, yv(t)+4, "end", "tick", axisNum(t, ticks[len(ticks)-1]))
	}
	d.line("axis", x0, plotTop+plotH, x1, plotTop+plotH)
	timeTicks(d, n, xt, x1, plotTop+plotH+16)
	var ends, endXs []float64
	var desc []string
	for _, s := range lines {
		k := s.group
		mid, lo, hi := bucketed(s.reps, bucket)
		if len(mid) == 0 {
			ends, endXs = append(ends, plotTop+plotH), append(endXs, x1)
			continue
		}
		at := func(i int) float64 {
			end := math.Min(float64((i+1)*bucket), float64(n))
			return xt((float64(i*bucket) + end) / 2)
		}
		// Bands of many columns pile into a smear: drawn for a few only.
		if (len(s.reps) > 1 || bucket > 1) && len(lines) <= maxLabelled {
			var up, down []string
			for i := range mid {
				up = append(up, fmt.Sprintf("%.1f,%.1f", at(i), yv(hi[i])))
				down = append([]string{fmt.Sprintf("%.1f,%.1f", at(i), yv(lo[i]))}, down...)
			}
			d.f(`<polygon class="spread %s" points="%s"/>`+"\n", series(k), strings.Join(append(up, down...), " "))
		}
		var pts []string
		for i, v := range mid {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", at(i), yv(v)))
		}
		d.f(`<polyline class="line %s" stroke-dasharray="%s" points="%s"><title>%s</title></polyline>`+"\n",
			series(k), dashOf(k), strings.Join(pts, " "), esc(s.name+": "+joinNums(mid)+" "+unit))
		if len(mid) <= 40 {
			for i, v := range mid {
				marker(d, k, at(i), yv(v))
			}
		}
		ends, endXs = append(ends, yv(mid[len(mid)-1])), append(endXs, at(len(mid)-1))
		desc = append(desc, s.name+": "+joinNums(mid))
	}
	if labelled {
		endLabels(d, x1, ends, endXs, names, styles, plotTop+4, plotTop+plotH+4)
	}
	d.caption(x0, plotTop+plotH+18, w-x0-10, unit+" per second"+bucketNote(bucket))
	d.desc = unit + " per second. " + strings.Join(desc, "; ") + "."
	return d
}

// timeTicks writes the time axis' labels at y for a run of n seconds,
// each kept only when it clears the one before by 10 px; the last is
// drawn ending at the axis' end x1.
func timeTicks(d *svgDoc, n int, xt func(float64) float64, x1, y float64) {
	step := timeStep(float64(n))
	prevEnd := math.Inf(-1)
	for t := 0.0; t <= float64(n)+1e-9; t += step {
		anchor, lab := "middle", timeTick(t)
		ext := textExtent(lab, fontTick, false)
		a, b := xt(t)-ext/2, xt(t)+ext/2
		if b > x1+0.05 {
			anchor, a, b = "end", xt(t)-ext, xt(t)
		}
		if a < prevEnd+10 {
			continue
		}
		prevEnd = b
		d.text(xt(t), y, anchor, "tick", lab)
	}
}

// timePanels draws a time series of more columns than one chart keeps
// apart (maxLabelled) as small multiples: one panel per column, named
// above it with its colour, dash and marker, all on the same axes (the
// values at the left of each row, the time under the last panel of each
// column of panels), each with the other columns as thin grey lines
// behind its own, so that a panel reads alone and beside the others.
func timePanels(d *svgDoc, y float64, unit string, lines []tsSeries, n int, maxV float64) *svgDoc {
	w := d.w
	hi := maxV * 1.05
	// A share of all CPUs or of the device's time is at most 100%: a sum
	// that rounding puts a hair above must not stretch the axis to 150.
	if strings.Contains(unit, "%") && maxV <= 100.5 {
		hi = math.Min(hi, 100)
	}
	// The axis that ends closest above the values in at most 5 ticks: a
	// low panel has no room to waste, nor for more labels.
	ticks, vTop := linearTicks(hi, 3)
	for n := 4; n <= 5; n++ {
		if t, top := linearTicks(hi, n); top < vTop && len(t) <= 5 {
			ticks, vTop = t, top
		}
	}
	tickW := 0.0
	for _, t := range ticks {
		tickW = math.Max(tickW, textExtent(axisNum(t, ticks[len(ticks)-1]), fontTick, false))
	}
	cols := 2
	if w >= 700 {
		cols = 3
	}
	// A panel: its name, its plot, and room under it for the time axis'
	// labels (drawn under the last panel of each column only).
	const gap, nameH, plotH, underH = 28.0, 24.0, 72.0, 30.0
	x0 := tickW + 16
	pw := (w - x0 - 12 - gap*float64(cols-1)) / float64(cols)
	rows := (len(lines) + cols - 1) / cols
	bucket := max(1, int(math.Ceil(float64(n)/tsMaxPoints)))
	type drawn struct{ mid, lo, hi []float64 }
	all := make([]drawn, len(lines))
	for k, s := range lines {
		all[k].mid, all[k].lo, all[k].hi = bucketed(s.reps, bucket)
	}
	// at is the x of point i from a panel's left edge.
	at := func(i int) float64 {
		end := math.Min(float64((i+1)*bucket), float64(n))
		return (float64(i*bucket) + end) / 2 / float64(n) * pw
	}
	var desc []string
	names := make([]string, len(lines))
	for k, s := range lines {
		names[k] = s.name
	}
	for k, s := range lines {
		col, row := k%cols, k/cols
		px := x0 + float64(col)*(pw+gap)
		panelTop := y + 4 + float64(row)*(nameH+plotH+underH)
		plotTop := panelTop + nameH
		yv := func(v float64) float64 { return plotTop + plotH - v/vTop*plotH }
		d.f(`<g class="panel" data-column="%s">`+"\n", esc(s.name))
		// The panel's name after a key in its column's style, drawn as
		// a legend's entry is.
		d.f(`<line class="line %s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke-dasharray="%s"/>`+"\n", series(s.group), px, panelTop+8, px+30, panelTop+8, dashOf(s.group))
		marker(d, s.group, px+15, panelTop+8)
		d.text(px+36, panelTop+12.5, "start", "", fitAmong(s.name, names, fontBase, false, pw-36))
		for _, t := range ticks {
			d.line("grid", px, yv(t), px+pw, yv(t))
			if col == 0 {
				d.text(x0-6, yv(t)+4, "end", "tick", axisNum(t, ticks[len(ticks)-1]))
			}
		}
		d.line("axis", px, plotTop+plotH, px+pw, plotTop+plotH)
		if k+cols >= len(lines) {
			timeTicks(d, n, func(t float64) float64 { return px + t/float64(n)*pw }, px+pw, plotTop+plotH+16)
		}
		// The other columns, thin and grey, behind.
		var ctx strings.Builder
		for j, o := range all {
			if j == k || len(o.mid) == 0 {
				continue
			}
			for i, v := range o.mid {
				op := "L"
				if i == 0 {
					op = "M"
				}
				fmt.Fprintf(&ctx, "%s%.1f %.1f", op, px+at(i), yv(v))
			}
		}
		if ctx.Len() > 0 {
			d.f(`<path class="ctx" d="%s"/>`+"\n", ctx.String())
		}
		mine := all[k]
		if len(mine.mid) > 0 {
			if len(s.reps) > 1 || bucket > 1 {
				var up, down []string
				for i := range mine.mid {
					up = append(up, fmt.Sprintf("%.1f,%.1f", px+at(i), yv(mine.hi[i])))
					down = append([]string{fmt.Sprintf("%.1f,%.1f", px+at(i), yv(mine.lo[i]))}, down...)
				}
				d.f(`<polygon class="spread %s" points="%s"/>`+"\n", series(s.group), strings.Join(append(up, down...), " "))
			}
			var pts []string
			for i, v := range mine.mid {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px+at(i), yv(v)))
			}
			d.f(`<polyline class="line %s" stroke-dasharray="%s" points="%s"><title>%s</title></polyline>`+"\n",
				series(s.group), dashOf(s.group), strings.Join(pts, " "), esc(s.name+": "+joinNums(mine.mid)+" "+unit))
			if len(mine.mid) <= 40 {
				for i, v := range mine.mid {
					marker(d, s.group, px+at(i), yv(v))
				}
			}
			desc = append(desc, s.name+": "+joinNums(mine.mid))
		} else {
			d.text(px+pw/2, plotTop+plotH/2+4, "middle", "muted", "no samples")
			desc = append(desc, s.name+": no samples")
		}
		d.f("</g>\n")
	}
	d.caption(x0, y+4+float64(rows)*(nameH+plotH+underH)-8, w-x0-10,
		unit+" per second; one panel per column, all on the same axes; grey: the other columns"+bucketNote(bucket))
	d.desc = unit + " per second, one panel per column. " + strings.Join(desc, "; ") + "."
	return d
}

// maxLabelled is the most lines a chart labels at their ends (and shades
// the spread of): more end labels than that stack into a column far from
// their lines, so the legend alone names them.
const maxLabelled = 4

func bucketNote(bucket int) string {
	if bucket <= 1 {
		return "; the shaded band spans the repetitions"
	}
	return fmt.Sprintf("; each point is the mean of %d s, the shaded band their min–max over the repetitions", bucket)
}

// rowSeries extracts, per group, per repetition, a per-second value of a
// row: the engine's MB/s, or one of the host's or the device's series.
func rowSeries(c *compare.Comparison, r compare.Row, value func(rep record.Repetition, dir string) []float64) []tsSeries {
	var out []tsSeries
	for gi, cell := range r.Cells {
		if !cell.Present {
			continue
		}
		s := tsSeries{name: c.Groups[gi].Name, group: gi}
		for _, src := range cell.Sources {
			for _, rep := range src.Workload.Runs {
				if v := value(rep, src.Dir); len(v) > 0 {
					s.reps = append(s.reps, v)
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func engineMBps(rep record.Repetition, dir string) []float64 {
	dr := rep.Dir(dir)
	if dr == nil {
		return nil
	}
	out := make([]float64, len(dr.Samples))
	for i, s := range dr.Samples {
		out[i] = float64(s.Bytes) / 1e6
	}
	return out
}

func hostSeries(f func(record.HostSample) float64) func(record.Repetition, string) []float64 {
	return func(rep record.Repetition, _ string) []float64 {
		out := make([]float64, len(rep.HostSamples))
		for i, s := range rep.HostSamples {
			out[i] = f(s)
		}
		return out
	}
}

func deviceSeries(f func(record.DeviceSample) float64) func(record.Repetition, string) []float64 {
	return func(rep record.Repetition, _ string) []float64 {
		out := make([]float64, len(rep.DeviceSamples))
		for i, s := range rep.DeviceSamples {
			out[i] = f(s)
		}
		return out
	}
}

func hasSamples(lines []tsSeries) bool {
	for _, s := range lines {
		if len(s.reps) > 0 {
			return true
		}
	}
	return false
}

// rowTimeCharts are a row's per-second charts: the engine's MB/s, and
// where the records hold them the host's CPU and I/O wait and the
// device's utilisation.
func rowTimeCharts(c *compare.Comparison, r compare.Row, id string, w float64) []*svgDoc {
	out := []*svgDoc{timeSeries(id+"-mbps", r.Name, w, "Throughput over time: "+r.Name,
		"MB/s each second, the median over the repetitions of each column", "MB/s", rowSeries(c, r, engineMBps))}
	extra := []struct {
		key, title, sub, unit string
		f                     func(record.Repetition, string) []float64
	}{
		{"cpu", "Host CPU busy: " + r.Name, "user, system and steal, % of all CPUs, each second", "CPU %", hostSeries(record.HostSample.CPUBusyPct)},
		{"iowait", "I/O wait and steal: " + r.Name, "iowait + steal, % of all CPUs (steal: time the hypervisor took)", "%", hostSeries(func(s record.HostSample) float64 { return s.CPUIOWaitPct + s.CPUStealPct })},
		{"util", "Device utilisation: " + r.Name, "time the device had I/O in flight, as iostat's %util", "%util", deviceSeries(func(s record.DeviceSample) float64 { return s.UtilPercent })},
	}
	for _, e := range extra {
		if lines := rowSeries(c, r, e.f); hasSamples(lines) {
			out = append(out, timeSeries(id+"-"+e.key, r.Name, w, e.title, e.sub, e.unit, lines))
		}
	}
	return out
}

// caption writes text under a chart from y on, wrapped to width, and ends
// the drawing below it.
func (d *svgDoc) caption(x, y, width float64, text string) {
	for _, l := range wrapPx(text, fontTick, width) {
		y += 16
		d.text(x, y, "start", "muted", l)
	}
	d.h = y + 10
}
