package guesttest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Scenario a of issue 10: diskprep's inventory against the kernel's own
// view. One guest with a disk of every kind, each with the identity the
// emulated device can carry; inside it diskprep's inventory, lsblk, udev's
// properties and the rotation rate of VPD page 0xb1, once with udev's
// database and once with it hidden (diskprep must then get every fact from
// sysfs alone). The host compares them field by field for every disk, and
// against the identity the disks were given.
//
// One boot (about 20 s under TCG).

// invDisk is one disk the guest is given and what it must show.
type invDisk struct {
	spec      string
	serial    string // how the disk is found in every view
	transport string
	media     string // "" = unknown: nothing reports a rotation rate
	model     string
	vendor    string
	wwn       string
	size      int64
	lsec      int64
	psec      int64
}

var inventoryDisks = []invDisk{
	{spec: "nvme:1G:serial=NVME0001", serial: "NVME0001", transport: "nvme", media: "nvme",
		model: "QEMU NVMe Ctrl", wwn: qemuNVMeWWID("NVME0001"), size: 1 << 30, lsec: 512, psec: 512},
	{spec: "nvme:512M:serial=NVME4K01,lbs=4096", serial: "NVME4K01", transport: "nvme", media: "nvme",
		model: "QEMU NVMe Ctrl", wwn: qemuNVMeWWID("NVME4K01"), size: 512 << 20, lsec: 4096, psec: 4096},
	{spec: "sata-hdd:2G:model=WDC WD40EFRX-68N32N0,serial=WD-WCC7K0000001,wwn=0x50014ee2b0000001,pbs=4096,rpm=7200",
		serial: "WD-WCC7K0000001", transport: "sata", media: "hdd", model: "WDC WD40EFRX-68N32N0", vendor: "ATA",
		wwn: "0x50014ee2b0000001", size: 2 << 30, lsec: 512, psec: 4096},
	{spec: "sata-ssd:1G:model=Samsung SSD 870 EVO 1TB,serial=S6PNNX0R100001,wwn=0x5002538e40000001",
		serial: "S6PNNX0R100001", transport: "sata", media: "ssd", model: "Samsung SSD 870 EVO 1TB", vendor: "ATA",
		wwn: "0x5002538e40000001", size: 1 << 30, lsec: 512, psec: 512},
	{spec: "scsi:1G:vendor=SEAGATE,model=ST4000NM0023,serial=Z1Z00001,wwn=0x5000c50000000001,rpm=7200",
		serial: "Z1Z00001", transport: "scsi", media: "hdd", model: "ST4000NM0023", vendor: "SEAGATE",
		wwn: "0x5000c50000000001", size: 1 << 30, lsec: 512, psec: 512},
	{spec: "virtio:1G:serial=VIRTIO0001,pbs=4096", serial: "VIRTIO0001", transport: "virtio",
		model: "Virtio Block Device", vendor: "Virtio", size: 1 << 30, lsec: 512, psec: 4096},
	{spec: "usb:1G:vendor=SanDisk,model=Ultra Fit,serial=4C530001234567", serial: "4C530001234567",
		transport: "usb", model: "Ultra Fit", vendor: "SanDisk", size: 1 << 30, lsec: 512, psec: 512},
}

// qemuNVMeWWID is the wwid Linux makes for a namespace of QEMU's NVMe
// controller, which reports no usable namespace IDs: "nvme.", the PCI
// subsystem vendor id, then serial, model (hex) and the namespace id.
func qemuNVMeWWID(serial string) string {
	return fmt.Sprintf("nvme.1b36-%x-%x-00000001", serial, "QEMU NVMe Ctrl")
}

