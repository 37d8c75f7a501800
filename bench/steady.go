package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/units"
)

// SNIA PTS preconditioning: the whole device written PreconditionPasses
// times with sequential writes of PreconditionBlock, so every flash block
// of an SSD holds data and the drive's garbage collection runs during the
// measurement as it will in use.
const (
	PreconditionPasses = 2
	PreconditionBlock  = 128 << 10
)

// checkPrecondition refuses a --precondition that cannot be done, before
// anything runs: the fill writes a whole raw device, so it needs a device,
// the permission to write it, and a device nobody uses (not mounted, not
// the system's). --steady-state's own checks are workload.Plan's.
func checkPrecondition(req workload.Request, t *target) error {
	if req.Precondition {
		if t.ident.Kind != record.KindDevice {
			return workload.Usagef("--precondition writes a whole raw device; %s is a %s", t.ident.Path, t.ident.Kind)
		}
		if !req.AllowDeviceWrite {
			return fmt.Errorf("--precondition writes all of %s twice (pass --allow-device-write to destroy its data): %w", t.path, ErrRefused)
		}
		if why := t.deviceBusy(); why != "" {
			return fmt.Errorf("will not precondition %s: %s: %w", t.path, why, ErrRefused)
		}
		if t.size < PreconditionBlock {
			return workload.Usagef("--precondition: %s has %s, less than one %s write", t.path, units.FormatSize(t.size), units.FormatSize(PreconditionBlock))
		}
	}
	return nil
}

// precondition fills the device: PreconditionPasses sequential passes of
// PreconditionBlock writes over all of it (the tail that is not a whole
// block is left), with progress.
func (r *runner) precondition(ctx context.Context) (*record.Precondition, error) {
	size := r.t.size / PreconditionBlock * PreconditionBlock
	p := engine.Params{
		Path: r.t.path, RW: engine.Write, BlockSize: PreconditionBlock, Size: int64(size),
		Jobs: 1, IODepth: 32, Direct: true, Engine: engine.EngineAuto,
	}
	out := &record.Precondition{Passes: PreconditionPasses, BlockBytes: PreconditionBlock, DeviceBytes: size}
	start := time.Now()
	for pass := 1; pass <= PreconditionPasses; pass++ {
		if r.progress != nil {
			p.Progress = func(s engine.Snapshot) {
				pr := Progress{
					Workload: "precondition", Repetition: pass, Repeat: PreconditionPasses, Phase: "precondition",
					Elapsed: s.Elapsed, DoneBytes: s.WriteBytes, TotalBytes: size,
				}
				if sec := s.Elapsed.Seconds(); sec > 0 && s.WriteBytes > 0 {
					pr.WriteBps = float64(s.WriteBytes) / sec
					left := float64(size-min(s.WriteBytes, size)) + float64(size)*float64(PreconditionPasses-pass)
					pr.ETA = time.Duration(left / pr.WriteBps * float64(time.Second))
				}
				r.progress(pr)
			}
		}
		r.log.Info("precondition pass started", "path", r.t.path, "pass", pass, "bytes", size)
		if _, err := r.eng.Run(ctx, p); err != nil {
			r.log.Info("precondition pass failed", "path", r.t.path, "pass", pass, "err", err)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("precondition %s, pass %d: %w", r.t.where(), pass, err)
		}
		r.log.Info("precondition pass finished", "path", r.t.path, "pass", pass)
	}
	el := time.Since(start)
	out.ElapsedMS = ms(el)
	if s := el.Seconds(); s > 0 {
		out.BWBytesPerS = float64(size) * PreconditionPasses / s
	}
	return out, nil
}

// steadyValue is the value --steady-state tracks per round: IOPS of a
// random workload, bytes per second of a sequential one (SNIA's IOPS and
// throughput tests), both directions added.
func steadyValue(w workload.Workload, r record.Repetition) (metric string, v float64) {
	for _, d := range []*record.DirResult{r.Read, r.Write} {
		if d == nil {
			continue
		}
		if w.Random() {
			v += d.IOPS
		} else {
			v += d.BWBytesPerS
		}
	}
	if w.Random() {
		return "iops", v
	}
	return "bw_bytes_per_s", v
}

// judgeSteady sets wr's steady-state verdict from its rounds so far and
// says whether it may stop.
func judgeSteady(wr *record.WorkloadResult) bool {
	var vals []float64
	metric := ""
	for _, r := range wr.Runs {
		var v float64
		metric, v = steadyValue(wr.Params, r)
		vals = append(vals, v)
	}
	ss := record.JudgeSteady(metric, vals)
	wr.SteadyState = &ss
	return ss.Reached
}
