package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
)

const pageCSS = `*{box-sizing:border-box}
body{margin:0 auto;max-width:1100px;padding:24px;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:1.5em;margin:0 0 4px} h2{font-size:1.2em;margin:32px 0 8px;border-bottom:1px solid var(--grid);padding-bottom:4px} h3{font-size:1.05em;margin:20px 0 6px}
p.sub,p.method{color:var(--muted)}
table{border-collapse:collapse;margin:8px 0 16px;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--grid);padding:4px 8px;text-align:left;vertical-align:top}
th{background:color-mix(in srgb,var(--grid) 40%,transparent)}
td.num{text-align:right;white-space:nowrap}
td.better{font-weight:600} td.worse{font-weight:600;text-decoration:underline dotted}
.verdict-better::before{content:"▲ "} .verdict-worse::before{content:"▼ "} .verdict-same::before{content:"≈ "}
ul.warn li{margin:2px 0}
figure{margin:12px 0 24px} figcaption{color:var(--muted);font-size:.9em}
`

// HTML writes one self-contained page: no scripts, no network, no external
// fonts; the styles are inline and the charts are inline SVG, readable in
// light and dark mode.
func HTML(w io.Writer, c *compare.Comparison) error { return htmlPage(w, c, Layout{}) }

func htmlPage(w io.Writer, c *compare.Comparison, l Layout) error {
	var b strings.Builder
	t := title(c)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	b.WriteString(`<meta name="color-scheme" content="light dark">` + "\n")
	fmt.Fprintf(&b, "<title>diskprep: %s</title>\n<style>\n%s%s%s</style>\n</head>\n<body>\n", esc(t), palette, pageCSS, chartCSS)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p class=\"sub\">Compared %s. Baseline: %s.</p>\n", esc(t), esc(byText(c)), esc(c.Groups[0].Name))

	b.WriteString("<h2>Results</h2>\n")
	if l.stacked(c) {
		htmlTableStacked(&b, c)
	} else {
		htmlTable(&b, c)
	}
	if len(c.Warnings) > 0 {
		b.WriteString("<h3>Warnings</h3>\n<ul class=\"warn\">\n")
		for _, w := range c.Warnings {
			fmt.Fprintf(&b, "<li>%s</li>\n", esc(w))
		}
		b.WriteString("</ul>\n")
	}
	if len(c.Notes) > 0 {
		b.WriteString("<h3>Notes</h3>\n<ul>\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "<li>%s</li>\n", esc(n))
		}
		b.WriteString("</ul>\n")
	}
	fmt.Fprintf(&b, "<p class=\"method\">MB/s is 10<sup>6</sup> bytes/s; values are medians over repetitions with (min–max). Method: %s.</p>\n", esc(c.Method))

	b.WriteString("<h2>Environment</h2>\n")
	if len(c.Environment) > 0 {
		b.WriteString("<p>The same for every record:</p>\n<table>\n")
		for _, f := range c.Environment {
			fmt.Fprintf(&b, "<tr><th scope=\"row\">%s</th><td>%s</td></tr>\n", esc(f.Name), esc(f.Value))
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("<p>Per column:</p>\n<table>\n<tr><th></th>")
	for gi := range c.Groups {
		fmt.Fprintf(&b, "<th scope=\"col\">%s</th>", esc(groupHeader(c, gi)))
	}
	b.WriteString("</tr>\n")
	names, cells := identityRows(c)
	for i, n := range names {
		fmt.Fprintf(&b, "<tr><th scope=\"row\">%s</th>", esc(n))
		for _, v := range cells[i] {
			fmt.Fprintf(&b, "<td>%s</td>", esc(v))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")

	b.WriteString("<h2>Charts</h2>\n")
	for mi, m := range c.Metrics {
		if m == compare.MetricLatP99 {
			continue // the percentile charts below show latency in full
		}
		fmt.Fprintf(&b, "<figure>\n%s<figcaption>%s per workload and %s.</figcaption>\n</figure>\n",
			barChart(c, mi, "bars-"+slug(m), false), esc(chartTitle(m)), esc(c.By))
	}
	for ri, r := range c.Rows {
		fmt.Fprintf(&b, "<h3>%s</h3>\n", esc(r.Name))
		if r.Params != "" {
			fmt.Fprintf(&b, "<p class=\"sub\">%s</p>\n", esc(r.Params))
		}
		fmt.Fprintf(&b, "<figure>\n%s<figcaption>Latency percentiles of %s.</figcaption>\n</figure>\n", latencyChart(c, r, fmt.Sprintf("lat%d", ri)), esc(r.Name))
		fmt.Fprintf(&b, "<figure>\n%s<figcaption>Throughput second by second of every repetition of %s.</figcaption>\n</figure>\n", timeSeriesChart(c, r, fmt.Sprintf("ts%d", ri)), esc(r.Name))
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
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
				fmt.Fprintf(b, "<th scope=\"rowgroup\" rowspan=\"%d\">%s</th>", len(c.Metrics), esc(r.Name))
			}
			fmt.Fprintf(b, "<td>%s</td>", esc(m))
			for _, cell := range r.Cells {
				if !cell.Present {
					b.WriteString("<td class=\"num\">-</td>")
					continue
				}
				fmt.Fprintf(b, "<td class=\"num\">%s</td>", esc(valueText(m, cell.Metrics[mi])))
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
				fmt.Fprintf(b, "<th scope=\"rowgroup\" rowspan=\"%d\">%s</th>", n, esc(r.Name))
				first = false
			}
			fmt.Fprintf(b, "<td>%s</td>", esc(rowGroupHeader(c, r, gi)))
			for mi, m := range c.Metrics {
				fmt.Fprintf(b, "<td class=\"num\">%s</td>", esc(valueText(m, cell.Metrics[mi])))
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
