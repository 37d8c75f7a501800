package guesttest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 14's crash safety on a real kernel: a prepare killed (SIGKILL, the
// crashtest build's crash points) at each step of a storage stack, then run
// again without the hook, converges to what an uninterrupted run leaves: the
// same array, group, swap area, mounts, fstab and mdadm.conf lines (by
// UUIDs that name the file systems and array there), the markers, and a
// third run that is a no-op. Every point converges; none is a designed
// refusal (a stack made by a killed run is recognised by what it holds:
// an array without its mdadm.conf line is the killed run's, wiped and made
// again, see disk.PlanStacks). release --wipe then leaves the disks blank
// for the next point, which the script checks. The markers say that
// prepare made the mount points (so release removes them), also after a
// kill between the mount and the marker (disk.madePointPath).
//
// Two plans, so that each point pays only for its stack: a RAID1 whose
// second member shares its disk with a swap partition (the rerun meets an
// active swap area and its own array on one disk) and an LVM group on a
// third disk. The points are those after which the state differs:
//
//	swap-made, swapon        swap made / active, no fstab line
//	md-created               the array, not wiped, no mdadm.conf line
//	mdadm-conf               the line, no file system
//	formatted, mounted       the file system, unmounted / mounted, no fstab line
//	pv-created, vg-created,  the PV / the group / the volume without
//	lv-created               its file system
//
// Left out, each the same state as a point kept or covered elsewhere:
// discarded (TRIM is advice: the member looks as before), mkfs (before mkfs
// runs: as mdadm-conf; a kill inside mkfs is the partition crash suite's
// mkfs+5ms), the fstab-* points (the same fstab edit as a partition's,
// which that suite kills at every step), and the logical volume's own
// formatted and mounted (the same planVolume branches as the array's).
//
// Then the CLI shorthand's stripe geometry: RAID10 over four more disks
// with xfs (su/sw in xfs_info; 640 MiB disks: under 1 GiB an array's xfs
// gets no geometry, see disk.minStripedXFSBytes) and RAID0 over two of the
// crash points' disks with ext4 (stride and stripe width in dumpe2fs, on
// an array small enough that mke2fs would pick 1 KiB blocks unless told),
// each said in the JSON result. One boot of the minimal guest.

var stackKillPoints = map[string][]string{
	"raid":    {"swap-made", "swapon", "md-created", "mdadm-conf", "formatted", "mounted"},
	"lvm":     {"pv-created", "vg-created", "lv-created"},
	"lvcache": {"lv-created", "cache-converted"},
	"bcache":  {"bcache-made", "bcache-registered", "bcache-attached"},
}

const stacksCrashRaidPlan = `version: 1
disks:
  - select: {serial: CRASHA}
    partitions: [{size: rest, use: raid:r}]
  - select: {serial: CRASHB}
    partitions:
      - {size: 32M, fs: swap, persist: true}
      - {size: rest, use: raid:r}
raid:
  - name: r
    level: 1
    filesystem: {fs: ext4, mount: /mnt/r, persist: true}
`

const stacksCrashLVMPlan = `version: 1
disks:
  - select: {serial: CRASHC}
    partitions: [{size: rest, use: lvm:v}]
lvm:
  - vg: v
    volumes:
      - {name: a, size: rest, fs: ext4, mount: /mnt/a, persist: true}
`

// The caches (issue 15): an origin disk and a cache disk, an lvmcache and
// then a bcache (writeback) over the same two, each with ext4.
const stacksCrashCachePlan = `version: 1
disks:
  - select: {serial: CRASHD}
    partitions: [{size: rest, use: origin:c}]
  - select: {serial: CRASHN}
    partitions: [{size: rest, use: cache:c}]
cache:
  - name: c
    KIND
    filesystem: {fs: ext4, mount: /mnt/c, persist: true}
`

