// Package bcache is the bcache kind of cached volume: make-bcache on
// both sides, both registered through sysfs, the backing device attached
// to the cache set in its mode, the file system on /dev/bcacheN; and its
// release: flushed, detached, stopped, unregistered.
package bcache

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/hwinfo/probe"
	"github.com/diskprep/diskprep/internal/units"
)

// Placeholder stands for the bcache device a backing device becomes
// once registered: the kernel numbers it then, so plans of a new bcache
// carry this in the volume's argv and apply binds it, as LoopPlaceholder.
const Placeholder = "/dev/bcacheN"

// bcache's bucket sizes: make-bcache's default (1024 sectors), the
// smallest the kernel takes (a page), and the fewest buckets a cache set
// may have: the kernel's cache_alloc refuses a cache whose bucket count,
// rounded up to a power of two, is under 1024 ("ca->sb.nbuckets is too
// small"), so 512 buckets of 512 KiB (256 layer.MiB) fail.
const (
	bcacheDefaultBucket = 512 << 10
	bcacheMinBucket     = 4 << 10
	bcacheMinBuckets    = 1024
)

// bcacheBucket is the bucket size to give make-bcache -C for a cache of
// size bytes: 0 (its default) when that makes enough buckets, else the
// largest power of two that does, down to a page (a 48 layer.MiB partition gets
// 32 KiB buckets); an error when even page-sized buckets are too few.
func bcacheBucket(size uint64) (uint64, error) {
	if size == 0 || size/bcacheDefaultBucket >= bcacheMinBuckets {
		return 0, nil
	}
	b := uint64(bcacheDefaultBucket)
	for b > bcacheMinBucket && size/b < bcacheMinBuckets {
		b /= 2
	}
	if size/b < bcacheMinBuckets {
		return 0, fmt.Errorf("%d KiB is too small for a bcache cache: it needs at least %d KiB (%d buckets of %d KiB)",
			size>>10, bcacheMinBuckets*bcacheMinBucket>>10, bcacheMinBuckets, bcacheMinBucket>>10)
	}
	return b, nil
}

// readBcacheSB reads the bcache superblock of dev; nil when there is none.
func (pl planner) readBcacheSB(dev string) (*probe.BcacheSuper, error) {
	f, err := pl.HostOrLive().OpenDevice(dev, false)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	defer f.Close()
	sb := make([]byte, probe.BcacheSuperSize)
	if _, err := f.ReadAt(sb, probe.BcacheSuperOffset); err != nil {
		return nil, fmt.Errorf("read the bcache superblock of %s: %w", dev, err)
	}
	if s, ok := probe.ParseBcacheSuper(sb); ok {
		return &s, nil
	}
	return nil, nil
}

// bcacheDir is the bcache directory the kernel gives a registered device
// (a backing device's or a cache's), under its own sysfs directory.
func (pl planner) bcacheDir(dev string) string {
	return pl.Roots.SysPath("class/block", filepath.Base(dev), "bcache")
}

// selectedMode is the bracketed choice of a sysfs list
// ("writethrough [writeback] writearound none").
func selectedMode(s string) string {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "[") {
			return strings.Trim(f, "[]")
		}
	}
	return strings.TrimSpace(s)
}

