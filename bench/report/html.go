package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
)

// The page's layout, in CSS px: the tests check the charts' text size at
// common window widths from these.
const (
	pageMaxWidth = 1200.0
	pagePadding  = 24.0
	gridMin      = 460.0 // a small chart's narrowest cell
	gridGap      = 28.0
	gridChartMax = 680.0 // a small chart's widest
	// The change chart is drawn narrower than the standalone SVG's and
	// shown at most changeMax wide: at 900 units in an 800 px window its
	// text came out at 10 px, too small to read beside the table.
	changeW   = 760.0
	changeMax = 1000.0
)

var pageCSS = fmt.Sprintf(`*{box-sizing:border-box}
body{margin:0 auto;max-width:%.0fpx;padding:%.0fpx;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:1.5em;margin:0 0 4px} h2{font-size:1.2em;margin:32px 0 8px;border-bottom:1px solid var(--grid);padding-bottom:4px} h3{font-size:1.05em;margin:20px 0 6px}
p.sub,p.method{color:var(--muted)}
table{border-collapse:collapse;margin:8px 0 16px;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--grid);padding:4px 8px;text-align:left;vertical-align:top}
td{overflow-wrap:break-word}
th{background:color-mix(in srgb,var(--grid) 40%%,transparent)}
td.num{text-align:right} .nw{white-space:nowrap}
td.better{font-weight:600} td.worse{font-weight:600;text-decoration:underline dotted}
.verdict-better::before{content:"▲ "} .verdict-worse::before{content:"▼ "} .verdict-same::before{content:"≈ "}
ul.warn li{margin:2px 0}
figure{margin:12px 0 24px;break-inside:avoid} figcaption{color:var(--muted);font-size:.9em}
.table-wrap{overflow-x:auto}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%%,%.0fpx),1fr));gap:8px %.0fpx;align-items:start}
.grid figure{margin:8px 0 16px}
.grid svg.chart{max-width:%.0fpx}
figure.wide svg.chart{max-width:%.0fpx}
th.nw{white-space:nowrap}
table.fleet{font-size:.85em} table.fleet th,table.fleet td{padding:2px 5px}
table.fleet thead th{vertical-align:bottom} table.fleet th.num{text-align:right}
table.fleet td.outlier{font-weight:700;color:#d55e00}
table.fleet tfoot th,table.fleet tfoot td{font-style:italic;color:var(--muted)}
@page{size:A4;margin:12mm}
@media print{body{max-width:none;padding:0;font-size:10pt}h2,h3{break-after:avoid}table{font-size:8.5pt}
.grid{grid-template-columns:1fr 1fr;gap:4px 16px}figure{margin:4px 0 10px}.table-wrap{overflow:visible}}
`, pageMaxWidth, pagePadding, gridMin, gridGap, gridChartMax, changeMax)

// HTML writes one self-contained page: no scripts, no network, no external
// fonts; the styles are inline and the charts are inline SVG, readable in
// light and dark mode.
func HTML(w io.Writer, c *compare.Comparison) error { return htmlPage(w, c, Layout{}) }

func htmlPage(w io.Writer, c *compare.Comparison, l Layout) error {
	var b strings.Builder
	t := title(c)
	pageHead(&b, t, "")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p class=\"sub\">Compared %s. Baseline: %s.</p>\n", esc(t), esc(byText(c)), esc(c.Groups[0].Name))
	if c.Fleet != nil {
		htmlFleet(&b, c)
	}
	comparisonSections(&b, c, l)
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// pageHead opens a page: the document's head with the page's styles (and
// extraCSS after them), then the body.
func pageHead(b *strings.Builder, title, extraCSS string) {
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	b.WriteString(`<meta name="color-scheme" content="light dark">` + "\n")
	fmt.Fprintf(b, "<title>diskprep: %s</title>\n<style>\n%s%s%s%s</style>\n</head>\n<body>\n", esc(title), palette, pageCSS, chartCSS, extraCSS)
}

