package disk_test

import (
	"reflect"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/hosttest/dryrun"
)

// holdToDryRuns and checkDryRuns are the dry-run checker
// (disk/hosttest/dryrun) for the rigs of disk's tests.
func holdToDryRuns(t *testing.T, h *hosttest.Host) { dryrun.Hold(t, h) }

func checkDryRuns(t *testing.T, h *hosttest.Host) int { return dryrun.Check(t, h) }

func TestDryRunRecordsEveryRun(t *testing.T) {
	r := newFakeRig(t)
	p := plan(t, r, xfsData(r))
	apply(t, r, p)
	runs := r.h.PlanRuns()
	if len(runs) != 1 || runs[0].Plan != disk.ActionPlan(p) || !runs[0].Ended || runs[0].Err != nil || len(runs[0].Effects) == 0 {
		t.Fatalf("runs %+v", runs)
	}
	if got, want := steps(runs[0].Actions), p.Steps(); !reflect.DeepEqual(got, want) {
		t.Errorf("recorded actions %q, the dry run's steps %q", got, want)
	}
	if n := checkDryRuns(t, r.h); n != 1 {
		t.Errorf("%d runs checked", n)
	}
}

func steps(actions []disk.Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.Text
	}
	return out
}
