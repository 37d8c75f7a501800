package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// LiveHost is the Host of the running machine: programs through its
// Runner, files through the os package, the kernel through ioctls.
type LiveHost struct {
	// Runner runs programs; nil is ExecRunner.
	Runner Runner
	// noLoopConfigure takes the pre-5.8 attach path (LOOP_SET_FD), for its
	// test.
	noLoopConfigure bool
}

var _ Host = (*LiveHost)(nil)

// Run implements Runner.
func (h *LiveHost) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if h.Runner == nil {
		return ExecRunner{}.Run(ctx, name, args...)
	}
	return h.Runner.Run(ctx, name, args...)
}

// RunInput implements InputRunner, when its Runner does.
func (h *LiveHost) RunInput(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	if h.Runner == nil {
		return ExecRunner{}.RunInput(ctx, stdin, name, args...)
	}
	if r, ok := h.Runner.(InputRunner); ok {
		return r.RunInput(ctx, stdin, name, args...)
	}
	return nil, noInput(name)
}

func (*LiveHost) ReadFile(path string) ([]byte, error)             { return os.ReadFile(path) }
func (*LiveHost) ReadDir(path string) ([]fs.DirEntry, error)       { return os.ReadDir(path) }
func (*LiveHost) Readlink(path string) (string, error)             { return os.Readlink(path) }
func (*LiveHost) EvalSymlinks(path string) (string, error)         { return filepath.EvalSymlinks(path) }
func (*LiveHost) Stat(path string) (fs.FileInfo, error)            { return os.Stat(path) }
func (*LiveHost) Lstat(path string) (fs.FileInfo, error)           { return os.Lstat(path) }
func (*LiveHost) Remove(path string) error                         { return os.Remove(path) }
func (*LiveHost) MkdirAll(path string, perm fs.FileMode) error     { return os.MkdirAll(path, perm) }
func (*LiveHost) EditFstab(path string, change fstab.Change) error { return fstab.Edit(path, change) }

func (*LiveHost) WriteSys(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(value + "\n")); err != nil {
		f.Close()
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return f.Close()
}

func (*LiveHost) DeviceNumber(path string) (uint32, uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, 0, fmt.Errorf("%s is not a block device", path)
	}
	return unix.Major(st.Rdev), unix.Minor(st.Rdev), nil
}

func (*LiveHost) WriteFile(path string, data []byte, perm fs.FileMode) error {
	return atomicfile.Write(path, data, perm)
}

// imageMark is the extended attribute CreateImage sets: in the trusted
// namespace, which only a process with CAP_SYS_ADMIN can write, so a file
// another user made cannot pass for diskprep's.
const imageMark = "trusted.diskprep.image"

