package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench"
)

// ProgressLine is the one-line live view of a run, without a line ending.
func ProgressLine(p bench.Progress) string {
	if p.Phase == bench.PhaseWait {
		return waitLine(p)
	}
	head := fmt.Sprintf("[%d/%d] %s", p.Index, p.Count, p.Workload)
	if p.Repeat > 1 {
		head += fmt.Sprintf(" (run %d/%d)", p.Repetition, p.Repeat)
	}
	if p.Phase == "layout" {
		return head + ": laying out test file"
	}
	if p.Phase == "precondition" {
		s := fmt.Sprintf("precondition: writing the device, pass %d/%d", p.Repetition, p.Repeat)
		if p.TotalBytes > 0 {
			s += fmt.Sprintf("  %.0f%%", float64(p.DoneBytes)/float64(p.TotalBytes)*100)
		}
		if p.WriteBps > 0 {
			s += fmt.Sprintf("  %s MB/s", mbps(p.WriteBps))
		}
		if p.ETA > 0 {
			s += "  ETA " + p.ETA.Round(time.Second).String()
		}
		return s
	}
	el := p.Elapsed.Truncate(100 * time.Millisecond).String()
	if p.Duration > 0 {
		el += "/" + p.Duration.String()
	}
	s := fmt.Sprintf("%s  %s", head, el)
	if p.Phase == "ramp" {
		s += "  ramp"
	}
	if iops := p.ReadIOPS + p.WriteIOPS; iops > 0 {
		s += fmt.Sprintf("  %s IOPS  %s MB/s", num(iops), mbps(p.ReadBps+p.WriteBps))
	}
	if p.ETA > 0 {
		s += "  ETA " + p.ETA.Round(time.Second).String()
	}
	return s
}

// waitLine is the wait for a synchronized start: "waiting 23 s for
// --start-at 2026-12-03T10:00:00Z".
func waitLine(p bench.Progress) string {
	left := p.ETA.Round(time.Second)
	if p.ETA > 0 && left == 0 {
		left = time.Second // the last part of a second reads as one, not 0
	}
	return fmt.Sprintf("waiting %d s for --start-at %s", int(left/time.Second), p.StartAt.UTC().Format(time.RFC3339))
}

// LiveLine redraws a progress line in place on a terminal.
type LiveLine struct {
	W    io.Writer
	last int
}

// Update replaces the current line with ProgressLine(p).
func (l *LiveLine) Update(p bench.Progress) {
	s := ProgressLine(p)
	n := len([]rune(s))
	pad := max(l.last-n, 0)
	fmt.Fprintf(l.W, "\r%s%s", s, strings.Repeat(" ", pad))
	l.last = n
}

// Clear erases the line so the table starts on a clean one.
func (l *LiveLine) Clear() {
	if l.last > 0 {
		fmt.Fprintf(l.W, "\r%s\r", strings.Repeat(" ", l.last))
		l.last = 0
	}
}

// StepLines writes a line as each workload and repetition starts (and
// each precondition pass), for a stderr that is no terminal: a redrawn
// line would be noise in a log, and nothing at all left a 3-minute
// bench --repeat 5 </dev/null silent. A run planned shorter than Min (by
// its first estimate of the time left) writes none: it is not long work,
// and its result or its one-line error follows soon enough.
type StepLines struct {
	W       io.Writer
	Min     time.Duration
	last    string
	decided bool
	on      bool
}

// StepMin is how long a run must be planned to take for step lines.
const StepMin = 30 * time.Second

// Update writes a line when p starts a step the last did not.
func (s *StepLines) Update(p bench.Progress) {
	if p.Phase == bench.PhaseWait {
		// Once, whatever the run's length: a fleet's log shows each
		// host waiting, and for how long.
		if s.last != bench.PhaseWait {
			s.last = bench.PhaseWait
			fmt.Fprintln(s.W, waitLine(p))
		}
		return
	}
	if !s.decided {
		if p.ETA <= 0 {
			return
		}
		s.decided, s.on = true, p.ETA >= s.Min
	}
	if !s.on {
		return
	}
	key := fmt.Sprintf("%d/%d", p.Index, p.Repetition)
	line := fmt.Sprintf("[%d/%d] %s", p.Index, p.Count, p.Workload)
	if p.Repeat > 1 {
		line += fmt.Sprintf(" (run %d/%d)", p.Repetition, p.Repeat)
	}
	if p.Phase == "precondition" {
		key = fmt.Sprintf("precondition %d", p.Repetition)
		line = fmt.Sprintf("precondition: writing the device, pass %d/%d", p.Repetition, p.Repeat)
	}
	if key == s.last {
		return
	}
	s.last = key
	if p.ETA > 0 {
		line += "  ETA " + p.ETA.Round(time.Second).String()
	}
	fmt.Fprintln(s.W, line)
}
