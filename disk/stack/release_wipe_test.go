package stack_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/internal/golden"
)

// release --wipe after a release without it, on the recording fake: the
// first release deactivates a volume group, stops an array, detaches and
// stops a bcache, turns swap off, and keeps every label on the disks; the
// second, of the same disk, must leave nothing of the stack, not only the
// disk's own table: a stack wholly on the disk is removed as a running
// one is, and one that also lies on another disk is refused, nothing
// written, with one line saying how to remove all of it.

// releaseOf plans and applies the release of target.
func (r *stackRig) releaseOf(t *testing.T, target string, opt disk.ReleaseOptions) *disk.ReleasePlan {
	t.Helper()
	p, err := disk.PlanRelease(context.Background(), target, opt, r.deps())
	if err != nil {
		t.Fatalf("plan the release of %s: %v", target, err)
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatalf("release %s: %v", target, err)
	}
	return p
}

// byHand runs argv on the machine as its user would type it, not diskprep.
func (r *stackRig) byHand(t *testing.T, argv ...string) {
	t.Helper()
	r.h.ByOthers(func() {
		if _, err := r.h.Run(context.Background(), argv[0], argv[1:]...); err != nil {
			t.Fatal(err)
		}
	})
}

// blankAt asserts that nothing is found on disk, nor in its bytes where
// each of the partitions in parts was (a prepare of the same plan, or the
// kernel reading a table made again, would find it there).
func (r *stackRig) blankAt(t *testing.T, name string, parts []hosttest.Extent) {
	t.Helper()
	if sigs := r.h.Signatures(name); len(sigs) != 0 {
		t.Errorf("%s after release --wipe: %v", name, sigs)
	}
	if len(parts) == 0 {
		t.Fatalf("%s had no partitions to check", name)
	}
	for _, e := range parts {
		if sigs := r.h.SignaturesAt(name, e); len(sigs) != 0 {
			t.Errorf("where %s was, after release --wipe: %v", e.Name, sigs)
		}
	}
}

