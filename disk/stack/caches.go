package stack

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/bcache"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/disk/stack/lvm"
	"github.com/diskprep/diskprep/disk/stack/lvmcache"
	"github.com/diskprep/diskprep/hwinfo"
)

// validateCache checks one cache entry against the partitions that use
// it (uses: use -> the disks of the partitions saying it).
func validateCache(c cache.Spec, uses map[string][]string, groups []GroupSpec, at func(origin, format string, args ...any) error) error {
	if !disk.StackName.MatchString(c.Name) || strings.HasPrefix(c.Name, "snapshot") || strings.HasPrefix(c.Name, "pvmove") {
		return at(c.Origin, "cache %q: use letters, digits, '_', '.', '+' or '-'", c.Name)
	}
	if !slices.Contains(cache.Kinds, c.KindOrDefault()) {
		return at(c.Origin, "cache %s: unknown kind %q: use lvmcache, writecache or bcache", c.Name, c.Kind)
	}
	if !slices.Contains(cache.Modes, c.ModeOrDefault()) {
		return at(c.Origin, "cache %s: unknown mode %q: use writethrough or writeback", c.Name, c.Mode)
	}
	if c.KindOrDefault() == cache.KindWritecache && c.ModeOrDefault() != cache.ModeWriteback {
		return at(c.Origin, "cache %s: writecache caches writes only, always in writeback: say mode writeback (--cache-mode writeback) to accept that", c.Name)
	}
	if lvmcache.Handles(c.KindOrDefault()) {
		for _, g := range groups {
			if g.VG == c.Name {
				return at(c.Origin, "cache %s: its volume group %s is also an lvm entry", c.Name, c.Name)
			}
		}
	}
	origins := uses["origin:"+c.Name]
	switch len(origins) {
	case 0:
		return at(c.Origin, "cache %s: no partition says use: origin:%s (the slow disk's)", c.Name, c.Name)
	case 1:
	default:
		return at(c.Origin, "cache %s: %d partitions say use: origin:%s, one is the origin", c.Name, len(origins), c.Name)
	}
	caches := uses["cache:"+c.Name]
	switch {
	case c.CacheDevice != "" && len(caches) > 0:
		return at(c.Origin, "cache %s: the cache device is %s, and a partition says use: cache:%s too", c.Name, c.CacheDevice, c.Name)
	case c.CacheDevice == "" && len(caches) == 0:
		return at(c.Origin, "cache %s: no partition says use: cache:%s (the fast disk's)", c.Name, c.Name)
	case len(caches) > 1:
		return at(c.Origin, "cache %s: %d partitions say use: cache:%s, one is the cache", c.Name, len(caches), c.Name)
	case len(caches) == 1 && caches[0] == origins[0]:
		return at(c.Origin, "cache %s: the cache and the origin are both on %s: the cache goes on another, faster disk", c.Name, origins[0])
	case c.CacheDevice != "" && sameDiskName(c.CacheDevice, origins[0]):
		return at(c.Origin, "cache %s: the cache device %s is on %s, the origin's disk: the cache goes on another, faster disk", c.Name, c.CacheDevice, origins[0])
	}
	return nil
}

// sameDiskName says whether the partition path part names a partition of
// the disk path disk, by the kernel's naming (sdb1 of sdb, nvme0n1p2 of
// nvme0n1).
func sameDiskName(part, disk string) bool {
	p, d := filepath.Base(part), filepath.Base(disk)
	if !strings.HasPrefix(p, d) || p == d {
		return p == d
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(p, d), "p")
	return rest != "" && strings.Trim(rest, "0123456789") == ""
}

