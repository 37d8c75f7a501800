package disk_test

import (
	"context"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
)

// A swap area turned on between plan and apply is not turned on again,
// even when /proc/swaps names it by another node whose path has a space
// (the kernel writes it as \040).
func TestApplySwapActiveUnderAnotherName(t *testing.T) {
	h := hosttest.New()
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 1 << 30, Model: "FAKE DISK", Serial: "FAKE0001"})
	ctx := context.Background()
	deps := disk.Deps{Host: h, Refresh: h.Facts}
	plan, err := disk.Planner{Host: h}.PlanDisk(disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{FS: "swap"}}}, h.FactsNow())
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Partitions[0].MountArgv; len(got) == 0 || got[0] != "swapon" {
		t.Fatalf("planned %q, want swapon", got)
	}
	h.Symlink("/dev/sdb1", "/dev/my swap")
	h.SetFile("/proc/swaps", []byte("Filename\tType\tSize\tUsed\tPriority\n/dev/my\\040swap  partition\t1048572\t0\t-2\n"))
	if _, err := disk.Apply(ctx, plan, deps); err != nil {
		t.Fatal(err)
	}
	if tr := h.Transcript(); strings.Contains(tr, "swapon") {
		t.Errorf("swapon ran on an active area:\n%s", tr)
	}
}
