// Package prom writes the headline figures of bench records in the
// Prometheus text exposition format (version 0.0.4), the format that
// node_exporter's textfile collector reads, so a fleet graphs its disks
// where it already graphs everything else.
//
// Each figure is the median over a record's repetitions, one series per
// record, workload and direction, labelled host, device_model, fs, workload,
// direction, label and set; where the record has them, a workload's steady
// state, the engine's CPU time per I/O, its host and device series summed up
// and the cache hit ratio come the same way. Facts of the whole run
// (precondition, SMART readings before and after, the cached volume) are
// one series per record, labelled as its end time is. Units are base units
// (seconds, bytes, ratios 0 to 1), every family a gauge: even a disk's
// error count is a reading at a moment here, not a counter a scrape sees
// grow. A figure a record lacks has no sample, never a 0. No sample
// carries a timestamp: the textfile collector rejects them. When the time
// matters, it is diskprep_bench_end_timestamp_seconds.
package prom

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/bench/record"
)

// family is one metric: its name, help and type, an extra label of this
// member of the family (quantile, mode, reading), and how to read its value
// from a series (workload families) or a record (record families). A value
// that is not there (ok false) has no sample; a family added after the
// first ones (optional) is left out altogether when no series has it, so
// the exposition of a record without the newer fields stays as it was.
type family struct {
	name, help, typ string
	label           [2]string // extra label, "" when none
	optional        bool
	value           func(s *series) (float64, bool)
	recValue        func(r *record.Record) (float64, bool)
}

// summary reads a figure every direction's summary has.
func summary(f func(s record.DirSummary) float64) func(*series) (float64, bool) {
	return func(s *series) (float64, bool) { return f(s.summary), true }
}

