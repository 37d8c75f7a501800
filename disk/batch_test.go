package disk

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
)

// PlanAll plans every disk before any is touched: one refusal (named by its
// place in the plan file) stops them all, with no plan returned.
func TestPlanAll(t *testing.T) {
	pl := fixedUUIDs(t)
	h := hostWith(blankDisk("sdb", 20*gib, 512, 512, 0), blankDisk("sdc", 20*gib, 512, 512, 0))
	ok := []Request{{Device: "sdb", Partitions: []PartSpec{{FS: "xfs"}}}, {Device: "sdc", Partitions: []PartSpec{{FS: "ext4"}}}}
	plans, err := PlanAll(ok, h)
	if err != nil || len(plans) != 2 || plans[0].Device != "/dev/sdb" || plans[1].Device != "/dev/sdc" {
		t.Fatalf("plans %+v, %v", plans, err)
	}
	// The plan of one disk does not depend on the others: planned alone,
	// it is the same apart from the UUIDs drawn.
	alone, err := pl.PlanDisk(ok[1], h)
	if err != nil || alone.Partitions[0].StartBytes != plans[1].Partitions[0].StartBytes || alone.Partitions[0].Mkfs[0] != "mkfs.ext4" {
		t.Errorf("sdc alone %+v, %v", alone, err)
	}

	h.Disks[1].Mounts = []hwinfo.Mount{{Point: "/srv"}}
	bad := []Request{ok[0], {Device: "sdc", Origin: "plan.yaml:7", Partitions: []PartSpec{{FS: "ext4"}}}}
	plans, err = PlanAll(bad, h)
	if !errors.Is(err, ErrRefused) || !strings.HasPrefix(err.Error(), "plan.yaml:7: ") || plans != nil {
		t.Errorf("a refused second disk: plans %v, err %v", plans, err)
	}
}

// ApplyAll applies in order and stops at the first failure, returning what
// the disks before it got; the disks after it are never touched.
func TestApplyAll(t *testing.T) {
	plans := []*Plan{{Device: "/dev/sdb"}, {Device: "/dev/sdc"}, {Device: "/dev/sdd"}}
	var order []string
	boom := errors.New("boom")
	apply := func(_ context.Context, p *Plan) (*Result, error) {
		order = append(order, p.Device)
		if p.Device == "/dev/sdc" {
			return nil, boom
		}
		return &Result{Device: p.Device}, nil
	}
	res, err := ApplyAll(context.Background(), plans, apply)
	if !errors.Is(err, boom) || len(res) != 1 || res[0].Device != "/dev/sdb" || strings.Join(order, " ") != "/dev/sdb /dev/sdc" {
		t.Errorf("results %+v, err %v, applied %q", res, err, order)
	}
	order = nil
	res, err = ApplyAll(context.Background(), plans[:1], apply)
	if err != nil || len(res) != 1 || len(order) != 1 {
		t.Errorf("one disk: %+v %v %q", res, err, order)
	}
}
