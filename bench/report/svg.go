package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
)

// theme is the colours of one colour scheme. The charts use plain colours,
// not CSS custom properties, so that SVG renderers outside browsers (image
// viewers, librsvg, converters) draw them too; dark mode is a media query.
type theme struct {
	bg, fg, muted, grid string
	series              [6]string
}

var (
	light = theme{bg: "#ffffff", fg: "#1b1d21", muted: "#5b616b", grid: "#d9dce1",
		series: [6]string{"#1f6fb5", "#c45200", "#14866d", "#6b5fb5", "#c2255c", "#5c7f13"}}
	dark = theme{bg: "#16181c", fg: "#e6e8eb", muted: "#a3a9b3", grid: "#3a3f47",
		series: [6]string{"#6cb4f0", "#ff9b52", "#4fd1a5", "#b3a9ff", "#ff7ab0", "#a8d65a"}}
)

// palette defines the page's colours as custom properties for the HTML
// around the charts (browsers only).
var palette = fmt.Sprintf(":root{--bg:%s;--fg:%s;--muted:%s;--grid:%s}\n@media (prefers-color-scheme: dark){:root{--bg:%s;--fg:%s;--muted:%s;--grid:%s}}\n",
	light.bg, light.fg, light.muted, light.grid, dark.bg, dark.fg, dark.muted, dark.grid)

func (t theme) css() string {
	var b strings.Builder
	fmt.Fprintf(&b, "svg.chart .bg{fill:%s}\n", t.bg)
	fmt.Fprintf(&b, "svg.chart text{fill:%s}\n", t.fg)
	fmt.Fprintf(&b, "svg.chart text.muted{fill:%s}\n", t.muted)
	fmt.Fprintf(&b, "svg.chart .axis{stroke:%s}\n", t.muted)
	fmt.Fprintf(&b, "svg.chart .grid{stroke:%s}\n", t.grid)
	fmt.Fprintf(&b, "svg.chart .range{stroke:%s}\n", t.fg)
	for i, c := range t.series {
		fmt.Fprintf(&b, "svg.chart .s%d{fill:%s;stroke:%s}\n", i, c, c)
	}
	return b.String()
}

var chartCSS = `svg.chart{max-width:100%;height:auto}
svg.chart text{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:12px}
svg.chart text.head{font-weight:600}
svg.chart text.ttl{font-size:14px;font-weight:600}
svg.chart .axis{stroke-width:1}
svg.chart .grid{stroke-width:1}
svg.chart .range{stroke-width:1.5}
` + light.css() + "@media (prefers-color-scheme: dark){\n" + dark.css() + "}\n" + `svg.chart .bar{stroke:none}
svg.chart .line{fill:none;stroke-width:2}
svg.chart .pt{stroke:none}
`

var dashes = []string{"", "6 3", "2 3", "8 3 2 3", "1 2", "12 4"}

func esc(s string) string { return html.EscapeString(s) }

func series(gi int) string { return fmt.Sprintf("s%d", gi%6) }

// svgDoc collects the elements of one chart.
type svgDoc struct {
	b         strings.Builder
	id        string
	w, h      float64
	kind, row string
}

