package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	h := pl.HostOrLive()
	abs, err := filepath.Abs(path)
	if err != nil {
		return ImageState{}, Usagef("image %s: %v", path, err)
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
// The directories on the way are resolved, through no link another user
// made or could replace (hwinfo.FollowTrustedLinks, as for a device); the
// file itself never is: root does not follow a link another user may have
// put where an image goes.
func resolveImagePath(h Host, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", Usagef("image %s: %v", path, err)
	}
	dir := filepath.Dir(abs)
	real, err := hwinfo.FollowTrustedLinks(h, dir)
	var le *hwinfo.LinkError
	switch {
	case errors.As(err, &le):
		// What to give instead is the image in the directory the link
		// names, never the directory itself.
		le.Device = false
		if le.Target != "" {
			le.Target = filepath.Join(le.Target, filepath.Base(abs))
		}
		return "", Refuse(abs, le.Error())
	case err == nil:
		dir = real
	}
	real = filepath.Join(dir, filepath.Base(abs))
	fi, err := h.Lstat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return real, checkImageDir(h, dir)
	}
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", abs, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// Root's link to a disk is a by-id link, most likely: say what to
		// type. Another user's is not followed, not even to say where
		// it leads.
		if uid, _, ok := owner(fi); !ok || trustedOwner(uid) {
			if st, err := h.Stat(real); err == nil && st.Mode()&fs.ModeDevice != 0 {
				return "", Refuse(abs, fmt.Sprintf("%s is a device node, not an image file (use prepare %s)", abs, abs))
			}
		}
		return "", Refuse(abs, fmt.Sprintf("%s is a symbolic link: diskprep opens image files only by their own path (give the file the link names, if it is yours)", abs))
	}
	if err := checkImageDir(h, dir); err != nil {
		return "", err
	}
	if fi.Mode().IsRegular() {
		if uid, perm, ok := owner(fi); ok && (!trustedOwner(uid) || perm&0o022 != 0) {
			return "", Refuse(real, fmt.Sprintf("%s belongs to uid %d with mode %04o: an image root formats and mounts must be root's and writable by no one else (chown root:root and chmod go-w it, or let diskprep create it)", real, uid, perm))
		}
	}
	return real, nil
}

// checkImageDir refuses a directory where another user could swap the
// image file between the checks and its use: one they own, or one they
// may write into without the sticky bit (in /var/tmp and /tmp, sticky, only
// root may replace root's file).
func checkImageDir(h Host, dir string) error {
	fi, err := h.Stat(dir)
	if err != nil {
		return nil // a missing directory is the plan's to report
	}
	uid, perm, ok := owner(fi)
	if !ok {
		return nil
	}
	if !trustedOwner(uid) || perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return Refuse(dir, fmt.Sprintf("%s belongs to uid %d with mode %04o: another user could replace an image file in it; keep images in a directory of root's (as /var/tmp or /var/lib)", dir, uid, perm))
	}
	return nil
}

// trustedOwner says whether a file of uid's may be used: root's, or the
// user's own when diskprep runs as that user (a dry run).
func trustedOwner(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// imageMountOpts are the mount options of a filesystem on an image file:
// nosuid and nodev unless the options given say suid or dev, since the
// file's bytes may have come from anywhere (a copied image, a file another
// user once owned) and a setuid program or device node in them would be
// root's to run.
func imageMountOpts(opts string) string {
	have := map[string]bool{}
	for _, o := range strings.Split(opts, ",") {
		have[o] = true
	}
	var add []string
	if !have["suid"] && !have["nosuid"] {
		add = append(add, "nosuid")
	}
	if !have["dev"] && !have["nodev"] {
		add = append(add, "nodev")
	}
	if len(add) == 0 {
		return opts
	}
	if opts == "" || opts == "defaults" {
		return strings.Join(add, ",")
	}
	return opts + "," + strings.Join(add, ",")
}
