package stack

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/hwinfo"
)

// CacheBuild asks for one cached volume over two devices, as prepare
// --cache ORIGIN --cache-device DEV does: the origin disk gets one
// partition (use: origin:NAME); the cache device is a disk, which gets one
// partition too (use: cache:NAME), or a partition used as it is. It is the
// entry for whoever builds a cache to measure it and takes it apart
// after (cachebench): BuildCache, then ReleaseCache.
type CacheBuild struct {
	Origin      string     `json:"origin"`
	CacheDevice string     `json:"cache_device"`
	Name        string     `json:"name"` // the VG and LV of the lvm kinds; "cache" when empty
	Kind        string     `json:"kind,omitempty"`
	Mode        string     `json:"mode,omitempty"`
	Volume      VolumeSpec `json:"filesystem"`
	Wipe        bool       `json:"wipe,omitempty"`
	NoDiscard   bool       `json:"no_discard,omitempty"`
}

func (b CacheBuild) name() string {
	if b.Name == "" {
		return "cache"
	}
	return b.Name
}

// Requests are the origin disk's request and the cache entry, checked
// (ErrUsage for bad input, whatever the machine); the cache device is
// left as given until CacheDeviceRequest has seen the facts.
func (b CacheBuild) Requests() ([]disk.Request, StackRequest, error) {
	st := StackRequest{Options: Options{Wipe: b.Wipe, NoDiscard: b.NoDiscard},
		Caches: []cache.Spec{{Name: b.name(), Kind: b.Kind, Mode: b.Mode, Volume: b.Volume, CacheDevice: b.CacheDevice}}}
	switch {
	case b.Origin == "":
		return nil, st, disk.Usagef("a cache needs its origin disk")
	case b.CacheDevice == "":
		return nil, st, disk.Usagef("a cache needs its cache device: the fast disk or partition in front of the origin")
	case filepath.Clean(b.Origin) == filepath.Clean(b.CacheDevice):
		return nil, st, disk.Usagef("the origin and the cache device are both %s: the cache goes on another, faster disk", b.Origin)
	}
	reqs := []disk.Request{{Device: b.Origin, Wipe: b.Wipe, NoDiscard: b.NoDiscard, Partitions: []disk.PartSpec{{Use: "origin:" + b.name()}}}}
	if err := st.Validate(reqs); err != nil {
		return nil, st, err
	}
	return reqs, st, nil
}

// CacheDeviceRequest turns the cache device of st's one cache into a
// disk request when the facts say it is a whole disk (one partition,
// use: cache:NAME), and says so; a partition stays the cache as it is.
func (pl Planner) CacheDeviceRequest(st *StackRequest, host *hwinfo.Host) (disk.Request, bool) {
	if len(st.Caches) != 1 || st.Caches[0].CacheDevice == "" || host == nil {
		return disk.Request{}, false
	}
	c := &st.Caches[0]
	d, p := host.Device(c.CacheDevice)
	if d == nil {
		// Another user's link is refused by the stack plan
		// (existingCacheDevice), which takes what is not a disk here.
		if real, err := disk.FollowUserPath(pl.HostOrLive(), "", c.CacheDevice, c.CacheDevice); err == nil {
			d, p = host.Device(real)
		}
	}
	if d == nil || p != nil {
		return disk.Request{}, false
	}
	r := disk.Request{Device: c.CacheDevice, Wipe: st.Wipe, NoDiscard: st.NoDiscard, Partitions: []disk.PartSpec{{Use: "cache:" + c.Name}}}
	c.CacheDevice = ""
	return r, true
}

// CacheBuilt is what BuildCache made.
type CacheBuilt struct {
	Build CacheBuild     `json:"build"`
	Disks []*disk.Result `json:"disks"`
	Stack *StackResult   `json:"stack"`
	Cache cache.Result   `json:"cache"`
	// Plans and StackPlan are what was planned and carried out.
	Plans     []*disk.Plan `json:"-"`
	StackPlan *StackPlan   `json:"-"`
}

// BuildCache plans b against host and carries it out: the disks'
// partitions, then the cache and its file system. It asks nobody: the
// caller has the user's consent (cachebench --yes).
func BuildCache(ctx context.Context, b CacheBuild, host *hwinfo.Host, deps disk.Deps) (*CacheBuilt, error) {
	reqs, st, err := b.Requests()
	if err != nil {
		return nil, err
	}
	pl := Planner{disk.Planner{Host: deps.Host, Roots: deps.Roots}}
	if r, isDisk := pl.CacheDeviceRequest(&st, host); isDisk {
		reqs = append(reqs, r)
	}
	plans, err := disk.PlanAll(reqs, host)
	if err != nil {
		return nil, err
	}
	sp, err := pl.PlanStacks(ctx, st, plans, reqs, host)
	if err != nil {
		return nil, err
	}
	built := &CacheBuilt{Build: b, Plans: plans, StackPlan: sp}
	built.Disks, err = disk.ApplyAll(ctx, plans, func(ctx context.Context, p *disk.Plan) (*disk.Result, error) { return disk.Apply(ctx, p, deps) })
	if err != nil {
		return built, err
	}
	built.Stack, err = ApplyStacks(ctx, sp, deps)
	if built.Stack != nil && len(built.Stack.Caches) == 1 {
		built.Cache = built.Stack.Caches[0]
	}
	if err != nil {
		return built, err
	}
	return built, nil
}

// ReleaseCache takes apart the cache BuildCache made over b.Origin, in
// reverse, its dirty blocks flushed to the origin first (progress on
// deps.Progress); with wipe, both devices are left signature-free, and a
// cache device given as a partition is still there.
func ReleaseCache(ctx context.Context, b CacheBuild, wipe bool, deps disk.Deps) (*disk.ReleaseResult, error) {
	// A cache device given as a partition stays one: the user made it
	// (a whole disk given was partitioned by BuildCache and goes blank).
	// BuildCache made everything else on the two devices, in this run:
	// the guard has nothing to ask.
	if deps.Layers == nil {
		deps.Layers = Layers{} // what it releases is a stack
	}
	plan, err := disk.PlanRelease(ctx, b.Origin, disk.ReleaseOptions{Wipe: wipe, Keep: []string{b.CacheDevice}, Yes: true, ForceUnmount: true}, deps)
	if err != nil {
		return nil, fmt.Errorf("release the cache over %s: %w", b.Origin, err)
	}
	return disk.ApplyRelease(ctx, plan, deps)
}

// FlushWriteCache writes every dirty block of the dm-writecache at device
// (/dev/mapper/NAME) back to its origin and so frees it: `dmsetup message
// DEVICE 0 flush`, which returns once the write-back is done. A
// dm-writecache holds only blocks not yet written back, and once full it
// sends new writes around itself to the origin and pauses its write-back
// while they come (pause_writeback, 3 s by default): a warm-up then warms
// nothing. cachebench empties it before each working set for that.
func FlushWriteCache(ctx context.Context, device string, deps disk.Deps) error {
	a := newApplier(deps)
	if err := a.Do(ctx, "flush the write cache", []string{"dmsetup", "message", device, "0", "flush"}); err != nil {
		return fmt.Errorf("flush the write cache of %s: %w", device, err)
	}
	return nil
}
