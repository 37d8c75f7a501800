package bench

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
)

// fakeClock is the wall clock a run reads and sleeps on: sleeping moves
// it on at once, so a test of a 30-second wait takes no time.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
	// onSleep runs before each sleep moves the clock (the n-th, from 0).
	onSleep func(n int)
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	n := len(c.sleeps)
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	if c.onSleep != nil {
		c.onSleep(n)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.advance(d)
	return nil
}

// clockedEngine is the fake engine on a fake clock: it notes when each
// layout and run began, and a layout takes layoutTakes of it.
type clockedEngine struct {
	fakeEngine
	clock       *fakeClock
	layoutTakes time.Duration
	layoutAt    []time.Time
	runAt       []time.Time
}

func (e *clockedEngine) Layout(ctx context.Context, path string, size int64, data engine.DataPattern) error {
	e.layoutAt = append(e.layoutAt, e.clock.now())
	e.clock.advance(e.layoutTakes)
	return e.fakeEngine.Layout(ctx, path, size, data)
}

func (e *clockedEngine) Run(ctx context.Context, p engine.Params) (*engine.Result, error) {
	e.runAt = append(e.runAt, e.clock.now())
	return e.fakeEngine.Run(ctx, p)
}

var controllerNoon = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func quickRequest(target string) workload.Request {
	return workload.Request{Target: target, Set: "quick", Overrides: workload.Overrides{Size: 4 << 20, Runtime: time.Second}}
}

