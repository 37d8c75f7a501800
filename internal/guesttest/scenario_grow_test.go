package guesttest

import (
	"strconv"
	"strings"
	"testing"
)

// Issue 24 item 4 on a real kernel: a logical volume asked bigger (50% ->
// 75% of its group) and then given another disk (the rest of a group that
// grows) is grown online with its mounted xfs by prepare, after --diff
// said so; its files and its fstab line stay, and the next --diff has
// nothing to do. Smaller is refused (exit 3).

var growDisks = []string{"sata-hdd:1G:serial=GROWA", "sata-hdd:1G:serial=GROWB"}

const growScript = `set -u
mark() { echo "@@ $1"; }
A=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_GROWA) B=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_GROWB)
prep() { diskprep prepare --fs xfs --mount /data --persist "$@" 2>&1; echo "exit $?"; }
size() { df -B1 --output=size /data | tail -n 1 | tr -d ' '; }
mark first; prep "$A" --lvm pool/data:50% --yes
dd if=/dev/urandom of=/data/f bs=1M count=16 2>/dev/null && sync
mark sum1; md5sum </data/f
mark fstab1; awk '$2 == "/data"' /etc/fstab
mark size1; size
mark diff75; prep "$A" --lvm pool/data:75% --diff
mark grow75; prep "$A" --lvm pool/data:75% --yes
mark size2; size
mark again75; prep "$A" --lvm pool/data:75% --diff
mark shrink; prep "$A" --lvm pool/data:50% --diff
mark diffonto; prep "$A" "$B" --lvm pool/data --diff
mark onto; prep "$A" "$B" --lvm pool/data --yes
mark size3; size
mark again; prep "$A" "$B" --lvm pool/data --diff
mark sum2; md5sum </data/f
mark fstab2; awk '$2 == "/data"' /etc/fstab
mark mounted; findmnt -no SOURCE /data
mark end
`

func TestScenarioGrowVolume(t *testing.T) {
	t.Parallel()
	out := runMarked(t, growDisks, growScript)
	exit := func(step string) string { return lastLine(out[step]) }
	size := func(step string) uint64 {
		n, err := strconv.ParseUint(strings.TrimSpace(out[step]), 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", step, out[step])
		}
		return n
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for step, want := range map[string]string{
		"first": "exit 0", "diff75": "exit 1", "grow75": "exit 0", "again75": "exit 0",
		"shrink": "exit 3", "diffonto": "exit 1", "onto": "exit 0", "again": "exit 0",
	} {
		if got := exit(step); got != want {
			t.Errorf("%s: %s, want %s:\n%s", step, got, want, out[step])
		}
	}
	if s := squash(out["diff75"]); !strings.Contains(s, "change lv /dev/pool/data data,") || !strings.Contains(s, "(grown, with its xfs)") {
		t.Errorf("the diff of 50%% -> 75%% does not grow the volume:\n%s", out["diff75"])
	}
	if !strings.Contains(out["shrink"], "xfs cannot shrink") {
		t.Errorf("50%% again: %s", out["shrink"])
	}
	if s := squash(out["diffonto"]); !strings.Contains(s, "create pv") || !strings.Contains(s, "change vg pool over ") || !strings.Contains(s, "change lv /dev/pool/data") {
		t.Errorf("the diff onto a second disk:\n%s", out["diffonto"])
	}
	s1, s2, s3 := size("size1"), size("size2"), size("size3")
	// 50% and 75% of a group of one 1 GiB disk; then two disks.
	if !(s2 > s1*14/10 && s3 > s2*2) {
		t.Errorf("the file system's size went %d -> %d -> %d bytes, want it grown about 1.5x, then more than doubled", s1, s2, s3)
	}
	if out["sum1"] == "" || out["sum1"] != out["sum2"] {
		t.Errorf("the file changed: %q -> %q", out["sum1"], out["sum2"])
	}
	if out["fstab1"] == "" || out["fstab1"] != out["fstab2"] {
		t.Errorf("the fstab line changed: %q -> %q", out["fstab1"], out["fstab2"])
	}
	t.Logf("diff onto a second disk:\n%s", out["diffonto"])
	if m := strings.TrimSpace(out["mounted"]); m != "/dev/mapper/pool-data" {
		t.Errorf("/data is mounted from %q", m)
	}
}
