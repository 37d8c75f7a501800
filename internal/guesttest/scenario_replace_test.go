package guesttest

import (
	"strings"
	"testing"
)

// Issue 24 item 3 on a real kernel: a RAID1 made by prepare loses a disk
// (the kernel drops the SATA device, as when a drive dies or is pulled),
// inventory shows it degraded, and diskprep replace puts a blank disk in
// its place: partitioned like the remaining member, the failed member
// removed, the new one added, the rebuild followed to its end. The file
// written before reads back the same, the mdadm.conf and fstab lines are
// unchanged, inventory shows the array whole, and a second replace is
// refused (nothing missing).

var replaceDisks = []string{"sata-hdd:512M:serial=RPA", "sata-hdd:512M:serial=RPB", "sata-hdd:512M:serial=RPC", "sata-hdd:256M:serial=RPSMALL"}

const replaceScript = `set -u
mark() { echo "@@ $1"; }
id() { readlink -f "/dev/disk/by-id/ata-QEMU_HARDDISK_$1"; }
A=$(id RPA) B=$(id RPB) C=$(id RPC) S=$(id RPSMALL)
echo 100000 >/proc/sys/dev/raid/speed_limit_min
mark made; diskprep prepare "$A" "$B" --raid 1 --fs xfs --mount /data --persist --yes >/dev/null 2>&1; echo "exit $?"
mdadm --wait /dev/md/data >/dev/null 2>&1
dd if=/dev/urandom of=/data/f bs=1M count=16 2>/dev/null && sync
mark sum1; md5sum </data/f
conf=/etc/mdadm/mdadm.conf; [ -e "$conf" ] || conf=/etc/mdadm.conf
mark conf1; grep '^ARRAY' "$conf"
mark fstab1; awk '$2 == "/data"' /etc/fstab
echo 1 >"/sys/block/${B##*/}/device/delete"
sleep 1; udevadm settle
mark degraded; diskprep inventory -o json
mark small; diskprep replace /dev/md/data --with "$S" --dry-run 2>&1; echo "exit $?"
mark dry; diskprep replace /dev/md/data --with "$C" --dry-run 2>&1; echo "exit $?"
mark replace; diskprep replace /dev/md/data --with "$C" --yes 2>&1; echo "exit $?"
mark whole; diskprep inventory -o json
mark again; diskprep replace /dev/md/data --with "$C" --yes 2>&1; echo "exit $?"
echo 3 >/proc/sys/vm/drop_caches
mark sum2; md5sum </data/f
mark conf2; grep '^ARRAY' "$conf"
mark fstab2; awk '$2 == "/data"' /etc/fstab
mark end
`

func TestScenarioReplaceMirrorMember(t *testing.T) {
	parallel(t)
	out := runMarked(t, replaceDisks, replaceScript)
	exit := func(step string) string { return lastLine(out[step]) }
	for step, want := range map[string]string{"made": "exit 0", "small": "exit 3", "dry": "exit 0", "replace": "exit 0", "again": "exit 3"} {
		if got := exit(step); got != want {
			t.Errorf("%s: %s, want %s:\n%s", step, got, want, out[step])
		}
	}
	type inv struct {
		Arrays []struct {
			Degraded bool
			Members  []struct{ Device, Role string }
		}
	}
	var before, after inv
	decodeJSON(t, "degraded", out["degraded"], &before)
	decodeJSON(t, "whole", out["whole"], &after)
	if len(before.Arrays) != 1 || !before.Arrays[0].Degraded {
		t.Errorf("inventory before the replace: %+v, want one degraded array", before.Arrays)
	}
	if len(after.Arrays) != 1 || after.Arrays[0].Degraded {
		t.Errorf("inventory after the replace: %+v, want the array whole", after.Arrays)
	}
	for _, w := range []string{"the new member is made like", "mdadm --manage", "--add", "dry run: nothing was changed"} {
		if !strings.Contains(out["dry"], w) {
			t.Errorf("the dry run does not say %q:\n%s", w, out["dry"])
		}
	}
	if !strings.Contains(out["small"], "too small") {
		t.Errorf("a smaller disk: %s", out["small"])
	}
	if !strings.Contains(out["replace"], "the array is whole again") {
		t.Errorf("replace said:\n%s", out["replace"])
	}
	if !strings.Contains(out["again"], "every member working") {
		t.Errorf("a second replace: %s", out["again"])
	}
	for _, k := range []string{"sum", "conf", "fstab"} {
		if out[k+"1"] == "" || out[k+"1"] != out[k+"2"] {
			t.Errorf("%s changed: %q -> %q", k, out[k+"1"], out[k+"2"])
		}
	}
	t.Logf("replace:\n%s", out["replace"])
}

