package guesttest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// Scenario d of issue 10: persistence across reboots, with systemd as PID
// 1 and the guest's root (so /etc/fstab) on a disk kept under --state.
// Three calls of the guest share that state: prepare --persist on two disks
// and a boot that mounts both from fstab; a boot with one disk gone; and,
// after release, a boot with both disks back that mounts nothing.
//
// With them, issue 14's degraded RAID1: a mirror of two more disks made
// with --raid 1 --persist in the first boot and mounted from fstab in the
// second; in the third one member is gone, and the array still assembles
// (degraded: mdadm's last-resort timer starts it, shortened from 30 s),
// its file system mounts (nofail), and diskprep inventory says degraded in
// its table and its JSON; release then lets it go with the others.

// rebootLib finds a disk by serial and prints what the Go side judges
// between "@@ NAME" lines.
const rebootLib = `set -u
mark() { echo "@@ $1"; }
disk() { lsblk -dnpo PATH,SERIAL | awk -v s="$1" '$2 == s {print $1}'; }
parts() { lsblk -lnpo PATH,TYPE "$(disk "$1")" | awk '$2 == "part" {print $1}'; }
# The command runs once basic.target is reached, and local-fs.target does
# not wait for nofail mounts: give them time to come up.
waitactive() {
	for u in "$@"; do
		i=0
		while [ $i -lt 150 ] && ! systemctl is-active -q "$u"; do sleep 0.2; i=$((i + 1)); done
	done
}
units() { # the mount units' state: loaded/active, and where systemd read them
	for u in data1.mount data2.mount mirror.mount; do
		echo "$u $(systemctl show -p LoadState --value $u) $(systemctl show -p ActiveState --value $u) $(systemctl show -p SourcePath --value $u)"
	done
}
`

const rebootPrepare = rebootLib + `
if [ "$DISKPREP_GUEST_BOOT" = 1 ]; then
	mark pid1; cat /proc/1/comm
	d1=$(disk PERSIST1) d2=$(disk PERSIST2)
	diskprep prepare "$d1" --fs xfs --mount /data1 --persist --yes >/root/out 2>&1
	rc1=$?
	diskprep prepare "$d2" --fs ext4 --mount /data2 --persist --yes >>/root/out 2>&1
	rc2=$?
	diskprep prepare "$(disk MIRROR1)" "$(disk MIRROR2)" --raid 1 --name mirror --fs ext4 --mount /mirror --persist --yes >>/root/out 2>&1
	rc3=$?
	mark prepare; echo "$rc1 $rc2 $rc3"; cat /root/out
	echo one >/data1/kept; echo two >/data2/kept; echo three >/mirror/kept
	# mdadm starts an array a member short 30 s after its other members
	# appeared (in case the rest are slow to come); 3 s here, the same
	# units otherwise.
	mkdir -p /etc/systemd/system/mdadm-last-resort@.timer.d
	printf '[Timer]\nOnActiveSec=\nOnActiveSec=3\n' >/etc/systemd/system/mdadm-last-resort@.timer.d/quick.conf
	# Loaded from /etc/fstab only if the fstab generator ran after the
	# lines were added: that is, prepare ran systemctl daemon-reload.
	mark units.1; units
	mark fstab.1; grep -c '^UUID=.*nofail' /etc/fstab
	exit 0
fi
waitactive data1.mount data2.mount mirror.mount
mark units.2; units
mark mounts.2; findmnt -n -o TARGET,SOURCE,FSTYPE /data1; findmnt -n -o TARGET,SOURCE,FSTYPE /data2
mark sources.2; parts PERSIST1; parts PERSIST2
mark kept.2; cat /data1/kept /data2/kept /mirror/kept
mark mirror.2; cat /sys/block/md*/md/degraded
mark end
`

// Disk 1 is gone: the boot must still reach the command (nofail), with the
// other disk mounted; then release both mount points, the absent disk's too.
const rebootMissing = rebootLib + `
waitactive data2.mount
mark reached; echo yes
# The mirror, one member short, is started by mdadm-last-resort@.timer.
i=0
while [ $i -lt 600 ] && ! systemctl is-active -q mirror.mount; do sleep 0.2; i=$((i + 1)); done
mark units.3; units
mark mounts.3; findmnt -n -o TARGET /data1; findmnt -n -o TARGET /data2; findmnt -n -o TARGET,FSTYPE /mirror
mark kept.3; cat /mirror/kept
mark mdstat.3; grep -A1 '^md' /proc/mdstat | grep -o '\[[0-9]/[0-9]\] \[[U_]*\]'
mark inventory.3; diskprep inventory --no-color
mark inventory.json.3; diskprep inventory -o json
diskprep release /data2 >/root/out 2>&1
rc2=$?
diskprep release /data1 >>/root/out 2>&1
rc1=$?
diskprep release /mirror >>/root/out 2>&1
rc3=$?
mark release; echo "$rc1 $rc2 $rc3"; cat /root/out
mark fstab.3; grep -c '^UUID=' /etc/fstab
mark end
`

// Both disks back after release: nothing is mounted from them.
const rebootReleased = rebootLib + `
sleep 2
mark units.4; units
mark mounts.4; findmnt -n -o TARGET,SOURCE /data1; findmnt -n -o TARGET,SOURCE /data2; findmnt -n -o TARGET,SOURCE /mirror
mark fstab.4; grep -c '^UUID=' /etc/fstab; grep -c 'diskprep' /etc/fstab
mark disks.4; lsblk -no SERIAL,FSTYPE "$(disk PERSIST1)" "$(disk PERSIST2)" | awk 'NF {$1 = $1; print}'
mark end
`

