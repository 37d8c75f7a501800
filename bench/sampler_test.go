package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

func TestHostSample(t *testing.T) {
	prev := hwinfo.CPUTimes{User: 1000, Nice: 10, System: 500, Idle: 8000, IOWait: 100, IRQ: 5, SoftIRQ: 15, Steal: 20}
	// 200 ticks (2 CPUs, 1 s at USER_HZ 100): 50 user+nice, 30 system+irq+softirq,
	// 40 iowait, 20 steal, 60 idle.
	cur := hwinfo.CPUTimes{User: 1045, Nice: 15, System: 520, Idle: 8060, IOWait: 140, IRQ: 10, SoftIRQ: 20, Steal: 40}
	mem := hwinfo.MemInfo{TotalBytes: 1000, AvailableBytes: 300, HasAvailable: true, CachedBytes: 200, BuffersBytes: 50}
	s := hostSample(prev, cur, mem, 1500*time.Millisecond)
	if s.CPUUserPct != 25 || s.CPUSystemPct != 15 || s.CPUIOWaitPct != 20 || s.CPUStealPct != 10 {
		t.Errorf("cpu split %+v, want user 25 system 15 iowait 20 steal 10", s)
	}
	if s.CPUBusyPct() != 50 || s.MemUsedBytes != 700 || s.PageCacheBytes != 250 || s.TimeMS != 1500 {
		t.Errorf("sample %+v", s)
	}
	// iowait going back (tickless kernels do that): the busy share stays
	// a share, at most 100%, not 50 ticks of busy over 40 ticks of total.
	back := cur
	back.IOWait, back.Idle = prev.IOWait-60, prev.Idle
	back.Steal = prev.Steal
	if b := hostSample(prev, back, mem, time.Second); b.CPUBusyPct() > 100 || b.CPUBusyPct() != 100 || b.CPUIOWaitPct != 0 {
		t.Errorf("iowait went back: busy %.1f%%, iowait %.1f%%, want 100 and 0", b.CPUBusyPct(), b.CPUIOWaitPct)
	}
	// No tick between the readings: no division by zero.
	if z := hostSample(cur, cur, mem, time.Second); z.CPUUserPct != 0 || math.IsNaN(z.CPUIOWaitPct) {
		t.Errorf("no ticks: %+v", z)
	}
}

func TestDeviceSample(t *testing.T) {
	prev := hwinfo.BlockStat{ReadIOs: 100, ReadSectors: 8000, ReadTicksMs: 50, WriteIOs: 10, WriteSectors: 800, WriteTicksMs: 20, IOTicksMs: 1000, QueueTicksMs: 2000}
	// Half a second: 200 reads of 4 KiB and 50 writes of 64 KiB, 500 ms
	// of wait over 250 I/Os, 400 ms busy, 1000 ms queued.
	cur := hwinfo.BlockStat{ReadIOs: 300, ReadSectors: 8000 + 200*8, ReadTicksMs: 350, WriteIOs: 60, WriteSectors: 800 + 50*128, WriteTicksMs: 220, InFlight: 3, IOTicksMs: 1400, QueueTicksMs: 3000}
	s := deviceSample(prev, cur, 500*time.Millisecond, 2*time.Second)
	want := map[string][2]float64{
		"read iops": {s.ReadIOPS, 400}, "write iops": {s.WriteIOPS, 100},
		"read B/s": {s.ReadBytesPerS, 200 * 4096 * 2}, "write B/s": {s.WriteBytesPerS, 50 * 65536 * 2},
		"queue": {s.QueueDepth, 2}, "util": {s.UtilPercent, 80}, "await": {s.AvgWaitMS, 2},
	}
	for k, v := range want {
		if math.Abs(v[0]-v[1]) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, v[0], v[1])
		}
	}
	if s.IOs != 250 || s.Bytes != 200*4096+50*65536 || s.InFlightAtEnd != 3 || s.TimeMS != 2000 {
		t.Errorf("sample %+v", s)
	}
}

