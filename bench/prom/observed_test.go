package prom

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/golden"
)

// observedFixture is record-loop-steady.json (a real `diskprep bench
// --steady-state --precondition` run on a loop device) with what a loop
// device cannot give grafted on: SMART readings parsed from the smartctl
// samples of bench/testdata/smartctl, and an lvmcache volume with counters
// around each repetition (made up, see testdata/README.md). The CSV tests
// of bench/report and cmd/diskprep read the file this writes.
func observedFixture(t *testing.T) *record.Record {
	t.Helper()
	rec, err := record.ReadFile(filepath.Join("testdata", "record-loop-steady.json"))
	if err != nil {
		t.Fatal(err)
	}
	reading := func(name string) *record.HealthReading {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "smartctl", name))
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := bench.ParseSmartctl(b)
		if err != nil {
			t.Fatal(err)
		}
		r.Time = rec.Start
		return r
	}
	rec.Health = &record.Health{Device: "/dev/sda", Tool: "smartctl 7.3",
		Before: reading("sata-ssd-crucial.json"), After: reading("sata-ssd-crucial-errors.json")}
	rec.Health.After.Time = rec.End
	rec.Target.Cache = &hwinfo.CachedVolume{Device: "dm-3", Path: "/dev/mapper/slow-data", Name: "slow/data",
		Kind: "lvmcache", Mode: "writethrough", OriginDevices: []string{"sdb"}, CacheDevices: []string{"nvme0n1p1", "nvme0n1p2"},
		SizeBytes: 201326592, CacheBytes: 48 << 20, BlockBytes: 64 << 10}
	// The cache warms up: each repetition hits more. The first read
	// repetition's counters could not be read.
	c := hwinfo.CacheCounters{Unit: "ios", CountsWrites: true, UsedBytes: 1 << 20}
	for wi := range rec.Workloads {
		wl := &rec.Workloads[wi]
		read := wl.Summary["read"].IOPS.N > 0
		for ri := range wl.Runs {
			if read && ri == 0 {
				continue
			}
			before := c
			n := uint64(ri + 1)
			if read {
				c.ReadHits += 400 + 20*n
				c.ReadMisses += 600 - 20*n
			} else {
				c.WriteHits += 300 + 25*n
				c.WriteMisses += 700 - 25*n
				c.Promotions += 10 * n
			}
			c.UsedBytes += 1 << 20
			wl.Runs[ri].Cache = record.NewCacheIO("dm-3", before, c)
		}
	}
	return rec
}

// TestObservedFixture keeps testdata/record-observed.json what
// observedFixture makes (-update rewrites it).
func TestObservedFixture(t *testing.T) {
	var buf bytes.Buffer
	if err := record.WriteJSON(&buf, observedFixture(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "record-observed.json"), buf.Bytes())
}

