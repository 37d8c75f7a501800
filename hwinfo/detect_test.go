package hwinfo

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestDetectHypervisor(t *testing.T) {
	x86 := cpuInfo{readable: true, hasFlags: true}
	guest := cpuInfo{readable: true, hasFlags: true, hypervisor: true}
	cases := []struct {
		name     string
		dmi      dmiFacts
		cpu      cpuInfo
		kvmClock bool
		hvType   string
		want     string
	}{
		{"vmware", dmiFacts{available: true, sysVendor: "VMware, Inc.", product: "VMware7,1"}, guest, false, "", "vmware"},
		{"qemu with kvm", dmiFacts{available: true, sysVendor: "QEMU", product: "Standard PC (i440FX + PIIX, 1996)"}, guest, true, "", "kvm"},
		{"qemu tcg", dmiFacts{available: true, sysVendor: "QEMU", product: "Standard PC (i440FX + PIIX, 1996)"}, guest, false, "", "qemu"},
		{"rhev kvm product", dmiFacts{available: true, sysVendor: "Red Hat", product: "KVM"}, guest, true, "", "kvm"},
		{"hyper-v", dmiFacts{available: true, sysVendor: "Microsoft Corporation", product: "Virtual Machine"}, guest, false, "", "hyperv"},
		{"surface is metal", dmiFacts{available: true, sysVendor: "Microsoft Corporation", product: "Surface Pro 7"}, x86, false, "", "none"},
		{"xen hvm", dmiFacts{available: true, sysVendor: "Xen", product: "HVM domU"}, guest, false, "", "xen"},
		{"xen pv no dmi", dmiFacts{}, cpuInfo{readable: true, hasFlags: true, hypervisor: true}, false, "xen", "xen"},
		{"virtualbox", dmiFacts{available: true, sysVendor: "innotek GmbH", product: "VirtualBox"}, guest, false, "", "virtualbox"},
		{"parallels", dmiFacts{available: true, sysVendor: "Parallels Software International Inc.", product: "Parallels Virtual Platform"}, guest, false, "", "parallels"},
		{"bhyve", dmiFacts{available: true, biosVendor: "BHYVE", product: "BHYVE"}, guest, false, "", "bhyve"},
		{"ec2 nitro", dmiFacts{available: true, sysVendor: "Amazon EC2", product: "m5.large"}, guest, true, "", "kvm"},
		{"gce", dmiFacts{available: true, sysVendor: "Google", product: "Google Compute Engine"}, guest, true, "", "kvm"},
		{"flag and kvm-clock only", dmiFacts{}, guest, true, "", "kvm"},
		{"flag only", dmiFacts{}, guest, false, "", "other"},
		{"bare metal", dmiFacts{available: true, sysVendor: "Dell Inc.", product: "PowerEdge R640"}, x86, false, "", "none"},
		{"arm with dmi", dmiFacts{available: true, sysVendor: "Ampere"}, cpuInfo{readable: true}, false, "", "none"},
		{"nothing to go on", dmiFacts{}, cpuInfo{}, false, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.kvmClock {
				mkfile(t, root, "sys/devices/system/clocksource/clocksource0/available_clocksource", "kvm-clock tsc hpet\n")
			}
			if tc.hvType != "" {
				mkfile(t, root, "sys/hypervisor/type", tc.hvType+"\n")
			}
			r := &reader{root: root}
			got, ev := r.detectHypervisor(tc.dmi, tc.cpu)
			if got != tc.want {
				t.Errorf("got %q (%s), want %q", got, ev, tc.want)
			}
			if got != "" && ev == "" {
				t.Errorf("verdict %q without evidence", got)
			}
		})
	}
}

