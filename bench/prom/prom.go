// Package prom writes the headline figures of bench records in the
// Prometheus text exposition format (version 0.0.4), the format that
// node_exporter's textfile collector reads, so a fleet graphs its disks
// where it already graphs everything else.
//
// Each figure is the median over a record's repetitions, one series per
// record, workload and direction, labelled host, device_model, fs, workload,
// direction, label and set. No sample carries a timestamp: the textfile
// collector rejects them. When the time matters, it is
// diskprep_bench_end_timestamp_seconds.
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

// family is one metric: its name, help and type, and how to read its value
// from a direction's summary.
type family struct {
	name, help, typ string
	quantile        string // "" when the family has no quantile label
	value           func(s record.DirSummary) float64
}

var families = []family{
	{name: "diskprep_bench_bw_bytes_per_second", typ: "gauge",
		help:  "Bandwidth in bytes per second (median over repetitions).",
		value: func(s record.DirSummary) float64 { return s.BWBytesPerS.Median }},
	{name: "diskprep_bench_iops", typ: "gauge",
		help:  "I/O operations per second (median over repetitions).",
		value: func(s record.DirSummary) float64 { return s.IOPS.Median }},
	{name: "diskprep_bench_latency_seconds", typ: "gauge", quantile: "0.5",
		help:  "Completion latency quantile in seconds (median over repetitions).",
		value: func(s record.DirSummary) float64 { return s.LatP50NS.Median / 1e9 }},
	{name: "diskprep_bench_latency_seconds", quantile: "0.99",
		value: func(s record.DirSummary) float64 { return s.LatP99NS.Median / 1e9 }},
	{name: "diskprep_bench_latency_mean_seconds", typ: "gauge",
		help:  "Mean completion latency in seconds (median over repetitions).",
		value: func(s record.DirSummary) float64 { return s.LatMeanNS.Median / 1e9 }},
	{name: "diskprep_bench_runtime_seconds", typ: "gauge",
		help:  "Measured run time of the workload in seconds (median over repetitions).",
		value: func(s record.DirSummary) float64 { return s.RuntimeMS.Median / 1e3 }},
}

// series is one direction of one workload of one record.
type series struct {
	labels  string // rendered {…} without the quantile
	summary record.DirSummary
}

// Write writes the records' headline figures. Records whose series would
// repeat the labels of an earlier one (the same host, disk model, fs,
// workload and label measured twice) replace it when they ended later, as
// an exposition may not hold one series twice.
func Write(w io.Writer, recs ...*record.Record) error {
	var all []series
	index := map[string]int{}     // labels -> position in all
	ended := map[string]float64{} // labels -> end time of the record that holds it
	type recInfo struct {
		labels string
		end    float64
	}
	var infos []recInfo
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
			infos = append(infos, recInfo{il, end})
		} else if end >= infos[i].end {
			infos[i].end = end
		}
		for _, wl := range r.Workloads {
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
				if i, dup := index[l]; dup {
					if end >= ended[l] {
						all[i].summary, ended[l] = s, end
					}
					continue
				}
				index[l], ended[l] = len(all), end
				all = append(all, series{labels: l, summary: s})
			}
		}
	}
	bw := bufio.NewWriter(w)
	for _, f := range families {
		if f.typ != "" {
			fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
		}
		for _, s := range all {
			labels := s.labels
			if f.quantile != "" {
				labels = labels[:len(labels)-1] + `,quantile="` + f.quantile + `"}`
			}
			fmt.Fprintf(bw, "%s%s %s\n", f.name, labels, formatValue(f.value(s.summary)))
		}
	}
	const endName = "diskprep_bench_end_timestamp_seconds"
	fmt.Fprintf(bw, "# HELP %s When the benchmark run ended, in seconds since the Unix epoch.\n# TYPE %s gauge\n", endName, endName)
	for _, in := range infos {
		fmt.Fprintf(bw, "%s%s %s\n", endName, in.labels, formatValue(in.end))
	}
	return bw.Flush()
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
