package layer

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/hwinfo/probe"
	"github.com/diskprep/diskprep/internal/units"
)

// VolumeResult is the file system on an array or logical volume.
type VolumeResult struct {
	Device      string   `json:"device"`
	FS          string   `json:"fs"`
	Label       string   `json:"label,omitempty"`
	UUID        string   `json:"uuid"`
	Formatted   bool     `json:"formatted"`
	MkfsArgv    []string `json:"mkfs_argv,omitempty"`
	MkfsVersion string   `json:"mkfs_version,omitempty"`
	// Geometry is the stripe geometry mkfs was given: xfs's -d
	// "su=512k,sw=2", ext4's -E "stride=128,stripe_width=256" (in 4 KiB
	// blocks, with -b 4096).
	Geometry   string `json:"geometry,omitempty"`
	MountPoint string `json:"mount_point,omitempty"`
	MountOpts  string `json:"mount_opts,omitempty"`
	Mounted    bool   `json:"mounted"`
	FstabLine  string `json:"fstab_line,omitempty"`
	FstabAdded bool   `json:"fstab_added,omitempty"`
	// Crypt is the LUKS2 layer under the file system; nil for none.
	Crypt *crypt.Result `json:"crypt,omitempty"`
}

// Volume opens a Volume's LUKS2 layer when it has one, then makes its
// file system, mounts it and persists it as a partition's.
func (r *Run) Volume(ctx context.Context, v VolumePlan) (VolumeResult, error) {
	var cr *crypt.Result
	if v.Crypt != nil {
		var err error
		v, cr, err = r.applyCrypt(ctx, v, r.Versions["cryptsetup"], r.Undo)
		r.Changed = r.Changed || cr.Changed()
		if err != nil {
			return VolumeResult{Device: v.Device, FS: v.FS, Crypt: cr}, err
		}
	}
	pp := v.PartPlan()
	pp.Name, pp.Mkfs, pp.MountArgv, pp.FstabLine = filepath.Base(v.Device), v.Mkfs, v.MountArgv, v.FstabLine
	holder := &disk.Plan{Device: v.Device, Disk: disk.DiskSummary{Name: filepath.Base(v.Device)}}
	pr, err := r.PreparePartition(ctx, holder, pp, r.Versions[FirstOr(v.Mkfs)], r.Undo)
	vr := VolumeResult{Device: v.Device, FS: v.FS, Label: v.Label, UUID: pr.UUID, Formatted: pr.Formatted, MkfsArgv: pr.MkfsArgv,
		MkfsVersion: pr.MkfsVersion, Geometry: v.Geometry, MountPoint: v.MountPoint, MountOpts: v.MountOpts, Mounted: pr.Mounted,
		FstabLine: v.FstabLine, FstabAdded: pr.FstabAdded, Crypt: cr}
	r.FstabChanged = r.FstabChanged || pr.FstabAdded
	r.Changed = r.Changed || pr.Formatted || pr.Mounted || pr.FstabAdded
	return vr, err
}

// PlanVolumeAt is planVolume for a file system that starts at offset on
// dev and is not mounted (nothing shows it as a device yet).
func (pl Planner) PlanVolumeAt(v *VolumePlan, dev string, offset int64, opt Options) error {
	if err := pl.planFormat(v, dev, offset, opt, "", dev, "the bcache device on "+dev); err != nil {
		return err
	}
	if v.MountPoint != "" {
		v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
	}
	return nil
}

// VolumeSpec is the file system made on an array or logical volume.
type VolumeSpec struct {
	FS        string   `json:"fs"`
	Label     string   `json:"label,omitempty"`
	Mount     string   `json:"mount,omitempty"`
	MountOpts string   `json:"mount_opts,omitempty"`
	MkfsOpts  []string `json:"mkfs_opts,omitempty"`
	Persist   bool     `json:"persist,omitempty"`
	// MountOver allows mounting over a non-empty directory (PartSpec's).
	MountOver bool `json:"mount_over,omitempty"`
	// Encrypt puts the file system on LUKS2 (crypt.go).
	Encrypt *crypt.Spec `json:"encrypt,omitempty"`
}

