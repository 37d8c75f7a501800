package record

// SeriesSummary is what the per-second host and device series of some
// repetitions come to, for outputs with no room for the series
// themselves (CSV, Prometheus): means over every sampled second (ramp
// included, as the series is), peaks of memory, and the device's wait per
// completed I/O. Each part is absent (HostSeconds or DeviceSeconds 0) when
// no repetition has that series.
type SeriesSummary struct {
	HostSeconds   int     // host samples summarised
	CPUUserPct    float64 // mean, % of all CPUs
	CPUSystemPct  float64
	CPUIOWaitPct  float64
	CPUStealPct   float64
	MemUsedPeak   uint64  // bytes, the largest sample
	PageCachePeak uint64  // bytes
	DeviceSeconds int     // device samples summarised
	DeviceUtilPct float64 // mean of the seconds' %util
	DeviceQueue   float64 // mean of the seconds' average I/Os in flight
	DeviceWaitMS  float64 // time per completed I/O over all seconds (iostat await); valid with DeviceIOs > 0
	DeviceIOs     uint64  // I/Os completed in the seconds summarised
}

// SummarizeSeries pools the series of the given repetitions, every second
// weighing alike (as compare's host checks do).
func SummarizeSeries(reps ...Repetition) SeriesSummary {
	var s SeriesSummary
	var waitMS float64
	for _, r := range reps {
		for _, h := range r.HostSamples {
			s.HostSeconds++
			s.CPUUserPct += h.CPUUserPct
			s.CPUSystemPct += h.CPUSystemPct
			s.CPUIOWaitPct += h.CPUIOWaitPct
			s.CPUStealPct += h.CPUStealPct
			s.MemUsedPeak = max(s.MemUsedPeak, h.MemUsedBytes)
			s.PageCachePeak = max(s.PageCachePeak, h.PageCacheBytes)
		}
		for _, d := range r.DeviceSamples {
			s.DeviceSeconds++
			s.DeviceUtilPct += d.UtilPercent
			s.DeviceQueue += d.QueueDepth
			waitMS += d.AvgWaitMS * float64(d.IOs)
			s.DeviceIOs += d.IOs
		}
	}
	if n := float64(s.HostSeconds); n > 0 {
		s.CPUUserPct, s.CPUSystemPct, s.CPUIOWaitPct, s.CPUStealPct = s.CPUUserPct/n, s.CPUSystemPct/n, s.CPUIOWaitPct/n, s.CPUStealPct/n
	}
	if n := float64(s.DeviceSeconds); n > 0 {
		s.DeviceUtilPct, s.DeviceQueue = s.DeviceUtilPct/n, s.DeviceQueue/n
	}
	if s.DeviceIOs > 0 {
		s.DeviceWaitMS = waitMS / float64(s.DeviceIOs)
	}
	return s
}
