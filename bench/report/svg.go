package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
)

// The charts are drawn here, by hand, as static SVG: no script, no
// external font or style, readable in light and dark mode, printable.
// A charting library was considered; the Go ones that render static SVG
// either draw with their own fonts and styles (gonum/plot: no dark mode,
// no CSS, a large dependency tree) or are unmaintained (go-chart), and the
// rest render with JavaScript. What these charts need (text placed by
// font metrics so that nothing is cut, a log scale, small multiples) is a
// few hundred lines.

// theme is the colours of one colour scheme. The charts use plain colours,
// not CSS custom properties, so that SVG renderers outside browsers (image
// viewers, librsvg, converters) draw them too; dark mode is a media query.
// The series colours are Okabe and Ito's palette for colour-blind readers
// (blue, vermillion, bluish green, reddish purple, orange, sky blue, black,
// a yellow dark enough for white paper); lines also differ by dash pattern
// and points by shape.
type theme struct {
	bg, fg, muted, grid, band string
	better, worse, same       string
	series                    [8]string
}

var (
	light = theme{bg: "#ffffff", fg: "#1b1d21", muted: "#5b616b", grid: "#d9dce1", band: "#e8eaee",
		better: "#0072b2", worse: "#d55e00", same: "#7a7f87",
		series: [8]string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#1b1d21", "#9a8700"}}
	dark = theme{bg: "#16181c", fg: "#e6e8eb", muted: "#a3a9b3", grid: "#3a3f47", band: "#2a2e35",
		better: "#56b4e9", worse: "#ff8c42", same: "#9aa0a8",
		series: [8]string{"#56b4e9", "#ff8c42", "#2fc59a", "#e08fc0", "#f0b429", "#9bd3f5", "#e6e8eb", "#f0e442"}}
)

// palette defines the page's colours as custom properties for the HTML
// around the charts (browsers only).
var palette = fmt.Sprintf(":root{--bg:%s;--fg:%s;--muted:%s;--grid:%s}\n@media screen and (prefers-color-scheme: dark){:root{--bg:%s;--fg:%s;--muted:%s;--grid:%s}}\n",
	light.bg, light.fg, light.muted, light.grid, dark.bg, dark.fg, dark.muted, dark.grid)

func (t theme) css() string {
	var b strings.Builder
	fmt.Fprintf(&b, "svg.chart .bg{fill:%s}\n", t.bg)
	fmt.Fprintf(&b, "svg.chart text{fill:%s}\n", t.fg)
	fmt.Fprintf(&b, "svg.chart text.muted,svg.chart text.tick{fill:%s}\n", t.muted)
	fmt.Fprintf(&b, "svg.chart .axis{stroke:%s}\n", t.muted)
	fmt.Fprintf(&b, "svg.chart .grid{stroke:%s}\n", t.grid)
	fmt.Fprintf(&b, "svg.chart .zero{stroke:%s}\n", t.fg)
	fmt.Fprintf(&b, "svg.chart .band{fill:%s;stroke:none}\n", t.band)
	fmt.Fprintf(&b, "svg.chart .range{stroke:%s}\n", t.fg)
	fmt.Fprintf(&b, "svg.chart .pt.better,svg.chart .ci.better{fill:%s;stroke:%s} svg.chart text.better{fill:%s}\n", t.better, t.better, t.better)
	fmt.Fprintf(&b, "svg.chart .pt.worse,svg.chart .ci.worse{fill:%s;stroke:%s} svg.chart text.worse{fill:%s}\n", t.worse, t.worse, t.worse)
	fmt.Fprintf(&b, "svg.chart .pt.same,svg.chart .pt.toofew,svg.chart .pt.unstable{fill:%s;stroke:%s} svg.chart .ci.same,svg.chart .ci.toofew,svg.chart .ci.unstable{stroke:%s} svg.chart text.same{fill:%s}\n", t.bg, t.same, t.same, t.same)
	for i, c := range t.series {
		fmt.Fprintf(&b, "svg.chart .s%d{fill:%s;stroke:%s}\n", i, c, c)
	}
	fmt.Fprintf(&b, "svg.chart .bar.alt{stroke:%s}\n", t.fg)
	fmt.Fprintf(&b, "svg.chart .ctx{stroke:%s}\n", t.same)
	return b.String()
}

// Font sizes of the chart text classes; textBox below and the tests read
// them to measure every label against its drawing.
const (
	fontBase = 13.0
	fontTick = 12.0
	fontTtl  = 15.0
)

var chartCSS = `svg.chart{width:100%;height:auto;display:block}
svg.chart text{font-family:system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif;font-size:13px}
svg.chart text.head{font-weight:700}
svg.chart text.ttl{font-size:15px;font-weight:700}
svg.chart text.muted,svg.chart text.tick{font-size:12px}
svg.chart .axis,svg.chart .grid{stroke-width:1}
svg.chart .zero{stroke-width:1.5}
svg.chart .range{stroke-width:1.5}
svg.chart .ci{stroke-width:2;fill:none}
svg.chart .ci.same,svg.chart .ci.toofew,svg.chart .ci.unstable{stroke-dasharray:4 3}
svg.chart .pt.same,svg.chart .pt.toofew,svg.chart .pt.unstable{stroke-width:2}
` + light.css() + "@media screen and (prefers-color-scheme: dark){\n" + dark.css() + "}\n" + `svg.chart .bar{stroke:none}
svg.chart .bar.alt{stroke-width:1.5;stroke-dasharray:4 2}
svg.chart .ctx{fill:none;stroke-width:1;stroke-opacity:.45}
svg.chart .line{fill:none;stroke-width:2}
svg.chart .spread{stroke:none;fill-opacity:.18}
svg.chart .lead{stroke-width:1;fill:none}
`

// textStyle is the size and weight a text class is drawn with.
func textStyle(class string) (size float64, bold bool) {
	for _, c := range strings.Fields(class) {
		switch c {
		case "ttl":
			return fontTtl, true
		case "head":
			return fontBase, true
		case "muted", "tick":
			return fontTick, false
		}
	}
	return fontBase, false
}

var dashes = []string{"", "6 3", "2 3", "8 3 2 3", "1 2", "12 4", "4 2 1 2", "10 2"}

func esc(s string) string { return html.EscapeString(s) }

// seriesStyle is how a group's line and points are told apart: colour,
// dash pattern and marker shape, by index.
type seriesStyle struct{ colour, dash, marker int }

// styleOf is group gi's style. The first 8 groups take the 8 colours, each
// with its own dash and one of the first 4 shapes, as they always have;
// the next 8 take the colours again, with the dash pattern one further and
// the other 4 shapes, and so on: two groups of one colour always differ in
// dash (up to 64 groups) and, up to 16, in shape too.
func styleOf(gi int) seriesStyle {
	n := len(light.series)
	cycle := gi / n
	return seriesStyle{colour: gi % n, dash: (gi + cycle) % len(dashes), marker: gi%4 + 4*(cycle%2)}
}

func series(gi int) string { return fmt.Sprintf("s%d", styleOf(gi).colour) }

// dashOf is group gi's dash pattern ("": solid).
func dashOf(gi int) string { return dashes[styleOf(gi).dash] }

// Chart widths in SVG units: a chart across the page, and one of a grid of
// small multiples (two side by side on a wide page, one on a narrow one).
const (
	svgWide  = 900.0
	svgSmall = 520.0
)

// svgDoc collects the elements of one chart.
type svgDoc struct {
	b           strings.Builder
	id          string
	w, h        float64
	kind, row   string
	title, desc string // for screen readers
}

// svg is the chart as an <svg> element (standalone: a file of its own).
func (d *svgDoc) svg(standalone bool) string { return d.finish(d.title, d.desc, standalone) }

func (d *svgDoc) f(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// text writes a text element; anchor is start, middle or end.
func (d *svgDoc) text(x, y float64, anchor, class, s string) {
	cls := ""
	if class != "" {
		cls = ` class="` + class + `"`
	}
	d.f(`<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, cls, esc(s))
}

// line draws a line of class.
func (d *svgDoc) line(class string, x1, y1, x2, y2 float64) {
	d.f(`<line class="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", class, x1, y1, x2, y2)
}

// heading writes a chart's title and, below it, its subtitle wrapped to
// the chart's width; it returns the y below them.
func (d *svgDoc) heading(title, sub string) float64 {
	d.text(10, 22, "start", "ttl", fitText(title, fontTtl, true, d.w-20))
	y := 22.0
	for _, l := range wrapPx(sub, fontTick, d.w-20) {
		y += 16
		d.text(10, y, "start", "muted", l)
	}
	return y + 14
}

// textRect is where a label's glyphs lie: x0–x1 across, top–bottom down.
type textRect struct{ x0, x1, top, bottom float64 }

// boxOf is the rectangle a text drawn at x, y with anchor takes, by the
// font's advance widths; ascenders reach about 0.76 em above the
// baseline, descenders 0.24 em below (DejaVu Sans).
func boxOf(x, y float64, anchor, s string, size float64, bold bool) textRect {
	w := textExtent(s, size, bold)
	switch anchor {
	case "middle":
		x -= w / 2
	case "end":
		x -= w
	}
	return textRect{x0: x, x1: x + w, top: y - 0.76*size, bottom: y + 0.24*size}
}

// clearOf is the vertical line at x from a to b with the stretches where
// it would cross a label (and 2 px around it) left out.
func clearOf(x, a, b float64, labels []textRect) [][2]float64 {
	const pad = 2.0
	var cuts []textRect
	for _, l := range labels {
		if x > l.x0-pad && x < l.x1+pad && l.bottom+pad > a && l.top-pad < b {
			cuts = append(cuts, l)
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].top < cuts[j].top })
	// Pieces shorter than minPiece, between two labels, would read as
	// dashes: left out too.
	const minPiece = 5.0
	var out [][2]float64
	from := a
	for _, c := range cuts {
		if c.top-pad-from >= minPiece {
			out = append(out, [2]float64{from, c.top - pad})
		}
		from = math.Max(from, c.bottom+pad)
	}
	if b-from >= minPiece {
		out = append(out, [2]float64{from, b})
	}
	return out
}

// wrapPx breaks s into lines no wider than width px at size.
func wrapPx(s string, size, width float64) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case textExtent(line+" "+w, size, false) > width:
			out = append(out, line)
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
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
		attrs, d.w, math.Ceil(d.h), d.w, math.Ceil(d.h), d.id, d.id, d.kind, row)
	fmt.Fprintf(&out, `<title id="%s-t">%s</title>`+"\n"+`<desc id="%s-d">%s</desc>`+"\n", d.id, esc(title), d.id, esc(desc))
	if standalone {
		out.WriteString("<style>\n" + chartCSS + "</style>\n")
	}
	fmt.Fprintf(&out, `<rect class="bg" width="%.0f" height="%.0f"/>`+"\n", d.w, math.Ceil(d.h))
	out.WriteString(d.b.String())
	out.WriteString("</svg>\n")
	return out.String()
}

