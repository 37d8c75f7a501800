package disk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// The guard decides what prepare may write and what release may take
// away, from facts read fresh (README, "What diskprep will and will not
// destroy"). Every refusal of a disk for what is on it or what holds it is
// here; the callers are the decision points: planning (PlanDisk, stack and
// cache members), apply's last look before it writes (under the device
// lock and an exclusive open), and release.
//
// For prepare:
//
//   - a stack (md, dm, bcache) is not a disk: refused;
//   - the system (what /, /boot, /boot/efi, /usr, /var and active swap sit
//     on, through any stack) is refused always, dry run too; the swap
//     partitions of a rerun of the same plan excepted;
//   - a read-only disk is refused;
//   - anything mounted, swapped on or held by a stack other than the
//     plan's own is refused;
//   - anything with a signature is destroyed only with --wipe (and the
//     confirmation of cmd), else refused naming what is there.
//
// For release:
//
//   - the system (what /, /boot, /boot/efi, /usr, /var and active swap sit
//     on) is refused always, dry run too;
//   - what diskprep made (a filesystem with its marker or its fstab line, a
//     stack holding one, a loop device it attached) is released and wiped
//     as asked;
//   - anything else with a signature is destroyed only when asked: shown
//     (model, serial, size, each signature), confirmed on a terminal or by
//     --yes; a filesystem diskprep did not mount is unmounted only when
//     its mount point is the one named or with ForceUnmount;
//   - what holds no signature has nothing to lose and needs no question.

// admitDisk refuses, whatever the layout asked, what prepare must never
// write: not a disk, the running system (unless all it is, is swap on the
// request's own swap partitions, judged by admitLayout once the layout is
// known to match), a read-only disk.
func admitDisk(subject string, d *hwinfo.Disk, specs []PartSpec) error {
	if len(d.StackedOn) > 0 || d.Transport == "bcache" {
		// Like md and dm devices, which the inventory does not even list:
		// diskprep partitions disks, not the kernel's stacks over them.
		what := d.Name + " is a " + d.Transport + " device"
		if len(d.StackedOn) > 0 {
			what += " stacked on " + strings.Join(d.StackedOn, ", ")
		}
		return Refuse(subject, what+", not a disk")
	}
	if d.System && !(len(d.SystemReasons) > 0 && onlyPlannedSwap(d.SystemReasons, d.Name, specs)) {
		return Refuse(subject, systemReason(d))
	}
	if d.ReadOnly {
		return Refuse(subject, fmt.Sprintf("%s is read-only", d.Name))
	}
	return nil
}

// admitLayout refuses a disk, its existing layout compared with the plan,
// that is the system (a rerun's own swap excepted) or in use. now says it
// is apply's last look, after planning admitted it.
func admitLayout(subject string, d *hwinfo.Disk, planned []PartPlan, st existingState, now bool) error {
	if d.System && !(st.kind == layoutMatches && len(d.SystemReasons) > 0 && swapsArePlanned(d.SystemReasons, planned, st)) {
		if now {
			return Refuse(subject, fmt.Sprintf("%s now holds the running system", d.Name))
		}
		return Refuse(subject, systemReason(d))
	}
	if busy := inUse(d, planned, st); len(busy) > 0 {
		if st.why != "" && planned != nil {
			// In use by what may be this plan's own file systems: say
			// why the disk does not read as prepared as asked.
			busy = append(busy, "the disk differs from the plan: "+st.why)
		}
		return Refuse(subject, busy...)
	}
	return nil
}

// AdmitMember refuses an existing partition p of disk d given to a stack (use, as
// "cache:NAME"): read-only, mounted, swapped on or held by another stack,
// or holding a signature not the stack's own unless wipe.
func AdmitMember(d *hwinfo.Disk, p *hwinfo.Partition, use string, wipe bool) error {
	if p.ReadOnly || d.ReadOnly {
		return Refuse(p.Name, fmt.Sprintf("%s is read-only", p.Name))
	}
	var busy []string
	if !ownStack(use, p.Holders) {
		for _, m := range p.Mounts {
			busy = append(busy, fmt.Sprintf("%s is mounted at %s", p.Name, m.Point))
		}
		if p.Swap {
			busy = append(busy, p.Name+" is active swap")
		}
		for _, h := range p.Holders {
			busy = append(busy, fmt.Sprintf("%s is held by %s %s", p.Name, h.Kind, h.Name))
		}
	}
	if len(busy) > 0 {
		return Refuse(p.Name, busy...)
	}
	if p.FSType != "" && !MemberOf(use, p.FSType, p.FSLabel) && !wipe {
		return Refuse(p.Name, fmt.Sprintf("%s holds %s%s (pass --wipe to destroy it)", p.Name, p.FSType, LabelSuffix(p.FSLabel)))
	}
	return nil
}

