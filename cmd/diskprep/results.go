package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/fio"
	"github.com/diskprep/diskprep/bench/prom"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/internal/atomicfile"
	"github.com/diskprep/diskprep/internal/redact"
	"github.com/diskprep/diskprep/internal/suggest"
)

// recordFilter selects records by label, host and filesystem; each is a
// shell pattern ("xfs*"), empty matches everything.
type recordFilter struct {
	Label, Host, FS string
}

func (f recordFilter) match(r *record.Record) bool {
	ok := func(pattern, value string) bool {
		if pattern == "" {
			return true
		}
		m, err := path.Match(pattern, value)
		return err == nil && m || pattern == value
	}
	// --host also takes the token --redact showed for a host, so a
	// redacted listing can be narrowed down without the real name.
	host := ok(f.Host, r.Host.Hostname) || redact.IsToken(f.Host) && f.Host == redact.Token(redact.KindHost, r.Host.Hostname)
	return ok(f.Label, r.Label) && host && ok(f.FS, compare.GroupKey(r, compare.ByFS))
}

func (f recordFilter) validate() error {
	for _, p := range []string{f.Label, f.Host, f.FS} {
		if _, err := path.Match(p, ""); err != nil {
			return usageErr(fmt.Errorf("bad pattern %q: %w", p, err))
		}
	}
	return nil
}

func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "label", Usage: "only records whose label matches `PATTERN` (shell pattern, e.g. 'xfs*')"},
		&cli.StringFlag{Name: "host", Usage: "only records from hosts matching `PATTERN`"},
		&cli.StringFlag{Name: "fs", Usage: "only records on filesystems matching `PATTERN` (xfs, ext4, 'raw device')"},
	}
}

func filterFrom(c *cli.Context) recordFilter {
	return recordFilter{Label: c.String("label"), Host: c.String("host"), FS: c.String("fs")}
}

func warnAll(e *env, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(e.Stderr, "warning: %s\n", w)
	}
}