// inventoryScript prints the views, between "@@ NAME" lines (splitMarked).
const inventoryScript = `set -u
mark() { echo "@@ $1"; }
diskprep inventory -o json >/root/inv.json 2>/root/inv.err
rc=$?
mark inv.exit; echo $rc
mark inv; cat /root/inv.json
mark inv.stderr; cat /root/inv.err
mark lsblk; lsblk -J -O -b
for d in /sys/block/*; do
	n=${d##*/}
	case $n in loop*) continue ;; esac
	mark "udev.$n"; udevadm info --query=property --name=/dev/$n
	# MEDIUM ROTATION RATE, bytes 4-5 of VPD page 0xb1, where the kernel has it.
	mark "b1.$n"; [ -e $d/device/vpd_pgb1 ] && od -An -tu1 -j4 -N2 $d/device/vpd_pgb1
done
# The same inventory from sysfs alone: udev's database hidden.
mv /run/udev/data /run/udev/data.hidden
diskprep inventory -o json >/root/inv.json 2>/root/inv.err
rc=$?
mark sysfs.exit; echo $rc
mark sysfs; cat /root/inv.json
mark sysfs.stderr; cat /root/inv.err
mv /run/udev/data.hidden /run/udev/data
mark end
`

// inventoryJSON is the part of diskprep's inventory the scenarios read.
type inventoryJSON struct {
	Disks []struct {
		Name       string   `json:"name"`
		Path       string   `json:"path"`
		ByID       []string `json:"by_id"`
		Size       int64    `json:"size_bytes"`
		LogSec     int64    `json:"logical_sector_bytes"`
		PhySec     int64    `json:"physical_sector_bytes"`
		Transport  string   `json:"transport"`
		Media      string   `json:"media"`
		Rotational bool     `json:"rotational"`
		RPM        int64    `json:"rotation_rate_rpm"`
		Vendor     string   `json:"vendor"`
		Model      string   `json:"model"`
		Serial     string   `json:"serial"`
		WWN        string   `json:"wwn"`
		Virtual    bool     `json:"virtual"`
		Swap       bool     `json:"swap"`
		System     bool     `json:"system"`
		Crypt      *struct {
			Version     int    `json:"version"`
			Cipher      string `json:"cipher"`
			KeyBits     int    `json:"key_bits"`
			SectorBytes int    `json:"sector_bytes"`
			Open        bool   `json:"open"`
			Mapper      string `json:"mapper"`
		} `json:"crypt"`
		Holders []struct {
			Name   string `json:"name"`
			Kind   string `json:"kind"`
			DMName string `json:"dm_name"`
			Mounts []struct {
				Point string `json:"point"`
			} `json:"mounts"`
		} `json:"holders"`
		Mounts []struct {
			Point  string `json:"point"`
			Source string `json:"source"`
			Via    string `json:"via"`
		} `json:"mounts"`
	} `json:"disks"`
}

// lsblkJSON is the part of `lsblk -J -O -b` the scenarios read.
type lsblkJSON struct {
	Blockdevices []struct {
		Name       string  `json:"name"`
		Type       string  `json:"type"`
		Size       int64   `json:"size"`
		LogSec     int64   `json:"log-sec"`
		PhySec     int64   `json:"phy-sec"`
		Rota       bool    `json:"rota"`
		Tran       *string `json:"tran"`
		Subsystems string  `json:"subsystems"`
		Vendor     *string `json:"vendor"`
		Model      *string `json:"model"`
		Serial     *string `json:"serial"`
		WWN        *string `json:"wwn"`
	} `json:"blockdevices"`
}

func decodeJSON(t *testing.T, what, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, s)
	}
}

