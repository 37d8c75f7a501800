package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/bench/record"
)

// RecordCSVColumns are the columns of a record's CSV (`results show -o
// csv`, `results export --format csv`), one line per workload, repetition
// and direction. Scripts read them by position: new columns go at the end,
// never in between. A cell is empty when the record has no such field
// (made before it existed, or not asked for: no --steady-state, no
// smartctl, no cached volume), never 0 for "unknown".
//
// repeat_stop to cache_bytes are the workload's and the record's own
// fields, repeated on each of their lines. host_* and device_* sum up the
// repetition's per-second series (too long for a cell; `results export
// --as json` has them): means over its sampled seconds, ramp included,
// memory peaks, and the device's wait per completed I/O. cache_* of a
// repetition are the kernel's counters of the cached volume over it (after
// minus before; dirty data before and after); hit ratios are 0 to 1.
var RecordCSVColumns = []string{
	// The first columns, in this order since results show -o csv began.
	"record", "label", "workload", "row", "dir", "repetition", "engine", "direct",
	"io_bytes", "ios", "iops", "bw_bytes_per_s", "runtime_ms", "lat_min_ns", "lat_mean_ns", "lat_p50_ns",
	"lat_p90_ns", "lat_p99_ns", "lat_p99_9_ns", "lat_max_ns",
	// The repetition: engine cost and its per-second series.
	"engine_cpu_ns_per_io",
	"host_samples", "host_cpu_user_pct_mean", "host_cpu_system_pct_mean", "host_cpu_iowait_pct_mean",
	"host_cpu_steal_pct_mean", "host_mem_used_bytes_max", "host_page_cache_bytes_max",
	"device_samples", "device_util_pct_mean", "device_queue_depth_mean", "device_avg_wait_ms",
	// The workload.
	"repeat_stop",
	"steady_state_metric", "steady_state_reached", "steady_state_round", "steady_state_rounds",
	"steady_state_window_first_round", "steady_state_window_average", "steady_state_window_range_pct",
	"steady_state_window_slope_pct",
	// The record: precondition, device health, cached volume.
	"precondition_passes", "precondition_bs_bytes", "precondition_device_bytes", "precondition_elapsed_ms",
	"precondition_bw_bytes_per_s",
	"health_temperature_c_before", "health_temperature_c_after", "health_percentage_used_before",
	"health_percentage_used_after", "health_media_errors_before", "health_media_errors_after",
	"health_crc_errors_before", "health_crc_errors_after",
	"cache_kind", "cache_mode", "cache_origin_devices", "cache_devices", "cache_bytes",
	// The repetition's cache counters.
	"cache_hit_ratio", "cache_read_hit_ratio", "cache_unit", "cache_read_hits", "cache_read_misses",
	"cache_write_hits", "cache_write_misses", "cache_bypass_hits", "cache_bypass_misses",
	"cache_dirty_bytes_before", "cache_dirty_bytes_after",
	// The repetition's host CPU per I/O; the record's dm-crypt layer.
	"host_cpu_ns_per_io",
	"encryption_cipher", "encryption_key_bits", "encryption_sector_bytes", "encryption_aes",
	"encryption_cipher_encrypt_mib_per_s", "encryption_cipher_decrypt_mib_per_s",
}

func csvFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
func csvUint(v uint64) string   { return strconv.FormatUint(v, 10) }

func csvFloatPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return csvFloat(*v)
}

func csvUintPtr(v *uint64) string {
	if v == nil {
		return ""
	}
	return csvUint(*v)
}

