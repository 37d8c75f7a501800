package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
)

// The fleet summary (compare --by host): one line per host, the fleet's
// median and spread, the outliers and the failed hosts, above everything
// else. The text, Markdown and HTML forms share the cells built here.

// outlierMark follows a figure outside the fleet's spread.
const outlierMark = "*"

// fleetHead is a column's heading in three lines, a workload's row name
// split at its direction ("seq1m" over "read" over "MB/s"), so that a
// column is as narrow as its figures.
func fleetHead(col compare.FleetColumn) [3]string {
	unit := col.Metric
	if col.Metric == compare.MetricLatP99 {
		unit = "p99"
	}
	for _, dir := range []string{"read", "write"} {
		if base, ok := strings.CutSuffix(col.Row, "-"+dir); ok && base != "" {
			return [3]string{base, dir, unit}
		}
	}
	return [3]string{col.Row, "", unit}
}

// fleetValue is a host's figure as shown, "-" when it has none.
func fleetValue(col compare.FleetColumn, v compare.FleetValue) string {
	if v.Value == nil {
		return "-"
	}
	if col.Metric == compare.MetricLatP99 {
		return latency(*v.Value * 1e3)
	}
	return num(*v.Value)
}

// fleetSpread is a column's MAD as a share of its median: "±1.2%".
func fleetSpread(col compare.FleetColumn) string {
	if col.N == 0 || col.Median == 0 {
		return "-"
	}
	p := col.MAD / col.Median * 100
	if p < 0.05 {
		return "±0%"
	}
	return fmt.Sprintf("±%.1f%%", p)
}

// fleetOffset is a host's clock offset, "?" when unknown.
func fleetOffset(h compare.FleetHost) string {
	if h.ClockOffsetMS == nil {
		return "?"
	}
	return signedTime(*h.ClockOffsetMS)
}

// fleetSkew is a host's start skew, "-" without a synchronized start and
// with a "?" when its offset is unknown (by its own clock).
func fleetSkew(h compare.FleetHost) string {
	if h.StartSkewMS == nil {
		return "-"
	}
	s := signedTime(*h.StartSkewMS)
	if *h.StartSkewMS == 0 {
		s = "0 s"
	}
	if h.SkewUncorrected {
		s += "?"
	}
	return s
}

// fleetHeading is the summary's first line: how many hosts, how many
// failed, and the start they shared.
func fleetHeading(c *compare.Comparison) string { return "Fleet summary: " + fleetCounts(c) }

// fleetCounts is fleetHeading without its title.
func fleetCounts(c *compare.Comparison) string {
	f := c.Fleet
	s := fmt.Sprintf("%d of %d hosts measured", len(f.Hosts), f.Expected)
	if len(f.Failed) > 0 {
		s += fmt.Sprintf(", %d failed", len(f.Failed))
	}
	switch {
	case f.StartAt != nil:
		s += "; synchronized start " + f.StartAt.UTC().Format(time.RFC3339)
	case f.Synchronized:
		s += "; synchronized starts"
	}
	return s
}

// figureText is a host's figure in words: "seq1m-read 520 MB/s",
// "rnd4k-read p99 307 µs".
func figureText(col compare.FleetColumn, v compare.FleetValue) string {
	if col.Metric == compare.MetricLatP99 {
		return col.Row + " p99 " + fleetValue(col, v)
	}
	if v.Value == nil {
		return col.Row + " -"
	}
	return col.Row + " " + fleetValue(col, v) + " " + col.Metric
}

