package disk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
)

// ErrMissingProgram is wrapped when mkfs (or another needed program) is not
// installed; the message names the package to install.
var ErrMissingProgram = errors.New("program not installed")

// Deps are Apply's and release's ties to the host. Zero values mean the
// live machine.
type Deps struct {
	// Host carries out every effect; nil is the live machine (LiveHost
	// with Runner).
	Host Host
	// Runner runs programs on the live host when Host is nil; nil is
	// ExecRunner.
	Runner Runner
	Logger *slog.Logger // nil: discard
	// Roots are where the kernel interfaces (sys, proc, dev) and the host's
	// own files (run/diskprep: locks and attached loops, etc/fstab,
	// proc/1/comm, run/udev/control) are found; the zero value is the live
	// machine.
	Roots hwinfo.Roots
	// FstabPath overrides Roots.HostPath("etc/fstab").
	FstabPath string
	// Refresh re-reads the host facts just before writing, to re-check the
	// fingerprint and that nothing got mounted or stacked on the disk since
	// planning. Nil is hwinfo.Read on the live machine (Host and the
	// kernel roots unset); with another Host, nil skips that re-check (the
	// O_EXCL open and the on-disk size and table id are still checked).
	Refresh func(ctx context.Context) (*hwinfo.Host, error)
	// Now dates the records diskprep writes; nil is time.Now.
	Now func() time.Time
	// Progress gets the progress lines of long steps (a cache's dirty
	// blocks flushed before it is detached); nil: none shown.
	Progress io.Writer
	// Layers release what stands on the disks released (disk/stack);
	// nil releases disks and partitions only, and refuses a stack.
	Layers Layers
}

type applier struct {
	host      Host
	log       *slog.Logger
	roots     hwinfo.Roots
	runDir    string
	fstabPath string
	refresh   func(ctx context.Context) (*hwinfo.Host, error)
	now       func() time.Time
	progress  io.Writer
	// madePoints are the mount points this run created.
	madePoints map[string]bool
	// keepFacts has the guard read the facts once (a release's planning),
	// into factsRead.
	keepFacts bool
	factsRead *hwinfo.Host
	layers    Layers
}

