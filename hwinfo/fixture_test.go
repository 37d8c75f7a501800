package hwinfo

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The trees under testdata are written by testdata/make_fixtures.py; the
// expectations below are worked out from the files there, not copied from
// Read's output.

func TestFixtureDesktopNVMeSATA(t *testing.T) {
	rootMount := Mount{Point: "/", FSType: "xfs", Options: "rw,relatime", Source: "/dev/mapper/cl-root"}
	want := &Host{
		Schema:   Schema,
		Hostname: "storage-lab",
		OS: OS{ID: "centos", Name: "CentOS Linux", Version: "7", PrettyName: "CentOS Linux 7 (Core)",
			RedHatRelease: "CentOS Linux release 7.3.1611 (Core)"},
		Kernel: "3.10.0-514.el7.x86_64",
		CPU:    CPU{Model: "Intel(R) Core(TM) i5-7600T CPU @ 2.80GHz", Vendor: "GenuineIntel", Sockets: 1, Cores: 4, Threads: 4, AES: &yes},
		Memory: Memory{TotalBytes: 32657824 * 1024},
		Board:  Board{Vendor: "Gigabyte Technology Co., Ltd.", Model: "H270-HD3-CF", Version: "x.x"},
		System: SystemProduct{Vendor: "Gigabyte Technology Co., Ltd.", Product: "H270-HD3", Version: "Default string"},
		BIOS:   BIOS{Vendor: "American Megatrends Inc.", Version: "F3", Date: "03/10/2017"},
		Virt:   Virtualization{Hypervisor: "none", Container: "none", Evidence: "no hypervisor flag in cpuinfo"},
		Disks: []Disk{
			{
				Name: "nvme0n1", Path: "/dev/nvme0n1",
				ByID: []string{
					"/dev/disk/by-id/nvme-Samsung_SSD_960_EVO_500GB_S3EUNX0J512345X",
					"/dev/disk/by-id/nvme-eui.0025385571b01234",
				},
				ByPath:    []string{"/dev/disk/by-path/pci-0000:03:00.0-nvme-1"},
				SizeBytes: 976773168 * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
				Transport: "nvme", Media: "nvme",
				Model:          "Samsung SSD 960 EVO 500GB", // udev ID_MODEL
				Serial:         "S3EUNX0J512345X",
				Firmware:       "2B7QCXE7", // not in this udev record: from sysfs firmware_rev
				WWN:            "eui.0025385571b01234",
				PartitionTable: "dos", PartitionTableID: "000a1b2c",
				Partitions: []Partition{
					{
						Name: "nvme0n1p1", Path: "/dev/nvme0n1p1", Number: 1,
						StartBytes: 2048 * 512, SizeBytes: 2097152 * 512,
						FSType: "xfs", FSUUID: "5c1d2b34-8f2e-4e5a-9d6c-1a2b3c4d5e6f",
						PartUUID: "000a1b2c-01", PartType: "0x83",
						Mounts: []Mount{{Point: "/boot", FSType: "xfs", Options: "rw,relatime", Source: "/dev/nvme0n1p1"}},
					},
					{
						Name: "nvme0n1p2", Path: "/dev/nvme0n1p2", Number: 2,
						StartBytes: 2099200 * 512, SizeBytes: 974673920 * 512,
						FSType: "LVM2_member", FSUUID: "Xq3e1v-5aVt-2bJd-Ke0p-Qm4c-7YhN-aBcDeF",
						PartUUID: "000a1b2c-02", PartType: "0x8e",
						Mounts: []Mount{withVia(rootMount, "dm-0 (cl-root)")},
						Swap:   true,
						Holders: []Holder{
							{Name: "dm-0", Kind: "lvm", DMName: "cl-root", Mounts: []Mount{rootMount}},
							{Name: "dm-1", Kind: "lvm", DMName: "cl-swap", Swap: true},
						},
					},
				},
				System: true,
				SystemReasons: []string{
					"/boot on nvme0n1p1",
					"/ on nvme0n1p2 via dm-0 (cl-root)",
					"swap on nvme0n1p2 via dm-1 (cl-swap)",
				},
			},
			{
				Name: "sda", Path: "/dev/sda",
				ByID: []string{
					"/dev/disk/by-id/ata-TOSHIBA_DT01ACA300_Z3GKXXXXGS",
					"/dev/disk/by-id/wwn-0x5000039fe6d0a1b2",
				},
				ByPath:    []string{"/dev/disk/by-path/pci-0000:00:17.0-ata-1.0"},
				SizeBytes: 5860533168 * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 4096, MinIOBytes: 4096,
				Transport: "sata", Media: "hdd", Rotational: true,
				RotationRPM:    7200, // ID_ATA_ROTATION_RATE_RPM
				Vendor:         "ATA",
				Model:          "TOSHIBA DT01ACA300", // ID_MODEL_ENC, not the 16-char sysfs model
				Serial:         "Z3GKXXXXGS",
				Firmware:       "MX6OABB0", // ID_REVISION, not the 4-char sysfs rev
				WWN:            "0x5000039fe6d0a1b2",
				PartitionTable: "gpt", PartitionTableID: "7d3c2b1a-0f9e-4d8c-b7a6-1e2d3c4b5a69",
				Partitions: []Partition{{
					Name: "sda1", Path: "/dev/sda1", Number: 1,
					StartBytes: 2048 * 512, SizeBytes: 5860529152 * 512,
					FSType: "xfs", FSLabel: "data", FSUUID: "9e8d7c6b-5a49-4838-a727-16051f4e3d2c",
					PartUUID: "2f4e6d8c-1a3b-4c5d-8e7f-9a0b1c2d3e4f", PartLabel: "data disk",
					PartType: "0fc63daf-8483-4772-8e79-3d69d8477de4",
					Mounts: []Mount{
						{Point: "/mnt", FSType: "xfs", Options: "rw,relatime", Source: "/dev/sda1"},
						{Point: "/srv/backup copy", FSType: "xfs", Options: "rw,relatime", Source: "/dev/sda1"},
					},
				}},
			},
		},
	}
	// No PV bytes in this tree: the VG is what device-mapper says.
	want.VolumeGroups = []VolumeGroup{{
		Name: "cl", UUID: "b3Cc9Y-t1mW-3vjA-0cjH-mYd5-Tfd6-R0kN3G", Source: "sysfs",
		PVs: []PhysicalVolume{{Device: "nvme0n1p2", Disk: "nvme0n1"}},
		LVs: []LogicalVolume{
			{Name: "root", UUID: "m0sRJT-n8fD-q2bQ-yZcD-0Sxv-USt1-IYrK7v", Path: "/dev/cl/root", DMName: "cl-root", Device: "dm-0",
				SizeBytes: 481850032128, PVs: []string{"nvme0n1p2"}, FSType: "xfs", Mounts: []Mount{rootMount}},
			{Name: "swap", UUID: "w4Lk0f-8hU2-cBfN-1w8X-yGJ3-oZt9-sQm2vE", Path: "/dev/cl/swap", DMName: "cl-swap", Device: "dm-1",
				SizeBytes: 16911433728, PVs: []string{"nvme0n1p2"}, FSType: "swap", Swap: true},
		},
	}}
	checkFixture(t, "desktop-nvme-sata", false, want)
}

