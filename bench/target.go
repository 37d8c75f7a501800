package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
)

// TestFileName is the file a directory target gets; the id keeps two runs
// in one directory apart and tells whose leftover a file is.
func TestFileName(id string) string { return "diskprep-bench." + id + ".tmp" }

// target is a resolved bench target: what the engine opens and what is
// known about the device and filesystem under it.
type target struct {
	ident record.Target
	path  string // the test file, the file, the device
	// open is what the engine opens: for a test file or a file, the open
	// file held since its checks (/proc/self/fd/N), never its name again;
	// else path.
	open    string
	fileDev uint64 // a file target's, when resolved
	fileIno uint64
	size    uint64 // current size of a file or device
	major   uint32
	minor   uint32
	haveDev bool
	// claimed: the caller holds the device (Options.Claims), so its own
	// exclusive open is no other user's.
	claimed  bool
	sectorSz uint64 // logical block size of the device, 0 when unknown
	disk     *hwinfo.Disk
	part     *hwinfo.Partition
	// roots are the live machine's sysfs and procfs: a target is always
	// live (the hardware root only stands in for the inventory).
	roots hwinfo.Roots
	// cacheDev is the cached volume under the target (its own device or
	// one it is built on), whose counters each repetition records; dm
	// answers its device-mapper queries (nil: the kernel's).
	cacheDev string
	dm       hwinfo.DeviceMapper
}

// resolveTarget classifies path and gathers its identity. Nothing is created.
func resolveTarget(path, id string, host *hwinfo.Host, roots hwinfo.Roots) (*target, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", path, err)
	}
	// Through a link of theirs (in /tmp, say), another user would choose
	// the device root reads (and, asked to, writes) or the directory its
	// test file goes in. Root's links (/dev/disk/by-id) are followed.
	real, err := hwinfo.FollowTrustedLinks(nil, abs)
	if errors.Is(err, hwinfo.ErrUntrustedLink) {
		return nil, &linkRefusal{target: path, err: err}
	}
	if err != nil {
		real = abs // said below, as the stat finds it
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, workload.Usagef("target %s does not exist", path)
	}
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", path, err)
	}
	t := &target{ident: record.Target{Path: abs}, roots: roots}
	switch m := fi.Mode(); {
	case m.IsDir():
		t.ident.Kind = record.KindDir
		// In the directory the links lead to: the test file is made
		// there without following a link again.
		t.path = filepath.Join(real, TestFileName(id))
		t.ident.TestFile = t.path
	case m.IsRegular():
		t.ident.Kind = record.KindFile
		t.path = abs
		t.size = uint64(fi.Size())
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			t.fileDev, t.fileIno = uint64(st.Dev), st.Ino
		}
	case m&os.ModeDevice != 0 && m&os.ModeCharDevice == 0:
		t.ident.Kind = record.KindDevice
		t.path = abs
		if t.size, err = deviceSize(roots, abs); err != nil {
			return nil, fmt.Errorf("target %s: %w", path, err)
		}
	default:
		return nil, workload.Usagef("target %s is not a directory, regular file or block device", path)
	}
	t.open = t.path
	t.major, t.minor, err = engine.DeviceOf(abs)
	t.haveDev = err == nil
	t.identify(host)
	return t, nil
}

// heldPath names an open file for the engine to open again: the file
// itself, whatever its name leads to now. The name of a file in a
// directory another user may write, opened again by root, could by then
// be that user's link, or hard link, to a file of root's.
func heldPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }

// hold opens a file target once, not following a link at its last part,
// checks it is still the file the checks were of, and has the engine open
// that open file from then on. The caller closes it after the run.
func (t *target) hold() (*os.File, error) {
	real, err := filepath.EvalSymlinks(t.path)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.path, err)
	}
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", t.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", t.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != t.fileDev || st.Ino != t.fileIno {
		unix.Close(fd)
		return nil, fmt.Errorf("will not use %s: it is no longer the file that was checked (replaced meanwhile): %w", t.path, ErrRefused)
	}
	f := os.NewFile(uintptr(fd), real)
	t.open = heldPath(f)
	return f, nil
}

