package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
)

// testHost is a synthetic file server: a system SSD, two identical 3 TB
// TOSHIBA data disks, a SAS disk whose vendor is separate from its model,
// and an NVMe drive.
func testHost() *hwinfo.Host {
	return &hwinfo.Host{Disks: []hwinfo.Disk{
		{Name: "sda", Path: "/dev/sda", Model: "Samsung SSD 860 EVO 500GB", Vendor: "ATA", Serial: "S3Z1NB0K111111",
			WWN: "0x5002538e40111111", SizeBytes: 500107862016, System: true,
			ByID:   []string{"ata-Samsung_SSD_860_EVO_500GB_S3Z1NB0K111111", "wwn-0x5002538e40111111"},
			ByPath: []string{"pci-0000:00:17.0-ata-1"}, PartitionTable: "gpt", PartitionTableID: "0A1B2C3D-0000-4000-8000-000000000001"},
		{Name: "sdb", Path: "/dev/sdb", Model: "TOSHIBA DT01ACA300", Vendor: "ATA", Serial: "X3G7ABCDE",
			WWN: "0x5000039ff4c3a1b2", SizeBytes: 3000592982016,
			ByID:   []string{"/dev/disk/by-id/ata-TOSHIBA_DT01ACA300_X3G7ABCDE", "/dev/disk/by-id/wwn-0x5000039ff4c3a1b2"},
			ByPath: []string{"/dev/disk/by-path/pci-0000:00:17.0-ata-2"}},
		{Name: "sdc", Path: "/dev/sdc", Model: "TOSHIBA DT01ACA300", Vendor: "ATA", Serial: "Y4H8BCDEF",
			WWN: "0x5000039ff4c3a1c3", SizeBytes: 3000592982016,
			ByID:   []string{"ata-TOSHIBA_DT01ACA300_Y4H8BCDEF", "wwn-0x5000039ff4c3a1c3"},
			ByPath: []string{"pci-0000:00:17.0-ata-3"}, PartitionTable: "dos", PartitionTableID: "0x1a2b3c4d"},
		{Name: "sdd", Path: "/dev/sdd", Model: "ST4000NM0025", Vendor: "SEAGATE", Serial: "ZC11ABCD",
			WWN: "0x5000c500a1b2c3d4", SizeBytes: 4000787030016,
			ByID: []string{"scsi-35000c500a1b2c3d4"}, ByPath: []string{"pci-0000:03:00.0-sas-phy0-lun-0"}},
		{Name: "nvme0n1", Path: "/dev/nvme0n1", Model: "Samsung SSD 980 PRO 1TB", Serial: "S5GXNF0R123456A",
			WWN: "eui.002538b111111111", SizeBytes: 1000204886016,
			ByID: []string{"nvme-Samsung_SSD_980_PRO_1TB_S5GXNF0R123456A", "nvme-eui.002538b111111111"}},
	}}
}