// refusedWipe plans release --wipe of target and asserts a refusal that
// says want, with nothing written.
func (r *stackRig) refusedWipe(t *testing.T, target string, want ...string) {
	t.Helper()
	r.h.ResetLog()
	_, err := disk.PlanRelease(context.Background(), target, disk.ReleaseOptions{Wipe: true}, r.deps())
	if !errors.Is(err, disk.ErrRefused) {
		t.Fatalf("release %s --wipe: %v, want a refusal", target, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the refusal is more than one line: %q", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("refused, yet wrote: %v", w)
	}
}

func lvmOn(vg string, reqs ...disk.Request) stackCase {
	return stackCase{reqs: reqs, stack: stack.StackRequest{Groups: []stack.GroupSpec{{VG: vg, Volumes: []stack.LVSpec{
		{Name: "scratch", SizeBytes: 512 << 20, Volume: stack.VolumeSpec{FS: "ext4", Mount: "/mnt/scratch", Persist: true}},
		{Name: "vm", Volume: stack.VolumeSpec{FS: "xfs", Mount: "/mnt/vm"}},
	}}}}}
}

// A group, a swap partition and nothing else on one disk.
func TestReleaseWipeAfterReleaseLVM(t *testing.T) {
	r := newStackRig(t, "sdb")
	r.prepare(t, lvmOn("fast", disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{SizeBytes: 256 << 20, FS: "swap", Persist: true}, {Use: "lvm:fast"}}}))
	parts := r.h.Extents("sdb")
	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{})
	if got := strings.Join(r.h.LVs(), ","); got != "fast/scratch inactive,fast/vm inactive" {
		t.Fatalf("after release without --wipe, lvs: %s", got)
	}
	if got := strings.Join(r.h.PVs(), ","); got != "/dev/sdb2 fast" || len(r.h.Stacks())+len(r.h.Swaps()) != 0 {
		t.Fatalf("after release without --wipe: pvs %s, stacks %q, swap %q", got, r.h.Stacks(), r.h.Swaps())
	}

	r.h.ResetLog()
	p, err := disk.PlanRelease(context.Background(), "/dev/sdb", disk.ReleaseOptions{Wipe: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("planning wrote: %v", w)
	}
	var b bytes.Buffer
	p.WriteText(&b)
	golden.Check(t, filepath.Join("testdata", "stacks", "release-inactive-lvm-wipe.txt"), b.Bytes())
	// The group is no longer mounted with diskprep's marker: nothing
	// says diskprep made it, so the wipe waits for a yes.
	if !p.NeedsConfirmation {
		t.Error("an inactive group's wipe needs no confirmation")
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "not made by diskprep: /dev/sdb (FAKE SSD, serial FAKE0001, 2 GiB)") {
		t.Fatalf("unconfirmed wipe of an inactive group: %v, want a refusal naming the disk", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Fatalf("an unconfirmed wipe wrote: %v", w)
	}
	p.Confirmed = true
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	if pvs, lvs := r.h.PVs(), r.h.LVs(); len(pvs)+len(lvs) != 0 {
		t.Errorf("lvm still sees pvs %q, lvs %q", pvs, lvs)
	}
	r.blankAt(t, "sdb", parts)
	golden.Check(t, filepath.Join("testdata", "effects", "release-inactive-lvm-wipe.log"), []byte(r.h.Transcript()))
}

// A device written between the plan (and its question) and the apply:
// the wipe would clear what nobody was shown, so the apply refuses once
// the disks are locked, one line naming then and now, nothing written.
func TestReleaseWipeRefusesWhatChangedSincePlanned(t *testing.T) {
	r := newStackRig(t, "sdb")
	r.prepare(t, lvmOn("fast", disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{SizeBytes: 256 << 20, FS: "swap", Persist: true}, {Use: "lvm:fast"}}}))
	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{})
	p, err := disk.PlanRelease(context.Background(), "/dev/sdb", disk.ReleaseOptions{Wipe: true, Yes: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	r.byHand(t, "mkfs.ext4", "-U", "0f0e0d0c-0b0a-4908-8706-050403020100", "/dev/sdb1")
	r.h.ResetLog()
	_, err = disk.ApplyRelease(context.Background(), p, r.deps())
	if !errors.Is(err, disk.ErrRefused) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "what is on /dev/sdb1 changed since the release was planned (then: swap") || !strings.Contains(err.Error(), "now: ext4") {
		t.Fatalf("apply after a change: %v, want one line naming sdb1 then and now", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("refused, yet wrote: %v", w)
	}
	if sigs := strings.Join(r.h.Signatures("sdb1"), ","); sigs != "ext4" {
		t.Errorf("sdb1 after the refusal: %s, want the ext4 made by hand", sigs)
	}
	// Planned again, it is shown and goes.
	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{Wipe: true, Yes: true})
	if sigs := r.h.Signatures("sdb"); len(sigs) != 0 {
		t.Errorf("sdb after the second release: %v", sigs)
	}
}

// A group across two disks, made inactive by the release of one: wiping
// only that one would leave the group on the other naming a missing PV.
func TestReleaseWipeAfterReleaseLVMSpanning(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	r.prepare(t, lvmOn("fast", member("/dev/sdb", "lvm:fast"), member("/dev/sdc", "lvm:fast")))
	sdb, sdc := r.h.Extents("sdb"), r.h.Extents("sdc")
	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{})
	for _, d := range []string{"/dev/sdb", "/dev/sdc"} {
		r.refusedWipe(t, d, "inactive vg fast", "not released", "vgchange --activate y fast", "diskprep release /dev/fast/scratch --wipe")
	}
	if got := strings.Join(r.h.PVs(), ","); got != "/dev/sdb1 fast,/dev/sdc1 fast" {
		t.Errorf("after the refusals, pvs: %s", got)
	}

	// What the refusal says to do removes all of it, from both disks.
	r.byHand(t, "vgchange", "--activate", "y", "fast")
	r.releaseOf(t, "/dev/fast/scratch", disk.ReleaseOptions{Wipe: true, Yes: true})
	if pvs, lvs := r.h.PVs(), r.h.LVs(); len(pvs)+len(lvs) != 0 {
		t.Errorf("lvm still sees pvs %q, lvs %q", pvs, lvs)
	}
	r.blankAt(t, "sdb", sdb)
	r.blankAt(t, "sdc", sdc)
}

