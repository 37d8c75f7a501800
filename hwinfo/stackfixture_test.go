package hwinfo

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The guest-stacks tree is what a 6.1 guest (scripts/guest.sh, the script
// in testdata/guest-stacks.tools/capture.sh) showed right after it built a
// RAID1 still resyncing (md0: sda+sdb), a RAID1 made degraded (md1: sdc1
// and "missing", xfs mounted at /mnt/degr) and a VG "fast" across
// nvme0n1p2 and sdd with two LVs (scratch, ext4 at /mnt/scratch; vm,
// 300 MiB, leaving 552 MiB free). dev/nvme0n1p2 and dev/sdd are the first
// 12 KiB of the PVs, as read from the devices (label, metadata area, text; the rest
// of the first MiB was zeros). guest-stacks.tools holds what mdadm
// --detail, /proc/mdstat and vgs/lvs/pvs --reportformat json said then:
// hwinfo must agree with them.

func readGuestStacks(t *testing.T) *Host {
	t.Helper()
	h, err := Read(context.Background(), Options{Root: "testdata/guest-stacks"})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// mdadmDetail is the part of mdadm --detail a test compares.
type mdadmDetail struct {
	level, uuid, state string
	sizeKiB            uint64
	raidDevices        int
	members            map[int]string // RaidDevice -> /dev/sdX
}

func parseMdadmDetail(t *testing.T, path string) mdadmDetail {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := mdadmDetail{members: map[int]string{}}
	row := regexp.MustCompile(`^\s+\d+\s+\d+\s+\d+\s+(\d+)\s+.*\s(/dev/\S+)$`)
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " : ")
		if ok {
			v = strings.TrimSpace(v)
			switch strings.TrimSpace(k) {
			case "Raid Level":
				d.level = v
			case "UUID":
				d.uuid = v
			case "State":
				d.state = v
			case "Array Size":
				d.sizeKiB, _ = strconv.ParseUint(strings.Fields(v)[0], 10, 64)
			case "Raid Devices":
				d.raidDevices, _ = strconv.Atoi(v)
			}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			d.members[n] = m[2]
		}
	}
	return d
}

func TestArraysAgreeWithMdadm(t *testing.T) {
	h := readGuestStacks(t)
	if len(h.Arrays) != 2 {
		t.Fatalf("arrays: %+v", h.Arrays)
	}
	for _, a := range h.Arrays {
		d := parseMdadmDetail(t, "testdata/guest-stacks.tools/"+a.Name+".detail")
		if a.Level != d.level || a.UUID != d.uuid || a.SizeBytes != d.sizeKiB*1024 || a.RaidDisks != d.raidDevices {
			t.Errorf("%s: level %q uuid %q size %d raid_disks %d; mdadm says %q %q %d KiB %d",
				a.Name, a.Level, a.UUID, a.SizeBytes, a.RaidDisks, d.level, d.uuid, d.sizeKiB, d.raidDevices)
		}
		if a.Degraded != strings.Contains(d.state, "degraded") {
			t.Errorf("%s: degraded %v, mdadm state %q", a.Name, a.Degraded, d.state)
		}
		if (a.Sync != nil && a.Sync.Action == "resync") != strings.Contains(d.state, "resyncing") {
			t.Errorf("%s: sync %+v, mdadm state %q", a.Name, a.Sync, d.state)
		}
		got := map[int]string{}
		for _, m := range a.Members {
			if m.Slot >= 0 {
				got[m.Slot] = "/dev/" + m.Device
			}
		}
		assertSameJSON(t, got, d.members)
	}
	md0, md1 := h.Arrays[0], h.Arrays[1]
	// The live position is mdstat's (12.7%), not sysfs's last checkpoint
	// (sync_completed still said 0 / 522240 then).
	assertSameJSON(t, md0.Sync, &ArraySync{Action: "resync", DoneBytes: 33536 * 1024, TotalBytes: 261120 * 1024, Percent: 12.7, SpeedBytesPerS: 1048 * 1024})
	if md0.ArrayName != "guest:data" || md0.Metadata != "1.2" || md0.State != "clean" || md0.ChunkBytes != 0 {
		t.Errorf("md0: %+v", md0)
	}
	for _, m := range md0.Members {
		if m.Role != "active" || m.Disk != m.Device || !slices.Equal(m.State, []string{"in_sync"}) {
			t.Errorf("md0 member %+v", m)
		}
	}
	if md1.MissingDevices != 1 || md1.Sync != nil || md1.FSType != "xfs" || len(md1.Mounts) != 1 || md1.Mounts[0].Point != "/mnt/degr" {
		t.Errorf("md1: %+v", md1)
	}
	assertSameJSON(t, md1.Members, []ArrayMember{{Device: "sdc1", Disk: "sdc", Slot: 0, Role: "active", State: []string{"in_sync"}}})
	// The disks still say who holds them, as before.
	sdc, _ := h.Device("sdc")
	if len(sdc.Partitions) != 1 || len(sdc.Partitions[0].Holders) != 1 || sdc.Partitions[0].Holders[0].Name != "md1" {
		t.Errorf("sdc: %+v", sdc)
	}
}

