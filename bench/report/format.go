package report

import (
	"fmt"
	"math"
	"strings"
)

// The one set of formatters behind every table, list and chart label, so
// a figure reads the same wherever it is shown.

// num formats a figure with precision that suits its size: 3 significant
// digits at least, never a useless tail of decimals on large numbers.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100 || v == 0:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// mbps formats bytes per second as MB/s, 10^6 bytes per second (as drive
// vendors and fio's MB/s do, and as every header says).
func mbps(bytesPerS float64) string { return num(bytesPerS / 1e6) }

// latency formats nanoseconds with a unit people read: 85 µs, 1.4 ms; "-"
// when there is none.
func latency(ns float64) string {
	switch {
	case ns <= 0:
		return "-"
	case ns >= 1e9:
		return num(ns/1e9) + " s"
	case ns >= 1e6:
		return num(ns/1e6) + " ms"
	case ns >= 1e3:
		return num(ns/1e3) + " µs"
	}
	return num(ns) + " ns"
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
