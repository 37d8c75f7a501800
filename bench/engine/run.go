package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/diskprep/diskprep/bench/engine/hist"
	"github.com/diskprep/diskprep/bench/engine/uring"
	"golang.org/x/sys/unix"
)

// rawIOMaxBlock: I/Os of smaller blocks use raw syscalls (see runSync).
// Larger ones take long enough that the scheduler hand-off costs nothing
// measurable, and a raw syscall of many milliseconds would hold its P
// against preemption and garbage collection.
const rawIOMaxBlock = 1 << 20

// Limits on Params, to catch typos rather than to restrict real use.
const (
	MaxJobs    = 1024
	MaxIODepth = 4096
)

func (p *Params) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrParams, fmt.Sprintf(format, args...))
	}
	switch p.RW {
	case Read, Write, RandRead, RandWrite, RandRW:
	default:
		return bad("unknown rw %q (want read, write, randread, randwrite or randrw)", p.RW)
	}
	switch {
	case p.Path == "":
		return bad("no target path")
	case p.BlockSize <= 0:
		return bad("block size %d must be positive", p.BlockSize)
	case p.Size < p.BlockSize:
		return bad("size %d is smaller than the block size %d", p.Size, p.BlockSize)
	case p.Offset < 0:
		return bad("negative offset %d", p.Offset)
	case p.Jobs < 1 || p.Jobs > MaxJobs:
		return bad("jobs %d out of range 1..%d", p.Jobs, MaxJobs)
	case p.IODepth < 1 || p.IODepth > MaxIODepth:
		return bad("iodepth %d out of range 1..%d", p.IODepth, MaxIODepth)
	case p.Runtime < 0 || p.Ramp < 0:
		return bad("negative runtime or ramp")
	case p.RWMixRead < 0 || p.RWMixRead > 100:
		return bad("rwmixread %d out of range 0..100", p.RWMixRead)
	}
	if err := p.Distribution.validate(); err != nil {
		return bad("%v", err)
	}
	switch p.Engine {
	case "", EngineAuto, EngineSync, EngineIOUring:
	default:
		return bad("unknown engine %q (want auto, sync or io_uring)", p.Engine)
	}
	switch p.Data.Kind {
	case "", DataRandom, DataZeros:
	case DataCompressible:
		if p.Data.CompressPercent < 0 || p.Data.CompressPercent > 100 {
			return bad("compress percentage %d out of range 0..100", p.Data.CompressPercent)
		}
	default:
		return bad("unknown data pattern %q", p.Data.Kind)
	}
	return nil
}

// Run executes the workload p. It returns ctx.Err() when ctx is cancelled
// (workers stop within a second, in-flight I/O is reaped), an error wrapping
// ErrParams for bad parameters, and other errors for environment and I/O
// failures.
func Run(ctx context.Context, p Params) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	t, err := inspect(p.Roots, p.Path)
	if err != nil {
		return nil, err
	}
	res := &Result{Align: 1}
	end := p.Offset + p.Size
	// Pure writes may extend a regular file; anything that reads needs the
	// region to exist (reads past EOF come back short).
	if (t.blockDev || p.RW.Reads()) && t.size < end {
		return nil, fmt.Errorf("%w: region %d..%d lies beyond the end of %s (%d bytes)", ErrParams, p.Offset, end, p.Path, t.size)
	}
	direct := p.Direct
	if direct && t.noDirect {
		direct = false
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s does not support O_DIRECT (statx): running buffered, the page cache is measured too", p.Path))
	}
	if direct {
		res.Align = t.offAlign
		if p.BlockSize%t.offAlign != 0 || p.Offset%t.offAlign != 0 {
			return nil, fmt.Errorf("%w: block size %d and offset %d must be multiples of %d for O_DIRECT on %s", ErrParams, p.BlockSize, p.Offset, t.offAlign, p.Path)
		}
	}

	eng, warn := chooseEngine(p)
	res.Engine = eng
	if warn != "" {
		res.Warnings = append(res.Warnings, warn)
	}

	jobs, direct, err := setupJobs(p, eng, t, direct)
	defer func() {
		for _, j := range jobs {
			j.free()
		}
	}()
	if err != nil {
		return nil, err
	}
	res.Direct = direct
	if p.Direct && !direct && !t.noDirect {
		res.Warnings = append(res.Warnings, fmt.Sprintf("O_DIRECT refused on %s: running buffered, the page cache is measured too", p.Path))
	}
	if err := runJobs(ctx, p, eng, jobs, res); err != nil {
		return nil, err
	}
	return res, nil
}

