package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/diskprep/diskprep/bench/compare"
)

// recordsText lists a column's record ids, or counts them when there are many.
func recordsText(g compare.Group) string {
	if len(g.RecordIDs) <= 3 {
		return strings.Join(g.RecordIDs, ", ")
	}
	return fmt.Sprintf("%d records (%s … %s)", len(g.RecordIDs), g.RecordIDs[0], g.RecordIDs[len(g.RecordIDs)-1])
}

// identityRows are the per-column facts: the records, then every identity
// fact that is not shared by all records.
func identityRows(c *compare.Comparison) (names []string, cells [][]string) {
	names = append(names, "Records")
	var rec []string
	for _, g := range c.Groups {
		rec = append(rec, recordsText(g))
	}
	cells = append(cells, rec)
	if len(c.Groups) == 0 {
		return names, cells
	}
	for fi, f := range c.Groups[0].Identity {
		names = append(names, f.Name)
		var row []string
		for _, g := range c.Groups {
			v := "-"
			if fi < len(g.Identity) {
				v = g.Identity[fi].Value
			}
			row = append(row, v)
		}
		cells = append(cells, row)
	}
	return names, cells
}

// Table writes the comparison for a terminal in the default layout.
func Table(w io.Writer, c *compare.Comparison) error { return TableLayout(w, c, Layout{}) }

