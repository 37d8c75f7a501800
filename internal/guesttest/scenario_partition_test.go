package guesttest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Scenario b of issue 10: the real partition path. With udev running and a
// kernel that parses GPT itself, prepare on a SATA and an NVMe disk gets its
// partitions registered by the kernel's re-read of the table (BLKPG, the
// fallback the host's kernel needs, must not have run), waits for udev to
// make the nodes and the /dev/disk links, and a plan choosing disks by
// /dev/disk/by-id path, by_id name, serial, model and WWN prepares each of
// them; run again, the plan changes nothing.
//
// One boot (about 30 s under TCG).

var partitionDisks = []string{
	"nvme:1G:serial=NVME0001",
	"nvme:512M:serial=NVME4K01,lbs=4096",
	"sata-hdd:2G:model=WDC WD40EFRX-68N32N0,serial=WD-WCC7K0000001,wwn=0x50014ee2b0000001,pbs=4096",
	"sata-ssd:2G:model=Samsung SSD 870 EVO 1TB,serial=S6PNNX0R100001,wwn=0x5002538e40000001",
	"scsi:1G:vendor=SEAGATE,model=ST4000NM0023,serial=Z1Z00001,wwn=0x5000c50000000001,rpm=7200",
	"usb:1G:vendor=SanDisk,model=Ultra Fit,serial=4C530001234567",
}

// The plan: each disk chosen another way. The USB disk by serial in another
// case and vendor plus model, the SCSI disk by WWN in the naa. form.
const partitionPlan = `version: 1
disks:
  - select: {by_id: ata-Samsung_SSD_870_EVO_1TB_S6PNNX0R100001}
    partitions:
      - {size: 512M, fs: xfs, label: ssd1, mount: /mnt/ssd1}
      - {size: rest, fs: ext4, label: ssd2, mount: /mnt/ssd2, persist: true}
  - select: {wwn: naa.5000C50000000001}
    partitions:
      - {size: rest, fs: xfs, label: scsi1, mount: /mnt/scsi1}
  - select: {serial: 4c530001234567, model: SanDisk Ultra_Fit}
    partitions:
      - {size: rest, fs: ext4, label: usb1, mount: /mnt/usb1}
  - select: {path: /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME4K01, size: 500M-600M}
    partitions:
      - {size: rest, fs: xfs, label: nv4k, mount: /mnt/nv4k, persist: true}
`

const partitionScript = `set -u
mark() { echo "@@ $1"; }
# prep NAME DEVICE ARGS...: prepare DEVICE, its JSON, exit and --verbose log.
prep() {
	n=$1; shift
	diskprep prepare "$@" --yes -o json --verbose >/root/out 2>/root/err
	rc=$?
	mark $n.exit; echo $rc
	mark $n.json; cat /root/out
	mark $n.log; cat /root/err
}
prep sata /dev/disk/by-id/ata-WDC_WD40EFRX-68N32N0_WD-WCC7K0000001 --fs xfs --label satadata --mount /mnt/sata --persist
prep nvme /dev/nvme0n1 --fs ext4 --label nvmedata --mount /mnt/nvme
cat >/root/plan.yaml <<'PLAN'
` + partitionPlan + `PLAN
prep plan --plan /root/plan.yaml
cp /etc/fstab /root/fstab.1
prep replan --plan /root/plan.yaml
mark fstab.same; cmp /etc/fstab /root/fstab.1 && echo yes
mark fstab; cat /etc/fstab
mark by-id
for s in ata-WDC_WD40EFRX-68N32N0_WD-WCC7K0000001 nvme-QEMU_NVMe_Ctrl_NVME0001 ata-Samsung_SSD_870_EVO_1TB_S6PNNX0R100001 \
	wwn-0x5000c50000000001 usb-SanDisk_Ultra_Fit_4C530001234567-0:0 nvme-QEMU_NVMe_Ctrl_NVME4K01; do
	echo "$s $(readlink -f /dev/disk/by-id/$s)"
done
mark partitions; cat /proc/partitions
mark mounts; cat /proc/mounts
for p in $(awk '$4 ~ /[0-9]$/ && $4 !~ /^(loop|vda)/ {print $4}' /proc/partitions); do
	mark udev.$p; udevadm info --query=property --name=/dev/$p
done
mark links; cd /dev/disk && for d in by-uuid by-partlabel by-label by-partuuid; do for l in $d/*; do echo "$l $(readlink -f $l)"; done; done
mark end
`

