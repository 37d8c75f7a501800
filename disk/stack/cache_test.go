package stack_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/internal/golden"
)

// Cached volumes (issue 15) on the recording fake, one kind at a time: an
// HDD origin (sdb) and an NVMe-sized cache (sdc), planned, applied, rerun
// and released (flushing first), each asserting the exact ordered effect
// log (testdata/effects/cache-*.log) and dry run (testdata/stacks/cache-*.txt).

func cacheCase(kind, mode string) stackCase {
	return stackCase{
		reqs: []disk.Request{member("/dev/sdb", "origin:srv"), member("/dev/sdc", "cache:srv")},
		stack: stack.StackRequest{Caches: []stack.CacheSpec{{Name: "srv", Kind: kind, Mode: mode,
			Volume: stack.VolumeSpec{FS: "xfs", Label: "srv", Mount: "/mnt/srv", Persist: true}}}},
	}
}

func newCacheRig(t *testing.T) *stackRig {
	r := newStackRig(t)
	r.h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 4 << 30, Model: "FAKE HDD", Serial: "HDD0001", Rotational: true})
	r.h.AddDisk(hosttest.Disk{Name: "sdc", Minor: 32, SizeBytes: 1 << 30, Model: "FAKE SSD", Serial: "SSD0001"})
	return r
}