// TableLayout writes the comparison for a terminal: environment, columns,
// the results and the notes, within l's width unless l is Wide (one
// column per group, as wide as it takes).
func TableLayout(w io.Writer, c *compare.Comparison, l Layout) error {
	var b strings.Builder
	width := l.width()
	if l.Wide {
		width = 1 << 20
	}
	b.WriteString(wrap(fmt.Sprintf("Comparison of %s, %s", title(c), byText(c)), "", "  ", width))
	b.WriteString("\n")
	if c.Fleet != nil {
		b.WriteString(fleetText(c, width))
		b.WriteString("\n")
	}
	if len(c.Environment) > 0 {
		b.WriteString("Environment (" + sameFor(c) + ")\n")
		nameW := 0
		for _, f := range c.Environment {
			nameW = max(nameW, textWidth(f.Name))
		}
		for _, f := range c.Environment {
			// A value that would pass the width goes on under itself.
			first := "  " + pad(f.Name, nameW) + "  "
			if line := first + f.Value; textWidth(line) <= width {
				b.WriteString(line + "\n")
			} else {
				b.WriteString(wrap(f.Value, first, strings.Repeat(" ", textWidth(first)), width))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("Columns\n")
	if cols := wideColumns(c); l.Wide || maxWidth(cols) <= width {
		b.WriteString(cols)
	} else {
		b.WriteString(stackedColumns(c, width))
	}
	b.WriteString("\n")
	if l.stacked(c) {
		b.WriteString(stackedResults(c, width))
	} else {
		b.WriteString(wideResults(c))
	}
	writeNotes(&b, c, "", "  - ", width)
	_, err := io.WriteString(w, b.String())
	return err
}

// sameFor says what the environment's facts hold for: every record, or,
// when some records do not know a fact ("unknown in 2 of 3 records"),
// every record that knows it.
func sameFor(c *compare.Comparison) string {
	for _, f := range c.Environment {
		if strings.Contains(f.Value, " (unknown in ") {
			return "the same for every record that knows it"
		}
	}
	return "the same for every record"
}

// wideColumns is the per-column identity with one column per group.
func wideColumns(c *compare.Comparison) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	hdr := []string{" "}
	for gi := range c.Groups {
		hdr = append(hdr, groupHeader(c, gi))
	}
	fmt.Fprintf(tw, "  %s\n", strings.Join(hdr, "\t"))
	names, cells := identityRows(c)
	for i, n := range names {
		fmt.Fprintf(tw, "  %s\t%s\n", n, strings.Join(cells[i], "\t"))
	}
	tw.Flush()
	return b.String()
}

// stackedColumns is the per-column identity one group after another:
// its name and records, then its facts on wrapped lines.
func stackedColumns(c *compare.Comparison, width int) string {
	var b strings.Builder
	names, cells := identityRows(c)
	for gi := range c.Groups {
		b.WriteString(wrap(groupHeader(c, gi)+": "+cells[0][gi], "  ", "      ", width))
		var facts []string
		for i := 1; i < len(names); i++ {
			facts = append(facts, names[i]+" "+cells[i][gi])
		}
		if len(facts) > 0 {
			b.WriteString(wrap(strings.Join(facts, "; "), "    ", "    ", width))
		}
	}
	return b.String()
}

// wideResults is the results table with one column per group and one
// change column per non-baseline group.
func wideResults(c *compare.Comparison) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	hdr := []string{"WORKLOAD", "METRIC"}
	for gi := range c.Groups {
		hdr = append(hdr, groupHeader(c, gi))
	}
	for gi := 1; gi < len(c.Groups); gi++ {
		hdr = append(hdr, c.Groups[gi].Name+" vs "+c.Groups[0].Name)
	}
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	for _, l := range lines(c) {
		name := ""
		if l.first {
			name = l.row
		}
		fields := append([]string{name, l.metric}, l.values...)
		fields = append(fields, l.changes...)
		fmt.Fprintln(tw, strings.Join(fields, "\t"))
	}
	tw.Flush()
	return b.String()
}

// writeNotes writes the warnings and the method, wrapped at width with a
// hanging indent (Markdown passes a width no line reaches: its renderer
// wraps).
func writeNotes(b *strings.Builder, c *compare.Comparison, heading, bullet string, width int) {
	if len(c.Warnings) > 0 {
		fmt.Fprintf(b, "\n%sWarnings\n", heading)
		if heading != "" {
			b.WriteString("\n")
		}
		indent := strings.Repeat(" ", textWidth(bullet))
		for _, w := range c.Warnings {
			b.WriteString(wrap(w, bullet, indent, width))
		}
	}
	if len(c.Notes) > 0 {
		fmt.Fprintf(b, "\n%sNotes\n", heading)
		if heading != "" {
			b.WriteString("\n")
		}
		indent := strings.Repeat(" ", textWidth(bullet))
		for _, n := range c.Notes {
			b.WriteString(wrap(n, bullet, indent, width))
		}
	}
	if lines := noiseLines(c); len(lines) > 0 {
		fmt.Fprintf(b, "\n%sNoise floor\n", heading)
		if heading != "" {
			b.WriteString("\n")
		}
		indent := strings.Repeat(" ", textWidth(bullet))
		for _, l := range lines {
			b.WriteString(wrap(l, bullet, indent, width))
		}
	}
	b.WriteString("\n")
	b.WriteString(wrap("MB/s is 10^6 bytes/s; values are medians over repetitions with (min–max).", "", "", width))
	b.WriteString(wrap("Method: "+c.Method+".", "", "", width))
}

// noiseLines says each row's noise floor, rows that read the same in one
// line: "seq1m-read, rnd4k-read: with 5 runs a column ...".
func noiseLines(c *compare.Comparison) []string {
	var order []string
	rows := map[string][]string{}
	for _, r := range c.Rows {
		if r.NoiseFloor == nil {
			continue
		}
		s := r.NoiseFloor.String()
		if _, ok := rows[s]; !ok {
			order = append(order, s)
		}
		rows[s] = append(rows[s], r.Name)
	}
	out := make([]string, len(order))
	for i, s := range order {
		out[i] = cappedList(rows[s], 4) + ": " + s
	}
	return out
}

// Markdown writes the same table as Table, pasteable into a post or an
// issue, with a short environment section.
func Markdown(w io.Writer, c *compare.Comparison) error { return markdown(w, c, Layout{}) }

func markdown(w io.Writer, c *compare.Comparison, l Layout) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", mdCell(title(c)))
	fmt.Fprintf(&b, "Compared %s.\n\n", byText(c))
	if c.Fleet != nil {
		mdFleet(&b, c)
	}
	stacked := l.stacked(c)
	if stacked {
		mdStacked(&b, c)
	} else {
		mdWide(&b, c)
	}
	mdEnvironment(&b, c, stacked)
	writeNotes(&b, c, "### ", "- ", 1<<20)
	_, err := io.WriteString(w, b.String())
	return err
}

// mdStacked is the long table: one line per workload and group, the
// metrics and the change as columns; as many columns at any number of groups.
func mdStacked(b *strings.Builder, c *compare.Comparison) {
	hdr := []string{"Workload", "Column"}
	align := []string{"---", "---"}
	for _, m := range c.Metrics {
		hdr = append(hdr, mdCell(m))
		align = append(align, "--:")
	}
	hdr = append(hdr, "Change")
	align = append(align, "---")
	fmt.Fprintf(b, "| %s |\n|%s|\n", strings.Join(hdr, " | "), strings.Join(align, "|"))
	for _, r := range c.Rows {
		first := true
		for gi, cell := range r.Cells {
			if !cell.Present {
				continue
			}
			name := ""
			if first {
				name = "**" + mdCell(r.Name) + "**"
				first = false
			}
			fields := []string{name, mdCell(rowGroupHeader(c, r, gi))}
			for mi, m := range c.Metrics {
				fields = append(fields, mdCell(valueText(m, cell.Metrics[mi])))
			}
			ch := "baseline"
			if gi != r.Baseline {
				ch = cellChange(c, cell)
			}
			fields = append(fields, mdCell(ch))
			fmt.Fprintf(b, "| %s |\n", strings.Join(fields, " | "))
		}
	}
}

