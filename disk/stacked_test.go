package disk

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
)

// TestPlanRefusesStackedDevice: a bcache device is refused like the md and
// dm devices the inventory does not list, and so are the disks under it:
// the backing device (holders/) and the cache (through its cache set).
func TestPlanRefusesStackedDevice(t *testing.T) {
	pl := fixedUUIDs(t)
	bc := blankDisk("bcache0", 20*gib, 512, 512, 0)
	bc.Transport, bc.Virtual, bc.StackedOn = "bcache", true, []string{"sdb", "nvme0n1"}
	lone := blankDisk("bcache1", 20*gib, 512, 512, 0)
	lone.Transport = "bcache" // a flash-only volume: nothing in slaves/
	for _, tc := range []struct {
		disk hwinfo.Disk
		want string
	}{
		{bc, "refusing to prepare bcache0: bcache0 is a bcache device stacked on sdb, nvme0n1, not a disk"},
		{lone, "refusing to prepare bcache1: bcache1 is a bcache device, not a disk"},
	} {
		_, err := pl.PlanDisk(oneXFS(tc.disk.Path), hostWith(tc.disk))
		if !errors.Is(err, ErrRefused) || err.Error() != tc.want {
			t.Errorf("%s: %v, want refusal %q", tc.disk.Name, err, tc.want)
		}
	}

	h, err := hwinfo.Read(context.Background(), hwinfo.Options{Root: "../hwinfo/testdata/qemu-guest"})
	if err != nil {
		t.Fatal(err)
	}
	for dev, want := range map[string]string{
		"/dev/bcache0": "bcache0 is a bcache device stacked on vdb, sdb, not a disk",
		"/dev/vdb":     "vdb is held by bcache bcache0",
		"/dev/sdb":     "sdb is held by bcache bcache0",
	} {
		req := oneXFS(dev)
		req.Wipe = true
		_, err := pl.PlanDisk(req, h)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal naming %q", dev, err, want)
		}
	}
	// The disks beside it are still prepared.
	if _, err := pl.PlanDisk(oneXFS("/dev/vda"), h); err != nil {
		t.Errorf("vda: %v", err)
	}
}