// linkRefusal is the refusal (ErrRefused) of a target named through
// another user's link: it names the link and its owner.
type linkRefusal struct {
	target string
	err    error
}

func (e *linkRefusal) Error() string        { return "refusing to bench " + e.target + ": " + e.err.Error() }
func (e *linkRefusal) Unwrap() error        { return e.err }
func (e *linkRefusal) Is(target error) bool { return target == ErrRefused }

// where names the target in an error: the path given and, when that is
// not the device itself, the device under it ("/mnt/data (sdb1)",
// "/dev/mapper/data (dm-0)"), so that a failing disk is named whatever the
// target was.
func (t *target) where() string {
	if t.ident.Device == "" || filepath.Base(t.ident.Path) == t.ident.Device {
		return t.ident.Path
	}
	return t.ident.Path + " (" + t.ident.Device + ")"
}

// deviceSize reads a block device's size from sysfs, which needs no open of
// the device (so a disk that may not be opened is still judged, and refused,
// by what it is); it falls back to seeking to the end of the device.
func deviceSize(roots hwinfo.Roots, path string) (uint64, error) {
	if major, minor, err := engine.DeviceOf(path); err == nil {
		b, err := os.ReadFile(roots.SysPath("dev/block", fmt.Sprintf("%d:%d", major, minor), "size"))
		if sectors, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && perr == nil {
			return sectors * 512, nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// identify fills the device, disk and filesystem identity as far as known.
func (t *target) identify(host *hwinfo.Host) {
	found := t.haveDev && t.blockDevice()
	if m, ok := findMount(t.roots, t.ident.Path, t.major, t.minor, t.haveDev, t.ident.Kind == record.KindDevice); ok {
		t.ident.FSType = m.fstype
		t.ident.MountPoint = m.point
		t.ident.MountOptions = m.options
		t.ident.MountSource = m.source
		if t.ident.Kind != record.KindDevice {
			t.ident.Prepared = readPrepared(m.point)
		}
		// btrfs and other multi-device filesystems give files an anonymous
		// st_dev (0:NN); the mount's source names the real device.
		if !found && strings.HasPrefix(m.source, "/dev/") {
			var st unix.Stat_t
			if unix.Stat(m.source, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
				t.major, t.minor = unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))
				t.haveDev = t.blockDevice()
			}
		}
	}
	if host == nil || t.ident.Device == "" {
		return
	}
	t.disk, t.part = host.Device(t.ident.Device)
	if t.disk == nil {
		// A device-mapper or md device: identify the disk it is built on.
		for _, under := range underlying(t.roots, t.ident.Device) {
			if d, _ := host.Device(under); d != nil {
				t.disk = d
				break
			}
		}
	}
	if d := t.disk; d != nil {
		t.ident.Disk = d.Name
		t.ident.Vendor, t.ident.Model, t.ident.Serial = d.Vendor, d.Model, d.Serial
		t.ident.Firmware, t.ident.WWN = d.Firmware, d.WWN
		t.ident.Transport, t.ident.Media, t.ident.Rotational = d.Transport, d.Media, d.Rotational
		t.ident.Virtual, t.ident.VirtualBy = d.Virtual, d.VirtualBy
		t.ident.SizeBytes = d.SizeBytes
		t.ident.LogicalSectorBytes, t.ident.PhysicalSectorBytes = d.LogicalSectorBytes, d.PhysicalSectorBytes
	}
	t.ident.Stack = host.Stack(t.ident.Device)
	if t.disk != nil || len(t.ident.Stack) > 0 {
		t.ident.StackText = hwinfo.DescribeStack(t.ident.FSType, t.ident.Device, t.ident.Stack)
	}
	for _, l := range t.ident.Stack {
		if c := host.Cache(l.Device); c != nil {
			cv := *c
			t.ident.Cache, t.cacheDev = &cv, c.Device
			break
		}
	}
}

// cacheCounters reads the counters of the cached volume under the target
// now; nil when there is none or they cannot be read (the error says why).
func (t *target) cacheCounters() (*hwinfo.CacheCounters, error) {
	if t.cacheDev == "" {
		return nil, nil
	}
	cv, err := hwinfo.ReadCache(t.roots, t.dm, t.cacheDev)
	switch {
	case err != nil:
		return nil, err
	case cv == nil:
		return nil, fmt.Errorf("%s is no longer a cached volume", t.cacheDev)
	case cv.Counters == nil:
		return nil, fmt.Errorf("%s: the kernel's counters are not readable", t.cacheDev)
	}
	return cv.Counters, nil
}

// blockDevice names the block device major:minor from sysfs, with its
// logical sector size; false when sysfs does not know it.
func (t *target) blockDevice() bool {
	sys := t.roots.SysPath("dev/block", fmt.Sprintf("%d:%d", t.major, t.minor))
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return false
	}
	t.ident.Device = filepath.Base(real)
	queue := filepath.Join(real, "queue")
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		queue = filepath.Join(filepath.Dir(real), "queue")
	}
	t.sectorSz = readUint(filepath.Join(queue, "logical_block_size"))
	return true
}