var families = []family{
	{name: "diskprep_bench_bw_bytes_per_second", typ: "gauge",
		help:  "Bandwidth in bytes per second (median over repetitions).",
		value: summary(func(s record.DirSummary) float64 { return s.BWBytesPerS.Median })},
	{name: "diskprep_bench_iops", typ: "gauge",
		help:  "I/O operations per second (median over repetitions).",
		value: summary(func(s record.DirSummary) float64 { return s.IOPS.Median })},
	{name: "diskprep_bench_latency_seconds", typ: "gauge", label: [2]string{"quantile", "0.5"},
		help:  "Completion latency quantile in seconds (median over repetitions).",
		value: summary(func(s record.DirSummary) float64 { return s.LatP50NS.Median / 1e9 })},
	{name: "diskprep_bench_latency_seconds", label: [2]string{"quantile", "0.99"},
		value: summary(func(s record.DirSummary) float64 { return s.LatP99NS.Median / 1e9 })},
	{name: "diskprep_bench_latency_mean_seconds", typ: "gauge",
		help:  "Mean completion latency in seconds (median over repetitions).",
		value: summary(func(s record.DirSummary) float64 { return s.LatMeanNS.Median / 1e9 })},
	{name: "diskprep_bench_runtime_seconds", typ: "gauge",
		help:  "Measured run time of the workload in seconds (median over repetitions).",
		value: summary(func(s record.DirSummary) float64 { return s.RuntimeMS.Median / 1e3 })},

	// Steady state (--steady-state), of the workload the row belongs to.
	{name: "diskprep_bench_steady_state_reached", typ: "gauge", optional: true,
		help: "1 when the workload reached steady state (SNIA PTS: 5-round window, range within 20% and fitted slope within 10% of its average), 0 when it did not; no sample without --steady-state.",
		value: func(s *series) (float64, bool) {
			if ss := s.wl.SteadyState; ss != nil {
				return b2f(ss.Reached), true
			}
			return 0, false
		}},
	{name: "diskprep_bench_steady_state_reached_round", typ: "gauge", optional: true,
		help: "Round at which the workload reached steady state (1-based; no sample when not reached).",
		value: func(s *series) (float64, bool) {
			if ss := s.wl.SteadyState; ss != nil && ss.Reached {
				return float64(ss.Round), true
			}
			return 0, false
		}},
	{name: "diskprep_bench_steady_state_rounds", typ: "gauge", optional: true,
		help: "Rounds the workload ran under --steady-state.",
		value: func(s *series) (float64, bool) {
			if ss := s.wl.SteadyState; ss != nil {
				return float64(len(ss.Values)), true
			}
			return 0, false
		}},
	{name: "diskprep_bench_steady_state_window_range_ratio", typ: "gauge", optional: true,
		help:  "Range (max-min) of the steady-state window judged last, as a ratio of its average (steady: at most 0.2).",
		value: steadyWindow(func(ss *record.SteadyState) float64 { return ss.RangePct / 100 })},
	{name: "diskprep_bench_steady_state_window_slope_ratio", typ: "gauge", optional: true,
		help:  "Excursion of the least-squares line across the steady-state window judged last, as a ratio of its average (steady: at most 0.1).",
		value: steadyWindow(func(ss *record.SteadyState) float64 { return ss.SlopePct / 100 })},

	// The engine's own cost.
	{name: "diskprep_bench_engine_cpu_seconds_per_io", typ: "gauge", optional: true,
		help: "CPU time (user+system) the engine spent per I/O, in seconds (median over repetitions).",
		value: func(s *series) (float64, bool) {
			if st := s.wl.EngineCPUNSPerIO; st != nil {
				return st.Median / 1e9, true
			}
			return 0, false
		}},

	// The per-second host and device series of the measured repetitions,
	// summed up: every sampled second weighs alike, ramp included.
	{name: "diskprep_bench_host_cpu_ratio", typ: "gauge", optional: true, label: [2]string{"mode", "user"},
		help:  "Mean share of all CPUs in each mode (user, system, iowait, steal) over the sampled seconds of the workload's repetitions, 0 to 1.",
		value: host(func(h record.SeriesSummary) float64 { return h.CPUUserPct / 100 })},
	{name: "diskprep_bench_host_cpu_ratio", label: [2]string{"mode", "system"},
		value: host(func(h record.SeriesSummary) float64 { return h.CPUSystemPct / 100 })},
	{name: "diskprep_bench_host_cpu_ratio", label: [2]string{"mode", "iowait"},
		value: host(func(h record.SeriesSummary) float64 { return h.CPUIOWaitPct / 100 })},
	{name: "diskprep_bench_host_cpu_ratio", label: [2]string{"mode", "steal"},
		value: host(func(h record.SeriesSummary) float64 { return h.CPUStealPct / 100 })},
	{name: "diskprep_bench_host_memory_used_peak_bytes", typ: "gauge", optional: true,
		help:  "Largest memory in use (MemTotal - MemAvailable) in a sampled second of the workload's repetitions, in bytes.",
		value: host(func(h record.SeriesSummary) float64 { return float64(h.MemUsedPeak) })},
	{name: "diskprep_bench_host_page_cache_peak_bytes", typ: "gauge", optional: true,
		help:  "Largest page cache (Cached + Buffers) in a sampled second of the workload's repetitions, in bytes.",
		value: host(func(h record.SeriesSummary) float64 { return float64(h.PageCachePeak) })},
	{name: "diskprep_bench_device_utilization_ratio", typ: "gauge", optional: true,
		help:  "Mean share of time the target device had I/O in flight (iostat %util) over the sampled seconds, 0 to 1.",
		value: device(func(d record.SeriesSummary) (float64, bool) { return d.DeviceUtilPct / 100, true })},
	{name: "diskprep_bench_device_queue_depth", typ: "gauge", optional: true,
		help:  "Mean I/Os in flight on the target device (iostat aqu-sz) over the sampled seconds.",
		value: device(func(d record.SeriesSummary) (float64, bool) { return d.DeviceQueue, true })},
	{name: "diskprep_bench_device_wait_mean_seconds", typ: "gauge", optional: true,
		help:  "Time per completed I/O on the target device, queue included (iostat await), over the sampled seconds, in seconds.",
		value: device(func(d record.SeriesSummary) (float64, bool) { return d.DeviceWaitMS / 1e3, d.DeviceIOs > 0 })},

	// The cached volume's counters over each measured repetition.
	{name: "diskprep_bench_cache_hit_ratio", typ: "gauge", optional: true,
		help:  "Cache hits over hits and misses (reads, and writes where the kernel counts them), from the kernel's counters, 0 to 1 (median over repetitions).",
		value: cacheRatio(func(c *record.CacheIO) *float64 { return c.HitRatio })},
	{name: "diskprep_bench_cache_read_hit_ratio", typ: "gauge", optional: true,
		help:  "Cache hit ratio of reads alone, 0 to 1 (median over repetitions).",
		value: cacheRatio(func(c *record.CacheIO) *float64 { return c.ReadHitRatio })},
}

