package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/diskprep/diskprep/bench/compare"
)

// Layout steers how wide a comparison may grow.
type Layout struct {
	// Width is the number of terminal columns the table output keeps
	// within (0: DefaultWidth; below MinWidth: MinWidth). The command
	// passes its terminal's width; a report never probes a terminal.
	Width int
	// Wide keeps one column per group (and one change column per
	// non-baseline group) whatever the width: the full table.
	Wide bool
}

// DefaultWidth is what the table output fits when nothing else is said:
// a terminal of 120 columns, or a pasted block in an issue.
const DefaultWidth = 120

// MinWidth is the narrowest the table output is laid out for: a
// narrower terminal gets the lines of a MinWidth one (and wraps them).
const MinWidth = 60

func (l Layout) width() int {
	if l.Width <= 0 {
		return DefaultWidth
	}
	return max(l.Width, MinWidth)
}

// stacked reports whether the comparison is shown one group per line
// under each workload (the stacked form) instead of one column per group:
// when the full table would not fit the width, unless Wide asks for it.
func (l Layout) stacked(c *compare.Comparison) bool {
	return !l.Wide && maxWidth(wideResults(c)) > l.width()
}

// textWidth is the number of terminal columns s takes (every rune one:
// the tables hold no wide characters).
func textWidth(s string) int { return utf8.RuneCountInString(s) }

func maxWidth(text string) int {
	m := 0
	for _, l := range strings.Split(text, "\n") {
		m = max(m, textWidth(l))
	}
	return m
}

