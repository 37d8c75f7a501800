package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
	"golang.org/x/sys/unix"
)

// ReleasePlanSchema names the JSON shape of a ReleasePlan.
const ReleasePlanSchema = "diskprep/release-plan/v1"

// Release undoes the tail end of prepare for target (a mount point, a disk
// or partition device, or an image file): it unmounts, removes diskprep's
// own fstab lines for what it unmounted, and detaches a loop device that
// diskprep attached (leaving the image file unless RemoveImage). It never
// touches the data on the disk. Bad targets wrap ErrUsage. It is
// PlanRelease followed by ApplyRelease.
func Release(ctx context.Context, target string, opt ReleaseOptions, deps Deps) (*ReleaseResult, error) {
	plan, err := PlanRelease(ctx, target, opt, deps)
	if err != nil {
		return nil, err
	}
	return ApplyRelease(ctx, plan, deps)
}

// PlanRelease decides what releasing target will do. It only reads: the
// mount table, sysfs, the fstab, diskprep's loop records, the markers and
// the filesystems' signatures. The guard (guard.go) refuses here what it
// refuses at all, so a dry run is refused too.
func PlanRelease(ctx context.Context, target string, opt ReleaseOptions, deps Deps) (*ReleasePlan, error) {
	a := newApplier(deps)
	a.keepFacts = true
	// Through a link of theirs (in /tmp, say), another user would choose
	// what root unmounts, detaches, wipes or removes: diskprep's own image
	// elsewhere, a disk. Refused before anything is read of what it names;
	// root's links (/dev/disk/by-id) are followed.
	if target != "" {
		if _, err := FollowUserPath(a.host, "release", target, target); IsRefusal(err) {
			return nil, err
		}
	}
	if err := a.refuseSystemEarly(ctx, target); err != nil {
		return nil, err
	}
	plan, named, err := a.planRelease(ctx, target, opt, deps.Layers)
	if err != nil {
		return nil, err
	}
	if err := a.guardRelease(ctx, plan, opt, named); err != nil {
		return nil, err
	}
	return plan, nil
}

