package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/engine/hist"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/golden"
)

// syntheticResult is a fixed engine result: latencies 100..100+n-1 µs for
// reads and twice that for writes, over a 2 s window.
func syntheticResult(readIOs, writeIOs uint64, bs uint64, factor float64) *engine.Result {
	mk := func(n uint64, base float64) engine.DirResult {
		if n == 0 {
			return engine.DirResult{Hist: hist.New()}
		}
		h := hist.New()
		for i := uint64(0); i < n; i++ {
			h.Record(uint64(base*1000*factor) + i*1000)
		}
		return engine.DirResult{
			IOs: n, Bytes: n * bs, Hist: h,
			PerSecond: []engine.Sample{{IOs: n / 2, Bytes: n / 2 * bs}, {IOs: n - n/2, Bytes: (n - n/2) * bs}},
		}
	}
	return &engine.Result{
		Engine: "io_uring", Direct: true, Align: 512,
		Read: mk(readIOs, 100), Write: mk(writeIOs, 200),
		Elapsed: 2 * time.Second, CPUUser: 150 * time.Millisecond, CPUSys: 800 * time.Millisecond,
	}
}

func syntheticHost() *hwinfo.Host {
	return &hwinfo.Host{
		Schema: hwinfo.Schema, Hostname: "bench-host",
		OS:     hwinfo.OS{ID: "rocky", Name: "Rocky Linux", Version: "9.4", PrettyName: "Rocky Linux 9.4 (Blue Onyx)"},
		Kernel: "5.14.0-427.el9.x86_64",
		CPU:    hwinfo.CPU{Model: "AMD EPYC 7302P", Vendor: "AuthenticAMD", Sockets: 1, Cores: 16, Threads: 32},
		Memory: hwinfo.Memory{TotalBytes: 64 << 30},
		Virt:   hwinfo.Virtualization{Hypervisor: "none", Container: "none"},
		Disks:  []hwinfo.Disk{{Name: "sdb", Model: "must not be copied"}},
	}
}

// syntheticRecord builds a record the way Run does, from fixed engine
// results: the fileserver randrw with three repetitions and a seqread.
func syntheticRecord() *record.Record {
	ws, _ := workload.Plan(workload.Request{Set: "fileserver"})
	start := time.Date(2026, 11, 30, 6, 15, 0, 0, time.UTC)
	rec := &record.Record{
		Schema: record.Schema, ID: record.NewID(start)[:16] + "-abcd", Label: "xfs", Start: start, End: start.Add(time.Minute),
		ToolVersion: "test", Set: "fileserver", Repeat: 3, Host: record.HostOf(syntheticHost()),
		Target: record.Target{Path: "/mnt/data", Kind: record.KindDir, TestFile: "/mnt/data/" + TestFileName("20261130T061500Z-abcd"),
			Device: "sdb1", Disk: "sdb", Model: "Samsung SSD 870", Serial: "S6P", Transport: "sata", Media: "ssd",
			SizeBytes: 1 << 40, LogicalSectorBytes: 512, PhysicalSectorBytes: 4096, FSType: "xfs",
			MountPoint: "/mnt/data", MountOptions: "rw,relatime,attr2,inode64",
			Prepared: &record.Prepared{FSType: "xfs", MkfsArgv: []string{"mkfs.xfs", "-f", "/dev/sdb1"}, MkfsVersion: "mkfs.xfs version 6.4.0"}},
	}
	for wi, w := range []workload.Workload{ws[0], ws[2]} {
		wr := record.WorkloadResult{Params: w, Warnings: workloadWarnings(w, environment{RAMBytes: 64 << 30})}
		for rep := 1; rep <= 3; rep++ {
			var res *engine.Result
			factor := []float64{1, 1.2, 0.9}[rep-1]
			if wi == 0 {
				res = syntheticResult(uint64(100*rep), 0, w.BlockBytes, factor)
			} else {
				res = syntheticResult(uint64(50*rep), uint64(40*rep), w.BlockBytes, factor)
			}
			one := repetitionOf(res, rep, start.Add(time.Duration(rep)*10*time.Second))
			one.Device = deviceIO("sdb1", engine.DiskDelta{ReadBytes: res.Read.Bytes, WriteBytes: res.Write.Bytes + 4096}, res.Elapsed, res.Read.Bytes+res.Write.Bytes)
			if rep == 1 {
				// One second of the host and device series, for the shape.
				one.HostSamples = append(one.HostSamples, hostSample(
					hwinfo.CPUTimes{User: 1000, System: 500, Idle: 8000, IOWait: 100, Steal: 20},
					hwinfo.CPUTimes{User: 1050, System: 530, Idle: 8060, IOWait: 140, Steal: 40},
					hwinfo.MemInfo{TotalBytes: 64 << 30, AvailableBytes: 60 << 30, HasAvailable: true, CachedBytes: 2 << 30}, time.Second))
				one.DeviceSamples = append(one.DeviceSamples, deviceSample(
					hwinfo.BlockStat{ReadIOs: 100, ReadSectors: 8000, ReadTicksMs: 50, IOTicksMs: 1000, QueueTicksMs: 2000},
					hwinfo.BlockStat{ReadIOs: 200, ReadSectors: 8000 + 100*128, ReadTicksMs: 250, InFlight: 2, IOTicksMs: 1900, QueueTicksMs: 3800},
					time.Second, time.Second))
			}
			wr.Runs = append(wr.Runs, one)
		}
		wr.Summarize()
		rec.Workloads = append(rec.Workloads, wr)
	}
	return rec
}

