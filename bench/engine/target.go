package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/hwinfo"
)

// target is what Run learns about Path before any job opens it.
type target struct {
	blockDev bool
	size     int64 // file size or device size
	memAlign int64 // buffer address alignment for O_DIRECT
	offAlign int64 // offset and length alignment for O_DIRECT
	noDirect bool  // statx says the file cannot do direct I/O
}

// inspect learns about path, reading roots' sysfs for what the file itself
// does not say.
func inspect(roots hwinfo.Roots, path string) (*target, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("%w: target %s does not exist", ErrParams, path)
		}
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	t := &target{}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		t.blockDev = true
		sz, err := blockDevSize(path)
		if err != nil {
			return nil, err
		}
		t.size = sz
	case unix.S_IFREG:
		t.size = st.Size
	default:
		return nil, fmt.Errorf("%w: target %s is neither a regular file nor a block device", ErrParams, path)
	}
	// STATX_DIOALIGN (Linux 6.1) gives the exact requirements; zero values
	// in a set mask mean the file cannot do direct I/O at all.
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_DIOALIGN, &stx); err == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
		if stx.Dio_offset_align == 0 {
			t.noDirect = true
			t.memAlign, t.offAlign = 1, 1
			return t, nil
		}
		t.memAlign, t.offAlign = int64(stx.Dio_mem_align), int64(stx.Dio_offset_align)
		return t, nil
	}
	lbs := int64(512)
	if t.blockDev {
		if n, err := logicalBlockSize(path); err == nil {
			lbs = n
		}
	} else if n, err := sysfsLogicalBlockSize(roots, unix.Major(st.Dev), unix.Minor(st.Dev)); err == nil {
		lbs = n
	}
	t.memAlign, t.offAlign = lbs, lbs
	return t, nil
}

func blockDevSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var sz uint64
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&sz))); errno != 0 {
		return 0, fmt.Errorf("BLKGETSIZE64 %s: %w", path, errno)
	}
	return int64(sz), nil
}

func logicalBlockSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET)
	if err != nil {
		return 0, fmt.Errorf("BLKSSZGET %s: %w", path, err)
	}
	return int64(n), nil
}

// sysfsLogicalBlockSize reads the logical block size of the device behind a
// filesystem; a partition's queue is its parent's.
func sysfsLogicalBlockSize(roots hwinfo.Roots, major, minor uint32) (int64, error) {
	dir := roots.SysPath("dev/block", fmt.Sprintf("%d:%d", major, minor))
	for _, p := range []string{"queue/logical_block_size", "../queue/logical_block_size"} {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("no logical block size for %d:%d", major, minor)
}

// openJob opens one job's descriptor with open (unix.Open when nil). It
// reports whether O_DIRECT took.
func openJob(open func(string, int, uint32) (int, error), path string, write, direct bool) (int, bool, error) {
	if open == nil {
		open = unix.Open
	}
	flags := unix.O_CLOEXEC | unix.O_RDONLY
	if write {
		flags = unix.O_CLOEXEC | unix.O_RDWR
	}
	if direct {
		fd, err := open(path, flags|unix.O_DIRECT, 0)
		if err == nil {
			return fd, true, nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return -1, false, fmt.Errorf("open %s: %w", path, err)
		}
	}
	fd, err := open(path, flags, 0)
	if err != nil {
		return -1, false, fmt.Errorf("open %s: %w", path, err)
	}
	return fd, false, nil
}

// directInEffect asks the kernel whether fd really has O_DIRECT set.
func directInEffect(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_DIRECT != 0
}

// DirectAlignment is the offset and block-size alignment O_DIRECT needs at
// path: a regular file or block device (STATX_DIOALIGN, else the logical
// block size), or a directory where a test file will be made (the logical
// block size of the device under it, else 512). ok is false when statx
// says the file cannot do direct I/O at all.
func DirectAlignment(roots hwinfo.Roots, path string) (align int64, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, false, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if n, err := sysfsLogicalBlockSize(roots, unix.Major(st.Dev), unix.Minor(st.Dev)); err == nil {
			return n, true, nil
		}
		return 512, true, nil
	}
	t, err := inspect(roots, path)
	if err != nil {
		return 0, false, err
	}
	return t.offAlign, !t.noDirect, nil
}
