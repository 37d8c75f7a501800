package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// runner carries the state of one Run across workloads.
type runner struct {
	eng       Engine
	log       *slog.Logger
	t         *target
	env       environment
	now       func() time.Time
	progress  func(Progress)
	laidOut   uint64 // bytes at the start of the test file that hold real data
	extent    uint64
	index     int
	count     int
	remaining time.Duration
	// sampleEvery is the host and device series' interval.
	sampleEvery time.Duration
	// cacheSettle is how long the cache's counters take to show all the
	// I/O done (bcache's accounting interval), waited before reading them
	// after a repetition.
	cacheSettle time.Duration
}

func (r *runner) runOne(ctx context.Context, w workload.Workload, rep, repeat int) (record.Repetition, error) {
	if err := ctx.Err(); err != nil {
		return record.Repetition{}, err
	}
	if err := r.prepareFile(ctx, w, rep, repeat); err != nil {
		return record.Repetition{}, err
	}
	p := r.params(w)
	var last engine.Snapshot
	var lastAt time.Duration
	if r.progress != nil {
		p.Progress = func(s engine.Snapshot) {
			pr := Progress{
				Workload: w.Name, Index: r.index, Count: r.count, Repetition: rep, Repeat: repeat,
				Phase: "run", Elapsed: s.Elapsed, Duration: w.Runtime + w.Ramp,
			}
			if s.Ramping {
				pr.Phase = "ramp"
			}
			if dt := (s.Elapsed - lastAt).Seconds(); dt > 0 {
				pr.ReadIOPS = float64(s.ReadIOs-last.ReadIOs) / dt
				pr.WriteIOPS = float64(s.WriteIOs-last.WriteIOs) / dt
				pr.ReadBps = float64(s.ReadBytes-last.ReadBytes) / dt
				pr.WriteBps = float64(s.WriteBytes-last.WriteBytes) / dt
			}
			pr.ETA = r.remaining
			if pr.Duration > 0 {
				pr.ETA += max(pr.Duration-s.Elapsed, 0)
			} else if rate := pr.ReadBps + pr.WriteBps; rate > 0 {
				total := float64(w.SizeBytes) * float64(w.Jobs)
				done := float64(s.ReadBytes + s.WriteBytes)
				pr.ETA += time.Duration(max(total-done, 0) / rate * float64(time.Second))
			}
			last, lastAt = s, s.Elapsed
			r.progress(pr)
		}
	}
	var before engine.DiskStats
	haveStats := false
	if r.t.haveDev {
		var err error
		before, err = engine.ReadDiskStats(r.t.roots, r.t.major, r.t.minor)
		haveStats = err == nil
	}
	cacheBefore, cacheErr := r.t.cacheCounters()
	start := r.now()
	r.log.Info("workload started", "workload", w.Name, "repetition", rep, "path", r.t.path)
	wallStart := time.Now()
	series := startSampler(r.t.roots, r.t, r.sampleEvery)
	res, err := r.eng.Run(ctx, p)
	hostSamples, devSamples := series.finish()
	hostCPU := series.cpuNSPerIO()
	// The diskstats bracket spans the whole call (ramp, setup, drain), so
	// utilization and queue depth are over that, not the measured window.
	wall := time.Since(wallStart)
	if err != nil {
		r.log.Info("workload failed", "workload", w.Name, "err", err)
		if errors.Is(err, engine.ErrParams) {
			return record.Repetition{}, workload.Usagef("workload %s: %w", w.Name, err)
		}
		if ctx.Err() != nil {
			return record.Repetition{}, ctx.Err()
		}
		return record.Repetition{}, fmt.Errorf("workload %s on %s: %w", w.Name, r.t.where(), err)
	}
	r.log.Info("workload finished", "workload", w.Name, "repetition", rep)
	if r.t.open != r.t.path {
		// The engine names what it opened; the record names the file.
		for i, s := range res.Warnings {
			res.Warnings[i] = strings.ReplaceAll(s, r.t.open, r.t.path)
		}
	}
	one := repetitionOf(res, rep, start)
	one.HostSamples, one.DeviceSamples, one.HostCPUNSPerIO = hostSamples, devSamples, hostCPU
	stalled(&one, w, res.Elapsed)
	if cacheBefore != nil {
		select {
		case <-ctx.Done():
			return record.Repetition{}, ctx.Err()
		case <-time.After(r.cacheSettle):
		}
		var after *hwinfo.CacheCounters
		if after, cacheErr = r.t.cacheCounters(); after != nil {
			one.Cache = record.NewCacheIO(r.t.cacheDev, *cacheBefore, *after)
		}
	}
	if cacheErr != nil {
		one.Warnings = append(one.Warnings, fmt.Sprintf("%s: cache counters not recorded: %v", w.Name, cacheErr))
	}
	if haveStats {
		if after, err := engine.ReadDiskStats(r.t.roots, r.t.major, r.t.minor); err == nil {
			one.Device = deviceIO(r.t.ident.Device, after.Sub(before), wall, res.Read.Bytes+res.Write.Bytes)
			if why := agreementWarning(w, one); why != "" {
				one.Warnings = append(one.Warnings, why)
			}
		}
	}
	if w.Writes() && w.Runtime == 0 && w.OffsetBytes == 0 && r.t.ident.Kind == record.KindDir {
		r.laidOut = max(r.laidOut, w.SizeBytes) // one full pass wrote every block
	}
	return one, nil
}