// recordFamilies are one sample per record (and reading), labelled as the
// record: host, device_model, fs, label, set.
var recordFamilies = []family{
	{name: "diskprep_bench_end_timestamp_seconds", typ: "gauge",
		help:     "When the benchmark run ended, in seconds since the Unix epoch.",
		recValue: func(r *record.Record) (float64, bool) { return float64(r.End.UnixNano()) / 1e9, true }},

	{name: "diskprep_bench_precondition_passes", typ: "gauge", optional: true,
		help:     "Times --precondition wrote the whole device before the workloads (no sample without it).",
		recValue: precondition(func(p *record.Precondition) float64 { return float64(p.Passes) })},
	{name: "diskprep_bench_precondition_block_bytes", typ: "gauge", optional: true,
		help:     "Block size of the precondition's sequential writes, in bytes.",
		recValue: precondition(func(p *record.Precondition) float64 { return float64(p.BlockBytes) })},
	{name: "diskprep_bench_precondition_device_bytes", typ: "gauge", optional: true,
		help:     "Size of the device the precondition wrote, in bytes (once per pass).",
		recValue: precondition(func(p *record.Precondition) float64 { return float64(p.DeviceBytes) })},
	{name: "diskprep_bench_precondition_seconds", typ: "gauge", optional: true,
		help:     "Time the precondition took, all passes, in seconds.",
		recValue: precondition(func(p *record.Precondition) float64 { return p.ElapsedMS / 1e3 })},
	{name: "diskprep_bench_precondition_bw_bytes_per_second", typ: "gauge", optional: true,
		help:     "Write bandwidth of the precondition over all passes, in bytes per second.",
		recValue: precondition(func(p *record.Precondition) float64 { return p.BWBytesPerS })},

	// SMART readings of the target disk before and after the run.
	{name: "diskprep_bench_device_temperature_celsius", typ: "gauge", optional: true, label: [2]string{"reading", "before"},
		help:     "Temperature of the target disk (smartctl) before and after the run, in degrees Celsius.",
		recValue: health(false, func(h *record.HealthReading) *float64 { return h.TemperatureC })},
	{name: "diskprep_bench_device_temperature_celsius", label: [2]string{"reading", "after"},
		recValue: health(true, func(h *record.HealthReading) *float64 { return h.TemperatureC })},
	{name: "diskprep_bench_device_endurance_used_ratio", typ: "gauge", optional: true, label: [2]string{"reading", "before"},
		help:     "Share of the target disk's rated endurance used (NVMe percentage_used, ATA wear attribute) before and after the run; 1 is all of it, and it can exceed 1.",
		recValue: health(false, func(h *record.HealthReading) *float64 { return ratio(h.PercentUsed) })},
	{name: "diskprep_bench_device_endurance_used_ratio", label: [2]string{"reading", "after"},
		recValue: health(true, func(h *record.HealthReading) *float64 { return ratio(h.PercentUsed) })},
	{name: "diskprep_bench_device_media_errors", typ: "gauge", optional: true, label: [2]string{"reading", "before"},
		help:     "Media errors the target disk reported (NVMe media_errors; ATA reallocated, pending and uncorrectable sectors) before and after the run.",
		recValue: health(false, func(h *record.HealthReading) *float64 { return u2f(h.MediaErrors) })},
	{name: "diskprep_bench_device_media_errors", label: [2]string{"reading", "after"},
		recValue: health(true, func(h *record.HealthReading) *float64 { return u2f(h.MediaErrors) })},
	{name: "diskprep_bench_device_crc_errors", typ: "gauge", optional: true, label: [2]string{"reading", "before"},
		help:     "Interface CRC errors the target disk reported (ATA attribute 199) before and after the run.",
		recValue: health(false, func(h *record.HealthReading) *float64 { return u2f(h.CRCErrors) })},
	{name: "diskprep_bench_device_crc_errors", label: [2]string{"reading", "after"},
		recValue: health(true, func(h *record.HealthReading) *float64 { return u2f(h.CRCErrors) })},

	// The cached volume the target is or is on.
	{name: "diskprep_bench_cache_bytes", typ: "gauge", optional: true,
		help: "Room for data in the cache of the target's cached volume, in bytes.",
		recValue: func(r *record.Record) (float64, bool) {
			if c := r.Target.Cache; c != nil && c.CacheBytes > 0 {
				return float64(c.CacheBytes), true
			}
			return 0, false
		}},
}