// comparisonSections are a comparison's sections of a page, below its
// heading: what changed, the results with their verdicts, the warnings,
// the environment and the charts.
func comparisonSections(b *strings.Builder, c *compare.Comparison, l Layout) {
	if len(c.Groups) > 1 {
		b.WriteString("<h2>What changed</h2>\n")
		fmt.Fprintf(b, "<figure class=\"wide\">\n%s<figcaption>Change of each workload against %s, with its %s interval; hollow grey points are not real changes.</figcaption>\n</figure>\n",
			changeChart(c, "change", changeW).svg(false), esc(c.Groups[0].Name), compare.LevelText(c.CILevel))
	}
	b.WriteString("<h2>Results</h2>\n<div class=\"table-wrap\">\n")
	if l.stacked(c) {
		htmlTableStacked(b, c)
	} else {
		htmlTable(b, c)
	}
	b.WriteString("</div>\n")
	if len(c.Warnings) > 0 {
		b.WriteString("<h3>Warnings</h3>\n<ul class=\"warn\">\n")
		for _, w := range c.Warnings {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(w))
		}
		b.WriteString("</ul>\n")
	}
	if len(c.Notes) > 0 {
		b.WriteString("<h3>Notes</h3>\n<ul>\n")
		for _, n := range c.Notes {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(n))
		}
		b.WriteString("</ul>\n")
	}
	if lines := noiseLines(c); len(lines) > 0 {
		b.WriteString("<h3>Noise floor</h3>\n<ul>\n")
		for _, l := range lines {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(l))
		}
		b.WriteString("</ul>\n")
	}
	fmt.Fprintf(b, "<p class=\"method\">MB/s is 10<sup>6</sup> bytes/s; values are medians over repetitions with (min–max). Method: %s.</p>\n", esc(c.Method))

	b.WriteString("<h2>Environment</h2>\n")
	if len(c.Environment) > 0 {
		fmt.Fprintf(b, "<p>%s:</p>\n<table>\n", esc(strings.ToUpper(sameFor(c)[:1])+sameFor(c)[1:]))
		for _, f := range c.Environment {
			fmt.Fprintf(b, "<tr><th scope=\"row\">%s</th><td>%s</td></tr>\n", esc(f.Name), esc(f.Value))
		}
		b.WriteString("</table>\n")
	}
	names, cells := identityRows(c)
	if l.stacked(c) {
		// One line per column: as wide as the facts, whatever the
		// number of columns.
		b.WriteString("<p>Per column:</p>\n<div class=\"table-wrap\">\n<table>\n<tr><th scope=\"col\">Column</th>")
		for _, n := range names {
			fmt.Fprintf(b, "<th scope=\"col\">%s</th>", esc(n))
		}
		b.WriteString("</tr>\n")
		for gi := range c.Groups {
			fmt.Fprintf(b, "<tr><th scope=\"row\">%s</th>", esc(groupHeader(c, gi)))
			for i := range names {
				fmt.Fprintf(b, "<td>%s</td>", esc(cells[i][gi]))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n</div>\n")
	} else {
		htmlColumns(b, c, names, cells)
	}

	b.WriteString("<h2>Throughput and IOPS by block size</h2>\n<div class=\"grid\">\n")
	for _, d := range barPanels(c, "bars", svgSmall) {
		fmt.Fprintf(b, "<figure>\n%s</figure>\n", d.svg(false))
	}
	b.WriteString("</div>\n<h2>Latency percentiles</h2>\n<div class=\"grid\">\n")
	for ri, r := range c.Rows {
		fmt.Fprintf(b, "<figure>\n%s</figure>\n", latencyCurves(c, r, fmt.Sprintf("lat%d", ri), svgSmall).svg(false))
	}
	b.WriteString("</div>\n<h2>Over time</h2>\n")
	for ri, r := range c.Rows {
		fmt.Fprintf(b, "<h3>%s</h3>\n", esc(r.Name))
		if r.Params != "" {
			fmt.Fprintf(b, "<p class=\"sub\">%s</p>\n", esc(r.Params))
		}
		b.WriteString("<div class=\"grid\">\n")
		for _, d := range rowTimeCharts(c, r, fmt.Sprintf("ts%d", ri), svgSmall) {
			fmt.Fprintf(b, "<figure>\n%s</figure>\n", d.svg(false))
		}
		b.WriteString("</div>\n")
	}
}

func verdictClass(v compare.Value) string {
	switch v.Verdict {
	case compare.VerdictSignificant:
		if v.Better {
			return "better"
		}
		return "worse"
	case compare.VerdictSame:
		return "same"
	}
	return ""
}

func htmlTable(b *strings.Builder, c *compare.Comparison) {
	b.WriteString("<table>\n<thead><tr><th scope=\"col\">Workload</th><th scope=\"col\">Metric</th>")
	for gi := range c.Groups {
		fmt.Fprintf(b, "<th scope=\"col\">%s</th>", esc(groupHeader(c, gi)))
	}
	for gi := 1; gi < len(c.Groups); gi++ {
		fmt.Fprintf(b, "<th scope=\"col\">%s vs %s</th>", esc(c.Groups[gi].Name), esc(c.Groups[0].Name))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range c.Rows {
		for mi, m := range c.Metrics {
			b.WriteString("<tr>")
			if mi == 0 {
				fmt.Fprintf(b, "<th class=\"nw\" scope=\"rowgroup\" rowspan=\"%d\">%s</th>", len(c.Metrics), esc(r.Name))
			}
			fmt.Fprintf(b, "<td>%s</td>", esc(m))
			for _, cell := range r.Cells {
				if !cell.Present {
					b.WriteString("<td class=\"num\">-</td>")
					continue
				}
				fmt.Fprintf(b, "<td class=\"num\">%s</td>", valueHTML(m, cell.Metrics[mi]))
			}
			for gi := 1; gi < len(r.Cells); gi++ {
				cell := r.Cells[gi]
				if !cell.Present {
					b.WriteString("<td>-</td>")
					continue
				}
				v := cell.Metrics[mi]
				cls := verdictClass(v)
				if cls != "" {
					fmt.Fprintf(b, "<td class=\"%s\"><span class=\"verdict-%s\">%s</span></td>", cls, cls, esc(changeText(v)))
				} else {
					fmt.Fprintf(b, "<td>%s</td>", esc(changeText(v)))
				}
			}
			b.WriteString("</tr>\n")
		}
	}
	b.WriteString("</tbody>\n</table>\n")
}

// htmlTableStacked is the long table: one line per workload and group.
func htmlTableStacked(b *strings.Builder, c *compare.Comparison) {
	b.WriteString("<table>\n<thead><tr><th scope=\"col\">Workload</th><th scope=\"col\">Column</th>")
	for _, m := range c.Metrics {
		fmt.Fprintf(b, "<th scope=\"col\">%s</th>", esc(m))
	}
	b.WriteString("<th scope=\"col\">Change against the baseline</th></tr></thead>\n<tbody>\n")
	for _, r := range c.Rows {
		n := 0
		for _, cell := range r.Cells {
			if cell.Present {
				n++
			}
		}
		first := true
		for gi, cell := range r.Cells {
			if !cell.Present {
				continue
			}
			b.WriteString("<tr>")
			if first {
				fmt.Fprintf(b, "<th class=\"nw\" scope=\"rowgroup\" rowspan=\"%d\">%s</th>", n, esc(r.Name))
				first = false
			}
			fmt.Fprintf(b, "<td>%s</td>", esc(rowGroupHeader(c, r, gi)))
			for mi, m := range c.Metrics {
				fmt.Fprintf(b, "<td class=\"num\">%s</td>", valueHTML(m, cell.Metrics[mi]))
			}
			switch {
			case gi == r.Baseline:
				b.WriteString("<td>baseline</td>")
			default:
				cls := verdictClass(cell.Metrics[0])
				if cls != "" {
					fmt.Fprintf(b, "<td class=\"%s\"><span class=\"verdict-%s\">%s</span></td>", cls, cls, esc(cellChange(c, cell)))
				} else {
					fmt.Fprintf(b, "<td>%s</td>", esc(cellChange(c, cell)))
				}
			}
			b.WriteString("</tr>\n")
		}
	}
	b.WriteString("</tbody>\n</table>\n")
}

// htmlColumns is the per-column identity with one column per group.
func htmlColumns(b *strings.Builder, c *compare.Comparison, names []string, cells [][]string) {
	b.WriteString("<p>Per column:</p>\n<table>\n<tr><th></th>")
	for gi := range c.Groups {
		fmt.Fprintf(b, "<th scope=\"col\">%s</th>", esc(groupHeader(c, gi)))
	}
	b.WriteString("</tr>\n")
	for i, n := range names {
		fmt.Fprintf(b, "<tr><th scope=\"row\">%s</th>", esc(n))
		for _, v := range cells[i] {
			fmt.Fprintf(b, "<td>%s</td>", esc(v))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// valueHTML is valueText with the median and the range each kept on one
// line: a narrow column breaks between them, not inside "(515–525)".
func valueHTML(metric string, v compare.Value) string {
	med, rng := valueParts(metric, v)
	if rng == "" {
		return `<span class="nw">` + esc(med) + `</span>`
	}
	return `<span class="nw">` + esc(med) + `</span> <span class="nw">` + esc(rng) + `</span>`
}
