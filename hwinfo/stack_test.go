package hwinfo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestStackedHolders builds LVM on dm-crypt on a partition, and an MD
// mirror, and checks holder kinds, names, Via chains and the system mark.
func TestStackedHolders(t *testing.T) {
	root := t.TempDir()
	dev := "/sys/devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
	dev2 := "/sys/devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/sdc"
	files := map[string]string{
		dev + "/dev": "8:16", dev + "/size": "2000", dev + "/sdb1/partition": "1", dev + "/sdb1/start": "2048",
		dev + "/sdb1/size": "1000", dev + "/sdb1/dev": "8:17",
		dev2 + "/dev": "8:32", dev2 + "/size": "2000",
		"/sys/devices/virtual/block/dm-2/dev": "253:2", "/sys/devices/virtual/block/dm-2/dm/name": "luks-0c1d",
		"/sys/devices/virtual/block/dm-2/dm/uuid": "CRYPT-LUKS2-0c1d2e3f-luks-0c1d",
		"/sys/devices/virtual/block/dm-3/dev":     "253:3", "/sys/devices/virtual/block/dm-3/dm/name": "vg0-var",
		"/sys/devices/virtual/block/dm-3/dm/uuid": "LVM-abcdef",
		"/sys/devices/virtual/block/dm-4/dev":     "253:4", "/sys/devices/virtual/block/dm-4/dm/name": "vg0-swap",
		"/sys/devices/virtual/block/dm-4/dm/uuid": "LVM-abcdeg",
		"/sys/devices/virtual/block/md127/dev":    "9:127", "/sys/devices/virtual/block/md127/md/level": "raid1",
		"/run/udev/data/b9:127":      "E:MD_LEVEL=raid1\nE:MD_DEVNAME=data\nE:MD_NAME=host:data\n",
		"/proc/self/mountinfo":       "30 1 253:3 / /var rw,relatime - xfs /dev/mapper/vg0-var rw\n31 1 9:127 / /srv rw,relatime - ext4 /dev/md127 rw\n",
		"/proc/swaps":                "Filename Type Size Used Priority\n/dev/mapper/vg0-swap partition 1000 0 -2\n",
		"/proc/sys/kernel/osrelease": "6.1.0\n",
	}
	for p, c := range files {
		mkfile(t, root, p, c+"\n")
	}
	links := map[string]string{
		"/sys/block/sdb":           dev,
		"/sys/block/sdc":           dev2,
		"/sys/block/dm-2":          "/sys/devices/virtual/block/dm-2",
		"/sys/block/dm-3":          "/sys/devices/virtual/block/dm-3",
		"/sys/block/dm-4":          "/sys/devices/virtual/block/dm-4",
		"/sys/block/md127":         "/sys/devices/virtual/block/md127",
		dev + "/sdb1/holders/dm-2": "/sys/devices/virtual/block/dm-2",
		"/sys/devices/virtual/block/dm-2/holders/dm-3": "/sys/devices/virtual/block/dm-3",
		"/sys/devices/virtual/block/dm-2/holders/dm-4": "/sys/devices/virtual/block/dm-4",
		dev2 + "/holders/md127":                        "/sys/devices/virtual/block/md127",
	}
	for l, target := range links {
		mklink(t, root, l, target)
	}
	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Disks) != 2 {
		t.Fatalf("disks: %+v", h.Disks)
	}
	varMount := Mount{Point: "/var", FSType: "xfs", Options: "rw,relatime", Source: "/dev/mapper/vg0-var"}
	want := Partition{
		Name: "sdb1", Path: "/dev/sdb1", Number: 1, StartBytes: 2048 * 512, SizeBytes: 1000 * 512,
		Mounts: []Mount{withVia(varMount, "dm-2 (luks-0c1d) -> dm-3 (vg0-var)")},
		Swap:   true,
		Holders: []Holder{{Name: "dm-2", Kind: "crypt", DMName: "luks-0c1d", Holders: []Holder{
			{Name: "dm-3", Kind: "lvm", DMName: "vg0-var", Mounts: []Mount{varMount}},
			{Name: "dm-4", Kind: "lvm", DMName: "vg0-swap", Swap: true},
		}}},
	}
	sdb := h.Disks[0]
	assertSameJSON(t, sdb.Partitions, []Partition{want})
	assertSameJSON(t, sdb.SystemReasons, []string{
		"/var on sdb1 via dm-2 (luks-0c1d) -> dm-3 (vg0-var)",
		"swap on sdb1 via dm-2 (luks-0c1d) -> dm-4 (vg0-swap)",
	})
	sdc := h.Disks[1]
	srv := Mount{Point: "/srv", FSType: "ext4", Options: "rw,relatime", Source: "/dev/md127"}
	assertSameJSON(t, sdc.Holders, []Holder{{Name: "md127", Kind: "md", DMName: "data", Mounts: []Mount{srv}}})
	assertSameJSON(t, sdc.Mounts, []Mount{withVia(srv, "md127 (data)")})
	if sdc.System || sdc.FSType != "" {
		t.Errorf("sdc: /srv is not a system mount, and md's fs is not sdc's: %+v", sdc)
	}
}