// VolumePlan is the file system on an array or logical volume, with every
// command that touches it, as PartPlan has for a partition.
type VolumePlan struct {
	Device  string `json:"device"`
	FS      string `json:"fs"`
	Label   string `json:"label,omitempty"`
	FSUUID  string `json:"fs_uuid"`
	Persist bool   `json:"persist,omitempty"`
	// Geometry is the stripe geometry given to mkfs: xfs's -d
	// "su=512k,sw=2", ext4's -E "stride=128,stripe_width=256".
	Geometry string   `json:"geometry,omitempty"`
	MkfsOpts []string `json:"mkfs_opts,omitempty"`
	Mkfs     []string `json:"mkfs,omitempty"` // nil: the file system exists as asked
	// MkfsIfBlank is the mkfs of a closed LUKS2 volume's mapping, run
	// when it holds nothing once opened (FSUUID its UUID then).
	MkfsIfBlank []string `json:"mkfs_if_blank,omitempty"`
	MountPoint  string   `json:"mount_point,omitempty"`
	MountOpts   string   `json:"mount_opts,omitempty"`
	MountArgv   []string `json:"mount_argv,omitempty"` // nil: not mounting, or mounted there
	MountOver   bool     `json:"mount_over,omitempty"`
	FstabLine   string   `json:"fstab_line,omitempty"`
	// Crypt is the LUKS2 layer the file system sits on (Device is then
	// its mapping); nil for none.
	Crypt *crypt.Plan `json:"crypt,omitempty"`
	// FSBytes and FSUsed are the size the existing file system's
	// superblock gives and the space it counts as used (0: none, or not
	// known).
	FSBytes uint64 `json:"-"`
	FSUsed  uint64 `json:"-"`
}

// PartPlan is the volume as PartPlan, for the helpers partitions and
// volumes share (fstab entry, marker).
func (v VolumePlan) PartPlan() disk.PartPlan {
	return disk.PartPlan{Path: v.Device, FS: v.FS, FSLabel: v.Label, FSUUID: v.FSUUID, MountPoint: v.MountPoint, MountOpts: v.MountOpts, Persist: v.Persist}
}

func (v VolumePlan) Changes() bool { return v.Mkfs != nil || v.MountArgv != nil || v.Crypt.Changes() }

// planFormat probes dev, from offset on, for a volume's signature and
// decides what the file system needs: none means mkfs (with geometry);
// the one asked for (type and label) means keeping it; another is refused
// for subject unless wipe, the refusal naming the volume as what.
func (pl Planner) planFormat(v *VolumePlan, dev string, offset int64, opt Options, geometry, subject, what string) error {
	f, err := pl.HostOrLive().OpenDevice(dev, false)
	if err != nil {
		return fmt.Errorf("probe %s: %w", dev, err)
	}
	size, err := f.Size()
	var sigs []probe.Signature
	if err == nil && size > uint64(offset) {
		sigs, err = disk.ProbeSignatures(io.NewSectionReader(f, offset, int64(size)-offset), int64(size)-offset)
	}
	f.Close()
	if err != nil {
		return fmt.Errorf("probe %s: %w", dev, err)
	}
	var found *probe.Signature
	if i := slices.IndexFunc(sigs, volumeSignature); i >= 0 {
		found = &sigs[i]
	}
	switch {
	case found == nil:
		v.FSUUID = pl.MakeUUID()
		v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, false, opt.NoDiscard, geometry)
	case found.Type == v.FS && found.Label == v.Label:
		v.FSUUID, v.FSBytes, v.FSUsed = found.UUID, found.SizeBytes, found.UsedBytes
	case !opt.Wipe:
		return disk.Refuse(subject, fmt.Sprintf("%s holds %s%s, not the %s asked (pass --wipe to replace it)", what, found.Type, disk.LabelSuffix(found.Label), v.FS))
	default:
		v.FSUUID = pl.MakeUUID()
		v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, true, opt.NoDiscard, geometry)
	}
	return nil
}

