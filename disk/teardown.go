package disk

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// StackRelease is the part of a ReleasePlan that undoes storage stacks, in
// the order ApplyRelease carries it out after the unmounts and the fstab
// lines: swap off first (before the unmounts), then logical volumes,
// volume groups, physical volumes, md arrays, their mdadm.conf lines, and
// with Wipe the members' superblocks and the disks' signatures.
type StackRelease struct {
	// Swapoff are active swap areas on the devices released.
	Swapoff []string `json:"swapoff,omitempty"`
	// CryptClose are the LUKS mappings closed (cryptsetup close NAME), the
	// layer above the rest; with Wipe, CryptErase are the devices under
	// them whose key slots are destroyed (cryptsetup erase) and whose
	// header wipefs then clears, before the arrays and volumes go.
	CryptClose []string `json:"crypt_close,omitempty"`
	CryptErase []string `json:"crypt_erase,omitempty"`
	// CryptCloseLower and CryptEraseLower are the same for mappings under
	// a volume group (encrypted members): closed once the group is
	// deactivated or removed, their partitions' key slots destroyed then
	// (wipefs comes with WipeSignatures).
	CryptCloseLower []string `json:"crypt_close_lower,omitempty"`
	CryptEraseLower []string `json:"crypt_erase_lower,omitempty"`
	// Crypttab is the file whose diskprep entries CrypttabRemove (mapping
	// names) go.
	Crypttab       string   `json:"crypttab,omitempty"`
	CrypttabRemove []string `json:"crypttab_remove,omitempty"`
	// Bcache are the bcache devices stopped, first of all, each flushed
	// and detached from its cache set before; BcacheSets the cache sets
	// unregistered after (disk/stack).
	Bcache     []BcacheRelease `json:"bcache,omitempty"`
	BcacheSets []string        `json:"bcache_sets,omitempty"`
	// SplitCache are cached logical volumes ("VG/LV") whose cache is
	// flushed and split off (lvconvert --splitcache) without Wipe;
	// Uncache those whose cache is flushed and removed (lvconvert
	// --uncache) with it. Both before the volumes go.
	SplitCache []string `json:"split_cache,omitempty"`
	Uncache    []string `json:"uncache,omitempty"`
	// Deactivate are volume groups made inactive (vgchange -an), without
	// Wipe: their data stays, vgchange -ay brings them back.
	Deactivate []string `json:"deactivate,omitempty"`
	// LVRemove ("VG/LV"), VGRemove and PVRemove are removed (Wipe only).
	LVRemove []string `json:"lvremove,omitempty"`
	VGRemove []string `json:"vgremove,omitempty"`
	PVRemove []string `json:"pvremove,omitempty"`
	// MDStop are md arrays stopped; MDZero the members whose superblock is
	// zeroed (Wipe only).
	MDStop []string `json:"md_stop,omitempty"`
	MDZero []string `json:"md_zero,omitempty"`
	// MdadmConf is the file whose diskprep ARRAY lines MdadmConfRemove go.
	MdadmConf       string   `json:"mdadm_conf,omitempty"`
	MdadmConfRemove []string `json:"mdadm_conf_remove,omitempty"`
	// WipeSignatures are the devices wipefs -a clears, partitions before
	// their disks (Wipe only): what is left is signature-free.
	WipeSignatures []string `json:"wipe_signatures,omitempty"`
}

func (s StackRelease) empty() bool {
	return len(s.Swapoff)+len(s.CryptClose)+len(s.CryptErase)+len(s.CryptCloseLower)+len(s.CryptEraseLower)+len(s.CrypttabRemove)+len(s.Bcache)+len(s.BcacheSets)+len(s.SplitCache)+len(s.Uncache)+len(s.Deactivate)+len(s.LVRemove)+len(s.VGRemove)+len(s.PVRemove)+len(s.MDStop)+
		len(s.MDZero)+len(s.MdadmConfRemove)+len(s.WipeSignatures) == 0
}

// HeaderWipedWithErase says whether the LUKS header of d, one of
// CryptErase, is wiped right after its key slots: not when d is wiped
// later with the stack's members (a partition under its mapping), once.
func (s StackRelease) HeaderWipedWithErase(d string) bool {
	return !slices.Contains(s.WipeSignatures, d)
}

