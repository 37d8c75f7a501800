// Package fscompare is the orchestration of `diskprep fscompare`: for each
// filesystem in turn, round after round, prepare the disk with it,
// benchmark it, release it;
// and whatever happens (a failure, Ctrl-C), release what was prepared. It
// composes disk and bench through the functions of Deps, so it imports
// neither: the command wires in the real ones, tests record the calls.
package fscompare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// Options are one comparison, already checked by the command.
type Options struct {
	FS []string // in column order
	// Target names what is prepared and released (the image or the disk),
	// for the messages.
	Target string
	// Mount is where each filesystem is mounted; "" makes a temporary
	// directory, removed at the end.
	Mount string
	// MountMade says the caller made Mount for this run (naming it in its
	// own records first): it is removed at the end as a temporary one is.
	MountMade bool
	// Bench is the request of the whole comparison; Target and Label are
	// set per filesystem (the mount point and the filesystem's name), and
	// interleaved, Repeat is the number of rounds, one repetition each.
	Bench workload.Request
	// Order is record.OrderBlocked (every repetition of one filesystem,
	// then of the next) or record.OrderInterleaved (else).
	Order string
	Keep  bool // leave the last filesystem prepared and mounted
	// Progress receives the "fscompare: ..." lines; nil for none (--quiet).
	Progress io.Writer
}

// Deps are the ties to the machine.
type Deps struct {
	// Facts reads the hardware facts planning and the record need.
	Facts func(ctx context.Context) (*hwinfo.Host, error)
	// Check, if set, plans fs on the disk as host has it, without asking
	// or writing: Run checks every filesystem so before the first is
	// made, so one this machine cannot build (a kernel without dm-crypt)
	// is refused before the others have run.
	Check func(ctx context.Context, fs, mount string, host *hwinfo.Host) error
	// Plan decides how to prepare the disk with fs, mounted at mount (the
	// first round also asks for confirmation), and returns what carries
	// the plan out: apply prepares and returns the device the filesystem
	// is on.
	Plan func(ctx context.Context, fs, mount string, first bool, host *hwinfo.Host) (apply func(context.Context) (device string, err error), err error)
	// Release undoes a prepare: unmounted, no fstab line, a loop image
	// detached. cleanup is true for the release after a failure or an
	// interruption, whose failure the command explains in full.
	Release func(ctx context.Context, cleanup bool) error
	// Settled, if set, runs after each release between rounds and returns
	// once the machine shows the release (a loop device cleared lazily).
	Settled func(ctx context.Context) error
	// Bench runs one round's benchmark and returns its record, unsaved.
	Bench func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error)
	// Save stores a filesystem's record once its last round is done and
	// returns it as stored.
	Save func(rec *record.Record) (*record.Record, error)
	// NewID names a record merged from rounds that began at start.
	NewID func(start time.Time) string
}

