// Package hosttest is a recording fake of disk.Host: a machine in memory
// with block devices (their bytes, the partitions the kernel registered, an
// O_EXCL claim), loop devices, a mount table, a file system (sysfs, /dev,
// /etc/fstab, diskprep's state) and the programs disk runs (mkfs writes a
// superblock the prober recognises, mount mounts). Every effect is kept, in
// order, with its arguments, so a test asserts exactly what Apply or
// release did, and that a refusal wrote nothing, without root.
package hosttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// Effect is one call on the Host.
type Effect struct {
	Op    string   // "run", "open", "write", "BLKPG-add", "unmount", "edit-fstab" ...
	Args  []string // as given
	Write bool     // it changes the machine (a disk, a file, the kernel's state)
	Err   string   // it failed, changing nothing
}

// String is the effect as a golden file line: "! " marks a write that
// happened, " -> error" one that failed.
func (e Effect) String() string {
	mark := "  "
	if e.Write && e.Err == "" {
		mark = "! "
	}
	s := strings.TrimRight(mark+e.Op+" "+strings.Join(e.Args, " "), " ")
	if e.Err != "" {
		s += " -> " + e.Err
	}
	return s
}

// Host is the fake machine. The zero value is not usable: use New.
type Host struct {
	mu  sync.Mutex
	fs  *vfs
	log []Effect
	// stdin is what RunInput gives the program it runs, nil otherwise.
	stdin   []byte
	devs    map[string]*blockDev // by kernel name
	mounts  []mount
	locks   map[string]string // lock path -> pid of another diskprep holding it
	held    map[string]int    // locks this process holds
	missing map[string]bool   // programs not installed
	noMod   map[string]bool   // kernel modules this kernel has not
	fail    map[string]error  // "unmount /data" -> the error that effect returns
	nextDM  uint32
	crashAt int // CrashAfter; -1: off

	// The plans run (planrun.go): all, those under way (innermost
	// last), the writes made outside any, and where the last effect
	// was kept besides the log.
	runs      []*PlanRun
	open      []*PlanRun
	unplanned []Effect
	lastKept  *[]Effect
	others    int // ByOthers under way

	// The storage stacks (stacks.go): arrays and logical volumes by
	// kernel name, LVM's physical volumes by node, active swap areas.
	stacks     map[string]*stackDev
	pvs        map[string]*lvmPV
	swaps      map[string]bool
	nextMD     int
	removedLVs []string
	inactive   map[string]*inactiveLV // "VG/LV" of groups made inactive
	luks       map[string]*luksVol    // LUKS2 volumes by UUID (crypt.go)
	// bcache (cache.go): registered backing devices by partition name,
	// cache sets by UUID.
	bcacheB        map[string]*bcacheBacking
	bcacheS        map[string]*bcacheSet
	nextBcacheUUID int

	// GPTParser makes BLKRRPART register the partitions of the table, as
	// a kernel with a GPT parser does; without it only BLKPG does (the
	// kernel of diskprep's test machine).
	GPTParser bool
}

type mount struct {
	dev    *blockDev
	point  string
	fstype string
	opts   string
	// covered is the directory the mount hides, back in place once
	// unmounted; nil for MountOther's, which hide nothing.
	covered *node
}

// blockDev is a disk, a loop device or a partition of one.
type blockDev struct {
	name         string
	major, minor uint32
	size         uint64
	sector       uint64
	store        *sparse
	offset       int64     // a partition's start on its disk
	disk         *blockDev // a partition's disk
	number       int
	parts        map[int]*blockDev
	image        string // a loop device's backing file
	claimed      bool   // someone else has it open O_EXCL
	exclusive    bool   // opened O_EXCL now
	serial, wwn  string
	model        string
	holders      []hwinfo.Holder
	nextPartNode uint32
	rotational   bool
	// files is the root directory of the file system on the device,
	// seen at its mount point while mounted; nil until first mounted
	// after mkfs.
	files *node
}

