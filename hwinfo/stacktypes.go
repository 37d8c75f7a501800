package hwinfo

// Storage stacks: what the kernel builds on top of disks. Each kind has
// its own list in Host (md arrays, LVM volume groups; issue 15 adds cached
// volumes: lvmcache, dm-writecache, bcache), and every kind answers the
// same three questions the same way, so that a bench record can follow any
// device down to its disks (Host.Stack): which kernel device is it (Device,
// with Path), what kind and shape is it (Kind, Type), and what is it built
// on (the member devices, by kernel name).
//
// Cached volumes (issue 15, cache.go) take the same shape: a Host.Caches
// list of CachedVolume, read from the device-mapper status ioctl
// (DM_TABLE_STATUS on /dev/mapper/control, what dmsetup status and lvs -o
// cache_* read: sysfs has no dm-cache counters) and bcache's sysfs;
// Host.Stack then gives such a device the Layer{Kind: its kind, Type: its
// mode, On: origin then cache devices, CachedBy: the cache devices}. The
// LV of an lvmcache still shows its segment type (cache, writecache) and
// the PVs of its origin and its cache pool among the volume groups, and a
// bcache device its StackedOn (backing device, then caches) among the disks.

// CachedVolume is one block device with a fast cache in front of a slow
// origin: dm-cache (lvmcache), dm-writecache or bcache.
type CachedVolume struct {
	Device string `json:"device"` // dm-3, bcache0
	Path   string `json:"path"`   // /dev/mapper/slow-data, /dev/bcache0
	// Name is what people call it: "vg/lv" for LVM's, the dm name, the
	// bcache label.
	Name string `json:"name,omitempty"`
	// Kind is lvmcache, dm-cache (not LVM's), writecache or bcache.
	Kind string `json:"kind"`
	// Mode is writethrough, writeback or passthrough (dm-cache);
	// writeback (dm-writecache has no other); writethrough, writeback,
	// writearound or none (bcache).
	Mode string `json:"mode"`
	// OriginDevices are the slow devices, CacheDevices the fast ones
	// (dm-cache's metadata device among them), by kernel name, below
	// LVM's hidden sub-LVs: sdb, nvme0n1p1.
	OriginDevices []string `json:"origin_devices"`
	CacheDevices  []string `json:"cache_devices"`
	SizeBytes     uint64   `json:"size_bytes"`  // of the cached volume
	CacheBytes    uint64   `json:"cache_bytes"` // room for data in the cache
	// BlockBytes is the cache's unit: dm-cache's block (chunk), the
	// writecache block, bcache's block size.
	BlockBytes uint64 `json:"block_bytes,omitempty"`
	// State is what is not normal: "needs check", "failed", "error 5",
	// "no cache" (bcache without its cache set), "inconsistent"; "" when
	// fine.
	State string `json:"state,omitempty"`
	// SequentialCutoffBytes is bcache's sequential_cutoff: sequential I/O
	// past it bypasses the cache (4 MiB by default; 0 caches all).
	SequentialCutoffBytes *uint64 `json:"sequential_cutoff_bytes,omitempty"`
	// Counters are the kernel's, now; nil when they could not be read
	// (not root, a fixture without captured statuses).
	Counters *CacheCounters `json:"counters,omitempty"`

	FSType string  `json:"fs_type,omitempty"`
	Mounts []Mount `json:"mounts,omitempty"`
}

// CacheCounters are a cache's occupancy and its hit and miss counters
// since it was set up (or its counters reset). Hits and misses count what
// Unit says: "ios" (dm-cache: bios; bcache: I/Os as bcache sees them, a
// partial hit a miss) or "blocks" (dm-writecache).
type CacheCounters struct {
	Unit string `json:"unit"`
	// UsedBytes is data in the cache; DirtyBytes the part of it the
	// origin does not have yet (writeback), lost if the cache device dies.
	// bcache says both only roughly (dirty_data and
	// cache_available_percent are rounded for people).
	UsedBytes  uint64 `json:"used_bytes"`
	DirtyBytes uint64 `json:"dirty_bytes"`
	ReadHits   uint64 `json:"read_hits"`
	ReadMisses uint64 `json:"read_misses"`
	// CountsWrites is false where the kernel does not count writes as
	// hits or misses (bcache), so WriteHits and WriteMisses say nothing.
	// For dm-writecache a write hit is a block the cache took, a miss
	// one that bypassed it.
	CountsWrites bool   `json:"counts_writes"`
	WriteHits    uint64 `json:"write_hits"`
	WriteMisses  uint64 `json:"write_misses"`
	// BypassHits and BypassMisses are bcache's reads that were meant to
	// skip the cache (past the sequential cutoff, or the cache congested):
	// a bypass hit was still found in the cache.
	BypassHits   uint64 `json:"bypass_hits,omitempty"`
	BypassMisses uint64 `json:"bypass_misses,omitempty"`
	// Promotions and Demotions are dm-cache's block moves into and out of
	// the cache.
	Promotions uint64 `json:"promotions,omitempty"`
	Demotions  uint64 `json:"demotions,omitempty"`
}

