package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
}

// InspectImage reads an image file's state; it never writes.
func InspectImage(path string) (ImageState, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ImageState{}, usagef("image %s: %v", path, err)
	}
	st := ImageState{Path: abs}
	fi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		// The kernel reports a loop device's backing file by its real path;
		// name the image the same way, or a second run would not recognise
		// it as attached and attach it twice.
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			st.Path = filepath.Join(dir, filepath.Base(abs))
		}
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("inspect image %s: %w", abs, err)
	}
	st.Exists = true
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		st.Path = real
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return st, usagef("image %s is a dangling symlink", abs)
		}
		st.Path = target
		if fi, err = os.Stat(target); err != nil {
			return st, fmt.Errorf("inspect image %s: %w", abs, err)
		}
	}
	switch {
	case fi.Mode()&fs.ModeDevice != 0:
		st.DeviceNode = true
		return st, nil
	case !fi.Mode().IsRegular():
		return st, nil
	}
	st.Regular = true
	st.SizeBytes = uint64(fi.Size())
	d, err := inspectImageContents(st.Path, st.SizeBytes)
	if err != nil {
		return st, fmt.Errorf("inspect image %s: %w", st.Path, err)
	}
	st.Disk = d
	return st, nil
}