func TestCacheKinds(t *testing.T) {
	for _, c := range []struct{ kind, mode, golden string }{
		{"", "", "cache-lvmcache"},
		{"writecache", "writeback", "cache-writecache"},
		{"bcache", "writeback", "cache-bcache"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			r := newCacheRig(t)
			plans, sp, err := r.plan(cacheCase(c.kind, c.mode))
			if err != nil {
				t.Fatal(err)
			}
			var dry bytes.Buffer
			for _, p := range plans {
				p.WriteText(&dry)
			}
			sp.WriteText(&dry)
			golden.Check(t, filepath.Join("testdata", "stacks", c.golden+".txt"), dry.Bytes())
			if w := r.h.Writes(); len(w) > 0 {
				t.Errorf("planning wrote: %v", w)
			}
			if wb := strings.Contains(dry.String(), stack.WritebackRisk); wb != (c.mode == "writeback") {
				t.Errorf("the dry run of a %q cache says the writeback risk: %v", c.mode, wb)
			}
			res, err := r.apply(plans, sp)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if len(res.Caches) != 1 || !res.Changed || !res.Caches[0].Volume.Formatted || !res.Caches[0].Volume.Mounted || !res.Caches[0].Volume.FstabAdded {
				t.Fatalf("result %+v", res)
			}
			cr := res.Caches[0]
			if f := string(r.h.File("/etc/fstab")); !strings.Contains(f, "UUID="+cr.Volume.UUID+"\t/mnt/srv\txfs\tdefaults,nofail") {
				t.Errorf("fstab:\n%s", f)
			}
			switch c.kind {
			case "bcache":
				if cr.Device != "/dev/bcache0" || cr.SetUUID == "" {
					t.Errorf("bcache result %+v", cr)
				}
				if got := strings.Join(r.h.Bcache(), ";"); got != "bcache0 sdb1 writeback set="+cr.SetUUID+";set "+cr.SetUUID+" sdc1" {
					t.Errorf("bcache state %q", got)
				}
			default:
				if cr.Device != "/dev/srv/srv" || cr.LVMVersion == "" {
					t.Errorf("lvm result %+v", cr)
				}
				if got := strings.Join(r.h.PVs(), ";"); got != "/dev/sdb1 srv;/dev/sdc1 srv" {
					t.Errorf("pvs %q", got)
				}
			}
			var out bytes.Buffer
			res.WriteText(&out)
			if !strings.Contains(out.String(), "srv (") || (c.mode == "writeback") != strings.Contains(out.String(), stack.WritebackRisk) {
				t.Errorf("result text:\n%s", out.String())
			}
			golden.Check(t, filepath.Join("testdata", "effects", c.golden+".log"), []byte(r.h.Transcript()))

			// The same command again: already prepared as asked.
			r.h.ResetLog()
			plans, sp, err = r.plan(cacheCase(c.kind, c.mode))
			if err != nil {
				t.Fatal(err)
			}
			if !sp.Unchanged {
				t.Errorf("rerun plan is not unchanged: %v", sp.Steps())
			}
			if res, err = r.apply(plans, sp); err != nil || res.Changed {
				t.Errorf("rerun: %v, changed %v", err, res)
			}
			if w := r.h.Writes(); len(w) > 0 {
				t.Errorf("rerun wrote: %v", w)
			}

			// Built differently: refused, naming what is there.
			other := map[string]stackCase{"": cacheCase("writecache", "writeback"), "writecache": cacheCase("lvmcache", ""), "bcache": cacheCase("bcache", "")}[c.kind]
			if c.kind == "" {
				other = cacheCase("lvmcache", "writeback")
			}
			if _, _, err := r.plan(other); c.kind != "bcache" && (!errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "--wipe")) {
				t.Errorf("a cache built differently: %v", err)
			}

			// release --wipe of the HDD: dry run, then flushed, taken
			// apart in reverse, both disks signature-free.
			if c.kind == "bcache" {
				r.h.DirtyBcache("sdb1", 48<<20)
			}
			r.h.ResetLog()
			var progress bytes.Buffer
			deps := r.deps()
			deps.Progress = &progress
			p, err := disk.PlanRelease(context.Background(), "/dev/sdb", disk.ReleaseOptions{Wipe: true}, deps)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			p.WriteText(&b)
			golden.Check(t, filepath.Join("testdata", "stacks", c.golden+"-release.txt"), b.Bytes())
			if w := r.h.Writes(); len(w) > 0 {
				t.Errorf("planning the release wrote: %v", w)
			}
			rr, err := disk.ApplyRelease(context.Background(), p, deps)
			if err != nil {
				t.Fatalf("release: %v (did %v)", err, rr)
			}
			if got := append(append(r.h.Stacks(), r.h.PVs()...), r.h.Bcache()...); len(got) != 0 {
				t.Errorf("left after release --wipe: %q", got)
			}
			for _, d := range []string{"sdb", "sdc"} {
				if sigs := r.h.Signatures(d); len(sigs) != 0 {
					t.Errorf("%s is not signature-free after release --wipe: %v", d, sigs)
				}
			}
			if f := string(r.h.File("/etc/fstab")); strings.Contains(f, "/mnt/srv") {
				t.Errorf("fstab:\n%s", f)
			}
			if !strings.Contains(progress.String(), "flush") && !strings.Contains(progress.String(), "dirty data left") {
				t.Errorf("no flush progress:\n%s", progress.String())
			}
			if c.kind == "bcache" && !strings.Contains(progress.String(), "bcache0: 48 MiB of dirty data to write back to sdb1 first") {
				t.Errorf("bcache flush progress:\n%s", progress.String())
			}
			// The detach comes before the wait: only a detach cuts short
			// the writeback thread's 30 s sleep (the fake's detach, like
			// the kernel's, waits for the dirty data before it detaches).
			if steps := strings.Join(rr.StackSteps, "\n"); c.kind == "bcache" &&
				!strings.Contains(steps, "bcache/detach\nwaited for /sys/class/block/sdb1/bcache/dirty_data to reach 0 and the cache to be detached") {
				t.Errorf("bcache release steps:\n%s", steps)
			}
			golden.Check(t, filepath.Join("testdata", "effects", c.golden+"-release.log"), []byte(r.h.Transcript()))
		})
	}
}

// Without --wipe the data stays: the cache is flushed and split off
// (lvm) or detached and stopped (bcache), the origin keeps the file
// system.
func TestCacheReleaseKeepsData(t *testing.T) {
	for _, kind := range []string{"lvmcache", "bcache"} {
		t.Run(kind, func(t *testing.T) {
			r := newCacheRig(t)
			r.prepare(t, cacheCase(kind, "writeback"))
			r.h.ResetLog()
			p, err := disk.PlanRelease(context.Background(), "/mnt/srv", disk.ReleaseOptions{}, r.deps())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			p.WriteText(&b)
			steps := b.String()
			switch kind {
			case "lvmcache":
				if !strings.Contains(steps, "lvconvert --yes --splitcache srv/srv") || !strings.Contains(steps, "vgchange --activate n srv") {
					t.Errorf("steps:\n%s", steps)
				}
				if sigs := strings.Join(r.h.Signatures("sdb1"), ","); !strings.Contains(sigs, "LVM2_member") {
					t.Errorf("the origin's PV went without --wipe: %s", sigs)
				}
			case "bcache":
				if !strings.Contains(steps, "echo writethrough > /sys/class/block/sdb1/bcache/cache_mode") || !strings.Contains(steps, "echo 1 > /sys/class/block/sdb1/bcache/detach") {
					t.Errorf("steps:\n%s", steps)
				}
				if got := r.h.Bcache(); len(got) != 0 {
					t.Errorf("still registered: %q", got)
				}
				if sigs := strings.Join(r.h.Signatures("sdb1"), ","); !strings.Contains(sigs, "bcache") {
					t.Errorf("the backing superblock went without --wipe: %s", sigs)
				}
			}
		})
	}
}

