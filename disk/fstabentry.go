package disk

import (
	"github.com/diskprep/diskprep/disk/fstab"
)

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
