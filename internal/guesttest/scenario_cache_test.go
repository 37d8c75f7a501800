package guesttest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Issue 15 item 1 on a real kernel (dm-cache, dm-writecache, bcache, LVM,
// udev, systemd): three emulated SATA HDDs slowed by QEMU's throttling
// and one emulated SATA SSD (not QEMU's NVMe, which stalls under TCG: see
// docs/testing.md); one prepare --plan builds an lvmcache volume
// (writethrough) over the first HDD and an SSD partition, a writecache
// volume over the third and another, and a bcache volume (writeback) over
// the second HDD and a third SSD partition, under 256 MiB (make-bcache's
// default buckets would be too few for the kernel there); the writecache
// counts no read hit on a region never written and one per block on data
// just written; the rerun is a no-op,
// and so is the same lvmcache asked on the command line with the
// existing SSD partition as --cache-device. After a reboot (systemd as
// PID 1, udev's bcache rule registering it, fstab mounting both) the data
// written before is there and the rerun is still a no-op; release --wipe
// flushes the bcache's dirty data (its progress said) and the
// writecache's, takes all three apart and leaves the four disks
// signature-free. One call, two boots.

const cachePlan = `version: 1
disks:
  - select: {serial: HDDA}
    partitions: [{size: rest, use: origin:fast}]
  - select: {serial: HDDB}
    partitions: [{size: rest, use: origin:bc}]
  - select: {serial: HDDC}
    partitions: [{size: rest, use: origin:wc}]
  - select: {serial: SSDA}
    partitions:
      - {size: 160M, use: cache:fast}
      - {size: 96M, use: cache:wc}
      - {size: rest, use: cache:bc}
cache:
  - name: fast
    filesystem: {fs: xfs, mount: /srv, persist: true}
  - name: wc
    kind: writecache
    mode: writeback
    filesystem: {fs: xfs, label: wc, mount: /srv3, persist: true}
  - name: bc
    kind: bcache
    mode: writeback
    filesystem: {fs: ext4, label: bc, mount: /srv2, persist: true}
`

const cacheScript = `set -u
mark() { echo "@@ $DISKPREP_GUEST_BOOT.$1"; }
stamp() { mark "t.$1"; cut -d' ' -f1 /proc/uptime; }
stamp start
byid=/dev/disk/by-id/ata-QEMU_HARDDISK_
ssd=$(readlink -f ${byid}SSDA)
mark ssd; echo $ssd
if [ "$DISKPREP_GUEST_BOOT" = 1 ]; then
	cat >/root/plan.yaml <<'PLAN'
` + cachePlan + `PLAN
	diskprep prepare --plan /root/plan.yaml --dry-run >/root/dry 2>&1
	rc=$?
	mark dry.exit; echo $rc
	mark dry; cat /root/dry
	start=$(date +%s)
	diskprep prepare --plan /root/plan.yaml --yes -o json >/root/out 2>/root/err
	rc=$?
	mark apply.exit; echo $rc
	mark apply.seconds; echo $(( $(date +%s) - start ))
	stamp applied
	mark apply.stderr; cat /root/err
	mark apply.json; cat /root/out
	# Data through both caches; bcache takes even sequential writes
	# (its 4 MB cutoff off) so that some are dirty on the SSD only.
	echo 0 >/sys/block/bcache0/bcache/sequential_cutoff
	echo 0 >/sys/block/bcache0/bcache/writeback_running
	dd if=/dev/urandom of=/root/data bs=1M count=16 status=none
	# The writecache emptied first (mkfs may have filled it, and a full
	# one writes around itself), so that the data goes into it.
	dmsetup message wc-wc 0 flush
	cp /root/data /srv/data && cp /root/data /srv2/data && cp /root/data /srv3/data && sync
	sha256sum </root/data | cut -d' ' -f1 >/root/sum
	mark dirty; cat /sys/block/bcache0/bcache/dirty_data
	# dm-writecache's reads and read hits (status fields 8 and 9) around
	# a read of a region never written, then of the data just written.
	echo 3 >/proc/sys/vm/drop_caches
	wcs() { dmsetup status wc-wc | awk '{print $8, $9}'; }
	s0=$(wcs)
	dd if=/dev/wc/wc of=/dev/null bs=64k count=64 skip=12000 iflag=direct status=none
	s1=$(wcs)
	dd if=/srv3/data of=/dev/null bs=64k iflag=direct status=none
	mark wc.reads; echo $s0 $s1 $(wcs)
	stamp written
else
	# The fstab lines are nofail: the boot does not wait for them, and
	# the cached volume is activated (udev, lvm autoactivation) and
	# mounted a little after the guest's command starts.
	udevadm settle
	for _ in $(seq 1 120); do
		findmnt /srv >/dev/null && findmnt /srv2 >/dev/null && findmnt /srv3 >/dev/null && break
		sleep 0.5
	done
	stamp mounted
fi
mark segtype; lvs --noheadings -o lv_name,segtype,cache_mode fast 2>&1 | awk '{print $1, $2, $3}'
mark wc; lvs --noheadings -o lv_name,segtype wc 2>&1 | awk '{print $1, $2}'
mark bcache; cat /sys/block/bcache0/bcache/cache_mode /sys/block/bcache0/bcache/state; ls /sys/block/bcache0/slaves | sort | tr '\n' ' '; echo
mark mounts; for p in /srv /srv2 /srv3; do findmnt -n -r -o TARGET,FSTYPE,SOURCE "$p"; done
mark fstab; grep -v '^#' /etc/fstab | awk 'NF {print $2, $3, $4}' | sort
mark sums; for p in /srv /srv2 /srv3; do sha256sum <"$p/data" | cut -d' ' -f1; done; cat /root/sum
diskprep prepare --plan /root/plan.yaml --yes >/root/out 2>/root/err
rc=$?
mark rerun.exit; echo $rc
mark rerun; cat /root/out /root/err
diskprep prepare --cache ${byid}HDDA --cache-device ${ssd}1 --name fast --fs xfs --mount /srv --persist --dry-run >/root/out 2>&1
rc=$?
mark cli.exit; echo $rc
mark cli; cat /root/out
stamp reruns
if [ "$DISKPREP_GUEST_BOOT" = 2 ]; then
	echo 1 >/sys/block/bcache0/bcache/writeback_running
	mark dirty2; cat /sys/block/bcache0/bcache/dirty_data
	diskprep release /srv2 --wipe --dry-run >/root/out 2>&1
	mark release.dry; cat /root/out
	diskprep --verbose release /srv2 --wipe >/root/out 2>/root/err
	rc=$?
	mark release.bc.exit; echo $rc
	mark release.bc; cat /root/out; grep -v "level=DEBUG" /root/err
	stamp release.bc
	diskprep release ${byid}HDDA --wipe >/root/out 2>&1
	rc=$?
	mark release.fast.exit; echo $rc
	mark release.fast; cat /root/out
	mark wc.used; dmsetup status wc-wc | awk '{print $5 - $6}'
	diskprep release /srv3 --wipe >/root/out 2>&1
	rc=$?
	mark release.wc.exit; echo $rc
	mark release.wc; cat /root/out
	# Its partitions are blank by now: nothing says diskprep made the
	# table left, so the wipe of the table is confirmed.
	diskprep release $ssd --wipe --yes >/root/out 2>&1
	mark release.ssd; cat /root/out
	stamp released
	mark after.lvs; lvs --noheadings 2>/dev/null
	mark after.bcache; ls /sys/block | grep bcache; ls /sys/fs/bcache | grep -E '^[0-9a-f]{8}-'
	mark after.mounts; grep -E ' /srv[23]? ' /proc/mounts
	mark after.fstab; grep -v '^#' /etc/fstab | grep -E '/srv'
	mark after.signatures
	for d in ${byid}HDDA ${byid}HDDB ${byid}HDDC $ssd; do
		d=$(readlink -f $d)
		wipefs --no-act $d $d?* 2>/dev/null | tail -n +2
	done
fi
mark end
`

func TestScenarioCache(t *testing.T) {
	parallel(t)
	// About 20 MB/s and 200 IOPS: an HDD, not the host's page cache.
	slow := ",iops=200,bps=20000000"
	opt := Options{
		Disks: []string{
			"sata-hdd:1G:serial=HDDA" + slow,
			"sata-hdd:1G:serial=HDDB" + slow,
			"sata-hdd:1G:serial=HDDC" + slow,
			"sata-ssd:512M:serial=SSDA",
		},
		State:   t.TempDir(),
		Boots:   2,
		Systemd: true,
	}
	r := Run(t, opt, "sh", "-c", cacheScript)
	out := splitMarked(r.Stdout)
	t.Logf("guest stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	if _, ok := out["2.end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish both boots (exit %d)", r.ExitCode)
	}
	// The SSD's node in each boot, /dev/sdX: the kernel may name the
	// SATA disks in another order at the next boot.
	for _, boot := range []string{"1", "2"} {
		if !regexp.MustCompile(`^/dev/sd[a-z]$`).MatchString(out[boot+".ssd"]) {
			t.Fatalf("boot %s: the SSD is %q", boot, out[boot+".ssd"])
		}
	}
	ssd := out["1.ssd"]
	// bcache0's slaves in a boot, sorted: the HDD's partition and the
	// SSD's third.
	slaves := func(boot string) *regexp.Regexp {
		n := strings.TrimPrefix(out[boot+".ssd"], "/dev/")
		return regexp.MustCompile(`\n(clean|dirty)\n(sd[a-z]1 ` + n + `3|` + n + `3 sd[a-z]1) $`)
	}
	for _, want := range []string{"lvconvert --yes --type cache --cachevol fast_cache --cachemode writethrough fast/fast", "make-bcache -B /dev/sd",
		"make-bcache -C --cset-uuid", "--bucket 128k " + ssd + "3", "lvconvert --yes --type writecache --cachevol wc_cache wc/wc", "> /sys/fs/bcache/register_quiet", "echo writeback > /sys/class/block/sd", "writeback: writes are acknowledged once on the cache device",
		"dry run: nothing was changed"} {
		if out["1.dry.exit"] != "0" || !strings.Contains(out["1.dry"], want) {
			t.Errorf("dry run (exit %s) does not say %q:\n%s", out["1.dry.exit"], want, out["1.dry"])
		}
	}
	if out["1.apply.exit"] != "0" {
		t.Fatalf("prepare --plan: exit %s: %s", out["1.apply.exit"], out["1.apply.stderr"])
	}
	t.Logf("prepare of both caches took %s s in the guest", out["1.apply.seconds"])
	for _, k := range []string{"1.t.start", "1.t.applied", "1.t.written", "1.t.reruns", "2.t.start", "2.t.mounted", "2.t.reruns", "2.t.release.bc", "2.t.released"} {
		t.Logf("guest uptime at %s: %s s", k, out[k])
	}
	for _, want := range []string{`"kind": "lvmcache"`, `"kind": "bcache"`, `"mode": "writeback"`, `"lvm_version": "LVM version:`, `"device": "/dev/bcache0"`, `"device": "/dev/fast/fast"`, `"kind": "writecache"`, `"device": "/dev/wc/wc"`} {
		if !strings.Contains(out["1.apply.json"], want) {
			t.Errorf("the result does not record %s:\n%s", want, out["1.apply.json"])
		}
	}
	// dm-writecache: no hit on a region never written, a hit per block of
	// the data just written (4 KiB blocks: 4096 reads of 16 MiB).
	if f := strings.Fields(out["1.wc.reads"]); len(f) != 6 {
		t.Errorf("writecache counters %q", out["1.wc.reads"])
	} else {
		n := make([]int64, 6)
		for i := range f {
			n[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		coldReads, coldHits, warmReads, warmHits := n[2]-n[0], n[3]-n[1], n[4]-n[2], n[5]-n[3]
		t.Logf("writecache: cold %d reads %d hits, warm %d reads %d hits", coldReads, coldHits, warmReads, warmHits)
		if coldReads <= 0 || coldHits != 0 || warmReads < 4096 || warmHits*10 < warmReads*9 {
			t.Errorf("writecache: a region never written read %d blocks with %d hits, the data written %d with %d hits", coldReads, coldHits, warmReads, warmHits)
		}
	}
	if d := out["1.dirty"]; d == "" || strings.HasPrefix(d, "0.0k") {
		t.Errorf("no dirty data on the writeback bcache after writing: %q", d)
	}
	for _, boot := range []string{"1", "2"} {
		if got := out[boot+".segtype"]; got != "fast cache writethrough" {
			t.Errorf("boot %s: lvs says %q, want the cached volume", boot, got)
		}
		if got := out[boot+".wc"]; got != "wc writecache" {
			t.Errorf("boot %s: lvs says %q, want the writecache volume", boot, got)
		}
		if got := out[boot+".bcache"]; !strings.HasPrefix(got, "writethrough [writeback] writearound none\n") || !slaves(boot).MatchString(got) {
			t.Errorf("boot %s: bcache0 %q", boot, got)
		}
		if got := out[boot+".mounts"]; !regexp.MustCompile(`^/srv xfs /dev/mapper/fast-fast\n/srv2 ext4 /dev/bcache0\n/srv3 xfs /dev/mapper/wc-wc$`).MatchString(got) {
			t.Errorf("boot %s: mounts %q", boot, got)
		}
		for _, want := range []string{"/srv xfs defaults,nofail", "/srv2 ext4 defaults,nofail", "/srv3 xfs defaults,nofail"} {
			if !strings.Contains(out[boot+".fstab"], want) {
				t.Errorf("boot %s: fstab has no %q line:\n%s", boot, want, out[boot+".fstab"])
			}
		}
		if s := strings.Fields(out[boot+".sums"]); len(s) != 4 || s[0] != s[3] || s[1] != s[3] || s[2] != s[3] {
			t.Errorf("boot %s: the data read back differs: %q", boot, out[boot+".sums"])
		}
		if out[boot+".rerun.exit"] != "0" || !strings.Contains(out[boot+".rerun"], "already prepared as asked: nothing changed") {
			t.Errorf("boot %s: rerun (exit %s) is not a no-op:\n%s", boot, out[boot+".rerun.exit"], out[boot+".rerun"])
		}
		if out[boot+".cli.exit"] != "0" || !strings.Contains(out[boot+".cli"], "already prepared as asked") {
			t.Errorf("boot %s: prepare --cache with the SSD partition (exit %s) is not a no-op:\n%s", boot, out[boot+".cli.exit"], out[boot+".cli"])
		}
	}
	for _, want := range []string{"would unmount /srv2", "echo writethrough > /sys/class/block/sd", "dirty_data to reach 0", "/bcache/detach", "/bcache/stop", "/unregister", "would run: wipefs --all " + out["2.ssd"] + "3", "(diskprep's: a member of bcache set "} {
		if !strings.Contains(out["2.release.dry"], want) {
			t.Errorf("release --dry-run does not say %q:\n%s", want, out["2.release.dry"])
		}
	}
	if strings.Contains(out["2.release.dry"], "not made by diskprep") {
		t.Errorf("release --dry-run of diskprep's own bcache asks first:\n%s", out["2.release.dry"])
	}
	if out["2.release.bc.exit"] != "0" || !strings.Contains(out["2.release.bc"], "of dirty data to write back to ") {
		t.Errorf("release --wipe of the bcache (exit %s) did not flush with progress:\n%s", out["2.release.bc.exit"], out["2.release.bc"])
	}
	if out["2.release.fast.exit"] != "0" || !strings.Contains(out["2.release.fast"], "lvconvert --yes --uncache fast/fast") {
		t.Errorf("release --wipe of the lvmcache (exit %s):\n%s", out["2.release.fast.exit"], out["2.release.fast"])
	}
	t.Logf("writecache: %s blocks in use before its release", out["2.wc.used"])
	if out["2.release.wc.exit"] != "0" || !strings.Contains(out["2.release.wc"], "lvconvert --yes --uncache wc/wc") {
		t.Errorf("release --wipe of the writecache (exit %s):\n%s", out["2.release.wc.exit"], out["2.release.wc"])
	}
	for _, k := range []string{"lvs", "bcache", "mounts", "fstab", "signatures"} {
		if v := out["2.after."+k]; v != "" {
			t.Errorf("after release --wipe, %s still shows:\n%s", k, v)
		}
	}
}
