// Package cache is what the three kinds of cached volume share: the
// request, plan and result of one, its steps, and the kernel attribute
// writes and waits of its steps. Cached volumes: a slow origin (an HDD partition) with a fast
// cache in front of it (an SSD or NVMe partition), built by one of the
// kernel's three caches. The origin partition says use: origin:NAME, the
// cache partition use: cache:NAME (or the cache is an existing partition
// given as it is, CacheSpec.CacheDevice), and the cache: entry NAME says
// which kind, which mode and which file system goes on the cached volume.
//
//   - lvmcache: one volume group NAME over both partitions, the logical
//     volume NAME on the origin's extents, a cache volume NAME_cache on the
//     cache's, joined by lvconvert --type cache --cachevol (dm-cache);
//     the volume is /dev/NAME/NAME.
//   - writecache: the same group and volumes, joined by lvconvert --type
//     writecache (dm-writecache, which caches writes only: writeback).
//   - bcache: make-bcache -B on the origin, -C on the cache, both
//     registered with the kernel (sysfs), the backing device attached to
//     the cache set and its cache_mode set; the volume is /dev/bcacheN.
package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

const (
	KindLVM        = "lvmcache"
	KindWritecache = "writecache"
	KindBcache     = "bcache"

	ModeWritethrough = "writethrough"
	ModeWriteback    = "writeback"
)

// Kinds and Modes are the kinds and modes, defaults first.
var (
	Kinds = []string{KindLVM, KindWritecache, KindBcache}
	Modes = []string{ModeWritethrough, ModeWriteback}
)

// WritebackRisk is what the output says, in one line, of a writeback
// cache.
const WritebackRisk = "writeback: writes are acknowledged once on the cache device; if it fails before they reach the origin, they are lost and the file system on the origin is left inconsistent"

// Spec is one cached volume.
type Spec struct {
	Name string `json:"name"`
	// Kind is lvmcache (default), writecache or bcache; Mode writethrough
	// (default) or writeback.
	Kind   string           `json:"kind,omitempty"`
	Mode   string           `json:"mode,omitempty"`
	Volume layer.VolumeSpec `json:"filesystem"`
	// CacheDevice is an existing partition that is the cache as it is
	// (prepare --cache-device PARTITION); empty: the partition whose Use
	// is "cache:"+Name.
	CacheDevice string `json:"cache_device,omitempty"`
	Origin      string `json:"origin,omitempty"`
}

func (c Spec) KindOrDefault() string {
	if c.Kind == "" {
		return KindLVM
	}
	return c.Kind
}

func (c Spec) ModeOrDefault() string {
	if c.Mode == "" {
		return ModeWritethrough
	}
	return c.Mode
}

// Layout is what a cached volume's plan and result both say of it.
type Layout struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Mode string `json:"mode"`
	// OriginDevice and CacheDevice are the partitions it is built over.
	OriginDevice string `json:"origin_device"`
	CacheDevice  string `json:"cache_device"`
	OriginBytes  uint64 `json:"origin_bytes"`
	CacheBytes   uint64 `json:"cache_bytes"`
}

// Plan is one cached volume, decided up front.
type Plan struct {
	Layout
	// Device is the cached volume: /dev/NAME/NAME for the lvm kinds,
	// /dev/bcacheN for bcache (BcachePlaceholder until registered).
	Device string `json:"device"`
	// SetUUID is the bcache cache set (chosen at planning for a new one).
	SetUUID string `json:"set_uuid,omitempty"`
	// Steps are the commands and kernel writes still to do, in order;
	// none when the cache exists as asked.
	Steps []Step `json:"steps,omitempty"`
	// Existing says what of the cache was found built ("cached volume
	// data/data", "bcache0 attached to set ...").
	Existing string `json:"existing,omitempty"`
	// Risk is the one line of what a writeback cache loses when the cache
	// device fails; empty for writethrough.
	Risk   string           `json:"risk,omitempty"`
	Volume layer.VolumePlan `json:"volume"`
	Origin string           `json:"origin,omitempty"`
}

