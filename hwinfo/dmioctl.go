package hwinfo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The device-mapper ioctl interface (include/uapi/linux/dm-ioctl.h), the
// one dmsetup and lvs use: DM_TABLE_STATUS on /dev/mapper/control returns
// a device's targets with their status text, or with DM_STATUS_TABLE_FLAG
// their table text. Read-only; it needs CAP_SYS_ADMIN. sysfs has neither.

const (
	dmIoctlSize     = 312 // sizeof(struct dm_ioctl)
	dmTargetSpecLen = 40  // sizeof(struct dm_target_spec)
	dmNameLen       = 128
	// DM_TABLE_STATUS = _IOWR(0xfd, 12, struct dm_ioctl).
	dmTableStatus = 3<<30 | dmIoctlSize<<16 | 0xfd<<8 | 12

	dmStatusTableFlag = 1 << 4
	dmBufferFullFlag  = 1 << 8
	dmNoFlushFlag     = 1 << 11 // a status must not flush anything
)

// liveDM reads tables and statuses through /dev/mapper/control under the
// device root.
type liveDM struct{ control string }

func (d liveDM) Table(name string) ([]DMTarget, error)  { return d.query(name, true) }
func (d liveDM) Status(name string) ([]DMTarget, error) { return d.query(name, false) }

func (d liveDM) query(name string, table bool) ([]DMTarget, error) {
	if len(name) >= dmNameLen || name == "" {
		return nil, fmt.Errorf("device-mapper name %q: bad length", name)
	}
	f, err := os.OpenFile(d.control, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 16 << 10
	for {
		buf := make([]byte, size)
		le := binary.LittleEndian // the ioctl is in host order; diskprep is amd64/arm64
		le.PutUint32(buf[0:], 4)  // version 4.0.0
		le.PutUint32(buf[12:], uint32(size))
		le.PutUint32(buf[16:], dmIoctlSize)
		flags := uint32(dmNoFlushFlag)
		if table {
			flags |= dmStatusTableFlag
		}
		le.PutUint32(buf[28:], flags)
		copy(buf[48:48+dmNameLen], name)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), dmTableStatus, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
			return nil, fmt.Errorf("device-mapper status of %s: %w", name, e)
		}
		if le.Uint32(buf[28:])&dmBufferFullFlag != 0 && size < 4<<20 {
			size *= 4
			continue
		}
		return parseDMIoctl(buf, le)
	}
}

// parseDMIoctl reads the targets the kernel wrote after the header: each a
// dm_target_spec (sector_start, length, status, next, target_type[16])
// followed by its NUL-terminated text; next is the offset of the following
// spec from the start of the data.
func parseDMIoctl(buf []byte, le binary.ByteOrder) ([]DMTarget, error) {
	if len(buf) < dmIoctlSize {
		return nil, fmt.Errorf("device-mapper reply of %d bytes", len(buf))
	}
	start := int(le.Uint32(buf[16:]))
	count := int(le.Uint32(buf[20:]))
	var out []DMTarget
	off := start
	for i := 0; i < count; i++ {
		if off < start || off+dmTargetSpecLen > len(buf) {
			return nil, fmt.Errorf("device-mapper reply: target %d out of the buffer", i)
		}
		spec := buf[off:]
		t := DMTarget{Start: le.Uint64(spec[0:]), Length: le.Uint64(spec[8:])}
		t.Type = string(bytes.TrimRight(spec[24:40], "\x00"))
		text := spec[dmTargetSpecLen:]
		if j := bytes.IndexByte(text, 0); j >= 0 {
			text = text[:j]
		}
		t.Args = string(text)
		out = append(out, t)
		next := int(le.Uint32(spec[20:]))
		if i == count-1 {
			break
		}
		if next <= off-start {
			return nil, fmt.Errorf("device-mapper reply: target %d points back", i)
		}
		off = start + next
	}
	return out, nil
}