func (a *applier) planRelease(ctx context.Context, target string, opt ReleaseOptions, layers Layers) (*ReleasePlan, string, error) {
	plan := &ReleasePlan{Schema: ReleasePlanSchema, Target: target, groups: map[string]string{}, unmountDevs: map[string]bool{}}
	named := ""
	if target == "" {
		return nil, "", Usagef("nothing to release: give a mount point, device or image")
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return nil, "", Usagef("release %s: %v", target, err)
	}
	mounts, err := a.mounts()
	if err != nil {
		return nil, "", fmt.Errorf("read mounts: %w", err)
	}

	// Work out the devices concerned, as kernel names.
	var disk string             // whole disk (or loop) name
	var parentLoop string       // the disk of a single partition released
	devs := map[string]string{} // "major:minor" -> name, of the disk and its partitions
	var points []string         // mount points to unmount
	fstabPoints := map[string]bool{}
	fi, err := a.host.Stat(abs)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		// A mount point that is gone may still have a stale fstab line,
		// and the file system it names may still be on a device.
		point := filepath.Clean(abs)
		fstabPoints[point] = true
		if err := a.followFstab(plan, point, opt, devs, &parentLoop); err != nil {
			return nil, "", err
		}
	case err != nil:
		return nil, "", fmt.Errorf("release %s: %w", target, err)
	case fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0:
		major, minor, err := a.host.DeviceNumber(abs)
		if err != nil {
			return nil, "", fmt.Errorf("release %s: %w", target, err)
		}
		name, err := a.blockName(major, minor)
		if err != nil {
			return nil, "", err
		}
		disk = a.wholeDisk(name)
		if disk != name {
			// A single partition: only it.
			devs[fmt.Sprintf("%d:%d", major, minor)] = name
			parentLoop = disk
			disk = ""
			plan.Device = "/dev/" + name
		}
	case fi.Mode().IsRegular():
		real, _ := a.host.EvalSymlinks(abs)
		dev := a.loopFor(real)
		if dev == "" {
			plan.Image = real
			if opt.RemoveImage {
				// Asked by name and flag, not in use by a loop device: it
				// goes when diskprep made it, and only then.
				if err := a.madeImage(real); err != nil {
					return nil, "", err
				}
				plan.RemoveImage = true
			} else {
				plan.Notes = append(plan.Notes, fmt.Sprintf("%s is not attached to a loop device", real))
			}
			return plan, named, nil
		}
		disk = filepath.Base(dev)
	case fi.IsDir():
		point := filepath.Clean(abs)
		named = point
		fstabPoints[point] = true
		for _, m := range mounts {
			if m.Point == point {
				points = append(points, point)
				if name, err := a.blockName(parseDevnum(m.Devnum)); err == nil {
					devs[m.Devnum] = name
					if d := a.wholeDisk(name); d != name {
						parentLoop = d
					}
				}
			}
		}
		if len(points) == 0 {
			plan.Notes = append(plan.Notes, point+" is not mounted")
			if err := a.followFstab(plan, point, opt, devs, &parentLoop); err != nil {
				return nil, "", err
			}
		}
	default:
		return nil, "", Usagef("release %s: not a mount point, block device or image file", target)
	}
	if disk != "" {
		plan.Device = "/dev/" + disk
		for n, name := range a.diskDevnums(disk) {
			devs[n] = name
		}
	}
	var stacks StackRelease
	plan.Stacks = &stacks
	if err := a.planStackRelease(ctx, layers, plan, devs, opt); err != nil {
		return nil, "", err
	}
	if stacks.empty() {
		plan.Stacks = nil
	}
	for _, m := range mounts {
		if _, ok := devs[m.Devnum]; ok && !contains(points, m.Point) {
			points = append(points, m.Point)
		}
	}
	for _, name := range devs {
		plan.unmountDevs[name] = true
	}
	plan.pointDev = map[string]string{}
	for _, m := range mounts {
		if name, ok := devs[m.Devnum]; ok && contains(points, m.Point) {
			plan.pointDev[m.Point] = name
		}
	}

	// Filesystem UUIDs name the fstab lines for these devices.
	uuids := map[string]bool{}
	names := make([]string, 0, len(devs))
	for _, name := range devs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if sigs, err := a.probeDevice(a.roots.DevPath(name)); err == nil {
			for _, s := range sigs {
				if s.UUID != "" && (s.Usage == "filesystem" || s.Type == "swap") {
					uuids[strings.ToLower(s.UUID)] = true
				}
			}
		}
	}

	// Deepest first, so nested mounts come off before their parents.
	sort.SliceStable(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	plan.Unmount = points
	for _, pt := range points {
		fstabPoints[pt] = true
	}
	plan.FstabPoints = sortedKeys(fstabPoints)
	plan.FstabUUIDs = sortedKeys(uuids)
	if b, err := a.host.ReadFile(a.fstabPath); err == nil {
		found, err := fstab.Managed(b, plan.fstabMatch)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", a.fstabPath, err)
		}
		for _, e := range found {
			plan.FstabRemove = append(plan.FstabRemove, fstab.EntryLine(e))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("read %s: %w", a.fstabPath, err)
	}

	// Releasing the last mounted partition of a loop device diskprep
	// attached releases the device too: nothing else would detach it.
	if disk == "" && strings.HasPrefix(parentLoop, "loop") && !a.anyMounted(mounts, parentLoop, points) {
		if _, _, err := a.loopOwned("/dev/" + parentLoop); err == nil {
			disk = parentLoop
		}
	}
	if disk != "" && strings.HasPrefix(disk, "loop") {
		dev := "/dev/" + disk
		plan.Image = a.loopBackingFile(disk)
		if _, _, err := a.loopOwned(dev); err != nil {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s was not attached by diskprep: left attached", dev))
			return plan, named, nil
		}
		plan.Detach = dev
		if opt.RemoveImage {
			if err := a.madeImage(plan.Image); err != nil {
				return nil, "", err
			}
			plan.RemoveImage = true
		}
	}
	return plan, named, nil
}