// marker draws a point in its group's colour and shape: circle, square,
// triangle, diamond, then (past 8 groups) triangle down, plus, cross, star.
func marker(d *svgDoc, group int, cx, cy float64) {
	cls := "pt " + series(group)
	poly := func(pts ...float64) {
		var b strings.Builder
		for i := 0; i+1 < len(pts); i += 2 {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", cx+pts[i], cy+pts[i+1])
		}
		d.f(`<polygon class="%s" points="%s"/>`+"\n", cls, b.String())
	}
	switch styleOf(group).marker {
	case 0:
		d.f(`<circle class="%s" cx="%.1f" cy="%.1f" r="3.5"/>`+"\n", cls, cx, cy)
	case 1:
		d.f(`<rect class="%s" x="%.1f" y="%.1f" width="7" height="7"/>`+"\n", cls, cx-3.5, cy-3.5)
	case 2:
		poly(0, -4.5, 4.5, 3.5, -4.5, 3.5)
	case 3:
		poly(0, -4.5, 4.5, 0, 0, 4.5, -4.5, 0)
	case 4: // triangle down
		poly(0, 4.5, 4.5, -3.5, -4.5, -3.5)
	case 5: // plus
		poly(-1.5, -4.5, 1.5, -4.5, 1.5, -1.5, 4.5, -1.5, 4.5, 1.5, 1.5, 1.5, 1.5, 4.5, -1.5, 4.5, -1.5, 1.5, -4.5, 1.5, -4.5, -1.5, -1.5, -1.5)
	case 6: // cross
		poly(-3.2, -4.6, 0, -1.4, 3.2, -4.6, 4.6, -3.2, 1.4, 0, 4.6, 3.2, 3.2, 4.6, 0, 1.4, -3.2, 4.6, -4.6, 3.2, -1.4, 0, -4.6, -3.2)
	default: // star
		var pts []float64
		for k := range 10 {
			r := 5.0
			if k%2 == 1 {
				r = 2.2
			}
			a := -math.Pi/2 + float64(k)*math.Pi/5
			pts = append(pts, r*math.Cos(a), r*math.Sin(a))
		}
		poly(pts...)
	}
}