func systemReason(d *hwinfo.Disk) string {
	why := strings.Join(d.SystemReasons, ", ")
	if why == "" {
		why = "/, /boot or swap"
	}
	return fmt.Sprintf("%s holds the running system (%s)", d.Name, why)
}

// onlyPlannedSwap says whether every reason the disk is the system's is
// an active swap partition ("swap on sdb1", directly, not via a holder)
// whose number the request asks to be swap.
func onlyPlannedSwap(reasons []string, disk string, specs []PartSpec) bool {
	for _, r := range reasons {
		part, ok := strings.CutPrefix(r, "swap on ")
		if !ok || strings.Contains(part, " ") {
			return false
		}
		found := false
		for i, ps := range specs {
			found = found || ps.FS == "swap" && PartitionName(disk, i+1) == part
		}
		if !found {
			return false
		}
	}
	return true
}

// swapsArePlanned says, for a matching layout, whether each swap area of
// the reasons is a planned swap partition with a swap signature.
func swapsArePlanned(reasons []string, planned []PartPlan, st existingState) bool {
	for _, r := range reasons {
		part := strings.TrimPrefix(r, "swap on ")
		ok := false
		for i, pp := range planned {
			ok = ok || pp.FS == "swap" && st.parts[i].Name == part && st.parts[i].FSType == "swap"
		}
		if !ok {
			return false
		}
	}
	return true
}

// inUse lists why the disk cannot be written now (hwinfo's in-use check:
// mounts, swap and holders of the disk and its partitions, followed through
// stacked holders). With a matching layout, a planned partition already
// mounted where asked is the expected state, not a reason.
func inUse(d *hwinfo.Disk, planned []PartPlan, st existingState) []string {
	expected := func(u hwinfo.Use) bool {
		if st.kind != layoutMatches || u.Device == d.Name {
			return false
		}
		for i, pp := range planned {
			ex := st.parts[i]
			if ex.Name != u.Device {
				continue
			}
			switch {
			case pp.Use != "" && ownStack(pp.Use, ex.Holders):
				// Its own array or volume group, built already: what is
				// mounted on that is the stack plan's to check.
				return true
			case pp.FS == "swap" && u.Kind == hwinfo.UseSwap && u.Via == "":
				return true
			case u.Kind == hwinfo.UseMounted && u.Via == "" && pp.MountPoint != "" && pp.MountPoint == cleanPoint(u.Point):
				return true
			}
		}
		return false
	}
	var out []string
	for _, u := range d.Uses() {
		if !expected(u) {
			out = append(out, u.String())
		}
	}
	return out
}

// checkMembersFree re-checks, right before mdadm or pvcreate writes its
// superblock, that each member holds nothing but, at most, the remains of
// the same stack from an interrupted run.
func (a *applier) checkMembersFree(devs []string, use string) error {
	for _, dev := range devs {
		sigs, err := a.probeDevice(dev)
		if err != nil {
			return err
		}
		for _, s := range sigs {
			if !MemberOf(use, s.Type, s.Label) {
				return Refuse(dev, fmt.Sprintf("%s holds a %s signature%s since planning", dev, s.Type, LabelSuffix(s.Label)))
			}
		}
	}
	return nil
}

// String is the loss for a confirmation: device, identity, signatures.
func (l Loss) String() string {
	var id []string
	if l.Model != "" {
		id = append(id, l.Model)
	}
	if l.Serial != "" {
		id = append(id, "serial "+l.Serial)
	}
	if l.SizeBytes > 0 {
		id = append(id, units.FormatSize(l.SizeBytes))
	}
	s := l.Device
	if len(id) > 0 {
		s += " (" + strings.Join(id, ", ") + ")"
	}
	return s + ": " + strings.Join(l.Signatures, "; ")
}