// followFstab adds to devs the device holding the file system that
// diskprep's fstab line for point names, when nothing is mounted there:
// releasing the point releases that device as it would were it mounted,
// so --wipe does not stop at the fstab line and leave the stack. With
// --wipe, a line whose file system no device holds (a closed LUKS volume,
// a disk taken out) is refused rather than reported as done.
func (a *applier) followFstab(plan *ReleasePlan, point string, opt ReleaseOptions, devs map[string]string, parentLoop *string) error {
	b, err := a.host.ReadFile(a.fstabPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", a.fstabPath, err)
	}
	found, err := fstab.Managed(b, func(e fstab.Entry) bool { return filepath.Clean(e.File) == point })
	if err != nil {
		return fmt.Errorf("%s: %w", a.fstabPath, err)
	}
	for _, e := range found {
		k, v, ok := strings.Cut(e.Spec, "=")
		if !ok || !strings.EqualFold(k, "UUID") {
			continue
		}
		uuid := strings.ToLower(strings.Trim(v, `"'`))
		names := a.holdingFS(uuid)
		switch {
		case len(names) == 0 && opt.Wipe:
			return RefuseWipe(point, fmt.Sprintf("%s is not mounted and no device here holds the file system its fstab line names (UUID=%s): open or attach it and run again, release its disk by name, or drop --wipe to remove only the line", point, uuid))
		case len(names) == 0:
			plan.Notes = append(plan.Notes, fmt.Sprintf("no device holds UUID=%s: only its fstab line is removed", uuid))
			continue
		case len(names) > 1:
			return refuseRelease(point, fmt.Sprintf("the file system its fstab line names (UUID=%s) is on %s: release the one meant by name", uuid, strings.Join(devPaths(names), " and ")))
		}
		name := names[0]
		n, err := a.readDevnum(a.roots.SysPath("class/block", name, "dev"))
		if err != nil {
			return fmt.Errorf("release %s: %w", point, err)
		}
		devs[n] = name
		if d := a.wholeDisk(name); d != name {
			*parentLoop = d
		}
		plan.Notes = append(plan.Notes, fmt.Sprintf("its fstab line names /dev/%s (UUID=%s), released with it", name, uuid))
	}
	return nil
}