func TestFixtureVMwareRDM(t *testing.T) {
	want := &Host{
		Schema:   Schema,
		Hostname: "esxi-guest.lab.example",
		// Only usr/lib/os-release exists in this tree.
		OS: OS{ID: "centos", Name: "CentOS Linux", Version: "7", PrettyName: "CentOS Linux 7 (Core)",
			RedHatRelease: "CentOS Linux release 7.9.2009 (Core)"},
		Kernel: "3.10.0-1160.el7.x86_64",
		// No sysfs CPU topology: counted from cpuinfo, one vCPU per socket.
		CPU:    CPU{Model: "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz", Vendor: "GenuineIntel", Sockets: 2, Cores: 2, Threads: 2, AES: &yes},
		Memory: Memory{TotalBytes: 8010460 * 1024},
		Board:  Board{Vendor: "Intel Corporation", Model: "440BX Desktop Reference Platform", Version: "None"},
		System: SystemProduct{Vendor: "VMware, Inc.", Product: "VMware Virtual Platform", Version: "None"},
		BIOS:   BIOS{Vendor: "Phoenix Technologies LTD", Version: "6.00", Date: "09/21/2015"},
		Virt: Virtualization{Hypervisor: "vmware", Container: "none",
			Evidence: "dmi sys_vendor=VMware, Inc., product_name=VMware Virtual Platform"},
		Disks: []Disk{
			{
				Name: "sda", Path: "/dev/sda",
				SizeBytes: 83886080 * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
				// Rotational is the kernel's default; no udev, and kernel
				// 3.10 exports no VPD page 0xb1: the medium is not known.
				Transport: "scsi", Media: "", Rotational: true,
				Vendor: "VMware", Model: "Virtual disk", Firmware: "1.0",
				Virtual: true, VirtualBy: "vmware",
				Partitions: []Partition{
					{Name: "sda1", Path: "/dev/sda1", Number: 1, StartBytes: 2048 * 512, SizeBytes: 2097152 * 512,
						FSType: "xfs", // no udev: from mountinfo
						Mounts: []Mount{{Point: "/boot", FSType: "xfs", Options: "rw,relatime", Source: "/dev/sda1"}}},
					{Name: "sda2", Path: "/dev/sda2", Number: 2, StartBytes: 2099200 * 512, SizeBytes: 8388608 * 512,
						FSType: "swap", Swap: true},
					{Name: "sda3", Path: "/dev/sda3", Number: 3, StartBytes: 10487808 * 512, SizeBytes: 73398272 * 512,
						FSType: "xfs",
						Mounts: []Mount{{Point: "/", FSType: "xfs", Options: "rw,relatime", Source: "/dev/sda3"}}},
				},
				System:        true,
				SystemReasons: []string{"/boot on sda1", "swap on sda2", "/ on sda3"},
			},
			{
				// Physical-mode RDM: the guest sees the real disk through
				// VMware's SCSI controller; SCSI vendor "ATA" says SATA.
				Name: "sdb", Path: "/dev/sdb",
				SizeBytes: 5860533168 * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 4096, MinIOBytes: 4096,
				Transport: "sata", Media: "", Rotational: true,
				Vendor: "ATA", Model: "TOSHIBA DT01ACA3", Firmware: "ABB0",
				Serial: "Z3GKYYYYGS",         // VPD page 0x80
				WWN:    "0x5000039fe6d0a1b3", // device/wwid naa.
			},
		},
	}
	checkFixture(t, "vmware-rdm", false, want)
}

