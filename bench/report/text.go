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

// Table writes the comparison for a terminal: environment, columns, the
// aligned table, warnings and the method.
func Table(w io.Writer, c *compare.Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Comparison of %s, %s\n\n", title(c), byText(c))
	if len(c.Environment) > 0 {
		b.WriteString("Environment (the same for every record)\n")
		tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
		for _, f := range c.Environment {
			fmt.Fprintf(tw, "  %s\t%s\n", f.Name, f.Value)
		}
		tw.Flush()
		b.WriteString("\n")
	}
	b.WriteString("Columns\n")
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
	b.WriteString("\n")

	tw = tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	hdr = []string{"WORKLOAD", "METRIC"}
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
	writeNotes(&b, c, "", "  - ")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeNotes(b *strings.Builder, c *compare.Comparison, heading, bullet string) {
	if len(c.Warnings) > 0 {
		fmt.Fprintf(b, "\n%sWarnings\n", heading)
		if heading != "" {
			b.WriteString("\n")
		}
		for _, w := range c.Warnings {
			fmt.Fprintf(b, "%s%s\n", bullet, w)
		}
	}
	if len(c.Notes) > 0 {
		fmt.Fprintf(b, "\n%sNotes\n", heading)
		if heading != "" {
			b.WriteString("\n")
		}
		for _, n := range c.Notes {
			fmt.Fprintf(b, "%s%s\n", bullet, n)
		}
	}
	fmt.Fprintf(b, "\nMB/s is 10^6 bytes/s; values are medians over repetitions with (min–max).\nMethod: %s.\n", c.Method)
}

// Markdown writes the same table as Table, pasteable into a post or an
// issue, with a short environment section.
func Markdown(w io.Writer, c *compare.Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", mdCell(title(c)))
	fmt.Fprintf(&b, "Compared %s.\n\n", byText(c))
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
	fmt.Fprintf(&b, "| %s |\n|%s|\n", strings.Join(hdr, " | "), strings.Join(align, "|"))
	for _, l := range lines(c) {
		name := ""
		if l.first {
			name = "**" + mdCell(l.row) + "**"
		}
		fields := []string{name, l.metric}
		for _, v := range append(l.values, l.changes...) {
			fields = append(fields, mdCell(v))
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(fields, " | "))
	}
	b.WriteString("\n### Environment\n\n")
	if len(c.Environment) > 0 {
		b.WriteString("| | |\n|---|---|\n")
		for _, f := range c.Environment {
			fmt.Fprintf(&b, "| %s | %s |\n", f.Name, mdCell(f.Value))
		}
		b.WriteString("\n")
	}
	names, cells := identityRows(c)
	hdr = []string{" "}
	align = []string{"---"}
	for gi := range c.Groups {
		hdr = append(hdr, mdCell(groupHeader(c, gi)))
		align = append(align, "---")
	}
	fmt.Fprintf(&b, "| %s |\n|%s|\n", strings.Join(hdr, " | "), strings.Join(align, "|"))
	for i, n := range names {
		row := []string{n}
		for _, v := range cells[i] {
			row = append(row, mdCell(v))
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	writeNotes(&b, c, "### ", "- ")
	_, err := io.WriteString(w, b.String())
	return err
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
			if m == compare.MetricLatP99 {
				m = "p99 latency us"
			}
			for gi, cell := range r.Cells {
				rec := []string{r.Name, r.Dir, m, c.Groups[gi].Name, c.Groups[0].Name}
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
