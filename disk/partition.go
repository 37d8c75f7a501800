package disk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
)

// preparePartition makes the filesystem, mounts it, writes the marker and
// the fstab line, as far as the plan asks.
func (a *applier) preparePartition(ctx context.Context, p *Plan, pp PartPlan, version string, undo *[]func()) (PartResult, error) {
	pr := PartResult{
		Number: pp.Number, Device: pp.Path, StartBytes: pp.StartBytes, SizeBytes: pp.SizeBytes, PartUUID: pp.PartGUID,
		FS: pp.FS, Label: pp.FSLabel, MountPoint: pp.MountPoint, MountOpts: pp.MountOpts, FstabLine: pp.FstabLine,
	}
	pr.Use = pp.Use
	if pp.Discard != nil {
		// TRIM is advice to the SSD: a device that does not take it
		// (emulated, behind a bridge) is noted, not a failure.
		if err := a.do(ctx, "discard", pp.Discard); err != nil {
			pr.Notes = append(pr.Notes, "discard failed (the space stays allocated on the SSD): "+err.Error())
		} else {
			pr.Discarded = true
		}
	}
	if pp.Use != "" {
		// A stack member: ApplyStacks makes the array or group on it.
		return pr, nil
	}
	if pp.Mkfs != nil {
		force := len(pp.Mkfs) > 1 && (pp.Mkfs[1] == "-f" || pp.Mkfs[1] == "-F")
		if !force {
			if sigs, err := a.probeDevice(pp.Path); err != nil {
				return pr, err
			} else if len(sigs) > 0 {
				return pr, notEmpty(pp.Path, pp.Path, []string{sigs[0].Type + " signature"})
			}
		}
		if err := a.do(ctx, "make filesystem", pp.Mkfs); err != nil {
			return pr, fmt.Errorf("make %s on %s: %w", pp.FS, pp.Path, err)
		}
		pr.Formatted, pr.MkfsArgv, pr.MkfsVersion = true, pp.Mkfs, version
	}
	uuid, err := a.readBackFS(pp)
	if err != nil {
		return pr, err
	}
	pr.UUID = uuid

	if pp.FS == "swap" && pp.MountArgv != nil {
		active, err := a.swapActive(pp.Path)
		if err != nil {
			return pr, err
		}
		if !active {
			if err := a.do(ctx, "swapon", pp.MountArgv); err != nil {
				return pr, fmt.Errorf("swapon %s: %w", pp.Path, err)
			}
			pr.Mounted = true
			*undo = append(*undo, func() {
				if err := a.do(context.WithoutCancel(ctx), "swapoff after failure", []string{"swapoff", pp.Path}); err != nil {
					a.log.Error("swapoff after failure", "device", pp.Path, "err", err)
				}
			})
		}
	}
	if pp.MountPoint != "" {
		mounted, err := a.mountState(pp)
		if err != nil {
			return pr, err
		}
		if !mounted {
			if pp.MountArgv == nil {
				return pr, fmt.Errorf("%s is no longer mounted at %s: plan again", pp.Path, pp.MountPoint)
			}
			if _, err := a.host.Stat(pp.MountPoint); errors.Is(err, fs.ErrNotExist) {
				a.madePoints[pp.MountPoint] = true // the marker says so, for release
				if err := a.noteMadePoint(pp.MountPoint); err != nil {
					return pr, fmt.Errorf("note the mount point %s: %w", pp.MountPoint, err)
				}
			}
			if err := a.host.MkdirAll(pp.MountPoint, 0o755); err != nil {
				return pr, fmt.Errorf("create mount point %s: %w", pp.MountPoint, err)
			}
			if err := a.do(ctx, "mount", pp.MountArgv); err != nil {
				return pr, fmt.Errorf("mount %s at %s: %w", pp.Path, pp.MountPoint, err)
			}
			pr.Mounted = true
			*undo = append(*undo, func() {
				if err := a.host.Unmount(pp.MountPoint); err != nil {
					a.log.Error("unmount after failure", "point", pp.MountPoint, "err", err)
				}
			})
		}
		if err := a.writeMarker(p, pp, pr); err != nil {
			return pr, err
		}
	}
	if pp.Persist {
		e := FstabEntry(pp)
		e.Spec = "UUID=" + pr.UUID
		a.log.Info("add fstab entry: started", "fstab", a.fstabPath, "line", fstab.EntryLine(e))
		changed, err := fstab.AddWith(a.host.EditFstab, a.fstabPath, e, a.now())
		if err != nil {
			a.log.Info("add fstab entry: failed", "fstab", a.fstabPath, "err", err)
			return pr, err
		}
		a.log.Info("add fstab entry: finished", "fstab", a.fstabPath, "changed", changed)
		pr.FstabAdded = changed
	}
	return pr, nil
}