func TestFixtureKVMVirtio(t *testing.T) {
	want := &Host{
		Schema:   Schema,
		Hostname: "rocky9-vm",
		OS: OS{ID: "rocky", Name: "Rocky Linux", Version: "9.4", PrettyName: "Rocky Linux 9.4 (Blue Onyx)",
			RedHatRelease: "Rocky Linux release 9.4 (Blue Onyx)"},
		Kernel: "5.14.0-427.13.1.el9_4.x86_64",
		CPU:    CPU{Model: "AMD EPYC-Milan Processor", Vendor: "AuthenticAMD", Sockets: 1, Cores: 4, Threads: 4, AES: &yes},
		Memory: Memory{TotalBytes: 16082308 * 1024},
		// q35 has no board strings: left empty, not made up.
		System: SystemProduct{Vendor: "QEMU", Product: "Standard PC (Q35 + ICH9, 2009)", Version: "pc-q35-rhel9.4.0"},
		BIOS:   BIOS{Vendor: "SeaBIOS", Version: "1.16.3-2.el9", Date: "04/01/2014"},
		Virt: Virtualization{Hypervisor: "kvm", Container: "none",
			Evidence: "dmi sys_vendor=QEMU; kvm-clock clocksource"},
		Disks: []Disk{
			{
				Name: "vda", Path: "/dev/vda",
				SizeBytes: 41943040 * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
				Transport: "virtio", Media: "", Rotational: true, // virtio-blk has no rotation rate
				Vendor: "Virtio", Model: "Virtio Block Device",
				Virtual: true, VirtualBy: "kvm",
				Partitions: []Partition{
					{Name: "vda1", Path: "/dev/vda1", Number: 1, StartBytes: 2048 * 512, SizeBytes: 1228800 * 512,
						FSType: "vfat",
						Mounts: []Mount{{Point: "/boot/efi", FSType: "vfat", Options: "rw,relatime", Source: "/dev/vda1"}}},
					{Name: "vda2", Path: "/dev/vda2", Number: 2, StartBytes: 1230848 * 512, SizeBytes: 2097152 * 512,
						FSType: "xfs",
						Mounts: []Mount{{Point: "/boot", FSType: "xfs", Options: "rw,relatime", Source: "/dev/vda2"}}},
					{Name: "vda3", Path: "/dev/vda3", Number: 3, StartBytes: 3328000 * 512, SizeBytes: 38612992 * 512,
						FSType: "xfs",
						Mounts: []Mount{{Point: "/", FSType: "xfs", Options: "rw,relatime", Source: "/dev/vda3"}}},
				},
				System:        true,
				SystemReasons: []string{"/boot/efi on vda1", "/boot on vda2", "/ on vda3"},
			},
			{
				Name: "vdb", Path: "/dev/vdb",
				SizeBytes: 209715200 * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
				Transport: "virtio", Media: "", Rotational: true, // virtio-blk has no rotation rate
				Vendor: "Virtio", Model: "Virtio Block Device", Serial: "DATA01",
				Virtual: true, VirtualBy: "kvm",
			},
		},
	}
	checkFixture(t, "kvm-virtio", false, want)
}

