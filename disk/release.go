package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk/fstab"
	"golang.org/x/sys/unix"
)

// ReleaseOptions tune Release.
type ReleaseOptions struct {
	// RemoveImage deletes the image file behind a loop device diskprep
	// attached, after detaching it.
	RemoveImage bool
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
	Notes        []string `json:"notes,omitempty"`
}

// Release undoes the tail end of prepare for target (a mount point, a disk
// or partition device, or an image file): it unmounts, removes diskprep's
// own fstab lines for what it unmounted, and detaches a loop device that
// diskprep attached (leaving the image file unless RemoveImage). It never
// touches the data on the disk. Bad targets wrap ErrUsage.
func Release(ctx context.Context, target string, opt ReleaseOptions, deps Deps) (*ReleaseResult, error) {
	a := newApplier(deps)
	res := &ReleaseResult{Target: target}
	if target == "" {
		return nil, usagef("nothing to release: give a mount point, device or image")
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return nil, usagef("release %s: %v", target, err)
	}
	mounts, err := readMountinfo(filepath.Join(a.procDir, "self/mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}

	// Work out the devices concerned, as kernel names.
	var disk string             // whole disk (or loop) name
	var parentLoop string       // the disk of a single partition released
	devs := map[string]string{} // "major:minor" -> name, of the disk and its partitions
	var points []string         // mount points to unmount
	fstabPoints := map[string]bool{}
	var st unix.Stat_t
	switch err := unix.Stat(abs, &st); {
	case err != nil && errors.Is(err, unix.ENOENT):
		// A mount point that is gone may still have a stale fstab line.
		fstabPoints[filepath.Clean(abs)] = true
	case err != nil:
		return nil, fmt.Errorf("release %s: %w", target, err)
	case st.Mode&unix.S_IFMT == unix.S_IFBLK:
		name, err := a.blockName(unix.Major(st.Rdev), unix.Minor(st.Rdev))
		if err != nil {
			return nil, err
		}
		disk = a.wholeDisk(name)
		if disk != name {
			// A single partition: only it.
			devs[fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))] = name
			parentLoop = disk
			disk = ""
			res.Device = "/dev/" + name
		}
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
		real, _ := filepath.EvalSymlinks(abs)
		dev := a.loopFor(real)
		if dev == "" {
			res.Image = real
			if opt.RemoveImage {
				// Asked by name and flag: the file is not in use by a loop
				// device, so deleting it cannot pull a disk from under anyone.
				if err := os.Remove(real); err != nil {
					return res, fmt.Errorf("remove image %s: %w", real, err)
				}
				res.ImageRemoved = true
				return res, nil
			}
			res.Notes = append(res.Notes, fmt.Sprintf("%s is not attached to a loop device", real))
			return res, nil
		}
		disk = filepath.Base(dev)
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		point := filepath.Clean(abs)
		fstabPoints[point] = true
		for _, m := range mounts {
			if m.point == point {
				points = append(points, point)
				if name, err := a.blockName(parseDevnum(m.devnum)); err == nil {
					devs[m.devnum] = name
					if d := a.wholeDisk(name); d != name {
						parentLoop = d
					}
				}
			}
		}
		if len(points) == 0 {
			res.Notes = append(res.Notes, point+" is not mounted")
		}
	default:
		return nil, usagef("release %s: not a mount point, block device or image file", target)
	}
	if disk != "" {
		res.Device = "/dev/" + disk
		if n, err := readDevnum(filepath.Join(a.sysDir, "class/block", disk, "dev")); err == nil {
			devs[n] = disk
		}
		parts, _ := kernelPartitions(a.sysDir, disk)
		for _, kp := range parts {
			if n, err := readDevnum(filepath.Join(a.sysDir, "class/block", kp.name, "dev")); err == nil {
				devs[n] = kp.name
			}
		}
	}
	for _, m := range mounts {
		if _, ok := devs[m.devnum]; ok && !contains(points, m.point) {
			points = append(points, m.point)
		}
	}

	// Filesystem UUIDs name the fstab lines for these devices.
	uuids := map[string]bool{}
	for _, name := range devs {
		if sigs, err := probeDevice("/dev/" + name); err == nil {
			for _, s := range sigs {
				if s.UUID != "" && s.Usage == "filesystem" {
					uuids[strings.ToLower(s.UUID)] = true
				}
			}
		}
	}

	// Deepest first, so nested mounts come off before their parents.
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, pt := range points {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		a.log.Info("unmount: started", "point", pt)
		if err := unix.Unmount(pt, 0); err != nil {
			a.log.Error("unmount: failed", "point", pt, "err", err)
			if errors.Is(err, unix.EBUSY) {
				return res, fmt.Errorf("unmount %s: busy (a process has files open there; see fuser -m %s)", pt, pt)
			}
			return res, fmt.Errorf("unmount %s: %w", pt, err)
		}
		a.log.Info("unmount: finished", "point", pt)
		res.Unmounted = append(res.Unmounted, pt)
		fstabPoints[pt] = true
	}

	removed, err := fstab.Remove(a.fstabPath, func(e fstab.Entry) bool {
		if fstabPoints[filepath.Clean(e.File)] {
			return true
		}
		if k, v, ok := strings.Cut(e.Spec, "="); ok && strings.EqualFold(k, "UUID") {
			return uuids[strings.ToLower(strings.Trim(v, `"'`))]
		}
		return false
	})
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

	// Releasing the last mounted partition of a loop device diskprep
	// attached releases the device too: nothing else would detach it.
	if disk == "" && strings.HasPrefix(parentLoop, "loop") && !a.anyMounted(mounts, parentLoop, res.Unmounted) {
		if _, err := readLoopState(a.runDir, a.sysDir, "/dev/"+parentLoop); err == nil {
			disk = parentLoop
		}
	}
	if disk != "" && strings.HasPrefix(disk, "loop") {
		dev := "/dev/" + disk
		image := loopBackingFile(a.sysDir, disk)
		res.Image = image
		st, err := readLoopState(a.runDir, a.sysDir, dev)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("%s was not attached by diskprep: left attached", dev))
			return res, nil
		}
		a.log.Info("detach loop device: started", "device", dev, "image", st.Image)
		if err := detachLoop(a.sysDir, dev); err != nil {
			a.log.Error("detach loop device: failed", "device", dev, "err", err)
			return res, err
		}
		a.log.Info("detach loop device: finished", "device", dev)
		os.Remove(loopStatePath(a.runDir, dev))
		res.Detached = dev
		if opt.RemoveImage {
			if fi, err := os.Lstat(st.Image); err == nil && fi.Mode().IsRegular() {
				if err := os.Remove(st.Image); err != nil {
					return res, fmt.Errorf("remove image %s: %w", st.Image, err)
				}
				res.ImageRemoved = true
			}
		}
	}
	return res, nil
}

