package hosttest

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/disk"
)

// device is an open block device of the fake: reads are not logged,
// writes, syncs and kernel calls are.
type device struct {
	h         *Host
	b         *blockDev
	path      string
	exclusive bool
	pos       int64
	closed    bool
}

var _ disk.Device = (*device)(nil)

func (d *device) Name() string { return d.path }

func (d *device) ReadAt(b []byte, off int64) (int, error) {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	return (&reader{d: d.b}).ReadAt(b, off)
}

func (d *device) Read(b []byte) (int, error) {
	n, err := d.ReadAt(b, d.pos)
	d.pos += int64(n)
	return n, err
}

func (d *device) WriteAt(b []byte, off int64) (_ int, err error) {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	d.h.record(true, "write", d.path, fmt.Sprintf("%d+%d", off, len(b)))
	defer func() { d.h.failed(err) }()
	if !d.exclusive {
		return 0, &fs.PathError{Op: "write", Path: d.path, Err: syscall.EBADF}
	}
	if off < 0 || off+int64(len(b)) > int64(d.b.size) {
		return 0, &fs.PathError{Op: "write", Path: d.path, Err: syscall.ENOSPC}
	}
	d.b.store.writeAt(b, d.b.offset+off)
	return len(b), nil
}

func (d *device) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		d.pos = off
	case io.SeekCurrent:
		d.pos += off
	case io.SeekEnd:
		d.pos = int64(d.b.size) + off
	}
	return d.pos, nil
}

func (d *device) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(d.path), n: &node{mode: fs.ModeDevice | 0o660}}, nil
}

func (d *device) Close() error {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	if d.closed {
		return fs.ErrClosed
	}
	d.closed = true
	if d.exclusive {
		d.b.exclusive = false
	}
	return nil
}

func (d *device) Sync() error {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	d.h.record(true, "sync", d.path)
	return nil
}

func (d *device) Size() (uint64, error)          { return d.b.size, nil }
func (d *device) LogicalSector() (uint64, error) { return d.b.sector, nil }

func (d *device) LockAgainstUdev(time.Duration) error {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	d.h.record(false, "flock", d.path)
	return nil
}

func (d *device) RereadPartitions() error {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	d.h.record(true, "BLKRRPART", d.path)
	if d.h.GPTParser {
		d.h.scanTable(d.b)
	}
	return nil
}

func (d *device) AddPartition(number int, start, length uint64) (err error) {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	d.h.record(true, "BLKPG-add", d.path, strconv.Itoa(number), fmt.Sprintf("%d+%d", start, length))
	defer func() { d.h.failed(err) }()
	if _, ok := d.b.parts[number]; ok {
		return syscall.EBUSY
	}
	d.h.addPart(d.b, number, start, length)
	return nil
}

func (d *device) DeletePartition(number int) (err error) {
	d.h.mu.Lock()
	defer d.h.mu.Unlock()
	d.h.record(true, "BLKPG-del", d.path, strconv.Itoa(number))
	defer func() { d.h.failed(err) }()
	p, ok := d.b.parts[number]
	if !ok {
		return syscall.ENXIO
	}
	if d.h.mountedDev(p) {
		return syscall.EBUSY
	}
	d.h.dropDev(p)
	return nil
}
