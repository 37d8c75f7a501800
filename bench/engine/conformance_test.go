package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine/uring"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
	"golang.org/x/sys/unix"
)

// The conformance suite (STYLE rule 10): every case runs against both
// engines and against each kind of target: a file in t.TempDir(), and when
// privileged, files on xfs and ext4 loop mounts and a raw loop device.

const (
	suiteTargetSize = 32 << 20
	suiteOffset     = 64 << 10
	suiteRegion     = 1 << 20
	suiteBS         = 4096
)

type suiteEnv struct {
	engine string
	path   string
}

func (e suiteEnv) params(rw RW) Params {
	return Params{Path: e.path, RW: rw, BlockSize: suiteBS, Size: suiteRegion, Offset: suiteOffset,
		Jobs: 2, IODepth: 8, Direct: true, Engine: e.engine, Seed: 1}
}

type suiteTarget struct {
	name string
	make func(t *testing.T) string
}

func suiteTargets() []suiteTarget {
	onFS := func(fs string, mkfs ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			testenv.RequirePrivileged(t, mkfs[0], "mount")
			l := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
			testenv.MustRun(t, mkfs[0], append(mkfs[1:], l.Dev)...)
			t.Cleanup(func() { settleDetach(t, l) })
			dir := testenv.Mount(t, l.Dev)
			t.Cleanup(func() { settleUmount(t, dir) })
			return layoutTarget(t, filepath.Join(dir, "testfile"))
		}
	}
	return []suiteTarget{
		{"tempfile", func(t *testing.T) string { return layoutTarget(t, filepath.Join(t.TempDir(), "testfile")) }},
		{"xfs-loop", onFS("xfs", "mkfs.xfs", "-q", "-f")},
		{"ext4-loop", onFS("ext4", "mkfs.ext4", "-q", "-F")},
		{"loop-device", func(t *testing.T) string {
			testenv.RequirePrivileged(t)
			l := testenv.NewLoop(t, suiteTargetSize, testenv.LoopOptions{})
			t.Cleanup(func() { settleDetach(t, l) })
			return layoutTarget(t, l.Dev)
		}},
	}
}

