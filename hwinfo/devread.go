package hwinfo

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// openHeader opens the device at path read-only to read a header from it,
// and says how many bytes it holds: size when known, else its end. A
// fixture's regular file may hold only the start of the device; offsets past
// it then read as missing, not as garbage.
//
// A failure other than absence is warned once for all devices of a kind
// (an unprivileged run can open none of them): *failed is set, and what
// stays unknown is said in the warning.
func (r *reader) openHeader(path string, size uint64, failed *bool, unknown string) (*os.File, uint64, bool) {
	if *failed {
		return nil, 0, false
	}
	f, err := os.OpenFile(r.path(path), os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.warn("open %s: %v: %s unknown; run as root with access to the devices", path, unwrapPath(err), unknown)
			*failed = true
		}
		return nil, 0, false
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && (size == 0 || uint64(fi.Size()) < size) {
		size = uint64(fi.Size())
	}
	if size == 0 {
		if n, err := f.Seek(0, io.SeekEnd); err == nil {
			size = uint64(n)
		}
	}
	return f, size, true
}
