package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// WriteJSON writes the record as indented JSON, exactly as the store keeps it.
func WriteJSON(w io.Writer, rec *Record) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rec)
}

// tableCells are a row's cells as people write them by hand.
func tableCells(r Row, repeats bool) []string {
	s := r.Summary
	cell := func(st Stat, f func(float64) string) string {
		if !repeats || st.N < 2 || st.Min == st.Max {
			return f(st.Median)
		}
		return fmt.Sprintf("%s (%s-%s)", f(st.Median), f(st.Min), f(st.Max))
	}
	return []string{
		r.Name,
		cell(s.IOPS, fmtIOPS),
		cell(s.BWBytesPerS, fmtMBps),
		cell(s.RuntimeMS, func(v float64) string { return fmt.Sprintf("%.0f", v) }),
		cell(s.LatP50NS, fmtLatency),
		cell(s.LatP99NS, fmtLatency),
	}
}

var tableHeader = []string{"workload", "IOPS", "MB/s", "runtime ms", "p50 lat", "p99 lat"}

func fmtIOPS(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtMBps renders bytes/s as MB/s, 10^6 bytes per second (as drive vendors
// and fio's MB/s do, and as the table header says).
func fmtMBps(v float64) string {
	mb := v / 1e6
	if mb >= 100 {
		return fmt.Sprintf("%.0f", mb)
	}
	return fmt.Sprintf("%.1f", mb)
}

// fmtLatency renders nanoseconds with a unit people read at a glance.
func fmtLatency(ns float64) string {
	switch {
	case ns <= 0:
		return "-"
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

// targetLine describes the target in one line: "/mnt/data (xfs on loop3, QEMU HARDDISK)".
func targetLine(t Target) string {
	var parts []string
	if t.FSType != "" && t.Kind != KindDevice {
		parts = append(parts, t.FSType)
	}
	if t.Device != "" {
		if len(parts) > 0 {
			parts[0] += " on " + t.Device
		} else {
			parts = append(parts, t.Device)
		}
	}
	if t.Model != "" {
		parts = append(parts, hwinfo.DisplayModel(t.Vendor, t.Model))
	}
	if t.Virtual {
		parts = append(parts, "virtual disk")
	}
	if len(parts) == 0 {
		return t.Path
	}
	return t.Path + " (" + strings.Join(parts, ", ") + ")"
}

// WriteTable renders a record as a plain-text table.
func WriteTable(w io.Writer, rec *Record) error {
	repeats := rec.Repeat > 1
	fmt.Fprintf(w, "result %s  set %s  %s\n", rec.ID, rec.Set, rec.Start.Format(time.RFC3339))
	if rec.Label != "" {
		fmt.Fprintf(w, "label  %s\n", rec.Label)
	}
	fmt.Fprintf(w, "target %s\n", targetLine(rec.Target))
	if h := rec.Host; h.Hostname != "" {
		fmt.Fprintf(w, "host   %s\n", hostLine(h))
	}
	if rec.Partial {
		fmt.Fprintln(w, "PARTIAL: interrupted before the end")
	}
	fmt.Fprintln(w)
	rows := [][]string{tableHeader}
	for _, r := range Rows(rec) {
		rows = append(rows, tableCells(r, repeats))
	}
	widths := make([]int, len(tableHeader))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := widths[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("  " + strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	fmt.Fprintln(w)
	note := "MB/s = 10^6 bytes/s; latency = completion latency"
	if repeats {
		note += fmt.Sprintf("; median (min-max) of %d runs", rec.Repeat)
	}
	fmt.Fprintln(w, note)
	if ws := allWarnings(rec); len(ws) > 0 {
		fmt.Fprintln(w, "warnings:")
		for _, s := range ws {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
	return nil
}

// WriteMarkdown renders a record as a Markdown table with a short
// environment section, ready to paste into an issue or a post.
func WriteMarkdown(w io.Writer, rec *Record) error {
	repeats := rec.Repeat > 1
	title := rec.Set
	if rec.Label != "" {
		title = rec.Label + " — " + rec.Set
	}
	fmt.Fprintf(w, "### diskprep bench: %s\n\n", title)
	fmt.Fprintf(w, "- result: `%s` (%s)\n", rec.ID, rec.Start.Format(time.RFC3339))
	fmt.Fprintf(w, "- target: %s\n", mdEscape(targetLine(rec.Target)))
	if t := rec.Target; t.MountOptions != "" {
		fmt.Fprintf(w, "- mount options: `%s`\n", t.MountOptions)
	}
	if p := rec.Target.Prepared; p != nil && len(p.MkfsArgv) > 0 {
		fmt.Fprintf(w, "- mkfs: `%s`\n", strings.Join(p.MkfsArgv, " "))
	}
	if h := rec.Host; h.Hostname != "" {
		fmt.Fprintf(w, "- host: %s\n", mdEscape(hostLine(h)))
	}
	if rec.Partial {
		fmt.Fprintln(w, "- **partial**: interrupted before the end")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | IOPS | MB/s (10^6 B/s) | runtime ms | p50 lat | p99 lat |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, r := range Rows(rec) {
		c := tableCells(r, repeats)
		fmt.Fprintf(w, "| %s |\n", strings.Join(c, " | "))
	}
	if repeats {
		fmt.Fprintf(w, "\nmedian (min-max) of %d runs\n", rec.Repeat)
	}
	if ws := allWarnings(rec); len(ws) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, s := range ws {
			fmt.Fprintf(w, "- %s\n", mdEscape(s))
		}
	}
	return nil
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func hostLine(h Host) string {
	parts := []string{h.Hostname}
	if h.OS.PrettyName != "" {
		parts = append(parts, h.OS.PrettyName)
	}
	if h.Kernel != "" {
		parts = append(parts, "kernel "+h.Kernel)
	}
	if h.CPU.Model != "" {
		parts = append(parts, fmt.Sprintf("%s (%d cores/%d threads)", h.CPU.Model, h.CPU.Cores, h.CPU.Threads))
	}
	if h.Memory.TotalBytes > 0 {
		parts = append(parts, units.FormatSize(h.Memory.TotalBytes)+" RAM")
	}
	if v := h.Virt.Hypervisor; v != "" && v != "none" {
		parts = append(parts, "VM on "+v)
	}
	return strings.Join(parts, ", ")
}

// allWarnings lists the record's warnings and its workloads', once each.
// The same warning about several workloads ("seq1m-read: runtime 1s is
// under 3s", "seq1m-write: runtime 1s ...") becomes one line naming them all.
func allWarnings(rec *Record) []string {
	out := appendNew(nil, rec.Warnings...)
	var order []string
	names := map[string][]string{}
	for _, wr := range rec.Workloads {
		var ws []string
		ws = appendNew(ws, wr.Warnings...)
		for _, r := range wr.Runs {
			ws = appendNew(ws, r.Warnings...)
		}
		for _, w := range ws {
			msg, ok := strings.CutPrefix(w, wr.Params.Name+": ")
			if !ok {
				out = appendNew(out, w)
				continue
			}
			if _, seen := names[msg]; !seen {
				order = append(order, msg)
			}
			names[msg] = appendNew(names[msg], wr.Params.Name)
		}
	}
	for _, msg := range order {
		out = append(out, strings.Join(names[msg], ", ")+": "+msg)
	}
	return out
}

// Warnings lists every warning of a record once (for printing on stderr).
func Warnings(rec *Record) []string { return allWarnings(rec) }

// ProgressLine is the one-line live view of a run, without a line ending.
func ProgressLine(p Progress) string {
	head := fmt.Sprintf("[%d/%d] %s", p.Index, p.Count, p.Workload)
	if p.Repeat > 1 {
		head += fmt.Sprintf(" (run %d/%d)", p.Repetition, p.Repeat)
	}
	if p.Phase == "layout" {
		return head + ": laying out test file"
	}
	el := p.Elapsed.Truncate(100 * time.Millisecond).String()
	if p.Duration > 0 {
		el += "/" + p.Duration.String()
	}
	s := fmt.Sprintf("%s  %s", head, el)
	if p.Phase == "ramp" {
		s += "  ramp"
	}
	if iops := p.ReadIOPS + p.WriteIOPS; iops > 0 {
		s += fmt.Sprintf("  %s IOPS  %s MB/s", fmtIOPS(iops), fmtMBps(p.ReadBps+p.WriteBps))
	}
	if p.ETA > 0 {
		s += "  ETA " + p.ETA.Round(time.Second).String()
	}
	return s
}

// LiveLine redraws a progress line in place on a terminal.
type LiveLine struct {
	W    io.Writer
	last int
}

// Update replaces the current line with ProgressLine(p).
func (l *LiveLine) Update(p Progress) {
	s := ProgressLine(p)
	n := len([]rune(s))
	pad := max(l.last-n, 0)
	fmt.Fprintf(l.W, "\r%s%s", s, strings.Repeat(" ", pad))
	l.last = n
}

// Clear erases the line so the table starts on a clean one.
func (l *LiveLine) Clear() {
	if l.last > 0 {
		fmt.Fprintf(l.W, "\r%s\r", strings.Repeat(" ", l.last))
		l.last = 0
	}
}
