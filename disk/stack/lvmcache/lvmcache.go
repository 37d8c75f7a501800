// Package lvmcache is the two cache kinds LVM builds: dm-cache
// (lvmcache) and dm-writecache (writecache), each a volume group over the
// origin and cache partitions whose volume on the origin is joined to a
// cache volume by lvconvert. Planned, their steps run by stack with any
// kind's; released, flushed and split off, or removed with the group.
package lvmcache

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/disk/stack/lvm"
)

// Handles says whether kind is one LVM builds (lvmcache, writecache).
func Handles(kind string) bool {
	return kind == cache.KindLVM || kind == cache.KindWritecache
}

// cacheLVName is the cache volume of the lvm kinds before lvconvert hides
// it (as [NAME_cache_cvol]).
func cacheLVName(name string) string { return name + "_cache" }

// Segments are the logical volumes of each group as lvs -a tells them.
type Segments map[string]map[string]lvSeg

// lvSeg is one logical volume as lvs -a tells it.
type lvSeg struct {
	segtype, pool, mode, devices string
}

// readLVSegs runs lvs -a for every logical volume's segment type, the
// cache volume it uses and its cache mode (read-only), under ctx.
func (pl planner) readLVSegs(ctx context.Context) (Segments, error) {
	out, err := pl.HostOrLive().Run(ctx, "lvs", "-a", "--noheadings", "--separator", "|", "-o", "vg_name,lv_name,segtype,pool_lv,cache_mode,devices")
	if err != nil {
		return nil, lvm.CmdError("lvs", err)
	}
	st := Segments{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 6 || f[0] == "" {
			continue
		}
		if st[f[0]] == nil {
			st[f[0]] = map[string]lvSeg{}
		}
		st[f[0]][f[1]] = lvSeg{segtype: f[2], pool: f[3], mode: f[4], devices: f[5]}
	}
	return st, nil
}

