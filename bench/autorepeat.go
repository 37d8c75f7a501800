package bench

import (
	"fmt"
	"math"

	"github.com/diskprep/diskprep/bench/record"
)

// AutoRepeatHalfWidth is --repeat auto's goal: the 95% interval of each
// direction's median throughput within ±3.5% of it, the Phoronix Test
// Suite's criterion for running a test again.
const AutoRepeatHalfWidth = 0.035

// autoStop says whether a workload under --repeat auto has run enough: at
// least minRuns runs, and the median's interval narrow enough or maxRuns
// reached. why is for the record (RepeatStop); warn is set when it
// stopped without converging.
func autoStop(wr record.WorkloadResult, minRuns, maxRuns int) (stop bool, why, warn string) {
	n := len(wr.Runs)
	if n < minRuns {
		return false, "", ""
	}
	worst := 0.0
	for _, dir := range []string{"read", "write"} {
		var bw []float64
		for _, r := range wr.Runs {
			if d := r.Dir(dir); d != nil {
				bw = append(bw, d.BWBytesPerS)
			}
		}
		if len(bw) == 0 {
			continue
		}
		med := record.Median(bw)
		lo, hi := record.MedianCI95(bw)
		if med <= 0 {
			worst = math.Inf(1)
			continue
		}
		worst = math.Max(worst, math.Max(hi-med, med-lo)/med)
	}
	switch {
	case worst <= AutoRepeatHalfWidth:
		return true, fmt.Sprintf("stopped after %d runs: the 95%% interval of the median is within ±%.1f%% (goal ±%.1f%%)", n, worst*100, AutoRepeatHalfWidth*100), ""
	case n >= maxRuns:
		why = fmt.Sprintf("stopped at the most runs allowed, %d: the 95%% interval of the median is ±%.1f%%, wider than the goal ±%.1f%%", n, worst*100, AutoRepeatHalfWidth*100)
		return true, why, fmt.Sprintf("%s: not stable after %d runs (95%% interval of the median ±%.1f%%, goal ±%.1f%%): a noisy target, or raise MAX of --repeat auto:MAX", wr.Params.Name, n, worst*100, AutoRepeatHalfWidth*100)
	}
	return false, "", ""
}
