package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/bench/workload"
)

// interleavedTargets checks bench's several TARGETs and their --label
// (one a target, comma-separated; the targets themselves when absent) and
// what does not go with taking them in turns.
func interleavedTargets(targets []string, labels string, o benchOptions) ([]string, error) {
	names := targets
	if labels != "" {
		names = strings.Split(labels, ",")
		if len(names) != len(targets) {
			return nil, fmt.Errorf("--label %s names %d labels for %d targets: give one a target, comma-separated", labels, len(names), len(targets))
		}
	}
	for i, n := range names {
		if strings.TrimSpace(n) == "" || slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("--label %s: each target needs a label of its own", labels)
		}
	}
	switch {
	case o.RepeatAuto:
		return nil, errors.New("several targets take their rounds in turn: give --repeat N, not auto")
	case o.SteadyState || o.Precondition:
		return nil, errors.New("--steady-state and --precondition take one target at a time")
	case o.KeepPartial:
		return nil, errors.New("--keep-partial takes one target at a time")
	}
	return names, nil
}

// runBenchInterleaved benchmarks several targets in rounds: each round
// runs every workload once on each target, the targets in turn, the first
// one rotating from round to round (A B, B A, ...), so that whatever
// drifts during the run (other load, caches, heat) falls on every target
// alike. Each target's rounds become one record (Order "interleaved"),
// saved when all rounds are done; the output is their comparison by label.
//
// With --start-at the synchronized start is the first round's first run:
// it alone waits, and every target's record keeps that run's start, the
// one the fleet's hosts share.
func runBenchInterleaved(ctx context.Context, opts benchOptions, targets, labels []string, m *machine, e *env) error {
	began := m.clockNow()
	format, err := e.format("table", "json", "markdown")
	if err != nil {
		return err
	}
	reqs := make([]workload.Request, len(targets))
	for i, t := range targets {
		o := opts
		o.Target, o.Label, o.Repeat = t, labels[i], 1
		if reqs[i], err = o.request(); err != nil {
			return usageErr(err)
		}
		if _, err := workload.Plan(reqs[i]); err != nil {
			return usageErr(err)
		}
	}
	start, err := startOf(ctx, opts, m, began)
	if err != nil {
		return err
	}
	if err := checkResultsDir(e.ResultsDir); err != nil {
		return err
	}
	host, err := benchHost(ctx, e, opts.Hostname)
	if err != nil {
		return err
	}
	claims, err := guardDeviceWrites(ctx, reqs, host, opts.Yes, m, e)
	defer releaseClaims(claims)
	if err != nil {
		return err
	}

	// The rounds are saved merged, once all are done.
	roundEnv := *e
	roundEnv.ResultsDir = ""
	rounds := make([][]*record.Record, len(targets))
	for r := range opts.Repeat {
		for _, i := range record.RoundOrder(r, len(targets)) {
			if !e.Quiet {
				fmt.Fprintf(e.Stderr, "bench: round %d/%d: %s (%s)\n", r+1, opts.Repeat, labels[i], targets[i])
			}
			rec, err := runBenchLive(ctx, reqs[i], host, &roundEnv, start, claims) // held across the rounds
			start.at = time.Time{}                                                 // the rounds after the first start at once
			if err != nil {
				if errors.Is(err, context.Canceled) || ctx.Err() != nil {
					return interrupted(fmt.Sprintf("; in round %d of %d, no result saved", r+1, opts.Repeat), err)
				}
				if errors.Is(err, workload.ErrUsage) {
					return usageErr(err)
				}
				return fmt.Errorf("round %d, %s: %w", r+1, labels[i], err)
			}
			rounds[i] = append(rounds[i], rec)
		}
	}
	first := rounds[record.RoundOrder(0, len(targets))[0]][0]
	var merged []*record.Record
	var ids []string
	for i := range targets {
		rec, err := record.MergeRounds(record.NewID(rounds[i][0].Start), rounds[i])
		if err != nil {
			return err
		}
		rec.StartAt, rec.ActualStart = first.StartAt, first.ActualStart
		if err := record.Save(e.ResultsDir, rec); err != nil {
			return err
		}
		merged = append(merged, rec)
		ids = append(ids, rec.ID)
	}
	c, err := compare.Compare(merged, compare.Options{By: compare.ByLabel})
	if err != nil {
		return err
	}
	buf, err := renderComparison(e, c, format, "", report.Layout{})
	if err != nil {
		return err
	}
	if err := writeOutput(e, "", buf.Bytes()); err != nil {
		return err
	}
	if !e.Quiet {
		fmt.Fprintf(e.Stderr, "saved %s (%d rounds, interleaved)\n", strings.Join(ids, ", "), opts.Repeat)
	}
	return nil
}
