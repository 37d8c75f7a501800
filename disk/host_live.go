package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