// prepareFile brings a directory's test file into the state w needs: fresh
// (empty, sparse) for a first write, else holding real data up to the extent
// so no read hits a hole.
func (r *runner) prepareFile(ctx context.Context, w workload.Workload, rep, repeat int) error {
	if r.t.ident.Kind != record.KindDir {
		return nil
	}
	if w.Fresh {
		// Truncating to 0 frees every block; growing again makes a hole
		// the engine's writes must allocate.
		if err := os.Truncate(r.t.open, 0); err != nil {
			return fmt.Errorf("reset test file: %w", err)
		}
		if err := os.Truncate(r.t.open, int64(w.OffsetBytes+w.SizeBytes)); err != nil {
			return fmt.Errorf("reset test file: %w", err)
		}
		r.laidOut = 0
		return nil
	}
	if r.laidOut >= w.OffsetBytes+w.SizeBytes {
		return nil
	}
	if r.progress != nil {
		r.progress(Progress{Workload: w.Name, Index: r.index, Count: r.count, Repetition: rep, Repeat: repeat, Phase: "layout"})
	}
	r.log.Info("laying out test file", "path", r.t.path, "bytes", r.extent)
	kind, pct, _ := workload.ParseData(w.Data)
	if err := r.eng.Layout(ctx, r.t.open, int64(r.extent), dataPattern(kind, pct)); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("lay out test file on %s: %w", r.t.where(), err)
	}
	r.laidOut = r.extent
	return nil
}

func dataPattern(kind string, pct int) engine.DataPattern {
	switch kind {
	case "zeros":
		return engine.DataPattern{Kind: engine.DataZeros}
	case "compress":
		return engine.DataPattern{Kind: engine.DataCompressible, CompressPercent: pct}
	}
	return engine.DataPattern{Kind: engine.DataRandom}
}

// params maps a planned workload to the engine's parameters.
func (r *runner) params(w workload.Workload) engine.Params {
	kind, pct, _ := workload.ParseData(w.Data)
	rw := engine.RW(w.RW)
	// The engine reads RWMixRead 0 as "default 50"; an all-write or
	// all-read mix is the plain random pattern anyway.
	if rw == engine.RandRW && w.RWMixRead == 0 {
		rw = engine.RandWrite
	} else if rw == engine.RandRW && w.RWMixRead == 100 {
		rw = engine.RandRead
	}
	return engine.Params{
		Path:      r.t.open,
		Roots:     r.t.roots,
		RW:        rw,
		BlockSize: int64(w.BlockBytes),
		Size:      int64(w.SizeBytes),
		Offset:    int64(w.OffsetBytes),
		Jobs:      w.Jobs,
		IODepth:   w.IODepth,
		Runtime:   w.Runtime,
		Ramp:      w.Ramp,
		RWMixRead: w.RWMixRead,
		Fsync:     w.Fsync,
		Seed:      w.Seed,
		Direct:    w.Direct,
		Engine:    w.Engine,
		Data:      dataPattern(kind, pct),
		// Validated when planned: a bad one cannot get here.
		Distribution: engineDistribution(w.Distribution),
	}
}

// engineDistribution maps a workload's distribution to the engine's.
func engineDistribution(v string) engine.Distribution {
	d, err := workload.ParseDistribution(v)
	if err != nil {
		return engine.Distribution{Kind: "invalid " + v} // the engine refuses it as a usage error
	}
	out := engine.Distribution{Kind: d.Kind, Theta: d.Theta}
	for _, z := range d.Zones {
		out.Zones = append(out.Zones, engine.Zone{AccessPercent: z[0], SizePercent: z[1]})
	}
	return out
}
