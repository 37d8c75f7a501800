// Package bench runs a benchmark: it resolves and admits the target (a
// directory, file or block device; writes to a device only when allowed and
// unused), lays out and removes the test file, runs the planned workloads
// (bench/workload) with the I/O engine (bench/engine) round by round,
// turns the engine's raw measurements into a result record (bench/record)
// with the warnings a run reveals, and saves it. Planning, the record and
// its rendering (bench/report) live in their own packages; this one is the
// part that touches the machine.
package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// Run benchmarks req.Target: plan, resolve and check the target, lay out
// the test file, run every workload req.Repeat times (round by round, so drift
// over time spreads evenly), summarize and, when opts.ResultsDir is set, save
// the record. A test file it created is removed whatever happens.
//
// On cancellation it returns ctx's error; with req.KeepPartial it also returns
// (and saves) the record so far, marked partial. When the save fails it
// returns the record with an error wrapping record.ErrNotSaved (and ctx's
// error, if any), so the caller can still show what was measured.
func Run(ctx context.Context, req workload.Request, opts Options) (rec *record.Record, err error) {
	workloads, err := workload.Plan(req)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	eng := opts.Engine
	if eng == nil {
		eng = realEngine{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	repeat := max(req.Repeat, 1)

	start := now()
	id := record.NewID(start)
	t, err := resolveTarget(req.Target, id, opts.Host, opts.Roots)
	if err != nil {
		return nil, err
	}
	t.dm = opts.DeviceMapper
	t.claimed = t.claimedIn(opts.Claims)
	var warnings []string
	if workloads, warnings, err = t.admit(workloads, req.AllowDeviceWrite); err != nil {
		return nil, err
	}
	if t.ident.Kind == record.KindDir {
		// Before the free space is judged: a killed run's test file
		// would take the space this run's needs.
		for _, line := range removeLeftovers(t.ident.Path) {
			log.Debug(line)
			if opts.Notes != nil {
				fmt.Fprintln(opts.Notes, line)
			}
		}
	}
	extent := maxExtent(workloads)
	if err := t.check(workloads, extent); err != nil {
		return nil, err
	}
	if err := checkPrecondition(req, t); err != nil {
		return nil, err
	}
	if t.ident.Kind == record.KindDevice && t.haveDev && (req.Precondition || anyWrites(workloads)) && !t.claimed {
		release, err := t.claimDevice()
		if err != nil {
			return nil, err
		}
		defer release()
	}
	if req.SteadyState {
		repeat = record.SteadyMaxRounds
	}

	env := environment{
		FSType: t.ident.FSType, MountOptions: t.ident.MountOptions,
		Governors: readGovernors(opts.Roots),
	}
	if opts.Host != nil {
		env.RAMBytes = opts.Host.Memory.TotalBytes
	}
	if env.RAMBytes == 0 {
		env.RAMBytes, _ = opts.Roots.MemTotal()
	}
	if t.ident.Device != "" {
		env.DedupDevice = dedupDevice(opts.Roots, t.ident.Device)
	}
	env.VirtualDisk, env.VirtualBy, env.Disk = t.ident.Virtual, t.ident.VirtualBy, t.ident.Disk
	env.Cache = t.ident.Cache

	rec = &record.Record{
		Schema: record.Schema, ID: id, Label: req.Label, Start: start.UTC().Truncate(time.Second),
		ToolVersion: opts.ToolVersion, Set: req.SetName(), Repeat: repeat, RepeatAuto: req.RepeatAuto,
		Host: record.HostOf(opts.Host), Target: t.ident,
	}
	rec.Warnings = append(rec.Warnings, warnings...)
	rec.Warnings = append(rec.Warnings, targetWarnings(env)...)
	if t.ident.Kind == record.KindDir {
		rec.Warnings = append(rec.Warnings, leftovers(t.ident.Path)...)
	}
	rec.Workloads = make([]record.WorkloadResult, len(workloads))
	for i, w := range workloads {
		rec.Workloads[i].Params = w
		rec.Workloads[i].Warnings = workloadWarnings(w, env)
		if w.Fresh && t.ident.Kind != record.KindDir {
			rec.Workloads[i].Warnings = append(rec.Workloads[i].Warnings,
				fmt.Sprintf("%s: the target is an existing %s, so this first write overwrites allocated blocks", w.Name, t.ident.Kind))
		}
	}

	var tf *testFile
	if t.ident.Kind == record.KindDir {
		if tf, err = createTestFile(t.path); err != nil {
			return nil, err
		}
		log.Debug("test file created", "path", t.path)
		t.open = heldPath(tf.file)
		defer func() {
			// Also after an interruption: the caller must not claim a
			// file was removed that is still there.
			if rmErr := tf.remove(); rmErr != nil {
				err = errors.Join(err, rmErr)
			}
			log.Debug("test file removed", "path", t.path)
		}()
	}

	if t.ident.Kind == record.KindFile {
		f, err := t.hold()
		if err != nil {
			return nil, err
		}
		defer f.Close()
	}

	r := runner{
		eng: eng, log: log, t: t, env: env, now: now, progress: opts.Progress,
		laidOut: t.size, extent: extent, count: len(workloads) * repeat,
		sampleEvery: opts.SampleInterval, cacheSettle: cacheSettleOf(t.ident.Cache),
	}
	if t.ident.Kind == record.KindDevice {
		r.laidOut = extent // a device is used as it is: never laid out
	}
	if t.ident.Disk != "" {
		rec.Health = startHealth(ctx, opts.Runner, opts.Roots.DevPath(t.ident.Disk), now())
	}
	if opts.Host != nil {
		rec.Target.Encryption = encryptionOf(ctx, opts.Runner, opts.Host, t.ident.Stack)
	}
	if req.Precondition {
		if rec.Precondition, err = r.precondition(ctx); err != nil {
			return nil, err
		}
	}
	if !opts.StartAt.IsZero() {
		if err = r.waitForStart(ctx, workloads[0], repeat, opts); err != nil {
			return nil, err
		}
	}
	began := now().UTC()
	rec.ActualStart, rec.Clock = &began, opts.Clock
	if !opts.StartAt.IsZero() {
		at := opts.StartAt.UTC()
		rec.StartAt = &at
		if late := lateStart(at, startTarget(at, opts.Clock), began); late != "" {
			rec.Warnings = append(rec.Warnings, late)
			if opts.Notes != nil {
				fmt.Fprintln(opts.Notes, late)
			}
		}
	}
	// Under --repeat auto a workload leaves the rounds once its median is
	// known well enough (autorepeat.go); repeat is then the most rounds.
	done := make([]bool, len(workloads))
	for rep := 1; rep <= repeat && err == nil && !allTrue(done); rep++ {
		for i := range workloads {
			if done[i] {
				continue
			}
			r.index++
			r.remaining = remainingTime(workloads, i, rep, repeat)
			if tf != nil {
				if err = tf.check(); err != nil {
					break
				}
			}
			var one record.Repetition
			one, err = r.runOne(ctx, workloads[i], rep, repeat)
			if err != nil {
				// A workload that failed because its file went away
				// (the engine sees ENOENT, or "target does not exist",
				// a usage error) failed because the target did.
				if tf != nil && ctx.Err() == nil {
					if gone := tf.check(); gone != nil {
						err = gone
					}
				}
				break
			}
			wr := &rec.Workloads[i]
			wr.Runs = append(wr.Runs, one)
			wr.Warnings = record.AddWarnings(wr.Warnings, repetitionWarnings(workloads[i], one, env)...)
			if req.SteadyState {
				done[i] = judgeSteady(wr)
			}
			if req.RepeatAuto {
				var warn string
				if done[i], wr.RepeatStop, warn = autoStop(*wr, workload.AutoRepeatMin, repeat); warn != "" {
					wr.Warnings = record.AddWarnings(wr.Warnings, warn)
				}
			}
		}
	}
	if err == nil && tf != nil {
		// The last workload ran on the open file; whether its numbers
		// belong to the target still depends on the target being there.
		err = tf.check()
	}
	if errors.Is(err, syscall.ENOSPC) && t.ident.Kind == record.KindDir {
		// The free-space check passed before the run, so something else
		// wrote to the filesystem meanwhile: say so, not just ENOSPC.
		err = fmt.Errorf("%s filled up during the run (something else is writing there): %w", t.ident.Path, err)
	}
	if err == nil {
		rec.Warnings = append(rec.Warnings, finishHealth(ctx, opts.Runner, rec.Health, now())...)
	}
	for i := range rec.Workloads {
		wr := &rec.Workloads[i]
		if ss := wr.SteadyState; err == nil && ss != nil && !ss.Reached {
			wr.Warnings = record.AddWarnings(wr.Warnings, fmt.Sprintf("%s: %s: its numbers are of a drive still changing (the last %d rounds are reported)", wr.Params.Name, ss.Verdict(), record.SteadyWindow))
		}
	}
	rec.End = now().UTC().Truncate(time.Second)
	for i := range rec.Workloads {
		rec.Workloads[i].Summarize()
	}
	if err != nil {
		runs := 0
		for _, wr := range rec.Workloads {
			runs += len(wr.Runs)
		}
		// Keep a partial record only when it holds a measurement.
		if ctx.Err() == nil || !req.KeepPartial || runs == 0 {
			return nil, err
		}
		rec.Partial = true
		rec.Warnings = append(rec.Warnings, "interrupted: this record is partial")
	}
	if opts.ResultsDir != "" {
		saveErr := record.Save(opts.ResultsDir, rec)
		// Runs started in the same second (two Ansible hosts sharing a
		// store) differ only in the id's 16 random bits: on a clash take
		// another id rather than lose this record.
		for try := 0; errors.Is(saveErr, os.ErrExist) && try < 8; try++ {
			rec.ID = record.NewID(start)
			saveErr = record.Save(opts.ResultsDir, rec)
		}
		if saveErr != nil {
			if err != nil {
				return rec, fmt.Errorf("%w; %w", saveErr, err)
			}
			return rec, saveErr
		}
	}
	return rec, err
}

// admit drops or refuses workloads the target must not run: on a block
// device, writes need allowWrite and then a device nobody uses. The
// warnings say what was dropped.
func (t *target) admit(ws []workload.Workload, allowWrite bool) ([]workload.Workload, []string, error) {
	if t.ident.Kind != record.KindDevice {
		return ws, nil, nil
	}
	var keep []workload.Workload
	var dropped []string
	writes := false
	for _, w := range ws {
		switch {
		case !w.Writes():
			keep = append(keep, w)
		case allowWrite:
			keep = append(keep, w)
			writes = true
		default:
			dropped = append(dropped, w.Name)
		}
	}
	if writes {
		if why := t.deviceBusy(); why != "" {
			return nil, nil, fmt.Errorf("will not write to %s: %s: %w", t.path, why, ErrRefused)
		}
	}
	if len(keep) == 0 {
		return nil, nil, fmt.Errorf("%s is a block device and every workload writes (pass --allow-device-write to destroy its data): %w", t.path, ErrRefused)
	}
	var warnings []string
	if len(dropped) > 0 {
		warnings = append(warnings, fmt.Sprintf("skipped write workloads on block device %s (need --allow-device-write): %s", t.path, strings.Join(dropped, ", ")))
	}
	return keep, warnings, nil
}

// maxExtent is the end of the furthest region any workload uses.
func maxExtent(ws []workload.Workload) uint64 {
	var m uint64
	for _, w := range ws {
		m = max(m, w.OffsetBytes+w.SizeBytes)
	}
	return m
}

// check verifies, before anything is created, that the target can hold the
// workloads: alignment, device or file size, free space.
func (t *target) check(ws []workload.Workload, extent uint64) error {
	if t.sectorSz > 512 {
		for _, w := range ws {
			if w.Direct && (w.BlockBytes%t.sectorSz != 0 || w.OffsetBytes%t.sectorSz != 0) {
				return workload.Usagef("workload %s: bs %s and offset must be multiples of the device's %d-byte logical sector for O_DIRECT",
					w.Name, units.FormatSizeShort(w.BlockBytes), t.sectorSz)
			}
		}
	}
	if t.ident.Kind != record.KindDevice {
		if err := t.refuseUnmountedFstab(); err != nil {
			return err
		}
	}
	switch t.ident.Kind {
	case record.KindDevice:
		if extent > t.size {
			return workload.Usagef("workloads need %s but device %s has %s (lower --size)",
				units.FormatSize(extent), t.path, units.FormatSize(t.size))
		}
	case record.KindFile:
		if extent > t.size {
			return workload.Usagef("workloads need %s but file %s has %s (lower --size or use a directory)",
				units.FormatSize(extent), t.path, units.FormatSize(t.size))
		}
	case record.KindDir:
		free, err := freeBytes(filepath.Dir(t.path))
		if err != nil {
			return err
		}
		// Keep a little headroom: the filesystem needs metadata for the file.
		need := extent + extent/100 + 1<<20
		if free < need {
			return fmt.Errorf("not enough free space in %s for the test file: need %s, %s available (%s)",
				t.ident.Path, units.FormatSize(need), units.FormatSize(free), noSpaceHint(t.ident.Path))
		}
	}
	return nil
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return len(bs) > 0
}

// remainingTime is the known runtime of the runs after (rep, i).
func remainingTime(ws []workload.Workload, i, rep, repeat int) time.Duration {
	var d time.Duration
	for r := rep; r <= repeat; r++ {
		for j, w := range ws {
			if r == rep && j <= i {
				continue
			}
			d += w.Runtime + w.Ramp
		}
	}
	return d
}

// BcacheAccountingInterval is how often bcache folds the hits and misses
// it counted into stats_total: 22 times in 5 minutes (stats.c). Until then
// the I/O of the last seconds is not in the counters.
const BcacheAccountingInterval = 300 * time.Second / 22

// cacheSettleOf is how long a repetition waits before it reads the
// counters of cache c after the I/O: bcache's accounting interval and a
// second to spare; device-mapper counts as the I/O completes.
func cacheSettleOf(c *hwinfo.CachedVolume) time.Duration {
	if c != nil && c.Kind == hwinfo.CacheKindBcache {
		return BcacheAccountingInterval + time.Second
	}
	return 0
}
