package bench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
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
	// Claims are block devices the caller claimed before it looked at
	// them (ClaimDevice): Run writes to them without claiming again.
	Claims []*Claim
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