// A run asked to start at 10:00:00 by the controller, on a host whose
// clock is 5 s ahead, lays out its test file first, then waits until its
// own clock reads 10:00:05, telling the seconds left, and measures from
// then: the record keeps the start asked, the start made and the clock.
func TestRunWaitsForStartAt(t *testing.T) {
	target, results := t.TempDir(), t.TempDir()
	clk := &fakeClock{t: controllerNoon.Add(-30 * time.Second).Add(5 * time.Second).Add(-400 * time.Millisecond)}
	eng := &clockedEngine{clock: clk, layoutTakes: 2 * time.Second}
	offset := record.MS(5 * time.Second)
	clock := &record.Clock{Source: record.ClockController, OffsetMS: offset, RTTMS: record.MS(2 * time.Millisecond), UncertaintyMS: record.MS(time.Millisecond)}
	var progress []Progress
	var notes strings.Builder
	rec, err := Run(context.Background(), quickRequest(target), Options{
		Engine: eng, ResultsDir: results, Now: clk.now, Sleep: clk.sleep, Notes: &notes,
		StartAt: controllerNoon, Clock: clock,
		Progress: func(p Progress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	hostTarget := controllerNoon.Add(5 * time.Second)
	if len(eng.layoutAt) != 1 || !eng.layoutAt[0].Before(hostTarget.Add(-20*time.Second)) {
		t.Errorf("laid out at %v, want once, before the wait", eng.layoutAt)
	}
	if len(eng.runAt) == 0 || !eng.runAt[0].Equal(hostTarget) {
		t.Errorf("first workload began at %v, want %v (10:00:00 by the controller)", eng.runAt, hostTarget)
	}
	// 28.4 s to wait (from 09:59:36.6 by the host's clock, the layout's
	// 2 s done): the odd 0.4 s first, then whole seconds.
	var waited time.Duration
	for i, s := range clk.sleeps {
		waited += s
		if s > time.Second || (i > 0 && s != time.Second) {
			t.Errorf("sleep %d of %v (all: %v)", i, s, clk.sleeps)
		}
	}
	if waited != 28400*time.Millisecond || clk.sleeps[0] != 400*time.Millisecond {
		t.Errorf("slept %v in %v", waited, clk.sleeps)
	}
	var waits []time.Duration
	for _, p := range progress {
		if p.Phase == PhaseWait {
			if !p.StartAt.Equal(controllerNoon) {
				t.Errorf("wait progress for %v", p.StartAt)
			}
			waits = append(waits, p.ETA)
		}
	}
	if len(waits) != 29 || waits[0] != 28400*time.Millisecond || waits[1] != 28*time.Second || waits[28] != time.Second {
		t.Errorf("told %d times: %v", len(waits), waits)
	}
	if progress[0].Phase != "layout" {
		t.Errorf("first progress %+v, want the layout before the wait", progress[0])
	}
	back, err := record.ReadFile(filepath.Join(results, rec.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if back.StartAt == nil || !back.StartAt.Equal(controllerNoon) || back.ActualStart == nil || !back.ActualStart.Equal(hostTarget) {
		t.Errorf("start_at %v, actual_start %v", back.StartAt, back.ActualStart)
	}
	if back.Clock == nil || back.Clock.Source != record.ClockController || *back.Clock.OffsetMS != 5000 || *back.Clock.RTTMS != 2 {
		t.Errorf("clock %+v", back.Clock)
	}
	if len(back.Warnings) > 0 && strings.Contains(strings.Join(back.Warnings, " "), "after --start-at") {
		t.Errorf("an on-time start warned: %q", back.Warnings)
	}
	if !strings.Contains(notes.String(), "5s ahead of the controller's (--clock-offset): it starts when it reads 10:00:05.000") {
		t.Errorf("notes %q", notes.String())
	}
}

// A setup that ends after the start asked for starts at once, and the
// record and the notes say how late.
func TestRunStartAtLateSetup(t *testing.T) {
	target := t.TempDir()
	clk := &fakeClock{t: controllerNoon.Add(-time.Second)}
	eng := &clockedEngine{clock: clk, layoutTakes: 6 * time.Second}
	var notes strings.Builder
	rec, err := Run(context.Background(), quickRequest(target), Options{
		Engine: eng, Now: clk.now, Sleep: clk.sleep, Notes: &notes, StartAt: controllerNoon,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(clk.sleeps) != 0 || !rec.ActualStart.Equal(controllerNoon.Add(5*time.Second)) {
		t.Errorf("slept %v, began %v", clk.sleeps, rec.ActualStart)
	}
	want := "started 5s after --start-at 2026-12-03T10:00:00Z: its setup took longer than the time given"
	if !strings.Contains(strings.Join(rec.Warnings, "\n"), want) || !strings.Contains(notes.String(), want) {
		t.Errorf("warnings %q, notes %q", rec.Warnings, notes.String())
	}
	if rec.Clock != nil {
		t.Errorf("clock %+v, none given", rec.Clock)
	}
}

// Ctrl-C during the wait: nothing measured, the test file removed, no
// record.
func TestRunStartAtCancelled(t *testing.T) {
	target, results := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &fakeClock{t: controllerNoon.Add(-time.Minute), onSleep: func(n int) {
		if n == 3 {
			cancel()
		}
	}}
	eng := &clockedEngine{clock: clk}
	rec, err := Run(ctx, quickRequest(target), Options{Engine: eng, ResultsDir: results, Now: clk.now, Sleep: clk.sleep, StartAt: controllerNoon})
	if !errors.Is(err, context.Canceled) || rec != nil {
		t.Fatalf("rec %v, err %v", rec, err)
	}
	if len(eng.runAt) != 0 || len(clk.sleeps) != 4 {
		t.Errorf("ran %d workloads after %d sleeps", len(eng.runAt), len(clk.sleeps))
	}
	if left := append(dirEntries(t, target), dirEntries(t, results)...); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Without --start-at the run measures at once and still records when.
func TestRunActualStartWithoutStartAt(t *testing.T) {
	clk := &fakeClock{t: controllerNoon}
	eng := &clockedEngine{clock: clk, layoutTakes: 3 * time.Second}
	rec, err := Run(context.Background(), quickRequest(t.TempDir()), Options{Engine: eng, Now: clk.now, Sleep: clk.sleep})
	if err != nil {
		t.Fatal(err)
	}
	// The layout is the first workload's, after the measured start.
	if rec.StartAt != nil || rec.ActualStart == nil || !rec.ActualStart.Equal(controllerNoon) || len(clk.sleeps) != 0 {
		t.Errorf("start_at %v, actual_start %v, sleeps %v", rec.StartAt, rec.ActualStart, clk.sleeps)
	}
}

// The wait reads the clock again after every step: a clock stepped back
// during it (chronyd's makestep) is waited out, one stepped forward past
// the start ends it.
func TestWaitUntilFollowsClockSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  time.Duration
		slept time.Duration
	}{
		{"stepped back 3 s", -3 * time.Second, 13 * time.Second},
		{"stepped forward 30 s", 30 * time.Second, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: controllerNoon.Add(-10 * time.Second)}
			clk.onSleep = func(n int) {
				if n == 2 {
					clk.advance(tc.step)
				}
			}
			if err := waitUntil(context.Background(), controllerNoon, clk.now, clk.sleep, nil); err != nil {
				t.Fatal(err)
			}
			var slept time.Duration
			for _, s := range clk.sleeps {
				slept += s
			}
			if slept != tc.slept || clk.now().Before(controllerNoon) {
				t.Errorf("slept %v (%v), now %v", slept, clk.sleeps, clk.now())
			}
		})
	}
}
