package bench

import (
	"context"
	"math"
	"testing"

	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/testenv"
)

// TestPrivilegedSeries: a write run on a loop device records the host's
// CPU busy and the device's own counters once per second, and the device's
// MB/s (the loop device's diskstats: what reached it, not the file under
// it) agrees with the engine's within 5%.
func TestPrivilegedSeries(t *testing.T) {
	testenv.RequirePrivileged(t)
	loop := testenv.NewLoop(t, 256<<20, testenv.LoopOptions{})
	rec, err := Run(context.Background(), workload.Request{
		Target: loop.Dev, AllowDeviceWrite: true,
		Specs: []string{"name=w,rw=write,bs=1M,size=256M,runtime=3s,ramp=0,iodepth=4"},
	}, Options{Host: liveHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	run := rec.Workloads[0].Runs[0]
	if run.Write == nil || run.Write.BWBytesPerS <= 0 {
		t.Fatalf("no write measured: %+v", run)
	}
	if len(run.HostSamples) < 3 || len(run.DeviceSamples) < 3 {
		t.Fatalf("%d host and %d device samples over a 3 s run, want 3 or more", len(run.HostSamples), len(run.DeviceSamples))
	}
	var busy float64
	for _, s := range run.HostSamples {
		busy += s.CPUBusyPct()
		if s.MemUsedBytes == 0 {
			t.Errorf("sample %+v: no memory in use", s)
		}
	}
	if busy <= 0 {
		t.Errorf("CPU never busy during a write run: %+v", run.HostSamples)
	}
	var devBytes uint64
	var util float64
	for _, s := range run.DeviceSamples {
		devBytes += s.Bytes
		util += s.UtilPercent
	}
	last := run.DeviceSamples[len(run.DeviceSamples)-1].TimeMS
	devBps := float64(devBytes) / (last / 1000)
	off := (devBps/run.Write.BWBytesPerS - 1) * 100
	t.Logf("engine %.1f MB/s, device %.1f MB/s over %d samples (%+.2f%%), CPU busy %.1f%% on average, device util %.0f%%",
		run.Write.BWBytesPerS/1e6, devBps/1e6, len(run.DeviceSamples), off, busy/float64(len(run.HostSamples)), util/float64(len(run.DeviceSamples)))
	if math.Abs(off) > 5 {
		t.Errorf("device %.1f MB/s against the engine's %.1f MB/s: %+.1f%%, want within 5%%", devBps/1e6, run.Write.BWBytesPerS/1e6, off)
	}
	if util <= 0 {
		t.Error("device never busy")
	}
}
