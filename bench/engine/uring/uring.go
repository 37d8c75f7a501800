// Package uring is a minimal io_uring ring: setup, the mmapped SQ/CQ rings
// and SQE array, submission and reaping through io_uring_enter, and buffer
// registration. It speaks raw syscalls (golang.org/x/sys/unix) and holds no
// Go-heap memory the kernel writes to. A Ring is used by one goroutine locked
// to its OS thread.
//
// Memory ordering: the kernel reads the SQ tail with acquire semantics and
// publishes the CQ tail with release semantics; sync/atomic operations are
// sequentially consistent, which covers both directions.
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes (include/uapi/linux/io_uring.h).
const (
	OpNop        = 0
	OpReadv      = 1
	OpWritev     = 2
	OpFsync      = 3
	OpReadFixed  = 4
	OpWriteFixed = 5
	OpRead       = 22
	OpWrite      = 23
)

// FsyncDatasync is the fsync_flags bit for fdatasync semantics.
const FsyncDatasync = 1

const (
	setupCoopTaskrun = 1 << 8

	featSingleMmap = 1 << 0

	enterGetEvents = 1 << 0

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	registerBuffers   = 0
	unregisterBuffers = 1
)

type sqOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

type cqOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, CQEs, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

type params struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  sqOffsets
	CQOff                                                                  cqOffsets
}

// SQE is a submission queue entry (64 bytes).
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IOPrio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32 // rw_flags / fsync_flags
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	pad         uint64
}

// CQE is a completion queue entry (16 bytes).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Ring is one io_uring instance.
type Ring struct {
	fd      int
	sqMem   []byte
	cqMem   []byte
	sqeMem  []byte
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqSize  uint32
	sqes    []SQE
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []CQE
	tail    uint32 // local SQ tail, published by Submit
	pending uint32 // SQEs published but not yet consumed by the kernel
	// Fixed reports whether buffers were registered.
	Fixed bool
	// Raw makes SubmitAndWait enter the kernel with a raw syscall: the
	// goroutine keeps its P while it waits, saving the scheduler hand-off
	// (about 10% CPU per I/O on fast devices), so the caller must leave
	// the Go scheduler other Ps to run on. Worth it for short waits only.
	Raw bool
}

// ErrUnsupported means the kernel refuses io_uring (ENOSYS, EPERM under a
// seccomp policy or io_uring_disabled sysctl).
var ErrUnsupported = errors.New("io_uring unavailable")

// New sets up a ring of at least entries submission slots.
func New(entries uint32) (*Ring, error) {
	var p params
	var fd uintptr
	var errno unix.Errno
	// COOP_TASKRUN spares the completing context an IPI to run our task
	// work; older kernels reject it with EINVAL and get a plain ring.
	// DEFER_TASKRUN (with SINGLE_ISSUER) was measured slower on zram, whose
	// reads complete in io-wq workers: 0.7x the IOPS of COOP_TASKRUN, with
	// half again as many context switches.
	tries := []uint32{setupCoopTaskrun, 0}
	for _, flags := range tries {
		p = params{Flags: flags}
		fd, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
		if errno != unix.EINVAL {
			break
		}
	}
	if errno != 0 {
		if errno == unix.ENOSYS || errno == unix.EPERM {
			return nil, fmt.Errorf("%w: io_uring_setup: %w", ErrUnsupported, errno)
		}
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd)}
	if err := r.mapRings(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	sqLen := int(p.SQOff.Array + p.SQEntries*4)
	cqLen := int(p.CQOff.CQEs + p.CQEntries*uint32(unsafe.Sizeof(CQE{})))
	if p.Features&featSingleMmap != 0 {
		sqLen = max(sqLen, cqLen)
		cqLen = sqLen
	}
	var err error
	r.sqMem, err = unix.Mmap(r.fd, offSQRing, sqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	if p.Features&featSingleMmap != 0 {
		r.cqMem = r.sqMem
	} else {
		r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("mmap cq ring: %w", err)
		}
	}
	sqeLen := int(p.SQEntries) * int(unsafe.Sizeof(SQE{}))
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, sqeLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	cq := unsafe.Pointer(&r.cqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.SQOff.Head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.SQOff.Tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.SQOff.RingMask))
	r.sqSize = *(*uint32)(unsafe.Add(sq, p.SQOff.RingEntries))
	// The SQ array indirection is kept as identity: slot i holds SQE i.
	array := unsafe.Slice((*uint32)(unsafe.Add(sq, p.SQOff.Array)), p.SQEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.SQEntries)
	r.cqHead = (*uint32)(unsafe.Add(cq, p.CQOff.Head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.CQOff.Tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.CQOff.RingMask))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(cq, p.CQOff.CQEs)), p.CQEntries)
	r.tail = atomic.LoadUint32(r.sqTail)
	return nil
}