func newApplier(d Deps) *applier {
	a := &applier{host: d.Host, log: d.Logger, roots: d.Roots, fstabPath: d.FstabPath, refresh: d.Refresh, now: d.Now, progress: d.Progress, madePoints: map[string]bool{}, layers: d.Layers}
	if a.host == nil {
		a.host = defaultHost(d.Runner)
		if a.refresh == nil && d.Roots.Sys == "" && d.Roots.Proc == "" && d.Roots.Dev == "" {
			// On the live machine the facts are always re-read before
			// writing, whoever calls.
			a.refresh = func(ctx context.Context) (*hwinfo.Host, error) {
				return hwinfo.Read(ctx, hwinfo.Options{All: true, Logger: a.log})
			}
		}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.fstabPath == "" {
		a.fstabPath = a.roots.HostPath("etc/fstab")
	}
	a.runDir = a.roots.StateDir()
	return a
}

// Apply carries out plan and nothing else: every GUID, LBA, argv and line
// was decided by PlanDisk. What Apply adds are checks that the world has not
// changed since (device lock, O_EXCL open, size, table id, signatures,
// fingerprint) and read-backs that what it wrote is there. Refusals wrap
// ErrRefused and happen before anything is written. On failure, mounts made
// and a loop device attached by this call are undone; the disk's new table
// or filesystem is left as it is, and the Result returned with the error
// says, once the table was written, how far it got (for the "interrupted
// after ..." line).
func Apply(ctx context.Context, plan *Plan, deps Deps) (res *Result, err error) {
	if plan == nil || plan.Schema != PlanSchema {
		return nil, fmt.Errorf("apply: not a %s plan", PlanSchema)
	}
	a := newApplier(deps)
	// Registered first, so it runs last: the undo of a failure is part
	// of the run.
	ended := RecordPlan(a.host, plan)
	defer func() { ended(err) }()
	res = &Result{Schema: ResultSchema, Device: plan.Device, Notes: append([]string(nil), plan.Notes...)}
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()

	// A missing mkfs must stop us before the table is written.
	versions := map[string]string{}
	for _, pp := range plan.Partitions {
		if pp.Mkfs == nil || versions[pp.Mkfs[0]] != "" {
			continue
		}
		v, err := a.mkfsVersion(ctx, pp)
		if err != nil {
			return nil, err
		}
		versions[pp.Mkfs[0]] = v
	}

	if err := a.preflight(plan); err != nil {
		return nil, err
	}

	p := plan
	if p.Image != nil {
		res.Image = p.Image.Path
		dev, unlock, err := a.prepareImage(p, res, &undo)
		if err != nil {
			return nil, err
		}
		defer unlock()
		p = p.Bind(dev)
		res.Device = p.Device
		res.Notes = append([]string(nil), p.Notes...)
	}

	devnum, err := a.devNumber(p.Device)
	if err != nil {
		return nil, Refuse(p.Device, err.Error())
	}
	unlock, err := a.lockDevice(p.Device, devnum)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if p.Destructive() && (p.Image == nil || !p.Image.Attach) {
		if err := a.recheckFacts(ctx, p); err != nil {
			return nil, err
		}
	}

	// O_EXCL on a block device fails with EBUSY while anything has it
	// claimed: a mounted partition, an LVM/MD/dm holder, another tool.
	f, err := a.host.OpenDevice(p.Device, p.Table != nil)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return nil, Refuse(p.Device, fmt.Sprintf("%s is in use (exclusive open: %v)", p.Device, unix.EBUSY))
		}
		return nil, fmt.Errorf("open %s: %w", p.Device, err)
	}
	defer f.Close()
	// udev (systemd >= 250) leaves a whole disk alone while a BSD lock is
	// held on it, so it does not probe or re-read a half-written table. The
	// lock goes with the close below, before waiting for device nodes.
	if err := f.LockAgainstUdev(5 * time.Second); err != nil {
		return nil, fmt.Errorf("lock %s against udev: %w", p.Device, err)
	}

	if p.Table != nil {
		if err := a.writeTable(f, p, res); err != nil {
			return res, err // res says whether the table was written
		}
	}
	usedBLKPG, err := a.syncKernelPartitions(f, p)
	if err != nil {
		return res, fmt.Errorf("make the kernel see the partitions of %s: %w", p.Device, err)
	}
	if usedBLKPG {
		res.Notes = append(res.Notes, "the kernel did not pick up the partitions from the table: added with BLKPG")
	}
	// Closing a disk it wrote wakes udev's watch, which has the kernel
	// re-read the table: every partition is dropped and added again, and
	// mkfs or the probe after it finds the node gone for a moment (ENXIO;
	// seen in a QEMU guest with udev, on loop devices and SATA disks). The
	// kernel refuses that re-read (EBUSY) while a partition is open, so each
	// is held open, read-only, until Apply returns. Where devtmpfs has no
	// node yet there is no udev to race with either.
	for _, pp := range p.Partitions {
		if held, err := a.host.OpenDevice(pp.Path, false); err == nil {
			defer held.Close()
		}
	}
	f.Close()

	fstabChanged := false
	for _, pp := range p.Partitions {
		if err := a.waitDeviceNode(ctx, pp.Name); err != nil {
			return res, err
		}
		pr, err := a.preparePartition(ctx, p, pp, versions[firstOr(pp.Mkfs)], &undo)
		res.Partitions = append(res.Partitions, pr)
		if err != nil {
			return res, err
		}
		fstabChanged = fstabChanged || pr.FstabAdded
		res.Changed = res.Changed || pr.Formatted || pr.Mounted || pr.FstabAdded || pr.Discarded
	}
	if fstabChanged && a.systemdIsInit() {
		if err := a.do(ctx, "reload systemd units", []string{"systemctl", "daemon-reload"}); err != nil {
			res.Notes = append(res.Notes, "systemctl daemon-reload failed: "+err.Error())
		}
	}
	res.Changed = res.Changed || res.TableWritten || res.LoopAttached || len(res.Wiped) > 0
	return res, nil
}

func firstOr(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return a[0]
}

// do runs one logged external step. Its failure is logged at Info, like
// its start and end: the error it returns is what the user sees, as one
// line; only --verbose shows the log (and the program's whole output).
func (a *applier) do(ctx context.Context, what string, argv []string) error {
	a.log.Info(what+": started", "argv", argv)
	out, err := a.host.Run(ctx, argv[0], argv[1:]...)
	if err != nil {
		a.log.Info(what+": failed", "argv", argv, "err", err, "output", string(out))
		return err
	}
	a.log.Info(what+": finished", "argv", argv)
	return nil
}

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