// Step is one step of building a cache: a program (Argv) or a write
// of Value into the kernel attribute Path (sysfs).
type Step struct {
	What  string   `json:"what"`
	Argv  []string `json:"argv,omitempty"`
	Path  string   `json:"path,omitempty"`
	Value string   `json:"value,omitempty"`
	// layer.Member is the device checked, right before the step writes to it,
	// to hold nothing but what this cache put there.
	Member string `json:"member,omitempty"`
	// Wait is a path that must exist before the step (the kernel makes
	// it when it has registered a device).
	Wait string `json:"wait,omitempty"`
}

// String is the step as the dry run shows it.
func (s Step) String() string {
	if s.Argv != nil {
		return disk.QuoteArgv(s.Argv)
	}
	return fmt.Sprintf("echo %s > %s", disk.Quote(s.Value), s.Path)
}

// Member is one side of a cache: a partition planned on a disk, or
// an existing partition given as it is.
type Member struct {
	Path string
	Size uint64
	Ex   *hwinfo.Partition // in the facts; nil when the partition is new
	Disk *hwinfo.Disk
}

// Summary is the one line of a cache plan for people.
func (cp Plan) Summary() string {
	mode := cp.Mode
	return fmt.Sprintf("%s cache %s: %s (%s) in front of %s (%s), %s; %s on %s%s", cp.Kind, cp.Name, cp.CacheDevice, units.FormatSize(cp.CacheBytes),
		cp.OriginDevice, units.FormatSize(cp.OriginBytes), mode, cp.Volume.FS, cp.Device, layer.InMount(cp.Volume))
}

// Result is one cached volume after ApplyStacks.
type Result struct {
	Layout
	// Device is the cached volume's path (/dev/data/data, /dev/bcache0),
	// Node its kernel name (dm-2, bcache0).
	Device  string `json:"device"`
	Node    string `json:"node,omitempty"`
	SetUUID string `json:"set_uuid,omitempty"`
	// Steps are the steps done by this run, as typed; none when the cache
	// existed as asked.
	Steps []string `json:"steps,omitempty"`
	// LVMVersion is lvm version's first line (lvm kinds).
	LVMVersion string             `json:"lvm_version,omitempty"`
	Risk       string             `json:"risk,omitempty"`
	Volume     layer.VolumeResult `json:"volume"`
	// Done: built (or found built) to the end, its file system mounted
	// and persisted as asked; false when a step failed.
	Done bool `json:"done"`
}

// WriteSys writes one kernel attribute, logged as a step.
func WriteSys(a *layer.Applier, what, path, value string) error {
	a.Log().Info(what+": started", "path", path, "value", value)
	if err := a.Host().WriteSys(path, value); err != nil {
		a.Log().Info(what+": failed", "path", path, "value", value, "err", err)
		return fmt.Errorf("echo %s > %s: %w", value, path, err)
	}
	a.Log().Info(what+": finished", "path", path)
	return nil
}

// WaitPath waits for the kernel to make path (a registered bcache
// device's attributes, a cache set's directory), after udev has handled
// what the last step started.
func WaitPath(ctx context.Context, a *layer.Applier, path string) error {
	if _, err := a.Host().Stat(path); err == nil {
		return nil
	}
	if a.UdevRunning() {
		// Cut short by an interruption, it is no news: the last line says so.
		if out, err := a.Host().Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil && ctx.Err() == nil {
			a.Log().Warn("udevadm settle failed", "err", err, "output", string(out))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := a.Host().Stat(path)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitGone waits for the kernel to drop path (a detached cache link, a
// stopped device, an unregistered set): the sysfs writes return before.
func WaitGone(ctx context.Context, a *layer.Applier, path string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := a.Host().Lstat(path); err != nil {
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
