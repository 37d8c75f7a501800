package disk

import (
	"context"
	"fmt"

	"github.com/diskprep/diskprep/hwinfo"
)

// PlanAll plans every request (the disks of a plan file, or the one of the
// flags) before any disk is touched, so that one refusal stops them all. An
// error names the request's origin in the plan file (file:line) when it
// has one.
func PlanAll(reqs []Request, host *hwinfo.Host) ([]*Plan, error) {
	return Planner{}.PlanAll(reqs, host)
}

// PlanAll is the package's PlanAll on pl's machine.
func (pl Planner) PlanAll(reqs []Request, host *hwinfo.Host) ([]*Plan, error) {
	plans := make([]*Plan, len(reqs))
	for i, r := range reqs {
		p, err := pl.PlanDisk(r, host)
		if err != nil {
			if r.Origin != "" {
				return nil, fmt.Errorf("%s: %w", r.Origin, err)
			}
			return nil, err
		}
		plans[i] = p
	}
	return plans, nil
}

// ApplyAll applies the plans one after the other, in their order, with
// apply (Apply with the command's deps). It stops at the first failure and
// returns, with its error, the results of the disks done before it.
func ApplyAll(ctx context.Context, plans []*Plan, apply func(context.Context, *Plan) (*Result, error)) ([]*Result, error) {
	var results []*Result
	for _, p := range plans {
		res, err := apply(ctx, p)
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}
