package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/hosttest/dryrun"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/internal/golden"
)

// The storage stacks on the recording fake: every shape (md RAID1 with
// xfs, RAID0/RAID10 geometry, an LVM group across two disks with two
// volumes, swap) planned, applied, rerun and released, each asserting the
// exact ordered effect log (testdata/effects/stack-*.log, -update rewrites
// them).

const stackDisk = 2 << 30

type stackRig struct {
	h *hosttest.Host
	n int
}

func newStackRig(t *testing.T, disks ...string) *stackRig {
	t.Helper()
	h := hosttest.New()
	h.SetFile("/mnt/.keep", nil)
	h.SetFile("/etc/mdadm/.keep", nil) // Debian's layout
	dryrun.Hold(t, h)
	for i, name := range disks {
		h.AddDisk(hosttest.Disk{Name: name, Minor: uint32(16 * (i + 1)), SizeBytes: stackDisk, Model: "FAKE SSD", Serial: fmt.Sprintf("FAKE%04d", i+1)})
	}
	return &stackRig{h: h}
}

func (r *stackRig) planner() stack.Planner {
	return stack.Planner{Planner: disk.Planner{Host: r.h, NewUUID: func() string {
		r.n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", r.n)
	}}}
}

func (r *stackRig) deps() disk.Deps {
	return disk.Deps{Host: r.h, Refresh: r.h.Facts, Now: func() time.Time { return time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC) }, Layers: stack.Layers{}}
}

// stackCase is one whole prepare: the disks' requests and the stacks.
type stackCase struct {
	reqs  []disk.Request
	stack stack.StackRequest
}

// plan plans the disks and then the stacks, as prepare does.
func (r *stackRig) plan(c stackCase) ([]*disk.Plan, *stack.StackPlan, error) {
	pl := r.planner()
	facts := r.h.FactsNow()
	var plans []*disk.Plan
	for _, q := range c.reqs {
		p, err := pl.PlanDisk(q, facts)
		if err != nil {
			return nil, nil, err
		}
		plans = append(plans, p)
	}
	sp, err := pl.PlanStacks(context.Background(), c.stack, plans, c.reqs, facts)
	return plans, sp, err
}

func (r *stackRig) apply(plans []*disk.Plan, sp *stack.StackPlan) (*stack.StackResult, error) {
	for _, p := range plans {
		if _, err := disk.Apply(context.Background(), p, r.deps()); err != nil {
			return nil, err
		}
	}
	return stack.ApplyStacks(context.Background(), sp, r.deps())
}

func (r *stackRig) prepare(t *testing.T, c stackCase) *stack.StackResult {
	t.Helper()
	plans, sp, err := r.plan(c)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	res, err := r.apply(plans, sp)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return res
}

func member(dev, use string) disk.Request {
	return disk.Request{Device: dev, Partitions: []disk.PartSpec{{Use: use}}}
}

func raid1Data() stackCase {
	return stackCase{
		reqs: []disk.Request{member("/dev/sdb", "raid:data"), member("/dev/sdc", "raid:data")},
		stack: stack.StackRequest{Arrays: []stack.ArraySpec{{Name: "data", Level: 1,
			Volume: stack.VolumeSpec{FS: "xfs", Label: "data", Mount: "/mnt/data", Persist: true}}}},
	}
}

func lvmFast() stackCase {
	return stackCase{
		reqs: []disk.Request{
			{Device: "/dev/sdb", Partitions: []disk.PartSpec{{SizeBytes: 256 << 20, FS: "swap", Persist: true}, {Use: "lvm:fast"}}},
			member("/dev/sdc", "lvm:fast"),
		},
		stack: stack.StackRequest{Groups: []stack.GroupSpec{{VG: "fast", Volumes: []stack.LVSpec{
			{Name: "scratch", SizeBytes: 1 << 30, Volume: stack.VolumeSpec{FS: "ext4", Mount: "/mnt/scratch", Persist: true}},
			{Name: "vm", Volume: stack.VolumeSpec{FS: "xfs", Mount: "/mnt/vm"}},
		}}}},
	}
}