// The kernel drops io_uring's last file references asynchronously (ring
// teardown runs in a workqueue), so right after Run a device can still be
// open for a moment: umount says busy and losetup -d only arms autoclear.
// These cleanups, which run before testenv's, wait for that to pass (and
// for other programs on the host that probe every block device, such as a
// concurrent inventory, to let go).
func settleUmount(t *testing.T, dir string) {
	for i := 0; i < 50; i++ {
		if _, err := testenv.Run("umount", dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func settleDetach(t *testing.T, l *testenv.Loop) {
	backing := filepath.Join("/sys/block", filepath.Base(l.Dev), "loop/backing_file")
	testenv.Run("losetup", "-d", l.Dev)
	for i := 0; i < 50; i++ {
		if b, err := os.ReadFile(backing); err != nil || !bytes.Equal(bytes.TrimSpace(b), []byte(l.Image)) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func layoutTarget(t *testing.T, path string) string {
	t.Helper()
	if err := Layout(context.Background(), path, suiteTargetSize, DataPattern{}); err != nil {
		t.Fatal(err)
	}
	return path
}

var suiteCases = []struct {
	name string
	run  func(t *testing.T, e suiteEnv)
}{
	{"ExactCounts", testExactCounts},
	{"OffsetsOncePerPass", testOffsetsOncePerPass},
	{"WritesStayInRegion", testWritesStayInRegion},
	{"DirectBypassesPageCache", testDirectBypassesPageCache},
	{"RandRWMix", testRandRWMix},
	{"Fsync", testFsync},
	{"TimeBasedWindow", testTimeBasedWindow},
	{"LatencyBounded", testLatencyBounded},
	{"Cancel", testCancel},
	{"DirectRefusedFallsBack", testDirectRefused},
}

func TestConformance(t *testing.T) {
	for _, tg := range suiteTargets() {
		t.Run(tg.name, func(t *testing.T) {
			path := tg.make(t)
			for _, eng := range []string{EngineSync, EngineIOUring} {
				t.Run(eng, func(t *testing.T) {
					if eng == EngineIOUring {
						requireURing(t)
					}
					for _, c := range suiteCases {
						t.Run(c.name, func(t *testing.T) { c.run(t, suiteEnv{eng, path}) })
					}
				})
			}
		})
	}
}

func mustRun(t *testing.T, p Params) *Result {
	t.Helper()
	res, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != p.Engine {
		t.Fatalf("engine %q ran, asked for %q (warnings %q)", res.Engine, p.Engine, res.Warnings)
	}
	return res
}

func checkDir(t *testing.T, name string, d DirResult, ios uint64, bs int64) {
	t.Helper()
	if d.IOs != ios || d.Bytes != ios*uint64(bs) {
		t.Errorf("%s: %d I/Os, %d bytes; want %d, %d", name, d.IOs, d.Bytes, ios, ios*uint64(bs))
	}
	if d.Hist.Count() != d.IOs {
		t.Errorf("%s: histogram holds %d latencies for %d I/Os", name, d.Hist.Count(), d.IOs)
	}
	var sum Sample
	for _, s := range d.PerSecond {
		sum.IOs += s.IOs
		sum.Bytes += s.Bytes
	}
	if sum.IOs != d.IOs || sum.Bytes != d.Bytes {
		t.Errorf("%s: per-second samples sum to %+v, totals %d/%d", name, sum, d.IOs, d.Bytes)
	}
}

func testExactCounts(t *testing.T, e suiteEnv) {
	blocks := uint64(suiteRegion / suiteBS)
	for _, rw := range []RW{Read, Write, RandRead, RandWrite} {
		for _, depth := range []int{1, 8} {
			p := e.params(rw)
			p.IODepth = depth
			res := mustRun(t, p)
			if !res.Direct {
				t.Errorf("%s: O_DIRECT not in effect (warnings %q)", rw, res.Warnings)
			}
			want := 2 * blocks // each of 2 jobs does one whole pass
			if rw.Writes() {
				checkDir(t, string(rw)+" write", res.Write, want, suiteBS)
				checkDir(t, string(rw)+" read", res.Read, 0, suiteBS)
			} else {
				checkDir(t, string(rw)+" read", res.Read, want, suiteBS)
				checkDir(t, string(rw)+" write", res.Write, 0, suiteBS)
			}
			if res.Elapsed <= 0 {
				t.Errorf("%s: elapsed %v", rw, res.Elapsed)
			}
		}
	}
}

// ioRecorder records every submitted offset per job of the runs whose
// Params.hooks.io it is.
type ioRecorder struct {
	mu   sync.Mutex
	offs map[int][]int64
}

func (r *ioRecorder) record(job int, off int64, read bool) {
	r.mu.Lock()
	if r.offs == nil {
		r.offs = map[int][]int64{}
	}
	r.offs[job] = append(r.offs[job], off)
	r.mu.Unlock()
}

func (r *ioRecorder) seen() map[int][]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.offs
}

func testOffsetsOncePerPass(t *testing.T, e suiteEnv) {
	for _, rw := range []RW{Read, Write, RandRead, RandWrite, RandRW} {
		var rec ioRecorder
		p := e.params(rw)
		p.hooks.io = rec.record
		mustRun(t, p)
		seen := rec.seen()
		if len(seen) != 2 {
			t.Fatalf("%s: %d jobs issued I/O, want 2", rw, len(seen))
		}
		for job, offs := range seen {
			if !rw.Random() && !slices.IsSorted(offs) {
				t.Errorf("%s job %d: sequential offsets out of order", rw, job)
			}
			if rw.Random() && slices.IsSorted(offs) {
				t.Errorf("%s job %d: random offsets came in order", rw, job)
			}
			s := slices.Clone(offs)
			slices.Sort(s)
			if len(s) != suiteRegion/suiteBS {
				t.Fatalf("%s job %d: %d I/Os, want %d", rw, job, len(s), suiteRegion/suiteBS)
			}
			for i, off := range s {
				if off != suiteOffset+int64(i)*suiteBS {
					t.Fatalf("%s job %d: block %d at offset %d, want every aligned block of [%d,%d) once", rw, job, i, off, suiteOffset, suiteOffset+suiteRegion)
				}
			}
		}
	}
}

// testWritesStayInRegion writes zeros over the region and checks the file:
// every block inside is zero, every byte outside is what Layout wrote.
func testWritesStayInRegion(t *testing.T, e suiteEnv) {
	before := readAll(t, e.path, suiteTargetSize)
	if bytes.Count(before[suiteOffset:suiteOffset+suiteRegion], []byte{0}) > suiteRegion/2 {
		layoutTarget(t, e.path)
		before = readAll(t, e.path, suiteTargetSize)
	}
	p := e.params(RandWrite)
	p.Data = DataPattern{Kind: DataZeros}
	mustRun(t, p)
	after := readAll(t, e.path, suiteTargetSize)
	if !bytes.Equal(after[:suiteOffset], before[:suiteOffset]) || !bytes.Equal(after[suiteOffset+suiteRegion:], before[suiteOffset+suiteRegion:]) {
		t.Fatal("bytes outside the region changed")
	}
	for b := suiteOffset; b < suiteOffset+suiteRegion; b += suiteBS {
		if !allZero(after[b : b+suiteBS]) {
			t.Fatalf("block at %d inside the region was not written", b)
		}
	}
	layoutTarget(t, e.path) // give later cases real data again
}

func readAll(t *testing.T, path string, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cachedPages counts the region's pages in the page cache (mincore on a
// shared mapping, as fincore does).
func cachedPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), suiteOffset, suiteRegion, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	vec := make([]byte, suiteRegion/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptrOf(mem), uintptr(len(mem)), uintptrOf(vec)); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func dropCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Sync()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// testDirectBypassesPageCache: after a direct read pass the region is not
// in the page cache; the buffered control run shows the probe would see it.
func testDirectBypassesPageCache(t *testing.T, e suiteEnv) {
	// The last close of a block device drops its page cache; holding it
	// open keeps what the buffered control run reads visible.
	hold, err := os.Open(e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	dropCache(t, e.path)
	if n := cachedPages(t, e.path); n != 0 {
		t.Skipf("cannot empty the page cache of %s (%d pages stay)", e.path, n)
	}
	p := e.params(RandRead)
	// A program probing block devices can cache a few pages of a loop
	// device meanwhile; O_DIRECT is broken only if every attempt caches.
	cached := 0
	for attempt := 0; attempt < 3; attempt++ {
		dropCache(t, e.path)
		if res := mustRun(t, p); !res.Direct {
			t.Fatalf("O_DIRECT not in effect: %q", res.Warnings)
		}
		if cached = cachedPages(t, e.path); cached == 0 {
			break
		}
	}
	if cached != 0 {
		t.Fatalf("%d pages of the region entered the page cache with O_DIRECT", cached)
	}
	p.Direct = false
	if res := mustRun(t, p); res.Direct {
		t.Fatal("Direct reported without O_DIRECT asked for")
	}
	if n := cachedPages(t, e.path); n == 0 {
		t.Fatal("buffered control run left no pages cached: the probe sees nothing")
	}
	dropCache(t, e.path)
}

func testRandRWMix(t *testing.T, e suiteEnv) {
	for _, mix := range []int{70, 25} {
		p := e.params(RandRW)
		p.Size = 16 << 20
		p.RWMixRead = mix
		res := mustRun(t, p)
		total := res.Read.IOs + res.Write.IOs
		if want := uint64(2 * p.Size / p.BlockSize); total != want {
			t.Fatalf("rwmixread %d: %d I/Os, want %d", mix, total, want)
		}
		got := 100 * float64(res.Read.IOs) / float64(total)
		if got < float64(mix)-2 || got > float64(mix)+2 {
			t.Errorf("rwmixread %d: %.2f%% reads", mix, got)
		}
	}
}

func testFsync(t *testing.T, e suiteEnv) {
	var mu sync.Mutex
	calls := map[int]int{}
	onFsync := func(job, fd int) {
		mu.Lock()
		calls[job]++
		mu.Unlock()
	}
	for _, c := range []struct {
		rw    RW
		fsync bool
		want  int
	}{{RandWrite, true, 1}, {Write, true, 1}, {RandRW, true, 1}, {RandWrite, false, 0}, {RandRead, true, 0}} {
		clear(calls)
		p := e.params(c.rw)
		p.Fsync = c.fsync
		p.hooks.fsync = onFsync
		mustRun(t, p)
		for job := 0; job < p.Jobs; job++ {
			if calls[job] != c.want {
				t.Errorf("%s fsync=%v: job %d synced %d times, want %d", c.rw, c.fsync, job, calls[job], c.want)
			}
		}
	}
}

func testTimeBasedWindow(t *testing.T, e suiteEnv) {
	var mu sync.Mutex
	n := 0
	p := e.params(RandRead)
	p.hooks.io = func(int, int64, bool) { mu.Lock(); n++; mu.Unlock() }
	p.Runtime, p.Ramp = 1200*time.Millisecond, 300*time.Millisecond
	res := mustRun(t, p)
	// Elapsed is measured (the window from the ramp's end to the workers'
	// stop, cut at the planned end): a run that stopped early is shorter.
	if res.Elapsed != p.Runtime {
		t.Errorf("elapsed %v, want the runtime %v (the workers stopped before the window closed)", res.Elapsed, p.Runtime)
	}
	if len(res.Read.PerSecond) != 2 {
		t.Errorf("%d per-second samples for 1.2 s, want 2", len(res.Read.PerSecond))
	}
	checkDir(t, "read", res.Read, res.Read.IOs, suiteBS)
	if res.Read.IOs == 0 {
		t.Fatal("no I/O counted")
	}
	// Ramp I/Os were issued but not counted.
	if uint64(n) <= res.Read.IOs {
		t.Errorf("issued %d I/Os, counted %d: the ramp was counted", n, res.Read.IOs)
	}
	// Time-based runs loop: more than one pass is normal, and offsets
	// stay in the region (checked by the once-per-pass case).
	if res.CPUUser+res.CPUSys <= 0 {
		t.Error("no CPU time measured")
	}
}

// testLatencyBounded: a queue slot holds one I/O at a time, so the
// latencies of one job sum to at most depth x the run's wall time; a stale
// or shared submission stamp would break that. And no I/O takes 0 ns.
func testLatencyBounded(t *testing.T, e suiteEnv) {
	for _, depth := range []int{1, 8} {
		p := e.params(RandRead)
		p.IODepth = depth
		start := time.Now()
		res := mustRun(t, p)
		wall := time.Since(start)
		h := res.Read.Hist
		limit := uint64(wall) * uint64(p.Jobs*depth)
		if e.engine == EngineSync {
			limit = uint64(wall) * uint64(p.Jobs)
		}
		if h.Sum() > limit {
			t.Errorf("depth %d: latencies sum to %v over %v of wall time", depth, time.Duration(h.Sum()), wall)
		}
		if h.Min() == 0 || h.Percentile(50) < h.Min() || h.Percentile(99) > h.Max() {
			t.Errorf("depth %d: min %d p50 %d p99 %d max %d", depth, h.Min(), h.Percentile(50), h.Percentile(99), h.Max())
		}
	}
}

func testCancel(t *testing.T, e suiteEnv) {
	ctx, cancel := context.WithCancel(context.Background())
	p := e.params(RandRead)
	p.Runtime = time.Hour
	var once sync.Once
	p.Progress = func(Snapshot) { once.Do(cancel) } // cancel mid-run, after ~500 ms
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, p)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not stop after cancel") // a hang guard, not a timing assertion
	}
}

func testDirectRefused(t *testing.T, e suiteEnv) {
	p := e.params(RandRead)
	p.hooks.open = func(path string, flags int, mode uint32) (int, error) {
		if flags&unix.O_DIRECT != 0 {
			return -1, unix.EINVAL
		}
		return unix.Open(path, flags, mode)
	}
	res := mustRun(t, p)
	if res.Direct {
		t.Fatal("Direct reported although O_DIRECT was refused")
	}
	if len(res.Warnings) == 0 {
		t.Fatal("no warning about the buffered fallback")
	}
	if res.Read.IOs != 2*suiteRegion/suiteBS {
		t.Fatalf("fallback run did %d I/Os", res.Read.IOs)
	}
}

// TestDiskStatsAgreeOnLoop: on a raw loop device nobody else touches, the
// device's own counters see exactly the bytes each engine says it moved.
func TestDiskStatsAgreeOnLoop(t *testing.T) {
	testenv.RequirePrivileged(t)
	dev := layoutTarget(t, testenv.NewLoop(t, suiteTargetSize, testenv.LoopOptions{SectorSize: 4096}).Dev)
	maj, min, err := DeviceOf(dev)
	if err != nil {
		t.Fatal(err)
	}
	for _, eng := range []string{EngineSync, EngineIOUring} {
		for _, rw := range []RW{RandRead, RandWrite} {
			// Another program probing block devices (blkid, an inventory)
			// adds reads now and then; the engine is wrong only if no
			// attempt matches exactly.
			var msg string
			for attempt := 0; attempt < 3; attempt++ {
				before, err := ReadDiskStats(hwinfo.Roots{}, maj, min)
				if err != nil {
					t.Fatal(err)
				}
				res := mustRun(t, suiteEnv{eng, dev}.params(rw))
				if res.Align != 4096 {
					t.Errorf("alignment %d on a 4096-byte-sector device", res.Align)
				}
				after, err := ReadDiskStats(hwinfo.Roots{}, maj, min)
				if err != nil {
					t.Fatal(err)
				}
				d := after.Sub(before)
				if d.ReadBytes == res.Read.Bytes && d.WriteBytes == res.Write.Bytes {
					msg = ""
					break
				}
				msg = fmt.Sprintf("%s %s: device moved %d/%d bytes read/written, engine %d/%d", eng, rw, d.ReadBytes, d.WriteBytes, res.Read.Bytes, res.Write.Bytes)
			}
			if msg != "" {
				t.Error(msg)
			}
		}
	}
	p := suiteEnv{EngineSync, dev}.params(RandRead)
	p.BlockSize = 512
	if _, err := Run(context.Background(), p); !errors.Is(err, ErrParams) {
		t.Errorf("bs 512 on a 4096-byte-sector device with O_DIRECT: %v, want ErrParams", err)
	}
}

// An io_uring I/O the kernel cancels (-ECANCELED, seen from io-wq under
// QEMU's TCG) moved no data: it is submitted again as it was, and only an
// I/O cancelled time after time fails the run.
func TestURingCancelledIOSubmittedAgain(t *testing.T) {
	if _, err := uring.New(4); err != nil {
		t.Skipf("io_uring: %v", err)
	}
	e := suiteEnv{engine: EngineIOUring, path: layoutTarget(t, filepath.Join(t.TempDir(), "testfile"))}
	var mu sync.Mutex
	issued, n := 0, 0
	perJob := map[int]int{}
	p := e.params(RandRead)
	p.Direct = false
	p.hooks.io = func(int, int64, bool) { mu.Lock(); issued++; mu.Unlock() }
	p.hooks.completed = func(job int, res int32) int32 {
		mu.Lock()
		defer mu.Unlock()
		n++
		perJob[job]++
		// One in 11 of a job's completions: more than the queue depth
		// apart, so the one submitted again is not cancelled again.
		if perJob[job]%11 == 0 {
			return -int32(syscall.ECANCELED)
		}
		return res
	}
	res := mustRun(t, p)
	if res.Read.IOs != uint64(issued) {
		t.Errorf("%d I/Os counted, %d issued: a cancelled one was lost or counted twice", res.Read.IOs, issued)
	}
	if n <= issued {
		t.Errorf("%d completions for %d I/Os: nothing was submitted again", n, issued)
	}

	// Cancelled every time: an error naming it.
	p.hooks.completed = func(int, int32) int32 { return -int32(syscall.ECANCELED) }
	if _, err := Run(context.Background(), p); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("every I/O cancelled: %v, want an error", err)
	}
}
