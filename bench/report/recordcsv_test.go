package report

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
)

// legacyCSVColumns are the record CSV's columns before the record grew
// steady state, series, health, precondition and cache: scripts read them
// by position, so they stay first and in this order.
var legacyCSVColumns = []string{"record", "label", "workload", "row", "dir", "repetition", "engine", "direct",
	"io_bytes", "ios", "iops", "bw_bytes_per_s", "runtime_ms", "lat_min_ns", "lat_mean_ns", "lat_p50_ns",
	"lat_p90_ns", "lat_p99_ns", "lat_p99_9_ns", "lat_max_ns"}

// observedRecord is bench/prom's fixture: a real steady-state run on a
// loop device with SMART readings and cache counters grafted on.
func observedRecord(t *testing.T) *record.Record {
	t.Helper()
	rec, err := record.ReadFile(filepath.Join("..", "prom", "testdata", "record-observed.json"))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// csvRows renders the record's CSV and reads it back with encoding/csv,
// one map per line, checking the header and every line's width.
func csvRows(t *testing.T, rec *record.Record) []map[string]string {
	t.Helper()
	var buf bytes.Buffer
	if err := Record(&buf, "csv", rec); err != nil {
		t.Fatal(err)
	}
	lines, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 || !slices.Equal(lines[0][:len(legacyCSVColumns)], legacyCSVColumns) {
		t.Fatalf("header %v: the first columns moved", lines[0])
	}
	if !slices.Equal(lines[0], RecordCSVColumns) {
		t.Fatalf("header %v, want %v", lines[0], RecordCSVColumns)
	}
	seen := map[string]bool{}
	for _, c := range lines[0] {
		if seen[c] {
			t.Errorf("column %s twice", c)
		}
		seen[c] = true
	}
	var out []map[string]string
	for _, l := range lines[1:] {
		m := map[string]string{}
		for i, c := range lines[0] {
			m[c] = l[i]
		}
		out = append(out, m)
	}
	return out
}

func cellFloat(t *testing.T, row map[string]string, col string, want float64) {
	t.Helper()
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil || v != want {
		t.Errorf("%s/%s rep %s: %s = %q, want %v", row["workload"], row["dir"], row["repetition"], col, row[col], want)
	}
}

func cellText(t *testing.T, row map[string]string, col, want string) {
	t.Helper()
	if row[col] != want {
		t.Errorf("%s/%s rep %s: %s = %q, want %q", row["workload"], row["dir"], row["repetition"], col, row[col], want)
	}
}

func TestRecordCSVObserved(t *testing.T) {
	rec := observedRecord(t)
	rows := csvRows(t, rec)
	i := 0
	var reached, cacheless int
	for _, wl := range rec.Workloads {
		for _, r := range wl.Runs {
			for _, dir := range []string{"read", "write"} {
				d := r.Dir(dir)
				if d == nil {
					continue
				}
				if i >= len(rows) {
					t.Fatalf("%d lines, want more", len(rows))
				}
				row := rows[i]
				i++
				cellText(t, row, "workload", wl.Params.Name)
				cellText(t, row, "dir", dir)
				cellText(t, row, "repetition", strconv.Itoa(r.Index))
				cellFloat(t, row, "iops", d.IOPS)
				cellFloat(t, row, "lat_p99_ns", d.LatNS.P99)
				cellFloat(t, row, "engine_cpu_ns_per_io", r.EngineCPUNSPerIO)

				// The series, summed up here apart from the code.
				if len(r.HostSamples) == 0 || len(r.DeviceSamples) == 0 {
					t.Fatalf("fixture repetition %d of %s has no series", r.Index, wl.Params.Name)
				}
				var iowait, steal, util, wait, ios float64
				var mem uint64
				for _, h := range r.HostSamples {
					iowait, steal, mem = iowait+h.CPUIOWaitPct, steal+h.CPUStealPct, max(mem, h.MemUsedBytes)
				}
				for _, s := range r.DeviceSamples {
					util, wait, ios = util+s.UtilPercent, wait+s.AvgWaitMS*float64(s.IOs), ios+float64(s.IOs)
				}
				cellText(t, row, "host_samples", strconv.Itoa(len(r.HostSamples)))
				cellFloat(t, row, "host_cpu_iowait_pct_mean", iowait/float64(len(r.HostSamples)))
				cellFloat(t, row, "host_cpu_steal_pct_mean", steal/float64(len(r.HostSamples)))
				cellFloat(t, row, "host_mem_used_bytes_max", float64(mem))
				cellText(t, row, "device_samples", strconv.Itoa(len(r.DeviceSamples)))
				cellFloat(t, row, "device_util_pct_mean", util/float64(len(r.DeviceSamples)))
				cellFloat(t, row, "device_avg_wait_ms", wait/ios)

				ss := wl.SteadyState
				cellText(t, row, "steady_state_metric", ss.Metric)
				cellText(t, row, "steady_state_reached", strconv.FormatBool(ss.Reached))
				cellText(t, row, "steady_state_rounds", strconv.Itoa(len(ss.Values)))
				if ss.Reached {
					cellText(t, row, "steady_state_round", strconv.Itoa(ss.Round))
					reached++
				} else {
					cellText(t, row, "steady_state_round", "")
				}
				cellText(t, row, "steady_state_window_first_round", strconv.Itoa(ss.WindowFirst))
				cellFloat(t, row, "steady_state_window_range_pct", ss.RangePct)
				cellFloat(t, row, "steady_state_window_slope_pct", ss.SlopePct)

				cellText(t, row, "precondition_passes", "2")
				cellText(t, row, "precondition_bs_bytes", "131072")
				cellFloat(t, row, "precondition_bw_bytes_per_s", rec.Precondition.BWBytesPerS)
				h := rec.Health
				cellFloat(t, row, "health_temperature_c_before", *h.Before.TemperatureC)
				cellFloat(t, row, "health_temperature_c_after", *h.After.TemperatureC)
				cellFloat(t, row, "health_percentage_used_after", *h.After.PercentUsed)
				cellText(t, row, "health_media_errors_before", strconv.FormatUint(*h.Before.MediaErrors, 10))
				cellText(t, row, "health_media_errors_after", strconv.FormatUint(*h.After.MediaErrors, 10))
				cellText(t, row, "health_crc_errors_after", strconv.FormatUint(*h.After.CRCErrors, 10))
				cellText(t, row, "cache_kind", "lvmcache")
				cellText(t, row, "cache_mode", "writethrough")
				cellText(t, row, "cache_origin_devices", "sdb")
				cellText(t, row, "cache_devices", "nvme0n1p1+nvme0n1p2")
				cellText(t, row, "cache_bytes", strconv.Itoa(48<<20))

				c := r.Cache
				if c == nil {
					cacheless++
					for _, col := range RecordCSVColumns[slices.Index(RecordCSVColumns, "cache_hit_ratio"):] {
						cellText(t, row, col, "")
					}
					continue
				}
				cellFloat(t, row, "cache_hit_ratio", *c.HitRatio)
				cellText(t, row, "cache_unit", "ios")
				cellText(t, row, "cache_read_hits", strconv.FormatUint(c.After.ReadHits-c.Before.ReadHits, 10))
				cellText(t, row, "cache_write_misses", strconv.FormatUint(c.After.WriteMisses-c.Before.WriteMisses, 10))
				cellText(t, row, "cache_bypass_hits", "") // lvmcache has none
				cellText(t, row, "cache_dirty_bytes_after", "0")
				if dir == "read" {
					cellFloat(t, row, "cache_read_hit_ratio", *c.ReadHitRatio)
				} else {
					cellText(t, row, "cache_read_hit_ratio", "")
				}
			}
		}
	}
	if i != len(rows) {
		t.Errorf("%d lines, want %d", len(rows), i)
	}
	if reached == 0 || reached == len(rows) || cacheless != 1 {
		t.Errorf("fixture: %d lines of a steady workload of %d, %d without cache counters: want some of each", reached, len(rows), cacheless)
	}
}

// TestRecordCSVWithoutNewerFields: a record that predates the newer fields
// has empty cells for them, not zeros; partial facts leave only their own
// cells empty.
func TestRecordCSVWithoutNewerFields(t *testing.T) {
	old := fixture()[0]
	rows := csvRows(t, old)
	if len(rows) == 0 {
		t.Fatal("no lines")
	}
	for _, row := range rows {
		for _, col := range RecordCSVColumns[len(legacyCSVColumns):] {
			cellText(t, row, col, "")
		}
		if row["iops"] == "" {
			t.Errorf("legacy cell empty: %v", row)
		}
	}

	// A steady-state verdict of too few rounds for a window, a health
	// note without readings, and a bcache volume, which counts neither
	// writes nor anything but bypassed reads apart.
	rec := observedRecord(t)
	wl := &rec.Workloads[1]
	wl.SteadyState = &record.SteadyState{Metric: "bw_bytes_per_s", Values: []float64{1, 2, 3}}
	rec.Health = &record.Health{Device: "/dev/loop0", Tool: "smartctl 7.3", Note: "not read"}
	rec.Target.Cache.Kind, rec.Target.Cache.Mode = "bcache", "writeback"
	before := hwinfo.CacheCounters{Unit: "ios", ReadHits: 10, ReadMisses: 5, BypassHits: 1, BypassMisses: 2, DirtyBytes: 4096}
	after := before
	after.ReadHits, after.ReadMisses, after.BypassMisses, after.DirtyBytes = 40, 15, 6, 1<<20
	wl.Runs[1].Cache = record.NewCacheIO("bcache0", before, after)
	rec.Precondition = nil
	for _, row := range csvRows(t, rec) {
		for _, col := range []string{"precondition_passes", "precondition_bw_bytes_per_s", "health_temperature_c_before", "health_crc_errors_after"} {
			cellText(t, row, col, "")
		}
		if row["workload"] != wl.Params.Name {
			continue
		}
		cellText(t, row, "steady_state_reached", "false")
		cellText(t, row, "steady_state_rounds", "3")
		for _, col := range []string{"steady_state_round", "steady_state_window_first_round", "steady_state_window_average", "steady_state_window_range_pct"} {
			cellText(t, row, col, "")
		}
		if row["repetition"] != "2" {
			continue
		}
		cellText(t, row, "cache_kind", "bcache")
		cellFloat(t, row, "cache_hit_ratio", 30.0/(30+10+4))
		cellText(t, row, "cache_read_hits", "30")
		cellText(t, row, "cache_bypass_hits", "0")
		cellText(t, row, "cache_bypass_misses", "4")
		cellText(t, row, "cache_write_hits", "")
		cellText(t, row, "cache_write_misses", "")
		cellText(t, row, "cache_dirty_bytes_before", "4096")
		cellText(t, row, "cache_dirty_bytes_after", "1048576")
	}
}
