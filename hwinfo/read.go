package hwinfo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrRoot reports a hardware root (--root, GHW_CHROOT) that does not exist
// or is not a directory. Nothing can be read from it, so Read fails instead
// of returning an empty host.
var ErrRoot = errors.New("hardware root is not a directory")

// Options tunes Read.
type Options struct {
	// Root is the directory that stands in for "/": "" or "/" reads the
	// live machine, anything else a fixture tree or a bind-mounted host.
	// When Root is empty, GHW_CHROOT is honoured as ghw does.
	Root string
	// All includes devices hidden by default: unused loop devices, zram,
	// ram disks, optical drives and other zero-sized devices.
	All bool
	// Logger receives diagnostics (including ghw's own warnings, demoted to
	// debug). Nil discards them.
	Logger *slog.Logger
	// ReadFile reads one file of the tree by its full path; nil is
	// os.ReadFile. A test puts a sysfs attribute's own failures (EINVAL,
	// ENODATA) here, which no file in a fixture tree can give.
	ReadFile func(name string) ([]byte, error)
	// DeviceMapper answers device-mapper table and status queries (the
	// cached volumes' kinds and counters); nil is the kernel's ioctl on
	// the live root and none elsewhere (a fixture then shows no dm caches
	// unless its captured dmsetup output is given as DMSetupText).
	DeviceMapper DeviceMapper
}

// Read returns the identity and disks of the host under opt.Root.
//
// It never executes programs and only opens block devices read-only (and
// only on the live root). Sources and fallbacks, in order:
//   - hostname: proc/sys/kernel/hostname, then etc/hostname;
//   - OS: etc/os-release, then usr/lib/os-release, plus etc/redhat-release;
//   - kernel: proc/sys/kernel/osrelease (never uname, so fixtures work);
//   - CPU: ghw (proc/cpuinfo with sys/devices/system/cpu topology), then
//     proc/cpuinfo alone (physical id, core id, cpu cores);
//   - memory: proc/meminfo MemTotal (usable memory, as free(1) shows);
//   - board, system, BIOS: ghw over sys/class/dmi/id;
//   - hypervisor: DMI vendor/product strings, sys/hypervisor/type, the
//     cpuinfo "hypervisor" flag, kvm-clock to tell KVM from QEMU TCG;
//   - container: proc/1/environ, run/systemd/container, run/.containerenv,
//     .dockerenv, proc/1/cgroup, the root mount in mountinfo;
//   - disks: the sys/block list; sizes, sector sizes and queue limits from
//     sysfs; bus from the device's sysfs path, then udev ID_BUS; model,
//     serial, firmware and WWN from the udev database (run/udev/data), else
//     sysfs (device/model, vendor, rev, vpd_pg80, wwid, NVMe serial and
//     firmware_rev, virtio vendor 0x1af4), else what ghw's block reader
//     found; filesystems and partition entries from udev, else, on the live
//     root only, the signatures hwinfo/probe reads from the device, else the
//     type it is mounted with (mountinfo) or "swap" (proc/swaps);
//   - mounts from proc/self/mountinfo, swap from proc/swaps, holders from
//     sys/block/*/holders (dm name and uuid decide LVM, crypt, multipath);
//   - md arrays from sys/block/mdN/md (level, members and their state,
//     degraded, sync_action and sync_completed: all proc/mdstat shows) and
//     udev's MD_NAME;
//   - LVM volume groups from the VG metadata on the PVs' own devices (the
//     label, the metadata area and its newest text, read by hwinfo/probe
//     from /dev under the root: the live devices, or a fixture's captured
//     bytes) and the active LVs from sys/block/dm-N/dm (uuid "LVM-...");
//     without readable PVs, the active LVs alone (VolumeGroup.Source);
//   - cached volumes from the device-mapper tables and statuses of dm
//     devices (the DM_TABLE_STATUS ioctl, read-only, as root; or
//     Options.DeviceMapper) and bcache's sysfs (sys/block/bcacheN/bcache,
//     its cache set and stats_total).
//
// Unreadable or malformed files leave their fields empty and add a line to
// Host.Warnings; a field is never guessed. The only error is ErrRoot (and
// the context's error when it is cancelled).
func Read(ctx context.Context, opt Options) (*Host, error) {
	root, err := resolveRoot(opt.Root)
	if err != nil {
		return nil, err
	}
	logger := opt.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &reader{root: root, live: root == "/", all: opt.All, log: logger, readFileFn: opt.ReadFile, dmSource: opt.DeviceMapper}
	h := &Host{Schema: Schema}

	r.readIdentity(h)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.Disks = r.readDisks(ctx, h)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.checkCrypttab(h)
	h.Warnings = r.warnings
	return h, nil
}