// swapActive says whether the device at path is an active swap area
// (/proc/swaps names it by its node, or by another node of the same
// device).
func (a *applier) swapActive(path string) (bool, error) {
	b, err := a.host.ReadFile(a.roots.ProcPath("swaps"))
	if err != nil {
		return false, fmt.Errorf("read swaps: %w", err)
	}
	want, err := a.devNumber(path)
	if err != nil {
		return false, err
	}
	for _, sw := range hwinfo.ParseSwaps(string(b)) {
		if sw.Path == path {
			return true, nil
		}
		if n, err := a.devNumber(sw.Path); err == nil && n == want {
			return true, nil
		}
	}
	return false, nil
}

func (a *applier) probeDevice(path string) ([]signature, error) {
	f, err := a.host.OpenDevice(path, false)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", path, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	sigs, err := ProbeSignatures(f, int64(size))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", path, err)
	}
	return sigs, nil
}

// readBackFS checks the filesystem on the partition is the planned one and
// returns its UUID as read from the device.
func (a *applier) readBackFS(pp PartPlan) (string, error) {
	sigs, err := a.probeDevice(pp.Path)
	if err != nil {
		return "", err
	}
	for _, s := range sigs {
		if s.Type == pp.FS {
			if pp.FSUUID != "" && !strings.EqualFold(s.UUID, pp.FSUUID) {
				return "", fmt.Errorf("%s holds %s UUID %s, planned %s", pp.Path, s.Type, s.UUID, pp.FSUUID)
			}
			return s.UUID, nil
		}
	}
	var found []string
	for _, s := range sigs {
		found = append(found, s.Type)
	}
	return "", fmt.Errorf("%s does not hold the planned %s filesystem (found: %s)", pp.Path, pp.FS, orNone(strings.Join(found, ", ")))
}

// mountState says whether the partition is mounted at its mount point, and
// refuses a mount point taken by something else (mounting over it would
// hide that filesystem).
func (a *applier) mountState(pp PartPlan) (bool, error) {
	mounts, err := a.mounts()
	if err != nil {
		return false, fmt.Errorf("read mounts: %w", err)
	}
	devnum, err := a.devNumber(pp.Path)
	if err != nil {
		return false, err
	}
	mine := false
	for _, m := range mounts {
		if filepath.Clean(m.Point) != pp.MountPoint {
			continue
		}
		if m.Devnum != devnum {
			return false, Refuse(pp.Path, fmt.Sprintf("%s is already a mount point (of %s)", pp.MountPoint, m.source))
		}
		mine = true
	}
	return mine, nil
}

func (a *applier) writeMarker(p *Plan, pp PartPlan, pr PartResult) error {
	path := filepath.Join(pp.MountPoint, MarkerFile)
	if !pr.Formatted {
		if _, err := a.host.Stat(path); err == nil {
			return nil
		}
	}
	m := Marker{
		Schema: MarkerSchema, FS: pp.FS, Label: pp.FSLabel, UUID: pr.UUID, Device: pp.Path, Disk: p.Device,
		DiskModel: p.Disk.Model, DiskSerial: p.Disk.Serial, MkfsArgv: pr.MkfsArgv, MkfsVersion: pr.MkfsVersion,
		MountOpts: pp.MountOpts, PreparedAt: a.now().UTC().Format(time.RFC3339),
	}
	if p.Image != nil {
		m.Image = p.Image.Path
	}
	note := madePointPath(a.runDir, pp.MountPoint)
	m.MadeMountPoint = a.madePoints[pp.MountPoint]
	if !m.MadeMountPoint {
		_, err := a.host.Stat(note)
		m.MadeMountPoint = err == nil
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := a.host.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if m.MadeMountPoint {
		a.host.Remove(note)
	}
	return nil
}

// madePointPath names the note, written just before diskprep creates a
// mount point, that it is making it: a run killed after the mkdir and
// before the marker (the mount done, say) leaves the note, so the rerun,
// which finds the directory there, still marks it as diskprep's, and
// release removes it as after an uninterrupted run. The marker takes
// over and the note goes; /run does not outlive a reboot.
func madePointPath(runDir, point string) string {
	sum := sha256.Sum256([]byte(point))
	return filepath.Join(runDir, "mountpoints", "made-"+hex.EncodeToString(sum[:8]))
}

func (a *applier) noteMadePoint(point string) error {
	path := madePointPath(a.runDir, point)
	if err := a.host.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return a.host.WriteFile(path, []byte(point+"\n"), 0o644)
}

// notEmpty is the refusal of a device holding what; --wipe destroys it.
func notEmpty(subject, dev string, what []string) error {
	if len(what) == 1 && strings.HasSuffix(what[0], " signature") {
		return Refuse(subject, fmt.Sprintf("%s already holds a %s (pass --wipe to destroy it)", dev, what[0]))
	}
	return Refuse(subject, fmt.Sprintf("%s is not empty: %s (pass --wipe to destroy it)", dev, strings.Join(what, ", ")))
}