// PlanVolume fills what the file system on an existing array or logical
// volume (node dev) still needs: none yet means mkfs; the one asked for
// means only mounting what is not mounted; another is refused unless wipe.
func (pl Planner) PlanVolume(v *VolumePlan, dev string, opt Options, mounts []disk.MountEntry, geometry string) error {
	h := pl.HostOrLive()
	if err := pl.planFormat(v, dev, 0, opt, geometry, v.Device, v.Device); err != nil {
		return err
	}
	major, minor, err := h.DeviceNumber(dev)
	if err != nil {
		return err
	}
	devnum := fmt.Sprintf("%d:%d", major, minor)
	mountedThere := false
	for _, m := range mounts {
		if m.Devnum != devnum {
			continue
		}
		if v.MountPoint == "" || filepath.Clean(m.Point) != v.MountPoint {
			return disk.Refuse(v.Device, fmt.Sprintf("%s is mounted at %s", v.Device, m.Point))
		}
		if v.Mkfs != nil {
			return disk.Refuse(v.Device, fmt.Sprintf("%s is mounted at %s", v.Device, m.Point))
		}
		mountedThere = true
	}
	if v.MountPoint != "" && !mountedThere {
		v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
	}
	return nil
}

// Mounted says whether v, planned by planVolume, is Mounted now: at its
// mount point, since planVolume refuses one Mounted anywhere else.
func (v *VolumePlan) Mounted() bool {
	return v.MountPoint != "" && v.MountArgv == nil
}