// combined is the "done when" plan: a mirror, a volume group with
// two volumes and a swap partition.
func combined() stackCase {
	a, b := raid1Data(), lvmFast()
	return stackCase{reqs: append(a.reqs[:2:2], disk.Request{Device: "/dev/sdd", Partitions: []disk.PartSpec{{SizeBytes: 256 << 20, FS: "swap", Persist: true}, {Use: "lvm:fast"}}},
		member("/dev/sde", "lvm:fast")),
		stack: stack.StackRequest{Arrays: a.stack.Arrays, Groups: b.stack.Groups}}
}

func TestStackRAID1(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	res := r.prepare(t, raid1Data())
	if len(res.Arrays) != 1 || !res.Arrays[0].Created || res.Arrays[0].Node != "md127" || !res.Arrays[0].ConfAdded || !res.Changed {
		t.Fatalf("result %+v", res)
	}
	v := res.Arrays[0].Volume
	if !v.Formatted || !v.Mounted || !v.FstabAdded || v.UUID == "" || v.Geometry != "" || res.Arrays[0].MdadmVersion == "" {
		t.Errorf("volume %+v", v)
	}
	if got := r.h.Stacks(); len(got) != 1 || got[0] != "md127 md data raid1 sdb1,sdc1" {
		t.Errorf("stacks %q", got)
	}
	conf := string(r.h.File("/etc/mdadm/mdadm.conf"))
	if !strings.Contains(conf, "# diskprep: md data") || !strings.Contains(conf, "ARRAY /dev/md/data metadata=1.2 UUID="+res.Arrays[0].UUID) {
		t.Errorf("mdadm.conf:\n%s", conf)
	}
	if f := string(r.h.File("/etc/fstab")); !strings.Contains(f, "UUID="+v.UUID+"\t/mnt/data\txfs\tdefaults,nofail") {
		t.Errorf("fstab:\n%s", f)
	}
	golden.Check(t, filepath.Join("testdata", "effects", "stack-raid1.log"), []byte(r.h.Transcript()))

	// The same plan again: already prepared as asked, nothing written.
	r.h.ResetLog()
	plans, sp, err := r.plan(raid1Data())
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Unchanged {
		t.Errorf("rerun plan is not unchanged: %v", sp.Steps())
	}
	res, err = r.apply(plans, sp)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed || res.Arrays[0].Created || res.Arrays[0].Volume.Formatted {
		t.Errorf("rerun changed: %+v", res)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("rerun wrote: %v", w)
	}
}

func TestStackLVMAndSwap(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	res := r.prepare(t, lvmFast())
	if len(res.Groups) != 1 || !res.Groups[0].Created || len(res.Groups[0].PVCreateArgv) != 2 || len(res.Groups[0].Volumes) != 2 {
		t.Fatalf("result %+v", res)
	}
	for _, lv := range res.Groups[0].Volumes {
		if !lv.Created || !lv.Volume.Formatted || !lv.Volume.Mounted {
			t.Errorf("lv %+v", lv)
		}
	}
	if got := r.h.PVs(); strings.Join(got, ";") != "/dev/sdb2 fast;/dev/sdc1 fast" {
		t.Errorf("pvs %q", got)
	}
	if got := r.h.Swaps(); len(got) != 1 || got[0] != "sdb1" {
		t.Errorf("swaps %q", got)
	}
	f := string(r.h.File("/etc/fstab"))
	if !strings.Contains(f, "\tnone\tswap\tdefaults,nofail\t0\t0") || !strings.Contains(f, "\t/mnt/scratch\text4\tdefaults,nofail\t0\t2") {
		t.Errorf("fstab:\n%s", f)
	}
	golden.Check(t, filepath.Join("testdata", "effects", "stack-lvm-swap.log"), []byte(r.h.Transcript()))

	r.h.ResetLog()
	plans, sp, err := r.plan(lvmFast())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if !p.Unchanged {
			t.Errorf("rerun: %s is not unchanged: %v", p.Device, p.Steps())
		}
	}
	if _, err := r.apply(plans, sp); err != nil || !sp.Unchanged {
		t.Fatalf("rerun: %v (unchanged %v: %v)", err, sp.Unchanged, sp.Steps())
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("rerun wrote: %v", w)
	}
}

