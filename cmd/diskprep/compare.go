package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/internal/redact"
	"github.com/diskprep/diskprep/internal/suggest"
	"github.com/diskprep/diskprep/internal/units"
)

type compareOptions struct {
	Sources  []string // record ids, record files or directories of records
	By       string
	Baseline string
	Latency  bool
	CPU      bool // --cpu: the host's CPU time per I/O
	Wide     bool // the full table, one column per group, whatever the width
	Filter   recordFilter
	Output   string
	// ExpectHosts (--expect-hosts) and Failures (--failures, a file of
	// "HOST: REASON" lines) name a fleet run's hosts that should have
	// records, and those that failed, with why.
	ExpectHosts []string
	Failures    string
}

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "compare results side by side, with the changes that are larger than the noise",
		ArgsUsage: "[ID|FILE|DIR]...",
		Description: `Compare lines up records by workload, one column per group of records, the
first group being the baseline. Groups are made --by label (default when
records have labels), fs, host, device or record; records of one group are
pooled as repetitions; without --by, records that differ in host, filesystem,
device, path or workload set are split into columns of their own, never pooled.
Each cell shows the median MB/s (10^6 bytes/s) and IOPS
with min–max over repetitions; every other column shows its change against the
baseline and whether it is real: a two-sided Mann–Whitney U test on the
repetitions (α=0.05) with a 95% bootstrap interval of the ratio of medians.
Inside the noise it says "no significant difference"; with too few repetitions
(bench --repeat 5 is a good habit) it says "n too small to judge".

Facts shared by all records (host, kernel, CPU, disk ...) are shown once; facts
that differ are shown per column, and a warning names any difference beyond
the grouping (kernel, CPU, disk model, engine, O_DIRECT, workload parameters).

With no arguments, every record in the results store that matches --label,
--host and --fs is compared. Arguments are record ids (or unique prefixes),
record files, or directories of records copied from other machines.

Examples:
  diskprep compare                                  # the whole store, by label
  diskprep compare --label 'xfs*'                  # filters take shell patterns
  diskprep compare --by fs -o markdown >> post.md
  diskprep compare --by host --baseline baremetal   # changes against that column
  diskprep compare 20261130T0615 20261130T0642 --latency
  diskprep compare --label 'xfs*' --cpu            # what encryption costs the CPU
  diskprep compare ./results-esx ./results-baremetal --by host -o html --output report.html
  diskprep compare --fs ext4 --by device -o csv > ext4.csv
  diskprep compare -o svg --output throughput.svg
  diskprep compare ./results-fleet --by host --expect-hosts node-a,node-b,node-c --failures failed.txt

By host, the report opens with a fleet summary: one line per host (its disk,
bus and filesystem, the median MB/s or IOPS of the main workloads and a p99
latency, its clock offset and its start skew), the fleet's median and spread
(MAD), the hosts outside that spread named as outliers, and the hosts that
failed: those of --failures (lines "HOST: REASON", as the fleet playbook
writes them) and those of --expect-hosts without a record. Start skew is each
host's actual start less its clock offset, less the earliest of them, for
records asked to start together (bench --start-at); a skew above 1 s and an
unknown offset are warned about.`,
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "by", Usage: "group records into columns by `WHAT`: " + strings.Join(compare.ByNames, ", ") + " (default: label, else what differs)"},
			&cli.StringFlag{Name: "baseline", Usage: "compare every column against the group `NAME`, or the one column whose name has it as a part, e.g. esx-guest for xfs · esx-guest (default: the first, oldest)"},
			&cli.BoolFlag{Name: "latency", Usage: "add the p99 completion latency of each workload"},
			&cli.BoolFlag{Name: "cpu", Usage: "add the host's busy CPU time per I/O of the disk (every process and kernel thread: what encryption costs)"},
			&cli.BoolFlag{Name: "wide", Usage: "one column per group however wide (default: one line per group under each workload when the full table passes the terminal's width, 120 columns when not a terminal)"},
			&cli.StringFlag{Name: "output", Usage: "write the report to `FILE` (its extension picks the format when -o is not given)"},
			&cli.StringSliceFlag{Name: "expect-hosts", Usage: "the fleet's `HOSTS` (comma-separated, repeatable): those without a record are named as failed (implies --by host)"},
			&cli.StringFlag{Name: "failures", Usage: "`FILE` of hosts that failed, one \"HOST: REASON\" a line, named in the report with their reason (implies --by host)"},
		),
		Action: action(func(c *cli.Context, e *env) error {
			return runCompare(c.Context, compareOptions{
				Sources: c.Args().Slice(), By: c.String("by"), Baseline: c.String("baseline"), Latency: c.Bool("latency"), CPU: c.Bool("cpu"),
				Wide: c.Bool("wide"), Filter: filterFrom(c), Output: c.String("output"),
				ExpectHosts: c.StringSlice("expect-hosts"), Failures: c.String("failures"),
			}, e)
		}),
	}
}

// formatFromFile picks a report format from an output file name.
func formatFromFile(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".html", ".htm":
		return "html"
	case ".svg":
		return "svg"
	case ".md", ".markdown":
		return "markdown"
	case ".csv":
		return "csv"
	case ".json":
		return "json"
	}
	return ""
}