// planCaches plans every cache entry.
func (pl Planner) planCaches(ctx context.Context, caches []cache.Spec, opt Options, byUse map[string][]layer.Member, host *hwinfo.Host, mounts []disk.MountEntry) ([]cache.Plan, error) {
	var lvms *lvm.State
	var segs lvmcache.Segments
	var plans []cache.Plan
	for _, c := range caches {
		om := byUse["origin:"+c.Name][0]
		origin := cache.Member{Path: om.Path, Size: om.Part.SizeBytes, Ex: om.Ex, Disk: om.Disk}
		var fast cache.Member
		if c.CacheDevice != "" {
			cm, err := pl.existingCacheDevice(c, host, opt.Wipe, om)
			if err != nil {
				return nil, layer.WithOrigin(c.Origin, err)
			}
			fast = cm
		} else {
			m := byUse["cache:"+c.Name][0]
			fast = cache.Member{Path: m.Path, Size: m.Part.SizeBytes, Ex: m.Ex, Disk: m.Disk}
		}
		cp := cache.Plan{Layout: cache.Layout{Name: c.Name, Kind: c.KindOrDefault(), Mode: c.ModeOrDefault(), OriginDevice: origin.Path, CacheDevice: fast.Path,
			OriginBytes: origin.Size, CacheBytes: fast.Size}, Origin: c.Origin}
		if cp.Mode == cache.ModeWriteback {
			cp.Risk = cache.WritebackRisk
		}
		if c.CacheDevice != "" && opt.Wipe && fast.Ex != nil && fast.Ex.FSType != "" && !disk.MemberOf("cache:"+c.Name, fast.Ex.FSType, fast.Ex.FSLabel) {
			cp.Steps = append(cp.Steps, cache.Step{What: "wipe the cache device", Argv: []string{"wipefs", "--all", fast.Path}})
		}
		var err error
		if lvmcache.Handles(cp.Kind) {
			if lvms == nil {
				if lvms, err = lvm.Read(ctx, pl.layer()); err != nil {
					return nil, err
				}
				if segs, err = lvmcache.ReadSegments(ctx, pl.layer()); err != nil {
					return nil, err
				}
			}
			err = lvmcache.Plan(pl.layer(), &cp, c, origin, fast, lvms, segs, opt, mounts)
		} else {
			err = bcache.Plan(pl.layer(), &cp, c, origin, fast, opt, mounts)
		}
		if err != nil {
			return nil, layer.WithOrigin(c.Origin, err)
		}
		plans = append(plans, cp)
	}
	return plans, nil
}

// existingCacheDevice checks an existing partition given as the cache:
// the same refusals as a disk (in use, held by another stack, a signature
// unless wipe), and not on the origin's disk.
func (pl Planner) existingCacheDevice(c cache.Spec, host *hwinfo.Host, wipe bool, origin layer.Member) (cache.Member, error) {
	if host == nil {
		return cache.Member{}, fmt.Errorf("cache device %s: no facts to check it against", c.CacheDevice)
	}
	d, p := host.Device(c.CacheDevice)
	if d == nil {
		real, err := disk.FollowUserPath(pl.HostOrLive(), "", c.CacheDevice, c.CacheDevice)
		if disk.IsRefusal(err) {
			return cache.Member{}, err
		}
		if err == nil {
			d, p = host.Device(real)
		}
	}
	switch {
	case d == nil:
		return cache.Member{}, disk.Usagef("cache device %s: not a disk or partition the inventory lists", c.CacheDevice)
	case p == nil:
		return cache.Member{}, disk.Usagef("cache device %s is a whole disk: give it as the disk to partition, or one of its partitions", c.CacheDevice)
	case origin.Plan != nil && d.Name == filepath.Base(origin.Plan.Device):
		return cache.Member{}, disk.Usagef("cache device %s is on %s, the origin's disk: the cache goes on another, faster disk", c.CacheDevice, d.Name)
	}
	if err := disk.AdmitMember(d, p, "cache:"+c.Name, wipe); err != nil {
		return cache.Member{}, err
	}
	return cache.Member{Path: p.Path, Size: p.SizeBytes, Ex: p, Disk: d}, nil
}

// needCachePrograms checks, before anything changes, that the tools the
// caches' steps run are installed.
func (a *applier) needCachePrograms(ctx context.Context, caches []cache.Plan, need func(prog, pkg string, args ...string) error) error {
	for _, cp := range caches {
		if lvmcache.Handles(cp.Kind) {
			if err := need("lvm", "lvm2", "version"); err != nil {
				return err
			}
		}
		for _, st := range cp.Steps {
			if len(st.Argv) == 0 || st.Argv[0] != "make-bcache" {
				continue
			}
			// make-bcache has no version flag and exits 1 on -h: only
			// a program that cannot be run is missing.
			if _, err := a.Host().Run(ctx, "make-bcache", "-h"); err != nil && layer.IsNotFound(err) {
				return fmt.Errorf("make-bcache is not installed: install the bcache-tools package: %w", disk.ErrMissingProgram)
			}
			break
		}
	}
	return nil
}

