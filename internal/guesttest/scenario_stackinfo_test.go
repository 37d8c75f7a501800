package guesttest

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Issue 14 item 5 on a real kernel: the inventory of md arrays and LVM
// volume groups agrees with mdadm --detail and vgs/lvs/pvs, and bench
// records the stack under its target, so that compare sets the RAID1
// against the single disk. One boot: a RAID1 (md0, sda+sdb) held resyncing
// by a low speed limit, with xfs; a RAID1 created degraded (md1, sdc and
// "missing"); a VG "fast" across nvme0n1p2 and sdd with two LVs and free
// space; xfs on the whole sde as the single disk.

var stackDisks = []string{
	"sata-hdd:512M:serial=MIRA", "sata-hdd:512M:serial=MIRB", "sata-ssd:512M:serial=DEGR",
	"sata-ssd:512M:serial=PVSATA", "nvme:512M:serial=FASTNVME", "sata-hdd:512M:serial=SINGLE",
}

const stackScript = `set -u
mark() { echo "@@ $1"; }
id() { readlink -f "$1"; }
A=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_MIRA) B=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_MIRB)
C=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_DEGR) D=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_PVSATA)
S=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_SINGLE) N=$(id /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_FASTNVME)
# Slow enough that md0 is still resyncing when everything is read.
echo 200 >/proc/sys/dev/raid/speed_limit_min
echo 200 >/proc/sys/dev/raid/speed_limit_max
sgdisk -n1:0:+64M -n2:0:0 -t2:8e00 "$N" >/dev/null && udevadm settle
mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 --name=data "$A" "$B" 2>&1
mdadm --create /dev/md1 --run --level=1 --raid-devices=2 --metadata=1.2 --name=degr "$C" missing 2>&1
pvcreate -q "${N}p2" "$D" && vgcreate -q fast "${N}p2" "$D" &&
	lvcreate -q -y -n scratch -L 100M fast "${N}p2" && lvcreate -q -y -n vm -L 480M fast 2>&1
mkfs.xfs -q /dev/md0 && mkdir -p /mnt/md && mount /dev/md0 /mnt/md
mkfs.xfs -q "$S" && mkdir -p /mnt/single && mount "$S" /mnt/single
udevadm settle
mark names; echo "${A##*/} ${B##*/} ${C##*/} ${D##*/} ${N##*/}p2 ${S##*/}"
mark inventory; diskprep inventory -o json
mark md0; mdadm --detail /dev/md0
mark md1; mdadm --detail /dev/md1
mark vgs; vgs --reportformat json --units b -o vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,pv_count,lv_count
mark lvs; lvs --reportformat json --units b -o lv_name,lv_uuid,lv_size,lv_dm_path,lv_kernel_minor,segtype,devices
mark pvs; pvs --reportformat json --units b -o pv_name,pv_uuid,pv_size,pv_free
for t in md single; do
	diskprep bench /mnt/$t --set quick --size 16M --runtime 1s --results /root/res --label $t >/dev/null 2>/root/bench.err ||
		{ mark bench-failed; cat /root/bench.err; }
done
for f in /root/res/*.json; do mark "record $(basename "$f")"; cat "$f"; done
mark compare; diskprep compare /root/res -o json
mark compare-by-stack; diskprep compare /root/res --by stack -o json
mark end
`

type stackInventory struct {
	Arrays []struct {
		Name, UUID, Level string
		SizeBytes         uint64 `json:"size_bytes"`
		RaidDisks         int    `json:"raid_disks"`
		Degraded          bool
		MissingDevices    int `json:"missing_devices"`
		Sync              *struct{ Action string }
		Members           []struct {
			Device, Role string
			Slot         int
		}
	}
	VolumeGroups []struct {
		Name, UUID, Source string
		ExtentBytes        uint64 `json:"extent_bytes"`
		SizeBytes          uint64 `json:"size_bytes"`
		FreeBytes          uint64 `json:"free_bytes"`
		PVs                []struct {
			Device, UUID string
			SizeBytes    uint64 `json:"size_bytes"`
			FreeBytes    uint64 `json:"free_bytes"`
		}
		LVs []struct {
			Name, UUID, Device, Type string
			DMName                   string `json:"dm_name"`
			SizeBytes                uint64 `json:"size_bytes"`
			PVs                      []string
		}
	} `json:"volume_groups"`
}

type stackRecord struct {
	Label  string
	Target struct {
		Device    string
		StackText string `json:"stack_text"`
		Stack     []struct {
			Kind, Device, Type string
			On                 []string
		}
	}
}