// prepareImage creates and attaches the image as planned and returns the
// loop device.
func (a *applier) prepareImage(p *Plan, res *Result, undo *[]func()) (string, func(), error) {
	im := p.Image
	unlock, err := a.lockImage(im.Path)
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, func(), error) {
		unlock()
		return "", nil, err
	}
	if im.Attach {
		if dev := a.loopFor(im.Path); dev != "" {
			return fail(Refuse(im.Path, fmt.Sprintf("%s was attached to %s since planning", im.Path, dev)))
		}
	}
	switch {
	case im.Create:
		a.log.Info("create image: started", "path", im.Path, "size", im.SizeBytes)
		if err := a.host.CreateImage(im.Path, im.SizeBytes); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fail(Refuse(im.Path, fmt.Sprintf("%s appeared since planning", im.Path)))
			}
			a.host.Remove(im.Path)
			return fail(fmt.Errorf("create image %s: %w", im.Path, err))
		}
		*undo = append(*undo, func() { a.host.Remove(im.Path) })
		a.log.Info("create image: finished", "path", im.Path)
	case im.Recreate:
		a.log.Info("recreate image: started", "path", im.Path, "size", im.SizeBytes)
		if err := a.host.EmptyImage(im.Path, im.SizeBytes); err != nil {
			return fail(fmt.Errorf("recreate image %s: %w", im.Path, err))
		}
		res.Wiped = append(res.Wiped, "image "+im.Path+" recreated empty")
	default:
		fi, err := a.host.Stat(im.Path)
		if err != nil || !fi.Mode().IsRegular() || uint64(fi.Size()) != im.SizeBytes {
			return fail(Refuse(im.Path, fmt.Sprintf("%s changed since planning", im.Path)))
		}
	}
	if !im.Attach {
		if bf := a.loopBackingFile(filepath.Base(p.Device)); bf != im.Path {
			return fail(Refuse(im.Path, fmt.Sprintf("%s no longer backs %s", im.Path, p.Device)))
		}
		// Adopts a device a killed run attached without recording it.
		a.readLoopState(p.Device)
		return p.Device, unlock, nil
	}
	a.log.Info("attach image: started", "path", im.Path, "sector", im.SectorBytes)
	if err := a.writeAttaching(im.Path); err != nil {
		return fail(fmt.Errorf("record attaching %s: %w", im.Path, err))
	}
	defer a.host.Remove(attachingPath(a.runDir, im.Path))
	dev, err := a.host.AttachLoop(im.Path, im.SectorBytes)
	if err != nil {
		a.log.Info("attach image: failed", "path", im.Path, "err", err)
		return fail(err)
	}
	a.log.Info("attach image: finished", "path", im.Path, "device", dev)
	*undo = append(*undo, func() {
		if err := a.host.DetachLoop(dev); err != nil {
			a.log.Error("detach after failure", "device", dev, "err", err)
		}
		a.host.Remove(loopStatePath(a.runDir, dev))
	})
	res.LoopAttached = true
	if err := a.writeLoopState(loopState{Device: dev, Image: im.Path, AttachedAt: a.now().UTC().Format(time.RFC3339), PID: os.Getpid()}); err != nil {
		return fail(fmt.Errorf("record loop device %s: %w", dev, err))
	}
	return dev, unlock, nil
}

// loopFor names the loop device backed by image, "" when none.
func (a *applier) loopFor(image string) string {
	des, _ := a.host.ReadDir(a.roots.SysPath("block"))
	for _, de := range des {
		if strings.HasPrefix(de.Name(), "loop") && a.loopBackingFile(de.Name()) == image {
			return "/dev/" + de.Name()
		}
	}
	return ""
}

// recheckFacts re-reads the host right before writing: same disk identity,
// nothing mounted, swapped on or stacked on it since planning.
func (a *applier) recheckFacts(ctx context.Context, p *Plan) error {
	if a.refresh == nil {
		return nil
	}
	h, err := a.refresh(ctx)
	if err != nil {
		return fmt.Errorf("re-read facts for %s: %w", p.Device, err)
	}
	d, part := h.Device(p.Device)
	if d == nil || part != nil {
		return Refuse(p.Device, fmt.Sprintf("%s is no longer listed as a disk", p.Device))
	}
	fp := Fingerprint{Serial: d.Serial, WWN: d.WWN, SizeBytes: d.SizeBytes, TableType: d.PartitionTable, TableID: d.PartitionTableID}
	if diff := fp.diff(p.Fingerprint); diff != "" {
		return Refuse(p.Device, fmt.Sprintf("%s changed since planning: %s", p.Device, diff))
	}
	return admitLayout(p.Device, d, p.Partitions, compareExisting(d, p.Partitions), true)
}

