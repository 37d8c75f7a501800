package stack

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack/bcache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/disk/stack/lvm"
	"github.com/diskprep/diskprep/disk/stack/lvmcache"
	"github.com/diskprep/diskprep/disk/stack/md"
)

// addStacks finds the stacks concerned by a release of the devices in devs
// ("major:minor" -> kernel name: a disk and its partitions, or an array
// or logical volume itself): every md array and volume group held on
// them, or the one they are, with all their members. It adds the stacks'
// devices to devs (their mounts and fstab lines go too) and plans their
// teardown.
func (a *applier) addStacks(ctx context.Context, plan *disk.ReleasePlan, devs map[string]string, opt disk.ReleaseOptions) error {
	names := map[string]bool{}
	for _, n := range devs {
		names[n] = true
	}
	mds := map[string]bool{}     // md kernel names
	dms := map[string]bool{}     // dm kernel names of logical volumes
	bcaches := map[string]bool{} // bcache kernel names
	var lower []string           // disks and partitions given
	crypts := map[string]bool{}  // dm kernel names of LUKS mappings
	members := map[string]bool{}
	for n := range names {
		switch {
		case strings.HasPrefix(n, "md"):
			mds[n] = true
		case strings.HasPrefix(n, "dm-") && a.Crypts().IsMapping(n):
			crypts[n] = true
			for _, m := range a.Crypts().Backing(n) {
				switch {
				case strings.HasPrefix(m, "md"):
					mds[m] = true
				case strings.HasPrefix(m, "dm-"):
					dms[m] = true
				default:
					// LUKS2 right on a partition: wiped as a member.
					members[m] = true
				}
			}
		case strings.HasPrefix(n, "dm-"):
			dms[n] = true
		case strings.HasPrefix(n, "bcache"):
			bcaches[n] = true
		default:
			lower = append(lower, n)
			des, _ := a.Host().ReadDir(a.Roots().SysPath("class/block", n, "holders"))
			for _, de := range des {
				switch h := de.Name(); {
				case strings.HasPrefix(h, "md"):
					mds[h] = true
				case strings.HasPrefix(h, "dm-") && a.Crypts().IsMapping(h):
					crypts[h] = true
					// An encrypted member: what its mapping holds.
					hs, _ := a.Host().ReadDir(a.Roots().SysPath("class/block", h, "holders"))
					for _, hh := range hs {
						switch n := hh.Name(); {
						case strings.HasPrefix(n, "md"):
							mds[n] = true
						case strings.HasPrefix(n, "dm-"):
							dms[n] = true
						}
					}
				case strings.HasPrefix(h, "dm-"):
					dms[h] = true
				case strings.HasPrefix(h, "bcache"):
					bcaches[h] = true
				}
			}
		}
	}
	bcache.PlanRelease(a.Applier, plan, devs, bcaches, lower, members, opt)
	sort.Strings(lower)
	// The mappings above the arrays and volumes found go first.
	defer a.Crypts().PlanRelease(plan, devs, crypts, opt.Wipe)
	if len(mds) == 0 && len(dms) == 0 && len(members) == 0 {
		if opt.Wipe {
			plan.Stacks.WipeSignatures = a.WipeOrder(lower)
			return a.addDormant(ctx, plan)
		}
		return nil
	}
	addDev := func(name string) {
		if n, err := a.ReadDevnum(a.Roots().SysPath("class/block", name, "dev")); err == nil {
			devs[n] = name
		}
		des, _ := a.Host().ReadDir(a.Roots().SysPath("class/block", name, "holders"))
		for _, de := range des {
			if h := de.Name(); strings.HasPrefix(h, "dm-") && a.Crypts().IsMapping(h) {
				crypts[h] = true
			}
		}
	}
	// Logical volumes: their whole volume group.
	if len(dms) > 0 {
		lvms, err := lvm.Read(ctx, a.Planner())
		if err != nil {
			return err
		}
		vgs := lvm.GroupsOf(a.Applier, lvms, dms)
		if err := lvmcache.PlanRelease(ctx, a.Applier, plan, lvms, vgs, opt); err != nil {
			return err
		}
		for _, vg := range layer.SortedKeys(vgs) {
			lvm.PlanRelease(a.Applier, plan, lvms, vg, opt, addDev, crypts, members)
		}
	}
	// md arrays: stopped, their members' superblocks zeroed with Wipe.
	for _, name := range layer.SortedKeys(mds) {
		md.PlanRelease(a.Applier, plan, name, opt, addDev, members)
	}
	if opt.Wipe {
		for _, n := range lower {
			members[n] = true
		}
		keep := map[string]bool{} // disks whose table stays
		for _, k := range opt.Keep {
			if real, err := a.Host().EvalSymlinks(k); err == nil {
				k = real
			}
			if n := filepath.Base(k); a.WholeDisk(n) != n {
				keep[a.WholeDisk(n)] = true
			}
		}
		var wipe []string
		for m := range members {
			wipe = append(wipe, m)
			// The disk of a member partition, when every partition it has
			// is released too and none is kept.
			d := a.WholeDisk(m)
			if d == m || keep[d] {
				continue
			}
			all := true
			for _, kp := range disk.KernelPartitionNames(a.Host(), a.Roots(), d) {
				all = all && (members[kp] || names[kp])
			}
			if all {
				wipe = append(wipe, d)
			}
		}
		plan.Stacks.WipeSignatures = a.WipeOrder(wipe)
		return a.addDormant(ctx, plan)
	}
	return nil
}

