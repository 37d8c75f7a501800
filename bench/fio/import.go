// Package fio converts between diskprep result records and fio's output,
// so old fio runs join comparisons and diskprep runs feed the plotting
// tools people already have for fio. Import reads fio's JSON (and json+),
// its normal (human) output (text.go) and its terse output (terse.go), of
// fio 2.x and 3.x; Export writes fio's JSON.
//
// fio changed its JSON over time; Import reads both shapes:
//   - fio 2.x: "io_bytes" in KiB, "bw" in KiB/s, latencies "clat"/"lat" in
//     microseconds (percentiles too), no "job options" or "timestamp";
//   - fio 3.x: "io_bytes" in bytes (plus "io_kbytes"), "bw_bytes", latencies
//     "clat_ns"/"lat_ns" in nanoseconds, per-job "job options".
package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/units"
)

// ErrNotFio is returned for input that holds no fio output at all.
var ErrNotFio = errors.New("not fio JSON, normal or terse output")

// ErrBadOutput is returned for fio output that cannot be trusted: cut off,
// of a job that failed (err= non-zero), or a terse line of the wrong
// length. Such errors also match ErrNotFio: they are not importable.
var ErrBadOutput = errors.New("bad fio output")

// badOutput marks err as damaged fio output without adding words to it.
type badOutput struct{ err error }

func (b badOutput) Error() string { return b.err.Error() }
func (b badOutput) Unwrap() error { return b.err }
func (b badOutput) Is(target error) bool {
	return target == ErrBadOutput || target == ErrNotFio
}

func badOutputf(format string, args ...any) error {
	return badOutput{fmt.Errorf(format, args...)}
}

// UnknownHost is the hostname of an imported record when none was given:
// fio's JSON does not say where it ran.
const UnknownHost = "imported, unknown"

// ImportOptions say what fio's JSON does not.
type ImportOptions struct {
	Label    string
	HostNote string    // stands in for the unknown host identity
	Source   string    // file name, for warnings and the record
	Now      time.Time // start time when the document has no timestamp
	ID       string    // record id; "" makes one from the start time
}

// document is the part of fio's JSON that Import reads.
type document struct {
	Version     string         `json:"fio version"`
	Timestamp   int64          `json:"timestamp"`
	TimestampMS int64          `json:"timestamp_ms"`
	Global      map[string]any `json:"global options"`
	Jobs        []job          `json:"jobs"`

	// format names where the document came from, for the record's
	// warnings: "fio JSON", "fio normal output", "fio terse output".
	format string
	// shown lists the job options the format prints; nil means all of
	// them (fio 3.x JSON), so an absent one has fio's default.
	shown []string
}

type job struct {
	Name       string         `json:"jobname"`
	GroupID    int            `json:"groupid"`
	Error      int            `json:"error"`
	Options    map[string]any `json:"job options"`
	Read       *direction     `json:"read"`
	Write      *direction     `json:"write"`
	Trim       *direction     `json:"trim"`
	Mixed      *direction     `json:"mixed"` // unified_rw_reporting
	JobRuntime float64        `json:"job_runtime"`
	Elapsed    float64        `json:"elapsed"`
	UsrCPU     float64        `json:"usr_cpu"`
	SysCPU     float64        `json:"sys_cpu"`
}

type direction struct {
	IOBytes  float64  `json:"io_bytes"`
	IOKBytes *float64 `json:"io_kbytes"`
	BWBytes  *float64 `json:"bw_bytes"`
	BW       float64  `json:"bw"` // KiB/s
	IOPS     float64  `json:"iops"`
	Runtime  float64  `json:"runtime"` // ms
	TotalIOs *float64 `json:"total_ios"`
	ClatNS   *lat     `json:"clat_ns"`
	Clat     *lat     `json:"clat"` // µs, fio 2.x
	LatNS    *lat     `json:"lat_ns"`
	Lat      *lat     `json:"lat"` // µs, fio 2.x
}