// infoName is the cached volume's identity: value 1, labelled with its
// kind, mode and devices besides the record's labels.
const infoName = "diskprep_bench_cache_info"

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func ratio(pct *float64) *float64 {
	if pct == nil {
		return nil
	}
	r := *pct / 100
	return &r
}

func u2f(v *uint64) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

func steadyWindow(f func(*record.SteadyState) float64) func(*series) (float64, bool) {
	return func(s *series) (float64, bool) {
		// A window was judged once there were rounds enough for one.
		if ss := s.wl.SteadyState; ss != nil && ss.WindowFirst > 0 {
			return f(ss), true
		}
		return 0, false
	}
}

func host(f func(record.SeriesSummary) float64) func(*series) (float64, bool) {
	return func(s *series) (float64, bool) {
		if s.sum.HostSeconds == 0 {
			return 0, false
		}
		return f(s.sum), true
	}
}

func device(f func(record.SeriesSummary) (float64, bool)) func(*series) (float64, bool) {
	return func(s *series) (float64, bool) {
		if s.sum.DeviceSeconds == 0 {
			return 0, false
		}
		return f(s.sum)
	}
}

func cacheRatio(f func(*record.CacheIO) *float64) func(*series) (float64, bool) {
	return func(s *series) (float64, bool) {
		var v []float64
		for _, r := range s.wl.Measured() {
			if r.Cache != nil {
				if p := f(r.Cache); p != nil {
					v = append(v, *p)
				}
			}
		}
		if len(v) == 0 {
			return 0, false
		}
		return record.Median(v), true
	}
}

func precondition(f func(*record.Precondition) float64) func(*record.Record) (float64, bool) {
	return func(r *record.Record) (float64, bool) {
		if r.Precondition == nil {
			return 0, false
		}
		return f(r.Precondition), true
	}
}

func health(after bool, f func(*record.HealthReading) *float64) func(*record.Record) (float64, bool) {
	return func(r *record.Record) (float64, bool) {
		if r.Health == nil {
			return 0, false
		}
		h := r.Health.Before
		if after {
			h = r.Health.After
		}
		if h == nil {
			return 0, false
		}
		if v := f(h); v != nil {
			return *v, true
		}
		return 0, false
	}
}

// series is one direction of one workload of one record.
type series struct {
	labels  string // rendered {…} without the family's own label
	summary record.DirSummary
	wl      *record.WorkloadResult
	sum     record.SeriesSummary // of wl's measured repetitions
}

// recSeries is one record's labels and the record that holds them.
type recSeries struct {
	labels string
	rec    *record.Record
}