// facts reads the machine's disks (once for a whole plan, when keepFacts:
// under TCG a read takes seconds): Deps.Refresh, else the Host's own
// (the recording fake has them), else the live kernel's when sys, proc
// and dev are the live ones. Without facts the guard cannot decide, so it
// refuses.
func (a *applier) facts(ctx context.Context) (*hwinfo.Host, error) {
	if a.factsRead != nil {
		return a.factsRead, nil
	}
	h, err := a.readFacts(ctx)
	if err == nil && a.keepFacts {
		a.factsRead = h
	}
	return h, err
}

func (a *applier) readFacts(ctx context.Context) (*hwinfo.Host, error) {
	if a.refresh != nil {
		return a.refresh(ctx)
	}
	if f, ok := a.host.(interface {
		Facts(context.Context) (*hwinfo.Host, error)
	}); ok {
		return f.Facts(ctx)
	}
	if a.roots.Sys == "" && a.roots.Proc == "" && a.roots.Dev == "" {
		// The live kernel (Root may only move diskprep's own files).
		return hwinfo.Read(ctx, hwinfo.Options{All: true, Logger: a.log})
	}
	return nil, errors.New("no facts of this machine to decide from")
}

// refuseSystemEarly refuses a target the running system stands on before
// anything else is read of it: where / is on a stack, that stack's tools
// may not even be at hand. Swap is left to refuseSystem, which knows
// diskprep's own.
func (a *applier) refuseSystemEarly(ctx context.Context, target string) error {
	abs, err := filepath.Abs(target)
	if err != nil {
		return nil // the plan reports it
	}
	if hwinfo.IsSystemMount(filepath.Clean(abs)) {
		return refuseRelease(target, "it would unmount "+filepath.Clean(abs)+", which the running system stands on")
	}
	fi, err := a.host.Stat(abs)
	if err != nil || fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0 {
		return nil
	}
	major, minor, err := a.host.DeviceNumber(abs)
	if err != nil {
		return nil
	}
	name, err := a.blockName(major, minor)
	if err != nil {
		return nil
	}
	h, err := a.facts(ctx)
	if err != nil {
		return refuseRelease(target, fmt.Sprintf("cannot tell what holds the running system: %v", err))
	}
	return refuseIfSystem(h, target, map[string]bool{name: true}, nil, false)
}

// refuseIfSystem refuses when a device in concerned is, or holds, what the
// running system stands on; with swap false, active swap is not looked at,
// and the swap areas in ourSwap never are.
func refuseIfSystem(h *hwinfo.Host, target string, concerned, ourSwap map[string]bool, swap bool) error {
	for _, d := range h.Disks {
		for _, r := range d.SystemReasons {
			// "WHAT on DEV" or "WHAT on DEV via HOLDER": the disk, the
			// partition and the holder are the system's.
			_, on, ok := strings.Cut(r, " on ")
			if !ok {
				continue
			}
			dev, via, _ := strings.Cut(on, " via ")
			if strings.HasPrefix(r, "swap on ") && (!swap || ourSwap[dev] || via != "" && ourSwap[via]) {
				continue
			}
			for _, n := range []string{d.Name, dev, via} {
				if n != "" && concerned[n] {
					return refuseRelease(target, fmt.Sprintf("%s holds the running system (%s)", "/dev/"+n, r))
				}
			}
		}
	}
	return nil
}

// refuseSystem refuses a release that would unmount, swap off, stop or
// wipe anything the running system sits on. A swap area diskprep made
// (its fstab line is among those removed) is released like any volume.
func (a *applier) refuseSystem(ctx context.Context, p *ReleasePlan) error {
	for _, pt := range p.Unmount {
		if hwinfo.IsSystemMount(pt) {
			return refuseRelease(p.Target, "it would unmount "+pt+", which the running system stands on")
		}
	}
	h, err := a.facts(ctx)
	if err != nil {
		return refuseRelease(p.Target, fmt.Sprintf("cannot tell what holds the running system: %v", err))
	}
	ourSwap := map[string]bool{}
	if p.Stacks != nil {
		for _, sw := range p.Stacks.Swapoff {
			if p.removesFstabFor(sw, a) {
				ourSwap[filepath.Base(sw)] = true
			}
		}
	}
	return refuseIfSystem(h, p.Target, p.devices(), ourSwap, true)
}

func refuseRelease(subject string, reasons ...string) error {
	return &refusal{verb: "release", subject: subject, reasons: reasons}
}