// Run prepares, benchmarks and releases each filesystem of opts.FS in
// turn and returns their records in that order. Interleaved (the default),
// it does so once a round, --repeat rounds of one repetition each, the
// filesystems in record.RoundOrder, each made anew on the same disk every
// round; blocked, once, with every repetition. A filesystem's record is
// saved once its last round is done. On any error, also an interruption,
// what was prepared is released (with a context that is not cancelled, so
// the cleanup runs) and the release's own failure is joined to the error.
func Run(ctx context.Context, opts Options, deps Deps) (records []*record.Record, err error) {
	mount := opts.Mount
	madeMount := opts.MountMade
	if mount == "" {
		if mount, err = os.MkdirTemp("", "diskprep-fscompare-"); err != nil {
			return nil, err
		}
		madeMount = true
	}
	if mount, err = filepath.Abs(mount); err != nil {
		return nil, err
	}
	say := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "fscompare: "+format+"\n", args...)
		}
	}
	prepared, kept := false, false
	defer func() {
		if prepared && !kept {
			if rerr := deps.Release(context.WithoutCancel(ctx), true); rerr != nil {
				err = errors.Join(err, fmt.Errorf("release %s: %w", opts.Target, rerr))
			} else {
				say("released %s", opts.Target)
			}
		}
		if madeMount && !kept {
			os.Remove(mount) // empty once unmounted; left alone if not
		}
	}()

	rounds, req := 1, opts.Bench
	if opts.Order != record.OrderBlocked {
		rounds, req.Repeat = opts.Bench.Repeat, 1
	}
	steps := rounds * len(opts.FS)
	reps := fmt.Sprintf("%d repetition(s)", req.Repeat)
	if req.RepeatAuto {
		reps = fmt.Sprintf("repetitions until stable, %d at most", req.Repeat)
	}
	taken := make([][]*record.Record, len(opts.FS))
	records = make([]*record.Record, len(opts.FS))
	var checked *hwinfo.Host // the facts every column was checked against
	if deps.Check != nil && len(opts.FS) > 1 {
		if checked, err = deps.Facts(ctx); err != nil {
			return nil, err
		}
		for _, fs := range opts.FS {
			if err := deps.Check(ctx, fs, mount, checked); err != nil {
				return nil, err
			}
		}
	}
	step := 0
	for r := range rounds {
		if rounds > 1 {
			reps = fmt.Sprintf("round %d/%d", r+1, rounds)
		}
		for _, i := range record.RoundOrder(r, len(opts.FS)) {
			fs := opts.FS[i]
			step++
			host := checked // nothing was written since
			if step > 1 || host == nil {
				if host, err = deps.Facts(ctx); err != nil {
					return nil, err
				}
			}
			apply, err := deps.Plan(ctx, fs, mount, step == 1, host)
			if err != nil {
				return nil, err
			}
			say("%d/%d: preparing %s on %s", step, steps, fs, opts.Target)
			dev, err := apply(ctx)
			if err != nil {
				// Apply undoes its own mounts and loop attachment on failure.
				return nil, fmt.Errorf("prepare %s: %w", fs, err)
			}
			prepared = true
			// The facts the plan was made from are from before the table
			// was written: the partition the benchmark runs on (and, for an
			// image, its loop device) is not in them, so the record would
			// lack the disk's identity. Read them again.
			if host, err = deps.Facts(ctx); err != nil {
				return nil, err
			}
			say("%d/%d: %s on %s mounted at %s; running set %s, %s", step, steps, fs, dev, mount, req.SetName(), reps)
			sreq := req
			sreq.Target, sreq.Label = mount, fs
			rec, err := deps.Bench(ctx, sreq, host)
			if err != nil {
				return nil, fmt.Errorf("bench %s: %w", fs, err)
			}
			taken[i] = append(taken[i], rec)
			if r == rounds-1 {
				if records[i], err = finish(opts.Order, taken[i], deps); err != nil {
					return nil, fmt.Errorf("record %s: %w", fs, err)
				}
				say("%d/%d: %s done: record %s", step, steps, fs, records[i].ID)
			}
			if step == steps && opts.Keep {
				kept = true
				say("--keep: %s stays mounted at %s (diskprep release %s undoes it)", fs, mount, opts.Target)
				break
			}
			if err := deps.Release(ctx, false); err != nil {
				return nil, fmt.Errorf("release %s after %s: %w", opts.Target, fs, err)
			}
			prepared = false
			if deps.Settled != nil {
				if err := deps.Settled(ctx); err != nil {
					return nil, err
				}
			}
		}
	}
	return records, nil
}

// finish makes one filesystem's record of its rounds, as bench's several
// targets do (record.MergeRounds), or of its one blocked run, and saves it.
func finish(order string, rounds []*record.Record, deps Deps) (*record.Record, error) {
	rec := rounds[0]
	if order == record.OrderBlocked {
		rec.Order = record.OrderBlocked
	} else {
		var err error
		if rec, err = record.MergeRounds(deps.NewID(rounds[0].Start), rounds); err != nil {
			return nil, err
		}
	}
	return deps.Save(rec)
}