// The same across two boots, with the drive gone from the machine: boot 1
// makes the mirror and a file; boot 2 starts without the second disk's
// QEMU drive and with a blank one. md assembled the array inactive (a
// member missing at assembly), inventory shows it without a warning,
// replace refuses it with the one command to run, and once it runs
// degraded, replace makes it whole; the file, mounted from its fstab
// line, reads back the same.

const acrossBootOne = `set -u
A=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_XBA) B=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_XBB)
echo 100000 >/proc/sys/dev/raid/speed_limit_min
diskprep prepare "$A" "$B" --raid 1 --fs xfs --mount /data --persist --yes >/dev/null 2>&1 || echo "@@ prepare-failed"
mdadm --wait /dev/md/data >/dev/null 2>&1
dd if=/dev/urandom of=/data/f bs=1M count=8 2>/dev/null && sync
echo "@@ sum"; md5sum </data/f
umount /data
echo "@@ end"
`

const acrossBootTwo = `set -u
mark() { echo "@@ $1"; }
C=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_XBC)
udevadm settle
md=$(basename "$(ls -d /sys/block/md* | head -n 1)")
mark mdstat; cat /proc/mdstat
mark inventory-warnings; diskprep inventory 2>&1 >/dev/null
mark inactive; diskprep replace "/dev/$md" --with "$C" --yes 2>&1; echo "exit $?"
mdadm --run "/dev/$md" >/dev/null 2>&1; udevadm settle
mark degraded; diskprep inventory -o json
mark replace; diskprep replace /dev/md/data --with "$C" --yes 2>&1; echo "exit $?"
mark whole; diskprep inventory -o json
mount /data
mark sum; md5sum </data/f
mark end
`

func TestScenarioReplaceAcrossBoots(t *testing.T) {
	parallel(t)
	state := t.TempDir()
	d := func(name string) string { return "sata-hdd:512M:serial=" + strings.ToUpper(name) + ",name=" + name }
	one := runMarkedOpts(t, Options{Disks: []string{d("xba"), d("xbb"), d("xbc")}, State: state}, acrossBootOne)
	if _, failed := one["prepare-failed"]; failed {
		t.Fatalf("boot 1: prepare failed")
	}
	two := runMarkedOpts(t, Options{Disks: []string{d("xba"), d("xbc")}, State: state}, acrossBootTwo)
	if !strings.Contains(two["mdstat"], "inactive") {
		t.Errorf("boot 2: the array is not inactive:\n%s", two["mdstat"])
	}
	if w := strings.TrimSpace(two["inventory-warnings"]); w != "" {
		t.Errorf("inventory of an inactive array warned: %s", w)
	}
	if lastLine(two["inactive"]) != "exit 3" || !strings.Contains(two["inactive"], "mdadm --run") {
		t.Errorf("replace of the inactive array: %s", two["inactive"])
	}
	if lastLine(two["replace"]) != "exit 0" || !strings.Contains(two["replace"], "the array is whole again") {
		t.Errorf("replace: %s", two["replace"])
	}
	type inv struct{ Arrays []struct{ Degraded bool } }
	var before, after inv
	decodeJSON(t, "degraded", two["degraded"], &before)
	decodeJSON(t, "whole", two["whole"], &after)
	if len(before.Arrays) != 1 || !before.Arrays[0].Degraded || len(after.Arrays) != 1 || after.Arrays[0].Degraded {
		t.Errorf("inventory: before %+v, after %+v; want degraded, then whole", before.Arrays, after.Arrays)
	}
	if one["sum"] == "" || one["sum"] != two["sum"] {
		t.Errorf("the file changed across the replace: %q -> %q", one["sum"], two["sum"])
	}
}

// RAID5 the same way: three members, one dropped by the kernel, a blank
// disk put in its place and rebuilt from the parity; and a replace killed
// (SIGKILL, the crashtest build's crash points) at each of its steps in
// turn, each run starting from what the one before it left. Killed with
// only the backup GPT written, the disk is refused as damaged, naming
// --wipe, as prepare refuses it (internal/crashtest); with --wipe it is
// made again and killed with the GPT written; without, the table is
// recognised, and the run is killed with the partition registered, then
// with the member added. The run after the last kill, without the hook,
// completes the replace: the array whole, the file the same.