func resultsCommand() *cli.Command {
	return &cli.Command{
		Name:  "results",
		Usage: "list, show, remove, import and export stored benchmark results",
		Description: `Every bench run is stored as one JSON record in the results store (--results,
$DISKPREP_RESULTS, else /var/lib/diskprep/results as root). Records copied in
from other hosts or VMs sit side by side and compare with "diskprep compare".
An ID may be shortened to any unique prefix, as with git commits.

Examples:
  diskprep results list
  diskprep results list --label 'xfs*' -o csv
  diskprep results show 20261130T061500Z-3fa9
  diskprep results show 20261130T0615 -o json
  diskprep results rm 20261130T061500Z-3fa9
  diskprep results import old-run.json --label vm-vmdk --host-note "esx01 guest"
  diskprep results export 20261130T0615 --format fio > run.fio.json`,
		// Without it urfave answers an unknown subcommand with its help
		// command's "No help topic" and exit 3, which means "refused" here.
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErr(fmt.Errorf("results: unknown subcommand %q%s (valid: list, show, rm, import, export)", c.Args().First(), suggest.Hint(c.Args().First(), []string{"list", "show", "rm", "import", "export"}, "")))
			}
			return cli.ShowSubcommandHelp(c)
		},
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list stored results (id, time, label, host, target, fs, set)",
				Description: `Examples:
  diskprep results list
  diskprep results list --fs ext4 --host 'web*'
  diskprep results list -o json | jq '.results[].id'`,
				Flags: filterFlags(),
				Action: action(func(c *cli.Context, e *env) error {
					if c.NArg() > 0 {
						return usageErr(fmt.Errorf("results list takes no arguments (got %q)", c.Args().First()))
					}
					return runResultsList(c.Context, filterFrom(c), e)
				}),
			},
			{
				Name:      "show",
				Usage:     "show one result as a table (or the whole record with -o json)",
				ArgsUsage: "ID",
				Description: `Examples:
  diskprep results show 20261130T061500Z-3fa9
  diskprep results show 20261130T0615 -o markdown >> post.md
  diskprep results show 20261130T0615 -o json`,
				Action: action(func(c *cli.Context, e *env) error {
					if c.NArg() != 1 {
						return usageErr(fmt.Errorf("results show takes one ID, got %d arguments", c.NArg()))
					}
					return runResultsShow(c.Context, c.Args().First(), e)
				}),
			},
			{
				Name:      "rm",
				Aliases:   []string{"remove"},
				Usage:     "remove stored results",
				ArgsUsage: "ID...",
				Description: `Examples:
  diskprep results rm 20261130T061500Z-3fa9
  diskprep results rm 20261130T0615 20261130T0620`,
				Action: action(func(c *cli.Context, e *env) error {
					if c.NArg() == 0 {
						return usageErr(errors.New("results rm takes one or more IDs"))
					}
					return runResultsRm(c.Context, c.Args().Slice(), e)
				}),
			},
			{
				Name:      "import",
				Usage:     "import fio output (JSON, normal text or terse) as results",
				ArgsUsage: "FILE...",
				Description: `Turns fio output into diskprep records, so old fio runs join comparisons:
JSON and json+ (--output-format=json), the normal text fio prints
(-output=x.txt) and terse lines (--minimal), of fio 2.x or 3.x, one or several
jobs, with or without group_reporting. Workloads are named from what they did
(seqread, seqwrite, randread, randwrite) and the informative words of the job
name; options the output does not show are recorded as unknown. fio 2.x's KB/s
and MB/s (and terse KB) are base 2: converted, and the record says so.
fio does not record the host, so the host is "imported, unknown" unless
--host-note says what it was. Text fio printed before its JSON is skipped with a
warning. A job that failed (err= non-zero), cut-off output or a damaged terse
line exits 2 and stores nothing. "-" reads standard input.

Examples:
  diskprep results import old-run.json --label vm-vmdk
  diskprep results import seqread.txt seqwrite.txt randrw.txt --label direct
  fio --minimal job.fio | diskprep results import - --label rdm --host-note "esx01 guest"`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "label", Usage: "`LABEL` of the imported records"},
					&cli.StringFlag{Name: "host-note", Usage: "`TEXT` standing in for the unknown host (e.g. \"esx01 guest, vmdk\")"},
				},
				Action: action(func(c *cli.Context, e *env) error {
					if c.NArg() == 0 {
						return usageErr(errors.New("results import takes one or more fio JSON files (or fio text or terse output)"))
					}
					return runResultsImport(c.Context, resultsImportOptions{
						Files: c.Args().Slice(), Label: c.String("label"), HostNote: c.String("host-note"),
					}, e)
				}),
			},
			{
				Name:      "export",
				Usage:     "export a result as fio-style JSON, CSV, Prometheus text, or the record as JSON",
				ArgsUsage: "ID",
				Description: `Writes the record in fio's --output-format=json shape (jobs with read/write
iops, bw_bytes, bw in KiB/s, runtime, clat_ns with percentiles, lat_ns), which
fio plotting tools read. A workload repeated several times is exported as its
repetition closest to the median.

--format csv writes one line per workload, repetition and direction, as
"results show -o csv" does: the figures of the repetition (io_bytes, iops,
bw_bytes_per_s, runtime_ms, lat_*_ns from min to max, engine_cpu_ns_per_io),
the per-second host and device series summed up (host_cpu_*_pct_mean,
host_mem_used_bytes_max, device_util_pct_mean, device_avg_wait_ms: the series
themselves are in --as json), the workload's steady_state_* verdict, the
record's precondition_*, health_*_before/_after (smartctl) and the cached
volume's cache_kind, cache_mode and devices, and the repetition's cache hit
ratio (0 to 1) and counters. Columns keep their position; new ones are added at
the end. A cell is empty when the record has no such field.

--format prom writes the headline figures (MB/s, IOPS, p50/p99 latency per
workload and direction, labelled with host, device model, fs and workload) in
the Prometheus text format, for node_exporter's textfile collector, and where
the record has them: steady state, engine CPU seconds per I/O, host CPU and
device utilisation ratios over the run, the cache hit ratio, precondition,
device health before and after (label reading), and the cached volume
(diskprep_bench_cache_info). Ratios are 0 to 1; figures a record lacks have no
sample.

Examples:
  diskprep results export 20261130T0615 --format fio > run.fio.json
  diskprep results export 20261130T0615 --format csv > run.csv
  diskprep results export 20261130T0615 --format prom --output /var/lib/node_exporter/textfile/diskprep.prom
  diskprep results export 20261130T0615 --as fio --output run.fio.json
  diskprep results export 20261130T0615 --as json     # the record itself`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "as", Usage: "export `FORMAT`: fio (default), csv, prom or json; --format fio works too"},
					&cli.StringFlag{Name: "output", Usage: "write to `FILE` instead of standard output"},
				},
				Action: action(func(c *cli.Context, e *env) error {
					if c.NArg() != 1 {
						return usageErr(fmt.Errorf("results export takes one ID, got %d arguments", c.NArg()))
					}
					return runResultsExport(c.Context, resultsExportOptions{ID: c.Args().First(), As: c.String("as"), Output: c.String("output")}, e)
				}),
			},
		},
	}
}

