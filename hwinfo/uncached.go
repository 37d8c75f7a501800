package hwinfo

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openUncached opens a block device for reading around the page cache
// (O_DIRECT), falling back to a plain read-only open where the file does
// not take it (a regular file on tmpfs, in tests). A whole disk's cached
// blocks are not its partitions': a file system made on a partition
// leaves the disk's cache as it was, and a probe that read the disk while
// mkfs was writing (udev's, another diskprep's) leaves a half-made
// superblock there, which a buffered read would take for the disk's
// content.
func openUncached(path string) (io.ReaderAt, io.Closer, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, nil, err
		}
		return f, f, nil
	}
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	return uncachedReader{f}, f, nil
}

// directAlign is the alignment of O_DIRECT reads: offsets, lengths and the
// buffer's address, a multiple of every logical sector size.
const directAlign = 4096

// uncachedReader reads an O_DIRECT file at any offset and length: whole
// aligned blocks into an aligned buffer, the part asked for copied out.
type uncachedReader struct{ f *os.File }

func (u uncachedReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	start := off &^ (directAlign - 1)
	end := (off + int64(len(p)) + directAlign - 1) &^ (directAlign - 1)
	raw := make([]byte, end-start+directAlign)
	pad := int((directAlign - uintptr(unsafe.Pointer(&raw[0]))%directAlign) % directAlign)
	buf := raw[pad : pad+int(end-start)]
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(int(u.f.Fd()), buf[n:], start+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err == unix.EINVAL && n == 0 {
			// A device whose alignment is not ours: read it through the
			// cache after all, as any file.
			if fl, ferr := unix.FcntlInt(u.f.Fd(), unix.F_GETFL, 0); ferr == nil {
				unix.FcntlInt(u.f.Fd(), unix.F_SETFL, fl&^unix.O_DIRECT)
			}
			return u.f.ReadAt(p, off)
		}
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: u.f.Name(), Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	have := n - int(off-start)
	if have <= 0 {
		return 0, io.EOF
	}
	copied := copy(p, buf[off-start:min(n, len(buf))])
	if copied < len(p) {
		return copied, io.EOF
	}
	return copied, nil
}