// prepareJSON is the part of prepare's -o json the scenarios read.
type prepareJSON struct {
	Device       string   `json:"device"`
	TableWritten bool     `json:"table_written"`
	Changed      bool     `json:"changed"`
	Notes        []string `json:"notes"`
	Partitions   []struct {
		Number     int    `json:"number"`
		Device     string `json:"device"`
		StartBytes int64  `json:"start_bytes"`
		SizeBytes  int64  `json:"size_bytes"`
		PartUUID   string `json:"part_uuid"`
		FS         string `json:"fs"`
		Label      string `json:"label"`
		UUID       string `json:"uuid"`
		Formatted  bool   `json:"formatted"`
		MountPoint string `json:"mount_point"`
		Mounted    bool   `json:"mounted"`
		FstabAdded bool   `json:"fstab_added"`
	} `json:"partitions"`
}

// The --verbose log lines that mean the kernel did not pick the partitions
// up from the table itself, or udev did not make a node.
var fallbackLog = regexp.MustCompile(`(?i)BLKPG|re-read partition table failed|create device node|udevadm settle failed`)

func TestScenarioPartitionPath(t *testing.T) {
	parallel(t)
	r := Run(t, Options{Disks: partitionDisks}, "sh", "-c", partitionScript)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	byID := map[string]string{}
	for _, line := range strings.Split(out["by-id"], "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			byID[k] = v
		}
	}
	// /proc/partitions: name -> size in bytes.
	kernel := map[string]int64{}
	for _, line := range strings.Split(out["partitions"], "\n") {
		if f := strings.Fields(line); len(f) == 4 {
			if kib, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				kernel[f[3]] = kib << 10
			}
		}
	}
	links := map[string]string{}
	for _, line := range strings.Split(out["links"], "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			links[k] = v
		}
	}

	checked := 0
	// checkResults: the run succeeded, on the disks wanted, through the
	// kernel's own parser, and udev made what it makes for each partition.
	checkResults := func(name string, wantDev []string) []prepareJSON {
		t.Helper()
		if out[name+".exit"] != "0" {
			t.Fatalf("%s: exit %s\n%s", name, out[name+".exit"], out[name+".log"])
		}
		var doc struct {
			Schema string        `json:"schema"`
			Disks  []prepareJSON `json:"disks"`
		}
		decodeJSON(t, name, out[name+".json"], &doc)
		if doc.Schema != "diskprep/prepare/v2" {
			t.Fatalf("%s: schema %q, want diskprep/prepare/v2", name, doc.Schema)
		}
		res := doc.Disks
		if len(res) != len(wantDev) {
			t.Fatalf("%s: %d results, want %d", name, len(res), len(wantDev))
		}
		for _, line := range strings.Split(out[name+".log"], "\n") {
			if fallbackLog.MatchString(line) {
				t.Errorf("%s: the kernel's parser or udev did not do it all: %s", name, line)
			}
		}
		for i, p := range res {
			if p.Device != wantDev[i] {
				t.Errorf("%s: result %d is on %s, want %s (the disk its selector names)", name, i, p.Device, wantDev[i])
			}
			for _, n := range p.Notes {
				if strings.Contains(n, "BLKPG") {
					t.Errorf("%s: %s: %s", name, p.Device, n)
				}
			}
			for _, pp := range p.Partitions {
				part := strings.TrimPrefix(pp.Device, "/dev/")
				checked++
				if kernel[part] != pp.SizeBytes {
					t.Errorf("%s: the kernel has %s with %d bytes, want %d", name, part, kernel[part], pp.SizeBytes)
				}
				u := parseUdev(out["udev."+part])
				for k, want := range map[string]string{
					"ID_FS_UUID": pp.UUID, "ID_FS_TYPE": pp.FS, "ID_FS_LABEL": pp.Label,
					"ID_PART_ENTRY_NAME": pp.Label, "ID_PART_ENTRY_UUID": strings.ToLower(pp.PartUUID),
					"ID_PART_ENTRY_SCHEME": "gpt", "ID_PART_ENTRY_NUMBER": strconv.Itoa(pp.Number),
				} {
					if u[k] != want {
						t.Errorf("%s: udev says %s=%q of %s, want %q", name, k, u[k], part, want)
					}
				}
				for _, l := range []string{"by-uuid/" + pp.UUID, "by-partlabel/" + pp.Label, "by-label/" + pp.Label,
					"by-partuuid/" + strings.ToLower(pp.PartUUID)} {
					if links[l] != pp.Device {
						t.Errorf("%s: /dev/disk/%s points to %q, want %s", name, l, links[l], pp.Device)
					}
				}
				if !strings.Contains(out["mounts"], pp.Device+" "+pp.MountPoint+" "+pp.FS+" ") {
					t.Errorf("%s: %s is not mounted at %s", name, pp.Device, pp.MountPoint)
				}
			}
		}
		return res
	}

	for _, c := range []struct {
		name, dev, fs string
	}{
		{"sata", byID["ata-WDC_WD40EFRX-68N32N0_WD-WCC7K0000001"], "xfs"},
		{"nvme", "/dev/nvme0n1", "ext4"},
	} {
		res := checkResults(c.name, []string{c.dev})[0]
		if !res.TableWritten || !res.Changed || len(res.Partitions) != 1 || !res.Partitions[0].Formatted || res.Partitions[0].FS != c.fs {
			t.Errorf("%s: %+v, want a new table and one %s partition", c.name, res, c.fs)
		}
	}
	planDevs := []string{
		byID["ata-Samsung_SSD_870_EVO_1TB_S6PNNX0R100001"], byID["wwn-0x5000c50000000001"],
		byID["usb-SanDisk_Ultra_Fit_4C530001234567-0:0"], byID["nvme-QEMU_NVMe_Ctrl_NVME4K01"],
	}
	wantParts := []int{2, 1, 1, 1}
	for i, p := range checkResults("plan", planDevs) {
		if !p.TableWritten || !p.Changed || len(p.Partitions) != wantParts[i] {
			t.Errorf("plan: %s: table written %v, changed %v, %d partitions, want a new table with %d", p.Device, p.TableWritten, p.Changed, len(p.Partitions), wantParts[i])
		}
	}
	for _, p := range checkResults("replan", planDevs) {
		if p.TableWritten || p.Changed {
			t.Errorf("the plan run again changed %s: %+v", p.Device, p)
		}
		for _, pp := range p.Partitions {
			if pp.Formatted || pp.Mounted || pp.FstabAdded {
				t.Errorf("the plan run again redid %s: %+v", pp.Device, pp)
			}
		}
	}
	t.Logf("%d partitions checked against /proc/partitions, udev's properties, /dev/disk links and mounts", checked)
	if out["fstab.same"] != "yes" {
		t.Errorf("the plan run again changed /etc/fstab:\n%s", out["fstab"])
	}
	// Three persisted partitions, one line each, by UUID, nofail.
	if n := len(regexp.MustCompile(`(?m)^UUID=\S+\t/mnt/(sata|ssd2|nv4k)\t(xfs|ext4)\tdefaults,nofail\t`).FindAllString(out["fstab"], -1)); n != 3 {
		t.Errorf("/etc/fstab has %d diskprep lines, want 3 (sata, ssd2, nv4k):\n%s", n, out["fstab"])
	}
}