// TestFixtureQEMUGuest is a guest of scripts/guest.sh without udev: every
// fact below comes from sysfs alone, and the SCSI disk without a WWN fails
// its wwid read with EINVAL as the kernel does.
func TestFixtureQEMUGuest(t *testing.T) {
	fail := failReads(t, "testdata/qemu-guest", map[string]syscall.Errno{qemuSCSIWWID: syscall.EINVAL})
	sata := func(name string, sectors uint64) Disk {
		return Disk{Name: name, Path: "/dev/" + name, SizeBytes: sectors * 512,
			LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
			Vendor: "ATA", Firmware: "2.5+", // QEMU's hardware version, the revision of all its disks
			Virtual: true, VirtualBy: "qemu"}
	}
	bcacheHolder := []Holder{{Name: "bcache0", Kind: "bcache"}}
	sda := sata("sda", 8388608)
	sda.Transport, sda.Media, sda.Rotational, sda.RotationRPM = "sata", "hdd", true, 7200 // VPD page 0xb1
	sda.Model = "WDC WD40EFRX-68N32N0"                                                    // VPD page 0x89; sysfs model has 16 characters
	sda.Serial, sda.WWN = "WD-WCC7K1234567", "0x50014ee2b1234567"
	sdb := sata("sdb", 4194304)
	sdb.Transport, sdb.Media = "sata", "ssd" // rotation rate 1
	sdb.Model, sdb.Serial = "Samsung SSD 870 EVO 1TB", "S6PUNX0T123456A"
	sdb.Holders = bcacheHolder // its cache set's cache
	sdc := sata("sdc", 4194304)
	sdc.Transport, sdc.Media, sdc.Rotational = "scsi", "", true // page 0xb1 rate 0: not reported
	sdc.Vendor, sdc.Model, sdc.Serial = "QEMU", "ST4000NM0035", "ZC1A2B3C"
	sdd := sata("sdd", 8388608)
	sdd.Transport, sdd.Media, sdd.Rotational, sdd.RotationRPM = "scsi", "hdd", true, 7200
	sdd.Vendor, sdd.Model, sdd.Serial, sdd.WWN = "SEAGATE", "ST4000NM0035", "ZC1A2B3D", "0x5000c500a1b2c3d4"
	virtio := func(name string, sectors uint64, serial string) Disk {
		return Disk{Name: name, Path: "/dev/" + name, SizeBytes: sectors * 512,
			LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
			Transport: "virtio", Media: "", Rotational: true,
			Vendor: "Virtio", Model: "Virtio Block Device", Serial: serial,
			Virtual: true, VirtualBy: "qemu"} // TCG: qemu, not kvm
	}
	vdb := virtio("vdb", 8388608, "")
	vdb.Holders = bcacheHolder // its backing device
	want := &Host{
		Schema:   Schema,
		Hostname: "diskprep-guest",
		OS: OS{ID: "debian", Name: "Debian GNU/Linux", Version: "12",
			PrettyName: "Debian GNU/Linux 12 (bookworm)"},
		Kernel: "6.1.0-28-amd64",
		CPU:    CPU{Model: "QEMU TCG CPU version 2.5+", Vendor: "AuthenticAMD", Sockets: 1, Cores: 2, Threads: 2, AES: &yes},
		Memory: Memory{TotalBytes: 1004852 * 1024},
		System: SystemProduct{Vendor: "QEMU", Product: "Standard PC (Q35 + ICH9, 2009)", Version: "pc-q35-8.2"},
		BIOS:   BIOS{Vendor: "SeaBIOS", Version: "1.16.3-debian-1.16.3-2", Date: "04/01/2014"},
		Virt: Virtualization{Hypervisor: "qemu", Container: "none",
			Evidence: "dmi sys_vendor=QEMU; no kvm-clock clocksource (TCG emulation)"},
		Disks: []Disk{
			{
				Name: "bcache0", Path: "/dev/bcache0",
				SizeBytes: (8388608 - 16) * 512, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, MinIOBytes: 512,
				Transport: "bcache", Virtual: true, StackedOn: []string{"vdb", "sdb"},
			},
			sda, sdb, sdc, sdd,
			virtio("vda", 2097152, "VIRT0001"),
			vdb,
		},
		// The hand-made tree has bcache's mode and links, no stats: the
		// volume without counters.
		Caches: []CachedVolume{{
			Device: "bcache0", Path: "/dev/bcache0", Kind: "bcache", Mode: "writeback",
			OriginDevices: []string{"vdb"}, CacheDevices: []string{"sdb"}, SizeBytes: (8388608 - 16) * 512, BlockBytes: 512,
		}},
	}
	checkFixtureReading(t, "qemu-guest", false, fail, want)
}

