package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// systemTrees are the system's own directories: a file system mounted at
// one of them, or anywhere inside, hides or shadows what the machine runs
// on (or, for the kernel's own trees, cannot be made there at all).
var systemTrees = []string{
	"/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/proc", "/sys", "/dev",
	// diskprep's own state and results.
	"/run/diskprep", "/var/lib/diskprep",
}

// systemDirs are refused themselves but not what lies below them: mounting
// over one hides everything the system keeps there, while a new directory
// inside (/var/lib/libvirt/images, /var/tmp/scratch, /root/scratch) is the
// admin's to mount a data disk at.
var systemDirs = []string{
	"/", "/root", "/tmp", "/run",
	"/var", "/var/lib", "/var/log", "/var/cache", "/var/spool", "/var/tmp", "/var/mail",
	"/var/opt", "/var/local", "/var/backups", "/var/run", "/var/lock",
}

// kernelFS are file systems in which no directory can be made: a mount
// point that does not exist yet cannot be created in them.
var kernelFS = map[string]bool{
	"proc": true, "sysfs": true, "cgroup": true, "cgroup2": true, "securityfs": true, "debugfs": true,
	"tracefs": true, "configfs": true, "bpf": true, "pstore": true, "efivarfs": true, "fusectl": true,
	"mqueue": true, "binfmt_misc": true, "autofs": true, "selinuxfs": true, "nsfs": true,
}

// systemMountPoint says why point (absolute and clean) is one of the
// system's own directories, "" when it is not. own are more trees that are
// diskprep's (its state directory, the results store), absolute and clean.
func systemMountPoint(point string, own []string) string {
	for _, d := range systemDirs {
		if point == d {
			return fmt.Sprintf("mount point %s is a system directory: mounting there hides what the system keeps in it", point)
		}
	}
	for _, t := range systemTrees {
		if within(point, t) {
			return fmt.Sprintf("mount point %s is in %s, the system's own", point, t)
		}
	}
	for _, t := range own {
		if within(point, t) {
			return fmt.Sprintf("mount point %s is in %s, diskprep's own", point, t)
		}
	}
	return ""
}

// within says whether p is dir or lies inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || dir == "/"
}

// ownTrees are the directories diskprep keeps its own data in, under pl's
// roots, and those it was given, as given and resolved (a results store
// reached through a link is still diskprep's).
func (pl Planner) ownTrees() []string {
	var out []string
	for _, t := range append([]string{pl.Roots.StateDir()}, pl.Protect...) {
		if !filepath.IsAbs(t) {
			continue // the command makes them absolute
		}
		out = append(out, filepath.Clean(t), pl.ResolveMountPoint(t))
	}
	return out
}