// writeTable checks the disk is still what was planned, wipes (if asked)
// and writes and verifies the GPT.
func (a *applier) writeTable(f Device, p *Plan, res *Result) error {
	t := p.Table
	size, err := f.Size()
	if err != nil {
		return err
	}
	lss, err := f.LogicalSector()
	if err != nil {
		return err
	}
	if size != p.Fingerprint.SizeBytes || lss != t.SectorBytes {
		return Refuse(p.Device, fmt.Sprintf("%s is now %d bytes with %d-byte sectors; planned %d bytes with %d-byte sectors", p.Device, size, lss, p.Fingerprint.SizeBytes, t.SectorBytes))
	}
	cur, terr := readTable(f, int64(size), lss)
	curType, curID := "", ""
	if cur != nil {
		curType, curID = cur.Type, cur.ID
	}
	if terr == nil && (!sameTableID(curID, p.Fingerprint.TableID) || curType != p.Fingerprint.TableType && p.Fingerprint.TableType != "") {
		return Refuse(p.Device, fmt.Sprintf("the partition table of %s changed since planning (now %s %s, planned %s %s)", p.Device, orNone(curType), curID, orNone(p.Fingerprint.TableType), p.Fingerprint.TableID))
	}
	sigs, err := a.signaturesToWipe(f, p, size)
	if err != nil {
		return err
	}
	if len(sigs) > 0 && !p.Wipe {
		var ev []string
		for _, s := range sigs {
			ev = append(ev, fmt.Sprintf("%s signature at offset %d", s.Type, s.Offset))
		}
		return notEmpty(p.Device, p.Device, ev)
	}
	for _, s := range sigs {
		a.log.Info("wipe signature: started", "device", p.Device, "type", s.Type, "offset", s.Offset, "bytes", len(s.Magic))
		if _, err := f.WriteAt(make([]byte, len(s.Magic)), s.Offset); err != nil {
			a.log.Info("wipe signature: failed", "device", p.Device, "err", err)
			return fmt.Errorf("wipe %s signature at %d on %s: %w", s.Type, s.Offset, p.Device, err)
		}
		res.Wiped = append(res.Wiped, fmt.Sprintf("%s at offset %d", s.Type, s.Offset))
	}
	if len(sigs) > 0 {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("wipe %s: %w", p.Device, err)
		}
		a.log.Info("wipe signatures: finished", "device", p.Device, "count", len(sigs))
	}
	a.log.Info("write GPT: started", "device", p.Device, "disk_guid", t.DiskGUID, "partitions", len(p.Partitions))
	if err := writeGPT(f, p); err != nil {
		a.log.Info("write GPT: failed", "device", p.Device, "err", err)
		return err
	}
	res.TableWritten = true
	if err := verifyGPT(f, p); err != nil {
		a.log.Info("write GPT: verify failed", "device", p.Device, "err", err)
		return err
	}
	a.log.Info("write GPT: finished", "device", p.Device)
	return nil
}

// signaturesToWipe finds every signature on the disk, and inside each
// planned partition's region, where a whole-disk probe cannot see an old
// filesystem that mkfs would trip over (or that would resurface).
func (a *applier) signaturesToWipe(f Device, p *Plan, size uint64) ([]signature, error) {
	sigs, err := ProbeSignatures(f, int64(size))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", p.Device, err)
	}
	for _, pp := range p.Partitions {
		in, err := ProbeSignatures(io.NewSectionReader(f, int64(pp.StartBytes), int64(pp.SizeBytes)), int64(pp.SizeBytes))
		if err != nil {
			return nil, fmt.Errorf("probe %s region of %s: %w", pp.Name, p.Device, err)
		}
		for _, s := range in {
			s.Offset += int64(pp.StartBytes)
			sigs = append(sigs, s)
		}
	}
	return sigs, nil
}

func sameTableID(a, b string) bool {
	norm := func(s string) string { return strings.TrimPrefix(strings.ToLower(s), "0x") }
	return norm(a) == norm(b)
}

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

func (a *applier) systemdIsInit() bool {
	b, err := a.host.ReadFile(a.roots.HostPath("proc/1/comm"))
	return err == nil && strings.TrimSpace(string(b)) == "systemd"
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
