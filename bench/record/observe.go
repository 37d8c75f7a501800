package record

import (
	"fmt"
	"time"
)

// HostSample is one second of the host while a workload ran: CPU time
// split as /proc/stat counts it, in percent of all CPUs, and memory as
// /proc/meminfo says it at the end of the second.
type HostSample struct {
	TimeMS         float64 `json:"t_ms"`           // end of the second, from the start of the engine call
	CPUUserPct     float64 `json:"cpu_user_pct"`   // user + nice
	CPUSystemPct   float64 `json:"cpu_system_pct"` // system + irq + softirq
	CPUIOWaitPct   float64 `json:"cpu_iowait_pct"`
	CPUStealPct    float64 `json:"cpu_steal_pct"`    // taken by the hypervisor
	MemUsedBytes   uint64  `json:"mem_used_bytes"`   // MemTotal - MemAvailable
	PageCacheBytes uint64  `json:"page_cache_bytes"` // Cached + Buffers
}

// CPUBusyPct is the share of CPU time not idle and not waiting for I/O.
func (s HostSample) CPUBusyPct() float64 { return s.CPUUserPct + s.CPUSystemPct + s.CPUStealPct }

// DeviceSample is one second of the target device's block-layer counters
// (/sys/dev/block/MAJ:MIN/stat): what the kernel saw, whatever the engine
// thinks it did. For a loop device or a partition these are that device's
// own counters, not the disk under it.
type DeviceSample struct {
	TimeMS         float64 `json:"t_ms"`
	ReadIOPS       float64 `json:"read_iops"`
	WriteIOPS      float64 `json:"write_iops"`
	ReadBytesPerS  float64 `json:"read_bytes_per_s"`
	WriteBytesPerS float64 `json:"write_bytes_per_s"`
	QueueDepth     float64 `json:"queue_depth"`  // average I/Os in flight (iostat aqu-sz)
	UtilPercent    float64 `json:"util_percent"` // time with I/O in flight (iostat %util)
	AvgWaitMS      float64 `json:"avg_wait_ms"`  // per completed I/O, queue included (iostat await)
	InFlightAtEnd  uint64  `json:"in_flight"`    // I/Os in flight when the second ended
	IOs            uint64  `json:"ios"`
	Bytes          uint64  `json:"bytes"`
}

// Steady state (SNIA SSS PTS v2.0 §2.1): over a measurement window of
// SteadyWindow rounds, the tracked value's range is within SteadyRangePct
// of its average and the least-squares line's excursion across the window
// within SteadySlopePct of it; at most SteadyMaxRounds rounds.
const (
	SteadyWindow    = 5
	SteadyRangePct  = 20.0
	SteadySlopePct  = 10.0
	SteadyMaxRounds = 25
)

// SteadyState is a workload's --steady-state verdict.
type SteadyState struct {
	// Metric is the tracked value per round: IOPS for random workloads,
	// bytes per second for sequential ones, read and write added.
	Metric  string    `json:"metric"`
	Values  []float64 `json:"values"` // per round, in order
	Reached bool      `json:"reached"`
	// Round is the round that closed the first window meeting both
	// criteria (1-based); 0 when not reached.
	Round int `json:"round,omitempty"`
	// The window judged last (the steady one when reached): its first
	// round, average, range and fit excursion in percent of the average.
	WindowFirst   int     `json:"window_first_round,omitempty"`
	WindowAverage float64 `json:"window_average,omitempty"`
	RangePct      float64 `json:"window_range_pct,omitempty"`
	SlopePct      float64 `json:"window_slope_pct,omitempty"`
}

// Verdict is the line every report shows for the workload.
func (s *SteadyState) Verdict() string {
	if s == nil {
		return ""
	}
	if s.Reached {
		return fmt.Sprintf("steady state reached at round %d (rounds %d–%d: range %.1f%%, slope %.1f%% of the average)", s.Round, s.WindowFirst, s.Round, s.RangePct, s.SlopePct)
	}
	if len(s.Values) < SteadyWindow {
		return fmt.Sprintf("steady state not reached (%d rounds, a window needs %d)", len(s.Values), SteadyWindow)
	}
	return fmt.Sprintf("steady state not reached in %d rounds (last window: range %.1f%%, slope %.1f%% of the average; limits %.0f%% and %.0f%%)", len(s.Values), s.RangePct, s.SlopePct, SteadyRangePct, SteadySlopePct)
}

