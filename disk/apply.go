package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/sys/unix"

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

func (a *applier) systemdIsInit() bool {
	b, err := a.host.ReadFile(a.roots.HostPath("proc/1/comm"))
	return err == nil && strings.TrimSpace(string(b)) == "systemd"
}