// Entries is the number of submission slots.
func (r *Ring) Entries() uint32 { return r.sqSize }

// Close unmaps the rings and closes the ring descriptor; the kernel cancels
// whatever is still in flight.
func (r *Ring) Close() error {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if r.cqMem != nil && (r.sqMem == nil || &r.cqMem[0] != &r.sqMem[0]) {
		unix.Munmap(r.cqMem)
	}
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
	}
	r.sqeMem, r.cqMem, r.sqMem = nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// RegisterBuffers registers bufs as fixed buffers (index i = bufs[i]).
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	iov := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		iov[i].Base = &b[0]
		iov[i].SetLen(len(b))
	}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerBuffers,
		uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("io_uring_register buffers: %w", errno)
	}
	r.Fixed = true
	return nil
}

// GetSQE returns the next free submission slot, or nil when the SQ is full.
// The entry is zeroed; fill it and call Submit (or SubmitAndWait).
func (r *Ring) GetSQE() *SQE {
	head := atomic.LoadUint32(r.sqHead)
	if r.tail-head >= r.sqSize {
		return nil
	}
	e := &r.sqes[r.tail&r.sqMask]
	*e = SQE{}
	r.tail++
	return e
}

// flush publishes the locally filled SQEs to the kernel.
func (r *Ring) flush() uint32 {
	old := atomic.LoadUint32(r.sqTail)
	if old != r.tail {
		atomic.StoreUint32(r.sqTail, r.tail)
		r.pending += r.tail - old
	}
	return r.pending
}

// SubmitAndWait publishes prepared SQEs and enters the kernel to submit
// them and wait until at least wait completions are available.
// EINTR is retried. See Raw.
func (r *Ring) SubmitAndWait(wait uint32) error {
	n := r.flush()
	var flags uintptr
	if wait > 0 {
		flags = enterGetEvents
	}
	for {
		var got uintptr
		var errno unix.Errno
		if r.Raw {
			got, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), uintptr(wait), flags, 0, 0)
		} else {
			got, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), uintptr(wait), flags, 0, 0)
		}
		switch errno {
		case 0:
			r.pending -= min(uint32(got), r.pending)
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.EBUSY:
			// The CQ is full or the kernel is short of resources:
			// the caller reaps and tries again.
			return nil
		default:
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
	}
}

// Pending is the number of published SQEs the kernel has not consumed.
func (r *Ring) Pending() uint32 { return r.pending }

// Ready returns the index of the first available CQE and how many are
// available, without entering the kernel. Read them with CQE(head+i) and
// release them with Advance(n).
func (r *Ring) Ready() (head, n uint32) {
	head = atomic.LoadUint32(r.cqHead)
	return head, atomic.LoadUint32(r.cqTail) - head
}

// CQE returns the completion entry at ring index i.
func (r *Ring) CQE(i uint32) *CQE { return &r.cqes[i&r.cqMask] }

// Advance marks n CQEs consumed.
func (r *Ring) Advance(n uint32) {
	atomic.StoreUint32(r.cqHead, atomic.LoadUint32(r.cqHead)+n)
}