// Array is one md RAID array (drivers/md), as sysfs (sys/block/mdN/md),
// proc/mdstat and the udev database tell it.
type Array struct {
	Name string `json:"name"` // kernel name: md0, md127
	Path string `json:"path"` // /dev/md0
	// ArrayName is the name in the superblock, "data" or "host:data"
	// (udev's MD_NAME, else the md/NAME link in /dev/md).
	ArrayName string `json:"array_name,omitempty"`
	UUID      string `json:"uuid,omitempty"` // as mdadm --detail prints it: b165d6c9:bf460c03:94853b51:3c11a9a6
	// Level is raid0, raid1, raid4, raid5, raid6, raid10, linear,
	// multipath or container; "" for an array that is not started.
	Level    string `json:"level"`
	Metadata string `json:"metadata,omitempty"` // superblock version: 1.2, 0.90, external:imsm
	// RaidDisks is the number of member slots the level has (md/raid_disks).
	RaidDisks  int    `json:"raid_disks"`
	ChunkBytes uint64 `json:"chunk_bytes,omitempty"` // raid0/4/5/6/10
	SizeBytes  uint64 `json:"size_bytes"`
	// State is md's array_state: clean, active, active-idle, readonly,
	// read-auto, inactive, suspended, write-pending, broken, clear.
	State string `json:"state"`
	// Degraded is true when slots have no working member; MissingDevices
	// says how many (md/degraded).
	Degraded       bool `json:"degraded"`
	MissingDevices int  `json:"missing_devices,omitempty"`
	// Sync is the resync, recovery, check, repair or reshape in progress;
	// nil when idle.
	Sync    *ArraySync    `json:"sync,omitempty"`
	Members []ArrayMember `json:"members"`

	FSType  string  `json:"fs_type,omitempty"`
	FSLabel string  `json:"fs_label,omitempty"`
	FSUUID  string  `json:"fs_uuid,omitempty"`
	Mounts  []Mount `json:"mounts,omitempty"`
	Swap    bool    `json:"swap"`
	// Crypt is its LUKS header when it holds one, and Holders what is
	// stacked on it then (the open mapping and what that holds).
	Crypt   *Crypt   `json:"crypt,omitempty"`
	Holders []Holder `json:"holders,omitempty"`
}

// ArraySync is md's sync_action with its progress.
type ArraySync struct {
	// Action is resync, recover, check, repair, reshape or frozen.
	Action string `json:"action"`
	// DoneBytes of TotalBytes (sync_completed, which counts sectors over
	// one member); both 0 while the action is pending or delayed.
	DoneBytes  uint64  `json:"done_bytes"`
	TotalBytes uint64  `json:"total_bytes"`
	Percent    float64 `json:"percent"`
	// SpeedBytesPerS is the current rate (sync_speed, KiB/s).
	SpeedBytesPerS uint64 `json:"speed_bytes_per_s,omitempty"`
}

// ArrayMember is one component device of an array (md/dev-NAME).
type ArrayMember struct {
	Device string `json:"device"`         // sdb, sdc1, nvme0n1p2
	Disk   string `json:"disk,omitempty"` // the whole disk it is on: sdc
	// Slot is the member's place in the array, -1 for none (a spare, a
	// failed device).
	Slot int `json:"slot"`
	// Role is active, spare, faulty or replacement, from State.
	Role string `json:"role"`
	// State is md's own list: in_sync, faulty, write_mostly, spare,
	// blocked, want_replacement, replacement ...
	State []string `json:"state"`
}