func runResultsList(_ context.Context, f recordFilter, e *env) error {
	format, err := e.format("table", "json", "markdown", "csv")
	if err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	entries, warnings, err := record.List(e.ResultsDir)
	if err != nil {
		return err
	}
	warnAll(e, warnings)
	var picked []record.Entry
	for _, en := range entries {
		if f.match(en.Record) {
			picked = append(picked, en)
		}
	}
	if e.Redact {
		picked = redactEntries(picked)
	}
	return report.Results(e.Stdout, format, report.ResultsList{Entries: picked, Total: len(entries), Dir: e.ResultsDir})
}

func runResultsShow(_ context.Context, id string, e *env) error {
	format, err := e.format("table", "json", "markdown", "csv")
	if err != nil {
		return err
	}
	en, err := record.Load(e.ResultsDir, id)
	if err != nil {
		return err
	}
	if e.Redact {
		en.Record = redact.Copy(en.Record)
	}
	// As `bench` printed it: one renderer for both.
	return report.Record(e.Stdout, format, en.Record)
}

func runResultsRm(_ context.Context, ids []string, e *env) error {
	// Resolve every id first: a typo in the third id must not leave the
	// first two removed and the user unsure which.
	var full []string
	for _, id := range ids {
		en, err := record.Load(e.ResultsDir, id)
		if err != nil {
			return err
		}
		full = append(full, en.Record.ID)
	}
	for _, id := range full {
		removed, err := record.Remove(e.ResultsDir, id)
		if err != nil {
			return err
		}
		if !e.Quiet {
			fmt.Fprintf(e.Stdout, "removed %s\n", removed)
		}
	}
	return nil
}

type resultsImportOptions struct {
	Files           []string
	Label, HostNote string
}

// maxImportBytes bounds a fio output file: fio's JSON with every
// percentile and its histogram is a few MB.
const maxImportBytes = 64 << 20