func TestRecordGolden(t *testing.T) {
	rec := syntheticRecord()
	var buf bytes.Buffer
	if err := record.WriteJSON(&buf, rec); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "record.golden.json", buf.Bytes())

	// The shape promises of DESIGN.md, checked on the document itself.
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema"] != "diskprep/result/v1" {
		t.Errorf("schema %v", doc["schema"])
	}
	if _, ok := doc["host"].(map[string]any)["disks"]; ok {
		t.Error("host identity carries the disk list")
	}
	for _, k := range []string{`"io_bytes"`, `"bw_bytes_per_s"`, `"lat_ns"`, `"p99_9"`, `"runtime_ms"`, `"cpu_user_s"`, `"agreement_percent"`, `"samples_per_s"`, `"mkfs_argv"`} {
		if !bytes.Contains(buf.Bytes(), []byte(k)) {
			t.Errorf("record lacks %s", k)
		}
	}
	// Round trip: what the store reads back is what was written.
	var back record.Record
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	record.WriteJSON(&again, &back)
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("record does not survive a JSON round trip")
	}
}

func TestSummaryFromRepetitions(t *testing.T) {
	rec := syntheticRecord()
	rr := rec.Workloads[1] // randrw: 3 runs of 50k reads / 40k writes over 2 s
	if len(rr.Runs) != 3 {
		t.Fatalf("%d runs", len(rr.Runs))
	}
	r := rr.Summary["read"]
	if r.Name != "randread" || rr.Summary["write"].Name != "randwrite" {
		t.Errorf("row names %q %q", r.Name, rr.Summary["write"].Name)
	}
	// reads per run: 50, 100, 150 over 2 s -> IOPS 25, 50, 75
	if r.IOPS != (record.Stat{Median: 50, Min: 25, Max: 75, N: 3}) {
		t.Errorf("read IOPS %+v", r.IOPS)
	}
	bs := float64(rr.Params.BlockBytes)
	if r.BWBytesPerS.Median != 50*bs || r.BWBytesPerS.Max != 75*bs {
		t.Errorf("read bw %+v", r.BWBytesPerS)
	}
	// Each run's p50 comes from its histogram: exact values are
	// base*factor + i µs, i < n; the histogram is within 0.4%.
	for _, run := range rr.Runs {
		n := float64(run.Read.IOs)
		factor := []float64{1, 1.2, 0.9}[run.Index-1]
		exact := 100e3*factor + math.Ceil(n*0.5-1)*1e3
		if rel := math.Abs(run.Read.LatNS.P50-exact) / exact; rel > 0.005 {
			t.Errorf("run %d p50 %.0f, exact %.0f", run.Index, run.Read.LatNS.P50, exact)
		}
		if run.Read.LatNS.Min != 100e3*factor {
			t.Errorf("run %d min %.0f", run.Index, run.Read.LatNS.Min)
		}
		if run.Device == nil || run.Device.AgreementPercent == nil {
			t.Fatalf("run %d: no device agreement", run.Index)
		}
		want := float64(run.Read.IOBytes+run.Write.IOBytes+4096) / float64(run.Read.IOBytes+run.Write.IOBytes) * 100
		if *run.Device.AgreementPercent != want {
			t.Errorf("agreement %f, want %f", *run.Device.AgreementPercent, want)
		}
	}
	p50s := []float64{rr.Runs[0].Read.LatNS.P50, rr.Runs[1].Read.LatNS.P50, rr.Runs[2].Read.LatNS.P50}
	if r.LatP50NS != record.Summarize(p50s) {
		t.Errorf("p50 summary %+v, runs %v", r.LatP50NS, p50s)
	}
	// A read-only workload has no write summary.
	if _, ok := rec.Workloads[0].Summary["write"]; ok {
		t.Error("seqread has a write summary")
	}
}

// checkGolden compares got with testdata/name (go test -update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// recWithID is the synthetic record under another id.
func recWithID(id string) *record.Record {
	r := syntheticRecord()
	r.ID = id
	return r
}