// holdingFS lists the block devices, by kernel name, whose file system
// (or swap) has uuid and which nothing is stacked on: an LV's hidden
// cache origin shows the same file system as the LV above it.
func (a *applier) holdingFS(uuid string) []string {
	des, err := a.host.ReadDir(a.roots.SysPath("class/block"))
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range des {
		name := de.Name()
		if holders, _ := a.host.ReadDir(a.roots.SysPath("class/block", name, "holders")); len(holders) > 0 {
			continue
		}
		// No medium (an empty drive, a loop device with no file): not
		// opened, which could close a drive's tray.
		if size, err := a.readDevnum(a.roots.SysPath("class/block", name, "size")); err != nil || size == "0" {
			continue
		}
		sigs, err := a.probeDevice(a.roots.DevPath(name))
		if err != nil {
			continue
		}
		for _, s := range sigs {
			if strings.EqualFold(s.UUID, uuid) && (s.Usage == "filesystem" || s.Type == "swap") {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func devPaths(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "/dev/" + n
	}
	return out
}

// lockWiped takes the device lock of every whole disk the plan wipes
// something on, in name order, and gives back the function that drops
// them all.
func (a *applier) lockWiped(p *ReleasePlan) (func(), error) {
	var unlocks []func()
	unlock := func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
	if p.Stacks == nil {
		return unlock, nil
	}
	disks := map[string]bool{}
	for _, d := range append(append(append([]string(nil), p.Stacks.WipeSignatures...), p.Stacks.MDZero...), p.Stacks.PVRemove...) {
		disks[a.wholeDisk(filepath.Base(d))] = true
	}
	for _, d := range sortedKeys(disks) {
		devnum, err := a.readDevnum(a.roots.SysPath("class/block", d, "dev"))
		if err != nil {
			continue // gone already: nothing to write there
		}
		u, err := a.lockDevice("/dev/"+d, devnum)
		if err != nil {
			unlock()
			return nil, err
		}
		unlocks = append(unlocks, u)
	}
	return unlock, nil
}

// madeImage refuses the removal of an image file diskprep did not create.
func (a *applier) madeImage(path string) error {
	if path != "" && a.host.ImageMade(path) {
		return nil
	}
	return refuseRelease(path, fmt.Sprintf("%s was not created by diskprep: --remove-image deletes only an image prepare made (remove it yourself if it is yours)", path))
}

// fstabMatch is true for the fstab entries the plan removes.
func (p *ReleasePlan) fstabMatch(e fstab.Entry) bool {
	if contains(p.FstabPoints, filepath.Clean(e.File)) {
		return true
	}
	if k, v, ok := strings.Cut(e.Spec, "="); ok && strings.EqualFold(k, "UUID") {
		return contains(p.FstabUUIDs, strings.ToLower(strings.Trim(v, `"'`)))
	}
	return false
}

// ApplyRelease carries out plan and nothing else, stopping at the first
// step that fails (the result says what was done until then).
func ApplyRelease(ctx context.Context, plan *ReleasePlan, deps Deps) (_ *ReleaseResult, err error) {
	if plan == nil || plan.Schema != ReleasePlanSchema {
		return nil, fmt.Errorf("release: not a %s plan", ReleasePlanSchema)
	}
	a := newApplier(deps)
	ended := RecordPlan(a.host, plan)
	defer func() { ended(err) }()
	if plan.NeedsConfirmation && !plan.Confirmed {
		return nil, plan.confirmationNeeded()
	}
	// The disks a wipe writes are locked, as prepare locks its disk, from
	// the guard's last look to the end: a prepare of one of them started
	// meanwhile is refused, not run into the middle of the teardown.
	unlock, err := a.lockWiped(plan)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The system is checked again against facts read now: a plan may
	// have waited at a question, or come from elsewhere.
	if err := a.refuseSystem(ctx, plan); err != nil {
		return nil, err
	}
	if plan.Stacks != nil {
		if err := a.recheckShown(plan); err != nil {
			return nil, err
		}
	}
	res := &ReleaseResult{Target: plan.Target, Device: plan.Device, Image: plan.Image, Notes: append([]string(nil), plan.Notes...)}
	if plan.Detach == "" && plan.RemoveImage {
		// An image file no loop device uses.
		if err := a.host.Remove(plan.Image); err != nil {
			return res, fmt.Errorf("remove image %s: %w", plan.Image, err)
		}
		res.ImageRemoved = true
		return res, nil
	}
	if plan.Stacks != nil {
		for _, sw := range plan.Stacks.Swapoff {
			if err := a.do(ctx, "swapoff", []string{"swapoff", sw}); err != nil {
				return res, fmt.Errorf("swapoff %s: %w", sw, err)
			}
			res.SwappedOff = append(res.SwappedOff, sw)
		}
	}
	for _, pt := range plan.Unmount {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		a.log.Info("unmount: started", "point", pt)
		if err := a.host.Unmount(pt); err != nil {
			a.log.Info("unmount: failed", "point", pt, "err", err)
			if errors.Is(err, unix.EBUSY) {
				return res, fmt.Errorf("unmount %s: busy (a process has files open there; see fuser -m %s)", pt, pt)
			}
			return res, fmt.Errorf("unmount %s: %w", pt, err)
		}
		a.log.Info("unmount: finished", "point", pt)
		res.Unmounted = append(res.Unmounted, pt)
	}
	for _, pt := range plan.RemoveMountPoints { // deepest first, as unmounted
		if !contains(res.Unmounted, pt) {
			continue
		}
		// Remove takes an empty directory only: files put there while
		// nothing was mounted keep it, with a note.
		if err := a.host.Remove(pt); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				res.Notes = append(res.Notes, fmt.Sprintf("mount point %s left in place: %v", pt, errors.Unwrap(err)))
			}
			continue
		}
		res.Notes = append(res.Notes, fmt.Sprintf("removed the mount point %s (prepare made it)", pt))
	}

	removed, err := fstab.RemoveWith(a.host.EditFstab, a.fstabPath, plan.fstabMatch)
	if err != nil {
		return res, fmt.Errorf("remove fstab entries: %w", err)
	}
	for _, e := range removed {
		res.FstabRemoved = append(res.FstabRemoved, fstab.EntryLine(e))
	}
	if len(removed) > 0 && a.systemdIsInit() {
		if err := a.do(ctx, "reload systemd units", []string{"systemctl", "daemon-reload"}); err != nil {
			res.Notes = append(res.Notes, "systemctl daemon-reload failed: "+err.Error())
		}
	}

	if plan.Stacks != nil {
		if err := a.applyStackRelease(ctx, deps.Layers, *plan.Stacks, res); err != nil {
			return res, err
		}
	}
	if plan.Detach == "" {
		return res, nil
	}
	dev := plan.Detach
	st, err := a.readLoopState(dev)
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("%s was not attached by diskprep: left attached", dev))
		return res, nil
	}
	a.log.Info("detach loop device: started", "device", dev, "image", st.Image)
	if err := a.host.DetachLoop(dev); err != nil {
		a.log.Info("detach loop device: failed", "device", dev, "err", err)
		return res, err
	}
	a.log.Info("detach loop device: finished", "device", dev)
	a.host.Remove(loopStatePath(a.runDir, dev))
	res.Detached = dev
	if plan.RemoveImage {
		if fi, err := a.host.Lstat(st.Image); err == nil && fi.Mode().IsRegular() {
			if err := a.host.Remove(st.Image); err != nil {
				return res, fmt.Errorf("remove image %s: %w", st.Image, err)
			}
			res.ImageRemoved = true
		}
	}
	return res, nil
}

