package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// release --wipe of loop devices that are physical volumes of a group
// that is not active, with the real LVM tools (a group without volumes
// needs no device-mapper, which some hosts' kernels lack): a group wholly
// on the device released is removed (vgremove, pvremove) and its label
// is gone from the bytes; one across two devices is refused, nothing
// written, and the group is still whole.
func TestPrivilegedReleaseWipeInactiveGroup(t *testing.T) {
	testenv.RequirePrivileged(t, "pvcreate", "vgcreate", "vgremove", "pvremove", "pvs", "lvs", "wipefs", "blkid")
	a := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	b := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	c := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	span, one := fmt.Sprintf("diskprepspan%d", os.Getpid()), fmt.Sprintf("diskprepone%d", os.Getpid())
	t.Cleanup(func() {
		// Before the loop devices go (cleanups run last first).
		testenv.Run("vgremove", "--force", span, one)
		testenv.Run("pvremove", "--force", "--force", "--yes", a.Dev, b.Dev, c.Dev)
	})
	testenv.MustRun(t, "pvcreate", "-q", a.Dev, b.Dev, c.Dev)
	testenv.MustRun(t, "vgcreate", "-q", span, a.Dev, b.Dev)
	testenv.MustRun(t, "vgcreate", "-q", one, c.Dev)
	deps := testDeps(t)

	before := hashFile(t, a.Image) + hashFile(t, b.Image)
	_, err := PlanRelease(context.Background(), a.Dev, ReleaseOptions{Wipe: true}, deps)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "inactive vg "+span+", which is also on "+b.Dev+", not released") {
		t.Fatalf("release %s --wipe of a group also on %s: %v", a.Dev, b.Dev, err)
	}
	if hashFile(t, a.Image)+hashFile(t, b.Image) != before {
		t.Error("refused, yet a device changed")
	}
	if out := testenv.MustRun(t, "pvs", "--noheadings", "-o", "vg_name", a.Dev, b.Dev); strings.Count(out, span) != 2 {
		t.Errorf("after the refusal, pvs says:\n%s", out)
	}

	plan, err := PlanRelease(context.Background(), c.Dev, ReleaseOptions{Wipe: true, Yes: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if s := plan.Stacks; s == nil || strings.Join(s.VGRemove, ",") != one || strings.Join(s.PVRemove, ",") != c.Dev || strings.Join(s.WipeSignatures, ",") != c.Dev {
		t.Fatalf("release %s --wipe plans %+v", c.Dev, plan.Stacks)
	}
	if _, err := ApplyRelease(context.Background(), plan, deps); err != nil {
		t.Fatal(err)
	}
	if out, err := testenv.Run("pvs", "--noheadings", c.Dev); err == nil {
		t.Errorf("pvs still finds %s:\n%s", c.Dev, out)
	}
	if out, _ := testenv.Run("blkid", "-p", "-o", "export", c.Dev); strings.Contains(out, "TYPE=") {
		t.Errorf("%s after release --wipe: %s", c.Dev, out)
	}
}
