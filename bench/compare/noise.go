package compare

import (
	"fmt"
	"math"
)

// NoiseFloor is the smallest change a row's repetitions could tell from
// its run-to-run spread, and the repetitions a side it would take to tell
// a change as large as that spread.
type NoiseFloor struct {
	// SpreadPct is the run-to-run spread of the row's columns (the robust
	// standard deviation of log MB/s, pooled, in percent).
	SpreadPct float64 `json:"spread_pct"`
	// Runs is the fewest runs a column of the row has.
	Runs int `json:"runs"`
	// DetectablePct is the change these runs detect four times in five
	// (two-sided α, 80% power, Mann–Whitney's efficiency under a normal
	// spread); RunsForSpread the runs a side that detect a change as large
	// as the spread.
	DetectablePct float64 `json:"detectable_pct"`
	RunsForSpread int     `json:"runs_for_spread"`
}

// String says it for a report: "with 5 runs and 8.0% spread, changes
// under 14.2% cannot be told; 14 runs would show 8.0%".
func (n NoiseFloor) String() string {
	if n.Runs < MinRuns() {
		return fmt.Sprintf("with %d runs a column no change can be told (the test needs %d a side); %.1f%% run-to-run spread", n.Runs, MinRuns(), n.SpreadPct)
	}
	s := fmt.Sprintf("with %d runs a column and %.1f%% run-to-run spread, changes under %.1f%% cannot be told", n.Runs, n.SpreadPct, n.DetectablePct)
	if n.RunsForSpread > n.Runs {
		s += fmt.Sprintf("; %d runs would show %.1f%%", n.RunsForSpread, n.SpreadPct)
	}
	return s
}

// mwEfficiency is the Mann–Whitney test's asymptotic relative efficiency
// against the t-test for normal data, 3/π: it needs 1/0.955 the runs.
const mwEfficiency = 3 / math.Pi

// power80 is the standard normal quantile of 80% power.
const power80 = 0.8416212335729143

// noiseFloor pools the row's columns' spreads of log MB/s (MAD-based, so
// one stray run does not set it) and turns it into the change its runs
// can detect.
func noiseFloor(row *Row) *NoiseFloor {
	var sum float64
	cols, runs := 0, 0
	for _, cell := range row.Cells {
		if !cell.Present || len(cell.Metrics) == 0 || len(cell.Metrics[0].Values) < 2 {
			continue
		}
		var logs []float64
		for _, v := range cell.Metrics[0].Values {
			if v > 0 {
				logs = append(logs, math.Log(v))
			}
		}
		if len(logs) < 2 {
			continue
		}
		m := median(logs)
		dev := make([]float64, len(logs))
		for i, l := range logs {
			dev[i] = math.Abs(l - m)
		}
		sd := 1.4826 * median(dev)
		sum += sd * sd
		cols++
		if runs == 0 || len(logs) < runs {
			runs = len(logs)
		}
	}
	if cols < 2 {
		return nil
	}
	sd := math.Sqrt(sum / float64(cols))
	z := normalQuantile(1-Alpha/2) + power80
	detect := z * sd * math.Sqrt(2/(float64(runs)*mwEfficiency))
	nf := &NoiseFloor{SpreadPct: (math.Exp(sd) - 1) * 100, Runs: runs, DetectablePct: (math.Exp(detect) - 1) * 100}
	if sd > 0 {
		// A change as large as the spread: log(1+spread) = sd.
		nf.RunsForSpread = int(math.Ceil(2 * z * z / mwEfficiency))
		nf.RunsForSpread = max(nf.RunsForSpread, MinRuns())
	}
	return nf
}