func chooseEngine(p Params) (string, string) {
	switch p.Engine {
	case EngineSync:
		if p.IODepth > 1 {
			return EngineSync, fmt.Sprintf("iodepth %d with the sync engine runs at queue depth 1", p.IODepth)
		}
		return EngineSync, ""
	case EngineIOUring:
		if err := probeURing(); err != nil {
			return EngineSync, fmt.Sprintf("io_uring unavailable (%v): ran the sync engine at queue depth 1", err)
		}
		return EngineIOUring, ""
	}
	if p.IODepth > 1 {
		if err := probeURing(); err != nil {
			return EngineSync, fmt.Sprintf("io_uring unavailable (%v): iodepth %d ran at queue depth 1 with the sync engine", err, p.IODepth)
		}
		return EngineIOUring, ""
	}
	return EngineSync, ""
}

func probeURing() error {
	r, err := uring.New(2)
	if err != nil {
		return err
	}
	return r.Close()
}

func setupJobs(p Params, eng string, t *target, direct bool) ([]*job, bool, error) {
	seed := p.Seed
	if seed == 0 {
		seed = 0x6469736b70726570 // "diskprep": runs repeat unless asked otherwise
	}
	mix := p.RWMixRead
	if mix == 0 {
		mix = 50
	}
	slots := 1
	if eng == EngineIOUring {
		slots = p.IODepth
	}
	n := uint64(p.Size / p.BlockSize)
	var jobs []*job
	gotDirect := direct
	for i := 0; i < p.Jobs; i++ {
		js := splitmix(seed + uint64(i)*0x9e3779b97f4a7c15)
		j := &job{id: i, fd: -1, bs: p.BlockSize, fsync: p.Fsync && p.RW.Writes(), hooks: p.hooks}
		jobs = append(jobs, j)
		if p.RW.Random() && p.Distribution.Kind != DistUniform {
			j.gen = newSkewedGen(p.Offset, p.BlockSize, n, p.Distribution, js)
		} else {
			j.gen = newOffsetGen(p.Offset, p.BlockSize, n, p.RW.Random(), js)
		}
		j.mix = newRNG(js ^ 0x5bd1e995)
		switch p.RW {
		case Read, RandRead:
			j.mode = modeRead
		case Write, RandWrite:
			j.mode = modeWrite
		default:
			j.mode = modeMix
			j.mixThr = uint64(float64(mix) / 100 * (1 << 64))
			if mix == 100 {
				j.mode = modeRead
			}
		}
		fd, d, err := openJob(p.hooks.open, p.Path, p.RW.Writes(), gotDirect)
		if err != nil {
			return jobs, false, err
		}
		j.fd = fd
		if i == 0 {
			gotDirect = d && directInEffect(fd)
		}
		align := int64(1)
		if gotDirect {
			align = t.memAlign
		}
		if err := j.allocBuffers(slots, p.BlockSize, max(align, 8)); err != nil {
			return jobs, false, err
		}
		if j.mode != modeRead {
			r := newRNG(js ^ 0xc0ffee)
			for _, b := range j.bufs {
				fillData(b, p.Data, &r)
			}
		}
		j.rawIO = p.BlockSize < rawIOMaxBlock
		j.read.hist, j.write.hist = hist.New(), hist.New()
	}
	return jobs, gotDirect, nil
}