// JudgeSteady applies the SNIA rule to the rounds so far: the first
// window (of the last SteadyWindow rounds, as they come) meeting both
// criteria reaches steady state. A series shorter than a window is not
// steady. It is pure: bench calls it after every round.
func JudgeSteady(metric string, values []float64) SteadyState {
	s := SteadyState{Metric: metric, Values: append([]float64(nil), values...)}
	for end := SteadyWindow; end <= len(values); end++ {
		w := values[end-SteadyWindow : end]
		avg, rng, slope := windowStats(w)
		s.WindowFirst, s.WindowAverage = end-SteadyWindow+1, avg
		s.RangePct, s.SlopePct = 0, 0
		if avg > 0 {
			s.RangePct, s.SlopePct = rng/avg*100, slope/avg*100
		}
		if avg > 0 && s.RangePct <= SteadyRangePct && s.SlopePct <= SteadySlopePct {
			s.Reached, s.Round = true, end
			return s
		}
	}
	return s
}

// windowStats is the window's average, its range (max−min) and the
// excursion of its least-squares line across it, |slope|·(n−1).
func windowStats(w []float64) (avg, rng, excursion float64) {
	n := float64(len(w))
	lo, hi := w[0], w[0]
	var sx, sy, sxy, sxx float64
	for i, y := range w {
		x := float64(i)
		sx, sy, sxy, sxx = sx+x, sy+y, sxy+x*y, sxx+x*x
		lo, hi = min(lo, y), max(hi, y)
	}
	avg = sy / n
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	if slope < 0 {
		slope = -slope
	}
	return avg, hi - lo, slope * (n - 1)
}

// Measured are the repetitions the summary stands on: under
// --steady-state the steady window (or, not reached, the last window),
// the rounds before it being the device on its way there; else all.
func (wr *WorkloadResult) Measured() []Repetition {
	ss := wr.SteadyState
	if ss == nil || len(wr.Runs) < SteadyWindow {
		return wr.Runs
	}
	if ss.Reached && ss.Round <= len(wr.Runs) {
		return wr.Runs[ss.Round-SteadyWindow : ss.Round]
	}
	return wr.Runs[len(wr.Runs)-SteadyWindow:]
}

// Precondition is the device fill of --precondition: the whole device
// written Passes times with sequential writes of BlockBytes, so an SSD's
// flash is in use everywhere before it is measured (SNIA PTS).
type Precondition struct {
	Passes      int     `json:"passes"`
	BlockBytes  uint64  `json:"bs_bytes"`
	DeviceBytes uint64  `json:"device_bytes"`
	ElapsedMS   float64 `json:"elapsed_ms"`
	BWBytesPerS float64 `json:"bw_bytes_per_s"` // over all passes
}

// Health is the target disk's SMART state before and after a run
// (smartctl -j). Without smartctl, or a disk that answers none, Note says
// why and both readings are nil.
type Health struct {
	Device string         `json:"device"` // /dev/nvme0n1
	Tool   string         `json:"tool,omitempty"`
	Before *HealthReading `json:"before,omitempty"`
	After  *HealthReading `json:"after,omitempty"`
	Note   string         `json:"note,omitempty"`
}

// HealthReading is one smartctl reading. A nil field is one the disk does
// not report.
type HealthReading struct {
	Time         time.Time `json:"time"`
	Protocol     string    `json:"protocol,omitempty"` // NVMe, ATA, SCSI
	TemperatureC *float64  `json:"temperature_c,omitempty"`
	PowerOnHours *uint64   `json:"power_on_hours,omitempty"`
	// PercentUsed is NVMe's percentage_used, or for ATA 100 minus the
	// normalized value of the wear attribute (177, 231, 233, 202, 173).
	PercentUsed *float64 `json:"percentage_used,omitempty"`
	MediaErrors *uint64  `json:"media_errors,omitempty"` // NVMe media_errors; ATA reallocated+pending+uncorrectable
	CRCErrors   *uint64  `json:"crc_errors,omitempty"`   // ATA UDMA CRC (199); NVMe has none
	// Throttled is set when the disk reports thermal throttling: NVMe
	// critical_warning's temperature bit or time spent over the warning
	// or critical temperature (ThrottleMinutes).
	Throttled       bool    `json:"throttled,omitempty"`
	ThrottleMinutes *uint64 `json:"throttle_minutes,omitempty"`
	PassedSelfTest  *bool   `json:"smart_passed,omitempty"`
}