func (*LiveHost) CreateImage(path string, size uint64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(size))
	if err == nil {
		// A file system without trusted attributes (some network ones)
		// keeps the image, unmarked: release --remove-image then refuses
		// it, the safe way round.
		_ = unix.Fsetxattr(int(f.Fd()), imageMark, []byte("1"), 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (*LiveHost) ImageMade(path string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(path, imageMark, buf)
	return err == nil && string(buf[:n]) == "1"
}

func (*LiveHost) EmptyImage(path string, size uint64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return err
	}
	if err := f.Truncate(int64(size)); err != nil {
		return err
	}
	return f.Sync()
}

func (*LiveHost) Lock(path, what string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	return flockFile(path, what)
}

func (h *LiveHost) AttachLoop(image string, sector uint64) (string, error) {
	return attachLoop("/dev", image, sector, !h.noLoopConfigure)
}

func (*LiveHost) DetachLoop(dev string) error { return detachLoop(dev) }

func (*LiveHost) OpenDevice(path string, write bool) (Device, error) {
	mode := os.O_RDONLY
	if write {
		mode = os.O_RDWR | os.O_EXCL
	}
	f, err := os.OpenFile(path, mode, 0)
	if err != nil {
		return nil, err
	}
	return liveDevice{f}, nil
}

func (*LiveHost) MakeNode(path string, major, minor uint32) error {
	return unix.Mknod(path, unix.S_IFBLK|0o660, int(unix.Mkdev(major, minor)))
}

func (*LiveHost) WaitNode(ctx context.Context, path string, major, minor uint32, patience time.Duration) (bool, error) {
	want := unix.Mkdev(major, minor)
	isRight := func() bool {
		var st unix.Stat_t
		return unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == want
	}
	deadline := time.Now().Add(patience)
	for !isRight() {
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true, nil
}

func (*LiveHost) Unmount(point string) error { return unix.Unmount(point, 0) }

// liveDevice is an open block device node.
type liveDevice struct{ *os.File }

// ReadAt reads what is on the device now, not what its page cache kept
// (hwinfo.ReadFresh): the guard and the damage check judge by it.
func (d liveDevice) ReadAt(b []byte, off int64) (int, error) { return hwinfo.ReadFresh(d.File, b, off) }

func (d liveDevice) Size() (uint64, error) {
	var size uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, d.Fd(), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&size)))
	if errno != 0 {
		return 0, fmt.Errorf("size of %s: %w", d.Name(), errno)
	}
	return size, nil
}

func (d liveDevice) LogicalSector() (uint64, error) {
	n, err := unix.IoctlGetInt(int(d.Fd()), unix.BLKSSZGET)
	if err != nil {
		return 0, fmt.Errorf("sector size of %s: %w", d.Name(), err)
	}
	return uint64(n), nil
}

func (d liveDevice) LockAgainstUdev(patience time.Duration) error {
	deadline := time.Now().Add(patience)
	for {
		err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d liveDevice) RereadPartitions() error {
	return unix.IoctlSetInt(int(d.Fd()), unix.BLKRRPART, 0)
}

func (d liveDevice) AddPartition(number int, start, length uint64) error {
	return blkpg(d.Fd(), unix.BLKPG_ADD_PARTITION, int32(number), start, length)
}

func (d liveDevice) DeletePartition(number int) error {
	return blkpg(d.Fd(), unix.BLKPG_DEL_PARTITION, int32(number), 0, 0)
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

func flockFile(path, what string) (func(), error) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if held[path] > 0 {
		held[path]++
		return func() {
			heldMu.Lock()
			held[path]--
			heldMu.Unlock()
		}, nil
	}
	unlock, err := flockFileOnce(path, what)
	if err != nil {
		return nil, err
	}
	held[path] = 1
	return func() {
		heldMu.Lock()
		defer heldMu.Unlock()
		if held[path]--; held[path] == 0 {
			delete(held, path)
			unlock()
		}
	}, nil
}

func flockFileOnce(path, what string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, LockHeldError(what, lockHolder(path), path)
		}
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		// Empty the pid before unlocking so a stale pid is never read.
		f.Truncate(0)
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// attachLoop attaches image to a free loop device with partition scanning
// and without autoclear (the device must outlive this process), directly
// with ioctls: LOOP_CONFIGURE, or LOOP_SET_FD + LOOP_SET_STATUS64 on kernels
// before 5.8.
func attachLoop(devDir, image string, sector uint64, configure bool) (string, error) {
	backing, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", image, err)
	}
	defer backing.Close()
	ctl, err := os.OpenFile(filepath.Join(devDir, "loop-control"), os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", image, err)
	}
	defer ctl.Close()
	var lastErr error
	// Another process may take the free device between GET_FREE and
	// CONFIGURE: that is EBUSY, and a retry gets the next one.
	for attempt := 0; attempt < 10; attempt++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("attach %s: find a free loop device: %w", image, err)
		}
		dev := filepath.Join(devDir, fmt.Sprintf("loop%d", n))
		lf, err := openLoopNode(dev, n)
		if err != nil {
			return "", fmt.Errorf("attach %s: %w", image, err)
		}
		err = configureLoop(lf, backing, image, sector, configure)
		lf.Close()
		if err == nil {
			return dev, nil
		}
		lastErr = err
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	return "", fmt.Errorf("attach %s: %w", image, lastErr)
}