func runJobs(ctx context.Context, p Params, eng string, jobs []*job, res *Result) error {
	sh := &shared{timeBased: p.Runtime > 0}
	var ru0, ru1 unix.Rusage
	start := nanotime()
	sh.windowStart = start + int64(p.Ramp)
	if sh.timeBased {
		sh.end = sh.windowStart + int64(p.Runtime)
		secs := int(p.Runtime/time.Second) + 1
		for _, j := range jobs {
			j.read.secs = make([]Sample, secs)
			j.write.secs = make([]Sample, secs)
		}
	}
	for _, j := range jobs {
		j.nextSec = sh.windowStart + 1e9
	}
	// Taken again when the ramp ends, if the run lasts that long.
	unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	// Workers hold their P through raw syscalls; one P each plus one for
	// the coordinator, progress and the caller keeps everyone scheduled.
	if prev := runtime.GOMAXPROCS(0); prev < len(jobs)+1 {
		runtime.GOMAXPROCS(len(jobs) + 1)
		defer runtime.GOMAXPROCS(prev)
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if eng == EngineIOUring {
				j.runURing(sh, p.IODepth)
			} else {
				j.runSync(sh)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var rampTimer <-chan time.Time
	if p.Ramp > 0 {
		rampTimer = time.After(p.Ramp)
	}
	cancelled := false
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctx.Done():
			cancelled = true
			sh.stop.Store(true)
			<-done
			break loop
		case <-rampTimer:
			unix.Getrusage(unix.RUSAGE_SELF, &ru0)
		case <-tick.C:
			if p.Progress != nil {
				p.Progress(snapshot(jobs, start, sh.windowStart))
			}
		}
	}
	stopped := nanotime()
	unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	if cancelled {
		return ctx.Err()
	}
	var errs []error
	for _, j := range jobs {
		if j.err != nil {
			errs = append(errs, fmt.Errorf("job %d: %w", j.id, j.err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if p.Progress != nil {
		p.Progress(snapshot(jobs, start, sh.windowStart))
	}
	res.CPUUser = tvDur(ru1.Utime) - tvDur(ru0.Utime)
	res.CPUSys = tvDur(ru1.Stime) - tvDur(ru0.Stime)
	res.Read.Hist, res.Write.Hist = hist.New(), hist.New()
	var last int64
	for _, j := range jobs {
		mergeDir(&res.Read, &j.read)
		mergeDir(&res.Write, &j.write)
		last = max(last, j.lastDone)
	}
	res.Elapsed = windowElapsed(sh, stopped, last)
	trimSamples(res)
	return nil
}

// windowElapsed is how long the measured window really lasted: from the
// end of the ramp to the stop of the last worker, cut at the planned end
// of a time-based run (completions after it are not counted), or for a
// size-based run to the last counted completion. A time-based run whose
// workers stopped early says so by a window shorter than its runtime.
func windowElapsed(sh *shared, stopped, lastDone int64) time.Duration {
	if sh.timeBased {
		return time.Duration(max(min(stopped, sh.end)-sh.windowStart, 0))
	}
	if lastDone > sh.windowStart {
		return time.Duration(lastDone - sh.windowStart)
	}
	return 0
}

func mergeDir(d *DirResult, a *dirAcc) {
	d.IOs += a.ios
	d.Bytes += a.bytes
	d.Hist.Merge(a.hist)
	if len(d.PerSecond) < len(a.secs) {
		d.PerSecond = growSamples(d.PerSecond, len(a.secs))
	}
	for i, s := range a.secs {
		d.PerSecond[i].IOs += s.IOs
		d.PerSecond[i].Bytes += s.Bytes
	}
}

// trimSamples keeps one sample per started second of the measured window
// and drops the samples of a direction that did nothing.
func trimSamples(res *Result) {
	secs := int((res.Elapsed + time.Second - 1) / time.Second)
	for _, d := range []*DirResult{&res.Read, &res.Write} {
		if d.IOs == 0 {
			d.PerSecond = nil
			continue
		}
		if len(d.PerSecond) > secs && secs > 0 {
			d.PerSecond = d.PerSecond[:secs]
		}
	}
}

func snapshot(jobs []*job, start, windowStart int64) Snapshot {
	now := nanotime()
	s := Snapshot{Elapsed: time.Duration(now - start), Ramping: now < windowStart}
	for _, j := range jobs {
		r, w := j.read.live.Load(), j.write.live.Load()
		s.ReadIOs += r
		s.WriteIOs += w
		s.ReadBytes += r * uint64(j.bs)
		s.WriteBytes += w * uint64(j.bs)
	}
	return s
}

func tvDur(tv unix.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}
