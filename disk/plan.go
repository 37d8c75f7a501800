// Package disk plans and applies the preparation of a data disk: safety
// checks against hwinfo facts, a GPT written with go-diskfs, mkfs, mount and
// fstab through one command runner, loop images and per-device locks.
//
// Deciding and acting are apart: PlanDisk is pure (request + facts -> Plan),
// Apply carries out exactly the Plan it is given and decides nothing new, so
// `--dry-run` shows what apply would do.
package disk

import (
	"fmt"
	"strings"

	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/google/uuid"
)

// PlanSchema names the JSON shape of a Plan.
const PlanSchema = "diskprep/plan/v1"

// GPT partition types diskprep writes.
const (
	LinuxFilesystemGUID = "0FC63DAF-8483-4772-8E79-3D69D8477DE4" // data partitions
	LinuxRAIDGUID       = "A19D880F-05FC-4D3B-A006-743F0F84911E" // md members
	LinuxLVMGUID        = "E6D6D379-F507-44C2-A23C-238F2A3DF928" // LVM physical volumes
	LinuxSwapGUID       = "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F" // swap areas
	LinuxLUKSGUID       = "CA7D7CCB-63ED-4C53-861C-1742536059CC" // LUKS volumes (the Discoverable Partitions Specification's)
)

// LoopPlaceholder stands for the loop device an image will be attached to:
// its name is known only at attach time, so plans for a new image carry this
// prefix in device paths and argv, and Apply binds it to the real device.
const LoopPlaceholder = "/dev/loopN"

// Request asks for one disk (or one image file) to be prepared. The CLI builds
// one with a single partition; plan files (disk/planfile) build one per
// selected disk.
type Request struct {
	// Device is the whole disk, "/dev/sdb" or "sdb". Empty when Image is set.
	Device string `json:"device,omitempty"`
	// Image is a file to create (sparse) and attach to a loop device.
	Image          string `json:"image,omitempty"`
	ImageSizeBytes uint64 `json:"image_size_bytes,omitempty"` // 0: the existing file's size
	// ImageSectorBytes is the loop device's logical sector: 512 (default) or 4096.
	ImageSectorBytes uint64 `json:"image_sector_bytes,omitempty"`

	// Partitions in disk order; SizeBytes 0 means "the rest of the disk" and
	// only the last one may say so. At least one.
	Partitions []PartSpec `json:"partitions"`

	// Wipe allows destroying existing signatures, tables and a differently
	// prepared layout (as `wipefs -a` before writing).
	Wipe bool `json:"wipe,omitempty"`
	// Fresh makes the table and every filesystem anew even where the disk
	// already has the planned layout (which a rerun of prepare keeps):
	// fscompare measures new filesystems only, never one a killed run
	// left. It needs Wipe.
	Fresh bool `json:"fresh,omitempty"`

	// Expect is the fingerprint recorded when a plan file selected this disk;
	// planning refuses when the disk no longer matches it. Nil: none recorded.
	Expect *Fingerprint `json:"expect,omitempty"`

	// Origin names where the request came from ("plan.yaml:12"), for messages.
	Origin string `json:"origin,omitempty"`

	// NoDiscard keeps diskprep from discarding (TRIM) the new space of an
	// SSD: blkdiscard before a stack member or swap area, mkfs's own discard
	// otherwise (mkfs.xfs -K, mke2fs -E nodiscard when set).
	NoDiscard bool `json:"no_discard,omitempty"`
}

// PartSpec is one partition asked for.
type PartSpec struct {
	SizeBytes uint64 `json:"size_bytes,omitempty"` // 0 (and no SizePercent): rest of the disk
	// SizePercent is a share of the disk's size ("50%"), rounded down to
	// the alignment; the partition table keeps what it came to.
	SizePercent float64  `json:"size_percent,omitempty"`
	Label       string   `json:"label,omitempty"`      // GPT partition name and filesystem label
	FS          string   `json:"fs"`                   // xfs or ext4
	MkfsOpts    []string `json:"mkfs_opts,omitempty"`  // extra mkfs arguments, passed as given
	Mount       string   `json:"mount,omitempty"`      // mount point; empty: not mounted
	MountOpts   string   `json:"mount_opts,omitempty"` // comma separated, as mount -o
	Persist     bool     `json:"persist,omitempty"`    // add an fstab line (needs Mount)
	// MountOver allows mounting over a directory that is not empty,
	// hiding what it holds while mounted (--mount-over).
	MountOver bool `json:"mount_over,omitempty"`
	// Use gives the partition to a stack instead of a filesystem:
	// "raid:NAME" (a member of the md array NAME), "lvm:VG" (a physical
	// volume of the volume group VG) or "crypt:KEY" (a LUKS2 volume, the
	// file system on its mapping). FS is empty then. FS "swap" is a swap
	// area (mkswap, swapon, a swap fstab line with Persist).
	Use string `json:"use,omitempty"`
}