// The dry run of every shape: the exact ordered steps, with the stripe
// geometry each level implies.
func TestStackPlanGolden(t *testing.T) {
	four := []string{"sdb", "sdc", "sdd", "sde"}
	shape := func(level int, fs string) stackCase {
		c := stackCase{stack: stack.StackRequest{Arrays: []stack.ArraySpec{{Name: "fast", Level: level, Volume: stack.VolumeSpec{FS: fs, Mount: "/mnt/fast"}}}}}
		for _, d := range four {
			c.reqs = append(c.reqs, member("/dev/"+d, "raid:fast"))
		}
		return c
	}
	for name, c := range map[string]stackCase{
		"raid0-xfs":  shape(0, "xfs"),
		"raid10-xfs": shape(10, "xfs"),
		"raid5-ext4": shape(5, "ext4"),
		"raid6-xfs":  shape(6, "xfs"),
		"combined":   combined(),
		"raid1-data": raid1Data(),
		"lvm-swap":   lvmFast(),
		"no-discard": func() stackCase {
			c := raid1Data()
			c.reqs[0].NoDiscard, c.reqs[1].NoDiscard, c.stack.NoDiscard = true, true, true
			return c
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			r := newStackRig(t, four...)
			plans, sp, err := r.plan(c)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for _, p := range plans {
				p.WriteText(&b)
			}
			sp.WriteText(&b)
			golden.Check(t, filepath.Join("testdata", "stacks", name+".txt"), b.Bytes())
			if w := r.h.Writes(); len(w) > 0 {
				t.Errorf("planning wrote: %v", w)
			}
		})
	}
}