// lvmReport is `vgs|lvs|pvs --reportformat json --units b`.
type lvmReport struct {
	Report []map[string][]map[string]string `json:"report"`
}

func readReport(t *testing.T, name, key string) []map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/guest-stacks.tools/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var r lvmReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Report[0][key]
}

func bytesOf(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "B"), 10, 64)
	if err != nil {
		t.Fatalf("lvm size %q: %v", s, err)
	}
	return n
}

func TestVolumeGroupsAgreeWithLVM(t *testing.T) {
	h := readGuestStacks(t)
	vgs := readReport(t, "vgs.json", "vg")
	if len(h.VolumeGroups) != len(vgs) {
		t.Fatalf("volume groups: %+v, vgs: %v", h.VolumeGroups, vgs)
	}
	vg := h.VolumeGroups[0]
	want := vgs[0]
	if vg.Name != want["vg_name"] || vg.UUID != want["vg_uuid"] || vg.Source != "metadata" ||
		vg.SizeBytes != bytesOf(t, want["vg_size"]) || vg.FreeBytes != bytesOf(t, want["vg_free"]) ||
		vg.ExtentBytes != bytesOf(t, want["vg_extent_size"]) ||
		strconv.Itoa(len(vg.PVs)) != want["pv_count"] || strconv.Itoa(len(vg.LVs)) != want["lv_count"] {
		t.Errorf("vg %+v, vgs says %v", vg, want)
	}
	for _, p := range readReport(t, "pvs.json", "pv") {
		i := slices.IndexFunc(vg.PVs, func(x PhysicalVolume) bool { return "/dev/"+x.Device == p["pv_name"] })
		if i < 0 {
			t.Errorf("pv %s missing from %+v", p["pv_name"], vg.PVs)
			continue
		}
		got := vg.PVs[i]
		if got.UUID != p["pv_uuid"] || got.SizeBytes != bytesOf(t, p["pv_size"]) || got.FreeBytes != bytesOf(t, p["pv_free"]) || got.Missing {
			t.Errorf("pv %+v, pvs says %v", got, p)
		}
	}
	// lvs lists an LV once per segment's devices.
	lvDevs := map[string][]string{}
	for _, l := range readReport(t, "lvs.json", "lv") {
		i := slices.IndexFunc(vg.LVs, func(x LogicalVolume) bool { return x.Name == l["lv_name"] })
		if i < 0 {
			t.Errorf("lv %s missing from %+v", l["lv_name"], vg.LVs)
			continue
		}
		got := vg.LVs[i]
		minor := l["lv_kernel_minor"]
		if got.UUID != l["lv_uuid"] || got.SizeBytes != bytesOf(t, l["lv_size"]) || got.Type != l["segtype"] ||
			"/dev/mapper/"+got.DMName != l["lv_dm_path"] || got.Device != "dm-"+minor {
			t.Errorf("lv %+v, lvs says %v", got, l)
		}
		for _, d := range strings.Split(l["devices"], ",") {
			dev := strings.TrimPrefix(d[:strings.IndexByte(d, '(')], "/dev/")
			lvDevs[got.Name] = append(lvDevs[got.Name], dev)
		}
	}
	for _, lv := range vg.LVs {
		if !slices.Equal(lv.PVs, lvDevs[lv.Name]) {
			t.Errorf("lv %s on %v, lvs says %v", lv.Name, lv.PVs, lvDevs[lv.Name])
		}
	}
	scratch := vg.LVs[0]
	if scratch.Path != "/dev/fast/scratch" || scratch.FSType != "ext4" || len(scratch.Mounts) != 1 || scratch.Mounts[0].Point != "/mnt/scratch" {
		t.Errorf("scratch: %+v", scratch)
	}
}