// ResolveMountPoint is point cleaned and, as far as it exists, with its
// symbolic links resolved on the host: the directory mount(8) would
// mount at, and the one the mount table will name. A point that cannot
// be resolved (a link to nothing) is returned cleaned, for
// CheckMountPoint to refuse.
func (pl Planner) ResolveMountPoint(point string) string {
	if point == "" {
		return ""
	}
	point = filepath.Clean(point)
	h := pl.HostOrLive()
	if _, err := FollowUserPath(h, "", "", point); IsRefusal(err) {
		return point // through another user's link: checkMountPoint refuses it
	}
	dir, rest := point, ""
	for {
		if real, err := h.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == "/" {
			return point
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
}

// CheckMountPoint is the one check of a mount point at planning time,
// for partitions and for stacks alike, so that nothing is written before
// it is known that the mount can be made: point (as ResolveMountPoint
// gives it) must not be the system's own, nor a non-directory, nor
// another file system's mount point, nor a non-empty directory unless
// over (--mount-over: the note then says what is hidden), nor a new
// directory that cannot be made (in /proc, /sys, under a file, on a
// read-only file system). mounted says this very file system is mounted
// there already (a rerun), which needs nothing more than the first check.
// mounts is the mount table. Refusals are for subject.
func (pl Planner) CheckMountPoint(subject, point string, mounted, over bool, mounts []MountEntry) (note string, err error) {
	if point == "" {
		return "", nil
	}
	// Another user's link on the way could be turned elsewhere (onto
	// /etc) between this check and the mount: refused, as for devices.
	if _, err := FollowUserPath(pl.HostOrLive(), "", subject, filepath.Clean(point)); IsRefusal(err) {
		return "", err
	}
	real := pl.ResolveMountPoint(point)
	for _, p := range []string{filepath.Clean(point), real} {
		if why := systemMountPoint(p, pl.ownTrees()); why != "" {
			if p != filepath.Clean(point) {
				why += " (" + point + " leads there)"
			}
			return "", Refuse(subject, why)
		}
	}
	if mounted {
		return "", nil
	}
	h := pl.HostOrLive()
	fi, err := h.Lstat(real)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return "", Refuse(subject, fmt.Sprintf("mount point %s is a symbolic link that leads nowhere", point))
	case err == nil && !fi.IsDir():
		return "", Refuse(subject, fmt.Sprintf("mount point %s exists and is not a directory", real))
	case err == nil:
		for _, m := range mounts {
			if filepath.Clean(m.Point) == real {
				return "", Refuse(subject, fmt.Sprintf("%s is already a mount point (of %s)", real, m.source))
			}
		}
		des, err := h.ReadDir(real)
		if err != nil {
			return "", fmt.Errorf("read mount point %s: %w", real, err)
		}
		if len(des) == 0 {
			return "", nil
		}
		if _, err := h.Stat(madePointPath(pl.Roots.StateDir(), real)); err == nil {
			// diskprep made it, in a run cut short: nothing of anyone's.
			return "", nil
		}
		what := describeEntries(des)
		if !over {
			return "", Refuse(subject, fmt.Sprintf("mount point %s is not empty (%s): mounting there hides it; pass --mount-over (plan file: mount_over: true) to do so", real, what))
		}
		return fmt.Sprintf("mount point %s is not empty (%s): hidden while the file system is mounted there (--mount-over)", real, what), nil
	case !errors.Is(err, fs.ErrNotExist) && !isNotDir(err):
		return "", fmt.Errorf("mount point %s: %w", real, err)
	}
	// A new directory: its nearest existing ancestor must take it.
	anc := real
	for anc != "/" {
		anc = filepath.Dir(anc)
		fi, err := h.Lstat(anc)
		if err == nil {
			if !fi.IsDir() {
				return "", Refuse(subject, fmt.Sprintf("mount point %s cannot be made: %s is not a directory", real, anc))
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
			return "", fmt.Errorf("mount point %s: %w", real, err)
		}
	}
	if m := containingMount(mounts, anc); m != nil {
		switch {
		case kernelFS[m.fstype]:
			return "", Refuse(subject, fmt.Sprintf("mount point %s cannot be made: %s is the kernel's %s, which takes no new directories", real, m.Point, m.fstype))
		case hasOption(m.opts, "ro") || hasOption(m.superOpts, "ro"):
			return "", Refuse(subject, fmt.Sprintf("mount point %s cannot be made: %s is on a read-only file system (mounted at %s)", real, anc, m.Point))
		}
	}
	return "", nil
}

// describeEntries names up to three entries of a directory, and how many
// more there are.
func describeEntries(des []fs.DirEntry) string {
	var names []string
	for i, de := range des {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(des)-3))
			break
		}
		names = append(names, de.Name())
	}
	return strings.Join(names, ", ")
}

// containingMount is the mount dir lies on: the last mounted of those
// with the longest mount point at or above it.
func containingMount(mounts []MountEntry, dir string) *MountEntry {
	var best *MountEntry
	for i := range mounts {
		p := filepath.Clean(mounts[i].Point)
		if within(dir, p) && (best == nil || len(p) >= len(filepath.Clean(best.Point))) {
			best = &mounts[i]
		}
	}
	return best
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