// VolumeGroup is one LVM2 volume group. Its layout (size, free space,
// every LV and the PVs each occupies) comes from the newest metadata text
// on its PVs (hwinfo/probe); which LVs are active, and as which dm device,
// from sysfs (sys/block/dm-N/dm/uuid "LVM-<vg uuid><lv uuid>").
type VolumeGroup struct {
	Name string `json:"name"`
	UUID string `json:"uuid"` // as vgs prints it: 6-4-4-4-4-4-6
	// Source says where the layout came from: "metadata" (a PV's on-disk
	// metadata could be read) or "sysfs" (only the active LVs are known,
	// from device-mapper: size, free space and extents are then 0, not
	// known, and PVs only those the active LVs sit on).
	Source      string `json:"source"`
	SeqNo       uint64 `json:"seqno,omitempty"` // metadata generation
	ExtentBytes uint64 `json:"extent_bytes,omitempty"`
	SizeBytes   uint64 `json:"size_bytes"`
	FreeBytes   uint64 `json:"free_bytes"`
	// MissingPVs counts PVs the metadata names that no device here carries.
	MissingPVs int              `json:"missing_pvs,omitempty"`
	PVs        []PhysicalVolume `json:"pvs"`
	LVs        []LogicalVolume  `json:"lvs"`
}

// PhysicalVolume is one PV of a volume group.
type PhysicalVolume struct {
	Device    string `json:"device"`         // nvme0n1p2, sdd, md0; "" when missing
	Disk      string `json:"disk,omitempty"` // the whole disk it is on
	UUID      string `json:"uuid,omitempty"`
	SizeBytes uint64 `json:"size_bytes,omitempty"` // its extents (pe_count x extent size)
	FreeBytes uint64 `json:"free_bytes"`
	Missing   bool   `json:"missing,omitempty"`
}

// LogicalVolume is one LV users see (lvs without -a): internal sub-LVs of
// a RAID, mirror, thin or cache pool are folded into the LV they serve.
type LogicalVolume struct {
	Name   string `json:"name"`
	UUID   string `json:"uuid,omitempty"`
	Path   string `json:"path"`    // /dev/fast/scratch
	DMName string `json:"dm_name"` // fast-scratch
	// Device is the active dm device (dm-0); "" when the LV is not active.
	Device    string `json:"device,omitempty"`
	SizeBytes uint64 `json:"size_bytes"`
	// Type is lvs's segtype of its first segment: linear, striped, raid1,
	// raid5, mirror, thin-pool, thin, cache, writecache ...
	Type    string `json:"type"`
	Stripes int    `json:"stripes,omitempty"` // of a striped LV
	// PVs are the devices its extents (and those of its sub-LVs) are on.
	PVs []string `json:"pvs"`

	FSType  string  `json:"fs_type,omitempty"`
	FSLabel string  `json:"fs_label,omitempty"`
	FSUUID  string  `json:"fs_uuid,omitempty"`
	Mounts  []Mount `json:"mounts,omitempty"`
	Swap    bool    `json:"swap"`
	// Crypt is its LUKS header when it holds one, and Holders what is
	// stacked on it then (the open mapping and what that holds).
	Crypt   *Crypt   `json:"crypt,omitempty"`
	Holders []Holder `json:"holders,omitempty"`
}

// Layer is one level of a storage stack, as Host.Stack follows a device
// down to its disks: the shape bench records under a target.
type Layer struct {
	// Kind is md, lvm, crypt, multipath, dm, or for a cached volume its
	// kind: lvmcache, dm-cache, writecache, bcache.
	Kind   string `json:"kind"`
	Device string `json:"device"` // md0, dm-2, bcache0
	// Name is what people call it: the md array's name, "vg/lv", the dm name.
	Name string `json:"name,omitempty"`
	// Type is the shape: the md level (raid1), the LV's segment type
	// (linear, striped, raid1 ...), a cache's mode (writeback ...).
	Type string `json:"type,omitempty"`
	// State is what is not normal about it: "degraded", "resync 15%";
	// "" when healthy or not known.
	State     string `json:"state,omitempty"`
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// On lists the devices it is built on (md members, the PVs an LV's
	// extents are on; a cache's origin, then its cache devices), by
	// kernel name.
	On []string `json:"on"`
	// CachedBy are those of On that are a cached volume's cache devices.
	CachedBy []string `json:"cached_by,omitempty"`
}
