package engine

import _ "unsafe" // go:linkname

// nanotime is the runtime's monotonic clock: one vDSO clock_gettime, where
// time.Now reads two clocks. The hot loops read it twice per I/O (sync) or
// twice per batch (io_uring).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