// blockName maps a device number to its kernel name via /sys/dev/block.
func (a *applier) blockName(major, minor uint32) (string, error) {
	link, err := os.Readlink(filepath.Join(a.sysDir, "dev/block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return "", fmt.Errorf("device %d:%d: %w", major, minor, err)
	}
	return filepath.Base(link), nil
}

// wholeDisk returns the disk a partition belongs to, or name itself.
func (a *applier) wholeDisk(name string) string {
	if _, err := os.Stat(filepath.Join(a.sysDir, "class/block", name, "partition")); err != nil {
		return name
	}
	real, err := filepath.EvalSymlinks(filepath.Join(a.sysDir, "class/block", name))
	if err != nil {
		return name
	}
	return filepath.Base(filepath.Dir(real))
}

func readDevnum(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func parseDevnum(s string) (uint32, uint32) {
	var ma, mi uint32
	fmt.Sscanf(s, "%d:%d", &ma, &mi)
	return ma, mi
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
// mounted somewhere other than the points just unmounted.
func (a *applier) anyMounted(mounts []mountEntry, disk string, unmounted []string) bool {
	nums := map[string]bool{}
	if n, err := readDevnum(filepath.Join(a.sysDir, "class/block", disk, "dev")); err == nil {
		nums[n] = true
	}
	parts, _ := kernelPartitions(a.sysDir, disk)
	for _, kp := range parts {
		if n, err := readDevnum(filepath.Join(a.sysDir, "class/block", kp.name, "dev")); err == nil {
			nums[n] = true
		}
	}
	for _, m := range mounts {
		if nums[m.devnum] && !contains(unmounted, m.point) {
			return true
		}
	}
	return false
}
