package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench/clock"
	"github.com/diskprep/diskprep/bench/record"
)

// clockOffsetSchema is clock-offset -o json.
const clockOffsetSchema = "diskprep/clock-offset/v1"

// clockOffsetDoc is what clock-offset -o json prints: the estimate, and
// the bench flags that pass it on.
type clockOffsetDoc struct {
	Schema        string   `json:"schema"`
	OffsetMS      float64  `json:"offset_ms"`
	RTTMS         float64  `json:"rtt_ms"`
	UncertaintyMS float64  `json:"uncertainty_ms"`
	Samples       int      `json:"samples"`
	SampleUsed    int      `json:"sample_used"`
	BenchArgs     []string `json:"bench_args"`
}

// maxSamplesBytes bounds what clock-offset reads: a few lines a host.
const maxSamplesBytes = 1 << 20

func clockOffsetCommand() *cli.Command {
	return &cli.Command{
		Name:      "clock-offset",
		Usage:     "estimate a host's clock offset from timestamp round trips, for bench --clock-offset",
		ArgsUsage: "[SAMPLES]",
		Description: `Clock-offset reads timestamp round trips a controller took with a host (the
fleet playbook, over SSH), one a line, "T0 HOST T1": the controller's clock
before asking, the host's clock as it answered, the controller's clock after,
each a Unix time in seconds as date +%s.%N prints it. It takes the round trip
of the shortest time (longer ones only add delays, whose split between the
two ways is unknown) and prints the host's clock less the controller's, the
host read halfway through that round trip: off by at most half the round trip
either way. Lines starting with # and blank lines are skipped; with no
SAMPLES (or -) they are read from stdin.

With -o json it prints the estimate and bench_args, the flags that hand it to
bench on that host (--clock-offset and --clock-rtt).

Examples:
  diskprep clock-offset samples.txt
  for i in 1 2 3 4 5 6 7 8; do
    t0=$(date +%s.%N); h=$(ssh node-a date +%s.%N); t1=$(date +%s.%N)
    echo "$t0 $h $t1"
  done | diskprep clock-offset -o json`,
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() > 1 {
				return usageErr(fmt.Errorf("clock-offset takes at most one SAMPLES file (or -, stdin)"))
			}
			return runClockOffset(c.Context, c.Args().First(), e)
		}),
	}
}

func runClockOffset(_ context.Context, file string, e *env) error {
	format, err := e.format("table", "json")
	if err != nil {
		return err
	}
	in := e.Stdin
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return usageErr(fmt.Errorf("clock-offset: %w", err))
		}
		defer f.Close()
		in = f
	}
	samples, err := clock.ParseSamples(io.LimitReader(in, maxSamplesBytes))
	if err != nil {
		return usageErr(err)
	}
	est, err := clock.Best(samples)
	if err != nil {
		return usageErr(err)
	}
	doc := clockOffsetDoc{
		Schema: clockOffsetSchema, OffsetMS: *record.MS(est.Offset), RTTMS: *record.MS(est.RTT),
		UncertaintyMS: *record.MS(est.Uncertainty), Samples: est.Samples, SampleUsed: est.Used,
		BenchArgs: []string{"--clock-offset=" + seconds(est.Offset), "--clock-rtt=" + seconds(est.RTT)},
	}
	if format == "json" {
		return writeJSON(e.Stdout, doc)
	}
	side := "ahead of"
	if est.Offset < 0 {
		side = "behind"
	}
	fmt.Fprintf(e.Stdout, "offset %s ± %s: the host's clock is %s %s this one's (sample %d of %d, round trip %s)\n",
		signedSeconds(est.Offset), est.Uncertainty, absDur(est.Offset), side, est.Used, est.Samples, est.RTT)
	fmt.Fprintf(e.Stdout, "bench flags: %s\n", strings.Join(doc.BenchArgs, " "))
	return nil
}

// seconds is d as a duration bench reads back exactly, in ASCII seconds
// with up to nine decimals: "5.000123456s", "-0.004s".
func seconds(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if frac := int64(d % time.Second); frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
	}
	return sign + s + "s"
}

func signedSeconds(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