func plan(t *testing.T, selects ...string) *Plan {
	t.Helper()
	y := "version: 1\ndisks:\n"
	for i, s := range selects {
		y += "  - select: {" + s + "}\n    partitions: [{size: rest, fs: xfs, mount: /d" + string(rune('0'+i)) + "}]\n"
	}
	p, err := Parse("plan.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSelectorMatching(t *testing.T) {
	cases := []struct {
		sel, want string
	}{
		{"path: /dev/sdb", "sdb"},
		{"path: /dev/nvme0n1", "nvme0n1"},
		{"path: /dev/disk/by-id/ata-TOSHIBA_DT01ACA300_Y4H8BCDEF", "sdc"},
		{"path: /dev/disk/by-path/pci-0000:00:17.0-ata-2", "sdb"},
		{"by_id: ata-TOSHIBA_DT01ACA300_X3G7ABCDE", "sdb"},
		{"by_id: /dev/disk/by-id/wwn-0x5000039ff4c3a1c3", "sdc"},
		{"by_path: pci-0000:00:17.0-ata-2", "sdb"},
		{"serial: x3g7abcde", "sdb"},
		{"wwn: naa.5000039FF4C3A1B2", "sdb"},
		{"wwn: 5000c500a1b2c3d4", "sdd"},
		{"wwn: eui.002538B111111111", "nvme0n1"},
		{"model: TOSHIBA_DT01ACA300, serial: Y4H8BCDEF", "sdc"},
		{"model: SEAGATE ST4000NM0025", "sdd"},
		{"model: st4000nm0025, size: 3.5T-4T", "sdd"},
		{"size: 900G-1T", "nvme0n1"},
		{"size: \"4000787030016\"", "sdd"},
	}
	host := testHost()
	for _, c := range cases {
		t.Run(c.sel, func(t *testing.T) {
			r, err := plan(t, c.sel).Resolve(host)
			if err != nil {
				t.Fatal(err)
			}
			if len(r) != 1 || r[0].Disk.Name != c.want {
				t.Fatalf("got %+v, want %s", r, c.want)
			}
		})
	}
}

func TestSelectorErrors(t *testing.T) {
	host := testHost()
	cases := []struct {
		sels []string
		want string
	}{
		{[]string{"model: TOSHIBA DT01ACA300, size: 2.5T-3T"},
			"plan.yaml:3: disks[0].select (model=TOSHIBA DT01ACA300 size=2.5T-3T) matches 2 disks: " +
				"sdb (TOSHIBA DT01ACA300, 3.0 TB, serial X3G7ABCDE), sdc (TOSHIBA DT01ACA300, 3.0 TB, serial Y4H8BCDEF); add keys"},
		{[]string{"path: /dev/sdb", "serial: NOPE"},
			"plan.yaml:5: disks[1].select (serial=NOPE) matches no disk; this host has: sda (Samsung SSD 860 EVO 500GB, 500 GB, serial S3Z1NB0K111111), sdb ("},
		{[]string{"serial: X3G7ABCDE, path: /dev/sdc"}, "matches no disk"},
		{[]string{"path: /dev/sdb", "wwn: 0x5000039ff4c3a1b2"},
			"plan.yaml:5: disks[1].select chooses sdb, already chosen by disks[0] (line 3)"},
		{[]string{"size: 1P-2P"}, "matches no disk"},
	}
	for _, c := range cases {
		_, err := plan(t, c.sels...).Resolve(host)
		if !errors.Is(err, ErrPlan) || !errors.Is(err, disk.ErrUsage) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v:\n got %v\nwant it to contain %q", c.sels, err, c.want)
		}
	}
	if _, err := plan(t, "path: /dev/sdb").Resolve(&hwinfo.Host{}); err == nil || !strings.Contains(err.Error(), "this host has: none") {
		t.Errorf("empty host: %v", err)
	}
}

func TestResolveRequest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.yaml")
	y := "version: 1\ndisks:\n" +
		"  - select: {serial: Y4H8BCDEF}\n    wipe: true\n    partitions:\n" +
		"      - {size: 10G, fs: ext4, label: a, mount: /a, options: noatime, persist: true}\n" +
		"      - {size: rest, fs: xfs, mkfs_options: [-m, reflink=1]}\n" +
		"  - select: {path: /dev/sdb}\n    partitions: [{size: rest, fs: xfs}]\n"
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Resolve(testHost())
	if err != nil {
		t.Fatal(err)
	}
	if len(r) != 2 {
		t.Fatalf("got %d resolved", len(r))
	}
	fp := disk.Fingerprint{Serial: "Y4H8BCDEF", WWN: "0x5000039ff4c3a1c3", SizeBytes: 3000592982016, TableType: "dos", TableID: "0x1a2b3c4d"}
	want := disk.Request{
		Device: "/dev/sdc",
		Partitions: []disk.PartSpec{
			{SizeBytes: 10 << 30, FS: "ext4", Label: "a", Mount: "/a", MountOpts: "noatime", Persist: true},
			{FS: "xfs", MkfsOpts: []string{"-m", "reflink=1"}},
		},
		Wipe:   true,
		Expect: &fp,
		Origin: path + ":3",
	}
	if r[0].Disk.Name != "sdc" || r[0].Fingerprint != fp || !reflect.DeepEqual(r[0].Request, want) {
		t.Fatalf("got  %+v\nwant %+v (fingerprint %+v)", r[0].Request, want, r[0].Fingerprint)
	}
	if r[1].Request.Device != "/dev/sdb" || r[1].Request.Wipe || r[1].Request.Origin != path+":8" {
		t.Fatalf("second: %+v", r[1].Request)
	}
	// The request owns its slices: changing it must not change the plan.
	r[0].Request.Partitions[0].Label = "changed"
	r[0].Request.Expect.Serial = "changed"
	if p.Disks[0].Partitions[0].Label != "a" || r[0].Fingerprint.Serial != "Y4H8BCDEF" {
		t.Fatal("resolved request aliases the plan or its fingerprint")
	}
}
