package report

import (
	"strings"

	"github.com/diskprep/diskprep/internal/units"
)

// The one set of formatters behind every table, list and chart label, so
// a figure reads the same wherever it is shown.

// num formats a figure with precision that suits its size.
func num(v float64) string { return units.FormatFigure(v) }

// mbps formats bytes per second as MB/s, 10^6 bytes per second (as drive
// vendors and fio's MB/s do, and as every header says).
func mbps(bytesPerS float64) string { return num(bytesPerS / 1e6) }

// latency formats nanoseconds with a unit people read: 85.0 µs, 1.40 ms;
// "-" when there is none.
func latency(ns float64) string {
	if ns <= 0 {
		return "-"
	}
	return units.FormatNanoseconds(ns)
}

// dash stands in for an empty value in a table cell.
func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// mdCell keeps a value from breaking a Markdown table: pipes escaped, line
// breaks joined, nothing shown as a dash.
func mdCell(s string) string {
	return dash(strings.NewReplacer("|", `\|`, "\n", " ").Replace(s))
}
