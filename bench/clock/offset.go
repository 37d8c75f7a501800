// Package clock knows how far a host's clock is from another's: the
// estimate from timestamp round trips a controller takes (the fleet
// playbook, over SSH), and chronyd's own estimate against NTP time. A
// bench record keeps the result (record.Clock), and a fleet's report
// corrects each host's start by it. Parsing and estimating are pure;
// Chrony is the one function that runs a program, through the runner it
// is given.
package clock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrSamples is wrapped by errors about the samples given (bad input).
var ErrSamples = errors.New("bad clock samples")

// Sample is one round trip: the controller's clock read before (T0) and
// after (T1) asking the host for its clock (Host).
type Sample struct {
	T0, Host, T1 time.Time
}

// RTT is the sample's round trip.
func (s Sample) RTT() time.Duration { return s.T1.Sub(s.T0) }

// Offset is the host's clock less the controller's, taking the host's
// reading to have been made halfway through the round trip. It is off by
// at most half the round trip either way: the host read its clock at some
// moment between T0 and T1, whatever the delays each way were.
func (s Sample) Offset() time.Duration {
	mid := s.T0.Add(s.RTT() / 2)
	return s.Host.Sub(mid)
}

// Estimate is the offset taken from the best of several samples.
type Estimate struct {
	Offset time.Duration // host clock less controller clock
	RTT    time.Duration // the round trip of the sample used
	// Uncertainty bounds the offset's error either way: RTT/2.
	Uncertainty time.Duration
	Samples     int // samples given
	Used        int // 1-based line of the sample used, among the samples
}

// Best estimates the offset from the sample of the shortest round trip:
// a longer one only adds delays (a busy host, a retransmission, SSH's own
// work) whose split between the two ways is unknown, and it is that split
// which puts the midpoint off. Ties go to the earlier sample.
func Best(samples []Sample) (Estimate, error) {
	if len(samples) == 0 {
		return Estimate{}, fmt.Errorf("no samples: %w", ErrSamples)
	}
	best := 0
	for i, s := range samples {
		if s.RTT() < 0 {
			return Estimate{}, fmt.Errorf("sample %d: the controller's second time is before its first: %w", i+1, ErrSamples)
		}
		if s.RTT() < samples[best].RTT() {
			best = i
		}
	}
	s := samples[best]
	return Estimate{Offset: s.Offset(), RTT: s.RTT(), Uncertainty: s.RTT() / 2, Samples: len(samples), Used: best + 1}, nil
}

// maxSampleLines bounds what ParseSamples reads: a playbook takes a
// handful of samples, not millions.
const maxSampleLines = 10000

// ParseSamples reads one sample a line, "T0 HOST T1": three Unix times in
// seconds with up to nine decimals, as `date +%s.%N` prints them, the
// first and last the controller's, the middle one the host's. Blank lines
// and lines starting with # are skipped.
func ParseSamples(r io.Reader) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(out) == maxSampleLines {
			return nil, fmt.Errorf("more than %d samples: %w", maxSampleLines, ErrSamples)
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %q: want \"T0 HOST T1\", three Unix times: %w", n, line, ErrSamples)
		}
		var ts [3]time.Time
		for i, v := range f {
			t, err := ParseUnix(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			ts[i] = t
		}
		out = append(out, Sample{T0: ts[0], Host: ts[1], T1: ts[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	return out, nil
}

// ParseUnix reads a Unix time in seconds, "1764755999.123456789", exactly
// (no float64 in between, which would keep only about a microsecond of a
// present-day time).
func ParseUnix(s string) (time.Time, error) {
	bad := fmt.Errorf("%q is not a Unix time in seconds (as date +%%s.%%N prints): %w", s, ErrSamples)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || len(whole) > 12 {
		return time.Time{}, bad
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return time.Time{}, bad
	}
	if len(frac) > 9 {
		frac = frac[:9] // below a nanosecond: nothing a clock here tells
	}
	var ns int64
	if frac != "" {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Unix(sec, ns).UTC(), nil
}