// A running group across two disks is taken down whole by release
// --wipe of one of them, as it always was (naming a member names the
// stack; the dry run lists the other disk's steps): the refusal above is
// for a group that is not running, which nothing else names.
func TestReleaseWipeActiveGroupSpanning(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	r.prepare(t, lvmOn("fast", member("/dev/sdb", "lvm:fast"), member("/dev/sdc", "lvm:fast")))
	sdb, sdc := r.h.Extents("sdb"), r.h.Extents("sdc")
	p := r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{Wipe: true})
	if got := strings.Join(p.Stacks.PVRemove, ","); got != "/dev/sdb1,/dev/sdc1" {
		t.Errorf("pvremove %s", got)
	}
	r.blankAt(t, "sdb", sdb)
	r.blankAt(t, "sdc", sdc)
}

// A group whose other disk is gone (pvs shows it as [unknown]): refused,
// the group cannot be removed whole.
func TestReleaseWipeGroupMissingPV(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	r.prepare(t, lvmOn("fast", member("/dev/sdb", "lvm:fast"), member("/dev/sdc", "lvm:fast")))
	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{})
	// What release --wipe of sdc did before: its own signatures only.
	for _, d := range []string{"/dev/sdc1", "/dev/sdc"} {
		r.byHand(t, "wipefs", "--all", d)
	}
	if got := strings.Join(r.h.PVs(), ","); got != "/dev/sdb1 fast,[unknown] fast" {
		t.Fatalf("pvs after sdc's wipe: %s", got)
	}
	r.refusedWipe(t, "/dev/sdb", "/dev/sdb1 is a physical volume of vg fast, which is missing another", "vgreduce --removemissing fast")
}

// An md mirror on two disks, stopped by the release of one.
func TestReleaseWipeAfterReleaseRAID(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	r.prepare(t, raid1Data())
	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{})
	for _, d := range []string{"/dev/sdb", "/dev/sdc"} {
		other := map[string]string{"/dev/sdb": "/dev/sdc1", "/dev/sdc": "/dev/sdb1"}[d]
		r.refusedWipe(t, d, "stopped md array data", "also has "+other+", not released", "mdadm --assemble --scan", "diskprep release /dev/md/data --wipe")
	}
	for _, d := range []string{"sdb1", "sdc1"} {
		if sigs := strings.Join(r.h.Signatures(d), ","); sigs != "linux_raid_member" {
			t.Errorf("%s after the refusals: %s", d, sigs)
		}
	}
}

// An md mirror of two partitions of one disk: zeroed, wiped, blank.
func TestReleaseWipeAfterReleaseRAIDOneDisk(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	c := raid1Data()
	c.reqs = []disk.Request{{Device: "/dev/sdb", Partitions: []disk.PartSpec{{SizeBytes: 512 << 20, Use: "raid:data"}, {SizeBytes: 512 << 20, Use: "raid:data"}}}}
	r.prepare(t, c)
	parts := r.h.Extents("sdb")
	r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{})
	r.h.ResetLog()
	p := r.releaseOf(t, "/dev/sdb", disk.ReleaseOptions{Wipe: true, Yes: true})
	if got := strings.Join(p.Stacks.MDZero, ","); got != "/dev/sdb1,/dev/sdb2" {
		t.Errorf("superblocks zeroed: %s", got)
	}
	r.blankAt(t, "sdb", parts)
	for _, e := range r.h.Writes() {
		if strings.Contains(e.String(), "sdc") {
			t.Errorf("wrote to a disk not named: %s", e)
		}
	}
}

