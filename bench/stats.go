package bench

import (
	"sort"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
)

// Summarize is median, min and max of values. It does not reorder values.
func Summarize(values []float64) Stat {
	if len(values) == 0 {
		return Stat{}
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	n := len(s)
	return Stat{Median: medianSorted(s), Min: s[0], Max: s[n-1], N: n}
}

// Median is the one median of diskprep (records, comparisons, reports):
// the middle value, or the mean of the middle two of an even count; 0 for
// none. It sorts a copy.
func Median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	return medianSorted(s)
}

func medianSorted(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Repetition converts an engine result into the record's form: rates and
// percentiles are derived here, once, from the raw counts and histograms.
func repetitionOf(res *engine.Result, index int, start time.Time) Repetition {
	r := Repetition{
		Index:      index,
		Start:      start.UTC(),
		Engine:     res.Engine,
		Direct:     res.Direct,
		AlignBytes: res.Align,
		ElapsedMS:  ms(res.Elapsed),
		CPUUserS:   res.CPUUser.Seconds(),
		CPUSysS:    res.CPUSys.Seconds(),
		Warnings:   append([]string(nil), res.Warnings...),
	}
	if res.Read.IOs > 0 {
		r.Read = dirOf(res.Read, res.Elapsed)
	}
	if res.Write.IOs > 0 {
		r.Write = dirOf(res.Write, res.Elapsed)
	}
	return r
}

func dirOf(d engine.DirResult, elapsed time.Duration) *DirResult {
	out := &DirResult{IOBytes: d.Bytes, IOs: d.IOs, RuntimeMS: ms(elapsed)}
	if s := elapsed.Seconds(); s > 0 {
		out.IOPS = float64(d.IOs) / s
		out.BWBytesPerS = float64(d.Bytes) / s
	}
	if h := d.Hist; h != nil && h.Count() > 0 {
		out.LatNS = Latency{
			Min:  float64(h.Min()),
			Mean: h.Mean(),
			P50:  float64(h.Percentile(50)),
			P90:  float64(h.Percentile(90)),
			P99:  float64(h.Percentile(99)),
			P999: float64(h.Percentile(99.9)),
			Max:  float64(h.Max()),
		}
	}
	out.Samples = make([]Sample, len(d.PerSecond))
	for i, s := range d.PerSecond {
		out.Samples[i] = Sample{IOs: s.IOs, Bytes: s.Bytes}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Summarize fills wr.Summary from its repetitions: one entry per direction
// that did I/O in any repetition. Imported runs (bench/fio) are summarized
// the same way as measured ones.
func (wr *WorkloadResult) Summarize() {
	wr.Summary = map[string]DirSummary{}
	for _, dir := range []string{"read", "write"} {
		var iops, bw, rt, p50, p99, mean []float64
		for _, r := range wr.Runs {
			d := r.Dir(dir)
			if d == nil {
				continue
			}
			iops = append(iops, d.IOPS)
			bw = append(bw, d.BWBytesPerS)
			rt = append(rt, d.RuntimeMS)
			p50 = append(p50, d.LatNS.P50)
			p99 = append(p99, d.LatNS.P99)
			mean = append(mean, d.LatNS.Mean)
		}
		if len(iops) == 0 {
			continue
		}
		wr.Summary[dir] = DirSummary{
			Name:        wr.Params.RowName(dir),
			IOPS:        Summarize(iops),
			BWBytesPerS: Summarize(bw),
			RuntimeMS:   Summarize(rt),
			LatP50NS:    Summarize(p50),
			LatP99NS:    Summarize(p99),
			LatMeanNS:   Summarize(mean),
		}
	}
}

// Dir is the repetition's result in direction "read" or "write" (nil when
// it did no I/O that way).
func (r *Repetition) Dir(dir string) *DirResult {
	if dir == "write" {
		return r.Write
	}
	return r.Read
}

// deviceIO is the diskstats delta of a run with its agreement to the engine's
// byte count.
func deviceIO(name string, d engine.DiskDelta, elapsed time.Duration, engineBytes uint64) *DeviceIO {
	out := &DeviceIO{
		Name:        name,
		ReadBytes:   d.ReadBytes,
		WriteBytes:  d.WriteBytes,
		ReadIOs:     d.ReadIOs,
		WriteIOs:    d.WriteIOs,
		UtilPercent: d.Utilization(elapsed),
		AvgQueue:    d.AvgQueue(elapsed),
	}
	if engineBytes > 0 {
		a := float64(d.ReadBytes+d.WriteBytes) / float64(engineBytes) * 100
		out.AgreementPercent = &a
	}
	return out
}

// Row is one line of a results table: a workload's direction.
type Row struct {
	Workload string // workload name
	Name     string // row name (randread for fileserver's randrw read side)
	Dir      string // read or write
	Summary  DirSummary
}

// Rows lists a record's table rows in run order, reads before writes within
// a workload. Comparisons align records on Row.Name.
func Rows(rec *Record) []Row {
	var rows []Row
	for _, wr := range rec.Workloads {
		for _, dir := range []string{"read", "write"} {
			if s, ok := wr.Summary[dir]; ok {
				rows = append(rows, Row{Workload: wr.Params.Name, Name: s.Name, Dir: dir, Summary: s})
			}
		}
	}
	return rows
}
