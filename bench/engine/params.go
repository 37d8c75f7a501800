// Package engine runs one workload (fio-like job description) against a file
// or block device and returns raw measurements: I/O counts and bytes, a
// completion-latency histogram and per-second samples per direction, CPU time
// and warnings. It knows nothing of workload sets, records or stores; package
// bench composes those.
//
// Two engines implement the same Params: "sync" (each job one goroutine locked
// to an OS thread doing pread/pwrite on its own descriptor, queue depth 1) and
// "io_uring" (each job one goroutine with its own ring of IODepth entries,
// kept full; package uring). "auto" picks io_uring when IODepth > 1 and a
// ring can be set up. Latency is submission to completion (fio's clat).
//
// Random offsets follow fio's default random map: within one pass over the
// region every block is visited exactly once, in an order given by a keyed
// permutation seeded from Seed (so a seed repeats the same order; jobs get
// different orders). Size-based runs (Runtime 0) do exactly one pass per
// job, each job over the whole region as fio jobs sharing one file do;
// time-based runs start a new pass, in a new order, whenever one ends.
//
// Buffers are allocated once per job, aligned for O_DIRECT, one per queue
// slot; write data (random by default) is filled once, not per I/O. Reads
// and writes of randrw share a slot's buffer, as fio's do. Fsync means
// fdatasync on each writing job's descriptor after its last write.
//
// The hot loops do not allocate, lock or use channels per I/O. For blocks
// under 1 MiB they use raw syscalls, keeping their P; Run therefore raises
// GOMAXPROCS to at least Jobs+1 for the duration of a run.
package engine

import (
	"errors"
	"time"

	"github.com/diskprep/diskprep/bench/engine/hist"
	"github.com/diskprep/diskprep/hwinfo"
)

// ErrParams marks a usage error in Params (bad bs, size, alignment, jobs...).
// Callers map it to exit code 2.
var ErrParams = errors.New("invalid workload parameters")

// RW is the I/O pattern, named as fio names it.
type RW string

const (
	Read      RW = "read"
	Write     RW = "write"
	RandRead  RW = "randread"
	RandWrite RW = "randwrite"
	RandRW    RW = "randrw"
)

// Random reports whether offsets are random.
func (rw RW) Random() bool { return rw == RandRead || rw == RandWrite || rw == RandRW }

// Reads reports whether the pattern reads at all.
func (rw RW) Reads() bool { return rw == Read || rw == RandRead || rw == RandRW }

// Writes reports whether the pattern writes at all.
func (rw RW) Writes() bool { return rw == Write || rw == RandWrite || rw == RandRW }

// Engine names.
const (
	EngineAuto    = "auto"
	EngineSync    = "sync"
	EngineIOUring = "io_uring"
)

// Data kinds for written buffers.
const (
	DataRandom       = "random" // incompressible (default)
	DataZeros        = "zeros"
	DataCompressible = "compressible" // CompressPercent of each block is zeros
)

// DataPattern says what write buffers hold. Buffers are filled once per job,
// not per I/O.
type DataPattern struct {
	Kind            string // "" means DataRandom
	CompressPercent int    // 0..100, for DataCompressible
}

// Params describes one workload run.
type Params struct {
	Path string // regular file or block device; must exist and cover [Offset, Offset+Size)
	// Roots are the machine's sysfs, where the logical block size of the
	// device under a regular file is read; the zero value is the live one.
	Roots     hwinfo.Roots
	RW        RW
	BlockSize int64
	Size      int64 // bytes of the region used
	Offset    int64 // start of the region
	Jobs      int   // >= 1; all jobs share Path, each with its own descriptor
	IODepth   int   // >= 1
	// Runtime > 0 makes the run time-based: jobs loop over the region until
	// Runtime has elapsed after Ramp. Runtime 0 is size-based: each job does
	// exactly one pass over the whole region (fio semantics with a shared file).
	Runtime   time.Duration
	Ramp      time.Duration // warm-up, I/Os completing during it are not counted
	RWMixRead int           // percent reads for randrw (0..100); 0 means 50
	Fsync     bool          // fdatasync each job's descriptor when its writes end
	Seed      uint64        // random order and mix; 0 means a fixed default
	Direct    bool          // O_DIRECT (falls back to buffered with a warning if refused)
	Engine    string        // EngineAuto (""), EngineSync or EngineIOUring
	Data      DataPattern
	// Distribution spreads random offsets unevenly (zipf, zoned); the
	// zero value is the uniform random map. Sequential patterns ignore it.
	Distribution Distribution
	// Progress, if set, is called about every 500 ms from one goroutine
	// with the totals so far (ramp included, flagged).
	Progress func(Snapshot)

	// hooks let the package's tests see every offset and every fsync of
	// this run; nil outside tests. Per run rather than package variables,
	// so tests may run in parallel; the branch on a nil field costs a load
	// per I/O.
	hooks hooks
}

// hooks are the per-run test observers of Params.
type hooks struct {
	io    func(job int, off int64, read bool) // before each I/O is issued
	fsync func(job int, fd int)               // before each job's fdatasync
	// open stands in for unix.Open when the jobs open the target (a test
	// refuses O_DIRECT with it, as some file systems do).
	open func(path string, flags int, mode uint32) (int, error)
	// completed rewrites an io_uring completion's result as it is reaped
	// (a test makes the kernel's -ECANCELED with it).
	completed func(job int, res int32) int32
}

// Snapshot is a live progress view.
type Snapshot struct {
	Elapsed    time.Duration // since the start of the run (ramp included)
	Ramping    bool
	ReadIOs    uint64
	ReadBytes  uint64
	WriteIOs   uint64
	WriteBytes uint64
}

// Sample is one wall-clock second of the measured window.
type Sample struct {
	IOs   uint64 `json:"ios"`
	Bytes uint64 `json:"bytes"`
}

// DirResult is what one direction (read or write) did in the measured window.
type DirResult struct {
	IOs       uint64
	Bytes     uint64
	Hist      *hist.Histogram // completion latency in ns, submission to completion
	PerSecond []Sample        // one per second of the measured window; the last may be partial
}

// Result of a run. Raw measurements only: rates and percentiles are derived
// by the caller (Hist.Percentile, IOs/Elapsed...).
type Result struct {
	Engine   string // engine that actually ran: EngineSync or EngineIOUring
	Direct   bool   // O_DIRECT actually in effect
	Align    int64  // buffer and offset alignment used
	Read     DirResult
	Write    DirResult
	Elapsed  time.Duration // measured window, ramp excluded
	CPUUser  time.Duration // getrusage(RUSAGE_SELF) delta over the measured window
	CPUSys   time.Duration
	Warnings []string
}