func pad(s string, w int) string {
	if n := textWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

func padLeft(s string, w int) string {
	if n := textWidth(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}

// wrap breaks s into lines of at most width columns at spaces, the first
// starting with first and the rest with indent; a word longer than a whole
// line is cut at the width (a path or a long option list: nothing passes
// the width).
func wrap(s, first, indent string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(s) {
		for room := width - textWidth(indent); room > 0 && textWidth(word) > room; {
			// Too long for any line: it starts a line of its own, cut at
			// the width, and the rest goes on.
			if !empty {
				b.WriteString(line + "\n")
				line, empty = indent, true
			}
			free := width - textWidth(line)
			if free <= 0 {
				b.WriteString(line + "\n")
				line = indent
				continue
			}
			rs := []rune(word)
			b.WriteString(line + string(rs[:free]) + "\n")
			line, word = indent, string(rs[free:])
		}
		switch {
		case empty:
			line += word
			empty = false
		case textWidth(line)+1+textWidth(word) > width:
			b.WriteString(line + "\n")
			line = indent + word
		default:
			line += " " + word
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}

// cellChange is what a non-baseline cell says against the baseline over
// all its metrics: one text when every metric says the same (MB/s and
// IOPS of one block size always do), else each metric's.
func cellChange(c *compare.Comparison, cell compare.Cell) string {
	if !cell.Present {
		return "-"
	}
	var texts []string
	same := true
	for mi := range c.Metrics {
		t := changeText(cell.Metrics[mi])
		texts = append(texts, t)
		same = same && t == texts[0]
	}
	if same {
		return texts[0]
	}
	// Metrics that say the same are named together: "MB/s, IOPS -10.0%
	// worse (…); p99 latency +11.1% worse (…)".
	var order []string
	who := map[string][]string{}
	for i, t := range texts {
		if _, ok := who[t]; !ok {
			order = append(order, t)
		}
		who[t] = append(who[t], c.Metrics[i])
	}
	parts := make([]string, len(order))
	for i, t := range order {
		parts[i] = strings.Join(who[t], ", ") + " " + t
	}
	return strings.Join(parts, "; ")
}

// absentIn names the groups a row was not measured in, capped.
func absentIn(c *compare.Comparison, r compare.Row) []string {
	var out []string
	for gi, cell := range r.Cells {
		if !cell.Present {
			out = append(out, c.Groups[gi].Name)
		}
	}
	return out
}

func cappedList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// rowGroupHeader names group gi in row r, marking the row's baseline.
func rowGroupHeader(c *compare.Comparison, r compare.Row, gi int) string {
	if gi == r.Baseline && len(c.Groups) > 1 {
		return c.Groups[gi].Name + " (baseline)"
	}
	return c.Groups[gi].Name
}

// valueParts splits a cell's value into its median and its range, so the
// medians align right and the ranges left beside them.
func valueParts(metric string, v compare.Value) (string, string) {
	if len(v.Values) > 1 {
		return metricValue(metric, v.Median), "(" + metricValue(metric, v.Min) + "–" + metricValue(metric, v.Max) + ")"
	}
	return metricValue(metric, v.Median), ""
}

// stackedResults is the results table with one line per group under each
// workload: the metrics as columns, then the change against the baseline,
// moved under the line when it would pass the width. Where a group's line
// would pass the width, its name goes on a line of its own above its
// values; where even the values would, each metric is a line of its own.
func stackedResults(c *compare.Comparison, width int) string {
	colW := textWidth("COLUMN")
	for _, r := range c.Rows {
		for gi, cell := range r.Cells {
			if cell.Present {
				colW = max(colW, textWidth(rowGroupHeader(c, r, gi)))
			}
		}
	}
	medW := make([]int, len(c.Metrics))
	rngW := make([]int, len(c.Metrics))
	anyMedW := 0 // the widest median of any metric
	for mi := range c.Metrics {
		for _, r := range c.Rows {
			for _, cell := range r.Cells {
				if cell.Present {
					m, rg := valueParts(c.Metrics[mi], cell.Metrics[mi])
					medW[mi], rngW[mi] = max(medW[mi], textWidth(m)), max(rngW[mi], textWidth(rg))
				}
			}
		}
		anyMedW = max(anyMedW, medW[mi])
		if rngW[mi] > 0 {
			rngW[mi]++
		}
		if extra := textWidth(c.Metrics[mi]) - medW[mi] - rngW[mi]; extra > 0 {
			medW[mi] += extra
		}
	}
	var metricsHead string
	for mi, m := range c.Metrics {
		metricsHead += "  " + pad(padLeft(m, medW[mi]), medW[mi]+rngW[mi])
	}
	values := func(cell compare.Cell) string {
		var line string
		for mi, m := range c.Metrics {
			med, rg := valueParts(m, cell.Metrics[mi])
			if rg != "" {
				rg = " " + rg
			}
			line += "  " + padLeft(med, medW[mi]) + pad(rg, rngW[mi])
		}
		return line
	}
	head := "  " + pad("COLUMN", colW) + metricsHead
	switch {
	case textWidth(head) <= width:
		return stackedRows(c, width, func(b *strings.Builder, r compare.Row) {
			h := head
			if len(c.Groups) > 1 {
				// The longest header that fits; none when even "CHANGE" would
				// pass the width (the changes then go under each line anyway).
				for _, vs := range []string{"  CHANGE vs " + c.Groups[r.Baseline].Name, "  CHANGE vs baseline", "  CHANGE"} {
					if textWidth(h+vs) <= width {
						h += vs
						break
					}
				}
			}
			b.WriteString(strings.TrimRight(h, " ") + "\n")
		}, func(b *strings.Builder, r compare.Row, gi int) {
			cell := r.Cells[gi]
			line := "  " + pad(rowGroupHeader(c, r, gi), colW) + values(cell)
			if gi == r.Baseline {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				return
			}
			changeAt := textWidth(head) + 2
			ch := cellChange(c, cell)
			if changeAt+textWidth(ch) <= width {
				b.WriteString(line + "  " + ch + "\n")
				return
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			indent := strings.Repeat(" ", min(changeAt, width/2))
			b.WriteString(wrap(ch, indent, indent+"  ", width))
		})
	case textWidth("    "+metricsHead) <= width:
		// The name above, the values in columns under one header.
		return stackedRows(c, width, func(b *strings.Builder, _ compare.Row) {
			b.WriteString(strings.TrimRight("    "+metricsHead, " ") + "\n")
		}, func(b *strings.Builder, r compare.Row, gi int) {
			b.WriteString(wrap(rowGroupHeader(c, r, gi), "  ", "    ", width))
			b.WriteString(strings.TrimRight("    "+values(r.Cells[gi]), " ") + "\n")
			if gi != r.Baseline {
				b.WriteString(wrap("change: "+cellChange(c, r.Cells[gi]), "      ", "        ", width))
			}
		})
	}
	// The name above, then one line per metric.
	nameW := 0
	for _, m := range c.Metrics {
		nameW = max(nameW, textWidth(m))
	}
	return stackedRows(c, width, func(*strings.Builder, compare.Row) {}, func(b *strings.Builder, r compare.Row, gi int) {
		b.WriteString(wrap(rowGroupHeader(c, r, gi), "  ", "    ", width))
		for mi, m := range c.Metrics {
			med, rg := valueParts(m, r.Cells[gi].Metrics[mi])
			line := strings.TrimRight("      "+pad(m, nameW)+"  "+padLeft(med, anyMedW)+" "+rg, " ")
			if textWidth(line) > width {
				line = strings.TrimSuffix(wrap(med+" "+rg, "      "+pad(m, nameW)+"  ", strings.Repeat(" ", 8+nameW), width), "\n")
			}
			b.WriteString(line + "\n")
		}
		if gi != r.Baseline {
			b.WriteString(wrap("change: "+cellChange(c, r.Cells[gi]), "      ", "        ", width))
		}
	})
}

// stackedRows writes each workload of the stacked results: its name and
// parameters, its header, a group after another, and the groups it was
// not measured in.
func stackedRows(c *compare.Comparison, width int, header func(*strings.Builder, compare.Row), group func(*strings.Builder, compare.Row, int)) string {
	var b strings.Builder
	for ri, r := range c.Rows {
		if ri > 0 {
			b.WriteString("\n")
		}
		b.WriteString(wrap(r.Params, r.Name+"  ", strings.Repeat(" ", textWidth(r.Name)+2), width))
		header(&b, r)
		for gi, cell := range r.Cells {
			if cell.Present {
				group(&b, r, gi)
			}
		}
		if abs := absentIn(c, r); len(abs) > 0 {
			b.WriteString(wrap("not measured in "+cappedList(abs, 4), "  ", "    ", width))
		}
	}
	return b.String()
}