func trimmed(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

// parseUdev reads `udevadm info --query=property` output.
func parseUdev(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// udevDecode undoes udev's \xNN escapes (ID_MODEL_ENC).
func udevDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kernelView is what lsblk, udev and sysfs say of one disk, in diskprep's
// terms.
type kernelView struct {
	transport, media, vendor, model, serial, wwn string
	rotational                                   bool
	size, lsec, psec                             int64
}

// kernelViews turns the guest's lsblk, udev and VPD 0xb1 output into one
// view per disk name. Where the kernel has no value diskprep names one
// itself, the rule is spelled out here: virtio-blk has no model or vendor
// (diskprep says "Virtio Block Device" from the virtio vendor id 0x1af4),
// virtio-scsi has no transport class (lsblk's tran is empty; its
// subsystems say scsi over virtio).
func kernelViews(t *testing.T, out map[string]string) map[string]kernelView {
	var ls lsblkJSON
	decodeJSON(t, "lsblk -J -O -b", out["lsblk"], &ls)
	views := map[string]kernelView{}
	for _, d := range ls.Blockdevices {
		if d.Type != "disk" {
			continue
		}
		u := parseUdev(out["udev."+d.Name])
		v := kernelView{
			vendor: trimmed(d.Vendor), model: trimmed(d.Model), serial: trimmed(d.Serial), wwn: trimmed(d.WWN),
			rotational: d.Rota, size: d.Size, lsec: d.LogSec, psec: d.PhySec,
		}
		// udev's own words must say the same as lsblk's (lsblk reads them,
		// but from the database: a check that both views are of one disk).
		if m := strings.TrimSpace(udevDecode(u["ID_MODEL_ENC"])); m != "" && m != v.model {
			t.Errorf("%s: lsblk model %q, udev ID_MODEL_ENC %q", d.Name, v.model, m)
		}
		if s := firstOf(u["ID_SCSI_SERIAL"], u["ID_SERIAL_SHORT"], u["ID_SERIAL"]); s != v.serial {
			t.Errorf("%s: lsblk serial %q, udev %q", d.Name, v.serial, s)
		}
		if w := u["ID_WWN_WITH_EXTENSION"]; w != "" && w != v.wwn {
			t.Errorf("%s: lsblk wwn %q, udev ID_WWN_WITH_EXTENSION %q", d.Name, v.wwn, w)
		}
		switch subs := d.Subsystems; {
		case trimmed(d.Tran) != "":
			v.transport = trimmed(d.Tran)
		case strings.HasPrefix(subs, "block:scsi:virtio:"):
			v.transport = "scsi"
		case strings.HasPrefix(subs, "block:virtio:"):
			v.transport = "virtio"
			if v.vendor == "0x1af4" && v.model == "" {
				v.vendor, v.model = "Virtio", "Virtio Block Device"
			}
		default:
			t.Errorf("%s: no transport in lsblk (subsystems %q)", d.Name, subs)
		}
		// Media from what the disk itself reports: ATA IDENTIFY word 217
		// through udev's ata_id (0: does not rotate), else VPD page 0xb1;
		// a rate makes an HDD, "does not rotate" an SSD; the kernel's
		// rotational=0 an SSD; nothing reported, unknown.
		rate := -1
		if r, ok := u["ID_ATA_ROTATION_RATE_RPM"]; ok {
			rate, _ = strconv.Atoi(r)
			if rate == 0 {
				rate = 1
			}
		} else if f := strings.Fields(out["b1."+d.Name]); len(f) == 2 {
			hi, _ := strconv.Atoi(f[0])
			lo, _ := strconv.Atoi(f[1])
			rate = hi<<8 | lo
		}
		switch {
		case v.transport == "nvme":
			v.media = "nvme"
		case rate == 1:
			v.media = "ssd"
		case rate >= 0x401 && rate <= 0xfffe:
			v.media = "hdd"
		case !v.rotational:
			v.media = "ssd"
		}
		views[d.Name] = v
	}
	return views
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// agreement counts, per field, the disks on which two views agree.
type agreement struct {
	fields []string
	agree  map[string]int
	total  map[string]int
}

func newAgreement(fields ...string) *agreement {
	return &agreement{fields: fields, agree: map[string]int{}, total: map[string]int{}}
}

func (a *agreement) check(t *testing.T, who, field string, got, want any) {
	t.Helper()
	a.total[field]++
	if fmt.Sprint(got) == fmt.Sprint(want) {
		a.agree[field]++
		return
	}
	t.Errorf("%s: %s is %v, the kernel says %v", who, field, got, want)
}

func (a *agreement) String() string {
	var parts []string
	all, n := 0, 0
	for _, f := range a.fields {
		parts = append(parts, fmt.Sprintf("%s %d/%d", f, a.agree[f], a.total[f]))
		all += a.agree[f]
		n += a.total[f]
	}
	return fmt.Sprintf("%s; all %d/%d", strings.Join(parts, ", "), all, n)
}

func TestScenarioInventoryAgainstKernel(t *testing.T) {
	parallel(t)
	var opt Options
	for _, d := range inventoryDisks {
		opt.Disks = append(opt.Disks, d.spec)
	}
	r := Run(t, opt, "sh", "-c", inventoryScript)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	views := kernelViews(t, out)

	// Every disk the guest was given is in the kernel's view as it was
	// given: else agreeing with the kernel would prove little.
	bySerial := map[string]string{}
	for name, v := range views {
		bySerial[v.serial] = name
	}
	for _, want := range inventoryDisks {
		name, ok := bySerial[want.serial]
		if !ok {
			t.Errorf("the kernel shows no disk with serial %s (%s)", want.serial, want.spec)
			continue
		}
		v := views[name]
		got := invDisk{spec: want.spec, serial: v.serial, transport: v.transport, media: v.media, model: v.model,
			vendor: v.vendor, wwn: v.wwn, size: v.size, lsec: v.lsec, psec: v.psec}
		if want.vendor == "" {
			got.vendor = "" // NVMe: lsblk shows none; not asked
		}
		if got != want {
			t.Errorf("%s: the kernel shows %+v\nwant %+v", name, got, want)
		}
	}

	for _, run := range []struct{ key, what string }{
		{"inv", "inventory"},
		{"sysfs", "inventory without udev's database"},
	} {
		if out[run.key+".exit"] != "0" || out[run.key+".stderr"] != "" {
			t.Errorf("%s: exit %s, stderr:\n%s", run.what, out[run.key+".exit"], out[run.key+".stderr"])
		}
		var inv inventoryJSON
		decodeJSON(t, run.what, out[run.key], &inv)
		a := newAgreement("transport", "media", "rotational", "vendor", "model", "serial", "wwn", "size", "logical sector", "physical sector")
		seen := map[string]bool{}
		for _, d := range inv.Disks {
			v, ok := views[d.Name]
			if !ok {
				if !strings.HasPrefix(d.Name, "loop") {
					t.Errorf("%s: %s lists %s, which lsblk does not", run.what, d.Name, d.Name)
				}
				continue
			}
			seen[d.Name] = true
			who := run.what + ": " + d.Name
			a.check(t, who, "transport", d.Transport, v.transport)
			a.check(t, who, "media", d.Media, v.media)
			a.check(t, who, "rotational", d.Rotational, v.rotational)
			a.check(t, who, "vendor", d.Vendor, v.vendor)
			a.check(t, who, "model", d.Model, v.model)
			a.check(t, who, "serial", d.Serial, v.serial)
			a.check(t, who, "wwn", d.WWN, v.wwn)
			a.check(t, who, "size", d.Size, v.size)
			a.check(t, who, "logical sector", d.LogSec, v.lsec)
			a.check(t, who, "physical sector", d.PhySec, v.psec)
			if !d.Virtual {
				t.Errorf("%s: not virtual, on QEMU's emulated %s", who, d.Transport)
			}
			if d.System != (v.serial == "guestroot") {
				t.Errorf("%s: system %v (the guest's root disk has serial guestroot)", who, d.System)
			}
		}
		var missing []string
		for name := range views {
			if !seen[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s lacks %v, which lsblk lists", run.what, missing)
		}
		t.Logf("%s agrees with the kernel on %d disks: %s", run.what, len(seen), a)
	}
}
