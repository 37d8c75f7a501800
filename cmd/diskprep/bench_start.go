package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/record"
)

// startAtMaxAhead guards against a typo in --start-at (a day or a month
// off): nobody means a benchmark to wait longer than this.
const startAtMaxAhead = 24 * time.Hour

// benchStart is a bench run's synchronized start (--start-at, by the
// controller's clock; zero for none), this host's clock against the
// controller's (--clock-offset, else chrony's, else unknown), and the
// clock and sleep the wait uses (the machine's: tests pass fakes).
type benchStart struct {
	at    time.Time
	clock *record.Clock
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// parseClockFlags reads --clock-offset and --clock-rtt: nil when no
// offset is given (chrony's, or none, is then recorded).
func parseClockFlags(offset, rtt string) (*record.Clock, error) {
	if offset == "" {
		if rtt != "" {
			return nil, errors.New("--clock-rtt goes with --clock-offset: the round trip of the sample the offset was taken from")
		}
		return nil, nil
	}
	off, err := signedDuration("--clock-offset", offset)
	if err != nil {
		return nil, err
	}
	c := &record.Clock{Source: record.ClockController, OffsetMS: record.MS(off), Reference: "controller"}
	if rtt != "" {
		d, err := signedDuration("--clock-rtt", rtt)
		if err != nil {
			return nil, err
		}
		if d < 0 {
			return nil, fmt.Errorf("--clock-rtt %s: a round trip is not negative", rtt)
		}
		c.RTTMS, c.UncertaintyMS = record.MS(d), record.MS(d/2)
	}
	return c, nil
}

// signedDuration reads a duration that may be negative: "-3.2s", "+5ms".
func signedDuration(flag, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s %q: want a duration with its unit, e.g. 5.012s, -3ms, 250us", flag, s)
	}
	return d, nil
}

// startSpec is --start-at as typed: a time (RFC 3339, with its zone),
// or a duration from when the command starts (+30s).
type startSpec struct {
	text  string
	at    time.Time
	after time.Duration
	rel   bool
}

func parseStartAt(s string) (startSpec, error) {
	s = strings.TrimSpace(s)
	sp := startSpec{text: s}
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return sp, fmt.Errorf("--start-at %s: want +DURATION (e.g. +30s, +2m) or an RFC 3339 time with its zone (e.g. 2026-12-03T10:00:00Z)", s)
		}
		sp.after, sp.rel = d, true
		return sp, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return sp, fmt.Errorf("--start-at %s: want an RFC 3339 time with its zone (e.g. 2026-12-03T10:00:00Z or 2026-12-03T11:00:00+01:00), or +DURATION (e.g. +30s)", s)
	}
	sp.at = t
	return sp, nil
}

// resolve is the start by the controller's clock. now is this host's
// clock when the command started and offset how far it is ahead of the
// controller's (0 when unknown), so a +DURATION counts from the
// controller's now. A start already past by more than bench.StartGrace,
// or more than startAtMaxAhead ahead, is refused.
func (sp startSpec) resolve(now time.Time, offset time.Duration) (time.Time, error) {
	ctrlNow := now.Add(-offset)
	at := sp.at
	if sp.rel {
		at = ctrlNow.Add(sp.after)
	}
	clockNote := ""
	switch {
	case offset > 0:
		clockNote = fmt.Sprintf(" by the controller's clock, this host's being %s ahead", offset)
	case offset < 0:
		clockNote = fmt.Sprintf(" by the controller's clock, this host's being %s behind", -offset)
	}
	switch past := ctrlNow.Sub(at); {
	case past > bench.StartGrace:
		return time.Time{}, fmt.Errorf("--start-at %s is %s in the past (it is %s now%s): give a later time",
			sp.text, roughly(past), ctrlNow.UTC().Format(time.RFC3339), clockNote)
	case -past > startAtMaxAhead:
		return time.Time{}, fmt.Errorf("--start-at %s is %s ahead, more than %s (it is %s now%s): a typo?",
			sp.text, roughly(-past), startAtMaxAhead, ctrlNow.UTC().Format(time.RFC3339), clockNote)
	}
	return at.UTC(), nil
}

// startOf resolves the run's clock and start, before anything else is
// done: the clock from --clock-offset or else chrony (through the
// machine), then --start-at against it. Errors are usage errors.
func startOf(ctx context.Context, opts benchOptions, m *machine, began time.Time) (benchStart, error) {
	st := benchStart{now: m.now, sleep: m.sleep}
	c, err := parseClockFlags(opts.ClockOffset, opts.ClockRTT)
	if err != nil {
		return st, usageErr(err)
	}
	var spec startSpec
	if opts.StartAt != "" {
		// The syntax first: a typo answers before chronyc runs.
		if spec, err = parseStartAt(opts.StartAt); err != nil {
			return st, usageErr(err)
		}
	}
	if c == nil && m.clock != nil {
		c = m.clock(ctx)
	}
	st.clock = c
	if opts.StartAt != "" {
		off, _ := c.Offset()
		if st.at, err = spec.resolve(began, off); err != nil {
			return st, usageErr(err)
		}
	}
	return st, nil
}

// options are bench.Options' start and clock fields.
func (s benchStart) options(o *bench.Options) {
	o.StartAt, o.Clock, o.Now, o.Sleep = s.at, s.clock, s.now, s.sleep
}

// roughly is a duration to the precision that matters to a person
// reading how far off a start is: "2s", "25h0m0s", "2234 days".
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 72*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%.0f days", d.Hours()/24)
}
