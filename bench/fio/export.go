package fio

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/units"
)

// exportVersionPrefix starts the "fio version" of what Export writes, so
// Import knows the job names are diskprep's workload names.
const exportVersionPrefix = "fio-compatible diskprep "

// The fio 3.x shapes Export writes; field order follows fio's so a diff
// against a real fio file reads naturally.
type outDoc struct {
	Version     string            `json:"fio version"`
	Timestamp   int64             `json:"timestamp"`
	TimestampMS int64             `json:"timestamp_ms"`
	Time        string            `json:"time"`
	Global      map[string]string `json:"global options"`
	Jobs        []outJob          `json:"jobs"`
}

type outJob struct {
	Name       string            `json:"jobname"`
	GroupID    int               `json:"groupid"`
	Error      int               `json:"error"`
	Desc       string            `json:"desc,omitempty"`
	Options    map[string]string `json:"job options"`
	Read       outDir            `json:"read"`
	Write      outDir            `json:"write"`
	Trim       outDir            `json:"trim"`
	JobRuntime int64             `json:"job_runtime"`
	Elapsed    int64             `json:"elapsed"`
	UsrCPU     float64           `json:"usr_cpu"`
	SysCPU     float64           `json:"sys_cpu"`
}

type outDir struct {
	IOBytes     uint64  `json:"io_bytes"`
	IOKBytes    uint64  `json:"io_kbytes"`
	BWBytes     uint64  `json:"bw_bytes"`
	BW          uint64  `json:"bw"`
	IOPS        float64 `json:"iops"`
	Runtime     int64   `json:"runtime"`
	TotalIOs    uint64  `json:"total_ios"`
	ShortIOs    uint64  `json:"short_ios"`
	DropIOs     uint64  `json:"drop_ios"`
	SlatNS      outLat  `json:"slat_ns"`
	ClatNS      outLat  `json:"clat_ns"`
	LatNS       outLat  `json:"lat_ns"`
	BWMin       uint64  `json:"bw_min"`
	BWMax       uint64  `json:"bw_max"`
	BWAgg       float64 `json:"bw_agg"`
	BWMean      float64 `json:"bw_mean"`
	BWDev       float64 `json:"bw_dev"`
	BWSamples   int     `json:"bw_samples"`
	IOPSMin     uint64  `json:"iops_min"`
	IOPSMax     uint64  `json:"iops_max"`
	IOPSMean    float64 `json:"iops_mean"`
	IOPSStddev  float64 `json:"iops_stddev"`
	IOPSSamples int     `json:"iops_samples"`
}

type outLat struct {
	Min        uint64            `json:"min"`
	Max        uint64            `json:"max"`
	Mean       float64           `json:"mean"`
	Stddev     float64           `json:"stddev"`
	N          uint64            `json:"N"`
	Percentile map[string]uint64 `json:"percentile,omitempty"`
}

