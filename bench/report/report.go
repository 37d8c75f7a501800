// Package report is every rendering of diskprep meant for people: a result
// record (what `bench` prints and `results show` shows, one renderer for
// both), the results list, the host inventory, a comparison
// (bench/compare), a cache benchmark (cachebench: its phases, the
// comparison of its records and what the cache buys), and the live
// progress line of a run. Outputs: an
// aligned terminal table, Markdown for posts and issues, CSV for
// spreadsheets, JSON for programs, one self-contained HTML file with inline
// SVG charts, and the main chart alone as SVG.
//
// Figures are formatted in one place (format.go): one number formatter,
// one latency formatter, one Markdown cell escaper, one dash for empty.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
)

// ErrFormat is returned for an output format this package does not know.
var ErrFormat = errors.New("unknown report format")

// Formats lists the comparison outputs in the order help text shows them.
var Formats = []string{"table", "markdown", "csv", "json", "html", "svg"}

// Write renders c in format, in the default layout.
func Write(w io.Writer, format string, c *compare.Comparison) error {
	return WriteLayout(w, format, c, Layout{})
}

// WriteLayout renders c in format; l steers the width of the table,
// Markdown and HTML outputs (CSV and JSON are one line per value anyway).
func WriteLayout(w io.Writer, format string, c *compare.Comparison, l Layout) error {
	switch format {
	case "table", "":
		return TableLayout(w, c, l)
	case "markdown", "md":
		return markdown(w, c, l)
	case "csv":
		return CSV(w, c)
	case "json":
		return JSON(w, c)
	case "html":
		return htmlPage(w, c, l)
	case "svg":
		return SVG(w, c)
	}
	return fmt.Errorf("%q (valid: %s): %w", format, strings.Join(Formats, ", "), ErrFormat)
}

// ComparisonSchema names the JSON shape of a comparison (compare,
// fscompare, bench of several targets).
const ComparisonSchema = "diskprep/comparison/v1"

// JSON writes the comparison as an indented JSON document.
func JSON(w io.Writer, c *compare.Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema string `json:"schema"`
		*compare.Comparison
	}{ComparisonSchema, c})
}

// metricValue formats a value of metric (latency metrics are in µs).
func metricValue(metric string, v float64) string {
	if metric == compare.MetricLatP99 || metric == compare.MetricHostCPU {
		return latency(v * 1e3)
	}
	return num(v)
}

// valueText is a cell's median with its range when there are repetitions.
func valueText(metric string, v compare.Value) string {
	if len(v.Values) == 0 && metric == compare.MetricHostCPU {
		return "not recorded"
	}
	s := metricValue(metric, v.Median)
	if len(v.Values) > 1 {
		s += " (" + metricValue(metric, v.Min) + "–" + metricValue(metric, v.Max) + ")"
	}
	return s
}

func pct(p float64) string {
	if math.Abs(p) < 0.05 {
		return "0.0%"
	}
	return fmt.Sprintf("%+.1f%%", p)
}

func pValue(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

// changeText is what a non-baseline cell says against the baseline: a
// percentage only when it means something, and always why.
func changeText(v compare.Value) string {
	switch v.Verdict {
	case compare.VerdictBaseline:
		return "baseline"
	case compare.VerdictMissing:
		return "no baseline"
	case compare.VerdictSame:
		s := "no significant difference"
		if v.P != nil {
			s += " (" + pValue(*v.P) + ")"
		}
		return s
	case compare.VerdictEngineBound:
		s := "not judged: within the engine's own spread"
		if v.ChangePct != nil {
			s = pct(*v.ChangePct) + " (" + s + ")"
		}
		return s
	case compare.VerdictUnstable:
		s := "unstable"
		if v.DriftPct != nil {
			s += fmt.Sprintf(": %s drifted %s during its runs", v.DriftIn, pct(*v.DriftPct))
		}
		return s
	case compare.VerdictTooFew:
		if v.ChangePct == nil {
			return compare.VerdictTooFew
		}
		return pct(*v.ChangePct) + " (" + compare.VerdictTooFew + ")"
	case compare.VerdictSignificant:
		word := "worse"
		if v.Better {
			word = "better"
		}
		s := word
		if v.ChangePct != nil {
			s = pct(*v.ChangePct) + " " + word
		}
		var why []string
		if v.P != nil {
			why = append(why, pValue(*v.P))
		}
		if v.CILowPct != nil && v.CIHighPct != nil {
			why = append(why, fmt.Sprintf("%s CI %s to %s", compare.LevelText(v.CILevel), pct(*v.CILowPct), pct(*v.CIHighPct)))
		}
		if len(why) > 0 {
			s += " (" + strings.Join(why, ", ") + ")"
		}
		return s
	}
	return v.Verdict
}

// groupHeader names a column with its number of records when pooled.
func groupHeader(c *compare.Comparison, gi int) string {
	g := c.Groups[gi]
	if gi == 0 && len(c.Groups) > 1 {
		return g.Name + " (baseline)"
	}
	return g.Name
}

// line is one printed row of the comparison: a row's metric across groups.
type line struct {
	row, metric string
	first       bool // first metric of its row
	values      []string
	changes     []string // per non-baseline group
}

func lines(c *compare.Comparison) []line {
	var out []line
	for _, r := range c.Rows {
		for mi, m := range c.Metrics {
			l := line{row: r.Name, metric: m, first: mi == 0}
			for gi, cell := range r.Cells {
				if !cell.Present {
					l.values = append(l.values, "-")
					if gi > 0 {
						l.changes = append(l.changes, "-")
					}
					continue
				}
				v := cell.Metrics[mi]
				l.values = append(l.values, valueText(m, v))
				if gi > 0 {
					ch := changeText(v)
					if r.Baseline != 0 && gi != r.Baseline {
						// The column header says vs the first group,
						// which this row lacks.
						ch += " vs " + c.Groups[r.Baseline].Name
					}
					l.changes = append(l.changes, ch)
				}
			}
			out = append(out, l)
		}
	}
	return out
}

func title(c *compare.Comparison) string {
	if len(c.Groups) > 3 {
		return fmt.Sprintf("%d columns against %s", len(c.Groups), c.Groups[0].Name)
	}
	names := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		names[i] = g.Name
	}
	return strings.Join(names, " vs ")
}

func byText(c *compare.Comparison) string {
	s := "by " + c.By
	if len(c.Split) > 0 {
		s += ", split by " + andList(c.Split)
	}
	if c.AutoBy {
		s += " (chosen automatically; --by changes it)"
	}
	return s
}

// andList joins items as a sentence does: "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