// TestRunRecordsSeries: the host and device series sampled during a
// workload land in its repetition, from the counters under the injected
// roots (which the fake engine moves on while it "runs").
func TestRunRecordsSeries(t *testing.T) {
	target := t.TempDir()
	major, minor, err := engine.DeviceOf(target)
	if err != nil {
		t.Skipf("the test directory is on no block device: %v", err)
	}
	tree := t.TempDir()
	roots := hwinfo.Roots{Sys: filepath.Join(tree, "sys"), Proc: filepath.Join(tree, "proc")}
	statPath := filepath.Join(tree, "sys", "dev", "block", fmt.Sprintf("%d:%d", major, minor), "stat")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+".new", []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	counters := func(user, iowait, writeSectors uint64) {
		write(filepath.Join(tree, "proc", "stat"), fmt.Sprintf("cpu  %d 0 100 1000 %d 0 0 0 0 0\n", user, iowait))
		write(filepath.Join(tree, "proc", "meminfo"), "MemTotal: 1000 kB\nMemAvailable: 400 kB\nCached: 100 kB\nBuffers: 0 kB\n")
		write(statPath, fmt.Sprintf("0 0 0 0 %d 0 %d 0 0 0 0\n", writeSectors/8, writeSectors))
	}
	counters(100, 10, 0)
	fake := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		time.Sleep(150 * time.Millisecond)
		counters(160, 50, 2048) // 60 user and 40 iowait ticks of 100; 1 MiB written
		time.Sleep(150 * time.Millisecond)
		return syntheticResult(0, 16, 64<<10, 1), nil
	}}
	req := workload.Request{Target: target, Specs: []string{"name=w,rw=write,bs=64k,size=1M,runtime=1s"}}
	rec, err := Run(context.Background(), req, Options{Engine: fake, Roots: roots, SampleInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run := rec.Workloads[0].Runs[0]
	if len(run.HostSamples) < 3 || len(run.DeviceSamples) < 3 {
		t.Fatalf("%d host and %d device samples over 300 ms at 50 ms, want several", len(run.HostSamples), len(run.DeviceSamples))
	}
	var bytes uint64
	busy := false
	for i, s := range run.DeviceSamples {
		bytes += s.Bytes
		if i > 0 && s.TimeMS <= run.DeviceSamples[i-1].TimeMS {
			t.Errorf("sample times not increasing: %v then %v", run.DeviceSamples[i-1].TimeMS, s.TimeMS)
		}
	}
	for _, s := range run.HostSamples {
		if s.MemUsedBytes != 600<<10 || s.PageCacheBytes != 100<<10 {
			t.Errorf("memory %+v", s)
		}
		if s.CPUUserPct > 0 {
			busy = true
			if s.CPUUserPct != 60 || s.CPUIOWaitPct != 40 {
				t.Errorf("the second with the change: %+v, want user 60%% iowait 40%%", s)
			}
		}
	}
	if bytes != 1<<20 || !busy {
		t.Errorf("device samples add up to %d bytes (want %d), a busy CPU second seen: %v", bytes, 1<<20, busy)
	}
}

// The host's busy ticks (at USER_HZ 100) over the device's completed
// I/Os: 30 busy ticks are 300 ms, over 1000 I/Os 300 µs each; iowait and
// idle are not busy. Missing or backward counters give 0, not a figure.
func TestSamplerCPUPerIO(t *testing.T) {
	first := snapshot{cpu: hwinfo.CPUTimes{User: 100, System: 50, Idle: 900, IOWait: 40}, cpuOK: true,
		blk: hwinfo.BlockStat{ReadIOs: 500, WriteIOs: 500}, blkOK: true}
	last := snapshot{cpu: hwinfo.CPUTimes{User: 110, Nice: 2, System: 60, IRQ: 3, SoftIRQ: 4, Steal: 1, Idle: 1500, IOWait: 90}, cpuOK: true,
		blk: hwinfo.BlockStat{ReadIOs: 1200, WriteIOs: 800}, blkOK: true}
	s := &sampler{first: first, last: last}
	if got := s.cpuNSPerIO(); math.Abs(got-300e3) > 1e-6 {
		t.Errorf("cpu per I/O %v ns, want 300000", got)
	}
	noDev := last
	noDev.blkOK = false
	backward := last
	backward.blk = first.blk
	for name, l := range map[string]snapshot{"no device counters": noDev, "no I/O": backward} {
		if got := (&sampler{first: first, last: l}).cpuNSPerIO(); got != 0 {
			t.Errorf("%s: %v, want 0", name, got)
		}
	}
}
