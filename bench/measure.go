package bench

import (
	"fmt"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
)

// repetitionOf converts an engine result into the record's form: rates and
// percentiles are derived here, once, from the raw counts and histograms.
func repetitionOf(res *engine.Result, index int, start time.Time) record.Repetition {
	r := record.Repetition{
		Index:      index,
		Start:      start.UTC(),
		Engine:     res.Engine,
		Direct:     res.Direct,
		AlignBytes: res.Align,
		ElapsedMS:  ms(res.Elapsed),
		CPUUserS:   res.CPUUser.Seconds(),
		CPUSysS:    res.CPUSys.Seconds(),
		Warnings:   append([]string(nil), res.Warnings...),
	}
	if res.Read.IOs > 0 {
		r.Read = dirOf(res.Read, res.Elapsed)
	}
	if res.Write.IOs > 0 {
		r.Write = dirOf(res.Write, res.Elapsed)
	}
	r.EngineCPUNSPerIO = r.CPUNSPerIO()
	return r
}

// stalled keeps a direction the workload does that completed no I/O in
// the measured window: its zero is a measurement (the device stalled for
// the whole window), not a direction the workload lacks, and it says so.
func stalled(r *record.Repetition, w workload.Workload, elapsed time.Duration) {
	none := func(d **record.DirResult, dir string) {
		if *d != nil {
			return
		}
		*d = &record.DirResult{RuntimeMS: ms(elapsed), Samples: []record.Sample{}}
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no %s completed in the %s measured: the device stalled for all of it (its zero IOPS is in the results)",
			w.Name, dir, elapsed.Round(time.Millisecond)))
	}
	if w.Reads() && (w.RW != "randrw" || w.RWMixRead > 0) {
		none(&r.Read, "read")
	}
	if w.Writes() && (w.RW != "randrw" || w.RWMixRead < 100) {
		none(&r.Write, "write")
	}
}

func dirOf(d engine.DirResult, elapsed time.Duration) *record.DirResult {
	out := &record.DirResult{IOBytes: d.Bytes, IOs: d.IOs, RuntimeMS: ms(elapsed)}
	if s := elapsed.Seconds(); s > 0 {
		out.IOPS = float64(d.IOs) / s
		out.BWBytesPerS = float64(d.Bytes) / s
	}
	if h := d.Hist; h != nil && h.Count() > 0 {
		out.LatNS = record.Latency{
			Min:  float64(h.Min()),
			Mean: h.Mean(),
			P50:  float64(h.Percentile(50)),
			P90:  float64(h.Percentile(90)),
			P99:  float64(h.Percentile(99)),
			P999: float64(h.Percentile(99.9)),
			Max:  float64(h.Max()),
		}
	}
	out.Samples = make([]record.Sample, len(d.PerSecond))
	for i, s := range d.PerSecond {
		out.Samples[i] = record.Sample{IOs: s.IOs, Bytes: s.Bytes}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// deviceIO is the diskstats delta of a run with its agreement to the engine's
// byte count.
func deviceIO(name string, d engine.DiskDelta, elapsed time.Duration, engineBytes uint64) *record.DeviceIO {
	out := &record.DeviceIO{
		Name:        name,
		ReadBytes:   d.ReadBytes,
		WriteBytes:  d.WriteBytes,
		ReadIOs:     d.ReadIOs,
		WriteIOs:    d.WriteIOs,
		UtilPercent: d.Utilization(elapsed),
		AvgQueue:    d.AvgQueue(elapsed),
	}
	if engineBytes > 0 {
		a := float64(d.ReadBytes+d.WriteBytes) / float64(engineBytes) * 100
		out.AgreementPercent = &a
	}
	return out
}
