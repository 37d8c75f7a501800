package stack_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
)

// Stack volumes go through the same check.
func TestPlanStackMountPoint(t *testing.T) {
	h := hosttest.New()
	for i, n := range []string{"sdb", "sdc"} {
		h.AddDisk(hosttest.Disk{Name: n, Minor: uint32(16 * (i + 1)), SizeBytes: 2 << 30})
	}
	h.SetFile("/srv/full/a", nil)
	h.Mkdir("/boot")
	h.Symlink("/boot", "/mnt/b")
	pl := stack.Planner{Planner: disk.Planner{Host: h}}
	for point, want := range map[string]string{"/srv/full": "is not empty", "/mnt/b": "is in /boot", "/etc/x": "is in /etc"} {
		reqs := []disk.Request{member("/dev/sdb", "raid:data"), member("/dev/sdc", "raid:data")}
		st := stack.StackRequest{Arrays: []stack.ArraySpec{{Name: "data", Level: 1, Volume: stack.VolumeSpec{FS: "xfs", Mount: point}}}}
		plans, err := pl.PlanAll(reqs, h.FactsNow())
		if err == nil {
			_, err = pl.PlanStacks(context.Background(), st, plans, reqs, h.FactsNow())
		}
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a refusal saying %q", point, err, want)
		}
	}
	if w := h.Writes(); len(w) > 0 {
		t.Errorf("planning wrote %v", w)
	}
}