// WaitStackNode waits for the node of a new array or logical volume (udev
// makes /dev/md/NAME and /dev/VG/LV) and returns the kernel's name of it.
func (a *Applier) WaitStackNode(ctx context.Context, path string) (string, error) {
	if a.UdevRunning() {
		// Cut short by an interruption, it is no news: the last line says so.
		if out, err := a.Host().Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil && ctx.Err() == nil {
			a.Log().Warn("udevadm settle failed", "err", err, "output", string(out))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		real, err := a.Host().EvalSymlinks(path)
		if err == nil {
			if _, _, err := a.Host().DeviceNumber(real); err == nil {
				return filepath.Base(real), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s did not appear: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// OnDevice is where the volume's file system is: the device, or LUKS2 on it.
func OnDevice(v VolumePlan, dev string) string {
	if v.Crypt == nil {
		return dev
	}
	return v.Crypt.Mapper + ", LUKS2 on " + dev + v.Crypt.SectorText()
}

// CryptSuffix says a logical volume's file system is on LUKS2.
func CryptSuffix(v VolumePlan) string {
	if v.Crypt == nil {
		return ""
	}
	return " on " + v.Crypt.Mapper + " (LUKS2" + v.Crypt.SectorText() + ")"
}

// InMount is " mounted at POINT" for a volume with a mount point, else "".
func InMount(v VolumePlan) string {
	if v.MountPoint == "" {
		return ""
	}
	return " mounted at " + v.MountPoint
}

// MkfsForced says whether an mkfs argv overwrites what it finds (-f, -F).
func MkfsForced(argv []string) bool { return len(argv) > 1 && (argv[1] == "-f" || argv[1] == "-F") }

// PlanEncrypt puts the LUKS2 layer of e under the volume v, whose Device is
// the array or logical volume, and plans its file system on the mapping.
// node is the backing device's node when it exists now ("" for one this
// plan creates); fresh: the backing is new or is to be wiped, so nothing
// on it counts.
func (pl Planner) PlanEncrypt(v *VolumePlan, e *crypt.Spec, node string, fresh bool, size uint64, opt Options, mounts []disk.MountEntry, geometry string) error {
	cp := crypt.Planner{Planner: pl.Planner}
	makeKey, err := cp.KeyFileMissing(e)
	if err != nil {
		return err
	}
	b := crypt.Target{Path: v.Device, Node: node, SizeBytes: size}
	if node != "" {
		f, err := pl.HostOrLive().OpenDevice(node, false)
		if err != nil {
			return fmt.Errorf("probe %s: %w", node, err)
		}
		if n, err := f.Size(); err == nil {
			b.SizeBytes = n
		}
		if l, err := f.LogicalSector(); err == nil {
			b.LogicalSector = l
		}
		var sigs []probe.Signature
		if !fresh {
			sigs, err = disk.ProbeSignatures(io.NewSectionReader(f, 0, int64(b.SizeBytes)), int64(b.SizeBytes))
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("probe %s: %w", node, err)
		}
		if i := slices.IndexFunc(sigs, volumeSignature); i >= 0 {
			b.Found = &sigs[i]
		}
	}
	c, err := cp.Layer(e, "", b, makeKey, opt.Wipe, v.Persist)
	if err != nil {
		return err
	}
	c.Wipe, c.NoDiscard = opt.Wipe, opt.NoDiscard
	v.Device = c.Mapper
	if (c.Fresh() || c.FSAfterOpen) && b.SizeBytes > crypt.HeaderBytes {
		if err := checkFSRoom(v, b.SizeBytes-crypt.HeaderBytes); err != nil {
			return err
		}
	}
	switch {
	case c.Fresh():
		v.FSUUID = pl.MakeUUID()
		v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, true, opt.NoDiscard, geometry)
		if v.MountPoint != "" {
			v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
		}
	case c.FSAfterOpen:
		v.FSUUID = pl.MakeUUID()
		v.MkfsIfBlank = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, false, opt.NoDiscard, geometry)
		if v.MountPoint != "" {
			v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
		}
	default:
		real, _ := pl.HostOrLive().EvalSymlinks(c.Mapper)
		if err := pl.PlanVolume(v, real, opt, mounts, geometry); err != nil {
			return err
		}
	}
	v.Crypt = c
	return nil
}

// checkFSRoom refuses a file system mkfs would refuse for want of room,
// before any step: size is the device it goes on (0 when not known).
func checkFSRoom(v *VolumePlan, size uint64) error {
	if min := disk.MinFSBytes(v.FS); size > 0 && size < min {
		return disk.Refuse(v.Device, fmt.Sprintf("%s is too small for %s: it would have %s, %s needs at least %s", v.Device, v.FS, units.FormatSize(size), v.FS, units.FormatSize(min)))
	}
	return nil
}

// volumeSignature says whether a signature is one a volume's planning
// weighs: a file system, swap, an md member or an encrypted volume.
func volumeSignature(s probe.Signature) bool {
	return s.Usage == "filesystem" || s.Type == "swap" || s.Usage == "raid" || s.Usage == "crypto"
}

// PlanVolumeOn plans the file system of v on its array or logical volume:
// encrypted when e asks it; fresh (new, or to be wiped) means mkfs with
// force when force, else what is at node decides (planVolume).
func (pl Planner) PlanVolumeOn(v *VolumePlan, e *crypt.Spec, node string, fresh, force bool, size uint64, opt Options, mounts []disk.MountEntry, geometry string) error {
	if fresh && e == nil {
		if err := checkFSRoom(v, size); err != nil {
			return err
		}
	}
	if e != nil {
		return pl.PlanEncrypt(v, e, node, fresh, size, opt, mounts, geometry)
	}
	if !fresh {
		return pl.PlanVolume(v, node, opt, mounts, geometry)
	}
	v.FSUUID = pl.MakeUUID()
	v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, force, opt.NoDiscard, geometry)
	if v.MountPoint != "" {
		v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
	}
	return nil
}

// ProbeVolume reads the signatures on dev.
func (pl Planner) ProbeVolume(dev string) ([]probe.Signature, error) {
	f, err := pl.HostOrLive().OpenDevice(dev, false)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	sigs, err := disk.ProbeSignatures(f, int64(size))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	return sigs, nil
}

// applyCrypt makes and opens the LUKS2 layer of v before its file system,
// and returns the volume as its file system is then made: for a volume
// found closed, planned with what the opened mapping holds.
func (a *Applier) applyCrypt(ctx context.Context, v VolumePlan, version string, undo *[]func()) (VolumePlan, *crypt.Result, error) {
	c := v.Crypt
	cr, err := a.Crypts().Up(ctx, c, version, undo)
	if err != nil || !c.FSAfterOpen {
		return v, cr, err
	}
	pl := a.Planner()
	mounts, err := disk.ReadMounts(a.Host(), a.Roots())
	if err != nil {
		return v, cr, err
	}
	real, err := a.Host().EvalSymlinks(c.Mapper)
	if err != nil {
		return v, cr, fmt.Errorf("%s: %w", c.Mapper, err)
	}
	v.MountArgv = nil
	planned := v.FSUUID
	if err := pl.PlanVolume(&v, real, Options{Wipe: c.Wipe, NoDiscard: c.NoDiscard}, mounts, v.Geometry); err != nil {
		return v, cr, err
	}
	if v.Mkfs != nil && !MkfsForced(v.Mkfs) && v.MkfsIfBlank != nil {
		// Nothing on it: the mkfs the dry run showed.
		v.FSUUID, v.Mkfs = planned, v.MkfsIfBlank
	}
	if v.Persist {
		v.FstabLine = disk.FstabEntryLine(v.PartPlan())
	}
	return v, cr, nil
}