const replaceRAID5Script = `set -u
mark() { echo "@@ $1"; }
id() { readlink -f "/dev/disk/by-id/ata-QEMU_HARDDISK_$1"; }
D=$(id R5A) E=$(id R5B) F=$(id R5C) G=$(id R5NEW)
echo 100000 >/proc/sys/dev/raid/speed_limit_min
mark made; diskprep prepare "$D" "$E" "$F" --raid 5 --name r5 --fs ext4 --mount /r5 --yes >/dev/null 2>&1; echo "exit $?"
mdadm --wait /dev/md/r5 >/dev/null 2>&1
dd if=/dev/urandom of=/r5/f bs=1M count=16 2>/dev/null && sync
mark sum1; md5sum </r5/f
echo 1 >"/sys/block/${E##*/}/device/delete"
sleep 1; udevadm settle
kill_at() { # POINT [FLAG]
	DISKPREP_TEST_CRASH_AT=$1 diskprep replace /dev/md/r5 --with "$G" --yes ${2:-} >/root/out 2>&1
	rc=$?
	mark "killed.$1"; echo $rc; [ $rc = 137 ] || tail -n 5 /root/out
	state "$1"
}
state() { # what the disk and the kernel hold after a step, for the log
	mark "state.$1"; blkid -p -o export "$G" 2>&1 | grep -E '^(PTTYPE|PTUUID)='
	ls "/sys/block/${G##*/}" | grep "^${G##*/}" | tr '\n' ' '; echo
}
kill_at gpt-backup
mark damaged; diskprep replace /dev/md/r5 --with "$G" --yes 2>&1; echo "exit $?"
state damaged
kill_at gpt-written --wipe
kill_at partitions-registered
kill_at md-added
mark replace; diskprep replace /dev/md/r5 --with "$G" --yes 2>&1; echo "exit $?"
mark whole; diskprep inventory -o json
echo 3 >/proc/sys/vm/drop_caches
mark sum2; md5sum </r5/f
mark end
`

func TestScenarioReplaceRAID5Member(t *testing.T) {
	parallel(t)
	opt := Options{
		Disks: []string{"sata-hdd:256M:serial=R5A", "sata-hdd:256M:serial=R5B", "sata-hdd:256M:serial=R5C", "sata-hdd:256M:serial=R5NEW"},
		Env:   []string{"DISKPREP_GUEST_DISKPREP=" + crashtestBinary(t)},
	}
	out := runMarkedOpts(t, opt, replaceRAID5Script)
	for _, p := range []string{"gpt-backup", "gpt-written", "partitions-registered", "md-added"} {
		if got := out["killed."+p]; got != "137" {
			t.Errorf("replace was not killed at %s (exit %s)", p, got)
		}
	}
	if d := out["damaged"]; lastLine(d) != "exit 3" || !strings.Contains(d, "damaged") || !strings.Contains(d, "--wipe") {
		t.Errorf("the rerun after the kill at gpt-backup:\n%s\nwant refused (exit 3) as damaged, naming --wipe", d)
	}
	t.Logf("after the kill at gpt-backup:\n%s\nreplace after the last kill:\n%s", out["damaged"], out["replace"])
	for _, p := range []string{"gpt-backup", "damaged", "gpt-written", "partitions-registered", "md-added"} {
		t.Logf("the new disk after %s: %s", p, strings.TrimSpace(out["state."+p]))
	}
	if lastLine(out["made"]) != "exit 0" || lastLine(out["replace"]) != "exit 0" || !strings.Contains(out["replace"], "the array is whole again") {
		t.Errorf("made: %s\nreplace: %s", out["made"], out["replace"])
	}
	var inv struct {
		Arrays []struct {
			Level    string
			Degraded bool
		}
	}
	decodeJSON(t, "whole", out["whole"], &inv)
	if len(inv.Arrays) != 1 || inv.Arrays[0].Level != "raid5" || inv.Arrays[0].Degraded {
		t.Errorf("inventory after the replace: %+v, want raid5, whole", inv.Arrays)
	}
	if out["sum1"] == "" || out["sum1"] != out["sum2"] {
		t.Errorf("the file changed: %q -> %q", out["sum1"], out["sum2"])
	}
}
