package stack

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/hwinfo/probe"
	"github.com/diskprep/diskprep/internal/units"
)

// A stack's volumes and members may sit on LUKS2 (disk/crypt): this file
// is where the two layers meet, the volume's file system planned on the
// layer's mapping.

func checkEncrypt(e *crypt.Spec, what string) error {
	if e == nil {
		return nil
	}
	if err := e.Validate(); err != nil {
		return disk.Usagef("%s: %v", what, err)
	}
	return nil
}

// planEncrypt puts the LUKS2 layer of e under the volume v, whose Device is
// the array or logical volume, and plans its file system on the mapping.
// node is the backing device's node when it exists now ("" for one this
// plan creates); fresh: the backing is new or is to be wiped, so nothing
// on it counts.
func (pl Planner) planEncrypt(v *VolumePlan, e *crypt.Spec, node string, fresh bool, size uint64, req StackRequest, mounts []disk.MountEntry, geometry string) error {
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
	c, err := cp.Layer(e, "", b, makeKey, req.Wipe, v.Persist)
	if err != nil {
		return err
	}
	c.Wipe, c.NoDiscard = req.Wipe, req.NoDiscard
	v.Device = c.Mapper
	if (c.Fresh() || c.FSAfterOpen) && b.SizeBytes > crypt.HeaderBytes {
		if err := checkFSRoom(v, b.SizeBytes-crypt.HeaderBytes); err != nil {
			return err
		}
	}
	switch {
	case c.Fresh():
		v.FSUUID = pl.MakeUUID()
		v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, true, req.NoDiscard, geometry)
		if v.MountPoint != "" {
			v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
		}
	case c.FSAfterOpen:
		v.FSUUID = pl.MakeUUID()
		v.MkfsIfBlank = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, false, req.NoDiscard, geometry)
		if v.MountPoint != "" {
			v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
		}
	default:
		real, _ := pl.HostOrLive().EvalSymlinks(c.Mapper)
		if err := pl.planVolume(v, real, req, mounts, geometry); err != nil {
			return err
		}
	}
	v.Crypt = c
	return nil
}

// planCryptGrow plans what fills an encrypted volume of size bytes (the
// size asked when lp grows it): its open LUKS2 mapping is resized, then
// the file system on it grown (online, as planFSGrow does). A closed
// mapping opens at the full size; what is on it is looked at then.
func (pl Planner) planCryptGrow(ctx context.Context, lp *LVPlan, v *VolumePlan, size uint64) error {
	c := v.Crypt
	if lp.Grow != nil {
		size = lp.SizeBytes
	}
	if c == nil || c.Open != nil || v.Mkfs != nil {
		return nil
	}
	h := pl.HostOrLive()
	offset := uint64(crypt.HeaderBytes)
	if l, err := crypt.ReadHeader(h, lp.Path); err == nil && l.DataOffsetBytes > 0 {
		offset = l.DataOffsetBytes
	}
	if size <= offset {
		return nil
	}
	want := size - offset
	f, err := h.OpenDevice(c.Mapper, false)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Mapper, err)
	}
	have, err := f.Size()
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", c.Mapper, err)
	}
	if have < want {
		lp.CryptResize = crypt.ResizeArgv(c)
	}
	argv, fsBytes, err := pl.fsGrowTo(ctx, v, v.Device, want)
	if argv != nil {
		lp.FSGrow, lp.FSBytes = argv, fsBytes
		if lp.Grow == nil {
			lp.SizeBytes = size
		}
	}
	return err
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

// planVolumeOn plans the file system of v on its array or logical volume:
// encrypted when e asks it; fresh (new, or to be wiped) means mkfs with
// force when force, else what is at node decides (planVolume).
func (pl Planner) planVolumeOn(v *VolumePlan, e *crypt.Spec, node string, fresh, force bool, size uint64, req StackRequest, mounts []disk.MountEntry, geometry string) error {
	if fresh && e == nil {
		if err := checkFSRoom(v, size); err != nil {
			return err
		}
	}
	if e != nil {
		return pl.planEncrypt(v, e, node, fresh, size, req, mounts, geometry)
	}
	if !fresh {
		return pl.planVolume(v, node, req, mounts, geometry)
	}
	v.FSUUID = pl.MakeUUID()
	v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, force, req.NoDiscard, geometry)
	if v.MountPoint != "" {
		v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
	}
	return nil
}