// underlying lists the devices a stacked device sits on, depth first.
func underlying(roots hwinfo.Roots, dev string) []string {
	var out []string
	var walk func(string, int)
	walk = func(d string, depth int) {
		if depth > 8 {
			return
		}
		des, _ := os.ReadDir(roots.SysPath("class/block", d, "slaves"))
		for _, de := range des {
			out = append(out, de.Name())
			walk(de.Name(), depth+1)
		}
	}
	walk(dev, 0)
	return out
}

func readUint(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

type mountEntry struct {
	majmin  string
	point   string
	fstype  string
	source  string
	options string
}

// mounts reads the live mount table.
func mounts(roots hwinfo.Roots) []mountEntry {
	entries, err := roots.Mounts()
	if err != nil {
		return nil
	}
	out := make([]mountEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, mountEntry{
			majmin:  e.MajMin,
			point:   e.Point,
			fstype:  e.FSType,
			source:  e.Source,
			options: joinOptions(e.MountOptions, e.SuperOptions),
		})
	}
	return out
}

// joinOptions merges per-mount and superblock options without repeats.
func joinOptions(a, b string) string {
	seen := map[string]bool{}
	var out []string
	for _, o := range strings.Split(a+","+b, ",") {
		if o != "" && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}

// findMount returns the mount holding path: same device, longest mount point
// that is a prefix of path. For a device node, any mount of that device.
func findMount(roots hwinfo.Roots, path string, major, minor uint32, haveDev, isDevice bool) (mountEntry, bool) {
	mm := fmt.Sprintf("%d:%d", major, minor)
	var best mountEntry
	found := false
	for _, m := range mounts(roots) {
		if isDevice {
			if m.source == path || (haveDev && m.majmin == mm) {
				return m, true
			}
			continue
		}
		if haveDev && m.majmin != mm {
			continue
		}
		if !within(path, m.point) {
			continue
		}
		if !found || len(m.point) >= len(best.point) {
			best, found = m, true
		}
	}
	return best, found
}

// refuseUnmountedFstab refuses a directory or file target that lies under
// a mount point the fstab names but nothing is mounted at: the file system
// meant to be measured did not mount (nofail lets a boot go on without
// it), and the test would measure the file system below, the system disk
// often, under the data disk's path.
func (t *target) refuseUnmountedFstab() error {
	b, err := os.ReadFile(t.roots.HostPath("etc/fstab"))
	if err != nil {
		return nil // no fstab, nothing it promises
	}
	lines, err := fstab.Parse(b)
	if err != nil {
		return nil
	}
	mounted := map[string]bool{}
	for _, m := range mounts(t.roots) {
		mounted[m.point] = true
	}
	for _, l := range lines {
		e := l.Entry
		if e == nil || !strings.HasPrefix(e.File, "/") || e.VFSType == "swap" {
			continue
		}
		point := filepath.Clean(e.File)
		if mounted[point] || len(point) <= len(t.ident.MountPoint) || !within(t.ident.Path, point) {
			continue
		}
		below := t.ident.MountPoint
		if t.ident.Device != "" {
			below += " on " + t.ident.Device
		}
		return fmt.Errorf("%s is under %s, where the fstab mounts %s (%s), but nothing is mounted there: the test would measure %s instead; mount it first (mount %s): %w",
			t.ident.Path, point, e.Spec, e.VFSType, below, point, ErrRefused)
	}
	return nil
}

func within(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}

// readPrepared reads the marker `diskprep prepare` leaves in a filesystem's
// root; nil when there is none or it is unreadable (the record is still
// complete without it).
func readPrepared(mountPoint string) *record.Prepared {
	m, err := hwinfo.ReadMarker(mountPoint)
	if err != nil || m.FS == "" {
		return nil
	}
	return &record.Prepared{FSType: m.FS, UUID: m.UUID, MkfsArgv: m.MkfsArgv, MkfsVersion: m.MkfsVersion,
		MountOptions: m.MountOpts, PreparedAt: m.PreparedAt}
}

// deviceBusy reports why the device at path must not be written: a system
// disk, or in use by hwinfo's in-use check (mounted, itself or a partition;
// swap; held by a stacked device such as LVM, MD, dm-crypt; locked by
// another diskprep; opened exclusively by someone, the kernel's own answer
// to O_EXCL). The inventory first, then the live machine: the inventory may
// be stale, sysfs and mountinfo are live.
func (t *target) deviceBusy() string {
	if t.disk != nil && t.disk.System {
		why := strings.Join(t.disk.SystemReasons, "; ")
		if why == "" {
			why = "it holds the running system"
		}
		return fmt.Sprintf("%s is a system disk (%s)", t.disk.Name, why)
	}
	if why := t.inventoryBusy(); why != "" {
		return why
	}
	name, majmin := "", ""
	if t.haveDev && t.ident.Device != "" {
		name, majmin = t.ident.Device, fmt.Sprintf("%d:%d", t.major, t.minor)
	}
	for _, u := range t.roots.LiveUses(name, majmin, t.path) {
		if u.Kind == hwinfo.UseOpen && t.claimed {
			continue
		}
		return useText(u, t.path)
	}
	return ""
}

// useText says what u, a use of the device at path, is.
func useText(u hwinfo.Use, path string) string {
	switch u.Kind {
	case hwinfo.UseHeld:
		return fmt.Sprintf("%s is held by %s", u.Device, u.Holder.Name)
	case hwinfo.UseMounted:
		return fmt.Sprintf("%s is mounted on %s", u.Source, u.Point)
	case hwinfo.UseSwap:
		return fmt.Sprintf("%s is in use as swap", u.Source)
	case hwinfo.UseOpen:
		return fmt.Sprintf("%s is in use (exclusive open refused)", path)
	default:
		return u.String()
	}
}

// inventoryBusy is the first use the hwinfo inventory knows of the device
// (a partition, or the disk and its partitions).
func (t *target) inventoryBusy() string {
	var uses []hwinfo.Use
	switch d := t.disk; {
	case t.part != nil:
		uses = t.part.Uses()
	case d != nil && d.Name == t.ident.Device:
		uses = d.Uses()
	}
	if len(uses) == 0 {
		return ""
	}
	switch u := uses[0]; u.Kind {
	case hwinfo.UseMounted:
		return fmt.Sprintf("%s is mounted on %s", u.Device, u.Point)
	case hwinfo.UseSwap:
		return fmt.Sprintf("%s is in use as swap", u.Device)
	case hwinfo.UseHeld:
		return fmt.Sprintf("%s is held by %s", u.Device, u.Holder.Name)
	default:
		return u.String()
	}
}

// freeBytes is the space an unprivileged writer may still use in dir.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// claimedIn says whether one of claims holds the target's device.
func (t *target) claimedIn(claims []*Claim) bool {
	for _, c := range claims {
		if t.haveDev && c.on(t.major, t.minor) {
			return true
		}
	}
	return false
}
