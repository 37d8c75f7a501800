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
// nothing to do. Smaller is refused (exit 3). On a third disk, an ext4
// volume asked smaller (75% -> 50%) is refused without --shrink and while
// mounted, refused below what it uses before any step, then shrunk
// unmounted with --shrink: its files, its fstab line and a clean e2fsck
// stay, it is mounted again, and the next --diff has nothing to do.
//
// Each change is first killed (SIGKILL, the crashtest build's crash
// points) after one of its steps: the grow after lvextend, the grow onto
// B after vgextend, the shrink after e2fsck and then after resize2fs
// (before lvreduce). The plain run after each converges to the state
// checked below, so a kill at those steps loses nothing.

var growDisks = []string{"sata-hdd:1G:serial=GROWA", "sata-hdd:1G:serial=GROWB", "sata-hdd:512M:serial=GROWC"}

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
mark kill75; DISKPREP_TEST_CRASH_AT=lv-grown prep "$A" --lvm pool/data:75% --yes | tail -n 1
mark grow75; prep "$A" --lvm pool/data:75% --yes
mark size2; size
mark again75; prep "$A" --lvm pool/data:75% --diff
mark shrink; prep "$A" --lvm pool/data:50% --diff
mark diffonto; prep "$A" "$B" --lvm pool/data --diff
mark killonto; DISKPREP_TEST_CRASH_AT=vg-extended prep "$A" "$B" --lvm pool/data --yes | tail -n 1
mark onto; prep "$A" "$B" --lvm pool/data --yes
mark size3; size
mark again; prep "$A" "$B" --lvm pool/data --diff
mark sum2; md5sum </data/f
mark fstab2; awk '$2 == "/data"' /etc/fstab
mark mounted; findmnt -no SOURCE /data
C=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_GROWC)
prep4() { size=$1; shift; diskprep prepare "$C" --fs ext4 --mount /small --persist --lvm small/data:$size "$@" 2>&1; echo "exit $?"; }
lvsize() { lvs --noheadings --nosuffix --units b -o lv_size small/data | tr -d ' '; }
mark e4first; prep4 75% --yes
dd if=/dev/urandom of=/small/f bs=1M count=48 2>/dev/null && sync
mark e4sum1; md5sum </small/f
mark e4fstab1; awk '$2 == "/small"' /etc/fstab
L1=$(lvsize)
mark e4lv1; echo "$L1"
mark e4noflag; prep4 50% --diff
mark e4mounted; prep4 50% --shrink --yes
umount /small
mark e4toosmall; prep4 32M --shrink --yes
mark e4lv2; lvsize
mark e4diff; prep4 50% --shrink --diff
mark e4killcheck; DISKPREP_TEST_CRASH_AT=fs-checked prep4 50% --shrink --yes | tail -n 1
mark e4killshrink; DISKPREP_TEST_CRASH_AT=fs-shrunk prep4 50% --shrink --yes | tail -n 1
mark e4shrink; prep4 50% --shrink --yes
mark e4lv3; lvsize
mark e4again; prep4 50% --diff
mark e4sum2; md5sum </small/f
mark e4fstab2; awk '$2 == "/small"' /etc/fstab
mark e4fsck; umount /small && e2fsck -f -n /dev/small/data >/dev/null 2>&1; echo "fsck $?"; mount /small; findmnt -no SOURCE /small
# The volume extended by hand without its file system (no -r): prepare
# of the 75% it now has grows the mounted ext4 to fill it.
lvextend -q --size "${L1}b" small/data >/dev/null 2>&1
mark e4behindlv; lvsize
mark e4behinddf; df -B1 --output=size /small | tail -n 1 | tr -d ' '
mark e4behinddiff; prep4 75% --diff
mark e4behindfix; prep4 75% --yes
mark e4behinddf2; df -B1 --output=size /small | tail -n 1 | tr -d ' '
mark e4behindagain; prep4 75% --diff
mark end
`

func TestScenarioGrowVolume(t *testing.T) {
	parallel(t)
	bin := crashtestBinary(t)
	out := runMarkedOpts(t, Options{Disks: growDisks, Env: []string{"DISKPREP_GUEST_DISKPREP=" + bin}}, growScript)
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
		"first": "exit 0", "diff75": "exit 1", "kill75": "exit 137", "grow75": "exit 0", "again75": "exit 0",
		"shrink": "exit 3", "diffonto": "exit 1", "killonto": "exit 137", "onto": "exit 0", "again": "exit 0",
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

	// The ext4 volume on the third disk.
	for step, want := range map[string]string{
		"e4first": "exit 0", "e4noflag": "exit 3", "e4mounted": "exit 3", "e4diff": "exit 1",
		"e4killcheck": "exit 137", "e4killshrink": "exit 137", "e4shrink": "exit 0", "e4again": "exit 0",
	} {
		if got := exit(step); got != want {
			t.Errorf("%s: %s, want %s:\n%s", step, got, want, out[step])
		}
	}
	// Below what the file system uses: refused before any step runs.
	if got := exit("e4toosmall"); got != "exit 3" || !strings.Contains(out["e4toosmall"], "resize2fs cannot shrink it that far") || strings.Contains(out["e4toosmall"], "e2fsck") {
		t.Errorf("a shrink below the data: %s, want exit 3, refused before e2fsck:\n%s", got, out["e4toosmall"])
	}
	if !strings.Contains(out["e4noflag"], "give --shrink") || !strings.Contains(out["e4mounted"], "is mounted at /small: ext4 shrinks only unmounted") {
		t.Errorf("the refusals do not say how:\n%s\n%s", out["e4noflag"], out["e4mounted"])
	}
	if s := squash(out["e4diff"]); !strings.Contains(s, "change lv /dev/small/data data,") || !strings.Contains(s, "(shrunk, with its ext4, unmounted)") {
		t.Errorf("the diff of 75%% -> 50%% does not shrink the volume:\n%s", out["e4diff"])
	}
	l1, l2, l3 := size("e4lv1"), size("e4lv2"), size("e4lv3")
	if l2 != l1 || !(l3 < l1*3/4 && l3 > l1/2) {
		t.Errorf("the volume went %d -> %d (too small, refused) -> %d bytes, want it kept, then about 2/3", l1, l2, l3)
	}
	if out["e4sum1"] == "" || out["e4sum1"] != out["e4sum2"] {
		t.Errorf("the ext4 file changed: %q -> %q", out["e4sum1"], out["e4sum2"])
	}
	if out["e4fstab1"] == "" || out["e4fstab1"] != out["e4fstab2"] {
		t.Errorf("the /small fstab line changed: %q -> %q", out["e4fstab1"], out["e4fstab2"])
	}
	if f := strings.Fields(out["e4fsck"]); len(f) != 3 || f[1] != "0" || f[2] != "/dev/mapper/small-data" {
		t.Errorf("after the shrink: %q, want e2fsck clean (fsck 0) and /small mounted from fstab", out["e4fsck"])
	}
	// The ext4 left behind its volume by an lvextend without -r.
	for step, want := range map[string]string{"e4behinddiff": "exit 1", "e4behindfix": "exit 0", "e4behindagain": "exit 0"} {
		if got := exit(step); got != want {
			t.Errorf("%s: %s, want %s:\n%s", step, got, want, out[step])
		}
	}
	if s := squash(out["e4behinddiff"]); !strings.Contains(s, "change filesystem /dev/small/data ext4,") || !strings.Contains(s, "(grown to fill its volume)") {
		t.Errorf("the diff does not grow the file system to its volume:\n%s", out["e4behinddiff"])
	}
	lvB, df1, df2 := size("e4behindlv"), size("e4behinddf"), size("e4behinddf2")
	if lvB != l1 || !(df2 > df1+100<<20 && df2 <= lvB) {
		t.Errorf("the ext4 went %d -> %d bytes in a %d-byte volume (of %d before the shrink), want it grown by the 128 MiB added", df1, df2, lvB, l1)
	}
	t.Logf("diff of the ext4 shrink:\n%s", out["e4diff"])
	t.Logf("diff of the ext4 behind its volume:\n%s", out["e4behinddiff"])
	t.Logf("a shrink below the data:\n%s", out["e4toosmall"])
}