// New is an empty machine: /sys, /dev (with loop-control), /proc, an
// /etc/fstab holding the root file system's line, /run/diskprep, and an
// init that is not systemd.
func New() *Host {
	h := &Host{fs: newVFS(), devs: map[string]*blockDev{}, locks: map[string]string{}, held: map[string]int{},
		missing: map[string]bool{}, noMod: map[string]bool{}, fail: map[string]error{}, crashAt: -1}
	for _, d := range []string{"/sys/block", "/sys/class/block", "/sys/dev/block", "/sys/devices/virtual/block", "/dev", "/proc/1", "/etc", "/run/diskprep", "/mnt", "/var/tmp"} {
		h.fs.mkdirAll(d)
	}
	h.fs.put("/dev/loop-control", &node{mode: fs.ModeDevice | fs.ModeCharDevice | 0o660, major: 10, minor: 237})
	h.fs.put("/dev/null", &node{mode: fs.ModeDevice | fs.ModeCharDevice | 0o666, major: 1, minor: 3})
	h.fs.put("/proc/1/comm", &node{mode: 0o444, data: []byte("init\n")})
	h.fs.put("/proc/swaps", &node{mode: 0o444, data: []byte("Filename\tType\tSize\tUsed\tPriority\n")})
	h.fs.put("/etc/fstab", &node{mode: 0o644, data: []byte("/dev/vda1\t/\txfs\tdefaults\t0 0\n")})
	return h
}

var (
	_ disk.Host         = (*Host)(nil)
	_ disk.PlanRecorder = (*Host)(nil)
)

func (h *Host) record(write bool, op string, args ...string) {
	if write && h.crashAt >= 0 {
		if h.crashAt == 0 {
			h.crashAt = -1
			h.crash()
			panic(Crash{Before: Effect{Op: op, Args: args, Write: true}})
		}
		h.crashAt--
	}
	e := Effect{Op: op, Args: args, Write: write}
	h.log = append(h.log, e)
	h.keep(e)
}

// Crash is what the fake panics with at the point CrashAfter chose: the
// process dies there, as under SIGKILL (its deferred unlocks run, as the
// kernel drops a dead process's locks and open files; nothing else does).
type Crash struct{ Before Effect }

// CrashAfter makes the machine "kill" its caller (panic with Crash) right
// before the write effect after the first n, so that exactly n writes
// happened; n < 0 turns it off.
func (h *Host) CrashAfter(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.crashAt = n
}

// failed marks the last effect as failed with err, and returns err.
func (h *Host) failed(err error) error {
	if err != nil && len(h.log) > 0 {
		msg := err.Error()
		var re *disk.RunError
		if errors.As(err, &re) {
			msg = fmt.Sprintf("exit %d", re.ExitCode)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		h.log[len(h.log)-1].Err = msg
		if k := h.lastKept; k != nil && len(*k) > 0 {
			(*k)[len(*k)-1].Err = msg
		}
	}
	return err
}

// Log is every effect so far, in order.
func (h *Host) Log() []Effect {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Effect(nil), h.log...)
}

// Writes is the effects of Log that changed the machine (failed ones
// changed nothing).
func (h *Host) Writes() []Effect {
	var out []Effect
	for _, e := range h.Log() {
		if e.Write && e.Err == "" {
			out = append(out, e)
		}
	}
	return out
}

// Transcript is Log as golden-file text, one effect a line.
func (h *Host) Transcript() string {
	var b strings.Builder
	for _, e := range h.Log() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// ResetLog forgets the effects so far (a test's setup).
func (h *Host) ResetLog() {
	h.mu.Lock()
	h.log = nil
	h.mu.Unlock()
}

// Disk is a whole disk of the fake machine, as a test sets it up.
type Disk struct {
	Name         string // sdb
	Minor        uint32 // of major 8
	SizeBytes    uint64
	SectorBytes  uint64 // logical; 512 when 0
	Model        string
	Serial, WWN  string
	Rotational   bool
	PhysicalSize uint64
}

// AddDisk attaches an empty disk.
func (h *Host) AddDisk(d Disk) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sector := d.SectorBytes
	if sector == 0 {
		sector = 512
	}
	h.addDev(&blockDev{name: d.Name, major: 8, minor: d.Minor, size: d.SizeBytes, sector: sector, store: newSparse(),
		parts: map[int]*blockDev{}, serial: d.Serial, wwn: d.WWN, model: d.Model, nextPartNode: d.Minor + 1, rotational: d.Rotational})
}