// TestVolumeGroupsFromSysfs: without the PVs' bytes (an unprivileged run,
// a tree captured without them) the active LVs are still known, from
// device-mapper, and the VG says its sizes are not.
func TestVolumeGroupsFromSysfs(t *testing.T) {
	root := copyTree(t, "testdata/guest-stacks")
	for _, p := range []string{"dev/nvme0n1p2", "dev/sdd"} {
		if err := os.Remove(root + "/" + p); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.VolumeGroups) != 1 {
		t.Fatalf("volume groups: %+v", h.VolumeGroups)
	}
	vg := h.VolumeGroups[0]
	if vg.Name != "fast" || vg.UUID != "kkdLCm-V2IM-ZFby-cIZ6-wvZ7-HAQl-WcmU9h" || vg.Source != "sysfs" || vg.SizeBytes != 0 || len(vg.PVs) != 1 {
		t.Errorf("vg: %+v", vg)
	}
	var names []string
	for _, lv := range vg.LVs {
		names = append(names, lv.Name+"="+lv.Device+":"+strings.Join(lv.PVs, "+")+":"+strconv.FormatUint(lv.SizeBytes, 10))
	}
	assertSameJSON(t, names, []string{"scratch=dm-0:nvme0n1p2:104857600", "vm=dm-1:nvme0n1p2:314572800"})
}

func TestSplitDMName(t *testing.T) {
	for in, want := range map[string][2]string{
		"fast-scratch": {"fast", "scratch"}, "my--vg-lv--1": {"my-vg", "lv-1"}, "a-b-c": {"a", "b-c"},
	} {
		vg, lv, ok := splitDMName(in)
		if !ok || vg != want[0] || lv != want[1] {
			t.Errorf("splitDMName(%q) = %q, %q, %v", in, vg, lv, ok)
		}
	}
	for _, in := range []string{"nodash", "-lv", "vg-", "vg--only"} {
		if _, _, ok := splitDMName(in); ok {
			t.Errorf("splitDMName(%q) ok", in)
		}
	}
}

// TestVolumeGroupsPVNotOpenable: a PV that cannot be opened (an
// unprivileged run: here a socket, which open refuses with ENXIO) gives
// one warning, the other PVs are not tried, and the VG is device-mapper's.
func TestVolumeGroupsPVNotOpenable(t *testing.T) {
	root := copyTree(t, "testdata/guest-stacks")
	unopenable(t, root+"/dev/nvme0n1p2")
	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	warned := warningsWith(h, "LVM sizes")
	if len(warned) != 1 || !strings.Contains(warned[0], "nvme0n1p2") || !strings.Contains(warned[0], "run as root") {
		t.Errorf("warnings %q, want one about nvme0n1p2", h.Warnings)
	}
	if len(h.VolumeGroups) != 1 || h.VolumeGroups[0].Source != "sysfs" {
		t.Errorf("volume groups %+v, want fast from sysfs", h.VolumeGroups)
	}
}
