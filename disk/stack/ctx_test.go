package stack_test

import (
	"context"
	"errors"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
)

// cancelHost is the recording fake whose programs honour their context,
// as exec.CommandContext does: a cancelled one runs nothing.
type cancelHost struct{ *hosttest.Host }

func (h cancelHost) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h.Host.Run(ctx, name, args...)
}

// Planning reads LVM's state (pvs, lvs) under the caller's context, so
// Ctrl-C stops it: planning stacks and planning their release.
func TestStackPlanningRunsUnderTheCallersContext(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	c := lvmFast()
	plans, _, err := r.plan(c)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	pl := r.planner()
	pl.Host = cancelHost{r.h}
	if _, err := pl.PlanStacks(cancelled, c.stack, plans, c.reqs, r.h.FactsNow()); !errors.Is(err, context.Canceled) {
		t.Errorf("PlanStacks under a cancelled context: %v", err)
	}

	r.prepare(t, c)
	deps := r.deps()
	deps.Host = cancelHost{r.h}
	if _, err := disk.PlanRelease(cancelled, "/dev/sdc", disk.ReleaseOptions{Wipe: true, Yes: true}, deps); !errors.Is(err, context.Canceled) {
		t.Errorf("PlanRelease under a cancelled context: %v", err)
	}
}