// addDev makes the kernel's view of a device: sysfs and its /dev node.
func (h *Host) addDev(b *blockDev) {
	h.devs[b.name] = b
	sys := "/sys/devices/virtual/block/" + b.name
	if b.disk != nil {
		sys = "/sys/devices/virtual/block/" + b.disk.name + "/" + b.name
		h.fs.put(sys+"/partition", &node{mode: 0o444, data: fmt.Appendf(nil, "%d\n", b.number)})
		h.fs.put(sys+"/start", &node{mode: 0o444, data: fmt.Appendf(nil, "%d\n", b.offset/512)})
	} else {
		h.fs.put("/sys/block/"+b.name, &node{mode: fs.ModeSymlink | 0o777, link: sys})
		h.fs.put(sys+"/queue/logical_block_size", &node{mode: 0o444, data: fmt.Appendf(nil, "%d\n", b.sector)})
		h.fs.mkdirAll(sys + "/holders")
		if b.image != "" {
			h.fs.put(sys+"/loop/backing_file", &node{mode: 0o444, data: []byte(b.image + "\n")})
		}
	}
	h.fs.put(sys+"/dev", &node{mode: 0o444, data: fmt.Appendf(nil, "%d:%d\n", b.major, b.minor)})
	h.fs.put(sys+"/size", &node{mode: 0o444, data: fmt.Appendf(nil, "%d\n", b.size/512)})
	h.fs.put("/sys/class/block/"+b.name, &node{mode: fs.ModeSymlink | 0o777, link: sys})
	h.fs.put(fmt.Sprintf("/sys/dev/block/%d:%d", b.major, b.minor), &node{mode: fs.ModeSymlink | 0o777, link: sys})
	h.fs.put("/dev/"+b.name, &node{mode: fs.ModeDevice | 0o660, major: b.major, minor: b.minor})
}

func (h *Host) dropDev(b *blockDev) {
	delete(h.devs, b.name)
	sys := "/sys/devices/virtual/block/" + b.name
	if b.disk != nil {
		sys = "/sys/devices/virtual/block/" + b.disk.name + "/" + b.name
		delete(b.disk.parts, b.number)
	} else {
		h.fs.removeAll("/sys/block/" + b.name)
	}
	h.fs.removeAll(sys)
	h.fs.removeAll("/sys/class/block/" + b.name)
	h.fs.removeAll(fmt.Sprintf("/sys/dev/block/%d:%d", b.major, b.minor))
	h.fs.removeAll("/dev/" + b.name)
}

// addPart registers partition number of d with the kernel.
func (h *Host) addPart(d *blockDev, number int, start, length uint64) *blockDev {
	major, minor := d.major, d.nextPartNode
	if d.major == 7 {
		major = 259 // blkext, as the kernel numbers loop partitions
		minor = h.nextDM
		h.nextDM++
	}
	d.nextPartNode++
	p := &blockDev{name: disk.PartitionName(d.name, number), major: major, minor: minor, size: length, sector: d.sector,
		store: d.store, offset: d.offset + int64(start), disk: d, number: number}
	d.parts[number] = p
	h.addDev(p)
	return p
}

// Claim makes dev busy as another program would (an exclusive open of it
// fails with EBUSY) or releases it.
func (h *Host) Claim(name string, claimed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.devs[name].claimed = claimed
}

// Hold stacks a holder (LVM, md) on the disk or partition name, as the
// facts show it.
func (h *Host) Hold(name string, holder hwinfo.Holder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.devs[name]
	b.holders = append(b.holders, holder)
	b.claimed = true
	h.fs.mkdirAll(h.sysDir(b) + "/holders/" + holder.Name)
}