// Write writes the records' headline figures. Records whose series would
// repeat the labels of an earlier one (the same host, disk model, fs,
// workload and label measured twice) replace it when they ended later, as
// an exposition may not hold one series twice.
func Write(w io.Writer, recs ...*record.Record) error {
	var all []series
	index := map[string]int{}     // labels -> position in all
	ended := map[string]float64{} // labels -> end time of the record that holds it
	var infos []recSeries
	infoIndex := map[string]int{}
	for _, r := range recs {
		if r == nil {
			continue
		}
		end := float64(r.End.UnixNano()) / 1e9
		base := [][2]string{
			{"host", r.Host.Hostname},
			{"device_model", deviceModel(r)},
			{"fs", fsType(r)},
			{"label", r.Label},
			{"set", r.Set},
		}
		il := renderLabels(base)
		if i, ok := infoIndex[il]; !ok {
			infoIndex[il] = len(infos)
			infos = append(infos, recSeries{il, r})
		} else if end >= float64(infos[i].rec.End.UnixNano())/1e9 {
			infos[i].rec = r
		}
		for wi := range r.Workloads {
			wl := &r.Workloads[wi]
			for _, dir := range []string{"read", "write"} {
				s, ok := wl.Summary[dir]
				if !ok {
					continue
				}
				name := s.Name
				if name == "" {
					name = wl.Params.Name
				}
				l := renderLabels(append(slices.Clone(base), [2]string{"workload", name}, [2]string{"direction", dir}))
				one := series{labels: l, summary: s, wl: wl, sum: record.SummarizeSeries(wl.Measured()...)}
				if i, dup := index[l]; dup {
					if end >= ended[l] {
						all[i], ended[l] = one, end
					}
					continue
				}
				index[l], ended[l] = len(all), end
				all = append(all, one)
			}
		}
	}
	bw := bufio.NewWriter(w)
	writeFamilies(bw, families, len(all), func(i int) string { return all[i].labels }, func(f family, i int) (float64, bool) { return f.value(&all[i]) })
	writeFamilies(bw, recordFamilies, len(infos), func(i int) string { return infos[i].labels }, func(f family, i int) (float64, bool) { return f.recValue(infos[i].rec) })
	var info []string
	for _, in := range infos {
		c := in.rec.Target.Cache
		if c == nil {
			continue
		}
		l := in.labels[:len(in.labels)-1] + "," + renderLabels([][2]string{
			{"kind", c.Kind}, {"mode", c.Mode},
			{"origin_devices", strings.Join(c.OriginDevices, "+")}, {"cache_devices", strings.Join(c.CacheDevices, "+")},
		})[1:]
		info = append(info, infoName+l+" 1\n")
	}
	if len(info) > 0 {
		fmt.Fprintf(bw, "# HELP %s The target's cached volume (lvmcache, writecache, bcache): its kind, mode and devices as labels; always 1.\n# TYPE %s gauge\n", infoName, infoName)
		for _, l := range info {
			bw.WriteString(l)
		}
	}
	return bw.Flush()
}

// writeFamilies writes each family's samples, n series of them, the HELP
// and TYPE lines once before the first member of a family; an optional
// family without a sample is left out.
func writeFamilies(bw *bufio.Writer, fams []family, n int, labels func(int) string, value func(family, int) (float64, bool)) {
	for i := 0; i < len(fams); {
		j := i + 1
		for j < len(fams) && fams[j].name == fams[i].name {
			j++
		}
		var lines []string
		for _, f := range fams[i:j] {
			for k := 0; k < n; k++ {
				v, ok := value(f, k)
				if !ok {
					continue
				}
				l := labels(k)
				if f.label[0] != "" {
					l = l[:len(l)-1] + "," + renderLabels([][2]string{f.label})[1:]
				}
				lines = append(lines, f.name+l+" "+formatValue(v)+"\n")
			}
		}
		if len(lines) > 0 || !fams[i].optional {
			f := fams[i]
			fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
			for _, l := range lines {
				bw.WriteString(l)
			}
		}
		i = j
	}
}

func deviceModel(r *record.Record) string {
	t := r.Target
	if t.Vendor != "" && !strings.HasPrefix(strings.ToLower(t.Model), strings.ToLower(t.Vendor)) {
		return strings.TrimSpace(t.Vendor + " " + t.Model)
	}
	return t.Model
}

func fsType(r *record.Record) string {
	if r.Target.FSType != "" {
		return r.Target.FSType
	}
	if r.Target.Prepared != nil {
		return r.Target.Prepared.FSType
	}
	return ""
}

// renderLabels renders {k="v",...} in the given order; empty values are
// kept, as Prometheus treats a missing label and an empty one alike.
func renderLabels(kv [][2]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range kv {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p[0])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(p[1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// The exposition format escapes backslash, double quote and line feed in
// label values, and backslash and line feed in help text.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
