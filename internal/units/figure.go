package units

import (
	"fmt"
	"math"
)

// FormatFigure formats a measured figure with precision that suits its
// size: 3 significant digits at least, never a useless tail of decimals on
// large numbers (1234, 85.3, 1.40, 0.0123).
func FormatFigure(v float64) string {
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

// FormatNanoseconds formats a time in nanoseconds (a latency, a CPU time
// per I/O) in the unit people read it in, as a FormatFigure: 850 ns,
// 3.20 µs, 85.0 µs, 1.40 ms, 2.00 s.
func FormatNanoseconds(ns float64) string {
	switch a := math.Abs(ns); {
	case a >= 1e9:
		return FormatFigure(ns/1e9) + " s"
	case a >= 1e6:
		return FormatFigure(ns/1e6) + " ms"
	case a >= 1e3:
		return FormatFigure(ns/1e3) + " µs"
	}
	return FormatFigure(ns) + " ns"
}