func (d *svgDoc) f(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// text writes a text element; anchor is start, middle or end.
func (d *svgDoc) text(x, y float64, anchor, class, s string) {
	cls := ""
	if class != "" {
		cls = ` class="` + class + `"`
	}
	d.f(`<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, cls, esc(s))
}

// finish wraps the collected elements in an <svg> with a title and a
// description for screen readers. standalone adds the namespace and styles
// a lone .svg file needs.
func (d *svgDoc) finish(title, desc string, standalone bool) string {
	var out strings.Builder
	attrs := ""
	if standalone {
		attrs = ` xmlns="http://www.w3.org/2000/svg"`
	}
	row := ""
	if d.row != "" {
		row = ` data-row="` + esc(d.row) + `"`
	}
	fmt.Fprintf(&out, `<svg%s class="chart" role="img" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" aria-labelledby="%s-t %s-d" data-chart="%s"%s>`+"\n",
		attrs, d.w, d.h, d.w, d.h, d.id, d.id, d.kind, row)
	fmt.Fprintf(&out, `<title id="%s-t">%s</title>`+"\n"+`<desc id="%s-d">%s</desc>`+"\n", d.id, esc(title), d.id, esc(desc))
	if standalone {
		out.WriteString("<style>\n" + chartCSS + "</style>\n")
		fmt.Fprintf(&out, `<rect class="bg" width="%.0f" height="%.0f"/>`+"\n", d.w, d.h)
	}
	out.WriteString(d.b.String())
	out.WriteString("</svg>\n")
	return out.String()
}

const (
	chartW  = 820.0
	labelW  = 210.0 // left column: row and group names
	valueW  = 150.0 // right of the longest bar: its value text
	barH    = 16.0
	barGap  = 4.0
	rowGap  = 14.0
	headH   = 18.0
	topH    = 46.0
	bottomH = 40.0
)

// barChart draws metric mi of every row as horizontal bars, one per group,
// labelled with the group name and the value; whiskers show min–max.
func barChart(c *compare.Comparison, mi int, id string, standalone bool) string {
	metric := c.Metrics[mi]
	maxV := 0.0
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			if cell.Present {
				maxV = math.Max(maxV, cell.Metrics[mi].Max)
			}
		}
	}
	if maxV <= 0 {
		maxV = 1
	}
	ng := float64(len(c.Groups))
	rowH := headH + ng*(barH+barGap) + rowGap
	d := &svgDoc{id: id, w: chartW, h: topH + float64(len(c.Rows))*rowH + bottomH, kind: "bars-" + slug(metric)}
	plotW := chartW - labelW - valueW
	scale := func(v float64) float64 { return v / maxV * plotW }
	d.text(10, 20, "start", "ttl", chartTitle(metric))
	d.text(10, 36, "start", "muted", "median of the repetitions; the thin line spans min–max; longer is "+betterWord(metric))
	y := topH
	for _, r := range c.Rows {
		d.text(10, y+13, "start", "head", r.Name)
		y += headH
		for gi, cell := range r.Cells {
			g := c.Groups[gi].Name
			d.text(labelW-8, y+12, "end", "", g)
			if !cell.Present {
				d.text(labelW+4, y+12, "start", "muted", "not measured")
				y += barH + barGap
				continue
			}
			v := cell.Metrics[mi]
			wv := math.Max(scale(v.Median), 1)
			d.f(`<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.0f"><title>%s</title></rect>`+"\n",
				series(gi), labelW, y, wv, barH, esc(fmt.Sprintf("%s, %s: %s %s, %s", r.Name, g, valueText(metric, v), metric, nText(len(v.Values)))))
			if len(v.Values) > 1 {
				cy := y + barH/2
				d.f(`<line class="range" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", labelW+scale(v.Min), cy, labelW+scale(v.Max), cy)
			}
			label := metricValue(metric, v.Median)
			if gi > 0 && v.Verdict != compare.VerdictTooFew {
				label += "  " + shortChange(v)
			}
			d.text(labelW+math.Max(wv, scale(v.Max))+6, y+12, "start", "", label)
			y += barH + barGap
		}
		y += rowGap
	}
	d.f(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", labelW, topH, labelW, y-rowGap)
	d.text(labelW, y+14, "start", "muted", "0")
	d.text(labelW+plotW, y+14, "end", "muted", metricValue(metric, maxV)+" "+metricUnit(metric))
	return d.finish(chartTitle(metric)+" per workload: "+title(c), barDesc(c, mi), standalone)
}

func nText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

func shortChange(v compare.Value) string {
	switch v.Verdict {
	case compare.VerdictSame:
		return "(no significant difference)"
	case compare.VerdictSignificant:
		if v.ChangePct != nil {
			w := "worse"
			if v.Better {
				w = "better"
			}
			return "(" + pct(*v.ChangePct) + " " + w + ")"
		}
	}
	return ""
}

func betterWord(metric string) string {
	if compare.LowerIsBetter(metric) {
		return "worse"
	}
	return "better"
}

func metricUnit(metric string) string {
	if metric == compare.MetricLatP99 {
		return "p99"
	}
	return metric
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

// barDesc spells out every bar for readers who cannot see the chart.
func barDesc(c *compare.Comparison, mi int) string {
	var parts []string
	for _, r := range c.Rows {
		var gs []string
		for gi, cell := range r.Cells {
			if cell.Present {
				gs = append(gs, c.Groups[gi].Name+" "+metricValue(c.Metrics[mi], cell.Metrics[mi].Median))
			}
		}
		parts = append(parts, r.Name+": "+strings.Join(gs, ", "))
	}
	return c.Metrics[mi] + " medians. " + strings.Join(parts, "; ") + "."
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

var percentileNames = [4]string{"p50", "p90", "p99", "p99.9"}

// latencyChart draws one row's latency percentiles per group on a log
// scale (they span decades), each bar labelled with its value.
func latencyChart(c *compare.Comparison, r compare.Row, id string) string {
	lo, hi := math.Inf(1), 0.0
	for _, cell := range r.Cells {
		for _, v := range cell.LatencyNS {
			if cell.Present && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	ng := float64(len(c.Groups))
	rowH := headH + ng*(barH+barGap) + 6
	d := &svgDoc{id: id, w: chartW, h: topH + 4*rowH + bottomH, kind: "latency", row: r.Name}
	ttl := "Completion latency percentiles: " + r.Name
	d.text(10, 20, "start", "ttl", ttl)
	d.text(10, 36, "start", "muted", "median over repetitions, logarithmic scale; shorter is better")
	if hi == 0 {
		d.text(10, topH+14, "start", "muted", "no latency percentiles recorded")
		d.h = topH + 30
		return d.finish(ttl, "No latency percentiles were recorded for "+r.Name+".", false)
	}
	llo, lhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if lhi <= llo {
		lhi = llo + 1
	}
	plotW := chartW - labelW - valueW
	x := func(v float64) float64 { return labelW + (math.Log10(v)-llo)/(lhi-llo)*plotW }
	plotTop, plotBottom := topH, topH+4*rowH
	for e := llo; e <= lhi; e++ {
		px := x(math.Pow(10, e))
		d.f(`<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", px, plotTop, px, plotBottom)
		d.text(px, plotBottom+14, "middle", "muted", tickLatency(math.Pow(10, e)))
	}
	var desc []string
	y := topH
	for pi, pn := range percentileNames {
		d.text(10, y+13, "start", "head", pn)
		y += headH
		for gi, cell := range r.Cells {
			g := c.Groups[gi].Name
			d.text(labelW-8, y+12, "end", "", g)
			v := cell.LatencyNS[pi]
			if !cell.Present || v <= 0 {
				d.text(labelW+4, y+12, "start", "muted", "-")
				y += barH + barGap
				continue
			}
			w := math.Max(x(v)-labelW, 1)
			d.f(`<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.0f"><title>%s</title></rect>`+"\n",
				series(gi), labelW, y, w, barH, esc(fmt.Sprintf("%s %s, %s: %s", r.Name, pn, g, latency(v))))
			d.text(labelW+w+6, y+12, "start", "", latency(v))
			desc = append(desc, fmt.Sprintf("%s %s %s", pn, g, latency(v)))
			y += barH + barGap
		}
		y += 6
	}
	return d.finish(ttl, strings.Join(desc, ", ")+".", false)
}

// run is one repetition's per-second throughput of one row.
type run struct {
	group  int
	label  string
	points []float64 // MB/s per second
}

func runsOf(c *compare.Comparison, row string) []run {
	var out []run
	for gi, g := range c.Groups {
		for _, rec := range g.Records {
			for _, wr := range rec.Workloads {
				for _, dir := range []string{"read", "write"} {
					if s, ok := wr.Summary[dir]; !ok || s.Name != row {
						continue
					}
					for _, rep := range wr.Runs {
						dr := rep.Dir(dir)
						if dr == nil || len(dr.Samples) == 0 {
							continue
						}
						out = append(out, run{group: gi, label: runLabel(g, rec, rep), points: samplesMBps(dr.Samples)})
					}
				}
			}
		}
	}
	return out
}

func runLabel(g compare.Group, rec *record.Record, rep record.Repetition) string {
	if len(g.Records) > 1 {
		id := rec.ID
		if len(id) > 8 {
			id = id[len(id)-4:]
		}
		return fmt.Sprintf("%s %s #%d", g.Name, id, rep.Index)
	}
	return fmt.Sprintf("%s #%d", g.Name, rep.Index)
}

func samplesMBps(samples []record.Sample) []float64 {
	out := make([]float64, len(samples))
	for i, s := range samples {
		out[i] = float64(s.Bytes) / 1e6
	}
	return out
}

// timeSeriesChart draws every repetition's MB/s second by second, so a
// slow first write or a drive that throttles shows as a shape, not as a
// lower average. Series differ by colour, dash pattern and end label.
func timeSeriesChart(c *compare.Comparison, r compare.Row, id string) string {
	runs := runsOf(c, r.Name)
	const plotL, plotR = 70.0, 150.0
	legendH := 18.0 * float64(len(c.Groups))
	plotTop := topH + legendH + 6
	plotH := 220.0
	d := &svgDoc{id: id, w: chartW, h: plotTop + plotH + bottomH, kind: "timeseries", row: r.Name}
	ttl := "Throughput over time: " + r.Name
	d.text(10, 20, "start", "ttl", ttl)
	d.text(10, 36, "start", "muted", "MB/s in each second of each repetition")
	if len(runs) == 0 {
		d.text(10, topH+14, "start", "muted", "no per-second samples recorded (imported or trimmed records)")
		d.h = topH + 30
		return d.finish(ttl, "No per-second samples were recorded for "+r.Name+".", false)
	}
	maxT, maxV := 1, 0.0
	for _, rn := range runs {
		maxT = max(maxT, len(rn.points))
		for _, v := range rn.points {
			maxV = math.Max(maxV, v)
		}
	}
	if maxV <= 0 {
		maxV = 1
	}
	step := niceStep(maxV / 4)
	maxV = math.Ceil(maxV*1.05/step) * step
	for gi, g := range c.Groups {
		ly := topH + 18*float64(gi) + 8
		d.f(`<line class="line %s" x1="10" y1="%.1f" x2="40" y2="%.1f" stroke-dasharray="%s"/>`+"\n", series(gi), ly, ly, dashes[gi%len(dashes)])
		marker(d, gi, 25, ly)
		d.text(46, ly+4, "start", "", g.Name)
	}
	plotW := chartW - plotL - plotR
	x := func(t float64) float64 { return plotL + t/float64(maxT)*plotW }
	y := func(v float64) float64 { return plotTop + plotH - v/maxV*plotH }
	for v := 0.0; v <= maxV+step/2; v += step {
		d.f(`<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", plotL, y(v), plotL+plotW, y(v))
		d.text(plotL-6, y(v)+4, "end", "muted", num(v))
	}
	d.f(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", plotL, plotTop+plotH, plotL+plotW, plotTop+plotH)
	for i, t := range []int{0, maxT / 2, maxT} {
		if i == 0 || t != 0 && t != maxT || i == 2 {
			d.text(x(float64(t)), plotTop+plotH+14, "middle", "muted", fmt.Sprintf("%d s", t))
		}
	}
	var desc []string
	// One end label per group (on its last run): a label per repetition
	// would pile up where the lines end together.
	labelled := map[int]run{}
	for _, rn := range runs {
		var pts []string
		for i, v := range rn.points {
			// Each sample covers second i..i+1: plot it at the middle.
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i)+0.5), y(v)))
		}
		d.f(`<polyline class="line %s" stroke-dasharray="%s" points="%s"><title>%s</title></polyline>`+"\n",
			series(rn.group), dashes[rn.group%len(dashes)], strings.Join(pts, " "), esc(rn.label+": "+joinNums(rn.points)+" MB/s"))
		if len(rn.points) <= maxMarkers {
			// Markers keep a short run (one second is a single point, which
			// a line cannot show) visible; their shape tells groups apart.
			for i, v := range rn.points {
				marker(d, rn.group, x(float64(i)+0.5), y(v))
			}
		}
		labelled[rn.group] = rn
		desc = append(desc, rn.label+": "+joinNums(rn.points))
	}
	// End labels, pushed apart vertically where lines end close together.
	type endLabel struct {
		x, y float64
		name string
	}
	var ends []endLabel
	for gi := range c.Groups {
		if rn, ok := labelled[gi]; ok {
			last := rn.points[len(rn.points)-1]
			ends = append(ends, endLabel{x(float64(len(rn.points))-0.5) + 8, y(last) + 4, c.Groups[gi].Name})
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].y < ends[j].y })
	for i := 1; i < len(ends); i++ {
		if ends[i].y-ends[i-1].y < 13 && math.Abs(ends[i].x-ends[i-1].x) < 60 {
			ends[i].y = ends[i-1].y + 13
		}
	}
	for _, l := range ends {
		d.text(l.x, l.y, "start", "", l.name)
	}
	return d.finish(ttl, "MB/s per second. "+strings.Join(desc, "; ")+".", false)
}

// maxMarkers is the longest run that gets a marker on every second.
const maxMarkers = 120

// marker draws a point in its group's colour and shape: circle, square,
// triangle, diamond, in turn.
func marker(d *svgDoc, group int, cx, cy float64) {
	cls := "pt " + series(group)
	switch group % 4 {
	case 0:
		d.f(`<circle class="%s" cx="%.1f" cy="%.1f" r="3.5"/>`+"\n", cls, cx, cy)
	case 1:
		d.f(`<rect class="%s" x="%.1f" y="%.1f" width="7" height="7"/>`+"\n", cls, cx-3.5, cy-3.5)
	case 2:
		d.f(`<polygon class="%s" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`+"\n", cls, cx, cy-4.5, cx+4.5, cy+3.5, cx-4.5, cy+3.5)
	default:
		d.f(`<polygon class="%s" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`+"\n", cls, cx, cy-4.5, cx+4.5, cy, cx, cy+4.5, cx-4.5, cy)
	}
}

// niceStep rounds a raw axis step up to 1, 2 or 5 times a power of ten,
// so grid lines fall on numbers people read at a glance.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// tickLatency is latency() without trailing zeros: 1 ms, 10 ms, 100 µs.
func tickLatency(ns float64) string {
	l := latency(ns)
	n, unit, _ := strings.Cut(l, " ")
	if strings.Contains(n, ".") {
		n = strings.TrimRight(strings.TrimRight(n, "0"), ".")
	}
	return n + " " + unit
}

func joinNums(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = num(v)
	}
	return strings.Join(s, ", ")
}

// SVG writes the main chart alone (throughput bars per workload and group)
// as a standalone SVG file.
func SVG(w io.Writer, c *compare.Comparison) error {
	_, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+barChart(c, 0, "mbps", true))
	return err
}