func resolveRoot(root string) (string, error) {
	if root == "" {
		root = os.Getenv("GHW_CHROOT")
	}
	if root == "" {
		root = "/"
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", root, ErrRoot)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("root %s: %w: %w", root, ErrRoot, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("root %s: %w", root, ErrRoot)
	}
	return abs, nil
}

// reader carries the root and the warnings of one Read.
type reader struct {
	root     string
	live     bool
	all      bool
	log      *slog.Logger
	warnings []string
	warned   map[string]bool
	// readFileFn is Options.ReadFile; nil reads with os.ReadFile.
	readFileFn func(name string) ([]byte, error)
	// pvOpenFailed: a PV could not be opened (not root); the others are
	// not tried, so the warning is said once.
	pvOpenFailed bool
	// cryptOpenFailed: the same for LUKS headers.
	cryptOpenFailed bool
	// dmSource is Options.DeviceMapper; dmFailed: the kernel refused a
	// device-mapper query (not root), said once.
	dmSource DeviceMapper
	dmFailed bool
}

// path maps an absolute host path ("/proc/cpuinfo") into the root.
func (r *reader) path(p string) string {
	return filepath.Join(r.root, p)
}

// warn records a warning once per distinct text.
func (r *reader) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r.warned == nil {
		r.warned = map[string]bool{}
	}
	if r.warned[msg] {
		return
	}
	r.warned[msg] = true
	r.warnings = append(r.warnings, msg)
	r.log.Debug("hwinfo warning", "msg", msg) // the caller shows Host.Warnings itself
}

// rel shows a host path as the user knows it, without the fixture root.
func (r *reader) rel(p string) string {
	if r.root == "/" {
		return p
	}
	return r.path(p)
}

// readFile reads the file at host path p under the root: every file read of
// the tree goes through it.
func (r *reader) readFile(p string) ([]byte, error) {
	if r.readFileFn != nil {
		return r.readFileFn(r.path(p))
	}
	return os.ReadFile(r.path(p))
}

// readString reads a small text file and trims it. A missing file returns
// "", false without a warning; other read errors warn.
func (r *reader) readString(p string) (string, bool) {
	b, err := r.readFile(p)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.warn("read %s: %v", r.rel(p), unwrapPath(err))
		}
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// readAttr reads an optional sysfs attribute of a device (an identifier, a
// VPD page). A missing attribute and one the kernel answers with "there is
// no such value" are silent; other read errors warn.
func (r *reader) readAttr(p string) ([]byte, bool) {
	b, err := r.readFile(p)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) && !noValue(err) {
			r.warn("read %s: %v", r.rel(p), unwrapPath(err))
		}
		return nil, false
	}
	return b, true
}

// readAttrString is readAttr for a text attribute, trimmed.
func (r *reader) readAttrString(p string) (string, bool) {
	b, ok := r.readAttr(p)
	return strings.TrimSpace(string(b)), ok
}

// enotsupp is the kernel-internal ENOTSUPP (524), which some drivers let
// through to user space.
const enotsupp = syscall.Errno(524)

// noValue tells the errors with which a sysfs attribute says "this device
// has no such value" from real failures: a SCSI device whose VPD page 0x83
// holds no designator the kernel can use answers wwid with EINVAL
// (scsi_vpd_lun_id), one without the page at all with ENXIO; VPD pages a
// device did not return and attributes a driver cannot answer give ENODATA,
// EOPNOTSUPP or ENOTSUPP.
func noValue(err error) bool {
	for _, e := range []error{syscall.EINVAL, syscall.ENXIO, syscall.ENODATA, syscall.EOPNOTSUPP, enotsupp} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// readUint reads a decimal number from a sysfs attribute. Missing files
// and empty ones (an inactive md array's raid_disks) are silent; malformed
// content warns.
func (r *reader) readUint(p string) (uint64, bool) {
	s, ok := r.readString(p)
	if !ok || s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		r.warn("%s: malformed number %q", r.rel(p), clip(s))
		return 0, false
	}
	return v, true
}

// readBool reads a 0/1 sysfs attribute.
func (r *reader) readBool(p string) bool {
	v, ok := r.readUint(p)
	return ok && v != 0
}

func (r *reader) exists(p string) bool {
	_, err := os.Lstat(r.path(p))
	return err == nil
}

// unwrapPath drops the *PathError wrapper, whose path repeats what the
// warning already says.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// clip shortens garbage quoted into a warning.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