func (h *Host) sysDir(b *blockDev) string {
	if b.disk != nil {
		return "/sys/devices/virtual/block/" + b.disk.name + "/" + b.name
	}
	return "/sys/devices/virtual/block/" + b.name
}

// LockedBy makes another diskprep (pid) hold the lock file at path.
func (h *Host) LockedBy(path, pid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.locks[path] = pid
}

// Missing uninstalls a program.
func (h *Host) Missing(prog string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.missing[prog] = true
}

// NoModule makes module (modprobe's name: "dm-cache", "bcache") one this
// kernel neither has nor can load: modprobe fails on it, as on a kernel
// built without it or a machine without its package of modules.
func (h *Host) NoModule(module string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noMod[module] = true
}

// Fail makes the effect op with first argument arg return err
// ("unmount", "/data").
func (h *Host) Fail(op, arg string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail[op+" "+arg] = err
}

func (h *Host) failure(op, arg string) error { return h.fail[op+" "+arg] }

// WriteSignature writes raw bytes onto a device (a test's old filesystem).
func (h *Host) WriteSignature(name string, off int64, b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.devs[name]
	d.store.writeAt(b, d.offset+off)
}

// SetFile puts a file on the fake file system.
func (h *Host) SetFile(p string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fs.put(p, &node{mode: 0o644, data: append([]byte(nil), data...)})
}

// File returns a file's content; nil when missing.
func (h *Host) File(p string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, _, err := h.fs.resolve(p, true)
	if err != nil || n.mode&fs.ModeType != 0 {
		return nil
	}
	return append([]byte(nil), n.data...)
}

// MountOther mounts a file system diskprep did not make (another disk's)
// at point, creating the directory.
func (h *Host) MountOther(source string, point string) { h.MountOtherAs(source, point, "ext4", "rw") }

// MountOtherAs is MountOther with the file system type and mount options
// ("ro" for a read-only mount) given.
func (h *Host) MountOtherAs(source, point, fstype, opts string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fs.mkdirAll(point)
	other := &blockDev{name: strings.TrimPrefix(source, "/dev/"), major: 253, minor: 99}
	h.mounts = append(h.mounts, mount{dev: other, point: path.Clean(point), fstype: fstype, opts: opts})
}

// Symlink makes the symbolic link p to target, making p's parent
// directories.
func (h *Host) Symlink(target, p string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fs.put(p, &node{mode: fs.ModeSymlink | 0o777, link: target})
}

// Mkdir makes the directory p and its parents.
func (h *Host) Mkdir(p string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fs.mkdirAll(p)
}

// Mounted lists the mount points and what is mounted there ("/data /dev/sdb1").
func (h *Host) Mounted() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, m := range h.mounts {
		out = append(out, m.point+" /dev/"+m.dev.name)
	}
	return out
}

// Devices lists the kernel's block devices, sorted.
func (h *Host) Devices() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for n := range h.devs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// --- disk.Host ---

// Run runs the fake programs: mkfs.xfs and mkfs.ext4 (-V, or making the
// file system), mount, udevadm settle, systemctl daemon-reload.
func (h *Host) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out, err := h.run(ctx, name, args...)
	return out, h.failed(err)
}

// RunInput runs name as Run does, stdin read where the program reads it
// (cryptsetup --key-file -); the effect log has the argv, never stdin.
func (h *Host) RunInput(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stdin = stdin
	defer func() { h.stdin = nil }()
	out, err := h.run(ctx, name, args...)
	return out, h.failed(err)
}