func TestScenarioPersistAcrossReboots(t *testing.T) {
	parallel(t)
	state := t.TempDir()
	d1 := "sata-ssd:1G:serial=PERSIST1,name=persist1"
	d2 := "nvme:1G:serial=PERSIST2,name=persist2"
	m1 := "sata-ssd:256M:serial=MIRROR1,name=mirror1"
	m2 := "sata-ssd:256M:serial=MIRROR2,name=mirror2"
	run := func(step string, disks []string, boots int, script string) map[string]string {
		t.Helper()
		r := Run(t, Options{Disks: disks, State: state, Boots: boots, Systemd: true}, "sh", "-c", script)
		out := splitMarked(r.Stdout)
		if _, ok := out["end"]; !ok || r.ExitCode != 0 {
			t.Fatalf("%s: the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", step, r.ExitCode, r.Stdout, r.Stderr)
		}
		t.Logf("%s (%.1fs):\n%s", step, r.Elapsed.Seconds(), r.Stdout)
		return out
	}
	want := func(out map[string]string, key, value string) {
		t.Helper()
		if out[key] != value {
			t.Errorf("%s:\n%s\nwant:\n%s", key, out[key], value)
		}
	}

	out := run("prepare, reboot", []string{d1, d2, m1, m2}, 2, rebootPrepare)
	want(out, "pid1", "systemd")
	if !strings.HasPrefix(out["prepare"], "0 0 0\n") {
		t.Fatalf("prepare --persist: exit codes and output:\n%s", out["prepare"])
	}
	allActive := "data1.mount loaded active /etc/fstab\ndata2.mount loaded active /etc/fstab\nmirror.mount loaded active /etc/fstab"
	want(out, "units.1", allActive)
	want(out, "fstab.1", "3")
	want(out, "units.2", allActive)
	src := strings.Fields(out["sources.2"])
	if len(src) != 2 {
		t.Fatalf("partition paths: %q", out["sources.2"])
	}
	want(out, "mounts.2", "/data1 "+src[0]+" xfs\n/data2 "+src[1]+" ext4")
	want(out, "kept.2", "one\ntwo\nthree")
	want(out, "mirror.2", "0")

	out = run("disk 1 and a mirror's member removed", []string{d2, m1}, 1, rebootMissing)
	want(out, "reached", "yes")
	if !strings.HasPrefix(out["units.3"], "data1.mount loaded inactive /etc/fstab\n") ||
		!strings.HasSuffix(out["units.3"], "\ndata2.mount loaded active /etc/fstab\nmirror.mount loaded active /etc/fstab") {
		t.Errorf("units with disk 1 and a mirror's member gone:\n%s", out["units.3"])
	}
	want(out, "mounts.3", "/data2\n/mirror ext4")
	want(out, "kept.3", "three")
	// One member of two up; which slot it holds depends on the names
	// the kernel gave the disks when the array was made (members go in
	// by path, and SATA disks are probed in parallel).
	if got := out["mdstat.3"]; got != "[2/1] [U_]" && got != "[2/1] [_U]" {
		t.Errorf("mdstat.3:\n%s\nwant [2/1] with one member up", got)
	}
	if !regexp.MustCompile(`(?m)^md\d+\s.*\braid1\b.*degraded, 1 missing`).MatchString(out["inventory.3"]) {
		t.Errorf("the inventory table does not say the mirror is degraded:\n%s", out["inventory.3"])
	}
	var inv struct {
		Arrays []struct {
			ArrayName      string `json:"array_name"`
			Level          string `json:"level"`
			Degraded       bool   `json:"degraded"`
			MissingDevices int    `json:"missing_devices"`
		} `json:"arrays"`
	}
	if err := json.Unmarshal([]byte(out["inventory.json.3"]), &inv); err != nil {
		t.Errorf("inventory -o json: %v\n%s", err, out["inventory.json.3"])
	}
	if len(inv.Arrays) != 1 || !strings.HasSuffix(inv.Arrays[0].ArrayName, "mirror") || inv.Arrays[0].Level != "raid1" ||
		!inv.Arrays[0].Degraded || inv.Arrays[0].MissingDevices != 1 {
		t.Errorf("inventory -o json arrays: %+v", inv.Arrays)
	}
	if !strings.HasPrefix(out["release"], "0 0 0\n") {
		t.Errorf("release of the mount points, disk 1 and a mirror's member absent: exit codes and output:\n%s", out["release"])
	}
	want(out, "fstab.3", "0")

	out = run("released, all disks back", []string{d1, d2, m1, m2}, 1, rebootReleased)
	want(out, "mounts.4", "")
	want(out, "fstab.4", "0\n0")
	for _, l := range strings.Split(out["units.4"], "\n") {
		if f := strings.Fields(l); len(f) < 3 || f[1] != "not-found" || f[2] != "inactive" {
			t.Errorf("a mount unit is still there after release: %s", l)
		}
	}
	// The file systems are still on the disks: release unmounts and
	// forgets, it does not wipe.
	want(out, "disks.4", "PERSIST1\nxfs\nPERSIST2\next4")
}
