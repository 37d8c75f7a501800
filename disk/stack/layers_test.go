package stack_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
)

// Without the layers (Deps.Layers nil), a release takes disks and
// partitions only: a running stack on the disk is not left under a disk
// taken away, and a wipe does not guess at a stopped stack's members
// elsewhere. Both are refused, nothing written.
func TestReleaseWithoutLayersRefusesStacks(t *testing.T) {
	r := newStackRig(t, "sdb")
	r.prepare(t, lvmOn("fast", disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{Use: "lvm:fast"}}}))
	bare := r.deps()
	bare.Layers = nil

	r.h.ResetLog()
	if _, err := disk.PlanRelease(context.Background(), "/dev/sdb", disk.ReleaseOptions{}, bare); err == nil || !strings.Contains(err.Error(), "no layer was given") {
		t.Errorf("release of a disk under a running group without the layers: %v", err)
	}

	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{}) // the group inactive
	r.h.ResetLog()
	_, err := disk.PlanRelease(context.Background(), "/dev/sdb", disk.ReleaseOptions{Wipe: true}, bare)
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "holds LVM2_member, and no layer was given") {
		t.Errorf("release --wipe of an inactive group's member without the layers: %v", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("refused, yet wrote: %v", w)
	}
}