// lvmRows reads `vgs|lvs|pvs --reportformat json`'s one report.
func lvmRows(t *testing.T, what, s, key string) []map[string]string {
	t.Helper()
	var r struct {
		Report []map[string][]map[string]string `json:"report"`
	}
	decodeJSON(t, what, s, &r)
	if len(r.Report) == 0 {
		t.Fatalf("%s: no report: %s", what, s)
	}
	return r.Report[0][key]
}

func lvmBytes(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "B"), 10, 64)
	if err != nil {
		t.Fatalf("lvm size %q: %v", s, err)
	}
	return n
}

func TestScenarioStackInventory(t *testing.T) {
	parallel(t)
	r := Run(t, Options{Disks: stackDisks}, "sh", "-c", stackScript)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if b, ok := out["bench-failed"]; ok {
		t.Fatalf("bench failed: %s", b)
	}
	names := strings.Fields(out["names"])
	if len(names) != 6 {
		t.Fatalf("disk names %q", out["names"])
	}
	mirA, mirB, degr, pvSata, pvNVMe, single := names[0], names[1], names[2], names[3], names[4], names[5]
	var inv stackInventory
	decodeJSON(t, "inventory", out["inventory"], &inv)

	// md: what mdadm --detail says, field by field.
	if len(inv.Arrays) != 2 {
		t.Fatalf("arrays %+v", inv.Arrays)
	}
	field := regexp.MustCompile(`(?m)^\s*([A-Za-z ]+?) : (.*)$`)
	row := regexp.MustCompile(`(?m)^\s+\d+\s+\d+\s+\d+\s+(\d+)\s+.*\s(/dev/\S+)$`)
	for _, a := range inv.Arrays {
		detail := map[string]string{}
		for _, m := range field.FindAllStringSubmatch(out[a.Name], -1) {
			detail[m[1]] = strings.TrimSpace(m[2])
		}
		kib, _ := strconv.ParseUint(strings.Fields(detail["Array Size"] + " 0")[0], 10, 64)
		if a.Level != detail["Raid Level"] || a.UUID != detail["UUID"] || a.SizeBytes != kib*1024 || strconv.Itoa(a.RaidDisks) != detail["Raid Devices"] {
			t.Errorf("%s: %+v; mdadm --detail: %v", a.Name, a, detail)
		}
		state := detail["State"]
		if a.Degraded != strings.Contains(state, "degraded") || (a.Sync != nil && a.Sync.Action == "resync") != strings.Contains(state, "resyncing") {
			t.Errorf("%s: degraded %v sync %+v; mdadm state %q", a.Name, a.Degraded, a.Sync, state)
		}
		want := map[string]string{}
		for _, m := range row.FindAllStringSubmatch(out[a.Name], -1) {
			want[m[1]] = strings.TrimPrefix(m[2], "/dev/")
		}
		got := map[string]string{}
		for _, m := range a.Members {
			got[strconv.Itoa(m.Slot)] = m.Device
		}
		if len(got) != len(want) || !mapsEqual(got, want) {
			t.Errorf("%s: members by slot %v, mdadm %v", a.Name, got, want)
		}
	}
	md0, md1 := inv.Arrays[0], inv.Arrays[1]
	if md0.Name != "md0" || md0.Sync == nil || md0.Degraded || md1.Name != "md1" || !md1.Degraded || md1.MissingDevices != 1 ||
		len(md1.Members) != 1 || md1.Members[0].Device != degr {
		t.Errorf("md0 should be resyncing, md1 degraded with %s alone: %+v", degr, inv.Arrays)
	}

	// LVM: what vgs, pvs and lvs say.
	vgs := lvmRows(t, "vgs", out["vgs"], "vg")
	if len(inv.VolumeGroups) != 1 || len(vgs) != 1 {
		t.Fatalf("volume groups %+v; vgs %v", inv.VolumeGroups, vgs)
	}
	vg, v := inv.VolumeGroups[0], vgs[0]
	if vg.Source != "metadata" || vg.Name != v["vg_name"] || vg.UUID != v["vg_uuid"] || vg.SizeBytes != lvmBytes(t, v["vg_size"]) ||
		vg.FreeBytes != lvmBytes(t, v["vg_free"]) || vg.ExtentBytes != lvmBytes(t, v["vg_extent_size"]) ||
		strconv.Itoa(len(vg.PVs)) != v["pv_count"] || strconv.Itoa(len(vg.LVs)) != v["lv_count"] {
		t.Errorf("vg %+v; vgs %v", vg, v)
	}
	if vg.FreeBytes == 0 {
		t.Errorf("vg fast should have free space: %+v", vg)
	}
	for _, p := range lvmRows(t, "pvs", out["pvs"], "pv") {
		i := slices.IndexFunc(vg.PVs, func(x struct {
			Device, UUID string
			SizeBytes    uint64 `json:"size_bytes"`
			FreeBytes    uint64 `json:"free_bytes"`
		}) bool {
			return "/dev/"+x.Device == p["pv_name"]
		})
		if i < 0 {
			t.Errorf("pv %s not in %+v", p["pv_name"], vg.PVs)
			continue
		}
		if x := vg.PVs[i]; x.UUID != p["pv_uuid"] || x.SizeBytes != lvmBytes(t, p["pv_size"]) || x.FreeBytes != lvmBytes(t, p["pv_free"]) {
			t.Errorf("pv %+v; pvs %v", x, p)
		}
	}
	lvDevs := map[string][]string{}
	for _, l := range lvmRows(t, "lvs", out["lvs"], "lv") {
		for _, lv := range vg.LVs {
			if lv.Name != l["lv_name"] {
				continue
			}
			if lv.UUID != l["lv_uuid"] || lv.SizeBytes != lvmBytes(t, l["lv_size"]) || lv.Type != l["segtype"] ||
				"/dev/mapper/"+lv.DMName != l["lv_dm_path"] || lv.Device != "dm-"+l["lv_kernel_minor"] {
				t.Errorf("lv %+v; lvs %v", lv, l)
			}
		}
		for _, d := range strings.Split(l["devices"], ",") {
			if i := strings.IndexByte(d, '('); i > 0 {
				lvDevs[l["lv_name"]] = append(lvDevs[l["lv_name"]], strings.TrimPrefix(d[:i], "/dev/"))
			}
		}
	}
	for _, lv := range vg.LVs {
		if !slices.Equal(lv.PVs, lvDevs[lv.Name]) {
			t.Errorf("lv %s on %v; lvs says %v", lv.Name, lv.PVs, lvDevs[lv.Name])
		}
	}
	if !slices.Contains(lvDevs["vm"], pvSata) || !slices.Equal(lvDevs["scratch"], []string{pvNVMe}) {
		t.Errorf("vm should reach %s and scratch sit on %s: %v", pvSata, pvNVMe, lvDevs)
	}

	// bench: the stack under each target, as the inventory has it.
	recs := map[string]stackRecord{}
	for k, v := range out {
		if strings.HasPrefix(k, "record ") {
			var rec stackRecord
			decodeJSON(t, k, v, &rec)
			recs[rec.Label] = rec
		}
	}
	md, sd := recs["md"], recs["single"]
	if md.Target.Device != "md0" || len(md.Target.Stack) != 1 || md.Target.Stack[0].Kind != "md" || md.Target.Stack[0].Type != "raid1" ||
		!slices.Equal(md.Target.Stack[0].On, []string{mirA, mirB}) ||
		!strings.HasPrefix(md.Target.StackText, "xfs on md0 raid1 ") || !strings.HasSuffix(md.Target.StackText, " of "+mirA+"+"+mirB) {
		t.Errorf("md record target %+v", md.Target)
	}
	if sd.Target.Device != single || len(sd.Target.Stack) != 0 || sd.Target.StackText != "xfs on "+single {
		t.Errorf("single-disk record target %+v", sd.Target)
	}
	// compare: labels tell them apart on their own; --by stack names the
	// kinds of storage.
	for _, c := range []struct{ key, by, first, second string }{
		{"compare", "label", "md", "single"},
		{"compare-by-stack", "stack", "raid1", "single disk"},
	} {
		var cmp struct {
			By     string
			Groups []struct {
				Name     string
				Identity []struct{ Key, Value string }
			}
		}
		decodeJSON(t, c.key, out[c.key], &cmp)
		var groups []string
		for _, g := range cmp.Groups {
			groups = append(groups, g.Name)
		}
		slices.Sort(groups)
		if cmp.By != c.by || !slices.Equal(groups, []string{c.first, c.second}) {
			t.Errorf("%s: by %q groups %q; want %s: %s, %s", c.key, cmp.By, groups, c.by, c.first, c.second)
		}
		for _, g := range cmp.Groups {
			i := slices.IndexFunc(g.Identity, func(f struct{ Key, Value string }) bool { return f.Key == "stack" })
			if i < 0 || !strings.HasPrefix(g.Identity[i].Value, "xfs on ") {
				t.Errorf("%s: group %s shows no storage: %+v", c.key, g.Name, g.Identity)
			}
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}