// outlierLines say each outlying host's figures, one line a host:
// "node-c: seq1m-read 52.0 MB/s (0.1×), rnd4k-read 977 IOPS (0.1×):
// slow; rnd4k-read p99 3.07 ms (9.8×): high".
func outlierLines(f *compare.Fleet) []string {
	type side struct {
		word  string
		parts []string
	}
	var order []string
	sides := map[string][]*side{}
	for _, o := range f.Outliers {
		if _, ok := sides[o.Host]; !ok {
			order = append(order, o.Host)
		}
		v := o.Value
		what := figureText(compare.FleetColumn{Row: o.Row, Metric: o.Metric}, compare.FleetValue{Value: &v})
		word := "slow"
		switch {
		case o.Metric == compare.MetricLatP99:
			word = "low"
			if o.Worse {
				word = "high"
			}
		case !o.Worse:
			word = "fast"
		}
		what += " (" + ratioText(o.Ratio) + "×)"
		list := sides[o.Host]
		i := slices.IndexFunc(list, func(s *side) bool { return s.word == word })
		if i < 0 {
			list = append(list, &side{word: word})
			i = len(list) - 1
		}
		list[i].parts = append(list[i].parts, what)
		sides[o.Host] = list
	}
	out := make([]string, len(order))
	for i, h := range order {
		var parts []string
		for _, s := range sides[h] {
			parts = append(parts, strings.Join(s.parts, ", ")+": "+s.word)
		}
		out[i] = h + ": " + strings.Join(parts, "; ")
	}
	return out
}

func ratioText(r float64) string {
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f", r)
	case r >= 0.1:
		return fmt.Sprintf("%.2g", r)
	}
	return fmt.Sprintf("%.1g", r)
}

// fleetTable is the summary's table as cells: the heading's three
// lines, then one line per host, the fleet's median and its spread.
// Figure columns are right-aligned (right reports which).
func fleetTable(f *compare.Fleet) (head [3][]string, rows [][]string, right []bool) {
	add := func(a, b, c string, r bool) {
		head[0], head[1], head[2], right = append(head[0], a), append(head[1], b), append(head[2], c), append(right, r)
	}
	add("HOST", "", "", false)
	add("DISK", "", "", false)
	add("BUS", "", "", false)
	add("FS", "", "", false)
	for _, col := range f.Columns {
		h := fleetHead(col)
		add(h[0], h[1], h[2], true)
	}
	add("CLOCK", "OFFSET", "", true)
	add("START", "SKEW", "", true)
	for _, h := range f.Hosts {
		row := []string{h.Host, dash(h.Model), dash(h.Transport), dash(h.FS)}
		for ci, col := range f.Columns {
			v := fleetValue(col, h.Values[ci])
			if h.Values[ci].Outlier {
				v += outlierMark
			} else {
				v += " " // the marks stay in a column of their own
			}
			row = append(row, v)
		}
		rows = append(rows, append(row, fleetOffset(h), fleetSkew(h)))
	}
	med := []string{"fleet median", "", "", ""}
	spread := []string{"spread (MAD)", "", "", ""}
	for _, col := range f.Columns {
		m := "-"
		if col.N > 0 {
			m = fleetValue(col, compare.FleetValue{Value: &col.Median})
		}
		med, spread = append(med, m+" "), append(spread, fleetSpread(col)+" ")
	}
	rows = append(rows, append(med, "", ""), append(spread, "", ""))
	return head, rows, right
}

// fleetFigures is the index of the first figure column of fleetTable.
const fleetFigures = 4