var stacksCrashScript = `set -u
byid=/dev/disk/by-id/ata-QEMU_HARDDISK_
cat >/root/raid.yaml <<'PLAN'
` + stacksCrashRaidPlan + `PLAN
cat >/root/lvm.yaml <<'PLAN'
` + stacksCrashLVMPlan + `PLAN
cat >/root/lvcache.yaml <<'PLAN'
` + strings.Replace(stacksCrashCachePlan, "    KIND\n", "", 1) + `PLAN
cat >/root/bcache.yaml <<'PLAN'
` + strings.Replace(stacksCrashCachePlan, "KIND", "kind: bcache\n    mode: writeback", 1) + `PLAN
# fstab_ok: each of diskprep's fstab lines names a file system that is there.
fstab_ok() {
	n=0
	for u in $(grep -v '^#' /etc/fstab | grep -o '^UUID=[^[:space:]]*' | cut -d= -f2); do
		blkid -U "$u" >/dev/null && n=$((n + 1))
	done
	echo "fstab lines resolving: $n"
}
state_raid() {
	echo "arrays: $(grep -c '^md' /proc/mdstat) $(cat /sys/block/md*/md/level 2>/dev/null) $(cat /sys/block/md*/md/raid_disks 2>/dev/null)"
	echo "swap areas: $(tail -n +2 /proc/swaps | wc -l)"
	echo "mounted: $(findmnt -n -o TARGET /mnt/r)"
	echo "marker: $(grep -c -e '"uuid"' -e '"made_mount_point": true' /mnt/r/.diskprep-prepared.json 2>/dev/null)"
	echo "diskprep fstab lines: $(grep -c '^# diskprep:' /etc/fstab)"
	fstab_ok
	conf=$(cat /etc/mdadm/mdadm.conf /etc/mdadm.conf 2>/dev/null | grep '^ARRAY')
	uuid=$(mdadm --detail --export /dev/md/r 2>/dev/null | sed -n 's/^MD_UUID=//p')
	echo "mdadm.conf: $(echo "$conf" | grep -c ARRAY), $(echo "$conf" | grep -c "UUID=$uuid\$") of the array's"
}
state_lvm() {
	echo "volumes: $(lvs --noheadings -o vg_name,lv_name 2>/dev/null | awk '{print $1"/"$2}')"
	echo "mounted: $(findmnt -n -o TARGET /mnt/a)"
	echo "marker: $(grep -c -e '"uuid"' -e '"made_mount_point": true' /mnt/a/.diskprep-prepared.json 2>/dev/null)"
	echo "diskprep fstab lines: $(grep -c '^# diskprep:' /etc/fstab)"
	fstab_ok
}
state_cache() {
	v=$(lvs --noheadings -o vg_name,lv_name,segtype 2>/dev/null | awk '{print $1"/"$2, $3}')
	echo "volumes: ${v:-none}"
	b=$(cat /sys/block/bcache*/bcache/cache_mode 2>/dev/null)
	[ -e /sys/block/bcache0/bcache/cache ] && b="$b, attached"
	echo "bcache: ${b:-none}"
	echo "mounted: $(findmnt -n -o TARGET,FSTYPE /mnt/c)"
	echo "marker: $(grep -c -e '"uuid"' -e '"made_mount_point": true' /mnt/c/.diskprep-prepared.json 2>/dev/null)"
	echo "diskprep fstab lines: $(grep -c '^# diskprep:' /etc/fstab)"
	fstab_ok
}
# leftovers: what release --wipe left of the stacks and the disks' contents.
leftovers() {
	grep '^md' /proc/mdstat
	lvs --noheadings 2>/dev/null
	tail -n +2 /proc/swaps
	ls /sys/block | grep bcache
	grep -E ' /mnt/(r|a|c) ' /proc/mounts
	grep -v '^#' /etc/fstab | grep -E 'swap|/mnt/'
	cat /etc/mdadm/mdadm.conf /etc/mdadm.conf 2>/dev/null | grep '^ARRAY'
	for id in "$@"; do
		d=$(readlink -f "$byid$id")
		wipefs --no-act "$d" "$d"?* 2>/dev/null | tail -n +2
	done
}
# points PLAN STATE DISK...: each point of $POINTS on PLAN's disks, marked $PFX.POINT.
points() {
	plan=$1 state=$2
	shift 2
	for p in $POINTS; do
		start=$(cut -d' ' -f1 /proc/uptime)
		DISKPREP_TEST_CRASH_AT=$p diskprep prepare --plan "$plan" --yes >/root/out 2>&1
		rc=$?
		echo "@@ ${PFX:-}$p.killed"; echo $rc; [ $rc = 137 ] || tail -n 5 /root/out
		diskprep prepare --plan "$plan" --yes >/root/out 2>&1
		rc=$?
		echo "@@ ${PFX:-}$p.rerun.exit"; echo $rc
		echo "@@ ${PFX:-}$p.rerun"; tail -n 5 /root/out
		echo "@@ ${PFX:-}$p.state"; $state
		diskprep prepare --plan "$plan" --yes >/root/out 2>&1
		rc=$?
		echo "@@ ${PFX:-}$p.again"; echo $rc; grep -c 'already prepared as asked' /root/out; grep '^Prepared ' /root/out
		echo "@@ ${PFX:-}$p.reset"
		for id in "$@"; do
			diskprep release "$byid$id" --wipe --yes >/root/rel 2>&1 || { echo "release $id:"; cat /root/rel; }
		done
		leftovers "$@"
		echo "@@ ${PFX:-}$p.seconds"; echo "$start $(cut -d' ' -f1 /proc/uptime)" | awk '{printf "%.0f\n", $2 - $1}'
	done
}
POINTS=$RAID_POINTS points /root/raid.yaml state_raid CRASHA CRASHB
POINTS=$LVM_POINTS points /root/lvm.yaml state_lvm CRASHC
PFX=lvcache. POINTS=$LVCACHE_POINTS points /root/lvcache.yaml state_cache CRASHD CRASHN
PFX=bcache. POINTS=$BCACHE_POINTS points /root/bcache.yaml state_cache CRASHD CRASHN
geo() { # name level fs members...
	name=$1 level=$2 fs=$3
	shift 3
	g=""
	for id in "$@"; do g="$g $byid$id"; done
	diskprep prepare $g --raid $level --name geo --fs $fs --mount /mnt/geo --yes -o json >/root/out 2>&1
	rc=$?
	echo "@@ $name.exit"; echo $rc
	echo "@@ $name.out"; cat /root/out
	echo "@@ $name.fs"
	case $fs in
	xfs) xfs_info /mnt/geo | grep -o 'sunit=[0-9]* *swidth=[0-9]* blks' ;;
	ext4) dumpe2fs -h /dev/md/geo 2>/dev/null | grep -E '^(Block size|RAID stride|RAID stripe width):' ;;
	esac
	diskprep release /mnt/geo --wipe >/root/out 2>&1
	rc=$?
	echo "@@ $name.release"; echo $rc; cat /root/out
	echo "@@ $name.leftovers"; leftovers "$@"
}
geo geo10 10 xfs GEOA GEOB GEOC GEOD
geo geo0 0 ext4 CRASHA CRASHC
echo "@@ end"
`