// Export writes rec as fio 3.x --output-format=json: one job per workload,
// with read and write iops, bw_bytes, bw (KiB/s), runtime (ms), clat_ns
// with its percentile map, and lat_ns. A workload run several times is
// exported as its most typical repetition (the one whose throughput is
// closest to the median), as fio has no notion of repetitions; the job's
// "desc" says which.
func Export(w io.Writer, rec *record.Record) error {
	doc := outDoc{
		Version:     exportVersionPrefix + rec.ToolVersion,
		Timestamp:   rec.Start.Unix(),
		TimestampMS: rec.Start.UnixMilli(),
		Time:        rec.Start.UTC().Format("Mon Jan _2 15:04:05 2006"),
		Global:      map[string]string{},
		Jobs:        []outJob{},
	}
	if rec.Target.Path != "" {
		doc.Global["directory"] = rec.Target.Path
	}
	for gi, wr := range rec.Workloads {
		if len(wr.Runs) == 0 {
			continue
		}
		ri := typical(wr)
		r := wr.Runs[ri]
		p := wr.Params
		j := outJob{
			Name: p.Name, GroupID: gi, Options: jobOptions(p, r),
			JobRuntime: int64(math.Round(r.ElapsedMS)), Elapsed: int64(math.Ceil(r.ElapsedMS / 1000)),
		}
		if len(wr.Runs) > 1 {
			j.Desc = fmt.Sprintf("diskprep record %s, repetition %d of %d (closest to the median)", rec.ID, r.Index, len(wr.Runs))
		} else {
			j.Desc = "diskprep record " + rec.ID
		}
		if secs := r.ElapsedMS / 1000; secs > 0 {
			// fio's usr_cpu/sys_cpu are percent of one CPU over the run.
			j.UsrCPU, j.SysCPU = r.CPUUserS/secs*100, r.CPUSysS/secs*100
		}
		if r.Read != nil {
			j.Read = dirOut(r.Read)
		}
		if r.Write != nil {
			j.Write = dirOut(r.Write)
		}
		doc.Jobs = append(doc.Jobs, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// typical is the index of the repetition whose total throughput is
// closest to the median of all repetitions.
func typical(wr record.WorkloadResult) int {
	tot := func(r record.Repetition) float64 {
		var t float64
		if r.Read != nil {
			t += r.Read.BWBytesPerS
		}
		if r.Write != nil {
			t += r.Write.BWBytesPerS
		}
		return t
	}
	vals := make([]float64, len(wr.Runs))
	for i, r := range wr.Runs {
		vals[i] = tot(r)
	}
	med := record.Summarize(vals).Median
	best := 0
	for i, v := range vals {
		if math.Abs(v-med) < math.Abs(vals[best]-med) {
			best = i
		}
	}
	return best
}

func jobOptions(p workload.Workload, r record.Repetition) map[string]string {
	o := map[string]string{"name": p.Name, "rw": fioRW(p.RW)}
	if p.BlockBytes > 0 {
		o["bs"] = units.FormatSizeShort(p.BlockBytes)
	}
	if p.SizeBytes > 0 {
		o["size"] = units.FormatSizeShort(p.SizeBytes)
	}
	if p.Jobs > 0 {
		o["numjobs"] = strconv.Itoa(p.Jobs)
	}
	if p.IODepth > 0 {
		o["iodepth"] = strconv.Itoa(p.IODepth)
	}
	if p.Runtime > 0 {
		o["runtime"] = strconv.FormatInt(int64(p.Runtime.Seconds()), 10)
		o["time_based"] = ""
	}
	if p.RW == "randrw" {
		o["rwmixread"] = strconv.Itoa(p.RWMixRead)
	}
	if r.Direct {
		o["direct"] = "1"
	}
	if p.Distribution != "" {
		o["random_distribution"] = p.Distribution
	}
	switch r.Engine {
	case "sync":
		o["ioengine"] = "psync"
	case "":
	default:
		o["ioengine"] = r.Engine
	}
	if p.Jobs > 1 {
		o["group_reporting"] = ""
	}
	// Not fio's: what Import needs to read its own export back as it was
	// (fio and plotting tools ignore options they do not know).
	if p.ReportRead != "" || p.ReportWrite != "" {
		o[optReportRead], o[optReportWrite] = p.ReportRead, p.ReportWrite
	}
	if len(p.Unknown) > 0 {
		o[optUnknown] = strings.Join(p.Unknown, ",")
	}
	return o
}

// Job options of diskprep's export that fio does not have.
const (
	optReportRead  = "diskprep_report_read_as"
	optReportWrite = "diskprep_report_write_as"
	optUnknown     = "diskprep_unknown_params"
)

func fioRW(rw string) string {
	if rw == "readwrite" {
		return "rw"
	}
	return rw
}

func dirOut(d *record.DirResult) outDir {
	o := outDir{
		IOBytes: d.IOBytes, IOKBytes: d.IOBytes >> 10,
		BWBytes: uint64(math.Round(d.BWBytesPerS)), BW: uint64(math.Round(d.BWBytesPerS / 1024)),
		IOPS: d.IOPS, Runtime: int64(math.Round(d.RuntimeMS)), TotalIOs: d.IOs, BWAgg: 100,
	}
	l := d.LatNS
	o.ClatNS = outLat{
		Min: uint64(l.Min), Max: uint64(l.Max), Mean: l.Mean, N: d.IOs,
		Percentile: map[string]uint64{
			"50.000000": uint64(l.P50), "90.000000": uint64(l.P90),
			"99.000000": uint64(l.P99), "99.900000": uint64(l.P999),
		},
	}
	// diskprep measures submission to completion as one latency, which is
	// what fio's lat_ns (slat + clat) means; slat is not measured apart.
	o.LatNS = outLat{Min: uint64(l.Min), Max: uint64(l.Max), Mean: l.Mean, N: d.IOs}
	if len(d.Samples) > 0 {
		var bw, iops []float64
		for _, s := range d.Samples {
			bw = append(bw, float64(s.Bytes)/1024)
			iops = append(iops, float64(s.IOs))
		}
		o.BWMin, o.BWMax, o.BWMean, o.BWDev = minMaxMeanDev(bw)
		o.IOPSMin, o.IOPSMax, o.IOPSMean, o.IOPSStddev = minMaxMeanDev(iops)
		o.BWSamples, o.IOPSSamples = len(bw), len(iops)
	}
	return o
}

func minMaxMeanDev(v []float64) (uint64, uint64, float64, float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	var sum, sq float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	for _, x := range s {
		sq += (x - mean) * (x - mean)
	}
	dev := 0.0
	if len(s) > 1 {
		dev = math.Sqrt(sq / float64(len(s)-1))
	}
	return uint64(s[0]), uint64(s[len(s)-1]), mean, dev
}

// Formats lists the export formats Export offers (one, today).
var Formats = []string{"fio"}