// bcache: detached, stopped and unregistered by the first release, so the
// backing and the cache device no longer name each other: each disk's
// --wipe leaves it blank and never touches the other.
func TestReleaseWipeAfterReleaseBcache(t *testing.T) {
	r := newCacheRig(t)
	r.prepare(t, cacheCase("bcache", "writeback"))
	sdb, sdc := r.h.Extents("sdb"), r.h.Extents("sdc")
	r.releaseOf(t, "/mnt/srv", disk.ReleaseOptions{})
	for _, c := range []struct {
		disk  string
		parts []hosttest.Extent
		other string
	}{{"sdb", sdb, "sdc"}, {"sdc", sdc, "sdb"}} {
		r.h.ResetLog()
		r.releaseOf(t, "/dev/"+c.disk, disk.ReleaseOptions{Wipe: true, Yes: true})
		r.blankAt(t, c.disk, c.parts)
		for _, e := range r.h.Writes() {
			if strings.Contains(e.String(), c.other) {
				t.Errorf("release --wipe of %s wrote to %s: %s", c.disk, c.other, e)
			}
		}
	}
}

// lvmcache and writecache: the first release splits the cache off and
// deactivates the group, which stays across both disks: refused; what
// the refusal says removes it from both.
func TestReleaseWipeAfterReleaseLVMCache(t *testing.T) {
	for _, c := range []struct{ kind, mode string }{{"lvmcache", "writethrough"}, {"writecache", "writeback"}} {
		t.Run(c.kind, func(t *testing.T) {
			r := newCacheRig(t)
			r.prepare(t, cacheCase(c.kind, c.mode))
			sdb, sdc := r.h.Extents("sdb"), r.h.Extents("sdc")
			r.releaseOf(t, "/mnt/srv", disk.ReleaseOptions{})
			r.refusedWipe(t, "/dev/sdb", "/dev/sdb1 is a physical volume of the inactive vg srv, which is also on /dev/sdc1, not released", "vgchange --activate y srv")
			r.byHand(t, "vgchange", "--activate", "y", "srv")
			r.releaseOf(t, "/dev/srv/srv", disk.ReleaseOptions{Wipe: true, Yes: true})
			if pvs, lvs := r.h.PVs(), r.h.LVs(); len(pvs)+len(lvs) != 0 {
				t.Errorf("lvm still sees pvs %q, lvs %q", pvs, lvs)
			}
			r.blankAt(t, "sdb", sdb)
			r.blankAt(t, "sdc", sdc)
		})
	}
}

// A volume its user unmounted, its fstab line left: release --wipe of
// the mount point follows the line to the volume and takes its stack
// down as it does when the point is mounted. With the LUKS mapping closed
// as well, nothing holds the line's file system: the wipe is refused,
// nothing written, rather than reported done with the stack left.
func TestReleaseWipeUnmountedPoint(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc", "sdd")
	r.prepare(t, cryptCase())
	r.h.ByOthers(func() {
		if err := r.h.Unmount("/mnt/home"); err != nil {
			t.Fatal(err)
		}
	})
	r.h.ResetLog()
	p, err := disk.PlanRelease(context.Background(), "/mnt/home", disk.ReleaseOptions{Wipe: true, Yes: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	r.wipeHome(t, p, "/mnt/home is not mounted", "its fstab line names /dev/dm-")

	r.h.ByOthers(func() {
		if err := r.h.Unmount("/mnt/data"); err != nil {
			t.Fatal(err)
		}
	})
	r.byHand(t, "cryptsetup", "close", "data_crypt")
	r.refusedWipe(t, "/mnt/data", "/mnt/data is not mounted and no device here holds the file system its fstab line names (UUID=", "drop --wipe")
}