// TestNVMeMultipathHiddenPath: native NVMe multipath shows the namespace
// once (nvme0n1, under the subsystem) and hides each path (nvme0c0n1).
func TestNVMeMultipathHiddenPath(t *testing.T) {
	root := t.TempDir()
	ns := "/sys/devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1"
	path := "/sys/devices/pci0000:00/0000:00:1d.0/0000:03:00.0/nvme/nvme0/nvme0c0n1"
	for p, c := range map[string]string{
		ns + "/dev": "259:0", ns + "/size": "2000", ns + "/hidden": "0",
		"/sys/devices/virtual/nvme-subsystem/nvme-subsys0/model":  "KIOXIA CM6",
		"/sys/devices/virtual/nvme-subsystem/nvme-subsys0/serial": "X1",
		path + "/dev": "259:1", path + "/size": "2000", path + "/hidden": "1",
	} {
		mkfile(t, root, p, c+"\n")
	}
	for l, target := range map[string]string{
		"/sys/block/nvme0n1": ns, "/sys/block/nvme0c0n1": path,
		ns + "/device": "/sys/devices/virtual/nvme-subsystem/nvme-subsys0",
	} {
		mklink(t, root, l, target)
	}
	h, err := Read(context.Background(), Options{Root: root, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Disks) != 1 || h.Disks[0].Name != "nvme0n1" || h.Disks[0].Transport != "nvme" || h.Disks[0].Model != "KIOXIA CM6" || h.Disks[0].Serial != "X1" {
		t.Errorf("disks: %+v", h.Disks)
	}
}

// TestGhwFillsSerial: a serial only sg3_utils' udev rules recorded
// (SCSI_IDENT_SERIAL) reaches us through ghw's block reader.
func TestGhwFillsSerial(t *testing.T) {
	root := t.TempDir()
	dev := "/sys/devices/pci0000:00/0000:00:10.0/host2/target2:0:0/2:0:0:0/block/sda"
	for p, c := range map[string]string{
		dev + "/dev": "8:0", dev + "/size": "2000",
		"/run/udev/data/b8:0": "E:ID_BUS=scsi\nE:SCSI_IDENT_SERIAL=6000c29a1b2c\n",
	} {
		mkfile(t, root, p, c+"\n")
	}
	rel, _ := filepath.Rel(filepath.Join(root, "sys/block"), filepath.Join(root, dev))
	if err := os.MkdirAll(filepath.Join(root, "sys/block"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(root, "sys/block/sda")); err != nil {
		t.Fatal(err)
	}
	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Disks) != 1 || h.Disks[0].Serial != "6000c29a1b2c" || h.Disks[0].Transport != "scsi" {
		t.Errorf("disks: %+v", h.Disks)
	}
}

// TestBcache: a bcache device is listed as the kernel's virtual device it
// is, with what it is built on, not as an SSD of bus "other"; its backing
// device and its cache both show it as a holder, with its mounts.
func TestBcache(t *testing.T) {
	root := copyTree(t, "testdata/qemu-guest")
	mkfile(t, root, "proc/self/mountinfo", "1 1 0:2 / / rw - rootfs rootfs rw\n40 1 250:0 / /srv rw,relatime - xfs /dev/bcache0 rw\n")
	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	srv := Mount{Point: "/srv", FSType: "xfs", Options: "rw,relatime", Source: "/dev/bcache0"}
	bc, _ := h.Device("bcache0")
	if bc == nil {
		t.Fatal("bcache0 not listed")
	}
	assertSameJSON(t, bc, &Disk{
		Name: "bcache0", Path: "/dev/bcache0",
		SizeBytes: (8388608 - 16) * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
		Transport: "bcache", Media: "", Rotational: false,
		Virtual: true, StackedOn: []string{"vdb", "sdb"},
		FSType: "xfs", Mounts: []Mount{srv},
	})
	for _, name := range []string{"vdb", "sdb"} {
		d, _ := h.Device(name)
		if d == nil {
			t.Fatalf("%s not listed", name)
		}
		assertSameJSON(t, d.Holders, []Holder{{Name: "bcache0", Kind: "bcache", Mounts: []Mount{srv}}})
		assertSameJSON(t, d.Mounts, []Mount{withVia(srv, "bcache0")})
	}
}

// TestSCSISerialNotWWN: udev's scsi_id gives a SCSI disk with a WWN that
// WWN as ID_SERIAL_SHORT; the serial is ID_SCSI_SERIAL. The udev record is
// the one a 6.1 guest's udev wrote for a QEMU scsi-hd with serial and WWN.
func TestSCSISerialNotWWN(t *testing.T) {
	root := t.TempDir()
	dev := "/sys/devices/pci0000:00/0000:00:09.0/virtio6/host0/target0:0:1/0:0:1:0"
	for p, c := range map[string]string{
		dev + "/block/sdb/dev": "8:16", dev + "/block/sdb/size": "2097152",
		dev + "/vendor": "SEAGATE ", dev + "/model": "ST4000NM0035    ", dev + "/rev": "2.5+",
		dev + "/wwid": "naa.5000c500a1b2c3d4",
		"/run/udev/data/b8:16": "E:ID_SCSI=1\nE:ID_VENDOR=SEAGATE\nE:ID_VENDOR_ENC=SEAGATE\\x20\nE:ID_MODEL=ST4000NM0035\n" +
			"E:ID_MODEL_ENC=ST4000NM0035\\x20\\x20\\x20\\x20\nE:ID_REVISION=2.5+\nE:ID_TYPE=disk\n" +
			"E:ID_SERIAL=35000c500a1b2c3d4\nE:ID_SERIAL_SHORT=5000c500a1b2c3d4\nE:ID_WWN=0x5000c500a1b2c3d4\n" +
			"E:ID_WWN_WITH_EXTENSION=0x5000c500a1b2c3d4\nE:ID_SCSI_SERIAL=ZC1A2B3D\nE:ID_BUS=scsi",
		"/proc/sys/kernel/osrelease": "6.1.0-57-amd64",
	} {
		mkfile(t, root, p, c+"\n")
	}
	for l, target := range map[string]string{"/sys/block/sdb": dev + "/block/sdb", dev + "/block/sdb/device": dev} {
		mklink(t, root, l, target)
	}
	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.Device("sdb")
	if d == nil || d.Serial != "ZC1A2B3D" || d.WWN != "0x5000c500a1b2c3d4" || d.Vendor != "SEAGATE" || d.Model != "ST4000NM0035" {
		t.Errorf("sdb = %+v, want serial ZC1A2B3D and WWN 0x5000c500a1b2c3d4", d)
	}
}
