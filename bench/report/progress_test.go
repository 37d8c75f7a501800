package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/record"
)

// The Progress of bench's TestRunDirectory's first run (second
// snapshot: 200 I/Os in 0.5 s, 7 s to go) as the live line shows it.
func TestProgressLine(t *testing.T) {
	first := bench.Progress{Workload: "seq1m-read", Index: 1, Count: 8, Repetition: 1, Repeat: 2, Phase: "run",
		Elapsed: time.Second, Duration: time.Second, ETA: 7 * time.Second, ReadIOPS: 400, ReadBps: 400 << 20}
	if line := ProgressLine(first); !strings.Contains(line, "[1/8] seq1m-read (run 1/2)") || !strings.Contains(line, "400 IOPS") || !strings.Contains(line, "ETA 7s") {
		t.Errorf("progress line %q", line)
	}
	if line := ProgressLine(bench.Progress{Workload: "w", Index: 1, Count: 1, Repeat: 1, Phase: "layout"}); line != "[1/1] w: laying out test file" {
		t.Errorf("layout line %q", line)
	}
	pre := bench.Progress{Workload: "precondition", Repetition: 2, Repeat: 2, Phase: "precondition", DoneBytes: 1 << 30, TotalBytes: 4 << 30, WriteBps: 500e6, ETA: 90 * time.Second}
	if line := ProgressLine(pre); line != "precondition: writing the device, pass 2/2  25%  500 MB/s  ETA 1m30s" {
		t.Errorf("precondition line %q", line)
	}
	var buf bytes.Buffer
	l := &LiveLine{W: &buf}
	l.Update(first)
	l.Update(bench.Progress{Workload: "w", Index: 1, Count: 1, Repeat: 1, Phase: "layout"})
	l.Clear()
	if s := buf.String(); !strings.HasPrefix(s, "\r[1/8]") || !strings.HasSuffix(s, "\r") || strings.Contains(s, "\n") {
		t.Errorf("live line wrote %q", s)
	}
}

// Issue 25 item 6: with stderr not a terminal, one line per workload and
// repetition as it starts, however many reports each sends.
func TestStepLines(t *testing.T) {
	var buf bytes.Buffer
	s := &StepLines{W: &buf, Min: StepMin}
	// Until the time left is known nothing is decided; the first step is
	// then said all the same.
	s.Update(bench.Progress{Workload: "seqread", Index: 1, Count: 4, Repetition: 1, Repeat: 2, Phase: "layout"})
	for idx := 1; idx <= 2; idx++ {
		for rep := 1; rep <= 2; rep++ {
			for _, phase := range []string{"layout", "ramp", "run", "run"} {
				s.Update(bench.Progress{Workload: "seqread", Index: (idx-1)*2 + rep, Count: 4, Repetition: rep, Repeat: 2, Phase: phase, ETA: time.Duration(50-10*((idx-1)*2+rep)) * time.Second})
			}
		}
	}
	want := "[1/4] seqread (run 1/2)  ETA 40s\n[2/4] seqread (run 2/2)  ETA 30s\n[3/4] seqread (run 1/2)  ETA 20s\n[4/4] seqread (run 2/2)  ETA 10s\n"
	if buf.String() != want {
		t.Errorf("step lines:\n%s\nwant:\n%s", buf.String(), want)
	}
	// A short run: no lines.
	buf.Reset()
	short := &StepLines{W: &buf, Min: StepMin}
	short.Update(bench.Progress{Workload: "w", Index: 1, Count: 1, Repetition: 1, Repeat: 1, Phase: "run", ETA: 8 * time.Second})
	if buf.Len() != 0 {
		t.Errorf("an 8-second run wrote %q", buf.String())
	}
}

// The wait for a synchronized start: a live line counting down, and in a
// log one line, however long the run.
func TestWaitProgress(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	p := bench.Progress{Phase: bench.PhaseWait, StartAt: at, ETA: 23400 * time.Millisecond}
	if line := ProgressLine(p); line != "waiting 23 s for --start-at 2026-12-03T10:00:00Z" {
		t.Errorf("wait line %q", line)
	}
	if line := ProgressLine(bench.Progress{Phase: bench.PhaseWait, StartAt: at, ETA: 300 * time.Millisecond}); line != "waiting 1 s for --start-at 2026-12-03T10:00:00Z" {
		t.Errorf("last wait line %q", line)
	}
	var buf bytes.Buffer
	s := &StepLines{W: &buf, Min: StepMin}
	for left := 23; left > 0; left-- {
		s.Update(bench.Progress{Phase: bench.PhaseWait, StartAt: at, ETA: time.Duration(left) * time.Second})
	}
	s.Update(bench.Progress{Workload: "seq1m-read", Index: 1, Count: 4, Repetition: 1, Repeat: 1, Phase: "run", ETA: 8 * time.Second})
	if buf.String() != "waiting 23 s for --start-at 2026-12-03T10:00:00Z\n" {
		t.Errorf("step lines %q", buf.String())
	}
}

func TestClockAndStartText(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		c    *record.Clock
		want string
	}{
		{&record.Clock{Source: record.ClockController, OffsetMS: ms(4.02), RTTMS: ms(1.8), UncertaintyMS: ms(0.9)}, "+4.02 ms ± 900 µs against the controller (--clock-offset, round trip 1.80 ms)"},
		{&record.Clock{Source: record.ClockChrony, OffsetMS: ms(-0.0123), UncertaintyMS: ms(3), Reference: "192.168.0.1"}, "-12.3 µs ± 3.00 ms against NTP time (chrony, 192.168.0.1)"},
		{&record.Clock{Source: record.ClockController, OffsetMS: ms(-5012)}, "-5.01 s against the controller (--clock-offset)"},
		{&record.Clock{Source: record.ClockUnknown, Note: "chronyc not found"}, "unknown: chronyc not found"},
	} {
		if got := clockText(tc.c); got != tc.want {
			t.Errorf("clockText = %q, want %q", got, tc.want)
		}
	}
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	began := at.Add(5004 * time.Millisecond)
	if got := startText(&record.Record{StartAt: &at, ActualStart: &began}); got != "2026-12-03T10:00:05.004Z, for --start-at 2026-12-03T10:00:00Z (this host's clock)" {
		t.Errorf("startText = %q", got)
	}
}