// applyCache carries out one cache plan: its steps, then the file system
// on the cached volume.
func (r *run) applyCache(ctx context.Context, cp cache.Plan) (cache.Result, error) {
	cr, err := r.cacheSteps(ctx, cp)
	r.Changed = r.Changed || len(cr.Steps) > 0
	return cr, err
}

func (r *run) cacheSteps(ctx context.Context, cp cache.Plan) (cache.Result, error) {
	cr := cache.Result{Layout: cp.Layout, Device: cp.Device, SetUUID: cp.SetUUID, Risk: cp.Risk}
	if lvmcache.Handles(cp.Kind) {
		cr.LVMVersion = r.Versions["lvm"]
	}
	node := ""
	if cp.Device != bcache.Placeholder && cp.Kind == cache.KindBcache {
		node = filepath.Base(cp.Device)
	}
	bind := func(argv []string) ([]string, error) {
		if argv == nil {
			return nil, nil
		}
		out := make([]string, len(argv))
		for i, s := range argv {
			if strings.Contains(s, bcache.Placeholder) && node == "" {
				var err error
				if node, err = bcache.Node(ctx, r.Applier, cp.OriginDevice); err != nil {
					return nil, err
				}
			}
			out[i] = strings.ReplaceAll(s, bcache.Placeholder, r.Roots().DevPath(node))
		}
		return out, nil
	}
	for _, st := range cp.Steps {
		if err := ctx.Err(); err != nil {
			return cr, err
		}
		if st.Member != "" {
			use := "origin:" + cp.Name
			if st.Member == cp.CacheDevice {
				use = "cache:" + cp.Name
			}
			if err := r.CheckMembersFree([]string{st.Member}, use); err != nil {
				return cr, err
			}
		}
		if st.Wait != "" {
			if err := cache.WaitPath(ctx, r.Applier, st.Wait); err != nil {
				return cr, fmt.Errorf("%s: %w", st.What, err)
			}
		}
		if st.Argv != nil {
			argv, err := bind(st.Argv)
			if err != nil {
				return cr, err
			}
			if err := r.Do(ctx, st.What, argv); err != nil {
				return cr, fmt.Errorf("%s %s: %w", st.What, cp.Name, err)
			}
			cr.Steps = append(cr.Steps, disk.QuoteArgv(argv))
			continue
		}
		if err := cache.WaitPath(ctx, r.Applier, st.Path); err != nil {
			return cr, fmt.Errorf("%s: %w", st.What, err)
		}
		if err := cache.WriteSys(r.Applier, st.What, st.Path, st.Value); err != nil {
			return cr, fmt.Errorf("%s %s: %w", st.What, cp.Name, err)
		}
		cr.Steps = append(cr.Steps, st.String())
	}
	v := cp.Volume
	if cp.Kind == cache.KindBcache {
		if node == "" {
			var err error
			if node, err = bcache.Node(ctx, r.Applier, cp.OriginDevice); err != nil {
				return cr, err
			}
		}
		dev := r.Roots().DevPath(node)
		cr.Device, cr.Node = dev, node
		v.Device = dev
		v.Mkfs, _ = bind(v.Mkfs)
		v.MountArgv, _ = bind(v.MountArgv)
		if _, err := r.WaitStackNode(ctx, dev); err != nil {
			return cr, err
		}
		if v.Mkfs != nil && !layer.MkfsForced(v.Mkfs) {
			// Planned over a backing device not registered yet: what
			// shows on the new device now is checked before mkfs.
			if sigs, err := r.ProbeDevice(dev); err != nil {
				return cr, err
			} else if len(sigs) > 0 {
				return cr, disk.Refuse(dev, fmt.Sprintf("%s holds a %s signature since planning", dev, sigs[0].Type))
			}
		}
	} else {
		n, err := r.WaitStackNode(ctx, cp.Device)
		if err != nil {
			return cr, err
		}
		cr.Node = n
	}
	var err error
	cr.Volume, err = r.Volume(ctx, v)
	cr.Done = err == nil
	return cr, err
}
