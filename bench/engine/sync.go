package engine

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runSync is the sync engine: queue depth 1, pread/pwrite on a thread of
// its own, two clock reads per I/O around the syscall.
//
// For blocks under rawIOMaxBlock the syscalls are raw (no
// entersyscall/exitsyscall): measured on zram, the
// scheduler hand-off of a normal syscall cost 10% CPU per I/O and, on a busy
// machine, put a p99 of 20-50 us where fio shows 5 us (exitsyscall finding
// its P retaken and parking the thread). A raw syscall keeps its P, so
// runJobs gives every job a P of its own plus one for the rest of the
// program (GOMAXPROCS >= jobs+1 for the run).
func (j *job) runSync(sh *shared) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := j.bufs[0]
	want := int(j.bs)
	for !sh.stop.Load() {
		off, ok := j.gen.next()
		if !ok {
			if !sh.timeBased {
				break
			}
			j.gen.newPass()
			continue
		}
		read := j.isRead()
		if j.hooks.io != nil {
			j.hooks.io(j.id, off, read)
		}
		var n int
		var err error
		t0 := nanotime()
		nr := uintptr(unix.SYS_PWRITE64)
		if read {
			nr = unix.SYS_PREAD64
		}
		var r1 uintptr
		var e unix.Errno
		if j.rawIO {
			r1, _, e = unix.RawSyscall6(nr, uintptr(j.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(off), 0, 0)
		} else {
			r1, _, e = unix.Syscall6(nr, uintptr(j.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(off), 0, 0)
		}
		n = int(r1)
		if e != 0 {
			err = e
		}
		t1 := nanotime()
		if err != nil || n != want {
			j.err = ioError(read, off, n, want, err)
			sh.stop.Store(true)
			return
		}
		j.account(sh, t1, t1-t0, read)
		if sh.end != 0 && t1 >= sh.end {
			break
		}
	}
	if err := j.doFsync(); err != nil {
		j.err = err
	}
}

func ioError(read bool, off int64, n, want int, err error) error {
	op := "pwrite"
	if read {
		op = "pread"
	}
	var errno unix.Errno
	if errors.As(err, &errno) && unix.ErrnoName(errno) != "" {
		// The symbol too (EIO), which is what people search for.
		return fmt.Errorf("%s at offset %d: %w (%s)", op, off, err, unix.ErrnoName(errno))
	}
	if err != nil {
		return fmt.Errorf("%s at offset %d: %w", op, off, err)
	}
	return fmt.Errorf("%s at offset %d: short transfer %d of %d bytes", op, off, n, want)
}