// Fingerprint identifies a disk's identity and state at planning time; Apply
// re-checks it just before writing and aborts when anything changed.
type Fingerprint struct {
	Serial    string `json:"serial,omitempty"`
	WWN       string `json:"wwn,omitempty"`
	SizeBytes uint64 `json:"size_bytes"`
	TableType string `json:"table_type,omitempty"` // gpt, dos or "" (none)
	TableID   string `json:"table_id,omitempty"`   // GPT disk GUID or MBR signature
}

// Plan is everything Apply will do to one disk, decided up front. It renders
// as text (WriteText) and JSON.
type Plan struct {
	Schema string `json:"schema"`
	// Device is the whole disk ("/dev/sdb"), or LoopPlaceholder for a new image.
	Device string     `json:"device"`
	Image  *ImagePlan `json:"image,omitempty"`

	Disk        DiskSummary `json:"disk"`
	Fingerprint Fingerprint `json:"fingerprint"`

	// Wipe: erase every signature found (Signatures) before writing the table.
	Wipe bool `json:"wipe"`
	// Destroys lists, for the confirmation, what is on the disk now and will
	// be lost ("sdb1 xfs label=old 10 GiB").
	Destroys []string `json:"destroys,omitempty"`

	// Table is the GPT to write; nil when the disk already has exactly this
	// layout and nothing is rewritten.
	Table      *TablePlan `json:"table,omitempty"`
	Partitions []PartPlan `json:"partitions"`

	// Unchanged: the disk is already prepared as asked; Apply only checks
	// (the fstab line is still ensured when Persist).
	Unchanged bool     `json:"unchanged"`
	Notes     []string `json:"notes,omitempty"`
	Origin    string   `json:"origin,omitempty"`
}

// ImagePlan is the image file behind a loop device.
type ImagePlan struct {
	Path        string `json:"path"`
	SizeBytes   uint64 `json:"size_bytes"`
	SectorBytes uint64 `json:"sector_bytes"`
	Create      bool   `json:"create"`   // the file does not exist yet
	Recreate    bool   `json:"recreate"` // it exists with another size: emptied and resized (--wipe)
	Attach      bool   `json:"attach"`   // not attached yet: Apply attaches it
}

// DiskSummary is what the confirmation shows and the result records.
type DiskSummary struct {
	Name                string `json:"name"`
	Model               string `json:"model,omitempty"`
	Serial              string `json:"serial,omitempty"`
	WWN                 string `json:"wwn,omitempty"`
	Transport           string `json:"transport,omitempty"`
	SizeBytes           uint64 `json:"size_bytes"`
	LogicalSectorBytes  uint64 `json:"logical_sector_bytes"`
	PhysicalSectorBytes uint64 `json:"physical_sector_bytes"`
	OptimalIOBytes      uint64 `json:"optimal_io_bytes,omitempty"`
}

// TablePlan is the GPT to write.
type TablePlan struct {
	Type           string `json:"type"` // always "gpt"
	SectorBytes    uint64 `json:"sector_bytes"`
	TotalSectors   uint64 `json:"total_sectors"`
	AlignBytes     uint64 `json:"align_bytes"`
	FirstUsableLBA uint64 `json:"first_usable_lba"`
	LastUsableLBA  uint64 `json:"last_usable_lba"`
	DiskGUID       string `json:"disk_guid"`
}

