package guesttest

import (
	"regexp"
	"strings"
	"testing"
)

// Issue 14 on a real kernel (md, device-mapper, LVM, udev, systemd): the
// "done when" plan, a RAID1 data mirror of two SATA disks with xfs, an
// LVM volume group across two disks with two volumes and a swap partition
// on the NVMe disk, applied in one command; rerun as a no-op; a disk
// already in another array refused; and after a reboot (systemd as PID 1,
// the fstab lines doing the mounting) everything mounted and swap active,
// the rerun still a no-op; then each stack released with --wipe, and
// release --wipe of one disk of an inactive group across two refused.
// One call,
// two boots (about 40 s under TCG).

const stacksPlan = `version: 1
disks:
  - select: {serial: RAIDA}
    partitions: [{size: rest, use: raid:data}]
  - select: {serial: RAIDB}
    partitions: [{size: rest, use: raid:data}]
  - select: {transport: nvme}
    partitions:
      - {size: 64M, fs: swap, persist: true}
      - {size: rest, use: lvm:fast}
  - select: {serial: LVMB}
    partitions: [{size: rest, use: lvm:fast}]
raid:
  - name: data
    level: 1
    filesystem: {fs: xfs, label: data, mount: /data, persist: true}
lvm:
  - vg: fast
    volumes:
      - {name: scratch, size: 400M, fs: ext4, mount: /scratch, persist: true}
      - {name: vm, size: rest, fs: xfs, mount: /var/lib/vm, persist: true}
`

const stacksScript = `set -u
mark() { echo "@@ $DISKPREP_GUEST_BOOT.$1"; }
byid=/dev/disk/by-id/ata-QEMU_HARDDISK_
if [ "$DISKPREP_GUEST_BOOT" = 1 ]; then
	cat >/root/plan.yaml <<'PLAN'
` + stacksPlan + `PLAN
	diskprep prepare --plan /root/plan.yaml --dry-run >/root/dry 2>&1
	rc=$?
	mark dry.exit; echo $rc
	mark dry; cat /root/dry
	diskprep prepare --plan /root/plan.yaml --yes -o json >/root/out 2>/root/err
	rc=$?
	mark apply.exit; echo $rc
	mark apply.stderr; cat /root/err
	mark apply.json; cat /root/out
	# A disk that is in another array already: refused, named.
	mdadm --create /dev/md/other --run --level=1 --raid-devices=2 --metadata=1.2 ${byid}OTHER1 missing >/dev/null 2>&1
	udevadm settle
	diskprep prepare ${byid}OTHER1 ${byid}OTHER2 --raid 1 --name two --fs xfs --yes >/root/out 2>/root/err
	rc=$?
	mark other.exit; echo $rc
	mark other.stderr; tail -n 1 /root/err
	mdadm --stop /dev/md/other >/dev/null 2>&1
	mdadm --zero-superblock ${byid}OTHER1 >/dev/null 2>&1
else
	# The fstab lines are nofail: the boot does not wait for them, and
	# the volumes are activated (udev, lvm autoactivation) and mounted a
	# little after the guest's command starts.
	udevadm settle
	for _ in $(seq 1 120); do
		findmnt /data >/dev/null && findmnt /scratch >/dev/null && findmnt /var/lib/vm >/dev/null &&
			[ "$(tail -n +2 /proc/swaps | wc -l)" -gt 0 ] && break
		sleep 0.5
	done
fi
mark pid1; cat /proc/1/comm
mark mdstat; cat /proc/mdstat
mark level; cat /sys/block/md*/md/level
mark lvs; lvs --noheadings -o vg_name,lv_name | awk '{print $1"/"$2}' | sort
mark mounts; for p in /data /scratch /var/lib/vm; do findmnt -n -r -o TARGET,FSTYPE "$p"; done
mark swaps; tail -n +2 /proc/swaps | awk '{print $2}'
mark fstab; grep -v '^#' /etc/fstab | awk 'NF {print $2, $3, $4}' | sort
mark mdadm.conf; grep '^ARRAY' /etc/mdadm/mdadm.conf
diskprep prepare --plan /root/plan.yaml --yes >/root/out 2>/root/err
rc=$?
mark rerun.exit; echo $rc
mark rerun; cat /root/out /root/err
if [ "$DISKPREP_GUEST_BOOT" = 2 ]; then
	# Release every stack with --wipe: the disks are left blank.
	diskprep release ${byid}RAIDA --wipe --dry-run >/root/out 2>&1
	mark release.dry; cat /root/out
	diskprep release ${byid}RAIDA --wipe >/root/out 2>&1
	rc=$?
	mark release.raid.exit; echo $rc
	mark release.raid; cat /root/out
	diskprep release /scratch --wipe >/root/out 2>&1
	rc=$?
	mark release.lvm.exit; echo $rc
	mark release.lvm; cat /root/out
	nvme=$(ls /dev/nvme?n1)
	diskprep release $nvme --wipe >/root/out 2>&1
	rc=$?
	mark release.nvme.exit; echo $rc
	mark release.nvme; cat /root/out
	mark after.mdstat; grep ^md /proc/mdstat
	mark after.lvs; lvs --noheadings 2>/dev/null
	mark after.swaps; tail -n +2 /proc/swaps
	mark after.mounts; grep -E ' /(data|scratch|var/lib/vm) ' /proc/mounts
	mark after.fstab; grep -v '^#' /etc/fstab | grep -E 'swap|/data|/scratch|/var/lib/vm'
	mark after.mdadm.conf; grep '^ARRAY' /etc/mdadm/mdadm.conf
	mark after.signatures
	for d in ${byid}RAIDA ${byid}RAIDB ${byid}LVMB $nvme; do
		d=$(readlink -f $d)
		wipefs --no-act $d $d?* 2>/dev/null | tail -n +2
	done
	# A group that is not active (as a release without --wipe leaves
	# it; here one without volumes, made by hand on the whole disks,
	# which is quicker under TCG than a prepare and a release) across two
	# disks: release --wipe of one is refused in one line, nothing
	# written (the fake tier removes such a group the way the refusal
	# says; this checks what the real pvs shows is read the same way).
	t0=$(cut -d' ' -f1 /proc/uptime)
	o1=$(readlink -f ${byid}OTHER1); o2=$(readlink -f ${byid}OTHER2)
	{ pvcreate -q $o1 $o2 && vgcreate -q span $o1 $o2; } >/root/out 2>&1 || cat /root/out
	diskprep release ${byid}OTHER1 --wipe >/root/out 2>&1
	rc=$?
	mark span.refused.exit; echo $rc
	mark span.refused; cat /root/out
	mark span.after; pvs --noheadings -o pv_name,vg_name 2>&1 | awk '{print $2}'
	mark span.seconds; echo "$t0 $(cut -d' ' -f1 /proc/uptime)" | awk '{print $2 - $1}'
fi
mark end
`

