package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelPart is a partition as the kernel knows it (sysfs units: 512-byte
// sectors whatever the logical sector size).
type kernelPart struct {
	name          string
	number        int
	start, length uint64 // bytes
}

// kernelPartitions lists the partitions the kernel has registered for disk.
func kernelPartitions(sysDir, disk string) ([]kernelPart, error) {
	dir := filepath.Join(sysDir, "block", disk)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", disk, err)
	}
	var out []kernelPart
	for _, e := range ents {
		pdir := filepath.Join(dir, e.Name())
		num, err := readUint(filepath.Join(pdir, "partition"))
		if err != nil {
			continue // not a partition directory
		}
		start, err1 := readUint(filepath.Join(pdir, "start"))
		size, err2 := readUint(filepath.Join(pdir, "size"))
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("read partition %s: %w", e.Name(), err)
		}
		out = append(out, kernelPart{name: e.Name(), number: int(num), start: start * 512, length: size * 512})
	}
	return out, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

func blkpg(fd uintptr, op int32, pno int32, start, length uint64) error {
	part := unix.BlkpgPartition{Start: int64(start), Length: int64(length), Pno: pno}
	arg := unix.BlkpgIoctlArg{Op: op, Datalen: int32(unsafe.Sizeof(part)), Data: (*byte)(unsafe.Pointer(&part))}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.BLKPG, uintptr(unsafe.Pointer(&arg)))
	if errno != 0 {
		return errno
	}
	return nil
}

// syncKernelPartitions makes the kernel's view of disk equal the plan: it
// asks for a re-read first (a kernel with a GPT parser does it all), then
// deletes stale and adds missing partitions with BLKPG, as partx does, and
// finally checks start and size of every planned partition in sysfs.
// It reports whether BLKPG had to step in.
func (a *applier) syncKernelPartitions(f *os.File, p *Plan) (usedBLKPG bool, err error) {
	disk := filepath.Base(p.Device)
	if p.Table == nil {
		// Nothing was written: when the kernel already has exactly the
		// planned partitions, a re-read would only churn them (and udev).
		if have, err := kernelPartitions(a.sysDir, disk); err == nil && len(have) == len(p.Partitions) && a.checkKernelPartitions(p) == nil {
			return false, nil
		}
	}
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0); err != nil {
		a.log.Debug("re-read partition table failed, falling back to BLKPG", "device", p.Device, "err", err)
	}
	have, err := kernelPartitions(a.sysDir, disk)
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
		if err := blkpg(f.Fd(), unix.BLKPG_DEL_PARTITION, int32(kp.number), 0, 0); err != nil {
			return true, fmt.Errorf("remove stale kernel partition %s: %w", kp.name, err)
		}
		usedBLKPG = true
	}
	for _, pp := range p.Partitions {
		if present[pp.Number] {
			continue
		}
		a.log.Info("add kernel partition (BLKPG)", "device", p.Device, "partition", pp.Name, "start", pp.StartBytes, "size", pp.SizeBytes)
		if err := blkpg(f.Fd(), unix.BLKPG_ADD_PARTITION, int32(pp.Number), pp.StartBytes, pp.SizeBytes); err != nil {
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
	have, err := kernelPartitions(a.sysDir, filepath.Base(p.Device))
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
func (a *applier) waitDeviceNode(ctx context.Context, name string) error {
	devNum, err := os.ReadFile(filepath.Join(a.sysDir, "class", "block", name, "dev"))
	if err != nil {
		return fmt.Errorf("device number of %s: %w", name, err)
	}
	var major, minor uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(devNum)), "%d:%d", &major, &minor); err != nil {
		return fmt.Errorf("device number of %s: %q: %w", name, devNum, err)
	}
	want := unix.Mkdev(major, minor)
	node := filepath.Join(a.devDir, name)
	isRight := func() bool {
		var st unix.Stat_t
		return unix.Stat(node, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == want
	}
	udev := a.udevRunning()
	if udev {
		if out, err := a.runner.Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil {
			a.log.Warn("udevadm settle failed", "err", err, "output", string(out))
		}
	}
	wait := 500 * time.Millisecond
	if udev {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for !isRight() {
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if isRight() {
		return nil
	}
	if udev {
		return fmt.Errorf("udev did not create %s (%d:%d)", node, major, minor)
	}
	// A stale node (an earlier loop device's partition) would point mkfs
	// at the wrong device: replace it.
	if err := os.Remove(node); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace stale %s: %w", node, err)
	}
	a.log.Info("create device node", "node", node, "dev", fmt.Sprintf("%d:%d", major, minor))
	if err := unix.Mknod(node, unix.S_IFBLK|0o660, int(want)); err != nil {
		return fmt.Errorf("create device node %s: %w", node, err)
	}
	return nil
}

func (a *applier) udevRunning() bool {
	_, err := os.Stat(filepath.Join(a.root, "run/udev/control"))
	return err == nil
}

func deviceSize(f *os.File) (uint64, error) {
	var size uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&size)))
	if errno != 0 {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), errno)
	}
	return size, nil
}

func logicalSector(f *os.File) (uint64, error) {
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET)
	if err != nil {
		return 0, fmt.Errorf("sector size of %s: %w", f.Name(), err)
	}
	return uint64(n), nil
}

// devNumber returns "major:minor" of a block device node.
func devNumber(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return "", fmt.Errorf("%s is not a block device", path)
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), nil
}
