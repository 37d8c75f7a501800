package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
)

// StartGrace is how late a synchronized start may be and still count as
// on time: a --start-at already this far past is refused before anything
// is done, and a run whose setup ends this far after it says so.
const StartGrace = time.Second

// startTarget is the reading of this host's clock at which a run asked
// to start at (the controller's time) begins: at plus the host's offset,
// when it is known.
func startTarget(at time.Time, c *record.Clock) time.Time {
	if off, ok := c.Offset(); ok {
		return at.Add(off)
	}
	return at
}

// sleepCtx waits d, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// waitUntil returns once now() reads target, telling tell the time left
// at every whole second of it. It sleeps at most a second at a time and
// reads the wall clock again after each, so a clock stepped meanwhile
// (chronyd's makestep, an operator's date -s) moves the start with it.
func waitUntil(ctx context.Context, target time.Time, now func() time.Time, sleep func(context.Context, time.Duration) error, tell func(time.Duration)) error {
	for {
		left := target.Sub(now())
		if left <= 0 {
			return ctx.Err()
		}
		if tell != nil {
			tell(left)
		}
		step := left % time.Second
		if step == 0 {
			step = time.Second
		}
		if err := sleep(ctx, step); err != nil {
			return err
		}
	}
}

// lateStart says a run began later than asked, by more than StartGrace:
// its setup (the test file's layout, preconditioning) took longer than
// the time given; "" when it was on time.
func lateStart(at, target, began time.Time) string {
	late := began.Sub(target)
	if late <= StartGrace {
		return ""
	}
	return fmt.Sprintf("started %s after --start-at %s: its setup took longer than the time given (give a later --start-at)",
		late.Round(100*time.Millisecond), at.UTC().Format(time.RFC3339))
}

// waitForStart is the end of a synchronized run's setup: the first
// workload's test file laid out (its layout takes as long as the disk
// is slow, which is no part of a start hosts share), then the wait for
// opts.StartAt, told as Progress in PhaseWait.
func (r *runner) waitForStart(ctx context.Context, first workload.Workload, repeat int, opts Options) error {
	r.index = 1
	err := r.prepareFile(ctx, first, 1, repeat)
	r.index = 0
	if err != nil {
		return err
	}
	target := startTarget(opts.StartAt, opts.Clock)
	if off, ok := opts.Clock.Offset(); ok && off != 0 && opts.Notes != nil && target.After(r.now()) {
		ahead := "ahead of"
		if off < 0 {
			ahead = "behind"
		}
		by := "chrony's estimate"
		if opts.Clock.Source == record.ClockController {
			by = "--clock-offset"
		}
		fmt.Fprintf(opts.Notes, "this host's clock is %s %s the controller's (%s): it starts when it reads %s\n",
			absDuration(off), ahead, by, target.UTC().Format("15:04:05.000"))
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	tell := func(left time.Duration) {
		if r.progress != nil {
			r.progress(Progress{Phase: PhaseWait, StartAt: opts.StartAt, ETA: left, Count: r.count})
		}
	}
	return waitUntil(ctx, target, r.now, sleep, tell)
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