func recordCSV(w io.Writer, rec *record.Record) error {
	cw := csv.NewWriter(w)
	cw.Write(RecordCSVColumns)
	recCells := recordCSVCells(rec)
	encCells := make([]string, 6)
	if e := rec.Target.Encryption; e != nil {
		encCells = []string{e.Cipher, strconv.Itoa(e.KeyBits), strconv.Itoa(e.SectorBytes), "", "", ""}
		if e.AES != nil {
			encCells[3] = strconv.FormatBool(*e.AES)
		}
		if e.CipherEncryptMiBps > 0 {
			encCells[4], encCells[5] = csvFloat(e.CipherEncryptMiBps), csvFloat(e.CipherDecryptMiBps)
		}
	}
	for _, wr := range rec.Workloads {
		wlCells := workloadCSVCells(&wr)
		for _, r := range wr.Runs {
			runCells := runCSVCells(&r)
			cacheCells := runCacheCSVCells(rec, &r)
			for _, dir := range []string{"read", "write"} {
				d := r.Dir(dir)
				if d == nil {
					continue
				}
				l := d.LatNS
				row := []string{rec.ID, rec.Label, wr.Params.Name, wr.Params.RowName(dir), dir, strconv.Itoa(r.Index), r.Engine,
					strconv.FormatBool(r.Direct), csvUint(d.IOBytes), csvUint(d.IOs), csvFloat(d.IOPS),
					csvFloat(d.BWBytesPerS), csvFloat(d.RuntimeMS), csvFloat(l.Min), csvFloat(l.Mean), csvFloat(l.P50),
					csvFloat(l.P90), csvFloat(l.P99), csvFloat(l.P999), csvFloat(l.Max)}
				row = append(row, runCells...)
				row = append(row, wlCells...)
				row = append(row, recCells...)
				row = append(row, cacheCells...)
				hostCPU := ""
				if r.HostCPUNSPerIO > 0 {
					hostCPU = csvFloat(r.HostCPUNSPerIO)
				}
				row = append(append(row, hostCPU), encCells...)
				cw.Write(row)
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// runCSVCells: engine_cpu_ns_per_io to device_avg_wait_ms.
func runCSVCells(r *record.Repetition) []string {
	c := make([]string, 12)
	if r.EngineCPUNSPerIO > 0 {
		c[0] = csvFloat(r.EngineCPUNSPerIO)
	}
	s := record.SummarizeSeries(*r)
	if s.HostSeconds > 0 {
		c[1] = strconv.Itoa(s.HostSeconds)
		c[2], c[3], c[4], c[5] = csvFloat(s.CPUUserPct), csvFloat(s.CPUSystemPct), csvFloat(s.CPUIOWaitPct), csvFloat(s.CPUStealPct)
		c[6], c[7] = csvUint(s.MemUsedPeak), csvUint(s.PageCachePeak)
	}
	if s.DeviceSeconds > 0 {
		c[8] = strconv.Itoa(s.DeviceSeconds)
		c[9], c[10] = csvFloat(s.DeviceUtilPct), csvFloat(s.DeviceQueue)
		if s.DeviceIOs > 0 {
			c[11] = csvFloat(s.DeviceWaitMS)
		}
	}
	return c
}

// workloadCSVCells: repeat_stop to steady_state_window_slope_pct.
func workloadCSVCells(wr *record.WorkloadResult) []string {
	c := make([]string, 9)
	c[0] = wr.RepeatStop
	ss := wr.SteadyState
	if ss == nil {
		return c
	}
	c[1], c[2], c[4] = ss.Metric, strconv.FormatBool(ss.Reached), strconv.Itoa(len(ss.Values))
	if ss.Reached {
		c[3] = strconv.Itoa(ss.Round)
	}
	// A window was judged once there were enough rounds for one.
	if ss.WindowFirst > 0 {
		c[5], c[6], c[7], c[8] = strconv.Itoa(ss.WindowFirst), csvFloat(ss.WindowAverage), csvFloat(ss.RangePct), csvFloat(ss.SlopePct)
	}
	return c
}

// recordCSVCells: precondition_passes to cache_bytes.
func recordCSVCells(rec *record.Record) []string {
	c := make([]string, 18)
	if p := rec.Precondition; p != nil {
		c[0], c[1], c[2], c[3], c[4] = strconv.Itoa(p.Passes), csvUint(p.BlockBytes), csvUint(p.DeviceBytes), csvFloat(p.ElapsedMS), csvFloat(p.BWBytesPerS)
	}
	if h := rec.Health; h != nil {
		for i, r := range []*record.HealthReading{h.Before, h.After} {
			if r == nil {
				continue
			}
			c[5+i], c[7+i], c[9+i], c[11+i] = csvFloatPtr(r.TemperatureC), csvFloatPtr(r.PercentUsed), csvUintPtr(r.MediaErrors), csvUintPtr(r.CRCErrors)
		}
	}
	if cv := rec.Target.Cache; cv != nil {
		c[13], c[14] = cv.Kind, cv.Mode
		c[15], c[16] = strings.Join(cv.OriginDevices, "+"), strings.Join(cv.CacheDevices, "+")
		if cv.CacheBytes > 0 {
			c[17] = csvUint(cv.CacheBytes)
		}
	}
	return c
}

// runCacheCSVCells: cache_hit_ratio to cache_dirty_bytes_after.
func runCacheCSVCells(rec *record.Record, r *record.Repetition) []string {
	c := make([]string, 11)
	ci := r.Cache
	if ci == nil {
		return c
	}
	d := ci.After.Sub(ci.Before)
	c[0], c[1], c[2] = csvFloatPtr(ci.HitRatio), csvFloatPtr(ci.ReadHitRatio), d.Unit
	c[3], c[4] = csvUint(d.ReadHits), csvUint(d.ReadMisses)
	// Where the kernel does not count writes (bcache) their counters say
	// nothing; bypassed reads are bcache's alone.
	if d.CountsWrites {
		c[5], c[6] = csvUint(d.WriteHits), csvUint(d.WriteMisses)
	}
	if isBcache(rec) || d.BypassHits > 0 || d.BypassMisses > 0 {
		c[7], c[8] = csvUint(d.BypassHits), csvUint(d.BypassMisses)
	}
	c[9], c[10] = csvUint(ci.Before.DirtyBytes), csvUint(ci.After.DirtyBytes)
	return c
}

func isBcache(rec *record.Record) bool {
	return rec.Target.Cache != nil && rec.Target.Cache.Kind == "bcache"
}