type lat struct {
	Min        float64            `json:"min"`
	Max        float64            `json:"max"`
	Mean       float64            `json:"mean"`
	N          float64            `json:"N"`
	Percentile map[string]float64 `json:"percentile"`
}

// extract finds the fio JSON document in data. fio prints notes and
// warnings to stdout before the JSON ("note: both iodepth >= 1 and
// synchronous I/O engine ..."); those are skipped with a warning. The JSON
// itself starts with a '{' at the start of a line.
func extract(data []byte) (*document, []string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, fmt.Errorf("empty input: %w", ErrNotFio)
	}
	var candidates []int
	if trimmed[0] == '{' {
		candidates = []int{bytes.IndexByte(data, '{')}
	} else {
		for i := 0; i+1 < len(data); i++ {
			if data[i] == '\n' && data[i+1] == '{' {
				candidates = append(candidates, i+1)
			}
		}
	}
	var lastErr error = errors.New("no JSON object found")
	for _, start := range candidates {
		dec := json.NewDecoder(bytes.NewReader(data[start:]))
		var probe map[string]json.RawMessage
		if err := dec.Decode(&probe); err != nil {
			if bytes.Contains(data[start:], []byte(`"fio version"`)) || bytes.Contains(data[start:], []byte(`"jobs"`)) {
				return nil, nil, badOutputf("truncated or corrupt fio JSON: %v", err)
			}
			lastErr = fmt.Errorf("corrupt JSON: %w", err)
			continue
		}
		if _, ok := probe["jobs"]; !ok {
			lastErr = errors.New(`a JSON document without "jobs"`)
			continue
		}
		var doc document
		if err := json.Unmarshal(data[start:start+int(dec.InputOffset())], &doc); err != nil {
			return nil, nil, fmt.Errorf("fio JSON of an unexpected shape: %v: %w", err, ErrNotFio)
		}
		if len(doc.Jobs) == 0 {
			return nil, nil, fmt.Errorf("fio JSON without jobs: %w", ErrNotFio)
		}
		var warnings []string
		if pre := bytes.TrimSpace(data[:start]); len(pre) > 0 {
			first, _, _ := strings.Cut(string(pre), "\n")
			warnings = append(warnings, fmt.Sprintf("skipped %d bytes of text before the JSON (fio printed %q)", len(pre), first))
		}
		// fio --status-interval prints a document per interval, the final
		// report last: the last complete one is the run's result.
		end := start + int(dec.InputOffset())
		docs := 1
		for {
			var next document
			if err := dec.Decode(&next); err != nil || len(next.Jobs) == 0 {
				break
			}
			doc, end = next, start+int(dec.InputOffset())
			docs++
		}
		if docs > 1 {
			warnings = append(warnings, fmt.Sprintf("%d fio JSON documents (fio --status-interval?): used the last, the final report", docs))
		}
		if rest := bytes.TrimSpace(data[end:]); len(rest) > 0 {
			warnings = append(warnings, fmt.Sprintf("skipped %d bytes of text after the JSON", len(rest)))
		}
		return &doc, warnings, nil
	}
	return nil, nil, fmt.Errorf("%v: %w", lastErr, ErrNotFio)
}

