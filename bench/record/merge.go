package record

import (
	"errors"
	"fmt"
	"slices"
)

// Order values of a record: how its repetitions were taken beside other
// conditions' (a comparison's columns).
const (
	// OrderBlocked: every repetition of a workload in a row (bench --repeat).
	OrderBlocked = "blocked"
	// OrderInterleaved: one round of every condition after another, so
	// that anything drifting during the runs hits each condition alike.
	OrderInterleaved = "interleaved"
)

// RoundOrder is the order n conditions take in round (0-based) of an
// interleaved run: each in turn, the first rotating from round to round
// (A B, B A, A B, ...), so that a drift during the run falls on every
// condition alike and no condition is always the first after a pause.
func RoundOrder(round, n int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = (k + round) % n
	}
	return order
}

// MergeRounds makes one record of the rounds of a run taken one at a time
// between other conditions' (interleaved): the same target, label and
// workloads in each, one or more repetitions a round. The repetitions keep
// their own start times, in order, numbered again from 1; the summaries
// are made again; warnings are kept once each; the record says its order
// is interleaved and takes id.
func MergeRounds(id string, rounds []*Record) (*Record, error) {
	if len(rounds) == 0 {
		return nil, errors.New("no rounds to merge")
	}
	first := rounds[0]
	out := *first
	out.ID = id
	out.Order = OrderInterleaved
	out.Workloads = make([]WorkloadResult, len(first.Workloads))
	out.Warnings = nil
	out.Repeat = 0
	for i, wr := range first.Workloads {
		out.Workloads[i] = WorkloadResult{Params: wr.Params}
	}
	addWarning := func(list *[]string, ws []string) {
		for _, w := range ws {
			if !slices.Contains(*list, w) {
				*list = append(*list, w)
			}
		}
	}
	for ri, r := range rounds {
		switch {
		case r.Target.Path != first.Target.Path || r.Label != first.Label:
			return nil, fmt.Errorf("round %d is of %s %q, not %s %q", ri+1, r.Target.Path, r.Label, first.Target.Path, first.Label)
		case len(r.Workloads) != len(first.Workloads):
			return nil, fmt.Errorf("round %d has %d workloads, not %d", ri+1, len(r.Workloads), len(first.Workloads))
		}
		if r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		out.Partial = out.Partial || r.Partial
		out.Repeat += r.Repeat
		addWarning(&out.Warnings, r.Warnings)
		for wi, wr := range r.Workloads {
			dst := &out.Workloads[wi]
			if wr.Params.Name != dst.Params.Name {
				return nil, fmt.Errorf("round %d: workload %d is %s, not %s", ri+1, wi+1, wr.Params.Name, dst.Params.Name)
			}
			for _, run := range wr.Runs {
				run.Index = len(dst.Runs) + 1
				dst.Runs = append(dst.Runs, run)
			}
			addWarning(&dst.Warnings, wr.Warnings)
		}
	}
	if h := first.Health; h != nil {
		merged := *h
		if last := rounds[len(rounds)-1].Health; last != nil {
			merged.After = last.After
		}
		out.Health = &merged
	}
	for i := range out.Workloads {
		out.Workloads[i].Summarize()
	}
	return &out, nil
}
