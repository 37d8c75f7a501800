package record

import (
	"math/rand/v2"
	"sort"
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

// Summarize fills wr.Summary from its measured repetitions (Measured):
// one entry per direction that did I/O in any of them, and the engine's
// CPU cost per I/O. Imported runs (bench/fio) are summarized the same way
// as measured ones.
func (wr *WorkloadResult) Summarize() {
	wr.Summary = map[string]DirSummary{}
	wr.EngineCPUNSPerIO = nil
	var cost []float64
	for _, r := range wr.Measured() {
		if c := r.CPUNSPerIO(); c > 0 {
			cost = append(cost, c)
		}
	}
	if len(cost) > 0 {
		s := Summarize(cost)
		wr.EngineCPUNSPerIO = &s
	}
	for _, dir := range []string{"read", "write"} {
		var iops, bw, rt, p50, p99, mean []float64
		for _, r := range wr.Measured() {
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

// CPUNSPerIO is the engine's CPU time (user+sys) per I/O of the
// repetition in ns, 0 when either is unknown.
func (r *Repetition) CPUNSPerIO() float64 {
	var ios uint64
	if r.Read != nil {
		ios += r.Read.IOs
	}
	if r.Write != nil {
		ios += r.Write.IOs
	}
	cpu := r.CPUUserS + r.CPUSysS
	if ios == 0 || cpu <= 0 {
		return 0
	}
	return cpu * 1e9 / float64(ios)
}

// Dir is the repetition's result in direction "read" or "write" (nil when
// it did no I/O that way).
func (r *Repetition) Dir(dir string) *DirResult {
	if dir == "write" {
		return r.Write
	}
	return r.Read
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

// MedianCI95 is a 95% interval of the median of values: the 2.5th and
// 97.5th percentiles of the medians of 2000 bootstrap resamples, with a
// fixed seed so a record's verdict does not change when read again. With
// three values it spans about their range.
func MedianCI95(values []float64) (lo, hi float64) {
	n := len(values)
	if n == 0 {
		return 0, 0
	}
	const resamples = 2000
	rng := rand.New(rand.NewPCG(0x5eed, uint64(n)))
	meds := make([]float64, resamples)
	buf := make([]float64, n)
	for i := range meds {
		for j := range buf {
			buf[j] = values[rng.IntN(n)]
		}
		sort.Float64s(buf)
		meds[i] = medianSorted(buf)
	}
	sort.Float64s(meds)
	return meds[int(0.025*resamples)], meds[int(0.975*resamples)-1]
}