// TestWriteObserved: every figure the newer record fields give, checked
// against the record, and no other sample.
func TestWriteObserved(t *testing.T) {
	rec := observedFixture(t)
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	got, err := parseExposition(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	base := map[string]string{"host": "vm", "device_model": "", "fs": "", "label": "loop-steady", "set": "custom"}
	checked := map[string]bool{}
	check := func(name string, labels map[string]string, want float64) {
		t.Helper()
		key := seriesKey(name, labels)
		v, ok := got.samples[key]
		if !ok {
			t.Errorf("no series %s", key)
			return
		}
		if v != want {
			t.Errorf("%s = %v, want %v", key, v, want)
		}
		checked[key] = true
	}
	with := func(l map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range l {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	reached := 0
	for _, wl := range rec.Workloads {
		for dir, s := range wl.Summary {
			l := with(base, "workload", s.Name, "direction", dir)
			// The headline figures are TestWriteParses's; counted here.
			for _, name := range []string{"diskprep_bench_bw_bytes_per_second", "diskprep_bench_iops", "diskprep_bench_latency_mean_seconds", "diskprep_bench_runtime_seconds"} {
				checked[seriesKey(name, l)] = true
			}
			checked[seriesKey("diskprep_bench_latency_seconds", with(l, "quantile", "0.5"))] = true
			checked[seriesKey("diskprep_bench_latency_seconds", with(l, "quantile", "0.99"))] = true

			ss := wl.SteadyState
			if ss.Reached {
				reached++
				check("diskprep_bench_steady_state_reached", l, 1)
				check("diskprep_bench_steady_state_reached_round", l, float64(ss.Round))
			} else {
				check("diskprep_bench_steady_state_reached", l, 0)
			}
			check("diskprep_bench_steady_state_rounds", l, float64(len(ss.Values)))
			check("diskprep_bench_steady_state_window_range_ratio", l, ss.RangePct/100)
			check("diskprep_bench_steady_state_window_slope_ratio", l, ss.SlopePct/100)
			check("diskprep_bench_engine_cpu_seconds_per_io", l, wl.EngineCPUNSPerIO.Median/1e9)

			// The series of the measured window, summed up here apart.
			var user, sys, iowait, steal, util, queue, wait, ios float64
			var hostN, devN int
			var memPeak, cachePeak uint64
			var hits []float64
			for _, r := range wl.Measured() {
				for _, h := range r.HostSamples {
					user, sys, iowait, steal = user+h.CPUUserPct, sys+h.CPUSystemPct, iowait+h.CPUIOWaitPct, steal+h.CPUStealPct
					memPeak, cachePeak = max(memPeak, h.MemUsedBytes), max(cachePeak, h.PageCacheBytes)
					hostN++
				}
				for _, d := range r.DeviceSamples {
					util, queue = util+d.UtilPercent, queue+d.QueueDepth
					wait, ios = wait+d.AvgWaitMS*float64(d.IOs), ios+float64(d.IOs)
					devN++
				}
				if r.Cache != nil {
					hits = append(hits, *r.Cache.HitRatio)
				}
			}
			if hostN == 0 || devN == 0 || ios == 0 || len(hits) != len(wl.Measured()) {
				t.Fatalf("%s: fixture without series or cache counters (%d, %d, %v, %d)", s.Name, hostN, devN, ios, len(hits))
			}
			n := float64(hostN)
			for mode, v := range map[string]float64{"user": user, "system": sys, "iowait": iowait, "steal": steal} {
				check("diskprep_bench_host_cpu_ratio", with(l, "mode", mode), v/n/100)
			}
			check("diskprep_bench_host_memory_used_peak_bytes", l, float64(memPeak))
			check("diskprep_bench_host_page_cache_peak_bytes", l, float64(cachePeak))
			check("diskprep_bench_device_utilization_ratio", l, util/float64(devN)/100)
			check("diskprep_bench_device_queue_depth", l, queue/float64(devN))
			check("diskprep_bench_device_wait_mean_seconds", l, wait/ios/1e3)
			check("diskprep_bench_cache_hit_ratio", l, record.Median(hits))
			if dir == "read" {
				check("diskprep_bench_cache_read_hit_ratio", l, record.Median(hits))
			}
		}
	}
	if reached != 1 {
		t.Errorf("fixture: %d workloads reached steady state, want one of two", reached)
	}
	checked[seriesKey("diskprep_bench_end_timestamp_seconds", base)] = true
	p := rec.Precondition
	check("diskprep_bench_precondition_passes", base, 2)
	check("diskprep_bench_precondition_block_bytes", base, 128<<10)
	check("diskprep_bench_precondition_device_bytes", base, float64(p.DeviceBytes))
	check("diskprep_bench_precondition_seconds", base, p.ElapsedMS/1e3)
	check("diskprep_bench_precondition_bw_bytes_per_second", base, p.BWBytesPerS)
	for reading, h := range map[string]*record.HealthReading{"before": rec.Health.Before, "after": rec.Health.After} {
		l := with(base, "reading", reading)
		check("diskprep_bench_device_temperature_celsius", l, *h.TemperatureC)
		check("diskprep_bench_device_endurance_used_ratio", l, *h.PercentUsed/100)
		check("diskprep_bench_device_media_errors", l, float64(*h.MediaErrors))
		check("diskprep_bench_device_crc_errors", l, float64(*h.CRCErrors))
	}
	if *rec.Health.After.CRCErrors == *rec.Health.Before.CRCErrors {
		t.Error("fixture: the CRC count did not grow: before and after cannot be told apart")
	}
	check("diskprep_bench_cache_bytes", base, 48<<20)
	check("diskprep_bench_cache_info", with(base, "kind", "lvmcache", "mode", "writethrough", "origin_devices", "sdb", "cache_devices", "nvme0n1p1+nvme0n1p2"), 1)
	for key := range got.samples {
		if !checked[key] {
			t.Errorf("unexpected series %s", key)
		}
	}
	for name, typ := range got.types {
		if typ != "gauge" {
			t.Errorf("%s is a %s", name, typ)
		}
	}
}

// TestWriteWithoutNewerFields: a record without steady state, health
// readings, precondition, cache or series has no sample of those families
// and not even their HELP lines (its exposition is as before they existed);
// a steady-state verdict of too few rounds has no window; a health note
// without readings gives nothing.
func TestWriteWithoutNewerFields(t *testing.T) {
	rec := loadRecord(t)
	var plain bytes.Buffer
	if err := Write(&plain, rec); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"steady_state", "engine_cpu", "bench_host_", "bench_device_", "cache", "precondition"} {
		if strings.Contains(plain.String(), name) {
			t.Errorf("a record without %s fields exports some:\n%s", name, plain.String())
		}
	}
	rec.Workloads[0].SteadyState = &record.SteadyState{Metric: "iops", Values: []float64{100, 110, 105}}
	rec.Health = &record.Health{Device: "/dev/loop0", Tool: "smartctl 7.3", Note: "not read: /dev/loop0: Unable to detect device type"}
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	got, err := parseExposition(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	var fams []string
	for name := range got.types {
		if !strings.Contains(plain.String(), "# TYPE "+name+" ") {
			fams = append(fams, name)
		}
	}
	if len(fams) != 2 || got.types["diskprep_bench_steady_state_reached"] == "" || got.types["diskprep_bench_steady_state_rounds"] == "" {
		t.Errorf("new families %v, want steady_state_reached and _rounds alone", fams)
	}
	s := rec.Workloads[0].Summary["read"]
	l := map[string]string{"host": rec.Host.Hostname, "device_model": rec.Target.Model, "fs": "xfs", "label": rec.Label, "set": rec.Set, "workload": s.Name, "direction": "read"}
	if v, ok := got.samples[seriesKey("diskprep_bench_steady_state_reached", l)]; !ok || v != 0 {
		t.Errorf("steady_state_reached %v %v, want 0", v, ok)
	}
	if v := got.samples[seriesKey("diskprep_bench_steady_state_rounds", l)]; v != 3 {
		t.Errorf("steady_state_rounds %v, want 3", v)
	}
	if n := strings.Count(buf.String(), "\ndiskprep_bench_steady_state_"); n != 2 {
		t.Errorf("%d steady-state samples, want 2 (one workload, one direction)", n)
	}
}

// TestWriteObservedNewerWins: a later record with the same labels replaces
// the earlier one's newer figures too, the run's own (precondition,
// health, cache) included.
func TestWriteObservedNewerWins(t *testing.T) {
	older, newer := observedFixture(t), observedFixture(t)
	newer.End = older.End.Add(time.Hour)
	newer.Precondition.Passes = 3
	newer.Target.Cache.Mode = "writeback"
	temp := 61.0
	newer.Health.After.TemperatureC = &temp
	newer.Workloads[1].SteadyState.Round = 18
	var single bytes.Buffer
	if err := Write(&single, newer); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]*record.Record{{older, newer}, {newer, older}} {
		var buf bytes.Buffer
		if err := Write(&buf, order...); err != nil {
			t.Fatal(err)
		}
		if buf.String() != single.String() {
			t.Errorf("two records with the same labels: want only the newer's series, got\n%s", buf.String())
		}
	}
	for _, want := range []string{"diskprep_bench_precondition_passes{", "} 3\n", `mode="writeback"`, `reading="after"} 61` + "\n", "} 18\n"} {
		if !strings.Contains(single.String(), want) {
			t.Errorf("newer record's exposition lacks %q", want)
		}
	}
}