// devices are the kernel names of everything the plan takes away.
func (p *ReleasePlan) devices() map[string]bool {
	out := map[string]bool{}
	add := func(paths ...string) {
		for _, s := range paths {
			if s != "" {
				out[filepath.Base(s)] = true
			}
		}
	}
	add(p.Device, p.Detach)
	for n := range p.unmountDevs {
		out[n] = true
	}
	if s := p.Stacks; s != nil {
		add(s.Swapoff...)
		add(s.MDStop...)
		add(s.MDZero...)
		add(s.PVRemove...)
		add(s.WipeSignatures...)
		for _, b := range s.Bcache {
			add(b.Device, b.Backing)
		}
	}
	return out
}

// removesFstabFor says whether one of diskprep's fstab lines removed by
// the plan is for the swap area or filesystem on dev.
func (p *ReleasePlan) removesFstabFor(dev string, a *applier) bool {
	sigs, err := a.probeDevice(dev)
	if err != nil {
		return false
	}
	ours := p.fstabUUIDsRemoved()
	for _, s := range sigs {
		if s.UUID != "" && ours[strings.ToLower(s.UUID)] {
			return true
		}
	}
	return false
}

// fstabUUIDsRemoved are the filesystem UUIDs of the diskprep fstab lines
// the plan removes: those filesystems are diskprep's.
func (p *ReleasePlan) fstabUUIDsRemoved() map[string]bool {
	out := map[string]bool{}
	for _, l := range p.FstabRemove {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if k, v, ok := strings.Cut(f[0], "="); ok && strings.EqualFold(k, "UUID") {
			out[strings.ToLower(strings.Trim(v, `"'`))] = true
		}
	}
	return out
}

// marker reads diskprep's marker at a mount point through the Host; nil
// when there is none or it is not one.
func (a *applier) marker(point string) *Marker {
	path := filepath.Join(point, MarkerFile)
	// diskprep writes it as root; one a user put in a filesystem of
	// theirs (a stick they mounted) vouches for nothing.
	fi, err := a.host.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if uid, perm, ok := owner(fi); ok && (uid != 0 || perm&0o022 != 0) {
		return nil
	}
	b, err := a.host.ReadFile(path)
	if err != nil || len(b) > 1<<20 {
		return nil
	}
	var m Marker
	if json.Unmarshal(b, &m) != nil || m.Schema != MarkerSchema {
		return nil
	}
	return &m
}

// guardRelease applies the guard's rules to a plan made for target: it
// refuses the system and a foreign mount not asked for, and lists what a
// wipe destroys with who made it. named is the mount point given as the
// target ("" for a device or image).
func (a *applier) guardRelease(ctx context.Context, p *ReleasePlan, opt ReleaseOptions, named string) error {
	if err := a.refuseSystem(ctx, p); err != nil {
		return err
	}
	ourUUIDs := p.fstabUUIDsRemoved()
	ourPoints := map[string]bool{}
	var foreign []string
	for _, pt := range p.Unmount {
		m := a.marker(pt)
		if m != nil {
			ourPoints[pt] = true
			if m.UUID != "" {
				ourUUIDs[strings.ToLower(m.UUID)] = true
			}
			if m.MadeMountPoint {
				p.RemoveMountPoints = append(p.RemoveMountPoints, pt)
			}
			continue
		}
		if pt == named || contains(p.FstabPoints, pt) && p.removesFstabLineFor(pt) {
			continue
		}
		if p.Detach != "" && a.wholeDisk(p.pointDev[pt]) == filepath.Base(p.Detach) {
			// On a loop device diskprep attached: its own, marker
			// written or not yet (a prepare killed just after mount).
			continue
		}
		foreign = append(foreign, pt)
	}
	if len(foreign) > 0 && !opt.ForceUnmount {
		return refuseRelease(p.Target, fmt.Sprintf("%s mounted by someone else (no diskprep marker or fstab line): name the mount point (diskprep release %s) or pass --force-unmount",
			strings.Join(foreign, ", "), foreign[0]))
	}
	if p.Stacks == nil || len(p.Stacks.WipeSignatures) == 0 {
		p.Confirmed = opt.Yes
		return nil
	}
	h, err := a.facts(ctx)
	if err != nil {
		return refuseRelease(p.Target, fmt.Sprintf("cannot read what is on the disks: %v", err))
	}
	// A stack is diskprep's when one of its volumes is mounted with the
	// marker; then all its members are.
	ownedGroups := map[string]bool{}
	for pt := range ourPoints {
		if g := p.groups[p.pointDev[pt]]; g != "" {
			ownedGroups[g] = true
		}
	}
	loopOurs := map[string]bool{}
	if p.Detach != "" {
		loopOurs[filepath.Base(p.Detach)] = true
	}
	madeByName := map[string]string{}
	p.shown = map[string][]string{}
	for _, dev := range p.Stacks.WipeSignatures {
		name := filepath.Base(dev)
		sigs, err := a.probeDevice(dev)
		if err != nil {
			return refuseRelease(p.Target, fmt.Sprintf("cannot read what is on %s: %v", dev, err))
		}
		p.shown[dev] = describeSignatures(sigs)
		if len(sigs) == 0 {
			madeByName[name] = "blank"
			continue
		}
		l := Loss{Device: dev}
		disk, part := h.Device(name)
		if disk != nil {
			l.Model, l.Serial, l.SizeBytes = disk.Model, disk.Serial, disk.SizeBytes
			if part != nil {
				l.SizeBytes = part.SizeBytes
			}
		}
		tableOnly := true
		fsOurs := true
		l.Signatures = p.shown[dev]
		for _, s := range sigs {
			if s.Usage != "partition_table" {
				tableOnly = false
			}
			if s.Usage == "partition_table" || s.UUID != "" && ourUUIDs[strings.ToLower(s.UUID)] {
				continue
			}
			fsOurs = false
		}
		whole := a.wholeDisk(name)
		switch {
		case loopOurs[name] || loopOurs[whole]:
			l.Made = "on a loop device diskprep attached"
		case ownedGroups[p.groups[name]] && p.groups[name] != "":
			l.Made = "a member of " + p.groups[name] + ", which holds a filesystem diskprep made"
		case tableOnly && disk != nil && part == nil && partsOurs(disk, madeByName):
			l.Made = "its partitions are diskprep's"
		case !tableOnly && fsOurs:
			l.Made = "its filesystem carries diskprep's marker or fstab line"
		}
		if l.Made != "" {
			madeByName[name] = l.Made
		}
		p.Destroys = append(p.Destroys, l)
		if l.Made == "" {
			p.NeedsConfirmation = true
		}
	}
	p.Confirmed = opt.Yes
	return nil
}