func TestScenarioStacks(t *testing.T) {
	parallel(t)
	opt := Options{
		Disks: []string{
			"sata-ssd:1G:serial=RAIDA",
			"sata-ssd:1G:serial=RAIDB",
			"nvme:1G:serial=NVMEA",
			"sata-ssd:1G:serial=LVMB",
			"sata-ssd:256M:serial=OTHER1",
			"sata-ssd:256M:serial=OTHER2",
		},
		State:   t.TempDir(),
		Boots:   2,
		Systemd: true,
	}
	r := Run(t, opt, "sh", "-c", stacksScript)
	out := splitMarked(r.Stdout)
	t.Logf("guest stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	if _, ok := out["2.end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish both boots (exit %d)", r.ExitCode)
	}
	if out["1.dry.exit"] != "0" || !strings.Contains(out["1.dry"], "mdadm --create /dev/md/data --run --metadata=1.2 --name=data --level=1 --raid-devices=2") ||
		!strings.Contains(out["1.dry"], "vgcreate --physicalextentsize 4096k fast") || !strings.Contains(out["1.dry"], "dry run: nothing was changed") {
		t.Errorf("dry run (exit %s):\n%s", out["1.dry.exit"], out["1.dry"])
	}
	if out["1.apply.exit"] != "0" {
		t.Fatalf("prepare --plan: exit %s: %s", out["1.apply.exit"], out["1.apply.stderr"])
	}
	for _, want := range []string{`"mdadm_version": "mdadm - v4`, `"lvm_version": "LVM version:`, `"conf_file": "/etc/mdadm/mdadm.conf"`, `"created": true`} {
		if !strings.Contains(out["1.apply.json"], want) {
			t.Errorf("the result does not record %s:\n%s", want, out["1.apply.json"])
		}
	}
	if out["1.other.exit"] != "3" || !regexp.MustCompile(`refusing to prepare sd[a-z]+: sd[a-z]+ is held by md md\d+`).MatchString(out["1.other.stderr"]) {
		t.Errorf("a disk in another array: exit %s, %s", out["1.other.exit"], out["1.other.stderr"])
	}
	for _, boot := range []string{"1", "2"} {
		// The --systemd root: systemd is PID 1, and it mounts the fstab
		// lines of boot 1 in boot 2 (below).
		if out[boot+".pid1"] != "systemd" {
			t.Errorf("boot %s: PID 1 is %q, want systemd", boot, out[boot+".pid1"])
		}
		if out[boot+".level"] != "raid1" {
			t.Errorf("boot %s: md levels %q, want one raid1", boot, out[boot+".level"])
		}
		if out[boot+".lvs"] != "fast/scratch\nfast/vm" {
			t.Errorf("boot %s: logical volumes %q", boot, out[boot+".lvs"])
		}
		if got := out[boot+".mounts"]; got != "/data xfs\n/scratch ext4\n/var/lib/vm xfs" {
			t.Errorf("boot %s: mounts %q", boot, got)
		}
		if out[boot+".swaps"] != "partition" {
			t.Errorf("boot %s: swap areas %q, want one partition", boot, out[boot+".swaps"])
		}
		for _, want := range []string{"/data xfs defaults,nofail", "/scratch ext4 defaults,nofail", "none swap defaults,nofail"} {
			if !strings.Contains(out[boot+".fstab"], want) {
				t.Errorf("boot %s: fstab has no %q line:\n%s", boot, want, out[boot+".fstab"])
			}
		}
		if !strings.HasPrefix(out[boot+".mdadm.conf"], "ARRAY /dev/md/data metadata=1.2 UUID=") {
			t.Errorf("boot %s: mdadm.conf %q", boot, out[boot+".mdadm.conf"])
		}
		if out[boot+".rerun.exit"] != "0" || !strings.Contains(out[boot+".rerun"], "already prepared as asked: nothing changed") ||
			strings.Contains(out[boot+".rerun"], "Prepared ") {
			t.Errorf("boot %s: rerun (exit %s) is not a no-op:\n%s", boot, out[boot+".rerun.exit"], out[boot+".rerun"])
		}
	}

	// release --wipe of each stack: dry run first, then the real thing,
	// in reverse; nothing of the stacks left, every disk signature-free.
	for _, want := range []string{"would unmount /data", "would run: mdadm --stop /dev/md", "would run: mdadm --zero-superblock", "would run: wipefs --all", "(diskprep's: a member of md "} {
		if !strings.Contains(out["2.release.dry"], want) {
			t.Errorf("release --dry-run does not say %q:\n%s", want, out["2.release.dry"])
		}
	}
	// The guard knows the array as diskprep's on the real kernel: no
	// question, no --yes.
	if strings.Contains(out["2.release.dry"], "not made by diskprep") {
		t.Errorf("release --dry-run of diskprep's own array asks first:\n%s", out["2.release.dry"])
	}
	for _, k := range []string{"raid", "lvm", "nvme"} {
		if out["2.release."+k+".exit"] != "0" {
			t.Errorf("release --wipe (%s): exit %s:\n%s", k, out["2.release."+k+".exit"], out["2.release."+k])
		}
	}
	for _, k := range []string{"mdstat", "lvs", "swaps", "mounts", "fstab", "mdadm.conf", "signatures"} {
		if v := out["2.after."+k]; v != "" {
			t.Errorf("after release --wipe, %s still shows:\n%s", k, v)
		}
	}

	// release --wipe of a disk of an inactive group across two disks:
	// refused in one line, nothing written.
	refused := out["2.span.refused"]
	if out["2.span.refused.exit"] != "3" || strings.Contains(refused, "\n") ||
		!regexp.MustCompile(`refusing to wipe \S+: /dev/sd[a-z]+ is a physical volume of the inactive vg span, which is also on /dev/sd[a-z]+, not released: wiping only this would break the group there; to remove all of it, remove it by hand \(vgremove span, then pvremove each\)$`).MatchString(refused) {
		t.Errorf("release --wipe of one disk of an inactive group: exit %s, %q", out["2.span.refused.exit"], refused)
	}
	if got := out["2.span.after"]; got != "span\nspan" {
		t.Errorf("after the refusal, pvs shows groups %q, want span on both disks", got)
	}
	t.Logf("the inactive group's refusal took %s s in the guest", out["2.span.seconds"])
}
