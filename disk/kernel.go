package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
)

// kernelPart is a partition as the kernel knows it (sysfs units: 512-byte
// sectors whatever the logical sector size).
type kernelPart struct {
	name          string
	number        int
	start, length uint64 // bytes
}

// kernelPartitions lists the partitions the kernel has registered for disk.
func kernelPartitions(h Host, roots hwinfo.Roots, disk string) ([]kernelPart, error) {
	dir := roots.SysPath("block", disk)
	ents, err := h.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", disk, err)
	}
	var out []kernelPart
	for _, e := range ents {
		pdir := filepath.Join(dir, e.Name())
		num, err := readUint(h, filepath.Join(pdir, "partition"))
		if err != nil {
			continue // not a partition directory
		}
		start, err1 := readUint(h, filepath.Join(pdir, "start"))
		size, err2 := readUint(h, filepath.Join(pdir, "size"))
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("read partition %s: %w", e.Name(), err)
		}
		out = append(out, kernelPart{name: e.Name(), number: int(num), start: start * 512, length: size * 512})
	}
	return out, nil
}

func readUint(h Host, path string) (uint64, error) {
	b, err := h.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// syncKernelPartitions makes the kernel's view of disk equal the plan: it
// asks for a re-read first (a kernel with a GPT parser does it all), then
// deletes stale and adds missing partitions with BLKPG, as partx does, and
// finally checks start and size of every planned partition in sysfs.
// It reports whether BLKPG had to step in.
func (a *applier) syncKernelPartitions(f Device, p *Plan) (usedBLKPG bool, err error) {
	disk := filepath.Base(p.Device)
	if p.Table == nil {
		// Nothing was written: when the kernel already has exactly the
		// planned partitions, a re-read would only churn them (and udev).
		if have, err := kernelPartitions(a.host, a.roots, disk); err == nil && len(have) == len(p.Partitions) && a.checkKernelPartitions(p) == nil {
			return false, nil
		}
	}
	if err := f.RereadPartitions(); err != nil {
		a.log.Debug("re-read partition table failed, falling back to BLKPG", "device", p.Device, "err", err)
	}
	have, err := kernelPartitions(a.host, a.roots, disk)
	if err != nil {
		return false, err
	}
	want := map[int]PartPlan{}
	for _, pp := range p.Partitions {
		want[pp.Number] = pp
	}
	present := map[int]bool{}
	for _, kp := range have {
		pp, ok := want[kp.number]
		if ok && kp.start == pp.StartBytes && kp.length == pp.SizeBytes {
			present[kp.number] = true
			continue
		}
		a.log.Info("delete stale kernel partition", "device", p.Device, "partition", kp.name, "start", kp.start, "size", kp.length)
		if err := f.DeletePartition(kp.number); err != nil {
			return true, fmt.Errorf("remove stale kernel partition %s: %w", kp.name, err)
		}
		usedBLKPG = true
	}
	for _, pp := range p.Partitions {
		if present[pp.Number] {
			continue
		}
		a.log.Info("add kernel partition (BLKPG)", "device", p.Device, "partition", pp.Name, "start", pp.StartBytes, "size", pp.SizeBytes)
		if err := f.AddPartition(pp.Number, pp.StartBytes, pp.SizeBytes); err != nil {
			return true, fmt.Errorf("add kernel partition %s: %w", pp.Name, err)
		}
		usedBLKPG = true
	}
	if err := a.checkKernelPartitions(p); err != nil {
		return usedBLKPG, err
	}
	return usedBLKPG, nil
}

// checkKernelPartitions verifies sysfs start/size of every planned partition.
func (a *applier) checkKernelPartitions(p *Plan) error {
	have, err := kernelPartitions(a.host, a.roots, filepath.Base(p.Device))
	if err != nil {
		return err
	}
	for _, pp := range p.Partitions {
		ok := false
		for _, kp := range have {
			if kp.number == pp.Number {
				if kp.start != pp.StartBytes || kp.length != pp.SizeBytes || kp.name != pp.Name {
					return fmt.Errorf("kernel sees %s at %d+%d bytes, planned %s at %d+%d", kp.name, kp.start, kp.length, pp.Name, pp.StartBytes, pp.SizeBytes)
				}
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("kernel does not see partition %s", pp.Name)
		}
	}
	return nil
}

// waitDeviceNode waits for /dev/<name> to be the block device sysfs names.
// With udev running it settles the queue first; without udev (containers,
// minimal hosts) and no devtmpfs node after a short wait, it makes the node.
//
// udev watches whole disks: closing one that was written (the table, a
// wipe) makes udevd re-read its partition table, which removes and adds
// every partition again. So the partition can be missing from sysfs for a
// moment after the kernel had it: its device number is read only after
// the settle, and waited for like the node.
func (a *applier) waitDeviceNode(ctx context.Context, name string) error {
	udev := a.udevRunning()
	if udev {
		// Cut short by an interruption, it is no news: the last line says so.
		if out, err := a.host.Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil && ctx.Err() == nil {
			a.log.Warn("udevadm settle failed", "err", err, "output", string(out))
		}
	}
	wait := 500 * time.Millisecond
	if udev {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	devNum, err := a.host.ReadFile(a.roots.SysPath("class", "block", name, "dev"))
	for err != nil && errors.Is(err, fs.ErrNotExist) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		devNum, err = a.host.ReadFile(a.roots.SysPath("class", "block", name, "dev"))
	}
	if err != nil {
		return fmt.Errorf("device number of %s: %w", name, err)
	}
	var major, minor uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(devNum)), "%d:%d", &major, &minor); err != nil {
		return fmt.Errorf("device number of %s: %q: %w", name, devNum, err)
	}
	node := a.roots.DevPath(name)
	ok, err := a.host.WaitNode(ctx, node, major, minor, wait)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	if udev {
		return fmt.Errorf("udev did not create %s (%d:%d)", node, major, minor)
	}
	// A stale node (an earlier loop device's partition) would point mkfs
	// at the wrong device: replace it.
	if err := a.host.Remove(node); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace stale %s: %w", node, err)
	}
	a.log.Info("create device node", "node", node, "dev", fmt.Sprintf("%d:%d", major, minor))
	if err := a.host.MakeNode(node, major, minor); err != nil {
		return fmt.Errorf("create device node %s: %w", node, err)
	}
	return nil
}

func (a *applier) udevRunning() bool {
	_, err := a.host.Stat(a.roots.HostPath("run/udev/control"))
	return err == nil
}

// devNumber returns "major:minor" of a block device node.
func (a *applier) devNumber(path string) (string, error) {
	major, minor, err := a.host.DeviceNumber(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", major, minor), nil
}

// KernelPartitionNames are the kernel names of the partitions the kernel
// has registered for disk; none when it cannot tell.
func KernelPartitionNames(h Host, roots hwinfo.Roots, disk string) []string {
	parts, _ := kernelPartitions(h, roots, disk)
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	return names
}