func TestDetectContainer(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"docker marker", map[string]string{".dockerenv": "", "proc/1/cgroup": "0::/\n"}, "docker"},
		{"podman marker", map[string]string{"run/.containerenv": "engine=\"podman-4.9\"\n"}, "podman"},
		{"environ", map[string]string{"proc/1/environ": "PATH=/bin\x00container=lxc\x00"}, "lxc"},
		{"systemd-nspawn", map[string]string{"run/systemd/container": "systemd-nspawn\n"}, "systemd-nspawn"},
		{"cgroup v1 docker", map[string]string{"proc/1/cgroup": "12:pids:/docker/3f2a9c\n"}, "docker"},
		{"cgroup lxc", map[string]string{"proc/1/cgroup": "0::/lxc.payload.web\n"}, "lxc"},
		{"overlay root", map[string]string{"proc/self/mountinfo": "300 250 0:52 / / rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X\n"}, "docker"},
		{"host", map[string]string{"proc/1/cgroup": "0::/init.scope\n", "proc/self/mountinfo": "27 1 254:0 / / rw - ext4 /dev/vda rw\n"}, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range tc.files {
				mkfile(t, root, p, c)
			}
			r := &reader{root: root}
			if got := r.detectContainer(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTransportFromPath(t *testing.T) {
	cases := []struct {
		name, path string
		udev       map[string]string
		vendor     string
		want       string
	}{
		{"sda", "/sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda", nil, "ATA", "sata"},
		{"sdb", "/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb", nil, "Samsung", "usb"},
		{"sdc", "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/host7/port-7:0/end_device-7:0/target7:0:0/7:0:0:0/block/sdc", nil, "SEAGATE", "sas"},
		{"sdd", "/sys/devices/pci0000:00/0000:00:10.0/host2/target2:0:3/2:0:3:0/block/sdd", nil, "VMware", "scsi"},
		{"sde", "/sys/devices/pci0000:00/0000:00:10.0/host2/target2:0:4/2:0:4:0/block/sde", map[string]string{"ID_BUS": "ata"}, "ATA", "sata"},
		{"sdf", "/sys/devices/pci0000:00/0000:00:10.0/host2/target2:0:5/2:0:5:0/block/sdf", nil, "ATA", "sata"},
		{"sdg", "/sys/devices/pci0000:00/0000:00:04.0/virtio2/host0/target0:0:0/0:0:0:1/block/sdg", nil, "QEMU", "scsi"},
		{"nvme0n1", "/sys/devices/pci0000:00/0000:00:1d.0/0000:03:00.0/nvme/nvme0/nvme0n1", nil, "", "nvme"},
		{"vda", "/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda", nil, "0x1af4", "virtio"},
		{"mmcblk0", "/sys/devices/platform/soc/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa/block/mmcblk0", nil, "", "mmc"},
		{"xvda", "/sys/devices/vbd-51712/block/xvda", nil, "", "xen"},
		{"loop3", "/sys/devices/virtual/block/loop3", nil, "", "loop"},
		{"zram0", "/sys/devices/virtual/block/zram0", nil, "", "zram"},
		{"nbd0", "/sys/devices/virtual/block/nbd0", nil, "", "other"},
		{"bcache0", "/sys/devices/virtual/block/bcache0", nil, "", "bcache"},
	}
	r := &reader{root: t.TempDir()}
	for _, tc := range cases {
		if got := r.transport(tc.name, tc.path, tc.udev, tc.vendor); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.name, tc.path, got, tc.want)
		}
	}
}

func TestVirtualDisk(t *testing.T) {
	cases := []struct {
		transport, vendor, model string
		virtual                  bool
		by                       string
	}{
		{"scsi", "VMware", "Virtual disk", true, "vmware"},
		{"sata", "", "VMware Virtual SATA Hard Drive", true, "vmware"},
		{"nvme", "", "VMware Virtual NVMe Disk", true, "vmware"},
		{"sata", "ATA", "QEMU HARDDISK", true, "qemu"},
		{"scsi", "QEMU", "QEMU HARDDISK", true, "qemu"},
		{"scsi", "Msft", "Virtual Disk", true, "hyperv"},
		{"sata", "ATA", "VBOX HARDDISK", true, "virtualbox"},
		{"xen", "", "", true, "xen"},
		{"nvme", "", "Amazon Elastic Block Store", true, "kvm"},
		{"sata", "ATA", "TOSHIBA DT01ACA3", false, ""}, // RDM in a VMware guest
		{"nvme", "", "Samsung SSD 960 EVO 500GB", false, ""},
	}
	for _, tc := range cases {
		d := &Disk{Transport: tc.transport, Vendor: tc.vendor, Model: tc.model}
		v, by := virtualDisk(d, "vmware")
		if v != tc.virtual || by != tc.by {
			t.Errorf("%+v: got %v %q, want %v %q", tc, v, by, tc.virtual, tc.by)
		}
	}
	if v, by := virtualDisk(&Disk{Transport: "virtio"}, ""); !v || by != "qemu" {
		t.Errorf("virtio on an unknown hypervisor: %v %q", v, by)
	}

	// QEMU's emulated disks keep QEMU's revision whatever identity they
	// were given; a passed-through disk has its own.
	for _, tc := range []struct {
		d          Disk
		hypervisor string
		virtual    bool
	}{
		{Disk{Transport: "sata", Vendor: "ATA", Model: "WDC WD40EFRX-68N32N0", Firmware: "2.5+"}, "kvm", true},
		{Disk{Transport: "sata", Vendor: "ATA", Model: "WDC WD40EFRX-68N32N0", Firmware: "2.5+"}, "qemu", true},
		{Disk{Transport: "scsi", Vendor: "SEAGATE", Model: "ST4000NM0035", Firmware: "2.5+"}, "kvm", true},
		{Disk{Transport: "usb", Vendor: "SanDisk", Model: "Ultra", Firmware: "2.5+"}, "", true},
		{Disk{Transport: "scsi", Vendor: "SEAGATE", Model: "ST4000NM0035", Firmware: "2.5+"}, "none", false},   // bare metal: not QEMU's
		{Disk{Transport: "scsi", Vendor: "SEAGATE", Model: "ST4000NM0035", Firmware: "2.5+"}, "vmware", false}, // nor under another hypervisor
		{Disk{Transport: "scsi", Vendor: "SEAGATE", Model: "ST4000NM0035", Firmware: "TN05"}, "kvm", false},    // scsi-block passthrough
		{Disk{Transport: "sata", Vendor: "ATA", Model: "TOSHIBA DT01ACA3", Firmware: "ABB0"}, "kvm", false},
	} {
		v, by := virtualDisk(&tc.d, tc.hypervisor)
		if v != tc.virtual || v && by != "qemu" || !v && by != "" {
			t.Errorf("%+v on %q: %v %q, want %v", tc.d, tc.hypervisor, v, by, tc.virtual)
		}
	}
}

