package disk

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

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
