package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
)

// RecordFormats are the outputs of Record.
var RecordFormats = []string{"table", "markdown", "csv", "json"}

// Record renders one result record: what ran where, then a line per
// workload direction with median (min–max) over repetitions, then the
// warnings. `diskprep bench` prints a record it just made and `results show`
// one from the store through this one function, so both look the same;
// json is the record itself, as the store keeps it.
func Record(w io.Writer, format string, rec *record.Record) error {
	switch format {
	case "table", "":
		return recordTable(w, rec)
	case "markdown", "md":
		return recordMarkdown(w, rec)
	case "csv":
		return recordCSV(w, rec)
	case "json":
		return record.WriteJSON(w, rec)
	}
	return fmt.Errorf("%q (valid: %s): %w", format, strings.Join(RecordFormats, ", "), ErrFormat)
}

// recordFacts are the identity lines above a record's table, reusing the
// comparison's identity (a one-record comparison shares everything).
func recordFacts(rec *record.Record) []compare.Field {
	facts := []compare.Field{{Key: "id", Name: "Record", Value: rec.ID}}
	if rec.Label != "" {
		facts = append(facts, compare.Field{Key: "label", Name: "Label", Value: rec.Label})
	}
	when := rec.Start.UTC().Format(time.RFC3339)
	if !rec.End.IsZero() && rec.End.After(rec.Start) {
		when += fmt.Sprintf(" (%s)", rec.End.Sub(rec.Start).Round(time.Second))
	}
	facts = append(facts, compare.Field{Key: "time", Name: "Time", Value: when})
	// A synchronized run says when it began and by what clock; any other
	// says its clock only when something is known of it.
	if rec.StartAt != nil && rec.ActualStart != nil {
		facts = append(facts, compare.Field{Key: "actual_start", Name: "Started", Value: startText(rec)})
	}
	if c := rec.Clock; c != nil && (rec.StartAt != nil || c.OffsetMS != nil) {
		facts = append(facts, compare.Field{Key: "clock", Name: "Clock", Value: clockText(c)})
	}
	if rec.Partial {
		facts = append(facts, compare.Field{Key: "partial", Name: "Partial", Value: "yes: interrupted, kept with --keep-partial"})
	}
	if c, err := compare.Compare([]*record.Record{rec}, compare.Options{By: compare.ByRecord}); err == nil {
		facts = append(facts, c.Environment...)
	}
	return facts
}

type recordLine struct {
	name, dir                  string
	n                          int
	mbps, iops, p50, p99, p999 string
}

func stat(s record.Stat, f func(float64) string) string {
	if s.N > 1 && s.Min != s.Max {
		return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
	}
	return f(s.Median)
}

func recordLines(rec *record.Record) []recordLine {
	var out []recordLine
	for _, wr := range rec.Workloads {
		for _, dir := range []string{"read", "write"} {
			s, ok := wr.Summary[dir]
			if !ok {
				continue
			}
			// Over the runs the summary's p99 is over (the steady-state
			// window, not every round), or p99 came out above p99.9.
			var p999 []float64
			for _, r := range wr.Measured() {
				d := r.Dir(dir)
				if d != nil {
					p999 = append(p999, d.LatNS.P999)
				}
			}
			out = append(out, recordLine{
				name: s.Name, dir: dir, n: s.IOPS.N,
				mbps: stat(s.BWBytesPerS, mbps),
				iops: stat(s.IOPS, num),
				p50:  stat(s.LatP50NS, latency),
				p99:  stat(s.LatP99NS, latency),
				p999: latency(record.Median(p999)),
			})
		}
	}
	return out
}

func recordTable(w io.Writer, rec *record.Record) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	for _, f := range recordFacts(rec) {
		fmt.Fprintf(tw, "%s\t%s\n", f.Name, f.Value)
	}
	tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tDIR\tRUNS\tMB/s\tIOPS\tLAT p50\tLAT p99\tLAT p99.9")
	for _, l := range recordLines(rec) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", l.name, l.dir, l.n, l.mbps, l.iops, l.p50, l.p99, l.p999)
	}
	tw.Flush()
	writeRecordNotes(&b, rec, "  - ")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeRecordNotes(b *strings.Builder, rec *record.Record, bullet string) {
	// Every warning once, those of the repetitions (engine fallbacks,
	// device agreement) included, the same one about several workloads
	// as one line naming them.
	warns := record.Warnings(rec)
	if len(warns) > 0 {
		b.WriteString("\nWarnings\n")
		if bullet == "- " {
			b.WriteString("\n")
		}
		for _, w := range warns {
			fmt.Fprintf(b, "%s%s\n", bullet, w)
		}
	}
	if notes := record.Verdicts(rec); len(notes) > 0 {
		b.WriteString("\nNotes\n")
		if bullet == "- " {
			b.WriteString("\n")
		}
		for _, n := range notes {
			fmt.Fprintf(b, "%s%s\n", bullet, n)
		}
	}
	b.WriteString("\nMB/s is 10^6 bytes/s; with several runs: median (min–max); latency is per I/O completion.\n")
}

func recordMarkdown(w io.Writer, rec *record.Record) error {
	var b strings.Builder
	name := rec.ID
	if rec.Label != "" {
		name = rec.Label + " (" + rec.ID + ")"
	}
	fmt.Fprintf(&b, "## %s\n\n| Workload | Dir | Runs | MB/s | IOPS | Lat p50 | Lat p99 | Lat p99.9 |\n|---|---|--:|--:|--:|--:|--:|--:|\n", mdCell(name))
	for _, l := range recordLines(rec) {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", mdCell(l.name), l.dir, l.n, l.mbps, l.iops, l.p50, l.p99, l.p999)
	}
	b.WriteString("\n### Environment\n\n| | |\n|---|---|\n")
	for _, f := range recordFacts(rec) {
		fmt.Fprintf(&b, "| %s | %s |\n", f.Name, mdCell(f.Value))
	}
	writeRecordNotes(&b, rec, "- ")
	_, err := io.WriteString(w, b.String())
	return err
}