func TestStackGeometry(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc", "sdd", "sde")
	for _, c := range []struct {
		level     int
		fs        string
		noDiscard bool
		want      string // in the mkfs argv
		geometry  string // in the plan and the result
	}{
		{0, "xfs", false, "-d su=512k,sw=4", "su=512k,sw=4"},
		{10, "xfs", false, "-d su=512k,sw=2", "su=512k,sw=2"},
		{10, "xfs", true, "-K -d su=512k,sw=2", "su=512k,sw=2"},
		// The stride is in 4 KiB blocks, so the block size is said: an
		// array under 512 MiB would otherwise get 1 KiB blocks.
		{5, "ext4", false, "-b 4096 -E stride=128,stripe_width=384", "stride=128,stripe_width=384"},
		// One -E: mke2fs keeps only the last, which would drop nodiscard.
		{0, "ext4", true, "-b 4096 -E nodiscard,stride=128,stripe_width=512", "stride=128,stripe_width=512"},
		{6, "xfs", false, "-d su=512k,sw=2", "su=512k,sw=2"},
		{1, "xfs", false, "", ""},
		{1, "ext4", true, "-E nodiscard", ""},
	} {
		var reqs []disk.Request
		for _, d := range []string{"sdb", "sdc", "sdd", "sde"} {
			reqs = append(reqs, member("/dev/"+d, "raid:a"))
		}
		st := stack.StackRequest{Options: stack.Options{NoDiscard: c.noDiscard}, Arrays: []stack.ArraySpec{{Name: "a", Level: c.level, Volume: stack.VolumeSpec{FS: c.fs}}}}
		_, sp, err := r.plan(stackCase{reqs: reqs, stack: st})
		if err != nil {
			t.Fatal(err)
		}
		v := sp.Arrays[0].Volume
		mkfs := disk.QuoteArgv(v.Mkfs)
		if c.want != "" && !strings.Contains(mkfs, " "+c.want+" ") || c.geometry == "" && (strings.Contains(mkfs, "su=") || strings.Contains(mkfs, "stride") || sp.Arrays[0].ChunkBytes != 0) {
			t.Errorf("raid%d %s: mkfs %s, want %q", c.level, c.fs, mkfs, c.want)
		}
		if strings.Count(mkfs, " -E ") > 1 || strings.Count(mkfs, " -d ") > 1 {
			t.Errorf("raid%d %s: mkfs %s repeats an option mkfs keeps only the last of", c.level, c.fs, mkfs)
		}
		if v.Geometry != c.geometry {
			t.Errorf("raid%d %s: plan geometry %q, want %q", c.level, c.fs, v.Geometry, c.geometry)
		}
	}
	// Under 1 GiB xfs gets no geometry (mkfs.xfs fails with it there, and
	// ignores the volume's own), and the plan says why; ext4 keeps it.
	for _, fs := range []string{"xfs", "ext4"} {
		small := hosttest.New()
		small.SetFile("/mnt/.keep", nil)
		var reqs []disk.Request
		for i, name := range []string{"sdb", "sdc", "sdd", "sde"} {
			small.AddDisk(hosttest.Disk{Name: name, Minor: uint32(16 * (i + 1)), SizeBytes: 256 << 20, Model: "FAKE SSD", Serial: fmt.Sprintf("SMALL%d", i)})
			reqs = append(reqs, member("/dev/"+name, "raid:a"))
		}
		r := &stackRig{h: small}
		_, sp, err := r.plan(stackCase{reqs: reqs, stack: stack.StackRequest{Arrays: []stack.ArraySpec{{Name: "a", Level: 10, Volume: stack.VolumeSpec{FS: fs}}}}})
		if err != nil {
			t.Fatal(err)
		}
		v := sp.Arrays[0].Volume
		mkfs := disk.QuoteArgv(v.Mkfs)
		note := strings.Join(sp.Notes, "\n")
		switch {
		case fs == "xfs" && (v.Geometry != "" || strings.Contains(mkfs, "su=") || !strings.Contains(note, "md array a is under 1 GiB: its xfs is made without the stripe geometry")):
			t.Errorf("raid10 of 4 x 256 MiB, xfs: geometry %q, mkfs %s, notes %q", v.Geometry, mkfs, sp.Notes)
		case fs == "ext4" && (v.Geometry != "stride=128,stripe_width=256" || note != ""):
			t.Errorf("raid10 of 4 x 256 MiB, ext4: geometry %q, mkfs %s, notes %q", v.Geometry, mkfs, sp.Notes)
		}
	}
	// The result says what mkfs got.
	r = newStackRig(t, "sdb", "sdc", "sdd", "sde")
	var reqs []disk.Request
	for _, d := range []string{"sdb", "sdc", "sdd", "sde"} {
		reqs = append(reqs, member("/dev/"+d, "raid:a"))
	}
	res := r.prepare(t, stackCase{reqs: reqs, stack: stack.StackRequest{Arrays: []stack.ArraySpec{{Name: "a", Level: 0, Volume: stack.VolumeSpec{FS: "ext4"}}}}})
	v := res.Arrays[0].Volume
	if v.Geometry != "stride=128,stripe_width=512" || !strings.Contains(disk.QuoteArgv(v.MkfsArgv), "-b 4096 -E stride=128,stripe_width=512") {
		t.Errorf("result: geometry %q, mkfs %q", v.Geometry, disk.QuoteArgv(v.MkfsArgv))
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil || !strings.Contains(b.String(), "(stripe geometry stride=128,stripe_width=512)") {
		t.Errorf("result text (%v):\n%s", err, b.String())
	}
}

func TestStackCombinedRerunAndRelease(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc", "sdd", "sde")
	res := r.prepare(t, combined())
	if !res.Changed || len(res.Arrays) != 1 || len(res.Groups) != 1 {
		t.Fatalf("result %+v", res)
	}
	r.h.ResetLog()
	plans, sp, err := r.plan(combined())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.apply(plans, sp); err != nil || !sp.Unchanged {
		t.Fatalf("rerun: %v, unchanged %v", err, sp.Unchanged)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("rerun wrote: %v", w)
	}
}

func TestStackRefusals(t *testing.T) {
	t.Run("member-in-another-array", func(t *testing.T) {
		r := newStackRig(t, "sdb", "sdc", "sdd")
		r.prepare(t, stackCase{reqs: []disk.Request{member("/dev/sdb", "raid:old"), member("/dev/sdc", "raid:old")},
			stack: stack.StackRequest{Arrays: []stack.ArraySpec{{Name: "old", Level: 1, Volume: stack.VolumeSpec{FS: "xfs"}}}}})
		r.h.ResetLog()
		c := raid1Data()
		c.reqs[1].Device = "/dev/sdd"
		c.reqs[0].Wipe = true
		_, _, err := r.plan(c)
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "sdb1 is held by md md127 (old)") {
			t.Errorf("plan: %v, want a refusal naming md127", err)
		}
		if w := r.h.Writes(); len(w) > 0 {
			t.Errorf("refused, yet written: %v", w)
		}
	})
	t.Run("mount-point-taken", func(t *testing.T) {
		r := newStackRig(t, "sdb", "sdc")
		r.h.MountOther("/dev/sdz1", "/mnt/data")
		r.h.ResetLog()
		_, _, err := r.plan(raid1Data())
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "/mnt/data is already a mount point (of /dev/sdz1)") {
			t.Errorf("plan: %v", err)
		}
		r.h.SetFile("/etc/fstab", []byte("LABEL=old\t/mnt/scratch\text4\tdefaults\t0 0\n"))
		r2 := newStackRig(t, "sdb", "sdc")
		r2.h.SetFile("/etc/fstab", []byte("LABEL=old\t/mnt/scratch\text4\tdefaults\t0 0\n"))
		_, _, err = r2.plan(lvmFast())
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "/etc/fstab line 1 already says") {
			t.Errorf("plan: %v", err)
		}
		if w := append(r.h.Writes(), r2.h.Writes()...); len(w) > 0 {
			t.Errorf("refused, yet written: %v", w)
		}
	})
	t.Run("built-differently", func(t *testing.T) {
		r := newStackRig(t, "sdb", "sdc")
		r.prepare(t, raid1Data())
		r.h.ResetLog()
		c := raid1Data()
		c.stack.Arrays[0].Volume.FS = "ext4"
		_, _, err := r.plan(c)
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "/dev/md/data holds xfs label \"data\", not the ext4 asked (pass --wipe") {
			t.Errorf("plan: %v", err)
		}
		c = raid1Data()
		c.stack.Arrays[0].Level = 0
		_, _, err = r.plan(c)
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "is raid1, not raid0 asked") {
			t.Errorf("plan: %v", err)
		}
		if w := r.h.Writes(); len(w) > 0 {
			t.Errorf("refused, yet written: %v", w)
		}
	})
}