var reFioErr = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^fio: pid=\d+, err=(\d+)/[^\n]*`) })

// parse finds fio's output in data, in whichever form fio wrote it.
func parse(data []byte) (*document, []string, error) {
	// A job that failed before it ran leaves no result, only fio's line
	// "fio: pid=0, err=1/file:filesetup.c:150, func=unlink, error=...".
	if m := reFioErr().FindSubmatch(data); m != nil && string(m[1]) != "0" {
		return nil, nil, badOutputf("a fio job failed: %s; nothing imported", oneLine(string(m[0])))
	}
	trimmed := bytes.TrimSpace(data)
	jsonish := bytes.HasPrefix(trimmed, []byte("{")) || bytes.Contains(data, []byte("\n{"))
	switch {
	case !jsonish && looksTerse(data):
		doc, w, err := parseTerse(data)
		if doc != nil {
			doc.format, doc.shown = "fio terse output", []string{}
		}
		return doc, w, err
	case !jsonish && looksNormal(data):
		doc, w, err := parseNormal(data)
		if doc != nil {
			doc.format, doc.shown = "fio normal output", []string{"rw", "bs", "ioengine", "iodepth", "numjobs"}
		}
		return doc, w, err
	}
	doc, w, err := extract(data)
	if doc != nil {
		doc.format = "fio JSON"
		if !jsonHasOptions(doc) {
			doc.shown = []string{} // fio 2.x wrote no options
		}
	}
	return doc, w, err
}

func jsonHasOptions(doc *document) bool {
	if doc.Global != nil {
		return true
	}
	for _, j := range doc.Jobs {
		if j.Options != nil {
			return true
		}
	}
	return false
}

// Import turns one fio output (JSON, normal or terse) into a record: one
// workload per job (or per group with group_reporting), jobs of the same
// name and group summed as fio's group_reporting would. Workloads are
// named from what they did (seqread, randwrite ...; see naming.go). The
// warnings say what was approximated or skipped.
func Import(data []byte, opts ImportOptions) (*record.Record, []string, error) {
	doc, warnings, err := parse(data)
	if err != nil {
		return nil, nil, err
	}
	for _, j := range doc.Jobs {
		if j.Error != 0 {
			return nil, nil, badOutputf("job %s failed: fio reported err=%d; nothing imported", oneLine(j.Name), j.Error)
		}
	}
	recWarnings := append([]string(nil), warnings...)
	start := opts.Now
	switch {
	case doc.TimestampMS > 0:
		start = time.UnixMilli(doc.TimestampMS)
	case doc.Timestamp > 0:
		start = time.Unix(doc.Timestamp, 0)
	}
	start = start.UTC()
	if start.Year() > maxYear {
		warnings = append(warnings, fmt.Sprintf("the document's timestamp is beyond the year %d: start time taken as %s", maxYear, opts.Now.UTC().Format(time.RFC3339)))
		start = opts.Now.UTC()
	}
	version := doc.Version
	if version == "" {
		version = "fio (version unknown)"
	}
	rec := &record.Record{
		Schema: record.Schema, ID: opts.ID, Label: opts.Label, Start: start,
		ToolVersion: version + " (imported)", Set: "fio", Repeat: 1,
	}
	if rec.ID == "" {
		rec.ID = record.NewID(start)
	}
	rec.Host.Hostname = UnknownHost
	if opts.HostNote != "" {
		rec.Host.Hostname = opts.HostNote
	}
	source := opts.Source
	if source == "" {
		source = doc.format
	}
	rec.Warnings = append(rec.Warnings, fmt.Sprintf("imported from %s (%s, %s): host, disk and filesystem identity unknown", source, doc.format, version))
	// The unit conversions are part of what the record says about itself.
	for _, w := range recWarnings {
		if strings.Contains(w, "in base 2") {
			rec.Warnings = append(rec.Warnings, w)
		}
	}

	type agg struct {
		name  string
		jobs  []job
		group int
	}
	var order []*agg
	byKey := map[string]*agg{}
	for _, j := range doc.Jobs {
		key := fmt.Sprintf("%d/%s", j.GroupID, j.Name)
		a, ok := byKey[key]
		if !ok {
			a = &agg{name: j.Name, group: j.GroupID}
			byKey[key] = a
			order = append(order, a)
		}
		a.jobs = append(a.jobs, j)
	}
	// fio names its target in the job options; the first one stands for
	// the record (fio 2.x did not write options at all).
	for _, j := range doc.Jobs {
		if t := option([]job{j}, doc.Global, "filename", "directory"); t != "" {
			rec.Target.Path, rec.Target.Kind = t, "imported"
			if strings.HasPrefix(t, "/dev/") {
				rec.Target.Device = strings.TrimPrefix(t, "/dev/")
			}
			break
		}
	}
	names := map[string]int{}
	var elapsed float64
	for _, a := range order {
		wr, ws, err := workloadOf(a.name, a.jobs, doc, opts.Source, start)
		if err != nil {
			return nil, nil, err
		}
		if !plausible(wr.Runs[0]) {
			return nil, nil, fmt.Errorf("job %s: negative or out-of-range figures: %w", a.name, ErrNotFio)
		}
		// Two jobs may do the same rw (two groups, or one name reused):
		// keep row names unique within the record.
		names[wr.Params.Name]++
		if n := names[wr.Params.Name]; n > 1 {
			suffix := fmt.Sprintf("-%d", n)
			wr.Params.Name += suffix
			if wr.Params.ReportRead != "" {
				wr.Params.ReportRead, wr.Params.ReportWrite = wr.Params.ReportRead+suffix, wr.Params.ReportWrite+suffix
			}
		}
		wr.Summarize()
		if len(wr.Summary) == 0 {
			warnings = append(warnings, fmt.Sprintf("job %s: no read or write I/O, skipped", a.name))
			continue
		}
		warnings = append(warnings, ws...)
		elapsed = math.Max(elapsed, wr.Runs[0].ElapsedMS)
		rec.Workloads = append(rec.Workloads, wr)
	}
	if len(rec.Workloads) == 0 {
		return nil, nil, fmt.Errorf("fio JSON with no read or write I/O in any job: %w", ErrNotFio)
	}
	rec.End = start.Add(time.Duration(elapsed * float64(time.Millisecond)))
	return rec, warnings, nil
}

// maxYear is the last year a record's JSON times can hold (RFC 3339).
const maxYear = 9999

// maxFigure bounds every imported figure: beyond it a sum of jobs could
// overflow the record's integers, and no run measures that much (2^62 bytes
// is 4 EiB; 2^62 ns is 146 years).
const maxFigure = 1 << 62

// plausible reports whether every figure of an imported repetition is one a
// record can hold and fio could have printed: finite, not negative, and
// within maxFigure. fio never prints negative rates or latencies; a file
// that does is damaged, and the figures would wrap when stored.
func plausible(r record.Repetition) bool {
	vals := []float64{r.ElapsedMS, r.CPUUserS, r.CPUSysS}
	for _, d := range []*record.DirResult{r.Read, r.Write} {
		if d == nil {
			continue
		}
		l := d.LatNS
		vals = append(vals, d.IOPS, d.BWBytesPerS, d.RuntimeMS, l.Min, l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
		if d.IOBytes > maxFigure || d.IOs > maxFigure {
			return false
		}
	}
	for _, v := range vals {
		if math.IsNaN(v) || v < 0 || v > maxFigure {
			return false
		}
	}
	// The record's end time is start + elapsed: keep it a valid duration.
	return r.ElapsedMS < float64(math.MaxInt64/int64(time.Millisecond))
}

// option reads a job option, falling back to the global options.
func option(jobs []job, global map[string]any, keys ...string) string {
	for _, k := range keys {
		for _, j := range jobs {
			if v, ok := j.Options[k]; ok {
				return fmt.Sprint(v)
			}
		}
		if v, ok := global[k]; ok {
			return fmt.Sprint(v)
		}
	}
	return ""
}

func hasOption(jobs []job, global map[string]any, key string) bool {
	for _, j := range jobs {
		if _, ok := j.Options[key]; ok {
			return true
		}
	}
	_, ok := global[key]
	return ok
}

func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// size parses a fio size; "4k,64k" (read,write) and "4k-16k" (a range)
// take their first figure; percentages and junk give 0 (unknown).
func size(v string) uint64 {
	v = strings.TrimSpace(v)
	if i := strings.IndexAny(v, ",-:"); i > 0 {
		v = v[:i]
	}
	n, err := units.ParseFioSize(v)
	if err != nil {
		return 0
	}
	return n
}

func atoi(v string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def
	}
	return n
}

// workloadOf builds one workload from the jobs fio reported under one name
// and group (one job with group_reporting; numjobs jobs without).
func workloadOf(name string, jobs []job, doc *document, source string, start time.Time) (record.WorkloadResult, []string, error) {
	var warnings, recWarnings []string // to the user; into the record too
	global := doc.Global
	shown := func(key string) bool { return doc.shown == nil || slices.Contains(doc.shown, key) }
	rw := option(jobs, global, "rw", "readwrite")
	switch {
	case rw == "" && shown("rw"):
		rw = "read" // fio's default
	case rw == "rw":
		rw = "readwrite"
	}
	engine := option(jobs, global, "ioengine")
	if engine == "" && shown("ioengine") {
		engine = "psync"
	}
	direct := truthy(option(jobs, global, "direct"))
	if b := option(jobs, global, "buffered"); b != "" && !truthy(b) {
		direct = true
	}
	p := workload.Workload{
		Name:       name,
		RW:         rw,
		BlockBytes: size(option(jobs, global, "bs", "blocksize")),
		SizeBytes:  size(option(jobs, global, "size")),
		Jobs:       atoi(option(jobs, global, "numjobs"), 1),
		IODepth:    atoi(option(jobs, global, "iodepth"), 1),
		RWMixRead:  atoi(option(jobs, global, "rwmixread"), 50),
		Direct:     direct,
		Engine:     engine,
	}
	if p.BlockBytes == 0 && !hasOption(jobs, global, "bs") && !hasOption(jobs, global, "blocksize") && jobs[0].Options != nil {
		p.BlockBytes = 4 << 10 // fio's default, when fio told us the options
	}
	if rt := option(jobs, global, "runtime"); rt != "" {
		if d, err := units.ParseFioDuration(rt); err == nil {
			p.Runtime = d
		}
	}
	if d := option(jobs, global, "random_distribution"); d != "" {
		if c, err := workload.CanonicalDistribution(d); err == nil {
			p.Distribution = c
		}
	}
	if r := option(jobs, global, "ramp_time"); r != "" {
		if d, err := units.ParseFioDuration(r); err == nil {
			p.Ramp = d
		}
	}
	if len(jobs) > 1 && !hasOption(jobs, global, "numjobs") {
		p.Jobs = len(jobs)
	}
	// What the output does not show is unknown, not fio's default: the
	// record says so, and compare matches on what is known.
	for _, k := range []struct{ param, option string }{
		{"bs", "bs"}, {"size", "size"}, {"iodepth", "iodepth"}, {"runtime", "runtime"},
		{"direct", "direct"}, {"engine", "ioengine"}, {"jobs", "numjobs"}, {"rwmixread", "rwmixread"},
	} {
		if shown(k.option) || hasOption(jobs, global, k.option) || k.param == "jobs" && len(jobs) > 1 {
			continue
		}
		p.Unknown = append(p.Unknown, k.param)
	}
	rep := record.Repetition{Index: 1, Start: start, Engine: engine, Direct: direct}
	var mixed bool
	for _, j := range jobs {
		if j.Error != 0 {
			warnings = append(warnings, fmt.Sprintf("job %s: fio reported error %d", name, j.Error))
		}
		if j.Mixed != nil {
			mixed = true
		}
		if j.Trim != nil && ioBytes(j.Trim) > 0 {
			warnings = append(warnings, fmt.Sprintf("job %s: trim I/O is not imported", name))
		}
	}
	if mixed {
		warnings = append(warnings, fmt.Sprintf("job %s: unified_rw_reporting mixes reads and writes; imported as reads", name))
	}
	rep.Read = combine(jobs, func(j job) *direction {
		if j.Mixed != nil {
			return j.Mixed
		}
		return j.Read
	})
	rep.Write = combine(jobs, func(j job) *direction { return j.Write })
	if len(jobs) > 1 && (rep.Read != nil || rep.Write != nil) {
		warnings = append(warnings, fmt.Sprintf("job %s: %d jobs reported separately (no group_reporting): rates summed, latency percentiles approximated by the I/O-weighted mean of the jobs' percentiles", name, len(jobs)))
	}
	var cpuUser, cpuSys, elapsed float64
	for _, j := range jobs {
		runtimeS := j.JobRuntime / 1000
		if runtimeS == 0 {
			runtimeS = math.Max(dirRuntime(j.Read), dirRuntime(j.Write)) / 1000
		}
		cpuUser += j.UsrCPU / 100 * runtimeS
		cpuSys += j.SysCPU / 100 * runtimeS
		elapsed = math.Max(elapsed, math.Max(dirRuntime(j.Read), dirRuntime(j.Write)))
	}
	rep.CPUUserS, rep.CPUSysS, rep.ElapsedMS = cpuUser, cpuSys, elapsed
	if p.RW == "" {
		dirs := "read"
		switch {
		case rep.Read != nil && rep.Write != nil:
			dirs = "rw"
		case rep.Write != nil:
			dirs = "write"
		}
		guess, from := guessRW(name, source, dirs)
		if guess != "" {
			p.RW = guess
			recWarnings = append(recWarnings, fmt.Sprintf("%s does not say whether the I/O was sequential or random: rw=%s taken from %s", doc.format, guess, from))
			warnings = append(warnings, fmt.Sprintf("job %s: %s", name, recWarnings[len(recWarnings)-1]))
		} else {
			p.Unknown = append(p.Unknown, "rw")
			warnings = append(warnings, fmt.Sprintf("job %s: %s does not say whether the I/O was sequential or random (name the job or the file seq... or rand...): rw unknown", name, doc.format))
		}
	}
	if p.RW != "randrw" && p.RW != "readwrite" {
		p.Unknown = slices.DeleteFunc(p.Unknown, func(k string) bool { return k == "rwmixread" })
	}
	switch {
	case strings.HasPrefix(doc.Version, exportVersionPrefix):
		// diskprep's own export: the job names are its workloads' names,
		// and its own options say how its directions were called and what
		// the record did not know.
		p.ReportRead, p.ReportWrite = option(jobs, global, optReportRead), option(jobs, global, optReportWrite)
		if p.ReportRead == "" && rep.Read != nil && rep.Write != nil {
			p.ReportRead, p.ReportWrite = name+"-read", name+"-write"
		}
		if u := option(jobs, global, optUnknown); u != "" {
			for _, k := range strings.Split(u, ",") {
				if !slices.Contains(p.Unknown, k) {
					p.Unknown = append(p.Unknown, k)
				}
			}
		}
	default:
		nameWorkload(&p, name, rep.Read != nil, rep.Write != nil)
	}
	clearUnknown(&p)
	return record.WorkloadResult{Params: p, Runs: []record.Repetition{rep}, Warnings: recWarnings}, warnings, nil
}

// oneLine keeps a name from the input on one line of an error message.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "\n\r") {
		return strconv.Quote(s)
	}
	return s
}

// clearUnknown zeroes the fields of unknown parameters, so no default
// fio or diskprep would have used passes for a recorded value.
func clearUnknown(p *workload.Workload) {
	for _, k := range p.Unknown {
		switch k {
		case "bs":
			p.BlockBytes = 0
		case "size":
			p.SizeBytes = 0
		case "iodepth":
			p.IODepth = 0
		case "jobs":
			p.Jobs = 0
		case "rwmixread":
			p.RWMixRead = 0
		case "engine":
			p.Engine = ""
		case "runtime":
			p.Runtime = 0
		case "direct":
			p.Direct = false
		}
	}
}

func dirRuntime(d *direction) float64 {
	if d == nil {
		return 0
	}
	return d.Runtime
}

// ioBytes is a direction's bytes: fio 3.x writes io_kbytes next to
// io_bytes in bytes; fio 2.x wrote only io_bytes, in KiB.
func ioBytes(d *direction) float64 {
	if d.IOKBytes != nil {
		return d.IOBytes
	}
	return d.IOBytes * 1024
}

func bwBytes(d *direction) float64 {
	if d.BWBytes != nil {
		return *d.BWBytes
	}
	return d.BW * 1024
}

// clat returns completion latency in ns: clat_ns, or fio 2.x's clat in µs.
func clat(d *direction) (l lat, scale float64, ok bool) {
	switch {
	case d.ClatNS != nil:
		return *d.ClatNS, 1, true
	case d.Clat != nil:
		return *d.Clat, 1000, true
	case d.LatNS != nil:
		return *d.LatNS, 1, true
	case d.Lat != nil:
		return *d.Lat, 1000, true
	}
	return lat{}, 0, false
}

// percentile is the value at q, or at the nearest listed percentile above
// it (conservative) when fio was given another percentile_list; 0 when fio
// reported none.
func percentile(m map[string]float64, q float64) float64 {
	type kv struct{ q, v float64 }
	var list []kv
	for k, v := range m {
		f, err := strconv.ParseFloat(k, 64)
		if err != nil || f <= 0 {
			continue // fio 2.x pads the list with "0.00": 0
		}
		list = append(list, kv{f, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].q < list[j].q })
	for _, e := range list {
		if e.q >= q-1e-9 {
			return e.v
		}
	}
	return 0
}

// combine sums one direction over the jobs of a workload.
func combine(jobs []job, pick func(job) *direction) *record.DirResult {
	var out record.DirResult
	var weight, minL, meanL, bytesSum, iosSum float64
	var pct, pctW [4]float64
	minL = math.Inf(1)
	seen := false
	for _, j := range jobs {
		d := pick(j)
		if d == nil {
			continue
		}
		b := ioBytes(d)
		ios := 0.0
		if d.TotalIOs != nil {
			ios = *d.TotalIOs
		} else if d.Runtime > 0 {
			ios = math.Round(d.IOPS * d.Runtime / 1000)
		}
		if b == 0 && ios == 0 {
			continue
		}
		seen = true
		bytesSum += b
		iosSum += ios
		out.IOPS += d.IOPS
		out.BWBytesPerS += bwBytes(d)
		out.RuntimeMS = math.Max(out.RuntimeMS, d.Runtime)
		l, scale, ok := clat(d)
		if !ok {
			continue
		}
		w := math.Max(ios, 1)
		weight += w
		minL = math.Min(minL, l.Min*scale)
		out.LatNS.Max = math.Max(out.LatNS.Max, l.Max*scale)
		meanL += l.Mean * scale * w
		// A job whose percentile list stops short of q (percentile_list=99)
		// has no figure for it, not a 0: counted as 0 it pulled p99.9
		// of the whole below p99.
		for i, q := range []float64{50, 90, 99, 99.9} {
			if v := percentile(l.Percentile, q); v > 0 {
				pct[i] += v * scale * w
				pctW[i] += w
			}
		}
	}
	if !seen {
		return nil
	}
	// A negative or overflowing sum is pinned beyond maxFigure, which
	// plausible refuses, instead of wrapping around in the conversion.
	out.IOBytes, out.IOs = toCount(bytesSum), toCount(iosSum)
	if weight > 0 {
		out.LatNS.Min = minL
		out.LatNS.Mean = meanL / weight
		for i := range pct {
			if pctW[i] > 0 {
				pct[i] /= pctW[i]
			}
		}
		out.LatNS.P50, out.LatNS.P90, out.LatNS.P99, out.LatNS.P999 = pct[0], pct[1], pct[2], pct[3]
	}
	return &out
}

func toCount(v float64) uint64 {
	if v < 0 || v > maxFigure || math.IsNaN(v) {
		return maxFigure + 1
	}
	return uint64(v)
}