// TestFixtureAll checks that the devices hidden by default come back with
// All, in natural order.
func TestFixtureAll(t *testing.T) {
	for _, tc := range []struct {
		tree           string
		normal, all    []string
		hiddenMediaEmp []string
	}{
		{"vmware-rdm", []string{"sda", "sdb"}, []string{"loop0", "sda", "sdb", "sr0"}, []string{"loop0", "sr0"}},
		{"kvm-virtio", []string{"vda", "vdb"}, []string{"vda", "vdb", "zram0"}, []string{"zram0"}},
		{"desktop-nvme-sata", []string{"nvme0n1", "sda"}, []string{"nvme0n1", "sda"}, nil},
	} {
		t.Run(tc.tree, func(t *testing.T) {
			for _, all := range []bool{false, true} {
				h, err := Read(context.Background(), Options{Root: filepath.Join("testdata", tc.tree), All: all})
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, d := range h.Disks {
					names = append(names, d.Name)
				}
				want := tc.normal
				if all {
					want = tc.all
				}
				if strings.Join(names, " ") != strings.Join(want, " ") {
					t.Errorf("All=%v: disks %v, want %v", all, names, want)
				}
				for _, n := range tc.hiddenMediaEmp {
					if d, _ := h.Device(n); all && (d == nil || d.Media != "") {
						t.Errorf("All: %s should be listed without media, got %+v", n, d)
					}
				}
			}
		})
	}
	h, err := Read(context.Background(), Options{Root: "testdata/vmware-rdm", All: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := h.Device("loop0"); d == nil || d.Transport != "loop" || d.LoopBackingFile != "" || d.SizeBytes != 0 {
		t.Errorf("loop0 = %+v", d)
	}
	if d, _ := h.Device("sr0"); d == nil || d.Removable != true || d.LogicalSectorBytes != 2048 || d.Model != "VMware SATA CD00" {
		t.Errorf("sr0 = %+v", d)
	}
}

func checkFixture(t *testing.T, tree string, all bool, want *Host) {
	t.Helper()
	checkFixtureReading(t, tree, all, nil, want)
}

// checkFixtureReading is checkFixture with the files read through readFile.
func checkFixtureReading(t *testing.T, tree string, all bool, readFile func(string) ([]byte, error), want *Host) {
	t.Helper()
	got, err := Read(context.Background(), Options{Root: filepath.Join("testdata", tree), All: all, ReadFile: readFile})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) > 0 {
		t.Errorf("warnings on a complete tree: %q", got.Warnings)
	}
	got.Warnings = nil
	assertSameJSON(t, got, want)
}

func withVia(m Mount, via string) Mount {
	m.Via = via
	return m
}

// assertSameJSON compares through JSON, so the failure shows the first
// differing lines rather than two struct dumps.
func assertSameJSON(t *testing.T, got, want any) {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) == string(w) {
		return
	}
	gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
	var diff []string
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			diff = append(diff, fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, a, b))
			if len(diff) == 8 {
				break
			}
		}
	}
	t.Errorf("mismatch:\n%s", strings.Join(diff, "\n"))
}

// yes is the fixtures' CPU.AES: every one of their CPUs lists aes.
var yes = true
