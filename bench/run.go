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
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// ErrRefused is wrapped when running would write to a block device that must
// not be written (no --allow-device-write, mounted, or a system disk).
var ErrRefused = errors.New("refused for safety")

// Engine runs workloads and lays out test files. The real one is
// bench/engine; tests inject fakes to check orchestration without I/O.
type Engine interface {
	Run(ctx context.Context, p engine.Params) (*engine.Result, error)
	Layout(ctx context.Context, path string, size int64, data engine.DataPattern) error
}

type realEngine struct{}

func (realEngine) Run(ctx context.Context, p engine.Params) (*engine.Result, error) {
	return engine.Run(ctx, p)
}

func (realEngine) Layout(ctx context.Context, path string, size int64, data engine.DataPattern) error {
	return engine.Layout(ctx, path, size, data)
}

// Options are the dependencies of Run.
type Options struct {
	Host        *hwinfo.Host // identity for the record; nil leaves it empty
	ToolVersion string
	// Roots are the live machine's sysfs and procfs, where the target is
	// looked up and checked and every host fact Run reads itself comes
	// from (CPU governors, device-mapper names, memory, disk counters);
	// the zero value is the live machine.
	Roots hwinfo.Roots
	// ResultsDir, when set, receives the record (complete, or partial when
	// interrupted with KeepPartial). Empty: the caller saves it.
	ResultsDir string
	Progress   func(Progress) // live view; nil for none
	// Notes receives a line for each thing Run did besides measuring (the
	// test file of a killed run removed); nil for none.
	Notes  io.Writer
	Logger *slog.Logger // nil discards
	Engine Engine       // nil is bench/engine
	Now    func() time.Time
	// Runner runs smartctl for the target disk's health before and after
	// the run; nil reads none.
	Runner Runner
	// SampleInterval is how often the host and device series are
	// sampled during a workload; 0 is DefaultSampleInterval (1s).
	SampleInterval time.Duration
	// DeviceMapper answers the device-mapper queries for the counters of
	// a cached volume under the target; nil is the kernel's ioctl.
	DeviceMapper hwinfo.DeviceMapper
	// StartAt, when set, is when the measured run is to begin (bench
	// --start-at), by the controller's clock. Run does its setup first
	// (the target's checks, the device claim, the disk's health,
	// preconditioning, the first workload's test file), then waits until
	// this host's clock reads StartAt plus Clock's offset, then measures;
	// a setup that ends later starts at once and the record says how
	// late. Zero starts as soon as the setup is done.
	StartAt time.Time
	// Clock is this host's clock offset against the controller's, kept in
	// the record; nil records none (and StartAt is taken as this host's
	// time).
	Clock *record.Clock
	// Sleep waits d or until ctx is done; nil is a timer. Tests pass one
	// that advances their Now instead, so no test waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

// PhaseWait is the Progress phase of waiting for Options.StartAt.
const PhaseWait = "wait"

// Progress is the live state of a run, for a progress line.
type Progress struct {
	Workload   string
	Index      int // 1-based position among all runs (workloads x repeats)
	Count      int
	Repetition int
	Repeat     int
	Phase      string        // "layout", "ramp", "run"
	Elapsed    time.Duration // of this run
	Duration   time.Duration // ramp+runtime of this run; 0 when size-based
	ETA        time.Duration // for the whole invocation, best guess; 0 unknown
	// DoneBytes of TotalBytes: the preconditioning pass's progress.
	DoneBytes  uint64
	TotalBytes uint64
	// StartAt is the start waited for, in PhaseWait; ETA is then the
	// time left until it.
	StartAt   time.Time
	ReadIOPS  float64 // over the last interval
	WriteIOPS float64
	ReadBps   float64
	WriteBps  float64
}

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
	if t.ident.Kind == record.KindDevice && t.haveDev && (req.Precondition || anyWrites(workloads)) {
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
		defer func() {
			// Also after an interruption: the caller must not claim a
			// file was removed that is still there.
			if rmErr := tf.remove(); rmErr != nil {
				err = errors.Join(err, rmErr)
			}
			log.Debug("test file removed", "path", t.path)
		}()
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
		if err := os.Truncate(r.t.path, 0); err != nil {
			return fmt.Errorf("reset test file: %w", err)
		}
		if err := os.Truncate(r.t.path, int64(w.OffsetBytes+w.SizeBytes)); err != nil {
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
	if err := r.eng.Layout(ctx, r.t.path, int64(r.extent), dataPattern(kind, pct)); err != nil {
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
		Path:      r.t.path,
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
