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
	// within (0: DefaultWidth).
	Width int
	// Wide keeps one column per group (and one change column per
	// non-baseline group) whatever the width: the full table.
	Wide bool
}

// DefaultWidth is what the table output fits when nothing else is said:
// a terminal of 120 columns, or a pasted block in an issue.
const DefaultWidth = 120

func (l Layout) width() int {
	if l.Width <= 0 {
		return DefaultWidth
	}
	return l.Width
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
// starting with first and the rest with indent; a word longer than a line
// stays whole.
func wrap(s, first, indent string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(s) {
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
// moved under the line when it would pass the width.
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
	for mi := range c.Metrics {
		for _, r := range c.Rows {
			for _, cell := range r.Cells {
				if cell.Present {
					m, rg := valueParts(c.Metrics[mi], cell.Metrics[mi])
					medW[mi], rngW[mi] = max(medW[mi], textWidth(m)), max(rngW[mi], textWidth(rg))
				}
			}
		}
		if rngW[mi] > 0 {
			rngW[mi]++
		}
		if extra := textWidth(c.Metrics[mi]) - medW[mi] - rngW[mi]; extra > 0 {
			medW[mi] += extra
		}
	}
	var b strings.Builder
	head := "  " + pad("COLUMN", colW)
	for mi, m := range c.Metrics {
		head += "  " + pad(padLeft(m, medW[mi]), medW[mi]+rngW[mi])
	}
	changeAt := textWidth(head) + 2
	for ri, r := range c.Rows {
		if ri > 0 {
			b.WriteString("\n")
		}
		b.WriteString(wrap(r.Params, r.Name+"  ", strings.Repeat(" ", textWidth(r.Name)+2), width))
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
		for gi, cell := range r.Cells {
			if !cell.Present {
				continue
			}
			line := "  " + pad(rowGroupHeader(c, r, gi), colW)
			for mi, m := range c.Metrics {
				med, rg := valueParts(m, cell.Metrics[mi])
				if rg != "" {
					rg = " " + rg
				}
				line += "  " + padLeft(med, medW[mi]) + pad(rg, rngW[mi])
			}
			if gi == r.Baseline {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				continue
			}
			ch := cellChange(c, cell)
			if changeAt+textWidth(ch) <= width {
				b.WriteString(line + "  " + ch + "\n")
				continue
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			indent := strings.Repeat(" ", min(changeAt, width/2))
			b.WriteString(wrap(ch, indent, indent+"  ", width))
		}
		if abs := absentIn(c, r); len(abs) > 0 {
			b.WriteString(wrap("not measured in "+cappedList(abs, 4), "  ", "    ", width))
		}
	}
	return b.String()
}
