package bcache

import (
	"context"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
)

type (
	planner struct{ layer.Planner }
	applier struct{ *layer.Applier }
)

// Plan plans the bcache c over origin (the backing device) and fast (the
// cache set) into cp: its steps and the file system on the bcache device.
func Plan(pl layer.Planner, cp *cache.Plan, c cache.Spec, origin, fast cache.Member, opt layer.Options, mounts []disk.MountEntry) error {
	return planner{pl}.planBcache(cp, c, origin, fast, opt, mounts)
}

// Node is the kernel name of the bcache device over the backing device
// origin, once registered.
func Node(ctx context.Context, a *layer.Applier, origin string) (string, error) {
	return (&applier{a}).bcacheNode(ctx, origin)
}

// PlanRelease plans the release of the bcache devices names (kernel
// names) and of those over the devices lower: their mounts and fstab
// lines go (devs), their members are wiped with opt.Wipe (members).
func PlanRelease(a *layer.Applier, plan *disk.ReleasePlan, devs map[string]string, names map[string]bool, lower []string, members map[string]bool, opt disk.ReleaseOptions) {
	(&applier{a}).addBcache(plan, devs, names, lower, members, opt)
}

// Release carries out the bcache part of the teardown s: each device
// flushed, detached and stopped, its cache set unregistered.
func Release(ctx context.Context, a *layer.Applier, s disk.StackRelease, res *disk.ReleaseResult) error {
	return (&applier{a}).releaseBcache(ctx, s, res)
}
