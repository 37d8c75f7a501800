package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/diskprep/diskprep/disk/fstab"
)

func (a *applier) mkfsVersion(ctx context.Context, pp PartPlan) (string, error) {
	prog := pp.Mkfs[0]
	out, err := a.host.Run(ctx, prog, "-V")
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%s is not installed: install the %s package: %w", prog, filesystems[pp.FS].pkg, ErrMissingProgram)
		}
		return "", fmt.Errorf("%s -V: %w", prog, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line), nil
}

// preflight refuses, before anything is created or written, what would
// only fail half way: a mount point already taken by another filesystem, or
// an fstab line for the mount point or filesystem that says something else.
func (a *applier) preflight(p *Plan) error {
	mounts, err := a.mounts()
	if err != nil {
		return fmt.Errorf("read mounts: %w", err)
	}
	var lines []fstab.Line
	if b, err := a.host.ReadFile(a.fstabPath); err == nil {
		if lines, err = fstab.Parse(b); err != nil {
			return fmt.Errorf("%s: %w", a.fstabPath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", a.fstabPath, err)
	}
	for _, pp := range p.Partitions {
		if pp.MountPoint == "" {
			continue
		}
		for _, m := range mounts {
			if filepath.Clean(m.Point) == pp.MountPoint && m.source != pp.Path {
				return Refuse(p.Device, fmt.Sprintf("%s is already a mount point (of %s)", pp.MountPoint, m.source))
			}
		}
		if !pp.Persist {
			continue
		}
		want := FstabEntry(pp)
		for i, l := range lines {
			if l.Entry == nil {
				continue
			}
			samePoint := filepath.Clean(l.Entry.File) == pp.MountPoint
			sameSpec := strings.EqualFold(l.Entry.Spec, want.Spec)
			if samePoint != sameSpec {
				return Refuse(p.Device, fmt.Sprintf("%s line %d already says %q", a.fstabPath, i+1, l.Raw))
			}
		}
	}
	return nil
}