// Actions lists, in order, what ApplyRelease will do: the steps the dry
// run prints ("would ..."), each with the effect that carries it out.
func (p *ReleasePlan) Actions() []Action {
	var s []Action
	if p.Detach == "" && p.RemoveImage {
		// An image file no loop device uses: that is all.
		return []Action{{Text: "remove image " + p.Image, Op: OpRemove, Path: p.Image}}
	}
	if p.Stacks != nil {
		for _, sw := range p.Stacks.Swapoff {
			s = append(s, Action{Text: "swapoff " + sw, Op: OpRun, Argv: []string{"swapoff", sw}})
		}
	}
	for _, pt := range p.Unmount {
		s = append(s, Action{Text: "unmount " + pt, Op: OpUnmount, Path: pt})
	}
	for _, pt := range p.RemoveMountPoints {
		s = append(s, Action{Text: "remove the mount point " + pt + " (prepare made it), when empty", Op: OpRemove, Path: pt, Maybe: true})
	}
	for i, l := range p.FstabRemove {
		a := Action{Text: "remove from fstab: " + l}
		if i == 0 {
			a.Op = OpEditFstab // one edit takes every line out
		}
		s = append(s, a)
	}
	if len(p.FstabRemove) > 0 {
		a := DaemonReload("only when systemd is PID 1")
		a.Text = "run: " + a.Text
		s = append(s, a)
	}
	if p.Stacks != nil {
		for _, a := range p.Stacks.actions() {
			a.Text = "run: " + a.Text
			s = append(s, a)
		}
	}
	if p.Detach != "" {
		s = append(s, Action{Text: "detach " + p.Detach, Op: OpDetachLoop, Path: p.Detach})
		if p.RemoveImage {
			s = append(s, Action{Text: "remove image " + p.Image, Op: OpRemove, Path: p.Image})
		}
	}
	return s
}