func (h *Host) run(_ context.Context, name string, args ...string) ([]byte, error) {
	argv := append([]string{name}, args...)
	readOnly := len(args) == 1 && args[0] == "-V" || name == "udevadm" || stackReadOnly(name, args)
	h.record(!readOnly, "run", argv...)
	fail := func(code int, msg string) ([]byte, error) {
		return []byte(msg), &disk.RunError{Argv: argv, ExitCode: code, Stderr: msg, Err: fmt.Errorf("exit status %d", code)}
	}
	if h.missing[name] {
		return nil, &disk.RunError{Argv: argv, ExitCode: -1, Err: exec.ErrNotFound}
	}
	if err := h.failure("run", name); err != nil {
		return fail(1, err.Error())
	}
	switch name {
	case "mkfs.xfs", "mkfs.ext4":
		if readOnly {
			if name == "mkfs.xfs" {
				return []byte("mkfs.xfs version 6.1.0\n"), nil
			}
			return []byte("mke2fs 1.47.0 (5-Feb-2023)\n\tUsing EXT2FS Library version 1.47.0\n"), nil
		}
		return h.mkfs(name, args, fail)
	case "mount":
		return h.mount(args, fail)
	case "udevadm", "systemctl":
		return nil, nil
	}
	if out, err, ok := h.runStack(name, args, fail); ok {
		return out, err
	}
	return nil, &disk.RunError{Argv: argv, ExitCode: -1, Err: exec.ErrNotFound}
}

func (h *Host) mkfs(name string, args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	label, uuid := "", ""
	for i := 0; i < len(args)-1; i++ {
		switch {
		case args[i] == "-L":
			label = args[i+1]
		case args[i] == "-U":
			uuid = args[i+1]
		case args[i] == "-m" && strings.HasPrefix(args[i+1], "uuid="):
			uuid = strings.TrimPrefix(args[i+1], "uuid=")
		}
	}
	d, err := h.deviceAt(args[len(args)-1])
	if err != nil {
		return fail(1, err.Error())
	}
	if h.mountedDev(d) || d.claimed {
		return fail(1, d.name+" is in use")
	}
	sb, err := superblock(name, d.size, label, uuid)
	if err != nil {
		return fail(1, err.Error())
	}
	d.store.writeAt(sb.data, d.offset+sb.off)
	d.files = nil
	return nil, nil
}

func (h *Host) mount(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	fstype, opts := "", "rw"
	var pos []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-t":
			i++
			fstype = args[i]
		case "-o":
			i++
			opts = args[i]
		default:
			pos = append(pos, args[i])
		}
	}
	if len(pos) != 2 {
		return fail(1, "mount: bad usage")
	}
	d, err := h.deviceAt(pos[0])
	if err != nil {
		return fail(32, err.Error())
	}
	n, rp, err := h.fs.resolve(pos[1], true)
	if err != nil || !n.mode.IsDir() {
		return fail(32, "mount point "+pos[1]+" does not exist")
	}
	// What the directory holds is hidden while mounted; the file
	// system's own files show there instead, as on a real machine.
	parent, base, err := h.fs.parent(rp)
	if err != nil || base == "" {
		return fail(32, "mount point "+pos[1]+" cannot be mounted over")
	}
	if d.files == nil {
		d.files = newDir()
	}
	parent.kids[base] = d.files
	h.mounts = append(h.mounts, mount{dev: d, point: path.Clean(pos[1]), fstype: fstype, opts: opts, covered: n})
	return nil, nil
}

// deviceAt is the block device a node path names.
func (h *Host) deviceAt(p string) (*blockDev, error) {
	n, _, err := h.fs.resolve(p, true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	if n.mode&fs.ModeDevice == 0 || n.mode&fs.ModeCharDevice != 0 {
		return nil, fmt.Errorf("%s is not a block device", p)
	}
	for _, b := range h.devs {
		if b.major == n.major && b.minor == n.minor {
			return b, nil
		}
	}
	return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.ENXIO}
}

func (h *Host) mountedDev(b *blockDev) bool {
	for _, m := range h.mounts {
		if m.dev == b || m.dev.disk == b {
			return true
		}
	}
	return false
}

// logged says whether a read of p goes into the log: files, not the
// kernel's sysfs (many small reads that decide nothing in order).
func logged(p string) bool { return !strings.HasPrefix(path.Clean(p), "/sys/") }

func (h *Host) ReadFile(p string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if logged(p) {
		h.record(false, "read", p)
	}
	if path.Clean(p) == "/proc/self/mountinfo" {
		return []byte(h.mountinfo()), nil
	}
	if out, ok := h.bcacheRead(p); ok {
		return out, nil
	}
	n, _, err := h.fs.resolve(p, true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	if n.mode.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EISDIR}
	}
	if n.image != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EFBIG}
	}
	return append([]byte(nil), n.data...), nil
}

