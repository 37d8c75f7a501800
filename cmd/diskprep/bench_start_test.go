package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
)

// startMachine is the live machine on a fake wall clock that sleeping
// moves on, with the clock offset chrony would report given: a test of a
// 30-second wait takes no time.
type startMachine struct {
	*machine
	mu     sync.Mutex
	t      time.Time
	slept  time.Duration
	chrony int // times the clock was read
}

func newStartMachine(at time.Time, c *record.Clock) *startMachine {
	sm := &startMachine{machine: liveMachine(), t: at}
	sm.now = func() time.Time {
		sm.mu.Lock()
		defer sm.mu.Unlock()
		return sm.t
	}
	sm.sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		sm.mu.Lock()
		sm.t, sm.slept = sm.t.Add(d), sm.slept+d
		sm.mu.Unlock()
		return nil
	}
	sm.clock = func(context.Context) *record.Clock { sm.chrony++; return c }
	return sm
}

var hostNoon = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

const tinySpec = "name=rr,rw=randread,bs=4k,size=4M,runtime=100ms"

func onlyRecord(t *testing.T, store string) *record.Record {
	t.Helper()
	listed, _, err := record.List(store)
	if err != nil || len(listed) != 1 {
		t.Fatalf("store: %d records, %v", len(listed), err)
	}
	return listed[0].Record
}

// bench --start-at +30s --clock-offset=-2s: resolved once, when the
// command starts, to the controller's time (this host's clock less the
// offset, plus 30 s); the host waits until its own clock reads that
// plus the offset, 30 s after it started, and the record keeps both.
func TestBenchStartAtRelative(t *testing.T) {
	sm := newStartMachine(hostNoon, nil)
	results := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runArgsOn(sm.machine, "bench", t.TempDir(), "--workload", tinySpec, "--results", results,
		"--start-at", "+30s", "--clock-offset", "-2s", "--clock-rtt", "3ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rec := onlyRecord(t, results)
	wantAt := hostNoon.Add(2 * time.Second).Add(30 * time.Second)
	if rec.StartAt == nil || !rec.StartAt.Equal(wantAt) || rec.ActualStart == nil || !rec.ActualStart.Equal(hostNoon.Add(30*time.Second)) {
		t.Errorf("start_at %v (want %v), actual_start %v", rec.StartAt, wantAt, rec.ActualStart)
	}
	if sm.slept != 30*time.Second || sm.chrony != 0 {
		t.Errorf("slept %v, chrony read %d times (an offset was given)", sm.slept, sm.chrony)
	}
	c := rec.Clock
	if c == nil || c.Source != record.ClockController || *c.OffsetMS != -2000 || *c.RTTMS != 3 || *c.UncertaintyMS != 1.5 {
		t.Errorf("clock %+v", c)
	}
	if !strings.Contains(stderr, "waiting 30 s for --start-at 2026-12-03T10:00:32Z") ||
		!strings.Contains(stderr, "this host's clock is 2s behind the controller's (--clock-offset): it starts when it reads 10:00:30.000") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// Without --clock-offset the clock is chrony's (here: unknown, and
// why); an RFC 3339 start is the host's own time then.
func TestBenchStartAtChronyClock(t *testing.T) {
	unknown := &record.Clock{Source: record.ClockUnknown, Note: "chronyc not found, and no --clock-offset given"}
	sm := newStartMachine(hostNoon, unknown)
	results := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runArgsOn(sm.machine, "bench", t.TempDir(), "--workload", tinySpec, "--results", results, "--start-at", "2026-12-03T11:00:05+01:00")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rec := onlyRecord(t, results)
	if !rec.StartAt.Equal(hostNoon.Add(5*time.Second)) || !rec.ActualStart.Equal(hostNoon.Add(5*time.Second)) || sm.slept != 5*time.Second {
		t.Errorf("start_at %v, actual_start %v, slept %v", rec.StartAt, rec.ActualStart, sm.slept)
	}
	if rec.Clock == nil || rec.Clock.Source != record.ClockUnknown || rec.Clock.Note != unknown.Note || sm.chrony != 1 {
		t.Errorf("clock %+v, read %d times", rec.Clock, sm.chrony)
	}
	// Without --start-at: no wait, the clock and the start made recorded.
	results2 := filepath.Join(t.TempDir(), "results")
	sm.slept = 0
	if code, _, stderr := runArgsOn(sm.machine, "bench", t.TempDir(), "--workload", tinySpec, "--results", results2); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rec = onlyRecord(t, results2)
	if rec.StartAt != nil || rec.ActualStart == nil || rec.Clock == nil || sm.slept != 0 {
		t.Errorf("start_at %v, actual_start %v, clock %+v, slept %v", rec.StartAt, rec.ActualStart, rec.Clock, sm.slept)
	}
}

// A start too far past or ahead, a time without its zone, a clock
// offset without its unit: one line, exit 2, before anything is done
// (no test file, no store, no chronyc for a typo).
func TestBenchStartAtRefused(t *testing.T) {
	chronyBehind := &record.Clock{Source: record.ClockChrony, OffsetMS: record.MS(-5 * time.Second)}
	for _, tc := range []struct {
		name   string
		args   []string
		clock  *record.Clock
		msg    string
		chrony int
	}{
		{"past", []string{"--start-at", "2026-12-03T09:59:58Z"}, nil, "--start-at 2026-12-03T09:59:58Z is 2s in the past (it is 2026-12-03T10:00:00Z now): give a later time", 1},
		{"past by the controller's clock", []string{"--start-at", "2026-12-03T10:00:03Z"}, chronyBehind, "is 2s in the past (it is 2026-12-03T10:00:05Z now by the controller's clock, this host's being 5s behind)", 1},
		{"too far ahead", []string{"--start-at", "+25h"}, nil, "is 25h0m0s ahead, more than 24h0m0s", 1},
		{"no zone", []string{"--start-at", "2026-12-03T10:00:30"}, nil, "want an RFC 3339 time with its zone", 0},
		{"negative wait", []string{"--start-at", "+-5s"}, nil, "want +DURATION", 0},
		{"offset without unit", []string{"--start-at", "+5s", "--clock-offset", "5"}, nil, "--clock-offset \"5\": want a duration with its unit", 0},
		{"rtt without offset", []string{"--clock-rtt", "2ms"}, nil, "--clock-rtt goes with --clock-offset", 0},
		{"negative rtt", []string{"--clock-offset", "1s", "--clock-rtt", "-2ms"}, nil, "a round trip is not negative", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := newStartMachine(hostNoon, tc.clock)
			target, results := t.TempDir(), filepath.Join(t.TempDir(), "results")
			code, stdout, stderr := runArgsOn(sm.machine, append([]string{"bench", target, "--workload", tinySpec, "--results", results}, tc.args...)...)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", code, stdout, stderr, tc.msg)
			}
			if left := append(entries(t, target), entries(t, results)...); len(left) != 0 || sm.slept != 0 || sm.chrony != tc.chrony {
				t.Errorf("left %v, slept %v, chrony read %d times", left, sm.slept, sm.chrony)
			}
		})
	}
}

