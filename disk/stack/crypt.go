package stack

import (
	"context"
	"path/filepath"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
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
func (pl Planner) planEncrypted(e EncryptedSpec, m layer.Member, opt Options, mounts []disk.MountEntry) (EncryptedPlan, error) {
	spec := *e.Volume.Encrypt
	if spec.Name == "" {
		spec.Name = filepath.Base(m.Path) + "_crypt"
	}
	v := VolumePlan{Device: m.Path, FS: e.Volume.FS, Label: e.Volume.Label, MkfsOpts: e.Volume.MkfsOpts, MountPoint: e.Volume.Mount,
		MountOpts: e.Volume.MountOpts, MountOver: e.Volume.MountOver, Persist: e.Volume.Persist}
	node, fresh := "", true
	if m.Ex != nil {
		node, fresh = m.Path, false
	}
	if err := pl.layer().PlanEncrypt(&v, &spec, node, fresh, m.Part.SizeBytes, opt, mounts, ""); err != nil {
		return EncryptedPlan{}, err
	}
	if v.Persist {
		v.FstabLine = disk.FstabEntryLine(v.PartPlan())
	}
	return EncryptedPlan{Key: e.Key, Partition: m.Path, Volume: v, Origin: e.Origin}, nil
}

// applyEncrypted opens a partition's LUKS2 layer and puts its file
// system on it.
func (r *run) applyEncrypted(ctx context.Context, ep EncryptedPlan) (*EncryptedResult, error) {
	er := EncryptedResult{Key: ep.Key, Partition: ep.Partition}
	if ep.Volume.Crypt.Format != nil {
		if err := r.CheckMembersFree([]string{ep.Partition}, "crypt:"+ep.Key); err != nil {
			return nil, err
		}
	}
	var err error
	er.Volume, err = r.Volume(ctx, ep.Volume)
	return &er, err
}