// legend draws one entry per group (line, marker, name) in rows that fit
// the chart's width, from y, in the styles (styleOf) of groups; it returns
// the y below it.
func legend(d *svgDoc, names []string, groups []int, y float64) float64 {
	x := 10.0
	y += 4
	for i, n := range names {
		gi := groups[i]
		n = fitAmong(n, names, fontBase, false, d.w-70)
		w := 40 + textExtent(n, fontBase, false) + 18
		if x > 10 && x+w > d.w-10 {
			x, y = 10, y+20
		}
		d.f(`<line class="line %s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke-dasharray="%s"/>`+"\n", series(gi), x, y, x+30, y, dashOf(gi))
		marker(d, gi, x+15, y)
		d.text(x+36, y+4.5, "start", "", n)
		x += w
	}
	return y + 18
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

// linearTicks are the ticks of a linear axis from 0 to at least hi: about
// n of them, on nice numbers.
func linearTicks(hi float64, n int) (ticks []float64, top float64) {
	if hi <= 0 {
		hi = 1
	}
	step := niceStep(hi / float64(n))
	top = math.Ceil(hi/step-1e-9) * step
	for v := 0.0; v <= top+step/2; v += step {
		ticks = append(ticks, v)
	}
	return ticks, top
}

// logTicks are the ticks of a log axis from lo to hi: every power of ten,
// and 2 and 5 times them when the axis spans few decades.
func logTicks(lo, hi float64) []float64 {
	var out []float64
	mults := []float64{1}
	if math.Log10(hi/lo) <= 2.5 {
		mults = []float64{1, 2, 5}
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range mults {
			v := m * math.Pow(10, e)
			if v >= lo*0.999 && v <= hi*1.001 {
				out = append(out, v)
			}
		}
	}
	return out
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

// tickNum formats an axis value compactly: 2000, 2.5k stays 2500, 1.2M.
func tickNum(v float64) string { return axisNum(v, v) }

// axisNum formats a value of an axis whose largest tick is top as that
// tick is formatted: 0, 5k, 10k, not 0, 5000, 10k.
func axisNum(v, top float64) string {
	if v == 0 {
		return "0"
	}
	switch a := math.Abs(top); {
	case a >= 1e6:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v/1e6), "0"), ".") + "M"
	case a >= 1e4:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v/1e3), "0"), ".") + "k"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func joinNums(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = num(v)
	}
	return strings.Join(s, ", ")
}

