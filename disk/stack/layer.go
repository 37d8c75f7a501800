package stack

import (
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/bcache"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/disk/stack/lvm"
	"github.com/diskprep/diskprep/disk/stack/md"
)

// Planner plans stacks and caches on the machine of its disk.Planner.
type Planner struct{ disk.Planner }

// layer is the planner as the layers below take it.
func (pl Planner) layer() layer.Planner { return layer.Planner{Planner: pl.Planner} }

// Layers are the stacks and caches as disk's release sees them
// (disk.Layers): pass them in disk.Deps wherever a release may meet one.
type Layers struct{}

// applier applies stacks and caches; run is one ApplyStacks under way.
type (
	applier struct{ *layer.Applier }
	run     struct{ *layer.Run }
)

func newApplier(deps disk.Deps) *applier { return &applier{layer.NewApplier(deps)} }

func fromDisk(x *disk.Applier) *applier { return &applier{layer.FromDisk(x)} }

// The request's options and a layer's volume, named where a stack's
// plan and result are.
type (
	Options      = layer.Options
	VolumeSpec   = layer.VolumeSpec
	VolumePlan   = layer.VolumePlan
	VolumeResult = layer.VolumeResult
)

// The LVM layer's request, plan and result.
type (
	GroupSpec   = lvm.GroupSpec
	LVSpec      = lvm.LVSpec
	GroupPlan   = lvm.GroupPlan
	LVPlan      = lvm.LVPlan
	GroupResult = lvm.GroupResult
	LVResult    = lvm.LVResult
)

// A cached volume's request, plan and result, its kinds and modes.
type (
	CacheSpec   = cache.Spec
	CacheLayout = cache.Layout
	CachePlan   = cache.Plan
	CacheStep   = cache.Step
	CacheResult = cache.Result
)

const (
	CacheKindLVM          = cache.KindLVM
	CacheKindWritecache   = cache.KindWritecache
	CacheKindBcache       = cache.KindBcache
	CacheModeWritethrough = cache.ModeWritethrough
	CacheModeWriteback    = cache.ModeWriteback
	WritebackRisk         = cache.WritebackRisk
)

// BcachePlaceholder stands for a bcache device's node in a plan: the
// kernel names it when the backing device registers.
const BcachePlaceholder = bcache.Placeholder

// CacheKinds and CacheModes are the kinds and modes, defaults first.
var (
	CacheKinds = cache.Kinds
	CacheModes = cache.Modes
)

// The md layer's request, plan and result.
type (
	ArraySpec   = md.ArraySpec
	ArrayPlan   = md.ArrayPlan
	ArrayResult = md.ArrayResult
)