// WriteText renders the plan for people: what release would do, in the
// order it does it.
func (p *ReleasePlan) WriteText(w io.Writer) error {
	var b strings.Builder
	actions := p.Actions()
	for _, a := range actions {
		fmt.Fprintf(&b, "would %s\n", a.Text)
	}
	for _, l := range p.Destroys {
		made := "not made by diskprep: asks first, or --yes"
		if l.Made != "" {
			made = "diskprep's: " + l.Made
		}
		fmt.Fprintf(&b, "would destroy %s (%s)\n", l, made)
	}
	if p.Image != "" && !p.RemoveImage {
		fmt.Fprintf(&b, "image kept at %s\n", p.Image)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if len(actions) == 0 {
		fmt.Fprintf(&b, "nothing to release for %s\n", p.Target)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// diskDevnums maps "major:minor" to kernel name for disk and its
// partitions.
func (a *applier) diskDevnums(disk string) map[string]string {
	out := map[string]string{}
	if n, err := a.readDevnum(a.roots.SysPath("class/block", disk, "dev")); err == nil {
		out[n] = disk
	}
	parts, _ := kernelPartitions(a.host, a.roots, disk)
	for _, kp := range parts {
		if n, err := a.readDevnum(a.roots.SysPath("class/block", kp.name, "dev")); err == nil {
			out[n] = kp.name
		}
	}
	return out
}

func parseDevnum(s string) (uint32, uint32) {
	var ma, mi uint32
	fmt.Sscanf(s, "%d:%d", &ma, &mi)
	return ma, mi
}

// WriteText renders the release result for people.
func (r *ReleaseResult) WriteText(w io.Writer) error {
	var b strings.Builder
	did := false
	for _, p := range r.Unmounted {
		fmt.Fprintf(&b, "unmounted %s\n", p)
		did = true
	}
	for _, l := range r.FstabRemoved {
		fmt.Fprintf(&b, "removed from fstab: %s\n", l)
		did = true
	}
	for _, sw := range r.SwappedOff {
		fmt.Fprintf(&b, "swapped off %s\n", sw)
		did = true
	}
	for _, st := range r.StackSteps {
		fmt.Fprintf(&b, "done: %s\n", st)
		did = true
	}
	if r.Detached != "" {
		fmt.Fprintf(&b, "detached %s\n", r.Detached)
		did = true
	}
	if r.Image != "" {
		if r.ImageRemoved {
			fmt.Fprintf(&b, "removed image %s\n", r.Image)
		} else {
			fmt.Fprintf(&b, "image kept at %s\n", r.Image)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if !did && !r.ImageRemoved {
		fmt.Fprintf(&b, "nothing to release for %s\n", r.Target)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// anyMounted says whether a partition of disk (or disk itself) is still
// mounted somewhere other than the points unmounted.
func (a *applier) anyMounted(mounts []MountEntry, disk string, unmounted []string) bool {
	nums := a.diskDevnums(disk)
	for _, m := range mounts {
		if _, ok := nums[m.Devnum]; ok && !contains(unmounted, m.Point) {
			return true
		}
	}
	return false
}

// planStackRelease plans the swapoff of the swap areas among devs, then
// has the layers (Deps.Layers) plan the teardown of what stands on devs.
// Without layers, only disks and partitions can be released, and a wipe
// takes their own signatures.
func (a *applier) planStackRelease(ctx context.Context, layers Layers, plan *ReleasePlan, devs map[string]string, opt ReleaseOptions) error {
	names := map[string]bool{}
	for _, n := range devs {
		names[n] = true
	}
	// Swap areas among the devices given.
	if b, err := a.host.ReadFile(a.roots.ProcPath("swaps")); err == nil {
		for _, sw := range hwinfo.ParseSwaps(string(b)) {
			if names[filepath.Base(sw.Path)] {
				plan.Stacks.Swapoff = append(plan.Stacks.Swapoff, sw.Path)
			}
		}
	}
	if layers != nil {
		return layers.PlanTeardown(ctx, &Applier{a}, plan, devs, opt)
	}
	var lower []string
	for n := range names {
		des, _ := a.host.ReadDir(a.roots.SysPath("class/block", n, "holders"))
		if len(des) > 0 || strings.HasPrefix(n, "md") || strings.HasPrefix(n, "dm-") || strings.HasPrefix(n, "bcache") {
			return fmt.Errorf("release /dev/%s: a stack stands on it, and no layer was given to release it", n)
		}
		lower = append(lower, n)
	}
	if !opt.Wipe {
		return nil
	}
	// A member of a stack that is not running (an inactive group, a
	// stopped array) is the layers' to judge: its other members may be
	// elsewhere.
	sort.Strings(lower)
	for _, n := range lower {
		sigs, _ := a.probeDevice(a.roots.DevPath(n))
		for _, s := range sigs {
			if s.Type == "LVM2_member" || s.Type == "linux_raid_member" || s.Type == "bcache" {
				return RefuseWipe("/dev/"+n, fmt.Sprintf("/dev/%s holds %s, and no layer was given to release it", n, s.Type))
			}
		}
	}
	plan.Stacks.WipeSignatures = a.wipeOrder(lower)
	return nil
}

// applyStackRelease has the layers take down the stacks of s, then wipes
// the signatures s names: what is left is signature-free.
func (a *applier) applyStackRelease(ctx context.Context, layers Layers, s StackRelease, res *ReleaseResult) error {
	if layers != nil {
		if err := layers.ApplyTeardown(ctx, &Applier{a}, s, res); err != nil {
			return err
		}
	}
	step := func(what string, argv ...string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := a.do(ctx, what, argv); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		res.StackSteps = append(res.StackSteps, QuoteArgv(argv))
		return nil
	}
	for _, d := range s.WipeSignatures {
		if err := step("wipe signatures of "+d, "wipefs", "--all", d); err != nil {
			return err
		}
	}
	if len(s.WipeSignatures) > 0 && a.udevRunning() {
		// udev answers each wipe by probing the disk again; the next
		// command reads its facts from udev's database, which must
		// show the disks blank by then.
		if out, err := a.host.Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil && ctx.Err() == nil {
			a.log.Warn("udevadm settle failed", "err", err, "output", string(out))
		}
	}
	return nil
}