// spreadLabels moves labels wanted at ys apart so that none is closer than
// gap to the next, staying within [lo, hi]; it keeps their order.
func spreadLabels(ys []float64, gap, lo, hi float64) []float64 {
	idx := make([]int, len(ys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ys[idx[a]] < ys[idx[b]] })
	out := append([]float64(nil), ys...)
	for k, i := range idx {
		out[i] = math.Max(out[i], lo)
		if k > 0 && out[i] < out[idx[k-1]]+gap {
			out[i] = out[idx[k-1]] + gap
		}
	}
	// Pushed past the bottom: shift back up from the end.
	for k := len(idx) - 1; k >= 0; k-- {
		i := idx[k]
		limit := hi
		if k < len(idx)-1 {
			limit = out[idx[k+1]] - gap
		}
		out[i] = math.Min(out[i], limit)
	}
	return out
}

// SVG writes the charts that answer "what changed" as one standalone SVG
// file: the change chart against the baseline (when there is one), then
// the throughput and IOPS panels per block size, one below the other.
func SVG(w io.Writer, c *compare.Comparison) error {
	var docs []*svgDoc
	if len(c.Groups) > 1 {
		docs = append(docs, changeChart(c, "change", svgWide))
	}
	docs = append(docs, barPanels(c, "bars", svgWide)...)
	_, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+stackSVG(docs, "diskprep: "+title(c)))
	return err
}

// stackSVG draws charts one below the other in one standalone SVG.
func stackSVG(docs []*svgDoc, title string) string {
	w, h := 0.0, 0.0
	for _, d := range docs {
		w = math.Max(w, d.w)
		h += math.Ceil(d.h) + 16
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" aria-label="%s" data-chart="stack">`+"\n",
		w, h, w, h, esc(title))
	fmt.Fprintf(&b, "<title>%s</title>\n<style>\n%s</style>\n", esc(title), chartCSS)
	fmt.Fprintf(&b, `<rect class="bg" width="%.0f" height="%.0f"/>`+"\n", w, h)
	y := 0.0
	for _, d := range docs {
		fmt.Fprintf(&b, `<g transform="translate(0 %.0f)" role="img" aria-label="%s" data-chart="%s">`+"\n", y, esc(d.title), d.kind)
		fmt.Fprintf(&b, "<title>%s</title>\n<desc>%s</desc>\n", esc(d.title), esc(d.desc))
		b.WriteString(d.b.String())
		b.WriteString("</g>\n")
		y += math.Ceil(d.h) + 16
	}
	b.WriteString("</svg>\n")
	return b.String()
}