func runResultsImport(_ context.Context, opts resultsImportOptions, e *env) error {
	// Read and convert every file before saving any, so a bad file in the
	// list saves nothing.
	var recs []*record.Record
	for _, file := range opts.Files {
		var data []byte
		var err error
		name := file
		if file == "-" {
			name = "standard input"
			data, err = io.ReadAll(e.Stdin)
		} else {
			data, err = readInput("import", file, maxImportBytes)
		}
		if err != nil && file == "-" {
			return fmt.Errorf("import: %w", err)
		}
		if err != nil {
			return err
		}
		rec, warnings, err := fio.Import(data, fio.ImportOptions{Label: opts.Label, HostNote: opts.HostNote, Source: name, Now: time.Now()})
		if errors.Is(err, fio.ErrBadOutput) {
			// Output fio cut off, of a failed job, or a damaged terse
			// line: bad input, and nothing of the list is saved.
			return usageErr(fmt.Errorf("import %s: %w", name, err))
		}
		if err != nil {
			return fmt.Errorf("import %s: %w", name, err)
		}
		for _, w := range warnings {
			fmt.Fprintf(e.Stderr, "warning: %s: %s\n", name, w)
		}
		// Two imports within one second must not share an id.
		for _, other := range recs {
			if other.ID == rec.ID {
				rec.ID = record.NewID(rec.Start)
			}
		}
		recs = append(recs, rec)
	}
	// The same fio output imported again (or twice in one list) is one
	// measurement: a second record would pool with the first in compare
	// and count its runs twice.
	known := map[string]string{}
	if entries, _, err := record.List(e.ResultsDir); err == nil {
		for _, en := range entries {
			known[measuredKey(en.Record)] = en.Record.ID
		}
	}
	for i, rec := range recs {
		key := measuredKey(rec)
		if id, dup := known[key]; dup {
			if !e.Quiet {
				fmt.Fprintf(e.Stdout, "%s is already in the store as %s: not imported again\n", opts.Files[i], id)
			}
			continue
		}
		known[key] = rec.ID
		if err := record.Save(e.ResultsDir, rec); err != nil {
			return err
		}
		if !e.Quiet {
			fmt.Fprintf(e.Stdout, "imported %s as %s (%d workloads, fio run of %s)\n", opts.Files[i], rec.ID, len(rec.Workloads), rec.Start.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// measuredKey is what a record measured, as fio reported it: each
// workload's name and, per repetition and direction, the I/O, runtime and
// latency. Times of the import itself (a text file's start is when it
// was imported) are left out, so the same file reads the same.
func measuredKey(r *record.Record) string {
	var b strings.Builder
	for _, wr := range r.Workloads {
		fmt.Fprintf(&b, "%s:", wr.Params.Name)
		for _, rep := range wr.Runs {
			for _, d := range []*record.DirResult{rep.Read, rep.Write} {
				if d == nil {
					b.WriteString("-;")
					continue
				}
				fmt.Fprintf(&b, "%d/%d/%g/%v;", d.IOBytes, d.IOs, d.RuntimeMS, d.LatNS)
			}
		}
		b.WriteByte('|')
	}
	return b.String()
}

// exportFormats are what results export writes (--as, --format).
var exportFormats = []string{"fio", "csv", "prom", "json"}

type resultsExportOptions struct {
	ID, As, Output string
}

func runResultsExport(_ context.Context, opts resultsExportOptions, e *env) error {
	as := opts.As
	if as == "" {
		// The global --format/-o flag catches "export ID --format fio".
		switch e.Format {
		case "", "table":
			as = "fio"
		default:
			as = e.Format
		}
	}
	if !slices.Contains(exportFormats, as) {
		return usageErr(fmt.Errorf("unknown export format %q%s (valid: %s)", as, suggest.Hint(as, exportFormats, ""), strings.Join(exportFormats, ", ")))
	}
	en, err := record.Load(e.ResultsDir, opts.ID)
	if err != nil {
		return err
	}
	if e.Redact {
		en.Record = redact.Copy(en.Record)
	}
	var buf bytes.Buffer
	switch as {
	case "fio":
		err = fio.Export(&buf, en.Record)
	case "prom":
		err = prom.Write(&buf, en.Record)
	case "csv":
		err = report.Record(&buf, "csv", en.Record)
	default:
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		err = enc.Encode(en.Record)
	}
	if err != nil {
		return err
	}
	return writeOutput(e, opts.Output, buf.Bytes())
}

// writeOutput writes data to file atomically, or to stdout when file is "".
func writeOutput(e *env, file string, data []byte) error {
	if file == "" || file == "-" {
		_, err := e.Stdout.Write(data)
		return err
	}
	if err := atomicfile.Write(file, data, 0o644); err != nil {
		return err
	}
	if !e.Quiet {
		abs, _ := filepath.Abs(file)
		fmt.Fprintf(e.Stderr, "wrote %s\n", abs)
	}
	return nil
}

// redactEntries redacts the records of a listing together (one host, one
// token in every row) and the file paths, which may name a host.
func redactEntries(entries []record.Entry) []record.Entry {
	recs := make([]*record.Record, len(entries))
	for i, en := range entries {
		recs[i] = en.Record
	}
	red := redact.All(recs)
	paths := make([]string, len(entries))
	for i, en := range entries {
		paths[i] = en.Path
	}
	paths = redact.Texts(paths, recs...)
	out := make([]record.Entry, len(entries))
	for i, en := range entries {
		out[i] = en
		out[i].Record = red[i]
		out[i].Path = paths[i]
	}
	return out
}