// fleetText is the summary for a terminal, within width: the table when
// it fits (the disk column, then the host column, cut to fit first),
// else one host per wrapped line.
func fleetText(c *compare.Comparison, width int) string {
	f := c.Fleet
	var b strings.Builder
	b.WriteString(wrap(fleetHeading(c), "", "  ", width))
	head, rows, right := fleetTable(f)
	widths := make([]int, len(head[0]))
	for i := range widths {
		for _, h := range head {
			widths[i] = max(widths[i], textWidth(h[i]))
		}
		for _, r := range rows {
			widths[i] = max(widths[i], textWidth(r[i]))
		}
	}
	const indent, gap = 2, 2
	total := func() int {
		t := indent + gap*(len(widths)-1)
		for _, w := range widths {
			t += w
		}
		return t
	}
	// The disk, then the host, give up their width, down to a floor.
	for _, cut := range []struct{ col, floor int }{{1, 12}, {0, 14}} {
		if over := total() - width; over > 0 && widths[cut.col] > cut.floor {
			widths[cut.col] = max(cut.floor, widths[cut.col]-over)
		}
	}
	table := total() <= width
	if table {
		line := func(cells []string) {
			var parts []string
			for i, cell := range cells {
				cell = fitCell(cell, widths[i])
				if right[i] {
					parts = append(parts, padLeft(cell, widths[i]))
				} else {
					parts = append(parts, pad(cell, widths[i]))
				}
			}
			b.WriteString(strings.TrimRight(strings.Repeat(" ", indent)+strings.Join(parts, strings.Repeat(" ", gap)), " ") + "\n")
		}
		for _, h := range head {
			line(h)
		}
		for _, r := range rows {
			line(r)
		}
	} else {
		for hi, h := range f.Hosts {
			r := rows[hi]
			var figs []string
			for ci, col := range f.Columns {
				fig := figureText(col, h.Values[ci])
				if h.Values[ci].Outlier {
					fig += outlierMark
				}
				figs = append(figs, fig)
			}
			text := fmt.Sprintf("%s: %s, %s, %s; %s; clock offset %s, start skew %s", h.Host, r[1], r[2], r[3], strings.Join(figs, ", "), fleetOffset(h), fleetSkew(h))
			b.WriteString(wrap(text, "  ", "      ", width))
		}
		var med []string
		for _, col := range f.Columns {
			med = append(med, figureText(col, compare.FleetValue{Value: &col.Median})+" "+fleetSpread(col))
		}
		b.WriteString(wrap("fleet median and spread (MAD): "+strings.Join(med, ", "), "  ", "      ", width))
	}
	if lines := outlierLines(f); len(lines) > 0 {
		b.WriteString("\n")
		b.WriteString(wrap(fmt.Sprintf("Outliers (%s, × the fleet's median): %s.", outlierMark, f.OutlierRule), "", "  ", width))
		for _, l := range lines {
			b.WriteString(wrap(l, "  - ", "    ", width))
		}
	}
	if len(f.Failed) > 0 {
		b.WriteString("\n")
		b.WriteString(fmt.Sprintf("Failed hosts (%d)\n", len(f.Failed)))
		for _, fh := range f.Failed {
			b.WriteString(wrap(fh.Host+": "+fh.Reason, "  - ", "    ", width))
		}
	}
	b.WriteString("\n")
	b.WriteString(wrap(fleetLegend(f, table), "", "", width))
	return b.String()
}

// fleetLegend says what the figures are, naming the columns as the
// table does (upper case in the text table).
func fleetLegend(f *compare.Fleet, upper bool) string {
	offset, skew := "Clock offset", "start skew"
	if upper {
		offset, skew = "CLOCK OFFSET", "START SKEW"
	}
	s := "Figures are each host's medians over its repetitions. " + offset + " is its clock less the controller's (? unknown)"
	if f.Synchronized {
		s += "; " + skew + " how long after the first host it began measuring, by the controller's clock (? by its own: offset unknown)"
	}
	return s + "."
}

// fitCell cuts s to w columns with an ellipsis.
func fitCell(s string, w int) string {
	if textWidth(s) <= w {
		return s
	}
	rs := []rune(s)
	if w < 1 {
		return ""
	}
	return string(rs[:w-1]) + "…"
}

// mdFleet is the summary in Markdown.
func mdFleet(b *strings.Builder, c *compare.Comparison) {
	f := c.Fleet
	fmt.Fprintf(b, "%s.\n\n", mdCell(fleetHeading(c)))
	head, rows, right := fleetTable(f)
	var hdr, align []string
	for i := range head[0] {
		hdr = append(hdr, mdCell(strings.Join(fleetHeadLines(f, head, i), " ")))
		if right[i] {
			align = append(align, "--:")
		} else {
			align = append(align, "---")
		}
	}
	fmt.Fprintf(b, "| %s |\n|%s|\n", strings.Join(hdr, " | "), strings.Join(align, "|"))
	for ri, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			v = strings.TrimSpace(v)
			if strings.HasSuffix(v, outlierMark) && i >= fleetFigures && ri < len(f.Hosts) {
				v = "**" + strings.TrimSuffix(v, outlierMark) + "**\\" + outlierMark
			}
			if ri >= len(f.Hosts) && i == 0 {
				v = "*" + v + "*"
			}
			cells[i] = mdCell(v)
			if v == "" {
				cells[i] = ""
			}
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
	b.WriteString("\n")
	if lines := outlierLines(f); len(lines) > 0 {
		fmt.Fprintf(b, "Outliers (\\%s, × the fleet's median): %s.\n\n", outlierMark, f.OutlierRule)
		for _, l := range lines {
			fmt.Fprintf(b, "- %s\n", l)
		}
		b.WriteString("\n")
	}
	if len(f.Failed) > 0 {
		fmt.Fprintf(b, "Failed hosts (%d):\n\n", len(f.Failed))
		for _, fh := range f.Failed {
			fmt.Fprintf(b, "- %s: %s\n", fh.Host, fh.Reason)
		}
		b.WriteString("\n")
	}
	b.WriteString(fleetLegend(f, false) + "\n\n")
}

