package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/diskprep/diskprep/bench/engine/hist"
	"golang.org/x/sys/unix"
)

// shared is the state all jobs of one run read.
type shared struct {
	stop        atomic.Bool // cancellation or a failed job
	timeBased   bool
	windowStart int64 // nanotime at which counting starts (start + ramp)
	end         int64 // nanotime at which time-based jobs stop; 0 if size-based
}

// dirAcc accumulates one direction of one job, single-writer.
type dirAcc struct {
	ios, bytes uint64
	hist       *hist.Histogram
	secs       []Sample
	live       atomic.Uint64 // I/Os including ramp, for progress
	_          [40]byte      // keep another job's counters off this cache line
}

// job is one worker: its descriptor, buffers, offsets and accumulators.
type job struct {
	id       int
	fd       int
	bs       int64
	gen      *offsetGen
	mix      rng
	mode     int // modeRead, modeWrite, modeMix
	mixThr   uint64
	mem      []byte   // mmapped, aligned buffers
	bufs     [][]byte // one per slot, for reads and writes alike
	rawIO    bool     // raw syscalls (small blocks, see runSync)
	fsync    bool
	read     dirAcc
	write    dirAcc
	lastDone int64 // nanotime of the last counted completion
	secIdx   int
	nextSec  int64
	err      error
	fsyncs   int
	hooks    hooks // the run's test observers (Params.hooks)
}

const (
	modeRead = iota
	modeWrite
	modeMix
)

// isRead draws the direction of the next I/O.
func (j *job) isRead() bool {
	switch j.mode {
	case modeRead:
		return true
	case modeWrite:
		return false
	}
	return j.mix.next() < j.mixThr
}

// account counts one completed I/O at time now with latency lat.
// Completions outside the measured window only feed the progress view.
func (j *job) account(sh *shared, now, lat int64, read bool) {
	d := &j.write
	if read {
		d = &j.read
	}
	d.live.Store(d.live.Load() + 1)
	if now < sh.windowStart || (sh.end != 0 && now > sh.end) {
		return
	}
	for now >= j.nextSec {
		j.secIdx++
		j.nextSec += 1e9
	}
	if j.secIdx >= len(d.secs) {
		grow := j.secIdx + 1
		j.read.secs = growSamples(j.read.secs, grow)
		j.write.secs = growSamples(j.write.secs, grow)
	}
	d.ios++
	d.bytes += uint64(j.bs)
	d.secs[j.secIdx].IOs++
	d.secs[j.secIdx].Bytes += uint64(j.bs)
	d.hist.Record(uint64(lat))
	j.lastDone = now
}

func growSamples(s []Sample, n int) []Sample {
	for len(s) < n {
		s = append(s, Sample{})
	}
	return s
}

// allocBuffers maps one buffer of bs bytes per slot, aligned to align
// (mmap gives page alignment; larger needs are met by over-allocating).
// Reads and writes share a slot's buffer, as in fio: a randrw write sends
// what the last read left there, which is the file's own (laid out, random)
// data, so memory stays at slots*bs per job.
func (j *job) allocBuffers(slots int, bs, align int64) error {
	stride := (bs + align - 1) / align * align
	extra := int64(0)
	if align > int64(unix.Getpagesize()) {
		extra = align
	}
	// MAP_POPULATE faults the pages in now, outside the measured window,
	// rather than on the first I/O into each.
	mem, err := unix.Mmap(-1, 0, int(stride*int64(slots)+extra), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("allocate %d buffers of %d bytes: %w", slots, bs, err)
	}
	j.mem = mem
	base := int64(0)
	if extra > 0 {
		addr := int64(uintptrOf(mem))
		base = (align - addr%align) % align
	}
	for i := int64(0); i < int64(slots); i++ {
		off := base + i*stride
		j.bufs = append(j.bufs, mem[off:off+bs:off+bs])
	}
	return nil
}

func (j *job) free() {
	if j.mem != nil {
		unix.Munmap(j.mem)
		j.mem = nil
	}
	if j.fd >= 0 {
		unix.Close(j.fd)
		j.fd = -1
	}
}

// doFsync flushes the job's writes with fdatasync (data plus the metadata
// needed to read it back; fio's end_fsync uses fsync, which also writes
// timestamps), after the job's last write completed.
func (j *job) doFsync() error {
	if !j.fsync || j.write.live.Load() == 0 {
		return nil
	}
	if j.hooks.fsync != nil {
		j.hooks.fsync(j.id, j.fd)
	}
	j.fsyncs++
	if err := unix.Fdatasync(j.fd); err != nil {
		return fmt.Errorf("fdatasync: %w", err)
	}
	return nil
}

// fillData writes the data pattern into b, once per buffer.
func fillData(b []byte, d DataPattern, r *rng) {
	switch d.Kind {
	case DataZeros:
		clear(b)
		return
	case DataCompressible:
		// Each 4 KiB segment: the first (100-pct)% random, the rest zeros,
		// so a compressor saves about pct% (fio buffer_compress_percentage).
		const seg = 4096
		for s := 0; s < len(b); s += seg {
			e := min(s+seg, len(b))
			rnd := (e - s) * (100 - d.CompressPercent) / 100
			fillRandom(b[s:s+rnd], r)
			clear(b[s+rnd : e])
		}
		return
	}
	fillRandom(b, r)
}

func fillRandom(b []byte, r *rng) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		v := r.next()
		b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		b[i+4], b[i+5], b[i+6], b[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
	}
	for v := r.next(); i < len(b); i++ {
		b[i] = byte(v)
		v >>= 8
	}
}