func (pl planner) planBcache(cp *cache.Plan, c cache.Spec, origin, fast cache.Member, opt layer.Options, mounts []disk.MountEntry) error {
	h := pl.HostOrLive()
	cp.Device = Placeholder
	register := pl.Roots.SysPath("fs/bcache/register_quiet")
	sbOf := func(m cache.Member) (*probe.BcacheSuper, error) {
		if m.Ex == nil {
			return nil, nil // a partition this run makes
		}
		return pl.readBcacheSB(m.Path)
	}
	osb, err := sbOf(origin)
	if err != nil {
		return err
	}
	csb, err := sbOf(fast)
	if err != nil {
		return err
	}
	switch {
	case osb != nil && !osb.Backing:
		return disk.Refuse(origin.Path, fmt.Sprintf("%s holds a bcache cache, not a backing device (release it with --wipe first)", origin.Path))
	case csb != nil && csb.Backing:
		return disk.Refuse(fast.Path, fmt.Sprintf("%s holds a bcache backing device, not a cache (release it with --wipe first)", fast.Path))
	}
	fresh := osb == nil
	if _, err := h.Stat(pl.Roots.SysPath("fs/bcache")); err != nil {
		cp.Steps = append(cp.Steps, cache.Step{What: "load the bcache module", Argv: []string{"modprobe", "bcache"}})
	}
	if osb == nil {
		cp.Steps = append(cp.Steps, cache.Step{What: "make the bcache backing device", Member: origin.Path, Argv: []string{"make-bcache", "-B", origin.Path}})
	}
	if csb == nil {
		bucket, err := bcacheBucket(fast.Size)
		if err != nil {
			return disk.Usagef("cache device %s: %v", fast.Path, err)
		}
		cp.SetUUID = pl.MakeUUID()
		argv := []string{"make-bcache", "-C", "--cset-uuid", cp.SetUUID}
		if bucket > 0 {
			argv = append(argv, "--bucket", fmt.Sprintf("%dk", bucket>>10))
		}
		cp.Steps = append(cp.Steps, cache.Step{What: "make the bcache cache device", Member: fast.Path, Argv: append(argv, fast.Path)})
	} else {
		cp.SetUUID = csb.SetUUID
	}
	odir, cdir := pl.bcacheDir(origin.Path), pl.bcacheDir(fast.Path)
	registered := func(dir string) bool {
		_, err := h.Stat(dir)
		return err == nil
	}
	if osb == nil || !registered(odir) {
		cp.Steps = append(cp.Steps, cache.Step{What: "register the backing device", Path: register, Value: origin.Path})
	}
	if csb == nil || !registered(cdir) {
		cp.Steps = append(cp.Steps, cache.Step{What: "register the cache device", Path: register, Value: fast.Path})
	}
	set := pl.Roots.SysPath("fs/bcache", cp.SetUUID)
	attached := ""
	if link, err := h.Readlink(filepath.Join(odir, "cache")); err == nil {
		attached = filepath.Base(link)
	}
	switch {
	case attached == "":
		cp.Steps = append(cp.Steps, cache.Step{What: "attach the backing device to the cache set", Path: filepath.Join(odir, "attach"), Value: cp.SetUUID, Wait: set})
	case attached != cp.SetUUID:
		return disk.Refuse(origin.Path, fmt.Sprintf("%s is attached to bcache cache set %s, not to %s's %s (release it with --wipe first)", origin.Path, attached, fast.Path, cp.SetUUID))
	default:
		cp.Existing = fmt.Sprintf("bcache over %s attached to cache set %s on %s", origin.Path, cp.SetUUID, fast.Path)
	}
	mode := ""
	if b, err := h.ReadFile(filepath.Join(odir, "cache_mode")); err == nil {
		mode = selectedMode(string(b))
	}
	if fresh || mode != cp.Mode {
		cp.Steps = append(cp.Steps, cache.Step{What: "set the cache mode", Path: filepath.Join(odir, "cache_mode"), Value: cp.Mode})
	}
	vol := layer.VolumePlan{Device: cp.Device, FS: c.Volume.FS, Label: c.Volume.Label, MkfsOpts: c.Volume.MkfsOpts,
		MountPoint: pl.ResolveMountPoint(c.Volume.Mount), MountOpts: c.Volume.MountOpts, MountOver: c.Volume.MountOver, Persist: c.Volume.Persist}
	node := ""
	if link, err := h.Readlink(filepath.Join(odir, "dev")); err == nil {
		node = filepath.Base(link)
	}
	switch {
	case fresh:
		// What the partition held at the bcache data offset shows
		// through the new device: wiped before mkfs.
		cp.Steps = append(cp.Steps, cache.Step{What: "wipe the new bcache device", Argv: []string{"wipefs", "--all", Placeholder}})
		vol.FSUUID = pl.MakeUUID()
		vol.Mkfs = disk.MkfsFor(vol.FS, vol.Label, vol.FSUUID, vol.MkfsOpts, vol.Device, true, opt.NoDiscard, "")
		if vol.MountPoint != "" {
			vol.MountArgv = disk.MountFor(vol.FS, vol.MountOpts, vol.Device, vol.MountPoint)
		}
	case node == "":
		// Not registered (a run killed before, a boot without udev): the
		// file system is read where the bcache device will show it.
		if err := pl.PlanVolumeAt(&vol, origin.Path, osb.DataOffset, opt); err != nil {
			return err
		}
	default:
		cp.Device = pl.Roots.DevPath(node)
		vol.Device = cp.Device
		if err := pl.PlanVolume(&vol, cp.Device, opt, mounts, ""); err != nil {
			return err
		}
	}
	if vol.Persist {
		vol.FstabLine = disk.FstabEntryLine(vol.PartPlan())
	}
	cp.Volume = vol
	if origin.Size > probe.BcacheDataOffset {
		cp.OriginBytes = origin.Size - probe.BcacheDataOffset
	}
	return nil
}

