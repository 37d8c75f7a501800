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
