package hwinfo

import "testing"

func TestStackOfGuestDevices(t *testing.T) {
	h := readGuestStacks(t)
	for _, c := range []struct {
		dev, fs, text, topology string
	}{
		{"md0", "", "md0 raid1 [resync 12.7%] of sda+sdb", "raid1"},
		{"md1", "xfs", "xfs on md1 raid1 [degraded, 1 missing] of sdc1", "raid1"},
		{"dm-0", "ext4", "ext4 on fast/scratch (dm-0) linear on nvme0n1p2", "lvm linear"},
		{"/dev/dm-1", "", "fast/vm (dm-1) linear on nvme0n1p2", "lvm linear"},
		{"sdc1", "xfs", "xfs on sdc1", "single disk"},
		{"nvme0n1", "", "nvme0n1", "single disk"},
	} {
		layers := h.Stack(c.dev)
		if got := DescribeStack(c.fs, trimDev(c.dev), layers); got != c.text {
			t.Errorf("%s: %q, want %q", c.dev, got, c.text)
		}
		if got := Topology(layers); got != c.topology {
			t.Errorf("%s: topology %q, want %q", c.dev, got, c.topology)
		}
	}
	assertSameJSON(t, h.Stack("md1"), []Layer{{Kind: "md", Device: "md1", Name: "guest:degr", Type: "raid1",
		State: "degraded, 1 missing", SizeBytes: 534708224, On: []string{"sdc1"}}})
	if a := h.ArrayOf("/dev/sdb"); a == nil || a.Name != "md0" {
		t.Errorf("ArrayOf(sdb) = %+v", a)
	}
	if vg := h.VolumeGroupOf("sdd"); vg == nil || vg.Name != "fast" {
		t.Errorf("VolumeGroupOf(sdd) = %+v", vg)
	}
	if h.ArrayOf("sdd") != nil || h.VolumeGroupOf("sda") != nil {
		t.Error("sdd is in no array, sda in no VG")
	}
	if got := h.Arrays[1].StateText(); got != "clean, degraded, 1 missing" {
		t.Errorf("md1 state %q", got)
	}
	if got := h.Arrays[0].StateText(); got != "clean, resync 12.7% at 1.0 MiB/s" {
		t.Errorf("md0 state %q", got)
	}
}

func trimDev(s string) string {
	if len(s) > 5 && s[:5] == "/dev/" {
		return s[5:]
	}
	return s
}

// TestStackNested: an LV on a RAID1 and LUKS on a partition follow down
// to the disks.
func TestStackNested(t *testing.T) {
	h := &Host{
		Disks: []Disk{
			{Name: "sdb", Holders: []Holder{{Name: "md0", Kind: "md"}}},
			{Name: "sdc", Holders: []Holder{{Name: "md0", Kind: "md"}}},
			{Name: "sdd", Partitions: []Partition{{Name: "sdd1", Holders: []Holder{{Name: "dm-3", Kind: "crypt", DMName: "luks-1"}}}}},
		},
		Arrays: []Array{{Name: "md0", Level: "raid1", State: "clean", Members: []ArrayMember{
			{Device: "sdb", Slot: 0, Role: "active"}, {Device: "sdc", Slot: 1, Role: "active"}, {Device: "sde", Slot: -1, Role: "spare"}}}},
		VolumeGroups: []VolumeGroup{{Name: "data", PVs: []PhysicalVolume{{Device: "md0"}}, LVs: []LogicalVolume{
			{Name: "srv", Device: "dm-2", Type: "linear", SizeBytes: 1 << 30, PVs: []string{"md0"}}}}},
	}
	layers := h.Stack("dm-2")
	if got := DescribeStack("xfs", "dm-2", layers); got != "xfs on data/srv (dm-2) linear on md0 raid1 of sdb+sdc" {
		t.Errorf("describe: %q", got)
	}
	if got := Topology(layers); got != "lvm linear on raid1" {
		t.Errorf("topology: %q", got)
	}
	crypt := h.Stack("dm-3")
	assertSameJSON(t, crypt, []Layer{{Kind: "crypt", Device: "dm-3", Name: "luks-1", On: []string{"sdd1"}}})
	if got := DescribeStack("ext4", "dm-3", crypt); got != "ext4 on luks-1 (dm-3) crypt on sdd1" {
		t.Errorf("crypt: %q", got)
	}
}