// actions are the teardown's steps, in the order the layers
// (Layers.ApplyRelease) and then applyStackRelease carry them out.
func (s StackRelease) actions() []Action {
	var out []Action
	run := func(text string, argv ...string) {
		out = append(out, Action{Text: text, Op: OpRun, Argv: argv})
	}
	for _, n := range s.CryptClose {
		run("cryptsetup close "+n, "cryptsetup", "close", n)
	}
	for _, d := range s.CryptErase {
		run("cryptsetup erase --batch-mode "+d+" (every key slot destroyed: what it held cannot be read again)", "cryptsetup", "erase", "--batch-mode", d)
		if s.HeaderWipedWithErase(d) {
			run("wipefs --all "+d, "wipefs", "--all", d)
		}
	}
	for i, n := range s.CrypttabRemove {
		a := Action{Text: "remove from " + s.Crypttab + ": the entry of " + n}
		if i == 0 {
			a.Op, a.Path = OpWriteFile, s.Crypttab
		}
		out = append(out, a)
	}
	out = append(out, s.bcacheActions()...)
	for _, lv := range s.SplitCache {
		run("lvconvert --yes --splitcache "+lv+" (flushes the dirty blocks first)", "lvconvert", "--yes", "--splitcache", lv)
	}
	for _, lv := range s.Uncache {
		run("lvconvert --yes --uncache "+lv+" (flushes the dirty blocks first)", "lvconvert", "--yes", "--uncache", lv)
	}
	for _, vg := range s.Deactivate {
		run("vgchange --activate n "+vg, "vgchange", "--activate", "n", vg)
	}
	for _, lv := range s.LVRemove {
		run("lvremove --yes "+lv, "lvremove", "--yes", lv)
	}
	for _, vg := range s.VGRemove {
		run("vgremove "+vg, "vgremove", vg)
	}
	for _, pv := range s.PVRemove {
		run("pvremove "+pv, "pvremove", pv)
	}
	for _, n := range s.CryptCloseLower {
		run("cryptsetup close "+n, "cryptsetup", "close", n)
	}
	for _, d := range s.CryptEraseLower {
		run("cryptsetup erase --batch-mode "+d+" (every key slot destroyed: what it held cannot be read again)", "cryptsetup", "erase", "--batch-mode", d)
	}
	for _, md := range s.MDStop {
		run("mdadm --stop "+md, "mdadm", "--stop", md)
	}
	for _, m := range s.MDZero {
		run("mdadm --zero-superblock "+m, "mdadm", "--zero-superblock", m)
	}
	for i, l := range s.MdadmConfRemove {
		a := Action{Text: "remove from " + s.MdadmConf + ": " + l}
		if i == 0 {
			a.Op, a.Path = OpWriteFile, s.MdadmConf // one write takes every line out
		}
		out = append(out, a)
	}
	for _, d := range s.WipeSignatures {
		run("wipefs --all "+d, "wipefs", "--all", d)
	}
	return out
}

// BcacheRelease is one bcache device released: flushed (its cache mode
// set to writethrough and its dirty data waited out), detached from its
// cache set, stopped.
type BcacheRelease struct {
	Device  string `json:"device"`  // bcache0
	Backing string `json:"backing"` // sdb1
	// SetUUID is the cache set it is attached to; "" when none.
	SetUUID string `json:"set_uuid,omitempty"`
	// Mode is its cache mode now; writeback is set to writethrough first.
	Mode string `json:"mode,omitempty"`
	// Wipe: wipefs --all on the bcache device (its file system) before it
	// goes, so that a bcache made again over the same partition shows
	// nothing of it.
	Wipe bool `json:"wipe,omitempty"`
}

// bcacheActions are the bcache teardown's steps, in the order the
// layers carry them out.
func (s StackRelease) bcacheActions() []Action {
	var out []Action
	write := func(path, value, why string) {
		out = append(out, Action{Text: "echo " + value + " > " + path + why, Op: OpWriteSys, Path: path, Value: value})
	}
	for _, b := range s.Bcache {
		dir := "/sys/class/block/" + b.Backing + "/bcache/"
		if b.Wipe {
			argv := []string{"wipefs", "--all", "/dev/" + b.Device}
			out = append(out, Action{Text: QuoteArgv(argv), Op: OpRun, Argv: argv})
		}
		if b.SetUUID != "" {
			if b.Mode != "writethrough" && b.Mode != "none" {
				write(dir+"cache_mode", "writethrough", "")
			}
			write(dir+"writeback_percent", "0", "")
			write(dir+"writeback_delay", "0", "")
			write(dir+"detach", "1", " (bcache writes the dirty blocks back to "+b.Backing+" first)")
			out = append(out, Action{Text: "wait for " + dir + "dirty_data to reach 0 and the cache to be detached"})
		}
		write(dir+"stop", "1", "")
	}
	for _, set := range s.BcacheSets {
		write("/sys/fs/bcache/"+set+"/unregister", "1", "")
	}
	return out
}

// ReleaseOptions tune Release.
type ReleaseOptions struct {
	// RemoveImage deletes the image file behind a loop device diskprep
	// attached, after detaching it.
	RemoveImage bool
	// Wipe also destroys the storage stacks released (logical volumes,
	// volume groups, physical volumes, md superblocks) and the signatures
	// left on their member disks.
	Wipe bool
	// Keep are partitions that stay: with Wipe their signatures go, not
	// the partition table of their disk, which otherwise goes with the
	// last partition released (cachebench keeps the --cache-device
	// partition it was given).
	Keep []string
	// Yes confirms the loss of what diskprep did not make (the guard asks
	// for it: guard.go); the caller has asked, or was told --yes.
	Yes bool
	// ForceUnmount unmounts filesystems on the device released that
	// diskprep did not mount; naming the mount point asks for it too.
	ForceUnmount bool
}