func TestStackBadInput(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	for name, c := range map[string]struct {
		c    stackCase
		want string
	}{
		"unknown-level": {func() stackCase { c := raid1Data(); c.stack.Arrays[0].Level = 3; return c }(), "unknown level 3"},
		"too-few": {func() stackCase {
			c := raid1Data()
			c.stack.Arrays[0].Level = 5
			return c
		}(), "level 5 needs at least 3 members, 2 partitions say use: raid:data"},
		"lv-larger-than-vg": {func() stackCase {
			c := lvmFast()
			c.stack.Groups[0].Volumes[0].SizeBytes = 8 << 30
			return c
		}(), "lvm vg fast: the volumes need 8.0 GiB"},
		"undeclared":    {stackCase{reqs: []disk.Request{member("/dev/sdb", "raid:nope")}}, "says use: raid:nope, but no raid: (name: nope) declares it"},
		"swap-on-stack": {func() stackCase { c := raid1Data(); c.stack.Arrays[0].Volume = stack.VolumeSpec{FS: "swap"}; return c }(), "swap belongs on a partition"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := r.plan(c.c)
			if !errors.Is(err, disk.ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("plan: %v, want bad input saying %q", err, c.want)
			}
		})
	}
	swapMount := disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{FS: "swap", Mount: "/swap"}}}
	if err := swapMount.Validate(); !errors.Is(err, disk.ErrUsage) || !strings.Contains(err.Error(), "a swap partition has no mount point") {
		t.Errorf("swap with a mount point: %v", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("bad input, yet written: %v", w)
	}
	// A VG of that name on other disks.
	r2 := newStackRig(t, "sdb", "sdc", "sdd")
	r2.prepare(t, stackCase{reqs: []disk.Request{member("/dev/sdd", "lvm:fast")},
		stack: stack.StackRequest{Groups: []stack.GroupSpec{{VG: "fast", Volumes: []stack.LVSpec{{Name: "x", Volume: stack.VolumeSpec{FS: "xfs"}}}}}}})
	c := lvmFast()
	c.stack.Groups[0].Origin = "plan.yaml:9"
	if _, _, err := r2.plan(c); !errors.Is(err, disk.ErrUsage) || !strings.Contains(err.Error(), "plan.yaml:9: lvm vg fast already exists on /dev/sdd1") {
		t.Errorf("vg elsewhere: %v", err)
	}
}