func TestNaturalLess(t *testing.T) {
	got := []string{"sdb", "nvme10n1", "sda10", "sda2", "nvme2n1", "sda", "loop11", "loop2"}
	sort.Slice(got, func(i, j int) bool { return naturalLess(got[i], got[j]) })
	want := []string{"loop2", "loop11", "nvme2n1", "nvme10n1", "sda", "sda2", "sda10", "sdb"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestEscapes(t *testing.T) {
	if got := UnescapeOctal(`/mnt/my\040disk\011x\134y`); got != "/mnt/my disk\tx\\y" {
		t.Errorf("unescapeOctal: %q", got)
	}
	if got := decodeHexEscapes(`Samsung\x20SSD\x20`); got != "Samsung SSD " {
		t.Errorf("decodeHexEscapes: %q", got)
	}
	if got := decodeHexEscapes(`bad\x2`); got != `bad\x2` {
		t.Errorf("decodeHexEscapes truncated: %q", got)
	}
	m, bad := parseOSRelease([]byte("# c\nNAME=\"Rocky \\\"Linux\\\"\"\nID=rocky\nVERSION_ID='9.4'\nnonsense\n"))
	if m["NAME"] != `Rocky "Linux"` || m["ID"] != "rocky" || m["VERSION_ID"] != "9.4" || bad != 1 {
		t.Errorf("parseOSRelease: %q bad=%d", m, bad)
	}
	m2, ok := parseMountinfoLine(`36 35 98:0 /mnt1 /mnt\0402 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`)
	if !ok || m2.Point != "/mnt 2" || m2.FSType != "ext3" || m2.Source != "/dev/root" || m2.MountOptions != "rw,noatime" {
		t.Errorf("parseMountinfoLine: %+v %v", m2, ok)
	}
}

// mklink makes the link rel under root point at target under root, by a
// relative path, as sysfs's links do.
func mklink(t *testing.T, root, rel, target string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	r, _ := filepath.Rel(filepath.Dir(p), filepath.Join(root, target))
	if err := os.Symlink(r, p); err != nil {
		t.Fatal(err)
	}
}

// unopenable puts a unix socket at path (made or replaced): open(2)
// fails on it, as on a device an unprivileged run may not open.
func unopenable(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("no unix socket here: %v", err)
	}
	t.Cleanup(func() { l.Close() })
}

// warningsWith are h's warnings that contain s.
func warningsWith(h *Host, s string) []string {
	var out []string
	for _, w := range h.Warnings {
		if strings.Contains(w, s) {
			out = append(out, w)
		}
	}
	return out
}

func mkfile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDisplayModel(t *testing.T) {
	for _, c := range [][3]string{
		{"ATA", "TOSHIBA DT01ACA300", "TOSHIBA DT01ACA300"},
		{"Virtio", "Virtio Block Device", "Virtio Block Device"},
		{"VMware", "Virtual disk", "VMware Virtual disk"},
		{"", "Samsung SSD 960 EVO 500GB", "Samsung SSD 960 EVO 500GB"},
		{"QEMU", "", "QEMU"},
	} {
		if got := DisplayModel(c[0], c[1]); got != c[2] {
			t.Errorf("DisplayModel(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// TestQEMUDisksWithOwnIdentity: in a QEMU guest, SATA and SCSI disks given
// a model, vendor and serial of their own are still QEMU's virtual disks.
func TestQEMUDisksWithOwnIdentity(t *testing.T) {
	h, err := Read(context.Background(), Options{Root: "testdata/qemu-guest"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sda", "sdb", "sdc", "sdd"} {
		if d, _ := h.Device(name); d == nil || !d.Virtual || d.VirtualBy != "qemu" {
			t.Errorf("%s = %+v, want virtual (qemu)", name, d)
		}
	}
}
