package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/diskprep/diskprep/hwinfo"
)

// ImageState is what an image file is before planning.
type ImageState struct {
	Path       string // absolute, symlinks resolved
	Exists     bool
	Regular    bool
	DeviceNode bool // the path (or its symlink target) is a device node: refused
	SizeBytes  uint64
	// Disk describes the file's contents as if it were a disk (table,
	// partitions with their filesystems, whole-disk signatures), read with
	// the prober; nil when the file does not exist.
	Disk *hwinfo.Disk
	// damage is what Disk does not say: a half-written table, an
	// unfinished filesystem.
	damage damage
}

// InspectImage reads an image file's state on the live machine; it never
// writes.
func InspectImage(path string) (ImageState, error) { return Planner{}.InspectImage(path) }

// InspectImage is the package's InspectImage on pl's machine.
func (pl Planner) InspectImage(path string) (ImageState, error) {
	h := pl.host()
	abs, err := filepath.Abs(path)
	if err != nil {
		return ImageState{}, usagef("image %s: %v", path, err)
	}
	real, err := resolveImagePath(h, abs)
	if err != nil {
		return ImageState{Path: abs}, err
	}
	st := ImageState{Path: real}
	fi, err := h.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("inspect image %s: %w", abs, err)
	}
	st.Exists = true
	switch {
	case fi.Mode()&fs.ModeDevice != 0:
		st.DeviceNode = true
		return st, nil
	case !fi.Mode().IsRegular():
		return st, nil
	}
	st.Regular = true
	st.SizeBytes = uint64(fi.Size())
	d, dmg, err := inspectImageContents(h, st.Path, st.SizeBytes)
	if err != nil {
		return st, fmt.Errorf("inspect image %s: %w", st.Path, err)
	}
	st.Disk, st.damage = d, dmg
	return st, nil
}

// resolveImagePath names an image file as the kernel names a loop device's
// backing file, by its real path, or a second run would not recognise it as
// attached and attach it twice (and the image lock would not be one lock).
// A missing file is named by its directory's real path.
func resolveImagePath(h Host, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", usagef("image %s: %v", path, err)
	}
	fi, err := h.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if dir, err := h.EvalSymlinks(filepath.Dir(abs)); err == nil {
			return filepath.Join(dir, filepath.Base(abs)), nil
		}
		return abs, nil
	}
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", abs, err)
	}
	real, err := h.EvalSymlinks(abs)
	if err != nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", usagef("image %s is a dangling symlink", abs)
		}
		return "", fmt.Errorf("inspect image %s: %w", abs, err)
	}
	return real, nil
}