func TestCacheBadInput(t *testing.T) {
	for name, c := range map[string]struct {
		c    stackCase
		want string
	}{
		"unknown-kind":         {cacheCase("dmcache", ""), `unknown kind "dmcache"`},
		"unknown-mode":         {cacheCase("", "writearound"), `unknown mode "writearound"`},
		"writecache-through":   {cacheCase("writecache", "writethrough"), "writecache caches writes only"},
		"writecache-default":   {cacheCase("writecache", ""), "writecache caches writes only"},
		"same-disk":            {stackCase{reqs: []disk.Request{{Device: "/dev/sdb", Partitions: []disk.PartSpec{{SizeBytes: 1 << 30, Use: "cache:srv"}, {Use: "origin:srv"}}}}, stack: cacheCase("", "").stack}, "both on /dev/sdb"},
		"no-cache":             {stackCase{reqs: []disk.Request{member("/dev/sdb", "origin:srv")}, stack: cacheCase("", "").stack}, "no partition says use: cache:srv"},
		"no-origin":            {stackCase{reqs: []disk.Request{member("/dev/sdc", "cache:srv")}, stack: cacheCase("", "").stack}, "no partition says use: origin:srv"},
		"undeclared":           {stackCase{reqs: []disk.Request{member("/dev/sdb", "origin:x")}, stack: stack.StackRequest{Arrays: []stack.ArraySpec{}}}, "no cache: (name: x) declares it"},
		"cache-device-on-disk": {stackCase{reqs: []disk.Request{member("/dev/sdb", "origin:srv")}, stack: withCacheDevice(cacheCase("", "").stack, "/dev/sdb2")}, "is on /dev/sdb, the origin's disk"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newCacheRig(t)
			_, _, err := r.plan(c.c)
			if !errors.Is(err, disk.ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a usage error saying %q", err, c.want)
			}
			if w := r.h.Writes(); len(w) > 0 {
				t.Errorf("bad input wrote: %v", w)
			}
		})
	}
}

func withCacheDevice(s stack.StackRequest, dev string) stack.StackRequest {
	s.Caches[0].CacheDevice = dev
	return s
}

// An existing partition as the cache (prepare --cache-device PARTITION):
// used as it is; one that holds a file system is refused unless wipe.
func TestCacheExistingPartition(t *testing.T) {
	r := newCacheRig(t)
	// sdc gets two partitions; the second is the cache.
	r.prepare(t, stackCase{reqs: []disk.Request{{Device: "/dev/sdc", Partitions: []disk.PartSpec{{SizeBytes: 256 << 20, FS: "ext4", Mount: "/mnt/other"}, {FS: "xfs"}}}}})
	inUse := stackCase{reqs: []disk.Request{member("/dev/sdb", "origin:srv")}, stack: withCacheDevice(cacheCase("bcache", "").stack, "/dev/sdc1")}
	if _, _, err := r.plan(inUse); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "sdc1 is mounted at /mnt/other") {
		t.Fatalf("a mounted cache partition: %v", err)
	}
	r.h.ResetLog()
	if _, _, err := r.plan(stackCase{reqs: []disk.Request{member("/dev/sdc", "origin:srv")}, stack: withCacheDevice(cacheCase("", "").stack, "/dev/sdb")}); !errors.Is(err, disk.ErrRefused) {
		t.Fatalf("an origin disk in use: %v", err)
	}
	c := stackCase{reqs: []disk.Request{member("/dev/sdb", "origin:srv")}, stack: withCacheDevice(cacheCase("bcache", "").stack, "/dev/sdc2")}
	if _, _, err := r.plan(c); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "sdc2 holds xfs (pass --wipe") {
		t.Fatalf("a cache partition holding xfs: %v", err)
	}
	c.stack.Wipe = true
	plans, sp, err := r.plan(c)
	if err != nil {
		t.Fatal(err)
	}
	if steps := strings.Join(sp.Steps(), "\n"); !strings.Contains(steps, "wipefs --all /dev/sdc2\nmodprobe bcache\nmake-bcache -B /dev/sdb1") {
		t.Errorf("steps:\n%s", steps)
	}
	if _, err := r.apply(plans, sp); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.h.Mounted(), ";"); !strings.Contains(got, "/mnt/other") || !strings.Contains(got, "/mnt/srv") {
		t.Errorf("mounts %q", got)
	}
	// The other partition in use stays: a release of the cache's
	// partition leaves it mounted.
	p, err := disk.PlanRelease(context.Background(), "/mnt/srv", disk.ReleaseOptions{Wipe: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.h.Mounted(), ";"); !strings.Contains(got, "/mnt/other") || strings.Contains(got, "/mnt/srv") {
		t.Errorf("mounts after release %q", got)
	}
	if got := r.h.Bcache(); len(got) != 0 {
		t.Errorf("bcache left: %q", got)
	}
}