// addDormant plans, with Wipe, the removal of the stacks that are not
// running but whose metadata is on the devices wiped: a volume group made
// inactive (a release without --wipe does that) and a stopped md array.
// wipefs alone would leave them half there: a group's metadata on its
// other physical volumes naming one that is gone (and lvm's devices file
// still listing it), an array's other members assembling it degraded.
// So a group or array wholly on the devices wiped is removed as a
// running one is (lvremove, vgremove, pvremove; mdadm --zero-superblock),
// and one that also has a member elsewhere is refused, nothing written:
// wiping part of it would break it, and the rest is on a disk the user
// did not name. (A running one is taken down whole, on every disk: naming
// a member names the stack, and the dry run lists every member.)
func (a *applier) addDormant(ctx context.Context, plan *disk.ReleasePlan) error {
	s := plan.Stacks
	wiped := map[string]bool{} // kernel names
	for _, d := range s.WipeSignatures {
		wiped[filepath.Base(d)] = true
	}
	done := map[string]bool{} // kernel names already removed or zeroed
	for _, d := range append(append([]string(nil), s.PVRemove...), s.MDZero...) {
		if real, err := a.Host().EvalSymlinks(d); err == nil {
			d = real
		}
		done[filepath.Base(d)] = true
	}
	var lvms *lvm.State
	pvNode := map[string]string{} // kernel name -> the PV as pvs names it
	for _, dev := range s.WipeSignatures {
		name := filepath.Base(dev)
		if done[name] {
			continue
		}
		sigs, err := a.ProbeDevice(dev)
		if err != nil {
			continue // wipefs reports what cannot be read
		}
		for _, sig := range sigs {
			switch sig.Type {
			case "LVM2_member":
				if lvms == nil {
					if lvms, err = lvm.Read(ctx, a.Planner()); err != nil {
						return err
					}
					for _, row := range lvms.PVList {
						n := filepath.Base(row[0])
						if real, err := a.Host().EvalSymlinks(row[0]); err == nil {
							n = filepath.Base(real)
						}
						pvNode[n] = row[0]
					}
				}
				pv, seen := pvNode[name]
				if !seen {
					continue // lvm does not see it (a filter, the devices file): wipefs only
				}
				if err := lvm.PlanDormant(a.Applier, plan, lvms, pv, pvNode, wiped, done); err != nil {
					return err
				}
			case "linux_raid_member":
				if err := md.PlanDormant(a.Applier, plan, dev, sig, wiped); err != nil {
					return err
				}
				done[name] = true
			}
		}
	}
	return nil
}

// applyLayersRelease carries out the stack teardown after the unmounts
// and fstab lines; disk wipes the signatures after it.
func (a *applier) applyLayersRelease(ctx context.Context, s disk.StackRelease, res *disk.ReleaseResult) error {
	step := func(what string, argv ...string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := a.Do(ctx, what, argv); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		res.StackSteps = append(res.StackSteps, disk.QuoteArgv(argv))
		return nil
	}
	if err := a.Crypts().Release(ctx, s, res, step); err != nil {
		return err
	}
	if err := bcache.Release(ctx, a.Applier, s, res); err != nil {
		return err
	}
	if err := lvmcache.Release(a.Applier, s, step); err != nil {
		return err
	}
	if err := lvm.Release(s, step); err != nil {
		return err
	}
	if err := crypt.ReleaseMembers(s, step); err != nil {
		return err
	}
	return md.Release(a.Applier, s, res, step)
}

// PlanTeardown plans the teardown of the stacks and caches on devs
// (disk.Layers).
func (Layers) PlanTeardown(ctx context.Context, x *disk.Applier, plan *disk.ReleasePlan, devs map[string]string, opt disk.ReleaseOptions) error {
	return fromDisk(x).addStacks(ctx, plan, devs, opt)
}

// ApplyTeardown carries out the teardown s (disk.Layers).
func (Layers) ApplyTeardown(ctx context.Context, x *disk.Applier, s disk.StackRelease, res *disk.ReleaseResult) error {
	return fromDisk(x).applyLayersRelease(ctx, s, res)
}
