package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

func TestParamErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := Layout(context.Background(), file, 1<<20, DataPattern{}); err != nil {
		t.Fatal(err)
	}
	ok := Params{Path: file, RW: RandRead, BlockSize: 4096, Size: 1 << 20, Jobs: 1, IODepth: 1, Direct: true}
	for name, mod := range map[string]func(p *Params){
		"unknown rw":       func(p *Params) { p.RW = "randomread" },
		"zero bs":          func(p *Params) { p.BlockSize = 0 },
		"size below bs":    func(p *Params) { p.Size = 2048; p.BlockSize = 4096 },
		"bs unaligned":     func(p *Params) { p.BlockSize = 1000; p.Size = 100000 },
		"offset unaligned": func(p *Params) { p.Offset = 100; p.Size = 4096 },
		"jobs 0":           func(p *Params) { p.Jobs = 0 },
		"iodepth too big":  func(p *Params) { p.IODepth = MaxIODepth + 1 },
		"rwmix 101":        func(p *Params) { p.RWMixRead = 101 },
		"engine":           func(p *Params) { p.Engine = "libaio" },
		"data":             func(p *Params) { p.Data.Kind = "ones" },
		"compress 120":     func(p *Params) { p.Data = DataPattern{Kind: DataCompressible, CompressPercent: 120} },
		"missing target":   func(p *Params) { p.Path = filepath.Join(dir, "nope") },
		"directory":        func(p *Params) { p.Path = dir },
		"read beyond EOF":  func(p *Params) { p.Size = 2 << 20 },
		"negative runtime": func(p *Params) { p.Runtime = -time.Second },
		"no path":          func(p *Params) { p.Path = "" },
	} {
		p := ok
		mod(&p)
		if _, err := Run(context.Background(), p); !errors.Is(err, ErrParams) {
			t.Errorf("%s: %v, want ErrParams", name, err)
		}
	}
	if _, err := Run(context.Background(), ok); err != nil {
		t.Fatalf("valid params: %v", err)
	}
}

func TestEngineChoice(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := Layout(context.Background(), file, 1<<20, DataPattern{}); err != nil {
		t.Fatal(err)
	}
	p := Params{Path: file, RW: RandRead, BlockSize: 4096, Size: 1 << 20, Jobs: 1, IODepth: 4, Direct: true, Engine: EngineSync}
	res, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != EngineSync || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "iodepth 4") {
		t.Fatalf("sync at iodepth 4: engine %s, warnings %q", res.Engine, res.Warnings)
	}
	requireURing(t)
	for depth, want := range map[int]string{1: EngineSync, 4: EngineIOUring} {
		p.Engine, p.IODepth = EngineAuto, depth
		res, err := Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Engine != want || len(res.Warnings) != 0 {
			t.Errorf("auto at iodepth %d: %s %q, want %s", depth, res.Engine, res.Warnings, want)
		}
	}
}

func TestDataPatterns(t *testing.T) {
	r := newRNG(1)
	b := make([]byte, 64<<10)
	fillData(b, DataPattern{Kind: DataCompressible, CompressPercent: 75}, &r)
	zeros := strings.Count(string(b), "\x00")
	// 75% zeros plus the random bytes that happen to be zero (1/256).
	if zeros < len(b)*75/100 || zeros > len(b)*76/100 {
		t.Fatalf("compressible 75%%: %d of %d bytes zero", zeros, len(b))
	}
	fillData(b, DataPattern{}, &r)
	if z := strings.Count(string(b), "\x00"); z > len(b)/100 {
		t.Fatalf("random data has %d zero bytes of %d", z, len(b))
	}
	fillData(b, DataPattern{Kind: DataZeros}, &r)
	if !allZero(b) {
		t.Fatal("zeros pattern not zero")
	}
}

