package stack

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/internal/units"
)

// dir is the backing device's bcache directory, where its attributes are.
func (a *applier) bcacheAttr(b disk.BcacheRelease, attr string) string {
	return a.roots.SysPath("class/block", b.Backing, "bcache", attr)
}

// addBcache plans the release of the bcache devices among or on the
// devices released, and of the cache sets they use or those devices are.
func (a *applier) addBcache(plan *disk.ReleasePlan, devs map[string]string, bcache map[string]bool, lower []string, members map[string]bool, opt disk.ReleaseOptions) {
	sets := map[string]bool{}
	for _, n := range lower {
		// A cache device registered in a set, attached or not.
		if link, err := a.host.Readlink(a.roots.SysPath("class/block", n, "bcache", "set")); err == nil {
			sets[filepath.Base(link)] = true
			members[n] = true
			plan.SetGroup(n, "bcache set "+filepath.Base(link))
		}
	}
	for _, bc := range sortedKeys(bcache) {
		link, err := a.host.Readlink(a.roots.SysPath("class/block", bc, "bcache"))
		if err != nil {
			continue
		}
		br := disk.BcacheRelease{Device: bc, Backing: filepath.Base(filepath.Dir(link)), Wipe: opt.Wipe}
		if n, err := a.ReadDevnum(a.roots.SysPath("class/block", bc, "dev")); err == nil {
			devs[n] = bc
		}
		members[br.Backing] = true
		plan.SetGroup(br.Backing, "bcache "+bc)
		if link, err := a.host.Readlink(a.bcacheAttr(br, "cache")); err == nil {
			br.SetUUID = filepath.Base(link)
			sets[br.SetUUID] = true
			plan.SetGroup(br.Backing, "bcache set "+br.SetUUID)
		}
		plan.SetGroup(bc, plan.Group(br.Backing))
		if b, err := a.host.ReadFile(a.bcacheAttr(br, "cache_mode")); err == nil {
			br.Mode = selectedMode(string(b))
		}
		plan.Stacks.Bcache = append(plan.Stacks.Bcache, br)
	}
	for _, set := range sortedKeys(sets) {
		dir := a.roots.SysPath("fs/bcache", set)
		des, _ := a.host.ReadDir(dir)
		for _, de := range des {
			name := de.Name()
			link, err := a.host.Readlink(filepath.Join(dir, name))
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

// vgOfDMName is the volume group of a device-mapper name LVM made
// ("data-data_corig" -> "data"; a dash in a name is doubled): "" when
// the name has no single dash.
func vgOfDMName(dm string) string {
	for i := 0; i < len(dm); i++ {
		if dm[i] != '-' {
			continue
		}
		if i+1 < len(dm) && dm[i+1] == '-' {
			i++
			continue
		}
		return strings.ReplaceAll(dm[:i], "--", "-")
	}
	return ""
}

// addLVMCaches plans, for the cached logical volumes of the groups
// released, the flush and split (or removal, with Wipe) of their cache.
func (a *applier) addLVMCaches(ctx context.Context, plan *disk.ReleasePlan, lvm *lvmState, vgs map[string]bool, opt disk.ReleaseOptions) error {
	stacked := false
	for vg := range vgs {
		for lv := range lvm.lvs[vg] {
			real, err := a.host.EvalSymlinks(a.roots.DevPath(vg, lv))
			if err != nil {
				continue
			}
			des, _ := a.host.ReadDir(a.roots.SysPath("class/block", filepath.Base(real), "slaves"))
			for _, de := range des {
				// Built over other device-mapper devices: a cache, a
				// RAID or a thin volume's sub-volumes.
				stacked = stacked || strings.HasPrefix(de.Name(), "dm-")
			}
		}
	}
	if !stacked {
		return nil
	}
	segs, err := (Planner{disk.Planner{Host: a.host, Roots: a.roots}}).readLVSegs(ctx)
	if err != nil {
		return err
	}
	for _, vg := range sortedKeys(vgs) {
		var names []string
		for lv, seg := range segs[vg] {
			if _, visible := lvm.lvs[vg][lv]; visible && (seg.segtype == "cache" || seg.segtype == "writecache") {
				names = append(names, vg+"/"+lv)
			}
		}
		sort.Strings(names)
		if opt.Wipe {
			plan.Stacks.Uncache = append(plan.Stacks.Uncache, names...)
		} else {
			plan.Stacks.SplitCache = append(plan.Stacks.SplitCache, names...)
		}
	}
	return nil
}

// releaseBcache flushes, detaches and stops the bcache devices, then
// unregisters their cache sets, each step waited for.
func (a *applier) releaseBcache(ctx context.Context, s disk.StackRelease, res *disk.ReleaseResult) error {
	write := func(what, path, value string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := a.writeSys(what, path, value); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		res.StackSteps = append(res.StackSteps, fmt.Sprintf("echo %s > %s", value, path))
		return nil
	}
	for _, b := range s.Bcache {
		if b.Wipe {
			argv := []string{"wipefs", "--all", a.roots.DevPath(b.Device)}
			if err := a.Do(ctx, "wipe the bcache device", argv); err != nil {
				return fmt.Errorf("wipe %s: %w", b.Device, err)
			}
			res.StackSteps = append(res.StackSteps, disk.QuoteArgv(argv))
		}
		if b.SetUUID != "" {
			// Said before the flush starts: once the kernel writes back at
			// full speed a few MiB can be gone before the first look.
			dirty, err := a.bcacheDirty(b)
			if err != nil {
				return err
			}
			if dirty > 0 {
				a.progressf("%s: %s of dirty data to write back to %s first", b.Device, units.FormatSize(dirty), b.Backing)
			}
			if b.Mode != CacheModeWritethrough && b.Mode != "none" {
				if err := write("stop caching writes on "+b.Device, a.bcacheAttr(b, "cache_mode"), CacheModeWritethrough); err != nil {
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
			// block back before it detaches (seen in a guest: 3.3 MiB
			// waited 29 s before, with the detach first under 1 s).
			if err := write("detach "+b.Device+" from its cache set (its dirty blocks written back first)", a.bcacheAttr(b, "detach"), "1"); err != nil {
				return err
			}
			if err := a.waitClean(ctx, b, dirty); err != nil {
				return err
			}
			if err := a.waitGone(ctx, a.bcacheAttr(b, "cache")); err != nil {
				return err
			}
			res.StackSteps = append(res.StackSteps, "waited for "+a.bcacheAttr(b, "dirty_data")+" to reach 0 and the cache to be detached")
		}
		if err := write("stop "+b.Device, a.bcacheAttr(b, "stop"), "1"); err != nil {
			return err
		}
		if err := a.waitGone(ctx, a.roots.SysPath("class/block", b.Device)); err != nil {
			return err
		}
	}
	for _, set := range s.BcacheSets {
		dir := a.roots.SysPath("fs/bcache", set)
		if err := write("unregister bcache cache set "+set, filepath.Join(dir, "unregister"), "1"); err != nil {
			return err
		}
		if err := a.waitGone(ctx, dir); err != nil {
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
	raw, err := a.host.ReadFile(path)
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
				a.progressf("%s: every dirty block is on %s", b.Device, b.Backing)
			}
			return nil
		}
		if dirty != last {
			a.progressf("%s: %s of dirty data left to write back to %s", b.Device, units.FormatSize(dirty), b.Backing)
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

// waitGone waits for the kernel to drop path (a detached cache link, a
// stopped device, an unregistered set): the sysfs writes return before.
func (a *applier) waitGone(ctx context.Context, path string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := a.host.Lstat(path); err != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still there after 30s", path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// progressf reports progress of a long step to the user (Deps.Progress).
func (a *applier) progressf(format string, args ...any) {
	a.log.Info(fmt.Sprintf(format, args...))
	if a.progress != nil {
		fmt.Fprintf(a.progress, format+"\n", args...)
	}
}