// planMemberCrypts gives each member partition of an encrypted group its
// LUKS2 layer and returns the members as LVM sees them: the mappings. A
// plain group's member holding LUKS is refused: pvcreate over it would
// destroy someone's encrypted volume.
func (pl Planner) planMemberCrypts(g GroupSpec, ms []member, req StackRequest) ([]member, []*crypt.Plan, error) {
	if g.Encrypt == nil {
		for _, m := range ms {
			if m.ex == nil {
				continue
			}
			sigs, err := pl.probe(m.path)
			if err != nil {
				return nil, nil, err
			}
			if slices.ContainsFunc(sigs, func(s probe.Signature) bool { return s.Type == "crypto_LUKS" }) {
				return nil, nil, disk.Refuse(m.path, fmt.Sprintf("%s holds a LUKS volume, and vg %s's members are not encrypted (encrypt: under the lvm entry), or release it first", m.path, g.VG))
			}
		}
		return ms, nil, nil
	}
	cp := crypt.Planner{Planner: pl.Planner}
	makeKey, err := cp.KeyFileMissing(g.Encrypt)
	if err != nil {
		return nil, nil, err
	}
	out := make([]member, len(ms))
	var crypts []*crypt.Plan
	for i, m := range ms {
		b := crypt.Target{Path: m.path, Node: m.path, SizeBytes: m.part.SizeBytes}
		if m.disk != nil {
			b.LogicalSector = m.disk.LogicalSectorBytes
		}
		if m.ex != nil {
			sigs, err := pl.probe(m.path)
			if err != nil {
				return nil, nil, err
			}
			if i := slices.IndexFunc(sigs, func(s probe.Signature) bool { return s.Usage != "partition_table" }); i >= 0 {
				b.Found = &sigs[i]
			}
		}
		// The group is nothing at boot without its members open: each
		// has its crypttab line. The first makes the key they share.
		c, err := cp.Layer(g.Encrypt, filepath.Base(m.path)+"_crypt", b, makeKey, req.Wipe, true)
		if err != nil {
			return nil, nil, err
		}
		c.MakeKey = c.MakeKey && i == 0
		c.Wipe, c.NoDiscard = req.Wipe, req.NoDiscard
		crypts = append(crypts, c)
		m.path = c.Mapper
		if m.part.SizeBytes > crypt.HeaderBytes {
			m.part.SizeBytes -= crypt.HeaderBytes
		}
		out[i] = m
	}
	return out, crypts, nil
}

// probe reads the signatures on dev.
func (pl Planner) probe(dev string) ([]probe.Signature, error) {
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
func (a *applier) applyCrypt(ctx context.Context, v VolumePlan, version string, undo *[]func()) (VolumePlan, *crypt.Result, error) {
	c := v.Crypt
	cr, err := a.crypts().Up(ctx, c, version, undo)
	if err != nil || !c.FSAfterOpen {
		return v, cr, err
	}
	pl := Planner{disk.Planner{Host: a.host, Roots: a.roots}}
	mounts, err := disk.ReadMounts(a.host, a.roots)
	if err != nil {
		return v, cr, err
	}
	real, err := a.host.EvalSymlinks(c.Mapper)
	if err != nil {
		return v, cr, fmt.Errorf("%s: %w", c.Mapper, err)
	}
	v.MountArgv = nil
	planned := v.FSUUID
	if err := pl.planVolume(&v, real, StackRequest{Wipe: c.Wipe, NoDiscard: c.NoDiscard}, mounts, v.Geometry); err != nil {
		return v, cr, err
	}
	if v.Mkfs != nil && !mkfsForced(v.Mkfs) && v.MkfsIfBlank != nil {
		// Nothing on it: the mkfs the dry run showed.
		v.FSUUID, v.Mkfs = planned, v.MkfsIfBlank
	}
	if v.Persist {
		v.FstabLine = disk.FstabEntryLine(v.partPlan())
	}
	return v, cr, nil
}

// EncryptedSpec is a file system on LUKS2 right on a partition: the one
// whose Use is "crypt:"+Key holds the LUKS2 volume, and Volume (whose
// Encrypt says how) goes on its mapping, by default PARTITION_crypt as
// Debian's installer names it (sdb1_crypt).
type EncryptedSpec struct {
	// Key ties the entry to its partition; it names nothing on the host.
	Key    string     `json:"key"`
	Volume VolumeSpec `json:"filesystem"`
	Origin string     `json:"origin,omitempty"`
}

// EncryptedPlan is one encrypted partition: its LUKS2 layer is
// Volume.Crypt, and Volume.Device the mapping.
type EncryptedPlan struct {
	Key       string     `json:"key"`
	Partition string     `json:"partition"`
	Volume    VolumePlan `json:"volume"`
	Origin    string     `json:"origin,omitempty"`
}

// EncryptedResult is one encrypted partition after ApplyStacks.
type EncryptedResult struct {
	Key       string       `json:"key"`
	Partition string       `json:"partition"`
	Volume    VolumeResult `json:"volume"`
}

// planEncrypted plans the LUKS2 layer on the partition m and the file
// system on its mapping. A new partition (or one disk's plan wipes) holds
// nothing that counts; an existing one is probed.
func (pl Planner) planEncrypted(e EncryptedSpec, m member, req StackRequest, mounts []disk.MountEntry) (EncryptedPlan, error) {
	spec := *e.Volume.Encrypt
	if spec.Name == "" {
		spec.Name = filepath.Base(m.path) + "_crypt"
	}
	v := VolumePlan{Device: m.path, FS: e.Volume.FS, Label: e.Volume.Label, MkfsOpts: e.Volume.MkfsOpts, MountPoint: e.Volume.Mount,
		MountOpts: e.Volume.MountOpts, MountOver: e.Volume.MountOver, Persist: e.Volume.Persist}
	node, fresh := "", true
	if m.ex != nil {
		node, fresh = m.path, false
	}
	if err := pl.planEncrypt(&v, &spec, node, fresh, m.part.SizeBytes, req, mounts, ""); err != nil {
		return EncryptedPlan{}, err
	}
	if v.Persist {
		v.FstabLine = disk.FstabEntryLine(v.partPlan())
	}
	return EncryptedPlan{Key: e.Key, Partition: m.path, Volume: v, Origin: e.Origin}, nil
}

// Passphrases are the plan's LUKS2 layers that a passphrase unlocks and
// that apply formats or opens: what the caller asks before the first
// step (Deps.Passphrase then answers by name).
func (sp *StackPlan) Passphrases() []*crypt.Plan {
	var out []*crypt.Plan
	for _, c := range sp.crypts() {
		if c.Passphrase && (c.Format != nil || c.Open != nil) {
			out = append(out, c)
		}
	}
	return out
}