// ReleaseResult is what Release did.
type ReleaseResult struct {
	Target       string   `json:"target"`
	Device       string   `json:"device,omitempty"` // the whole disk or loop device
	Unmounted    []string `json:"unmounted,omitempty"`
	FstabRemoved []string `json:"fstab_removed,omitempty"`
	Detached     string   `json:"detached,omitempty"`
	Image        string   `json:"image,omitempty"`
	ImageRemoved bool     `json:"image_removed,omitempty"`
	SwappedOff   []string `json:"swapped_off,omitempty"`
	// StackSteps are the stack teardown steps done, as typed.
	StackSteps []string `json:"stack_steps,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// ReleasePlan is everything a release will do, decided before anything is
// done: `release --dry-run` prints it, ApplyRelease carries out exactly it.
type ReleasePlan struct {
	Schema string `json:"schema"`
	Target string `json:"target"`
	Device string `json:"device,omitempty"` // the whole disk, loop device or partition concerned
	// Unmount lists the mount points to unmount, deepest first.
	Unmount []string `json:"unmount,omitempty"`
	// FstabPoints and FstabUUIDs choose the fstab lines to remove: those
	// diskprep added (never another's) for these mount points or for these
	// filesystems; FstabRemove lists the lines they match now.
	FstabPoints []string `json:"fstab_points,omitempty"`
	FstabUUIDs  []string `json:"fstab_uuids,omitempty"`
	FstabRemove []string `json:"fstab_remove,omitempty"`
	// Detach is the loop device diskprep attached that is detached.
	Detach string `json:"detach,omitempty"`
	// Image is the image file concerned; RemoveImage says it is deleted.
	Image       string `json:"image,omitempty"`
	RemoveImage bool   `json:"remove_image,omitempty"`
	// Stacks is the teardown of swap areas, md arrays and volume groups
	// on what is released; nil when there are none.
	Stacks *StackRelease `json:"stacks,omitempty"`
	// RemoveMountPoints are the mount points prepare created, removed
	// once unmounted when they are empty.
	RemoveMountPoints []string `json:"remove_mount_points,omitempty"`
	// Destroys is what a wipe destroys, device by device, with who made
	// it; NeedsConfirmation says some of it is not diskprep's, which
	// ApplyRelease refuses unless Confirmed.
	Destroys          []Loss   `json:"destroys,omitempty"`
	NeedsConfirmation bool     `json:"needs_confirmation,omitempty"`
	Notes             []string `json:"notes,omitempty"`
	// Confirmed is set by the caller once the user said yes (or --yes).
	Confirmed bool `json:"-"`

	// unmountDevs are the kernel names whose mounts are concerned;
	// pointDev names the device mounted at each point; groups maps the
	// kernel names of a stack's members and volumes to the stack ("vg
	// NAME", "md NAME", "bcache set UUID"), for the guard.
	unmountDevs map[string]bool
	pointDev    map[string]string
	groups      map[string]string
	// shown is what the guard read on each device the wipe clears
	// (nothing for a blank one): ApplyRelease reads them again once
	// they are locked and refuses a device that changed meanwhile.
	shown map[string][]string
}

// blockName maps a device number to its kernel name via /sys/dev/block.
func (a *applier) blockName(major, minor uint32) (string, error) {
	link, err := a.host.Readlink(a.roots.SysPath("dev/block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return "", fmt.Errorf("device %d:%d: %w", major, minor, err)
	}
	return filepath.Base(link), nil
}

// wholeDisk returns the disk a partition belongs to, or name itself.
func (a *applier) wholeDisk(name string) string {
	if _, err := a.host.Stat(a.roots.SysPath("class/block", name, "partition")); err != nil {
		return name
	}
	real, err := a.host.EvalSymlinks(a.roots.SysPath("class/block", name))
	if err != nil {
		return name
	}
	return filepath.Base(filepath.Dir(real))
}

func (a *applier) readDevnum(path string) (string, error) {
	b, err := a.host.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// wipeOrder is partitions first, then disks, each once, in name order.
func (a *applier) wipeOrder(names []string) []string {
	seen := map[string]bool{}
	var parts, disks []string
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if a.wholeDisk(n) != n {
			parts = append(parts, "/dev/"+n)
		} else {
			disks = append(disks, "/dev/"+n)
		}
	}
	sort.Strings(parts)
	sort.Strings(disks)
	return append(parts, disks...)
}

// Loss is one device a release --wipe destroys: what is on it and whether
// diskprep made it.
type Loss struct {
	Device     string   `json:"device"`
	Model      string   `json:"model,omitempty"`
	Serial     string   `json:"serial,omitempty"`
	SizeBytes  uint64   `json:"size_bytes,omitempty"`
	Signatures []string `json:"signatures"`
	// Made says why the device is known as diskprep's own; empty for
	// anything else, which needs a confirmation.
	Made string `json:"diskprep_made,omitempty"`
}