// openLoopNode opens /dev/loopN, waiting briefly for devtmpfs or udev.
func openLoopNode(dev string, n int) (*os.File, error) {
	for i := 0; ; i++ {
		f, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err == nil || !errors.Is(err, os.ErrNotExist) || i >= 100 {
			if err != nil && errors.Is(err, os.ErrNotExist) {
				if merr := unix.Mknod(dev, unix.S_IFBLK|0o660, int(unix.Mkdev(7, uint32(n)))); merr == nil {
					return os.OpenFile(dev, os.O_RDWR, 0)
				}
			}
			return f, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// configureLoop attaches with LOOP_CONFIGURE when configure (false in tests
// of the pre-5.8 path), else or when the kernel does not know it with the
// two-step attach.
func configureLoop(lf, backing *os.File, image string, sector uint64, configure bool) error {
	var info unix.LoopInfo64
	info.Flags = unix.LO_FLAGS_PARTSCAN
	copy(info.File_name[:len(info.File_name)-1], image)
	cfg := unix.LoopConfig{Fd: uint32(backing.Fd()), Info: info}
	if sector != 512 {
		cfg.Size = uint32(sector) // the kernel's block_size field
	}
	var err error = unix.ENOTTY
	if configure {
		err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
	}
	if err == nil || errors.Is(err, unix.EBUSY) {
		return err
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return fmt.Errorf("LOOP_CONFIGURE: %w", err)
	}
	// Kernels before 5.8 (CentOS 7 and 8) know only the two-step attach.
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_FD, int(backing.Fd())); err != nil {
		return fmt.Errorf("LOOP_SET_FD: %w", err)
	}
	if err := unix.IoctlLoopSetStatus64(int(lf.Fd()), &info); err != nil {
		unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
		return fmt.Errorf("LOOP_SET_STATUS64: %w", err)
	}
	if sector != 512 {
		if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_BLOCK_SIZE, int(sector)); err != nil {
			unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
			return fmt.Errorf("LOOP_SET_BLOCK_SIZE %d: %w", sector, err)
		}
	}
	return nil
}

// detachLoop drops the partitions the kernel has for dev and detaches it.
func detachLoop(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	defer f.Close()
	parts, _ := kernelPartitions(&LiveHost{}, hwinfo.Roots{}, filepath.Base(dev))
	for _, kp := range parts {
		err := blkpg(f.Fd(), unix.BLKPG_DEL_PARTITION, int32(kp.number), 0, 0)
		// EBUSY while udev probes the partition (blkid has it open for a
		// moment after it appeared or was written): wait that out.
		for i := 0; i < 100 && errors.Is(err, unix.EBUSY); i++ {
			time.Sleep(50 * time.Millisecond)
			err = blkpg(f.Fd(), unix.BLKPG_DEL_PARTITION, int32(kp.number), 0, 0)
		}
		if err != nil {
			return fmt.Errorf("detach %s: remove partition %s: %w", dev, kp.name, err)
		}
	}
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	f.Close()
	// While another process has the device open (udev probing it after
	// our writes, as in a QEMU guest), the kernel defers the detach to the
	// last close: wait for it, so that "detached" is true when said.
	backing := filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file")
	for i := 0; i < 100; i++ {
		if b, err := os.ReadFile(backing); err != nil || strings.TrimSpace(string(b)) == "" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("detach %s: still attached 5s after LOOP_CLR_FD (another process holds it open)", dev)
}

// HostOrLive is pl.Host, or the live machine when nil.
func (pl Planner) HostOrLive() Host {
	if pl.Host == nil {
		return &LiveHost{}
	}
	return pl.Host
}