func runCompare(_ context.Context, opts compareOptions, e *env) error {
	if opts.By != "" && !slices.Contains(compare.ByNames, opts.By) {
		return usageErr(fmt.Errorf("unknown --by %q%s (valid: %s)", opts.By, suggest.Hint(opts.By, compare.ByNames, ""), strings.Join(compare.ByNames, ", ")))
	}
	if e.Format == "" && opts.Output != "" {
		e.Format = formatFromFile(opts.Output)
	}
	format, err := e.format(report.Formats...)
	if err != nil {
		return err
	}
	if err := markupToTerminal(e, format, opts.Output); err != nil {
		return err
	}
	if err := opts.Filter.validate(); err != nil {
		return err
	}
	fleet := len(opts.ExpectHosts) > 0 || opts.Failures != ""
	if fleet && opts.By == "" {
		opts.By = compare.ByHost
	}
	if fleet && opts.By != compare.ByHost {
		return usageErr(fmt.Errorf("--expect-hosts and --failures name a fleet's hosts: they go with --by host, not --by %s", opts.By))
	}
	var failed []compare.FailedHost
	if opts.Failures != "" {
		if failed, err = readFailures(opts.Failures); err != nil {
			return usageErr(err)
		}
	}
	recs, warnings, err := record.Gather(opts.Sources, e.ResultsDir)
	if err != nil {
		return err
	}
	if e.Redact {
		warnings = redact.Texts(warnings, recs...)
	}
	warnAll(e, warnings)
	var picked []*record.Record
	for _, r := range recs {
		if opts.Filter.match(r) {
			picked = append(picked, r)
		}
	}
	if len(picked) == 0 {
		where := strings.Join(opts.Sources, ", ")
		if where == "" {
			where = e.ResultsDir
		}
		if len(recs) > 0 {
			return fmt.Errorf("%w: none of the %d records in %s match the filters", compare.ErrNothing, len(recs), where)
		}
		return fmt.Errorf("%w: no result records in %s (run diskprep bench, or give record files or directories)", compare.ErrNothing, where)
	}
	if e.Redact {
		// Filters above match the real names; the report shows tokens,
		// and a --baseline given by its real name follows its column.
		opts.Baseline = redact.Text(opts.Baseline, picked...)
		// A fleet's hosts are hostnames whether or not a record holds
		// them: the token of each is the one its records would get.
		for i, h := range opts.ExpectHosts {
			opts.ExpectHosts[i] = redact.Token(redact.KindHost, h)
		}
		for i, fh := range failed {
			tok := redact.Token(redact.KindHost, fh.Host)
			failed[i].Host, failed[i].Reason = tok, redact.Text(strings.ReplaceAll(fh.Reason, fh.Host, tok), picked...)
		}
		picked = redact.All(picked)
	}
	c, err := compare.Compare(picked, compare.Options{By: opts.By, Baseline: opts.Baseline, Latency: opts.Latency, CPU: opts.CPU,
		Expected: opts.ExpectHosts, Failed: failed})
	if err != nil {
		return err
	}
	buf, err := renderComparison(e, c, format, opts.Output, report.Layout{Wide: opts.Wide})
	if err != nil {
		return err
	}
	return writeOutput(e, opts.Output, buf.Bytes())
}

// markupToTerminal refuses a page or a drawing (-o html, -o svg) bound
// for a terminal: a screen of markup helps nobody, and fscompare would
// print it after minutes of work.
func markupToTerminal(e *env, format, output string) error {
	if (format == "html" || format == "svg") && output == "" && isTerminal(e.Stdout) {
		return usageErr(fmt.Errorf("-o %s writes markup, not text for a terminal: give --output FILE.%s (or redirect stdout to a file)", format, format))
	}
	return nil
}

// renderComparison renders c in format (compare and fscompare). Outputs that
// do not carry the caveats (csv, svg) or go to a file get them on stderr,
// where the person running the command sees them. A table for the
// terminal fits the terminal (tableLayout).
func renderComparison(e *env, c *compare.Comparison, format, output string, l report.Layout) (*bytes.Buffer, error) {
	if format == "csv" || format == "svg" || output != "" {
		warnAll(e, c.Warnings)
	}
	l = tableLayout(e, format, output, l)
	var buf bytes.Buffer
	if err := report.WriteLayout(&buf, format, c, l); err != nil {
		return nil, err
	}
	return &buf, nil
}

// tableLayout is l with the width of the terminal the table is printed on:
// only a table, only to stdout (a file, Markdown and HTML keep the default
// 120 columns whatever the terminal), and only when stdout is a terminal
// (e.Width 0: a pipe or a file gets the table it always got).
func tableLayout(e *env, format, output string, l report.Layout) report.Layout {
	if (format == "table" || format == "") && output == "" && l.Width == 0 {
		l.Width = e.Width
	}
	return l
}

// maxFailuresBytes bounds a --failures file: a line a failed host.
const maxFailuresBytes = 1 << 20

// readFailures reads a --failures file: one failed host a line, "HOST:
// REASON" (the reason is what follows the first ": "; a line with none
// is a host without a reason); blank lines and # comments are skipped.
func readFailures(file string) ([]compare.FailedHost, error) {
	data, err := readInput("--failures", file, maxFailuresBytes)
	if err != nil {
		return nil, err
	}
	return parseFailures(string(data)), nil
}

// readInput reads a file the user gave as input (what names it, a flag or
// a command, starts each error): a regular file only, opened O_NONBLOCK so
// a named pipe in its place is refused instead of waited on, and at most
// max bytes, so a device or a runaway file is not read without end.
func readInput(what, file string, max int64) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s: not a regular file", what, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %s: larger than %s", what, file, units.FormatSize(uint64(max)))
	}
	return data, nil
}

func parseFailures(text string) []compare.FailedHost {
	var out []compare.FailedHost
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		host, reason, _ := strings.Cut(line, ": ")
		host = strings.TrimSpace(strings.TrimSuffix(host, ":"))
		out = append(out, compare.FailedHost{Host: host, Reason: strings.TrimSpace(reason)})
	}
	return out
}