// describeSignatures are sigs for a person, each once (a GPT's backup
// is the same table).
func describeSignatures(sigs []signature) []string {
	var out []string
	for _, s := range sigs {
		if d := describeSignature(s); !contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// recheckShown refuses a release whose wipe would clear a device that
// no longer holds what the guard read there (p.shown): written while a
// question waited, or since the plan was made. The devices are locked
// by then, so what it reads is what the wipe clears.
func (a *applier) recheckShown(p *ReleasePlan) error {
	for _, dev := range p.Stacks.WipeSignatures {
		was, looked := p.shown[dev]
		if !looked {
			continue
		}
		sigs, err := a.probeDevice(dev)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone: the wipe has nothing to clear there
		}
		if err != nil {
			return refuseRelease(p.Target, fmt.Sprintf("cannot read what is on %s: %v", dev, err))
		}
		if now := describeSignatures(sigs); !slices.Equal(now, was) {
			list := func(s []string) string {
				if len(s) == 0 {
					return "nothing"
				}
				return strings.Join(s, "; ")
			}
			return refuseRelease(p.Target, fmt.Sprintf("what is on %s changed since the release was planned (then: %s; now: %s): nothing was done; run the release again",
				dev, list(was), list(now)))
		}
	}
	return nil
}

// removesFstabLineFor says whether a diskprep fstab line for point is
// among those removed.
func (p *ReleasePlan) removesFstabLineFor(point string) bool {
	for _, l := range p.FstabRemove {
		if f := strings.Fields(l); len(f) > 1 && filepath.Clean(f[1]) == point {
			return true
		}
	}
	return false
}

// partsOurs says whether disk has partitions and every one is diskprep's
// or blank, as decided already (partitions are wiped before their disk).
func partsOurs(d *hwinfo.Disk, made map[string]string) bool {
	if len(d.Partitions) == 0 {
		return false
	}
	any := false
	for _, pt := range d.Partitions {
		m := made[pt.Name]
		if m == "" {
			return false
		}
		any = any || m != "blank"
	}
	return any
}

func describeSignature(s signature) string {
	out := s.Type + LabelSuffix(s.Label)
	if s.UUID != "" {
		out += " UUID " + s.UUID
	}
	return out
}

// confirmationNeeded is the refusal of a plan whose foreign losses were
// not confirmed.
func (p *ReleasePlan) confirmationNeeded() error {
	return ErrReleaseNotConfirmed(p, "confirm on a terminal or pass --yes")
}

// ErrReleaseNotConfirmed is the refusal (ErrRefused) of a release that
// would destroy what diskprep did not make, unconfirmed: it names each
// such device and what is on it, then how to go on.
func ErrReleaseNotConfirmed(p *ReleasePlan, how string) error {
	var what []string
	for _, l := range p.Destroys {
		if l.Made == "" {
			what = append(what, l.String())
		}
	}
	sort.Strings(what)
	return RefuseWipe(p.Target, fmt.Sprintf("not made by diskprep: %s (%s)", strings.Join(what, "; "), how))
}

// ReleaseQuestion is the question put before a release that destroys what
// diskprep did not make: each such device and what goes with it.
func ReleaseQuestion(p *ReleasePlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "release %s --wipe DESTROYS what diskprep did not make:\n", p.Target)
	for _, l := range p.Destroys {
		if l.Made == "" {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	fmt.Fprintf(&b, "Continue? [y/N] ")
	return b.String()
}

// MemberOf says whether a signature found on a partition is that of the
// stack use asks for (an earlier run of the same plan): an md member of
// the array NAME (its name stored as "NAME" or "HOST:NAME") or an LVM
// physical volume (which group it is in is the stack plan's to check).
func MemberOf(use, fsType, label string) bool {
	kind, name, _ := strings.Cut(use, ":")
	switch kind {
	case "raid":
		return fsType == "linux_raid_member" && (label == name || strings.HasSuffix(label, ":"+name))
	case "lvm":
		// A LUKS header: the group's members may be encrypted, which
		// the stack plan checks (it refuses one for a plain group).
		return fsType == "LVM2_member" || fsType == "crypto_LUKS"
	case "origin", "cache":
		// Which of the two the cache kind makes is its plan's to check.
		return fsType == "LVM2_member" || fsType == "bcache"
	case "crypt":
		// Whether its key file opens it is the stack plan's to check.
		return fsType == "crypto_LUKS"
	}
	return false
}

// ownStack says whether every holder on a partition is the stack use
// names: the md array NAME, or logical volumes of VG.
func ownStack(use string, hs []hwinfo.Holder) bool {
	kind, name, _ := strings.Cut(use, ":")
	if len(hs) == 0 {
		return false
	}
	for _, h := range hs {
		switch {
		case kind == "raid" && h.Kind == "md" && MDNameIs(h.DMName, name):
		case kind == "lvm" && h.Kind == "lvm" && strings.HasPrefix(h.DMName, DMEscape(name)+"-"):
		case kind == "lvm" && h.Kind == "crypt" && (len(h.Holders) == 0 || ownStack(use, h.Holders)):
			// An encrypted member: its mapping holds the group (or
			// nothing yet, in a run stopped before pvcreate).
		case (kind == "origin" || kind == "cache") && (h.Kind == "lvm" && strings.HasPrefix(h.DMName, DMEscape(name)+"-") || h.Kind == "bcache"):
		case kind == "crypt" && h.Kind == "crypt":
		default:
			return false
		}
	}
	return true
}

// MDNameIs says whether an md array's name got (as sysfs or mdadm give
// it: "NAME", "HOST:NAME", "/dev/md/NAME") is name.
func MDNameIs(got, name string) bool {
	got = strings.TrimPrefix(got, "/dev/md/")
	return got == name || strings.HasSuffix(got, ":"+name)
}

// DMEscape is LVM's device-mapper spelling of a name: "-" doubled.
func DMEscape(s string) string { return strings.ReplaceAll(s, "-", "--") }

// recheckFacts re-reads the host right before writing: same disk identity,
// nothing mounted, swapped on or stacked on it since planning.
func (a *applier) recheckFacts(ctx context.Context, p *Plan) error {
	if a.refresh == nil {
		return nil
	}
	h, err := a.refresh(ctx)
	if err != nil {
		return fmt.Errorf("re-read facts for %s: %w", p.Device, err)
	}
	d, part := h.Device(p.Device)
	if d == nil || part != nil {
		return Refuse(p.Device, fmt.Sprintf("%s is no longer listed as a disk", p.Device))
	}
	fp := Fingerprint{Serial: d.Serial, WWN: d.WWN, SizeBytes: d.SizeBytes, TableType: d.PartitionTable, TableID: d.PartitionTableID}
	if diff := fp.diff(p.Fingerprint); diff != "" {
		return Refuse(p.Device, fmt.Sprintf("%s changed since planning: %s", p.Device, diff))
	}
	return admitLayout(p.Device, d, p.Partitions, compareExisting(d, p.Partitions), true)
}

func (f Fingerprint) diff(want Fingerprint) string {
	var d []string
	cmp := func(what, got, exp string) {
		if !strings.EqualFold(got, exp) {
			d = append(d, fmt.Sprintf("%s %q, expected %q", what, got, exp))
		}
	}
	cmp("serial", f.Serial, want.Serial)
	cmp("wwn", f.WWN, want.WWN)
	if f.SizeBytes != want.SizeBytes {
		d = append(d, fmt.Sprintf("size %d bytes, expected %d", f.SizeBytes, want.SizeBytes))
	}
	cmp("partition table", f.TableType, want.TableType)
	cmp("partition table id", f.TableID, want.TableID)
	return strings.Join(d, ", ")
}

type layoutKind int

const (
	layoutEmpty   layoutKind = iota // no table, no signature known
	layoutMatches                   // GPT with exactly the planned partitions; filesystems as asked or none yet
	layoutDiffers                   // anything else
)

type existingState struct {
	kind  layoutKind
	parts []*hwinfo.Partition // layoutMatches: the existing partition for each planned one
	why   string              // layoutDiffers: the first difference found
}

// compareExisting tells an empty disk, one already prepared as planned (or
// half way: table written, some filesystem not made yet) and anything else.
func compareExisting(d *hwinfo.Disk, planned []PartPlan) existingState {
	if d.PartitionTable == "" && d.FSType == "" && len(d.Partitions) == 0 {
		return existingState{kind: layoutEmpty}
	}
	differs := func(format string, args ...any) existingState {
		return existingState{kind: layoutDiffers, why: fmt.Sprintf(format, args...)}
	}
	switch {
	case d.PartitionTable != "gpt":
		return differs("its partition table is %s, not gpt", orNone(d.PartitionTable))
	case d.FSType != "":
		return differs("it holds %s on the whole disk", d.FSType)
	case len(d.Partitions) != len(planned):
		return differs("it has %d partitions, the plan %d", len(d.Partitions), len(planned))
	}
	st := existingState{kind: layoutMatches, parts: make([]*hwinfo.Partition, len(planned))}
	for i, pp := range planned {
		var ex *hwinfo.Partition
		for j := range d.Partitions {
			if d.Partitions[j].Number == pp.Number {
				ex = &d.Partitions[j]
			}
		}
		switch {
		case ex == nil:
			return differs("it has no partition %d", pp.Number)
		case ex.StartBytes != pp.StartBytes || ex.SizeBytes != pp.SizeBytes:
			return differs("%s is %d bytes at %d, the plan's %d at %d", ex.Name, ex.SizeBytes, ex.StartBytes, pp.SizeBytes, pp.StartBytes)
		case ex.PartLabel != "" && ex.PartLabel != pp.Label || ex.PartLabel == "" && pp.Label != "" && ex.PartUUID != "":
			return differs("%s is named %q, the plan's %q", ex.Name, ex.PartLabel, pp.Label)
		case ex.PartType != "" && !strings.EqualFold(ex.PartType, pp.TypeGUID):
			return differs("%s has type %s, the plan's %s", ex.Name, ex.PartType, pp.TypeGUID)
		case pp.Use == "" && ex.FSType != "" && (ex.FSType != pp.FS || ex.FSLabel != pp.FSLabel):
			return differs("%s holds %s%s, the plan's %s%s", ex.Name, ex.FSType, LabelSuffix(ex.FSLabel), pp.FS, LabelSuffix(pp.FSLabel))
		case pp.Use != "" && ex.FSType != "" && !MemberOf(pp.Use, ex.FSType, ex.FSLabel):
			return differs("%s holds %s%s, not a member of %s", ex.Name, ex.FSType, LabelSuffix(ex.FSLabel), pp.Use)
		}
		st.parts[i] = ex
	}
	return st
}

// describeContents lists what is on a disk, for refusals and confirmations.
func describeContents(d *hwinfo.Disk) []string {
	var out []string
	if d.PartitionTable != "" {
		s := d.PartitionTable + " partition table"
		if d.PartitionTableID != "" {
			s += " " + d.PartitionTableID
		}
		out = append(out, s)
	}
	if d.FSType != "" {
		out = append(out, fmt.Sprintf("%s signature on the whole disk%s", d.FSType, LabelSuffix(d.FSLabel)))
	}
	for _, p := range d.Partitions {
		s := fmt.Sprintf("%s (%s", p.Name, units.FormatSize(p.SizeBytes))
		if p.FSType != "" {
			s += ", " + p.FSType + LabelSuffix(p.FSLabel)
		}
		out = append(out, s+")")
	}
	return out
}

// LabelSuffix is a label as a refusal names it (' label "L"'), or "".
func LabelSuffix(l string) string {
	if l == "" {
		return ""
	}
	return fmt.Sprintf(" label %q", l)
}

func cleanPoint(p string) string { return filepath.Clean(p) }

// GuardDeviceWrite is the guard's look at a block device that a benchmark
// is to write raw (bench --allow-device-write, --precondition), which no
// plan describes: a device of the running system is refused; otherwise it
// returns what is on the device now, read from the device itself (its
// table, its signatures and each partition's), which the write destroys.
// A Loss with no Signatures is a blank device: nothing can be lost. The
// caller shows a non-blank one and asks (ConfirmDeviceWrite).
func GuardDeviceWrite(ctx context.Context, device string, deps Deps) (*Loss, error) {
	a := newApplier(deps)
	real, err := a.host.EvalSymlinks(device)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", device, err)
	}
	name := filepath.Base(real)
	h, err := a.facts(ctx)
	if err != nil {
		return nil, refuseWrite(device, fmt.Sprintf("cannot tell what holds the running system: %v", err))
	}
	concerned := map[string]bool{name: true}
	whole := a.wholeDisk(name)
	concerned[whole] = true
	parts, _ := kernelPartitions(a.host, a.roots, name)
	for _, kp := range parts {
		concerned[kp.name] = true
	}
	if err := refuseIfSystem(h, device, concerned, nil, true); err != nil {
		return nil, refuseWrite(device, Reasons(err)...)
	}
	l := &Loss{Device: device}
	if d, part := h.Device(name); d != nil {
		l.Model, l.Serial, l.SizeBytes = d.Model, d.Serial, d.SizeBytes
		if part != nil {
			l.SizeBytes = part.SizeBytes
		}
	}
	sigs, err := a.probeDevice(real)
	if err != nil {
		return nil, refuseWrite(device, fmt.Sprintf("cannot read what is on it: %v", err))
	}
	for _, s := range sigs {
		if d := describeSignature(s); !contains(l.Signatures, d) { // a GPT's backup is the same table
			l.Signatures = append(l.Signatures, d)
		}
	}
	for _, kp := range parts {
		sigs, err := a.probeDevice(a.roots.DevPath(kp.name))
		if err != nil {
			continue // the table above already says the disk is not blank
		}
		for _, s := range sigs {
			l.Signatures = append(l.Signatures, kp.name+": "+describeSignature(s))
		}
	}
	return l, nil
}

// ConfirmDeviceWrite is the refusal of a raw write to a device holding
// what l lists, unconfirmed: destroys names the writer ("the write
// workloads destroy"), how says how to confirm.
func ConfirmDeviceWrite(l *Loss, destroys, how string) error {
	return refuseWrite(l.Device, fmt.Sprintf("%s what is on %s; %s", destroys, l, how))
}

// DeviceWritePrompt is the question before a raw write to the device l
// describes: which device, and what is lost.
func DeviceWritePrompt(l *Loss, what string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "About to write to %s (%s)\n", l.Device, what)
	fmt.Fprintf(&b, "  model:  %s\n  serial: %s\n", orNone(l.Model), orNone(l.Serial))
	if l.SizeBytes > 0 {
		fmt.Fprintf(&b, "  size:   %s (%d bytes)\n", units.FormatSize(l.SizeBytes), l.SizeBytes)
	}
	fmt.Fprintf(&b, "  this DESTROYS:\n")
	for _, s := range l.Signatures {
		fmt.Fprintf(&b, "    - %s\n", s)
	}
	fmt.Fprintf(&b, "Continue? [y/N] ")
	return b.String()
}

func refuseWrite(subject string, reasons ...string) error {
	return &refusal{verb: "write to", subject: subject, reasons: reasons}
}
