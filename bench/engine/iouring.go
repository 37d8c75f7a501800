package engine

import (
	"runtime"
	"syscall"
	"unsafe"

	"github.com/diskprep/diskprep/bench/engine/uring"
)

// runURing is the io_uring engine: one ring of depth entries per job, kept
// full. Each batch of new SQEs is stamped with one clock read just before
// the io_uring_enter that submits it, and each batch of reaped CQEs with one
// clock read: latency is submission to the moment the completion was seen,
// as fio measures it.
func (j *job) runURing(sh *shared, depth int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The ring is made and used on this locked thread only.
	r, err := uring.New(uint32(depth))
	if err != nil {
		j.err = err
		sh.stop.Store(true)
		return
	}
	defer r.Close()

	// Fixed buffers save pinning pages on every I/O; a refusal (memlock
	// limit) just means plain READ/WRITE.
	fixed := len(j.bufs) <= 1<<14 && r.RegisterBuffers(j.bufs) == nil
	r.Raw = j.rawIO

	type slot struct {
		submitted int64
		off       int64
		read      bool
	}
	slots := make([]slot, depth)
	free := make([]int, depth)
	for i := range free {
		free[i] = i
	}
	nfree := depth
	var fresh [64]int // slots prepared since the last enter, stamped together
	inflight := 0
	stopping := false
	fd := int32(j.fd)
	want := int32(j.bs)
	var now int64
	reap := func() uint32 {
		now = nanotime()
		head, n := r.Ready()
		for i := uint32(0); i < n; i++ {
			c := r.CQE(head + i)
			s := int(c.UserData)
			sl := &slots[s]
			if c.Res != want && j.err == nil {
				var err error
				if c.Res < 0 {
					err = syscall.Errno(-c.Res)
				}
				j.err = ioError(sl.read, sl.off, int(max(c.Res, 0)), int(want), err)
				sh.stop.Store(true)
				stopping = true
			} else if c.Res == want {
				j.account(sh, now, now-sl.submitted, sl.read)
			}
			free[nfree] = s
			nfree++
			inflight--
		}
		r.Advance(n)
		return n
	}
	for {
		if !stopping && sh.stop.Load() {
			stopping = true
		}
		nfresh := 0
		pending := 0
		for !stopping && nfree > 0 {
			off, ok := j.gen.next()
			if !ok {
				if !sh.timeBased {
					stopping = true
					break
				}
				j.gen.newPass()
				continue
			}
			read := j.isRead()
			if j.hooks.io != nil {
				j.hooks.io(j.id, off, read)
			}
			nfree--
			s := free[nfree]
			e := r.GetSQE()
			e.Fd = fd
			e.Off = uint64(off)
			e.Len = uint32(j.bs)
			e.UserData = uint64(s)
			switch {
			case read && fixed:
				e.Opcode, e.BufIndex = uring.OpReadFixed, uint16(s)
			case read:
				e.Opcode = uring.OpRead
			case fixed:
				e.Opcode, e.BufIndex = uring.OpWriteFixed, uint16(s)
			default:
				e.Opcode = uring.OpWrite
			}
			e.Addr = uint64(uintptr(unsafe.Pointer(&j.bufs[s][0])))
			slots[s].off, slots[s].read = off, read
			inflight++
			pending++
			if nfresh < len(fresh) {
				fresh[nfresh] = s
			}
			nfresh++
			if nfresh == len(fresh) {
				break // stamp and submit in batches of at most 64
			}
		}
		if inflight == 0 {
			break
		}
		t := nanotime()
		for _, s := range fresh[:min(nfresh, len(fresh))] {
			slots[s].submitted = t
		}
		// Submit at once without waiting, then reap whatever completed;
		// sleep in the kernel only when the queue is full (or draining)
		// and nothing has completed yet. Measured on zram against waiting
		// in the submitting syscall: 1.2x the IOPS and half the context
		// switches, since completions usually arrive while we submit.
		if pending > 0 {
			if err := r.SubmitAndWait(0); err != nil {
				// Closing the ring cancels whatever is in flight; the
				// kernel keeps those buffers' pages pinned until then.
				j.err = err
				sh.stop.Store(true)
				return
			}
		}
		if reap() == 0 && (nfree == 0 || stopping) {
			if err := r.SubmitAndWait(1); err != nil {
				j.err = err
				sh.stop.Store(true)
				return
			}
			reap()
		}
		if sh.end != 0 && now >= sh.end {
			stopping = true
		}
	}
	if j.err == nil {
		if err := j.doFsync(); err != nil {
			j.err = err
		}
	}
}