func TestLayoutDistinctBlocks(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	const size = 8<<20 + 4096 + 100 // an unaligned tail goes through the page cache
	if err := Layout(context.Background(), file, size, DataPattern{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size {
		t.Fatalf("laid out %d bytes, want %d", len(b), size)
	}
	seen := map[string]bool{}
	for off := 0; off+4096 <= len(b); off += 4096 {
		k := string(b[off : off+4096])
		if seen[k] {
			t.Fatalf("block at %d repeats an earlier block: dedup would collapse the file", off)
		}
		seen[k] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Layout(ctx, file, size, DataPattern{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled layout: %v", err)
	}
}

func TestDiskStats(t *testing.T) {
	before, err := ReadDiskStats(hwinfo.Roots{Proc: "testdata/proc"}, 253, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := DiskStats{ReadIOs: 1000, ReadSectors: 8000, ReadTicksMs: 100, WriteIOs: 2000, WriteSectors: 32000, WriteTicksMs: 300, InFlight: 1, IOTicksMs: 500, WeightedMs: 400}
	if before != want {
		t.Fatalf("parsed %+v, want %+v", before, want)
	}
	after := before
	after.ReadSectors += 2048
	after.WriteSectors += 8
	after.IOTicksMs += 500
	after.WeightedMs += 4000
	d := after.Sub(before)
	if d.ReadBytes != 1<<20 || d.WriteBytes != 4096 {
		t.Fatalf("delta bytes %d/%d", d.ReadBytes, d.WriteBytes)
	}
	if u := d.Utilization(time.Second); u != 50 {
		t.Fatalf("utilization %v, want 50", u)
	}
	if q := d.AvgQueue(time.Second); q != 4 {
		t.Fatalf("avg queue %v, want 4", q)
	}
	if _, err := ReadDiskStats(hwinfo.Roots{Proc: "testdata/proc"}, 8, 0); err == nil {
		t.Fatal("missing device: no error")
	}
}

func TestDeviceOf(t *testing.T) {
	// The temp dir may be on tmpfs (no block device); the package's own
	// directory is then the next place likely to be on a disk.
	dir := t.TempDir()
	maj, min, err := DeviceOf(dir)
	if err != nil {
		if dir, err = os.Getwd(); err == nil {
			maj, min, err = DeviceOf(dir)
		}
	}
	if err != nil {
		testenv.Lacks(t, "a block-device filesystem under the temp dir or the source tree", err.Error())
	}
	if _, err := ReadDiskStats(hwinfo.Roots{}, maj, min); err != nil {
		t.Fatalf("device %d:%d of the temp dir not in /proc/diskstats: %v", maj, min, err)
	}
}

func TestDirectAlignment(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := Layout(context.Background(), file, 1<<20, DataPattern{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, file} {
		a, ok, err := DirectAlignment(hwinfo.Roots{}, p)
		if err != nil || a <= 0 || a&(a-1) != 0 {
			t.Fatalf("%s: alignment %d, %v", p, a, err)
		}
		if !ok {
			t.Logf("%s: no direct I/O here", p)
		}
	}
	if _, _, err := DirectAlignment(hwinfo.Roots{}, filepath.Join(dir, "nope")); err == nil {
		t.Fatal("missing path: no error")
	}
}

// TestWriteExtendsFile: a pure write workload may run on an empty file
// (a fresh test file) and leaves the region written.
func TestWriteExtendsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Params{Path: file, RW: Write, BlockSize: 65536, Size: 4 << 20, Jobs: 1, IODepth: 4, Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 4<<20 || res.Write.Bytes != 4<<20 {
		t.Fatalf("file %d bytes, engine wrote %d; want %d", st.Size(), res.Write.Bytes, 4<<20)
	}
}

// TestProgressFinalSnapshot: the last progress call carries the run's
// totals, so a live line ends on the true figures.
func TestProgressFinalSnapshot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := Layout(context.Background(), file, 4<<20, DataPattern{}); err != nil {
		t.Fatal(err)
	}
	var last Snapshot
	calls := 0
	p := Params{Path: file, RW: RandRW, BlockSize: 4096, Size: 4 << 20, Jobs: 2, IODepth: 1, Direct: true,
		Progress: func(s Snapshot) { last = s; calls++ }}
	res, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last.ReadIOs != res.Read.IOs || last.WriteIOs != res.Write.IOs ||
		last.ReadBytes != res.Read.Bytes || last.WriteBytes != res.Write.Bytes || last.Ramping {
		t.Fatalf("last snapshot %+v after %d calls; result read %d/%d write %d/%d", last, calls, res.Read.IOs, res.Read.Bytes, res.Write.IOs, res.Write.Bytes)
	}
}

// TestWindowElapsed: the measured window is computed from when the workers
// really stopped, so a time-based run that ended early is not reported as
// having lasted its runtime.
func TestWindowElapsed(t *testing.T) {
	const s = int64(time.Second)
	timed := &shared{timeBased: true, windowStart: 2 * s, end: 12 * s}
	sized := &shared{windowStart: 2 * s}
	for _, c := range []struct {
		name          string
		sh            *shared
		stopped, last int64
		want          time.Duration
	}{
		{"time-based, workers stopped after the end", timed, 12*s + 3e6, 12 * s, 10 * time.Second},
		{"time-based, workers stopped early", timed, 7 * s, 7 * s, 5 * time.Second},
		{"time-based, stopped during the ramp", timed, s, 0, 0},
		{"size-based, to the last completion", sized, 9 * s, 8 * s, 6 * time.Second},
		{"size-based, nothing counted", sized, 3 * s, 0, 0},
	} {
		if got := windowElapsed(c.sh, c.stopped, c.last); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
