package hwinfo

// Storage stacks: what the kernel builds on top of disks. Each kind has
// its own list in Host (md arrays, LVM volume groups; issue 15 adds cached
// volumes: lvmcache, dm-writecache, bcache), and every kind answers the
// same three questions the same way, so that a bench record can follow any
// device down to its disks (Host.Stack): which kernel device is it (Device,
// with Path), what kind and shape is it (Kind, Type), and what is it built
// on (the member devices, by kernel name).
//
// Cached volumes (issue 15) take the same shape: a Host.Caches list of
// CachedVolume{Device, Path, Kind: lvmcache|writecache|bcache, Mode:
// writethrough|writeback, Origin, CacheDevices, CacheBytes, DirtyBytes,
// ReadHits, ReadMisses, WriteHits, WriteMisses}, read from the
// device-mapper status ioctl (DM_TABLE_STATUS on /dev/mapper/control, what
// dmsetup status and lvs -o cache_* read: sysfs has no dm-cache counters)
// and bcache's sysfs stats_total; Host.Stack then
// gives such a device the Layer{Kind: its kind, Type: its mode, On: origin
// then cache devices}. An LV that is cached already shows its segment
// type (cache, writecache) and the PVs of its origin and its cache pool,
// and a bcache device its StackedOn (backing device, then caches).

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
}

// Layer is one level of a storage stack, as Host.Stack follows a device
// down to its disks: the shape bench records under a target.
type Layer struct {
	// Kind is md, lvm, crypt, multipath, dm or bcache (cached volumes of
	// issue 15 add their own).
	Kind   string `json:"kind"`
	Device string `json:"device"` // md0, dm-2, bcache0
	// Name is what people call it: the md array's name, "vg/lv", the dm name.
	Name string `json:"name,omitempty"`
	// Type is the shape: the md level (raid1), the LV's segment type
	// (linear, striped, raid1 ...).
	Type string `json:"type,omitempty"`
	// State is what is not normal about it: "degraded", "resync 15%";
	// "" when healthy or not known.
	State     string `json:"state,omitempty"`
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// On lists the devices it is built on (md members, the PVs an LV's
	// extents are on), by kernel name.
	On []string `json:"on"`
}