func TestStackRelease(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc", "sdd", "sde")
	r.prepare(t, combined())
	r.h.ResetLog()

	// Without --wipe: unmounted, fstab lines and the mdadm.conf line gone,
	// the array stopped and the group deactivated, the data kept.
	p, err := disk.PlanRelease(context.Background(), "/dev/sdb", disk.ReleaseOptions{}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	if p.Stacks == nil || strings.Join(p.Stacks.MDStop, ",") != "/dev/md127" || len(p.Stacks.MdadmConfRemove) != 1 || len(p.Stacks.MDZero) != 0 || len(p.Unmount) != 1 || p.Unmount[0] != "/mnt/data" {
		t.Fatalf("release plan of a RAID member: %+v %+v", p, p.Stacks)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("planning the release wrote: %v", w)
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	if got := r.h.Stacks(); len(got) != 2 || strings.Contains(strings.Join(got, " "), "md127") {
		t.Errorf("stacks after the release of the mirror: %q", got)
	}
	if strings.Contains(string(r.h.File("/etc/mdadm/mdadm.conf")), "ARRAY") || strings.Contains(string(r.h.File("/etc/fstab")), "/mnt/data") {
		t.Errorf("mdadm.conf or fstab still name the array:\n%s\n%s", r.h.File("/etc/mdadm/mdadm.conf"), r.h.File("/etc/fstab"))
	}
	if sigs := strings.Join(r.h.Signatures("sdb1"), ","); !strings.Contains(sigs, "linux_raid_member") {
		t.Errorf("without --wipe the member's superblock went: %s", sigs)
	}

	// With --wipe, the volume group across sdd and sde, and the swap
	// partition on sdd: everything undone in reverse, the disks blank.
	r.h.ResetLog()
	p, err = disk.PlanRelease(context.Background(), "/mnt/scratch", disk.ReleaseOptions{Wipe: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	p.WriteText(&b)
	golden.Check(t, filepath.Join("testdata", "stacks", "release-lvm-wipe.txt"), b.Bytes())
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	if got := r.h.Stacks(); len(got) != 0 {
		t.Errorf("stacks left: %q", got)
	}
	if got := r.h.PVs(); len(got) != 0 {
		t.Errorf("physical volumes left: %q", got)
	}
	for _, d := range []string{"sde"} {
		if sigs := r.h.Signatures(d); len(sigs) != 0 {
			t.Errorf("%s is not signature-free after release --wipe: %v", d, sigs)
		}
	}
	if f := string(r.h.File("/etc/fstab")); strings.Contains(f, "/mnt/scratch") || strings.Contains(f, "/mnt/vm") {
		t.Errorf("fstab:\n%s", f)
	}
	golden.Check(t, filepath.Join("testdata", "effects", "stack-release-lvm-wipe.log"), []byte(r.h.Transcript()))
}

// A kill before every write effect of the combined plan (the fake panics
// there, as SIGKILL would stop the process: only its deferred unlocks and
// closes run), then the same command again: it completes, or refuses with
// a reason that names what is there and points at --wipe. From the first
// stack step on (all partitions made) it must complete.
func TestStackCrashAtEveryStep(t *testing.T) {
	fresh := func() *stackRig { return newStackRig(t, "sdb", "sdc", "sdd", "sde") }
	completed, refused := killAtEveryWrite(t, fresh, combined(), runOf("mdadm", "pvcreate"), func(r *stackRig, n int, before hosttest.Effect) {
		if got := r.h.Stacks(); len(got) != 3 {
			t.Errorf("kill before write %d (%s), rerun: stacks %q", n, before, got)
		}
		if got := strings.Join(r.h.Mounted(), ";"); strings.Count(got, "/mnt/") != 3 {
			t.Errorf("kill before write %d (%s), rerun: mounts %q", n, before, got)
		}
		if got := r.h.Swaps(); len(got) != 1 {
			t.Errorf("kill before write %d (%s), rerun: swaps %q", n, before, got)
		}
		if f := string(r.h.File("/etc/fstab")); strings.Count(f, "\n# diskprep:") != 3 {
			t.Errorf("kill before write %d (%s), rerun: fstab\n%s", n, before, f)
		}
	})
	t.Logf("%d kill points: %d reruns completed, %d refused (a half-written GPT)", completed+refused, completed, refused)
}

// A swap area udev never saw (mkswap wrote it while udev was busy with the
// partition's blkdiscard event, and the run was killed before anything made
// udev look again: the guest crash test's swap-made point) is found in the
// partition's bytes: the rerun neither runs mkswap again nor refuses the
// signature, and the rest of the plan goes on.
func TestStackRerunFindsSignatureUdevMissed(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	c := stackCase{reqs: []disk.Request{member("/dev/sdb", "raid:data"),
		{Device: "/dev/sdc", Partitions: []disk.PartSpec{{SizeBytes: 64 << 20, FS: "swap", Persist: true}, {Use: "raid:data"}}}},
		stack: raid1Data().stack}
	r.prepare(t, c)
	facts := r.h.FactsNow()
	d, _ := facts.Device("/dev/sdc")
	if d == nil || len(d.Partitions) != 2 || d.Partitions[0].FSType != "swap" {
		t.Fatalf("facts of sdc: %+v", d)
	}
	d.Partitions[0].FSType, d.Partitions[0].FSUUID = "", "" // udev's database
	p, err := r.planner().PlanDisk(c.reqs[1], facts)
	if err != nil {
		t.Fatalf("rerun refused: %v", err)
	}
	if !p.Unchanged || p.Partitions[0].Mkfs != nil || p.Partitions[0].FSUUID == "" {
		t.Errorf("rerun plan: unchanged %v, mkfs %q, uuid %q", p.Unchanged, p.Partitions[0].Mkfs, p.Partitions[0].FSUUID)
	}
}

// Killed after mounting and before writing the marker (the guest crash
// test's "mounted" point), the rerun finds the file system mounted on a
// directory that is there: the note written before the mkdir still says
// diskprep made it, so the marker does, and release removes it as after
// an uninterrupted run.
func TestStackRerunKeepsMadeMountPoint(t *testing.T) {
	clean := newStackRig(t, "sdb", "sdc")
	clean.prepare(t, raid1Data())
	kill := -1
	for i, w := range clean.h.Writes() {
		if w.Op == "write-file" && w.Args[0] == "/mnt/data/.diskprep-prepared.json" {
			kill = i
		}
	}
	if kill < 0 {
		t.Fatal("no marker written in the clean run")
	}
	r := newStackRig(t, "sdb", "sdc")
	r.h.CrashAfter(kill)
	func() {
		defer func() {
			if _, ok := recover().(hosttest.Crash); !ok {
				t.Fatal("the first run was not killed before the marker")
			}
		}()
		plans, sp, err := r.plan(raid1Data())
		if err == nil {
			_, err = r.apply(plans, sp)
		}
		t.Fatalf("the first run ended on its own: %v", err)
	}()
	if m := r.h.Mounted(); len(m) != 1 {
		t.Fatalf("after the kill: mounts %q", m)
	}
	r.prepare(t, raid1Data())
	var m disk.Marker
	if err := json.Unmarshal(r.h.File("/mnt/data/.diskprep-prepared.json"), &m); err != nil || !m.MadeMountPoint {
		t.Errorf("rerun's marker: %+v (%v): made_mount_point lost", m, err)
	}
	for _, w := range r.h.Writes() {
		if w.Op == "remove" && strings.Contains(w.Args[0], "/run/diskprep/mountpoints/") {
			return
		}
	}
	t.Errorf("the note of the made mount point was not removed:\n%s", r.h.Transcript())
}

// A stack run stopped by a failure does not claim a mount it did not make;
// a finished run (or a rerun that found it mounted) says where it is.
func TestStackResultTextMounts(t *testing.T) {
	vol := stack.VolumeResult{Device: "/dev/md/data", FS: "xfs", UUID: "u", MountPoint: "/data"}
	for _, c := range []struct {
		name              string
		incomplete, mount bool
		want, wantNot     string
	}{
		{"stopped before the mount", true, false, "mount point /data (not mounted by this run)", "mounted at /data"},
		{"stopped after the mount", true, true, "mounted at /data", "not mounted"},
		{"rerun, found mounted", false, false, "mounted at /data", "not mounted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := vol
			v.Mounted = c.mount
			r := &stack.StackResult{Incomplete: c.incomplete, Changed: true, Arrays: []stack.ArrayResult{{Name: "data", Device: "/dev/md/data", Level: 1, Volume: v}}}
			var b strings.Builder
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), c.want) || strings.Contains(b.String(), c.wantNot) {
				t.Errorf("want %q and not %q in:\n%s", c.want, c.wantNot, b.String())
			}
		})
	}
}
