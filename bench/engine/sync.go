package engine

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// runSync is the sync engine: queue depth 1, pread/pwrite on a thread of
// its own, two clock reads per I/O around the syscall.
func (j *job) runSync(sh *shared) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var rbuf, wbuf []byte
	if len(j.rbufs) > 0 {
		rbuf = j.rbufs[0]
	}
	if len(j.wbufs) > 0 {
		wbuf = j.wbufs[0]
	}
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
		if testHookIO != nil {
			testHookIO(j.id, off, read)
		}
		var n int
		var err error
		t0 := nanotime()
		if read {
			n, err = unix.Pread(j.fd, rbuf, off)
		} else {
			n, err = unix.Pwrite(j.fd, wbuf, off)
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
	if err != nil {
		return fmt.Errorf("%s at offset %d: %w", op, off, err)
	}
	return fmt.Errorf("%s at offset %d: short transfer %d of %d bytes", op, off, n, want)
}