func mdWide(b *strings.Builder, c *compare.Comparison) {
	hdr := []string{"Workload", "Metric"}
	align := []string{"---", "---"}
	for gi := range c.Groups {
		hdr = append(hdr, mdCell(groupHeader(c, gi)))
		align = append(align, "--:")
	}
	for gi := 1; gi < len(c.Groups); gi++ {
		hdr = append(hdr, mdCell(c.Groups[gi].Name+" vs "+c.Groups[0].Name))
		align = append(align, "---")
	}
	fmt.Fprintf(b, "| %s |\n|%s|\n", strings.Join(hdr, " | "), strings.Join(align, "|"))
	for _, l := range lines(c) {
		name := ""
		if l.first {
			name = "**" + mdCell(l.row) + "**"
		}
		fields := []string{name, l.metric}
		for _, v := range append(l.values, l.changes...) {
			fields = append(fields, mdCell(v))
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(fields, " | "))
	}
}

func mdEnvironment(b *strings.Builder, c *compare.Comparison, stacked bool) {
	b.WriteString("\n### Environment\n\n")
	if len(c.Environment) > 0 {
		b.WriteString("| | |\n|---|---|\n")
		for _, f := range c.Environment {
			fmt.Fprintf(b, "| %s | %s |\n", f.Name, mdCell(f.Value))
		}
		b.WriteString("\n")
	}
	names, cells := identityRows(c)
	if stacked {
		// One line per group: the facts as columns, as many at any
		// number of groups.
		hdr := append([]string{"Column"}, names...)
		align := make([]string, len(hdr))
		for i := range align {
			align[i] = "---"
		}
		fmt.Fprintf(b, "| %s |\n|%s|\n", strings.Join(hdr, " | "), strings.Join(align, "|"))
		for gi := range c.Groups {
			row := []string{mdCell(groupHeader(c, gi))}
			for i := range names {
				row = append(row, mdCell(cells[i][gi]))
			}
			fmt.Fprintf(b, "| %s |\n", strings.Join(row, " | "))
		}
		return
	}
	hdr := []string{" "}
	align := []string{"---"}
	for gi := range c.Groups {
		hdr = append(hdr, mdCell(groupHeader(c, gi)))
		align = append(align, "---")
	}
	fmt.Fprintf(b, "| %s |\n|%s|\n", strings.Join(hdr, " | "), strings.Join(align, "|"))
	for i, n := range names {
		row := []string{n}
		for _, v := range cells[i] {
			row = append(row, mdCell(v))
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(row, " | "))
	}
}

// CSV writes one line per row, metric and group (long form, which
// spreadsheets pivot easily), with the verdict fields spelled out.
func CSV(w io.Writer, c *compare.Comparison) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"workload", "dir", "metric", "group", "baseline", "n", "median", "min", "max",
		"change_pct", "verdict", "p", "test", "ci_low_pct", "ci_high_pct", "params"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	fp := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for _, r := range c.Rows {
		for mi, m := range c.Metrics {
			switch m {
			case compare.MetricLatP99:
				m = "p99 latency us"
			case compare.MetricHostCPU:
				m = "host CPU per I/O us"
			}
			for gi, cell := range r.Cells {
				rec := []string{r.Name, r.Dir, m, c.Groups[gi].Name, c.Groups[r.Baseline].Name}
				if !cell.Present {
					rec = append(rec, "0", "", "", "", "", compare.VerdictMissing, "", "", "", "", r.Params)
				} else {
					v := cell.Metrics[mi]
					test := ""
					switch {
					case v.P != nil && v.Exact:
						test = "Mann-Whitney U, exact"
					case v.P != nil:
						test = "Mann-Whitney U, normal approximation"
					}
					rec = append(rec, strconv.Itoa(len(v.Values)), f(v.Median), f(v.Min), f(v.Max),
						fp(v.ChangePct), v.Verdict, fp(v.P), test, fp(v.CILowPct), fp(v.CIHighPct), r.Params)
				}
				cw.Write(rec)
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