// A kill before every write effect of each kind, then the same command
// again: from the first stack step on it completes.
func TestCacheCrashAtEveryStep(t *testing.T) {
	for _, kind := range []string{"lvmcache", "writecache", "bcache"} {
		t.Run(kind, func(t *testing.T) {
			c := cacheCase(kind, map[string]string{"writecache": "writeback"}[kind])
			fresh := func() *stackRig { return newCacheRig(t) }
			killAtEveryWrite(t, fresh, c, runOf("pvcreate", "modprobe", "make-bcache"), func(r *stackRig, n int, before hosttest.Effect) {
				if got := strings.Join(r.h.Mounted(), ";"); !strings.Contains(got, "/mnt/srv") {
					t.Errorf("kill before write %d (%s), rerun: mounts %q", n, before, got)
				}
				if f := string(r.h.File("/etc/fstab")); strings.Count(f, "\n# diskprep:") != 1 {
					t.Errorf("kill before write %d (%s), rerun: fstab\n%s", n, before, f)
				}
				unchangedOnThirdRun(t, r, c, n, before)
			})
		})
	}
}

func stepsOf(sp *stack.StackPlan) string {
	if sp == nil {
		return ""
	}
	return fmt.Sprint(sp.Steps())
}

// A step that fails: the result says the stacks are not all prepared and
// the cache is not finished, never "already prepared as asked".
func TestCacheFailedStep(t *testing.T) {
	r := newCacheRig(t)
	r.h.Fail("run", "lvconvert", errors.New("device-mapper: reload ioctl failed"))
	plans, sp, err := r.plan(cacheCase("writecache", "writeback"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.apply(plans, sp)
	if err == nil || res == nil || !res.Incomplete || len(res.Caches) != 1 || res.Caches[0].Done {
		t.Fatalf("apply with a failing lvconvert: %v, %+v", err, res)
	}
	var b bytes.Buffer
	res.WriteText(&b)
	if s := b.String(); strings.Contains(s, "already prepared") || !strings.Contains(s, "not all prepared") || !strings.Contains(s, "): not finished") ||
		!strings.Contains(s, "did: lvchange --yes --activate n srv/srv_cache") {
		t.Errorf("result text:\n%s", s)
	}
}

// A small bcache cache partition: make-bcache gets a bucket size that
// makes the 1024 buckets the kernel needs (the fake, like the kernel,
// refuses to register a cache of 512 or fewer). (A stack's partition is
// at least 16 MiB, above the 4 MiB no bucket size can serve:
// TestBcacheBucket has that refusal.)
func TestCacheBcacheSmallCache(t *testing.T) {
	small := func(size uint64) stackCase {
		c := cacheCase("bcache", "writeback")
		c.reqs[1] = disk.Request{Device: "/dev/sdc", Partitions: []disk.PartSpec{{SizeBytes: size, Use: "cache:srv"}}}
		return c
	}
	r := newCacheRig(t)
	plans, sp, err := r.plan(small(48 << 20))
	if err != nil {
		t.Fatal(err)
	}
	if steps := strings.Join(sp.Steps(), "\n"); !regexp.MustCompile(`make-bcache -C --cset-uuid \S+ --bucket 32k /dev/sdc1\n`).MatchString(steps) {
		t.Errorf("steps:\n%s", steps)
	}
	if _, err := r.apply(plans, sp); err != nil {
		t.Fatal(err)
	}
	if got := r.h.Bcache(); len(got) == 0 {
		t.Errorf("no bcache registered")
	}

	// Without the bucket size, the kernel (here the fake) would refuse the
	// small cache: the fake's check is what this test leans on.
	h := hosttest.New()
	h.AddDisk(hosttest.Disk{Name: "sdc", Minor: 32, SizeBytes: 100 << 20})
	for _, argv := range [][]string{{"modprobe", "bcache"}, {"make-bcache", "-C", "/dev/sdc"}} {
		if _, err := h.Run(context.Background(), argv[0], argv[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.WriteSys("/sys/fs/bcache/register_quiet", "/dev/sdc"); err == nil {
		t.Errorf("the fake registered a cache of 200 buckets")
	}
}

// cachebench's release: a cache device given as a partition (the only
// one on its disk) is wiped, not removed with its disk's table as
// release --wipe of the origin would otherwise do; a cache device given
// as a whole disk goes blank.
func TestReleaseCacheKeepsAGivenPartition(t *testing.T) {
	for _, given := range []string{"/dev/sdc1", "/dev/sdc"} {
		t.Run(filepath.Base(given), func(t *testing.T) {
			r := newCacheRig(t)
			if given == "/dev/sdc1" {
				r.prepare(t, stackCase{reqs: []disk.Request{{Device: "/dev/sdc", Partitions: []disk.PartSpec{{FS: "xfs"}}}}})
			}
			b := stack.CacheBuild{Origin: "/dev/sdb", CacheDevice: given, Kind: "bcache", Mode: "writeback", Wipe: true,
				Volume: stack.VolumeSpec{FS: "xfs", Mount: "/mnt/srv"}}
			deps := r.deps()
			if _, err := stack.BuildCache(context.Background(), b, r.h.FactsNow(), deps); err != nil {
				t.Fatal(err)
			}
			if _, err := stack.ReleaseCache(context.Background(), b, true, deps); err != nil {
				t.Fatal(err)
			}
			if got := r.h.Bcache(); len(got) != 0 {
				t.Errorf("bcache left: %q", got)
			}
			for _, d := range []string{"sdb", "sdc1"} {
				if sigs := r.h.Signatures(d); len(sigs) != 0 {
					t.Errorf("%s: %v", d, sigs)
				}
			}
			_, err := r.h.Stat("/sys/class/block/sdc1")
			if sigs := r.h.Signatures("sdc"); given == "/dev/sdc1" && (err != nil || len(sigs) == 0) {
				t.Errorf("the partition given is gone (%v), its disk's signatures %v", err, sigs)
			} else if given == "/dev/sdc" && (err == nil || len(sigs) != 0) {
				t.Errorf("the disk given is not blank: sdc1 %v, signatures %v", err, sigs)
			}
		})
	}
}

// A kernel without what a cache kind needs (no dm-cache module, say) is
// refused when planning, naming what is missing, before anything is
// written; a kind whose modules are there still plans.
func TestCacheKernelLacksFeature(t *testing.T) {
	for _, c := range []struct{ kind, module, what string }{
		{"", "dm-cache", "the dm-cache target"},
		{"writecache", "dm-writecache", "the dm-writecache target"},
		{"writecache", "dm-mod", "device-mapper"},
		{"bcache", "bcache", "bcache"},
	} {
		t.Run(c.kind+"-"+c.module, func(t *testing.T) {
			r := newCacheRig(t)
			r.h.NoModule(c.module)
			_, _, err := r.plan(cacheCase(c.kind, "writeback"))
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "this kernel lacks "+c.what+" (no module "+c.module+" for this kernel)") {
				t.Fatalf("plan: %v", err)
			}
			if w := r.h.Writes(); len(w) > 0 {
				t.Errorf("planning wrote: %v", w)
			}
		})
	}
	r := newCacheRig(t)
	r.h.NoModule("dm-cache")
	if _, _, err := r.plan(cacheCase("bcache", "writeback")); err != nil {
		t.Errorf("bcache without dm-cache: %v", err)
	}
}

// Without make-bcache a bcache plan stops when planning, not after the
// partition tables are written.
func TestCacheBcacheToolsCheckedWhenPlanning(t *testing.T) {
	r := newCacheRig(t)
	r.h.Missing("make-bcache")
	_, _, err := r.plan(cacheCase("bcache", "writeback"))
	if !errors.Is(err, disk.ErrMissingProgram) || !strings.Contains(err.Error(), "bcache-tools") {
		t.Fatalf("plan: %v", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("planning wrote: %v", w)
	}
}
