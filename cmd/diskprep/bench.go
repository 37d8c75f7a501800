package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/redact"
	"github.com/diskprep/diskprep/internal/units"
)

type benchOptions struct {
	Target           string
	Set              string
	Workloads        []string
	Runtime          string
	Size             string
	BS               string
	Jobs             int
	IODepth          int
	Engine           string
	Repeat           int
	RepeatAuto       bool // --repeat auto[:MAX]: Repeat is MAX
	Label            string
	Hostname         string
	AllowDeviceWrite bool
	// Yes writes to a block device holding something without asking.
	Yes          bool
	KeepPartial  bool
	NoDirect     bool
	SteadyState  bool
	Precondition bool
	// StartAt is --start-at as typed; ClockOffset and ClockRTT are
	// --clock-offset and --clock-rtt (bench_start.go reads them).
	StartAt     string
	ClockOffset string
	ClockRTT    string
}

// specList collects repeated --workload flags verbatim: a SPEC is itself
// comma-separated, so cli's comma-splitting slice flag would cut it apart.
// It is made fresh for each command built, so runs do not share specs.
type specList []string

func (s *specList) Set(v string) error { *s = append(*s, v); return nil }
func (s *specList) String() string     { return strings.Join(*s, " ") }

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "benchmark a directory, file or block device and record the result",
		ArgsUsage: "TARGET [TARGET...]",
		Description: `Bench runs a built-in workload set (or --workload SPECs) with diskprep's own
I/O engine (O_DIRECT, sync or io_uring; no fio needed), prints a table and
stores one record with the host's and the disk's identity in the results store.

TARGET is a directory (a test file is made there, filled with real data, and
removed afterwards, also on Ctrl-C), a regular file (used in place, must be at
least --size), or a block device (read workloads only, unless
--allow-device-write; a mounted or system device is never written, and
one holding anything, a partition table, a file system, a RAID or LVM
member, a LUKS header, is shown with what it holds and written only when
confirmed on a terminal or with --yes).
A TARGET named through a symbolic link another user owns or could replace
is refused (exit 3): give the path it leads to.
A run killed outright (SIGKILL, power loss) leaves its test file,
diskprep-bench.<id>.tmp; the next run in that directory removes it, and says
so (one of another user's it names as a warning, with the rm that removes
it). The record is written whole or not at all.

Several TARGETs are compared: each round runs every workload once on each
target in turn (the first rotating: A B, B A, ...), --repeat rounds, so that
load or caches that drift during the run fall on every target alike; each
target's rounds are saved as one record (labelled by --label a,b,...) and
their comparison is printed, as compare --by label prints it.

Sets: ` + setList() + `

A SPEC is key=value pairs, as in fio:
  name=seqread,rw=read,bs=32M,size=2G,jobs=16,iodepth=1,runtime=10s
keys: name, rw (read|write|randread|randwrite|randrw), bs, size, offset, jobs,
iodepth, runtime (0 = one pass over size), ramp, rwmixread, fsync (0|1),
seed, direct (0|1), engine (auto|sync|io_uring), data (random|zeros|compress:NN),
distribution (random|zipf:THETA|zoned:ACCESS/SIZE:..., fio's random_distribution:
zipf:1.2, or zoned:90/10:10/90 for 90% of the I/O to 10% of the data).
Flags such as --size override a set's values and fill what a SPEC leaves out.
MB/s is 10^6 bytes per second.

Examples:
  diskprep bench /mnt/data --set quick
  diskprep bench /mnt/data --set fileserver --repeat 3 --label xfs
  diskprep bench /mnt/data --set cdm --size 4G -o markdown >> post.md
  diskprep bench /mnt/data --workload rw=randread,bs=4k,iodepth=32,runtime=30s
  diskprep bench /mnt/a /mnt/b --label xfs,ext4 --repeat 5   # interleaved
  diskprep bench /dev/sdb --set nvme                 # reads only
  diskprep bench /dev/sdb --set nvme --allow-device-write   # destroys its data
  diskprep bench /dev/nvme1n1 --set nvme --allow-device-write --precondition --steady-state
  diskprep bench /mnt/data --set quick --start-at 2026-12-03T10:00:00Z --clock-offset=-0.004s --clock-rtt 2ms
  diskprep bench /mnt/data --set quick --start-at +30s

A synchronized start (--start-at TIME, an RFC 3339 time with its zone, or
+DURATION from now): bench first does everything that is setup (the target's
checks, the device's claim, its SMART reading, --precondition, the first
workload's test file), then waits until TIME, saying how long, then measures;
Ctrl-C during the wait ends it as any interruption (exit 130, 143 for
SIGTERM). TIME is the controller's: with --clock-offset (this host's clock
less the controller's, as the fleet playbook measures it; chrony's estimate
when not given) the wait ends when this host's clock reads TIME plus the
offset. A TIME more than 1 s past, or more than 24 h ahead, is refused before
anything is done (exit 2). The record keeps start_at, actual_start (when the
measured run began, by this host's clock) and the clock offset with its
source and bound; compare --by host shows each host's start skew from them.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "set", Aliases: []string{"s"}, Usage: "built-in workload `SET`: " + strings.Join(workload.SetNames(), ", ") + " (default " + workload.DefaultSet + ")"},
			// No short alias: cli copies an alias's value onto the long name
			// through String and Set, which would add every SPEC twice.
			&cli.GenericFlag{Name: "workload", Value: &specList{}, Usage: "custom workload `SPEC` (repeatable), instead of --set"},
			&cli.StringFlag{Name: "runtime", Usage: "`DURATION` of each time-based workload, e.g. 30s, 1m"},
			&cli.StringFlag{Name: "size", Usage: "`SIZE` of the test region, e.g. 1G"},
			&cli.StringFlag{Name: "bs", Usage: "block `SIZE`, e.g. 4k, 1M"},
			&cli.IntFlag{Name: "jobs", Usage: "parallel jobs (`N`) per workload", DefaultText: "the set's"},
			&cli.IntFlag{Name: "iodepth", Usage: "I/Os in flight (`N`) per job", DefaultText: "the set's"},
			&cli.StringFlag{Name: "engine", Usage: "I/O `ENGINE`: auto, sync or io_uring"},
			&cli.StringFlag{Name: "repeat", Value: "1", Usage: "run each workload `N` times, or auto[:MAX]: until the 95% interval of its median is within ±3.5% (at least 3, at most MAX runs, default 10); report median, min and max"},
			&cli.StringFlag{Name: "label", Usage: "`LABEL` stored with the result (e.g. xfs, vmdk, rdm); with several targets one each, comma-separated"},
			&cli.StringFlag{Name: "hostname", Usage: "record the host as `NAME` instead of its own hostname (e.g. an Ansible inventory alias); the record says so"},
			&cli.BoolFlag{Name: "allow-device-write", Usage: "allow write workloads on a block device (destroys its data)"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "with --allow-device-write, do not ask before destroying what is on the device"},
			&cli.BoolFlag{Name: "keep-partial", Usage: "on interruption, save what was measured, marked partial"},
			&cli.BoolFlag{Name: "no-direct", Usage: "buffered I/O instead of O_DIRECT (measures the page cache too)"},
			&cli.BoolFlag{Name: "steady-state", Usage: "run rounds of each workload until the last 5 are steady (SNIA PTS: range within 20% and fitted slope within 10% of their average), at most 25; the record says at which round, or that it was not reached"},
			&cli.BoolFlag{Name: "precondition", Usage: "first write the whole raw device twice with 128 KiB sequential writes (SNIA PTS; needs --allow-device-write, destroys its data)"},
			&cli.StringFlag{Name: "start-at", Usage: "do the setup, then wait and start measuring at `TIME`: RFC 3339 with its zone (2026-12-03T10:00:00Z, the controller's time) or +DURATION from now (+30s); at most 24 h ahead"},
			&cli.StringFlag{Name: "clock-offset", Usage: "this host's clock less the controller's, `DURATION` (e.g. 5.012s, -3ms; write --clock-offset=-3ms): recorded, and --start-at waits by it (default: chrony's estimate, else unknown)"},
			&cli.StringFlag{Name: "clock-rtt", Usage: "round trip (`DURATION`) of the timestamp sample --clock-offset was taken from: the offset is good to half of it"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() < 1 {
				return usageErr(errors.New("bench takes a TARGET (a directory, file or block device), or several to compare"))
			}
			// 0 is what an absent --jobs reads as; given, it is a typo.
			for _, f := range []string{"jobs", "iodepth"} {
				if c.IsSet(f) && c.Int(f) < 1 {
					return usageErr(fmt.Errorf("--%s %d: must be at least 1", f, c.Int(f)))
				}
			}
			opts := benchOptions{
				Target:           c.Args().First(),
				Set:              c.String("set"),
				Runtime:          c.String("runtime"),
				Size:             c.String("size"),
				BS:               c.String("bs"),
				Jobs:             c.Int("jobs"),
				IODepth:          c.Int("iodepth"),
				Engine:           c.String("engine"),
				Label:            c.String("label"),
				Hostname:         c.String("hostname"),
				AllowDeviceWrite: c.Bool("allow-device-write"),
				Yes:              c.Bool("yes"),
				KeepPartial:      c.Bool("keep-partial"),
				NoDirect:         c.Bool("no-direct"),
				SteadyState:      c.Bool("steady-state"),
				Precondition:     c.Bool("precondition"),
				StartAt:          c.String("start-at"),
				ClockOffset:      c.String("clock-offset"),
				ClockRTT:         c.String("clock-rtt"),
			}
			if s, ok := c.Generic("workload").(*specList); ok && s != nil {
				opts.Workloads = *s
			}
			var err error
			if opts.Repeat, opts.RepeatAuto, err = workload.ParseRepeat("--repeat", c.String("repeat")); err != nil {
				return err
			}
			if c.NArg() > 1 {
				labels, err := interleavedTargets(c.Args().Slice(), opts.Label, opts)
				if err != nil {
					return usageErr(err)
				}
				return runBenchInterleaved(c.Context, opts, c.Args().Slice(), labels, machineOf(c), e)
			}
			return runBench(c.Context, opts, machineOf(c), e)
		}),
	}
}

func setList() string {
	var out []string
	for _, n := range workload.SetNames() {
		s, _ := workload.LookupSet(n)
		out = append(out, fmt.Sprintf("\n  %-11s %s", n, s.Description))
	}
	return strings.Join(out, "")
}

// request turns the options into a bench request; errors are usage errors.
func (o benchOptions) request() (workload.Request, error) {
	req := workload.Request{
		Target: o.Target, Set: o.Set, Specs: o.Workloads, Label: o.Label,
		AllowDeviceWrite: o.AllowDeviceWrite, KeepPartial: o.KeepPartial,
		SteadyState: o.SteadyState, Precondition: o.Precondition,
	}
	ov := &req.Overrides
	var err error
	if o.Runtime != "" {
		if ov.Runtime, err = units.ParseDuration(o.Runtime); err != nil {
			return req, fmt.Errorf("--runtime: %w", err)
		}
		if ov.Runtime == 0 {
			return req, fmt.Errorf("--runtime must be positive (size-based runs: runtime=0 in a --workload SPEC)")
		}
	}
	if o.Size != "" {
		if ov.Size, err = units.ParseCapacity(o.Size); err != nil {
			return req, fmt.Errorf("--size: %w", err)
		}
		if ov.Size == 0 {
			return req, errors.New("--size must be positive")
		}
	}
	if o.BS != "" {
		if ov.BS, err = units.ParseSize(o.BS); err != nil {
			return req, fmt.Errorf("--bs: %w", err)
		}
		if ov.BS == 0 {
			return req, errors.New("--bs must be positive")
		}
	}
	if o.Jobs < 0 || o.IODepth < 0 {
		return req, errors.New("--jobs and --iodepth must be at least 1")
	}
	if o.Repeat < 1 {
		return req, fmt.Errorf("--repeat %d: must be at least 1", o.Repeat)
	}
	if o.RepeatAuto && o.Repeat < workload.AutoRepeatMin {
		return req, fmt.Errorf("--repeat auto:%d: MAX must be at least %d", o.Repeat, workload.AutoRepeatMin)
	}
	req.Repeat, req.RepeatAuto = o.Repeat, o.RepeatAuto
	ov.Jobs, ov.IODepth, ov.Engine, ov.NoDirect = o.Jobs, o.IODepth, o.Engine, o.NoDirect
	return req, nil
}

// checkResultsDir fails when the store cannot take a record (not a
// directory; as root, one another user could change), before a run that
// would otherwise measure for minutes and then fail to save.
func checkResultsDir(dir string) error {
	return record.CheckStore(dir)
}

func runBench(ctx context.Context, opts benchOptions, m *machine, e *env) error {
	began := m.clockNow()
	format, err := e.format("table", "json", "markdown")
	if err != nil {
		return err
	}
	req, err := opts.request()
	if err != nil {
		return usageErr(err)
	}
	// Plan before reading the hardware: a typo answers at once.
	if _, err := workload.Plan(req); err != nil {
		return usageErr(err)
	}
	start, err := startOf(ctx, opts, m, began)
	if err != nil {
		return err
	}
	if err := checkResultsDir(e.ResultsDir); err != nil {
		return err
	}
	host, err := benchHost(ctx, e, opts.Hostname)
	if err != nil {
		return err
	}
	claims, err := guardDeviceWrites(ctx, []workload.Request{req}, host, opts.Yes, m, e)
	defer releaseClaims(claims)
	if err != nil {
		return err
	}
	rec, err := runBenchLive(ctx, req, host, e, start, claims)
	if rec != nil && errors.Is(err, record.ErrNotSaved) {
		// Only the store failed (full, gone, refused): the numbers are
		// shown all the same, as they are nowhere else.
		if perr := showBenchRecord(e, format, rec); perr != nil {
			return errors.Join(err, perr)
		}
		what := "the report above is this run's only copy"
		if rec.Partial {
			what = "interrupted; the partial report above is this run's only copy"
		}
		return fmt.Errorf("%w (%s)", err, what)
	}
	if err != nil {
		// A failure once ctx is done (a program killed by the same
		// signal) is the interruption too.
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			if rec != nil && rec.Partial {
				return interrupted("; partial result saved as "+filepath.Join(e.ResultsDir, rec.ID+".json"), err)
			}
			// A test file that could not be removed is a failure besides
			// the interruption, and the last line names it.
			if fi, statErr := os.Stat(opts.Target); statErr == nil && fi.IsDir() && besidesInterruption(err) == nil {
				return interrupted("; test file removed, no result saved", err)
			}
			return interrupted("; no result saved", err)
		}
		if errors.Is(err, workload.ErrUsage) {
			return usageErr(err)
		}
		return err
	}
	if err := showBenchRecord(e, format, rec); err != nil {
		return err
	}
	if !e.Quiet {
		fmt.Fprintf(e.Stderr, "saved %s (%s)\n", filepath.Join(e.ResultsDir, rec.ID+".json"), time.Duration(rec.End.Sub(rec.Start)).Round(time.Second))
	}
	return nil
}

// guardDeviceWrites has the disk guard look at each block device the
// requests write raw, before anything runs: a system device is refused;
// one holding anything is shown with what it holds and written only when
// confirmed on a terminal, or with --yes; a blank one needs no question.
// Each such device is claimed (bench.ClaimDevice) before the look and
// stays claimed, so nothing writes there between the answer and the run;
// the caller releases the claims it gets, also with an error.
func guardDeviceWrites(ctx context.Context, reqs []workload.Request, host *hwinfo.Host, yes bool, m *machine, e *env) ([]*bench.Claim, error) {
	var claims []*bench.Claim
	for _, req := range reqs {
		if !req.AllowDeviceWrite || !writesRaw(req) {
			continue
		}
		fi, err := os.Stat(req.Target)
		if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
			continue // bench says what is wrong with it
		}
		if slices.ContainsFunc(claims, func(c *bench.Claim) bool { return c.Holds(req.Target) }) {
			continue // the same device under another label
		}
		deps := m.deps(e)
		if e.Root == "" || e.Root == "/" {
			// The facts read for the record, a moment ago.
			deps.Refresh = func(context.Context) (*hwinfo.Host, error) { return host, nil }
		}
		c, err := bench.ClaimDevice(hwinfo.Roots{}, req.Target)
		if err != nil {
			// A device of the running system is busy too: the guard
			// says so in its words.
			if _, gerr := disk.GuardDeviceWrite(ctx, req.Target, deps); gerr != nil {
				return claims, gerr
			}
			return claims, err
		}
		claims = append(claims, c)
		if _, err := confirmDeviceLoss(ctx, req.Target, deviceLoss{destroys: "the write workloads destroy", asker: "bench --allow-device-write"}, yes, deps, e); err != nil {
			return claims, err
		}
	}
	return claims, nil
}

// releaseClaims ends the claims guardDeviceWrites took.
func releaseClaims(claims []*bench.Claim) {
	for _, c := range claims {
		c.Release()
	}
}

// deviceLoss is who destroys what is on a device, as the refusal and the
// question name it.
type deviceLoss struct{ destroys, asker string }

// confirmDeviceLoss is the guard before a command writes over device,
// which no plan describes: a device of the running system is refused; a
// blank one needs nothing; one holding anything is shown and asked about
// on a terminal, refused without one unless yes (--yes). It returns what
// it showed, or would have.
func confirmDeviceLoss(ctx context.Context, device string, who deviceLoss, yes bool, deps disk.Deps, e *env) (*disk.Loss, error) {
	l, err := disk.GuardDeviceWrite(ctx, device, deps)
	if err != nil {
		return nil, err
	}
	if len(l.Signatures) == 0 || yes {
		return l, nil
	}
	if !e.IsTerminal {
		return nil, disk.ConfirmDeviceWrite(l, who.destroys, "confirm on a terminal or pass --yes")
	}
	fmt.Fprint(e.Stderr, disk.DeviceWritePrompt(l, who.asker))
	answer, err := readLine(ctx, e.Stdin)
	if err != nil {
		fmt.Fprintln(e.Stderr) // the prompt's line is left open
		return nil, interrupted(" at the question: nothing was changed", err)
	}
	if !disk.Confirmed(answer) {
		return nil, disk.ErrNotConfirmed
	}
	return l, nil
}

// writesRaw says whether req writes to its target: a write workload or
// the preconditioning pass.
func writesRaw(req workload.Request) bool {
	if req.Precondition {
		return true
	}
	ws, err := workload.Plan(req)
	if err != nil {
		return false
	}
	for _, w := range ws {
		if w.Writes() {
			return true
		}
	}
	return false
}

// benchHost reads the machine's facts for a bench record, the host named
// as --hostname says (and the record saying so).
func benchHost(ctx context.Context, e *env, hostname string) (*hwinfo.Host, error) {
	// hwinfo's diagnostics (no DMI, no udev) are about the inventory, not
	// this run; they only show with --verbose.
	hwlog := e.Logger
	if !e.Verbose {
		hwlog = nil
	}
	host, err := hwinfo.Read(ctx, hwinfo.Options{Root: e.Root, All: true, Logger: hwlog})
	if err != nil {
		return nil, err
	}
	if hostname != "" && hostname != host.Hostname {
		host.Warnings = append(host.Warnings, fmt.Sprintf("host recorded as %q (--hostname); it calls itself %q", hostname, host.Hostname))
		host.Hostname = hostname
	}
	return host, nil
}

// showBenchRecord prints the record of a run as `results show` shows it
// (one renderer for both).
func showBenchRecord(e *env, format string, rec *record.Record) error {
	if e.Redact {
		rec = redact.Copy(rec) // the stored record keeps the full values
	}
	if err := report.Record(e.Stdout, format, rec); err != nil {
		return err
	}
	if format == "json" && !e.Quiet {
		// The table and Markdown carry the warnings; JSON goes to a pipe
		// or a file, so say them where a person sees them.
		for _, w := range record.Warnings(rec) {
			fmt.Fprintf(e.Stderr, "warning: %s\n", w)
		}
	}
	return nil
}

// unsavedRecords are the runs of a command of several (fscompare,
// cachebench) that the store did not take: the command goes on, shows
// them with the others, and fails at the end naming them.
type unsavedRecords struct {
	ids  []string
	errs []error
}

// keep turns a run measured in full whose record was not saved into a
// success, remembering the failure.
func (u *unsavedRecords) keep(rec *record.Record, err error) (*record.Record, error) {
	if rec == nil || rec.Partial || !errors.Is(err, record.ErrNotSaved) {
		return rec, err
	}
	u.ids = append(u.ids, rec.ID)
	u.errs = append(u.errs, err)
	return rec, nil
}

// err is the failure to report after the output, nil when all were saved.
func (u *unsavedRecords) err() error {
	if len(u.ids) == 0 {
		return nil
	}
	return fmt.Errorf("%w (not saved: %s; the report above is their only copy)", u.errs[0], strings.Join(u.ids, ", "))
}

// runBenchLive runs req with a live progress line on a terminal (bench and
// fscompare), cleared before anything else is printed, and a line per
// workload and repetition elsewhere.
// adjust, when given, rewrites each progress report first (fscompare
// makes it count the whole comparison).
// claims are the devices the command claimed before its question
// (guardDeviceWrites), which the run writes to without claiming again.
func runBenchLive(ctx context.Context, req workload.Request, host *hwinfo.Host, e *env, start benchStart, claims []*bench.Claim, adjust ...func(bench.Progress, time.Time) bench.Progress) (*record.Record, error) {
	var live *report.LiveLine
	var progress func(bench.Progress)
	switch {
	case e.Quiet:
	case isTerminal(e.Stderr):
		live = &report.LiveLine{W: e.Stderr}
		progress = live.Update
		for _, a := range adjust {
			progress = func(p bench.Progress) { live.Update(a(p, time.Now())) }
		}
	default:
		// A log or a pipe: a line per step, not a redrawn one.
		steps := &report.StepLines{W: e.Stderr, Min: report.StepMin}
		progress = steps.Update
		for _, a := range adjust {
			progress = func(p bench.Progress) { steps.Update(a(p, time.Now())) }
		}
	}
	var notes io.Writer
	if !e.Quiet {
		notes = e.Stderr
	}
	o := bench.Options{
		Host: host, ToolVersion: toolVersion(), ResultsDir: e.ResultsDir,
		Progress: progress, Notes: notes, Logger: e.Logger, Runner: disk.ExecRunner{}, Claims: claims,
	}
	start.options(&o)
	rec, err := bench.Run(ctx, req, o)
	if live != nil {
		live.Clear()
	}
	return rec, err
}