// PartPlan is one partition with every command that touches it.
type PartPlan struct {
	Number     int    `json:"number"`
	Name       string `json:"name"` // sdb1, nvme0n1p1, loop3p1
	Path       string `json:"path"` // /dev/sdb1
	Label      string `json:"label,omitempty"`
	TypeGUID   string `json:"type_guid"`
	PartGUID   string `json:"part_guid"`
	StartLBA   uint64 `json:"start_lba"`
	EndLBA     uint64 `json:"end_lba"` // inclusive, as GPT stores it
	StartBytes uint64 `json:"start_bytes"`
	SizeBytes  uint64 `json:"size_bytes"`

	FS string `json:"fs"`
	// Use is the stack the partition belongs to ("raid:data", "lvm:fast");
	// such a partition gets no filesystem of its own.
	Use string `json:"use,omitempty"`
	// Discard is the blkdiscard argv run on the new partition before it is
	// handed to its stack or made swap; nil when not discarding.
	Discard  []string `json:"discard,omitempty"`
	FSLabel  string   `json:"fs_label,omitempty"`
	FSUUID   string   `json:"fs_uuid"` // chosen at planning time and passed to mkfs, so the fstab line is known up front
	MkfsOpts []string `json:"mkfs_opts,omitempty"`
	// Mkfs is the argv to run; nil when the filesystem already exists as asked.
	Mkfs []string `json:"mkfs,omitempty"`

	MountPoint string `json:"mount_point,omitempty"`
	MountOpts  string `json:"mount_opts,omitempty"`
	// MountArgv is the argv to run; nil when not mounting or already mounted
	// there. For swap it is swapon's, nil when the area is active.
	MountArgv []string `json:"mount_argv,omitempty"`
	// MountOver: mounting over a non-empty directory was asked.
	MountOver bool `json:"mount_over,omitempty"`

	Persist   bool   `json:"persist,omitempty"`
	FstabLine string `json:"fstab_line,omitempty"`
}

// Planner is what planning reads of the machine, and where new UUIDs come
// from. The zero value is the live machine with random UUIDs.
type Planner struct {
	// Host is read (never written) for the device argument and the disk's
	// bytes (liveFacts); nil is the live machine.
	Host Host
	// NewUUID makes the disk, partition and filesystem UUIDs; nil is
	// random (tests fix it for reproducible plans).
	NewUUID func() string
	// Roots are where sysfs, /dev, /proc and /etc (mdadm.conf) are read
	// when planning stacks; the zero value is the live machine.
	Roots hwinfo.Roots
	// Protect are more directories no mount point may be or lie in:
	// diskprep's results store (its state directory always is one).
	Protect []string
}

// MakeUUID is a new UUID: pl.NewUUID's, or a random one.
func (pl Planner) MakeUUID() string {
	if pl.NewUUID == nil {
		return uuid.NewString()
	}
	return pl.NewUUID()
}

func diskPath(d *hwinfo.Disk) string {
	if d.Path != "" {
		return d.Path
	}
	return "/dev/" + d.Name
}

// PartitionName is the kernel's name for partition n of disk: a "p" goes
// between names ending in a digit and the number (nvme0n1p1, loop3p1,
// mmcblk0p1), none otherwise (sda1, vdb1). Loop devices always take the
// "p", which also covers the placeholder "loopN".
func PartitionName(disk string, n int) string {
	if disk != "" && disk[len(disk)-1] >= '0' && disk[len(disk)-1] <= '9' || strings.HasPrefix(disk, "loop") {
		return fmt.Sprintf("%sp%d", disk, n)
	}
	return fmt.Sprintf("%s%d", disk, n)
}

// FstabEntry is the line --persist adds: by filesystem UUID, so it survives
// device renames; ext4 gets fsck pass 2, XFS 0 (its fsck is a no-op).
func FstabEntry(pp PartPlan) fstab.Entry {
	if pp.FS == "swap" {
		return fstab.Entry{Spec: "UUID=" + pp.FSUUID, File: "none", VFSType: "swap"}
	}
	pass := 0
	if pp.FS == "ext4" {
		pass = 2
	}
	return fstab.Entry{Spec: "UUID=" + pp.FSUUID, File: pp.MountPoint, VFSType: pp.FS, Options: pp.MountOpts, Pass: pass}
}

// FstabEntryLine is FstabEntry(pp) as the fstab line written.
func FstabEntryLine(pp PartPlan) string { return fstab.EntryLine(FstabEntry(pp)) }
