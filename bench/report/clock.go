package report

import (
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/units"
)

// signedTime is a signed time in ms as people read it: "+5.01 s",
// "-312 µs", "0 s".
func signedTime(ms float64) string {
	switch {
	case ms > 0:
		return "+" + units.FormatNanoseconds(ms*1e6)
	case ms < 0:
		return "-" + units.FormatNanoseconds(-ms*1e6)
	}
	return "0 s"
}

// clockText says a record's clock offset in one line: "+4.02 ms ± 900 µs
// against the controller (--clock-offset, round trip 1.80 ms)".
func clockText(c *record.Clock) string {
	if c.OffsetMS == nil {
		if c.Note == "" {
			return "unknown"
		}
		return "unknown: " + c.Note
	}
	s := signedTime(*c.OffsetMS)
	if c.UncertaintyMS != nil {
		s += " ± " + units.FormatNanoseconds(*c.UncertaintyMS*1e6)
	}
	var how []string
	switch c.Source {
	case record.ClockController:
		s += " against the controller"
		how = append(how, "--clock-offset")
		if c.RTTMS != nil {
			how = append(how, "round trip "+units.FormatNanoseconds(*c.RTTMS*1e6))
		}
	case record.ClockChrony:
		s += " against NTP time"
		how = append(how, "chrony")
		if c.Reference != "" {
			how = append(how, c.Reference)
		}
	default:
		how = append(how, c.Source)
	}
	if c.Note != "" {
		how = append(how, c.Note)
	}
	return s + " (" + strings.Join(how, ", ") + ")"
}

// startText says when a synchronized run began against when it was
// asked to: "2026-12-03T10:00:05.004Z, for --start-at 2026-12-03T10:00:00Z".
func startText(rec *record.Record) string {
	s := rec.ActualStart.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if rec.StartAt != nil {
		s += ", for --start-at " + rec.StartAt.UTC().Format(time.RFC3339)
	}
	return s + " (this host's clock)"
}