// bcacheNode is the kernel name of the bcache device over the backing
// device origin (its bcache/dev link), waited for.
func (a *applier) bcacheNode(ctx context.Context, origin string) (string, error) {
	link := a.Roots().SysPath("class/block", filepath.Base(origin), "bcache", "dev")
	if err := cache.WaitPath(ctx, a.Applier, link); err != nil {
		return "", fmt.Errorf("the bcache device over %s: %w", origin, err)
	}
	target, err := a.Host().Readlink(link)
	if err != nil {
		return "", fmt.Errorf("the bcache device over %s: %w", origin, err)
	}
	return filepath.Base(target), nil
}

// bcacheAttr is the path of attribute attr in the backing device's bcache
// directory.
func (a *applier) bcacheAttr(b disk.BcacheRelease, attr string) string {
	return a.Roots().SysPath("class/block", b.Backing, "bcache", attr)
}

// addBcache plans the release of the bcache devices among or on the
// devices released, and of the cache sets they use or those devices are.
func (a *applier) addBcache(plan *disk.ReleasePlan, devs map[string]string, bcache map[string]bool, lower []string, members map[string]bool, opt disk.ReleaseOptions) {
	sets := map[string]bool{}
	for _, n := range lower {
		// A cache device registered in a set, attached or not.
		if link, err := a.Host().Readlink(a.Roots().SysPath("class/block", n, "bcache", "set")); err == nil {
			sets[filepath.Base(link)] = true
			members[n] = true
			plan.SetGroup(n, "bcache set "+filepath.Base(link))
		}
	}
	for _, bc := range layer.SortedKeys(bcache) {
		link, err := a.Host().Readlink(a.Roots().SysPath("class/block", bc, "bcache"))
		if err != nil {
			continue
		}
		br := disk.BcacheRelease{Device: bc, Backing: filepath.Base(filepath.Dir(link)), Wipe: opt.Wipe}
		if n, err := a.ReadDevnum(a.Roots().SysPath("class/block", bc, "dev")); err == nil {
			devs[n] = bc
		}
		members[br.Backing] = true
		plan.SetGroup(br.Backing, "bcache "+bc)
		if link, err := a.Host().Readlink(a.bcacheAttr(br, "cache")); err == nil {
			br.SetUUID = filepath.Base(link)
			sets[br.SetUUID] = true
			plan.SetGroup(br.Backing, "bcache set "+br.SetUUID)
		}
		plan.SetGroup(bc, plan.Group(br.Backing))
		if b, err := a.Host().ReadFile(a.bcacheAttr(br, "cache_mode")); err == nil {
			br.Mode = selectedMode(string(b))
		}
		plan.Stacks.Bcache = append(plan.Stacks.Bcache, br)
	}
	for _, set := range layer.SortedKeys(sets) {
		dir := a.Roots().SysPath("fs/bcache", set)
		des, _ := a.Host().ReadDir(dir)
		for _, de := range des {
			name := de.Name()
			link, err := a.Host().Readlink(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			owner := filepath.Base(filepath.Dir(link))
			switch {
			case strings.HasPrefix(name, "cache") && strings.Trim(strings.TrimPrefix(name, "cache"), "0123456789") == "":
				members[owner] = true
				plan.SetGroup(owner, "bcache set "+set)
			case strings.HasPrefix(name, "bdev"):
				// A backing device of the set that is not released keeps
				// it; the set stays registered, with a note.
				released := false
				for _, br := range plan.Stacks.Bcache {
					released = released || br.Backing == owner
				}
				if !released {
					plan.Notes = append(plan.Notes, fmt.Sprintf("bcache cache set %s also caches %s: it stays registered", set, owner))
					sets[set] = false
				}
			}
		}
		if sets[set] {
			plan.Stacks.BcacheSets = append(plan.Stacks.BcacheSets, set)
		}
	}
}

// releaseBcache flushes, detaches and stops the bcache devices, then
// unregisters their cache sets, each step waited for.
func (a *applier) releaseBcache(ctx context.Context, s disk.StackRelease, res *disk.ReleaseResult) error {
	write := func(what, path, value string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := cache.WriteSys(a.Applier, what, path, value); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		res.StackSteps = append(res.StackSteps, fmt.Sprintf("echo %s > %s", value, path))
		return nil
	}
	for _, b := range s.Bcache {
		if b.Wipe {
			argv := []string{"wipefs", "--all", a.Roots().DevPath(b.Device)}
			if err := a.Do(ctx, "wipe the bcache device", argv); err != nil {
				return fmt.Errorf("wipe %s: %w", b.Device, err)
			}
			res.StackSteps = append(res.StackSteps, disk.QuoteArgv(argv))
		}
		if b.SetUUID != "" {
			// Said before the flush starts: once the kernel writes back at
			// full speed a few layer.MiB can be gone before the first look.
			dirty, err := a.bcacheDirty(b)
			if err != nil {
				return err
			}
			if dirty > 0 {
				a.Progressf("%s: %s of dirty data to write back to %s first", b.Device, units.FormatSize(dirty), b.Backing)
			}
			if b.Mode != cache.ModeWritethrough && b.Mode != "none" {
				if err := write("stop caching writes on "+b.Device, a.bcacheAttr(b, "cache_mode"), cache.ModeWritethrough); err != nil {
					return err
				}
			}
			// Without a dirty target bcache writes back at full speed, not
			// at the trickle that keeps 10% of the cache dirty; without a
			// delay it does not sleep 30 s after each pass over its index
			// before the last dirty blocks (seen in a guest: 60 KiB, 31 s).
			if err := write("write back at full speed on "+b.Device, a.bcacheAttr(b, "writeback_percent"), "0"); err != nil {
				return err
			}
			if err := write("write back without delay on "+b.Device, a.bcacheAttr(b, "writeback_delay"), "0"); err != nil {
				return err
			}
			// A pass's sleep that began before the delay was set still
			// runs its 30 s (the writeback thread reads the delay once);
			// only a detach cuts it short. The kernel writes every dirty
			// block back before it detaches (seen in a guest: 3.3 layer.MiB
			// waited 29 s before, with the detach first under 1 s).
			if err := write("detach "+b.Device+" from its cache set (its dirty blocks written back first)", a.bcacheAttr(b, "detach"), "1"); err != nil {
				return err
			}
			if err := a.waitClean(ctx, b, dirty); err != nil {
				return err
			}
			if err := cache.WaitGone(ctx, a.Applier, a.bcacheAttr(b, "cache")); err != nil {
				return err
			}
			res.StackSteps = append(res.StackSteps, "waited for "+a.bcacheAttr(b, "dirty_data")+" to reach 0 and the cache to be detached")
		}
		if err := write("stop "+b.Device, a.bcacheAttr(b, "stop"), "1"); err != nil {
			return err
		}
		if err := cache.WaitGone(ctx, a.Applier, a.Roots().SysPath("class/block", b.Device)); err != nil {
			return err
		}
	}
	for _, set := range s.BcacheSets {
		dir := a.Roots().SysPath("fs/bcache", set)
		if err := write("unregister bcache cache set "+set, filepath.Join(dir, "unregister"), "1"); err != nil {
			return err
		}
		if err := cache.WaitGone(ctx, a.Applier, dir); err != nil {
			return err
		}
	}
	return nil
}

// parseBcacheSize reads a size as bcache prints it (bch_hprint: "0.0k",
// "512k", "1.7M", "3G"; binary units, one decimal).
func parseBcacheSize(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if n := len(s); n > 0 {
		if i := strings.IndexByte("kMGTPEZY", s[n-1]); i >= 0 {
			mult = math.Pow(1024, float64(i+1))
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return uint64(math.Round(v * mult)), true
}

// bcacheFlushPatience is how long the dirty data may take to go without
// shrinking before release gives up (it reports progress all along).
const bcacheFlushPatience = 2 * time.Minute

// bcacheDirty is how much dirty data bcache device b holds.
func (a *applier) bcacheDirty(b disk.BcacheRelease) (uint64, error) {
	path := a.bcacheAttr(b, "dirty_data")
	raw, err := a.Host().ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	dirty, ok := parseBcacheSize(string(raw))
	if !ok {
		return 0, fmt.Errorf("%s: %q is not a size bcache writes", path, strings.TrimSpace(string(raw)))
	}
	return dirty, nil
}

// waitClean waits for a bcache device's dirty data (before, when the
// flush began) to be written back, reporting the amount left as it
// shrinks.
func (a *applier) waitClean(ctx context.Context, b disk.BcacheRelease, before uint64) error {
	last, lastChange := before, time.Now()
	for {
		dirty, err := a.bcacheDirty(b)
		if err != nil {
			return err
		}
		if dirty == 0 {
			if before > 0 {
				a.Progressf("%s: every dirty block is on %s", b.Device, b.Backing)
			}
			return nil
		}
		if dirty != last {
			a.Progressf("%s: %s of dirty data left to write back to %s", b.Device, units.FormatSize(dirty), b.Backing)
			last, lastChange = dirty, time.Now()
		}
		if time.Since(lastChange) > bcacheFlushPatience {
			return fmt.Errorf("%s: the dirty data (%s) has not shrunk in %s: the cache device or %s may be failing", b.Device, units.FormatSize(dirty), bcacheFlushPatience, b.Backing)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