// Ctrl-C (here SIGTERM's cancellation) during the wait: the usual last
// line, the test file removed, nothing saved, nothing measured.
func TestBenchStartAtInterrupted(t *testing.T) {
	sm := newStartMachine(hostNoon, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleep := sm.sleep
	n := 0
	sm.sleep = func(c context.Context, d time.Duration) error {
		if n++; n == 5 {
			cancel()
		}
		return sleep(c, d)
	}
	target, results := t.TempDir(), filepath.Join(t.TempDir(), "results")
	var out, errb bytes.Buffer
	code := runOn(ctx, sm.machine, []string{"diskprep", "bench", target, "--workload", tinySpec, "--results", results, "--start-at", "+1m"}, strings.NewReader(""), &out, &errb)
	if code != exitInterrupted || !strings.HasSuffix(errb.String(), "diskprep: interrupted; test file removed, no result saved\n") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if left := append(entries(t, target), entries(t, results)...); len(left) != 0 || sm.slept != 4*time.Second {
		t.Errorf("left %v, slept %v", left, sm.slept)
	}
}

// Several targets in turns: the first round's first run waits, the
// others follow at once, and both records keep the synchronized start.
func TestBenchStartAtInterleaved(t *testing.T) {
	sm := newStartMachine(hostNoon, nil)
	results := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runArgsOn(sm.machine, "bench", t.TempDir(), t.TempDir(), "--label", "a,b", "--repeat", "2",
		"--workload", tinySpec, "--results", results, "--start-at", "+10s", "--clock-offset", "0s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	listed, _, err := record.List(results)
	if err != nil || len(listed) != 2 || sm.slept != 10*time.Second || strings.Count(stderr, "waiting ") != 1 {
		t.Fatalf("%d records, %v; slept %v; stderr:\n%s", len(listed), err, sm.slept, stderr)
	}
	for _, l := range listed {
		r := l.Record
		if r.StartAt == nil || !r.StartAt.Equal(hostNoon.Add(10*time.Second)) || r.ActualStart == nil || !r.ActualStart.Equal(hostNoon.Add(10*time.Second)) || r.Clock == nil {
			t.Errorf("%s (%s): start_at %v, actual_start %v, clock %+v", r.ID, r.Label, r.StartAt, r.ActualStart, r.Clock)
		}
	}
}