// mountinfo renders the mount table as the kernel does.
func (h *Host) mountinfo() string {
	var b strings.Builder
	b.WriteString("22 1 254:1 / / rw,relatime shared:1 - xfs /dev/vda1 rw\n")
	for i, m := range h.mounts {
		fmt.Fprintf(&b, "%d 22 %d:%d / %s %s shared:%d - %s /dev/%s rw\n", 30+i, m.dev.major, m.dev.minor, mangle(m.point), m.opts, 5+i, m.fstype, m.dev.name)
	}
	return b.String()
}

func mangle(s string) string {
	return strings.NewReplacer(" ", `\040`, "\t", `\011`, "\n", `\012`, `\`, `\134`).Replace(s)
}

func (h *Host) ReadDir(p string) ([]fs.DirEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	des, err := h.fs.readDir(p)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: p, Err: err}
	}
	return des, nil
}

func (h *Host) Readlink(p string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, _, err := h.fs.resolve(p, false)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: err}
	}
	if n.mode&fs.ModeSymlink == 0 {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: syscall.EINVAL}
	}
	return n.link, nil
}

func (h *Host) EvalSymlinks(p string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, rp, err := h.fs.resolve(p, true)
	if err != nil {
		return "", &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	return rp, nil
}

func (h *Host) Stat(p string) (fs.FileInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, _, err := h.fs.resolve(p, true)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	return fileInfo{name: path.Base(p), n: n}, nil
}

func (h *Host) Lstat(p string) (fs.FileInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, _, err := h.fs.resolve(p, false)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	return fileInfo{name: path.Base(p), n: n}, nil
}

func (h *Host) DeviceNumber(p string) (uint32, uint32, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, _, err := h.fs.resolve(p, true)
	if err != nil {
		return 0, 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if n.mode&fs.ModeDevice == 0 || n.mode&fs.ModeCharDevice != 0 {
		return 0, 0, fmt.Errorf("%s is not a block device", p)
	}
	return n.major, n.minor, nil
}

func (h *Host) WriteFile(p string, data []byte, perm fs.FileMode) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "write-file", p)
	defer func() { h.failed(err) }()
	if err := h.failure("write-file", p); err != nil {
		return err
	}
	d, base, err := h.fs.parent(p)
	if err != nil {
		return &fs.PathError{Op: "write", Path: p, Err: err}
	}
	d.kids[base] = &node{mode: perm, data: append([]byte(nil), data...)}
	return nil
}

// WriteSys writes a kernel attribute: the bcache ones are emulated
// (cache.go), any other is refused as sysfs refuses an unknown one.
func (h *Host) WriteSys(p, value string) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "write-sys", p, value)
	defer func() { h.failed(err) }()
	if err := h.failure("write-sys", p); err != nil {
		return err
	}
	if err := h.writeSys(p, value); err != nil {
		return &fs.PathError{Op: "write", Path: p, Err: err}
	}
	return nil
}

func (h *Host) Remove(p string) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "remove", p)
	defer func() { h.failed(err) }()
	if err := h.fs.remove(p); err != nil {
		return &fs.PathError{Op: "remove", Path: p, Err: err}
	}
	return nil
}

func (h *Host) MkdirAll(p string, perm fs.FileMode) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n, _, err := h.fs.resolve(p, true); err == nil && n.mode.IsDir() {
		return nil // nothing made: not an effect
	}
	h.record(true, "mkdir", p)
	var made []string // the directories made, given perm as the kernel would
	for q := path.Clean(p); q != "/"; q = path.Dir(q) {
		if _, _, err := h.fs.resolve(q, true); err != nil {
			made = append(made, q)
		}
	}
	if _, err := h.fs.mkdirAll(p); err != nil {
		return err
	}
	for _, q := range made {
		if n, _, err := h.fs.resolve(q, true); err == nil {
			n.mode = fs.ModeDir | perm
		}
	}
	return nil
}

// EditFstab edits the fake's fstab file as fstab.Edit does the real one:
// parse, change, and when there is a change the old file as the backup and
// the new one in its place.
func (h *Host) EditFstab(p string, change fstab.Change) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var old []byte
	n, _, err := h.fs.resolve(p, true)
	switch {
	case err == nil:
		old = n.data
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	lines, err := fstab.Parse(old)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	out, err := change(lines)
	if err != nil || out == nil {
		h.record(false, "edit-fstab", p, "unchanged")
		return err
	}
	h.record(true, "edit-fstab", p)
	if n != nil {
		h.fs.put(p+fstab.BackupSuffix, &node{mode: 0o644, data: old})
	}
	h.fs.put(p, &node{mode: 0o644, data: fstab.Render(out)})
	return nil
}

func (h *Host) CreateImage(p string, size uint64) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "create-image", p, strconv.FormatUint(size, 10))
	defer func() { h.failed(err) }()
	d, base, err := h.fs.parent(p)
	if err != nil {
		return &fs.PathError{Op: "open", Path: p, Err: err}
	}
	if _, ok := d.kids[base]; ok {
		return &fs.PathError{Op: "open", Path: p, Err: fs.ErrExist}
	}
	d.kids[base] = &node{mode: 0o600, image: newSparse(), size: int64(size), made: true}
	return nil
}

// ImageMade reports CreateImage's mark on the file at p, not following a
// link.
func (h *Host) ImageMade(p string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(false, "image-made", p)
	n, _, err := h.fs.resolve(p, false)
	return err == nil && n.made
}

// Chown gives the file at p to uid with mode perm (a file another user
// made, or left writable), for the guard's tests.
func (h *Host) Chown(p string, uid uint32, perm fs.FileMode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, _, err := h.fs.resolve(p, false)
	if err != nil {
		panic("hosttest: chown " + p + ": " + err.Error())
	}
	n.uid = uid
	n.mode = n.mode.Type() | perm
}

func (h *Host) EmptyImage(p string, size uint64) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "empty-image", p, strconv.FormatUint(size, 10))
	defer func() { h.failed(err) }()
	n, _, err := h.fs.resolve(p, true)
	if err != nil {
		return &fs.PathError{Op: "open", Path: p, Err: err}
	}
	n.image, n.size, n.data = newSparse(), int64(size), nil
	return nil
}

// AddImage puts an image file of size bytes on the fake file system.
func (h *Host) AddImage(p string, size uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fs.put(p, &node{mode: 0o644, image: newSparse(), size: int64(size)})
}

func (h *Host) Lock(p, what string) (func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(false, "lock", p)
	if pid, ok := h.locks[p]; ok {
		return nil, disk.LockHeldError(what, pid, p)
	}
	h.held[p]++
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.held[p]--; h.held[p] == 0 {
			delete(h.held, p)
		}
	}, nil
}

// Held lists the locks held now.
func (h *Host) Held() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for p := range h.held {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (h *Host) AttachLoop(image string, sector uint64) (_ string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "attach-loop", image, strconv.FormatUint(sector, 10))
	defer func() { h.failed(err) }()
	return h.attach(image, sector)
}

func (h *Host) attach(image string, sector uint64) (string, error) {
	n, _, err := h.fs.resolve(image, true)
	if err != nil || n.image == nil {
		return "", fmt.Errorf("attach %s: %w", image, fs.ErrNotExist)
	}
	i := 0
	for ; h.devs[fmt.Sprintf("loop%d", i)] != nil; i++ {
	}
	name := fmt.Sprintf("loop%d", i)
	h.addDev(&blockDev{name: name, major: 7, minor: uint32(i), size: uint64(n.size), sector: sector, store: n.image,
		parts: map[int]*blockDev{}, image: image})
	if h.GPTParser {
		h.scanTable(h.devs[name])
	}
	return "/dev/" + name, nil
}

// Attach attaches image to a loop device as another program (losetup)
// would: not an effect of the code under test.
func (h *Host) Attach(image string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	dev, err := h.attach(image, 512)
	if err != nil {
		panic("hosttest: " + err.Error())
	}
	return dev
}

func (h *Host) DetachLoop(dev string) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "detach-loop", dev)
	defer func() { h.failed(err) }()
	b, err := h.deviceAt(dev)
	if err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	if h.mountedDev(b) {
		return fmt.Errorf("detach %s: remove partition: %w", dev, syscall.EBUSY)
	}
	for _, p := range b.parts {
		h.dropDev(p)
	}
	h.dropDev(b)
	return nil
}

func (h *Host) OpenDevice(p string, write bool) (disk.Device, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	mode := "ro"
	if write {
		mode = "rw excl"
	}
	h.record(false, "open", p, mode)
	if n, _, err := h.fs.resolve(p, true); err == nil && n.image != nil && !write {
		// An image file, read to be probed.
		return &device{h: h, b: &blockDev{name: path.Base(p), size: uint64(n.size), sector: 512, store: n.image}, path: p}, nil
	}
	b, err := h.deviceAt(p)
	if err != nil {
		return nil, err
	}
	if write {
		busy := b.claimed || b.exclusive || h.mountedDev(b)
		busy = busy || h.holdersOf(b) || h.swaps[b.name]
		for _, part := range b.parts {
			busy = busy || part.claimed || part.exclusive || h.holdersOf(part) || h.swaps[part.name] || h.mountedDev(part)
		}
		if busy {
			return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.EBUSY}
		}
		b.exclusive = true
	}
	return &device{h: h, b: b, path: p, exclusive: write}, nil
}

func (h *Host) MakeNode(p string, major, minor uint32) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "mknod", p, fmt.Sprintf("%d:%d", major, minor))
	defer func() { h.failed(err) }()
	d, base, err := h.fs.parent(p)
	if err != nil {
		return err
	}
	if _, ok := d.kids[base]; ok {
		return &fs.PathError{Op: "mknod", Path: p, Err: fs.ErrExist}
	}
	d.kids[base] = &node{mode: fs.ModeDevice | 0o660, major: major, minor: minor}
	return nil
}

func (h *Host) WaitNode(_ context.Context, p string, major, minor uint32, _ time.Duration) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(false, "wait-node", p, fmt.Sprintf("%d:%d", major, minor))
	n, _, err := h.fs.resolve(p, true)
	return err == nil && n.mode&fs.ModeDevice != 0 && n.major == major && n.minor == minor, nil
}

func (h *Host) Unmount(point string) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(true, "unmount", point)
	defer func() { h.failed(err) }()
	if err := h.failure("unmount", point); err != nil {
		return err
	}
	for i := len(h.mounts) - 1; i >= 0; i-- {
		if m := h.mounts[i]; m.point == path.Clean(point) {
			if m.covered != nil {
				if parent, base, err := h.fs.parent(m.point); err == nil {
					parent.kids[base] = m.covered
				}
			}
			h.mounts = append(h.mounts[:i], h.mounts[i+1:]...)
			return nil
		}
	}
	return syscall.EINVAL
}

// scanTable registers the partitions of d's table, as a kernel with a GPT
// parser does on BLKRRPART or a partition-scanning loop attach.
func (h *Host) scanTable(d *blockDev) {
	for _, p := range d.parts {
		h.dropDev(p)
	}
	t, err := probe.ReadTable(&reader{d: d}, int64(d.size), int(d.sector))
	if err != nil || t == nil {
		return
	}
	for _, e := range t.Partitions {
		h.addPart(d, e.Number, e.StartLBA*uint64(t.SectorSize), e.Sectors*uint64(t.SectorSize))
	}
}

// reader reads a device's bytes (for the fake's own probing).
type reader struct{ d *blockDev }

func (r *reader) ReadAt(b []byte, off int64) (int, error) {
	if off >= int64(r.d.size) {
		return 0, io.EOF
	}
	n := len(b)
	if rest := int64(r.d.size) - off; int64(n) > rest {
		n = int(rest)
	}
	r.d.store.readAt(b[:n], r.d.offset+off)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}
