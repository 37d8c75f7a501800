package lvmcache

import (
	"context"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/disk/stack/lvm"
)

type (
	planner struct{ layer.Planner }
	applier struct{ *layer.Applier }
)

// ReadSegments runs lvs -a (read-only) under ctx: each volume's segment
// type, the cache volume it uses and its cache mode.
func ReadSegments(ctx context.Context, pl layer.Planner) (Segments, error) {
	return planner{pl}.readLVSegs(ctx)
}

// Plan plans the cache c over origin and fast into cp: its group, its two
// volumes and the lvconvert that joins them, and the file system on the
// cached volume, given what st and segs say is there.
func Plan(pl layer.Planner, cp *cache.Plan, c cache.Spec, origin, fast cache.Member, st *lvm.State, segs Segments, opt layer.Options, mounts []disk.MountEntry) error {
	return planner{pl}.planLVMCache(cp, c, origin, fast, st, segs, opt, mounts)
}

// PlanRelease plans, for the cached volumes of the groups vgs released,
// the flush and split of their cache, or its removal with opt.Wipe.
func PlanRelease(ctx context.Context, a *layer.Applier, plan *disk.ReleasePlan, st *lvm.State, vgs map[string]bool, opt disk.ReleaseOptions) error {
	return (&applier{a}).addLVMCaches(ctx, plan, st, vgs, opt)
}

// Release carries out the LVM caches' part of the teardown s: each cache
// flushed to its origin, then split off or removed. step runs and
// records one command.
func Release(a *layer.Applier, s disk.StackRelease, step func(what string, argv ...string) error) error {
	for _, lv := range s.SplitCache {
		a.Progressf("flushing the cache of %s to its origin, then splitting it off (lvconvert waits for every dirty block)", lv)
		if err := step("flush and split the cache of "+lv, "lvconvert", "--yes", "--splitcache", lv); err != nil {
			return err
		}
	}
	for _, lv := range s.Uncache {
		a.Progressf("flushing the cache of %s to its origin, then removing it (lvconvert waits for every dirty block)", lv)
		if err := step("flush and remove the cache of "+lv, "lvconvert", "--yes", "--uncache", lv); err != nil {
			return err
		}
	}
	return nil
}