// htmlFleet is the summary on the page: the same table, the figures
// outside the spread marked, then the outliers and the failed hosts.
func htmlFleet(b *strings.Builder, c *compare.Comparison) {
	f := c.Fleet
	fmt.Fprintf(b, "<h2>Fleet summary</h2>\n<p>%s.</p>\n<div class=\"table-wrap\">\n<table class=\"fleet\">\n<thead><tr>", esc(upperFirst(fleetCounts(c))))
	head, rows, right := fleetTable(f)
	for i := range head[0] {
		cls := ""
		if right[i] {
			cls = ` class="num"`
		}
		lines := fleetHeadLines(f, head, i)
		for j := range lines {
			lines[j] = esc(lines[j])
		}
		fmt.Fprintf(b, "<th scope=\"col\"%s>%s</th>", cls, strings.Join(lines, "<br>"))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for ri, r := range rows {
		if ri == len(f.Hosts) {
			b.WriteString("</tbody>\n<tfoot>\n")
		}
		b.WriteString("<tr>")
		for i, v := range r {
			v = strings.TrimSpace(v)
			switch {
			case i == 0 && ri < len(f.Hosts):
				fmt.Fprintf(b, "<th class=\"nw\" scope=\"row\">%s</th>", esc(v))
			case i == 0:
				fmt.Fprintf(b, "<th scope=\"row\">%s</th>", esc(v))
			case i >= fleetFigures && strings.HasSuffix(v, outlierMark) && ri < len(f.Hosts):
				fmt.Fprintf(b, "<td class=\"num nw outlier\" title=\"outside the fleet's spread\">%s%s</td>", esc(strings.TrimSuffix(v, outlierMark)), outlierMark)
			case right[i]:
				fmt.Fprintf(b, "<td class=\"num nw\">%s</td>", esc(v))
			default:
				fmt.Fprintf(b, "<td>%s</td>", esc(v))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tfoot>\n</table>\n</div>\n")
	if lines := outlierLines(f); len(lines) > 0 {
		fmt.Fprintf(b, "<h3>Outliers (%s, × the fleet's median)</h3>\n<p class=\"sub\">%s.</p>\n<ul>\n", outlierMark, esc(strings.ToUpper(f.OutlierRule[:1])+f.OutlierRule[1:]))
		for _, l := range lines {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(l))
		}
		b.WriteString("</ul>\n")
	}
	if len(f.Failed) > 0 {
		fmt.Fprintf(b, "<h3>Failed hosts (%d)</h3>\n<ul class=\"warn\">\n", len(f.Failed))
		for _, fh := range f.Failed {
			fmt.Fprintf(b, "<li><strong>%s</strong>: %s</li>\n", esc(fh.Host), esc(fh.Reason))
		}
		b.WriteString("</ul>\n")
	}
	fmt.Fprintf(b, "<p class=\"sub\">%s</p>\n", esc(fleetLegend(f, false)))
}

// fleetHeadLines is column i's heading as Markdown and HTML write it:
// a figure's as the text table has it ("seq1m", "read", "MB/s"), the
// others in sentence case ("Clock", "offset").
func fleetHeadLines(f *compare.Fleet, head [3][]string, i int) []string {
	var lines []string
	for j, h := range head {
		if h[i] == "" {
			continue
		}
		v := h[i]
		if i < fleetFigures || i >= fleetFigures+len(f.Columns) {
			v = strings.ToLower(v)
			if j == 0 {
				v = title1(h[i])
			}
		}
		lines = append(lines, v)
	}
	return lines
}

// title1 is a heading of the text table as the other outputs write it:
// "HOST" is "Host", but an initialism stays one ("FS").
func title1(s string) string {
	if len(s) <= 2 {
		return s
	}
	return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
