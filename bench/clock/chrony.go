package clock

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/termtext"
)

// Runner runs one external program and returns its output (stdout, then
// stderr): the project's one runner, disk.ExecRunner, which cmd passes.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ChronyArgs asks chronyc for its tracking report as one CSV line.
var ChronyArgs = []string{"-c", "tracking"}

// ChronyTimeout bounds the chronyc call.
const ChronyTimeout = 5 * time.Second

// Chrony is this host's clock against NTP time as chronyd tracks it,
// read with `chronyc -c tracking`; without chrony, or with chrony not
// synchronised, the clock is unknown and its Note says why. It never
// fails: the run goes on without an offset.
func Chrony(ctx context.Context, run Runner) *record.Clock {
	if run == nil {
		return Unknown("no program runner")
	}
	// chronyc answers at once or not at all (a daemon that is gone):
	// the run does not wait on it.
	ctx, cancel := context.WithTimeout(ctx, ChronyTimeout)
	defer cancel()
	out, err := run.Run(ctx, "chronyc", ChronyArgs...)
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return Unknown("chronyc not found, and no --clock-offset given")
	case err != nil:
		return Unknown(termtext.OneLine(err.Error()))
	}
	c, perr := ParseChrony(out)
	if perr != nil {
		return Unknown(perr.Error())
	}
	return c
}

// Unknown is a clock whose offset is not known, and why.
func Unknown(why string) *record.Clock {
	return &record.Clock{Source: record.ClockUnknown, Note: why}
}

// chronyLocalRef is the reference ID chronyd reports when it serves its
// own clock (the local directive): synchronised to nothing.
const chronyLocalRef = "7F7F0101"

// ParseChrony reads `chronyc -c tracking`: one CSV line of Reference ID,
// reference name or address, stratum, reference time, System time, last
// offset, RMS offset, frequency, residual frequency, skew, root delay,
// root dispersion, update interval and leap status. Its System time is
// chronyd's current correction, positive when the clock is slow of NTP
// time (chronyc's own table says "slow" then), so the offset, the clock
// less NTP time, is its negation. The error of the clock once corrected
// is bounded by the root dispersion plus half the root delay (chrony's
// documentation of tracking).
func ParseChrony(out []byte) (*record.Clock, error) {
	line := strings.TrimSpace(string(out))
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	f := strings.Split(line, ",")
	if len(f) < 14 {
		return nil, fmt.Errorf("chronyc -c tracking printed %q, not its 14 fields", termtext.OneLine(line))
	}
	num := func(i int, what string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(f[i]), 64)
		if err != nil {
			return 0, fmt.Errorf("chronyc -c tracking: %s %q is not a number", what, f[i])
		}
		return v, nil
	}
	correction, err := num(4, "system time")
	if err != nil {
		return nil, err
	}
	delay, err := num(10, "root delay")
	if err != nil {
		return nil, err
	}
	dispersion, err := num(11, "root dispersion")
	if err != nil {
		return nil, err
	}
	ref, name, leap := strings.ToUpper(strings.TrimSpace(f[0])), strings.TrimSpace(f[1]), strings.TrimSpace(f[13])
	switch {
	case strings.HasPrefix(strings.ToLower(leap), "not synchron"):
		return nil, errors.New("chrony is not synchronised")
	case ref == chronyLocalRef || ref == "00000000":
		return nil, fmt.Errorf("chrony is synchronised to no server (reference %s)", ref)
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	c := &record.Clock{
		Source:        record.ClockChrony,
		OffsetMS:      record.MS(sec(-correction)),
		UncertaintyMS: record.MS(sec(dispersion + delay/2)),
		Reference:     name,
	}
	if c.Reference == "" {
		c.Reference = ref
	}
	return c, nil
}