// crashtestBinary builds diskprep with the crashtest tag (the crash
// points of disk.CrashEnv; without that variable set it is diskprep as
// released), static for the guest, and returns its path.
func crashtestBinary(t *testing.T) string {
	t.Helper()
	Require(t)
	bin := filepath.Join(t.TempDir(), "diskprep")
	script, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-tags", "crashtest", "-o", bin, "./cmd/diskprep")
	build.Dir = filepath.Dir(filepath.Dir(script))
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the crashtest diskprep: %v\n%s", err, out)
	}
	return bin
}

func TestScenarioStacksKilled(t *testing.T) {
	parallel(t)
	bin := crashtestBinary(t)
	opt := Options{
		Disks: []string{"sata-ssd:128M:serial=CRASHA", "sata-ssd:160M:serial=CRASHB", "sata-ssd:128M:serial=CRASHC",
			"sata-ssd:640M:serial=GEOA", "sata-ssd:640M:serial=GEOB", "sata-ssd:640M:serial=GEOC", "sata-ssd:640M:serial=GEOD",
			"sata-hdd:192M:serial=CRASHD", "sata-ssd:64M:serial=CRASHN"},
		Env:     []string{"DISKPREP_GUEST_DISKPREP=" + bin},
		Timeout: 10 * time.Minute,
	}
	r := Run(t, opt, "env", "RAID_POINTS="+strings.Join(stackKillPoints["raid"], " "), "LVM_POINTS="+strings.Join(stackKillPoints["lvm"], " "),
		"LVCACHE_POINTS="+strings.Join(stackKillPoints["lvcache"], " "), "BCACHE_POINTS="+strings.Join(stackKillPoints["bcache"], " "),
		"sh", "-c", stacksCrashScript)
	out := splitMarked(r.Stdout)
	t.Logf("guest stdout:\n%s", r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	// What an uninterrupted run leaves: one raid1 of two, the swap area,
	// both mounted with their markers (UUID, made_mount_point), two fstab
	// lines (swap and /mnt/r) naming what is there, the array's mdadm.conf
	// line; or the volume, mounted, its marker, its fstab line.
	want := map[string]string{
		"raid":    "arrays: 1 raid1 2\nswap areas: 1\nmounted: /mnt/r\nmarker: 2\ndiskprep fstab lines: 2\nfstab lines resolving: 2\nmdadm.conf: 1, 1 of the array's",
		"lvm":     "volumes: v/a\nmounted: /mnt/a\nmarker: 2\ndiskprep fstab lines: 1\nfstab lines resolving: 1",
		"lvcache": "volumes: c/c cache\nbcache: none\nmounted: /mnt/c ext4\nmarker: 2\ndiskprep fstab lines: 1\nfstab lines resolving: 1",
		"bcache": "volumes: none\nbcache: writethrough [writeback] writearound none, attached\nmounted: /mnt/c ext4\nmarker: 2\n" +
			"diskprep fstab lines: 1\nfstab lines resolving: 1",
	}
	// The third run: each disk and the stacks already prepared as asked.
	again := map[string]string{"raid": "0\n3", "lvm": "0\n2", "lvcache": "0\n3", "bcache": "0\n3"}
	for _, kind := range []string{"raid", "lvm", "lvcache", "bcache"} {
		pfx := map[string]string{"lvcache": "lvcache.", "bcache": "bcache."}[kind]
		for _, point := range stackKillPoints[kind] {
			p := pfx + point
			t.Logf("%s: %s s", p, out[p+".seconds"])
			if out[p+".killed"] != "137" {
				t.Errorf("%s: the first run was not killed there (exit %s)", p, out[p+".killed"])
			}
			if out[p+".rerun.exit"] != "0" {
				t.Errorf("%s: the rerun did not complete (exit %s): %s", p, out[p+".rerun.exit"], out[p+".rerun"])
			}
			if out[p+".state"] != want[kind] {
				t.Errorf("%s: after the rerun:\n%s\nwant:\n%s", p, out[p+".state"], want[kind])
			}
			if out[p+".again"] != again[kind] {
				t.Errorf("%s: a third run is not a no-op (exit, runs already prepared):\n%s", p, out[p+".again"])
			}
			if out[p+".reset"] != "" {
				t.Errorf("%s: release --wipe left:\n%s", p, out[p+".reset"])
			}
		}
	}
	// 512 KiB chunks are 128 blocks of 4 KiB; RAID10 over four has two
	// data members, RAID0 over two has two.
	for _, c := range []struct{ name, geometry, argv, fs string }{
		{"geo10", `"geometry": "su=512k,sw=2"`, `"su=512k,sw=2"`, "sunit=128 swidth=256 blks"},
		{"geo0", `"geometry": "stride=128,stripe_width=256"`, `"stride=128,stripe_width=256"`,
			"Block size: 4096 RAID stride: 128 RAID stripe width: 256"},
	} {
		if out[c.name+".exit"] != "0" {
			t.Errorf("%s: prepare exit %s:\n%s", c.name, out[c.name+".exit"], out[c.name+".out"])
		}
		if !strings.Contains(out[c.name+".out"], c.geometry) || !strings.Contains(out[c.name+".out"], c.argv+",\n") {
			t.Errorf("%s: the result does not say mkfs got %s:\n%s", c.name, c.argv, out[c.name+".out"])
		}
		if got := strings.Join(strings.Fields(out[c.name+".fs"]), " "); got != c.fs {
			t.Errorf("%s: the file system says %q, want %q", c.name, got, c.fs)
		}
		if !strings.HasPrefix(out[c.name+".release"], "0") || out[c.name+".leftovers"] != "" {
			t.Errorf("%s: release --wipe: %s\nleft: %s", c.name, out[c.name+".release"], out[c.name+".leftovers"])
		}
	}
}