func (pl planner) planLVMCache(cp *cache.Plan, c cache.Spec, origin, fast cache.Member, lvms *lvm.State, segs Segments, opt layer.Options, mounts []disk.MountEntry) error {
	vg, lv, clv := c.Name, c.Name, cacheLVName(c.Name)
	cp.Device = pl.Roots.DevPath(vg, lv)
	var others []string
	for pv, g := range lvms.PVVG {
		if g == vg && pv != origin.Path && pv != fast.Path {
			others = append(others, pv)
		}
	}
	sort.Strings(others)
	if len(others) > 0 {
		return disk.Usagef("lvm vg %s already exists on %s, not on the partitions planned", vg, strings.Join(others, ", "))
	}
	vgExists := false
	for _, m := range []cache.Member{origin, fast} {
		g, isPV := lvms.PVVG[m.Path]
		switch {
		case !isPV:
			cp.Steps = append(cp.Steps, cache.Step{What: "create physical volume", Member: m.Path,
				Argv: []string{"pvcreate", "--metadatatype", "2", "--dataalignment", fmt.Sprintf("%dk", lvm.PVAlignment(layer.Member{Disk: m.Disk})>>10), m.Path}})
		case g == vg:
			vgExists = true
		case g != "":
			return disk.Refuse(m.Path, fmt.Sprintf("%s is already a physical volume of vg %s", m.Path, g))
		}
	}
	if vgExists {
		for _, m := range []cache.Member{origin, fast} {
			if lvms.PVVG[m.Path] != vg {
				return disk.Refuse(m.Path, fmt.Sprintf("vg %s exists without %s (release it with --wipe first)", vg, m.Path))
			}
		}
	} else {
		cp.Steps = append(cp.Steps, cache.Step{What: "create volume group",
			Argv: []string{"vgcreate", "--physicalextentsize", fmt.Sprintf("%dk", lvm.ExtentBytes>>10), vg, origin.Path, fast.Path}})
	}
	have := segs[vg]
	for name := range lvms.LVs[vg] {
		if name != lv && name != clv {
			return disk.Refuse(vg, fmt.Sprintf("vg %s has volume %s, which the cache does not make (release it with --wipe first)", vg, name))
		}
	}
	vol := layer.VolumePlan{Device: cp.Device, FS: c.Volume.FS, Label: c.Volume.Label, MkfsOpts: c.Volume.MkfsOpts,
		MountPoint: pl.ResolveMountPoint(c.Volume.Mount), MountOpts: c.Volume.MountOpts, MountOver: c.Volume.MountOver, Persist: c.Volume.Persist}
	convert := []string{"lvconvert", "--yes", "--type", "cache", "--cachevol", clv, "--cachemode", cp.Mode, vg + "/" + lv}
	if cp.Kind == cache.KindWritecache {
		convert = []string{"lvconvert", "--yes", "--type", "writecache", "--cachevol", clv, vg + "/" + lv}
	}
	seg, exists := have[lv]
	if _, visible := lvms.LVs[vg][lv]; !visible {
		exists = false
	}
	switch {
	case !exists:
		cp.Steps = append(cp.Steps, cache.Step{What: "create the origin volume", Argv: []string{"lvcreate", "--yes", "--wipesignatures", "y", "--name", lv, "--extents", "100%PVS", vg, origin.Path}})
	case seg.segtype == "linear" || seg.segtype == "striped":
		cp.Existing = fmt.Sprintf("origin volume %s/%s, not cached yet", vg, lv)
	case seg.segtype == "cache" && cp.Kind == cache.KindLVM, seg.segtype == "writecache" && cp.Kind == cache.KindWritecache:
		if seg.segtype == "cache" && seg.mode != cp.Mode {
			return disk.Refuse(cp.Device, fmt.Sprintf("%s is cached in %s mode, not %s as asked (release it with --wipe first)", cp.Device, layer.OrNone(seg.mode), cp.Mode))
		}
		cp.Existing = fmt.Sprintf("cached volume %s/%s (%s, cache %s)", vg, lv, seg.segtype, strings.Trim(seg.pool, "[]"))
	case seg.segtype == "cache" || seg.segtype == "writecache":
		return disk.Refuse(cp.Device, fmt.Sprintf("%s is cached by %s, not %s as asked (release it with --wipe first)", cp.Device, map[string]string{"cache": cache.KindLVM, "writecache": cache.KindWritecache}[seg.segtype], cp.Kind))
	default:
		return disk.Refuse(cp.Device, fmt.Sprintf("%s is a %s volume, not the origin of a cache (release it with --wipe first)", cp.Device, seg.segtype))
	}
	if seg.segtype != "cache" && seg.segtype != "writecache" || !exists {
		if _, ok := have[clv]; !ok || !visibleLV(lvms, vg, clv) {
			cp.Steps = append(cp.Steps, cache.Step{What: "create the cache volume", Argv: []string{"lvcreate", "--yes", "--wipesignatures", "y", "--name", clv, "--extents", "100%PVS", vg, fast.Path}})
		}
		if cp.Kind == cache.KindWritecache {
			// lvconvert --type writecache takes only an inactive cache
			// volume ("must be inactive to attach", lvm2 2.03.16);
			// --type cache deactivates it itself.
			cp.Steps = append(cp.Steps, cache.Step{What: "deactivate the cache volume", Argv: []string{"lvchange", "--yes", "--activate", "n", vg + "/" + clv}})
		}
		what := map[string]string{cache.KindLVM: "attach the cache (dm-cache)", cache.KindWritecache: "attach the write cache (dm-writecache)"}[cp.Kind]
		cp.Steps = append(cp.Steps, cache.Step{What: what, Argv: convert})
	}
	node := ""
	if exists {
		node = cp.Device
		if real, err := pl.HostOrLive().EvalSymlinks(cp.Device); err == nil {
			node = real
		}
	}
	var lvBytes uint64 // what lvcreate --extents 100%PVS makes of the origin
	if origin.Size > lvm.MetadataBytes {
		lvBytes = (origin.Size - lvm.MetadataBytes) / lvm.ExtentBytes * lvm.ExtentBytes
	}
	if err := pl.PlanVolumeOn(&vol, c.Volume.Encrypt, node, !exists, false, lvBytes, opt, mounts, ""); err != nil {
		return err
	}
	if vol.Persist {
		vol.FstabLine = disk.FstabEntryLine(vol.PartPlan())
	}
	cp.Volume = vol
	if lvmCacheBytes := fast.Size; lvmCacheBytes > lvm.MetadataBytes {
		cp.CacheBytes = (lvmCacheBytes - lvm.MetadataBytes) / lvm.ExtentBytes * lvm.ExtentBytes
	}
	if origin.Size > lvm.MetadataBytes {
		cp.OriginBytes = (origin.Size - lvm.MetadataBytes) / lvm.ExtentBytes * lvm.ExtentBytes
	}
	return nil
}

func visibleLV(lvms *lvm.State, vg, lv string) bool {
	_, ok := lvms.LVs[vg][lv]
	return ok
}

// addLVMCaches plans, for the cached logical volumes of the groups
// released, the flush and split (or removal, with Wipe) of their cache.
func (a *applier) addLVMCaches(ctx context.Context, plan *disk.ReleasePlan, lvms *lvm.State, vgs map[string]bool, opt disk.ReleaseOptions) error {
	stacked := false
	for vg := range vgs {
		for lv := range lvms.LVs[vg] {
			real, err := a.Host().EvalSymlinks(a.Roots().DevPath(vg, lv))
			if err != nil {
				continue
			}
			des, _ := a.Host().ReadDir(a.Roots().SysPath("class/block", filepath.Base(real), "slaves"))
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
	segs, err := (planner{a.Planner()}).readLVSegs(ctx)
	if err != nil {
		return err
	}
	for _, vg := range layer.SortedKeys(vgs) {
		var names []string
		for lv, seg := range segs[vg] {
			if _, visible := lvms.LVs[vg][lv]; visible && (seg.segtype == "cache" || seg.segtype == "writecache") {
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
