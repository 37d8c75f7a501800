package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/cmd/diskprep/cachebench"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/redact"
	"github.com/diskprep/diskprep/internal/units"
)

type cachebenchOptions struct {
	Origin      string
	CacheDevice string
	Kind, Mode  string
	Size        string
	Runtime     string
	Repeat      int
	Yes         bool
	Output      string
}

var cachebenchFormats = []string{"table", "markdown", "json", "html"}

func cachebenchCommand() *cli.Command {
	return &cli.Command{
		Name:      "cachebench",
		Usage:     "measure what an SSD cache in front of an HDD buys: the HDD alone, the SSD alone, the cached volume cold, warm and steady",
		ArgsUsage: "ORIGIN_DISK --cache-device DEVICE [--yes]",
		Description: `Cachebench answers "what does the SSD buy in front of the HDD?" in one
command, on the same disks, destroying what is on both. It builds the cached
volume as prepare --cache does (lvmcache, writecache or bcache; writethrough
unless --cache-mode writeback) and measures it (random 4k reads, O_DIRECT)
per working set - half the cache, about the cache, twice the cache, and
twice the cache read with a zipf:1.2 skew - in three phases: cold (right
after it is built), warm (after one warm-up pass over the working set: by
writes for bcache and writecache, which take writes in, by two read passes
for lvmcache, which promotes what is read again) and steady (the runs
after). The hit ratio of each phase is what the kernel's counters (dmsetup
status, bcache's sysfs) say for its runs. A writecache, which caches only
writes not yet written back and sends writes around itself once full, is
emptied before each working set. A writeback cache is flushed at
the release, and how long that took is shown. The SSD alone is read before
the build (written once first), the HDD alone after the release. Every
run is stored as a record (compare shows them again).

Before anything is written or measured, what is on each device (model,
serial, size, each table and signature) is shown and asked about on a
terminal; --yes goes on without asking, and without a terminal it is needed
(exit 3 otherwise, naming what is there). A blank device needs no question;
a device of the running system, or one in use, is refused.

The runs are not interleaved as fscompare's are (the report's run order says
blocked): they are states of one build in time order, and taking them in
turns would mean building, warming and releasing the cache every round.

The report (-o table, markdown or html) is, in this order: the phases per
working set (IOPS, MB/s, p50, p99, hit ratio; in HTML also a chart of each
phase's IOPS on a log axis between the HDD alone and the SSD alone, the
bounds, beside its hit ratio); the phases side by side against the HDD
alone, with significance, as compare --by label --baseline hdd shows them;
then what the cache buys, one sentence per working set (against the HDD
alone, how close to the SSD alone, at what hit ratio), the flush and the
warnings. HTML is one self-contained page. -o json is the result itself
(diskprep/cachebench/v1, per working set hdd, ssd, cold, warm, steady).

Each working set has its own region of the cached volume, so each one's cold
phase is cold; the volume must hold 5.5 times --size (default: the built
cache's size). At the end both disks are left signature-free (a --cache-device
partition given stays, blank; a disk given loses the partition made on it).

Examples:
  sudo diskprep cachebench /dev/sdb --cache-device /dev/nvme0n1 --yes
  sudo diskprep cachebench /dev/sdb --cache-device /dev/nvme0n1p3 --cache-kind bcache --size 8G --runtime 30s --yes
  sudo diskprep cachebench /dev/sdb --cache-device /dev/nvme0n1 --cache-mode writeback -o html --output cache.html --yes`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cache-device", Usage: "the fast disk or partition that caches: `DEVICE`"},
			&cli.StringFlag{Name: "cache-kind", Value: "lvmcache", Usage: "`KIND` of cache: lvmcache, writecache or bcache"},
			&cli.StringFlag{Name: "cache-mode", Usage: "`MODE`: writethrough (default; writecache is writeback only) or writeback"},
			&cli.StringFlag{Name: "size", Usage: "the working set near the cache's size: `SIZE` (default the built cache's)"},
			&cli.StringFlag{Name: "runtime", Value: "10s", Usage: "`DURATION` of each measured run"},
			&cli.IntFlag{Name: "repeat", Value: compare.MinRuns(), Usage: "`N` runs of each warm and steady phase and of the disks alone (the default is the fewest compare judges significance from)"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "destroy what is on the two devices without asking (needed without a terminal)"},
			&cli.StringFlag{Name: "output", Usage: "write the report to `FILE` (its extension picks the format when -o is not given)"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() != 1 {
				return usageErr(fmt.Errorf("cachebench takes one ORIGIN_DISK (got %q)", c.Args().Slice()))
			}
			return runCachebench(c.Context, cachebenchOptions{
				Origin: c.Args().First(), CacheDevice: c.String("cache-device"), Kind: c.String("cache-kind"), Mode: c.String("cache-mode"),
				Size: c.String("size"), Runtime: c.String("runtime"), Repeat: c.Int("repeat"), Yes: c.Bool("yes"), Output: c.String("output"),
			}, machineOf(c), e)
		}),
	}
}

// check validates what does not depend on the machine.
func (o cachebenchOptions) check() (stack.CacheBuild, cachebench.Options, error) {
	b := stack.CacheBuild{Origin: o.Origin, CacheDevice: o.CacheDevice, Name: "cachebench", Kind: o.Kind, Mode: o.Mode,
		Volume: stack.VolumeSpec{FS: "xfs", Label: "cachebench"}, Wipe: true}
	run := cachebench.Options{Origin: o.Origin, CacheDevice: o.CacheDevice, Kind: o.Kind, Mode: o.Mode, Repeat: o.Repeat,
		BlockBytes: 4096, IODepth: 4}
	switch {
	case o.CacheDevice == "":
		return b, run, errors.New("cachebench needs --cache-device DEVICE: the fast disk or partition in front of the origin")
	case o.Repeat < 1 || o.Repeat > workload.MaxRepeat:
		return b, run, fmt.Errorf("--repeat %d: must be 1..%d", o.Repeat, workload.MaxRepeat)
	}
	switch o.Kind {
	case "lvmcache", "bcache":
		if run.Mode == "" {
			run.Mode = "writethrough"
		}
	case "writecache":
		if run.Mode == "" {
			run.Mode = "writeback"
		}
	default:
		return b, run, fmt.Errorf("--cache-kind %q: want lvmcache, writecache or bcache", o.Kind)
	}
	if run.Mode != "writethrough" && run.Mode != "writeback" {
		return b, run, fmt.Errorf("--cache-mode %q: want writethrough or writeback", o.Mode)
	}
	if o.Kind == "writecache" && run.Mode != "writeback" {
		return b, run, errors.New("--cache-kind writecache is writeback only")
	}
	// Always said to disk: prepare asks for writeback to be accepted out
	// loud (what a dead cache device loses); here the data is the
	// benchmark's own, thrown away at the end, so nothing is at risk.
	b.Mode = run.Mode
	d, err := units.ParseDuration(o.Runtime)
	if err != nil || d < time.Second {
		return b, run, fmt.Errorf("--runtime %q: want a duration of 1s or more", o.Runtime)
	}
	run.Runtime = d
	if o.Size != "" {
		if run.NearBytes, err = units.ParseSize(o.Size); err != nil || run.NearBytes == 0 {
			return b, run, fmt.Errorf("--size %q: want a size such as 8G", o.Size)
		}
	}
	if _, _, err := b.Requests(); err != nil {
		return b, run, err
	}
	return b, run, nil
}

func runCachebench(ctx context.Context, opts cachebenchOptions, m *machine, e *env) error {
	if e.Format == "" && opts.Output != "" {
		e.Format = formatFromFile(opts.Output)
	}
	format, err := e.format(cachebenchFormats...)
	if err != nil {
		return err
	}
	build, run, err := opts.check()
	if err != nil {
		return usageErr(err)
	}
	if e.Root != "" && e.Root != "/" {
		return usageErr(errors.New("--root reads another machine's facts: cachebench works on this machine only"))
	}
	if m.geteuid() != 0 {
		return errors.New("cachebench needs root (it partitions the disks and builds the cache)")
	}
	if err := checkResultsDir(e.ResultsDir); err != nil {
		return err
	}
	factsEnv := *e
	if !e.Verbose {
		factsEnv.Logger = slog.New(slog.DiscardHandler)
	}
	deps := m.deps(e)
	if deps.Refresh == nil {
		deps.Refresh = func(ctx context.Context) (*hwinfo.Host, error) { return m.readFacts(ctx, e.Root, &factsEnv) }
	}
	// What is on the two devices, shown and confirmed before anything is
	// written or measured (a device that is not one is cachebench's to
	// name, below). One read of the facts serves both looks; the build
	// re-reads them before it writes.
	var looked *hwinfo.Host
	shown := map[string]*disk.Loss{} // what each device held when asked
	for _, dev := range []string{opts.Origin, opts.CacheDevice} {
		if fi, err := os.Stat(dev); err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
			continue
		}
		if looked == nil {
			if looked, err = m.settledFacts(ctx, e, &factsEnv, deps); err != nil {
				return err
			}
		}
		guardDeps := deps
		guardDeps.Refresh = func(context.Context) (*hwinfo.Host, error) { return looked, nil }
		if shown[dev], err = confirmDeviceLoss(ctx, dev, deviceLoss{destroys: "cachebench destroys", asker: "cachebench builds a cache on it"}, opts.Yes, guardDeps, e); err != nil {
			return err
		}
	}
	if !e.Quiet {
		run.Progress = e.Stderr
		deps.Progress = e.Stderr
	}
	var unsaved unsavedRecords
	benchEnv := *e
	benchEnv.ResultsDir = "" // saved by Save, at the end
	released := false        // by the cleanup after a failure or an interruption
	saving := false          // the run got as far as storing its records
	res, err := cachebench.Run(ctx, run, cachebench.Deps{
		Facts: func(ctx context.Context) (*hwinfo.Host, error) {
			return m.settledFacts(ctx, e, &factsEnv, deps)
		},
		Check: func(ctx context.Context, host *hwinfo.Host) error {
			// The facts the run starts from hold what the question showed:
			// nothing was written to either device while it waited.
			if err := stillAsShown(ctx, shown, host, deps); err != nil {
				return err
			}
			reqs, st, err := build.Requests()
			if err != nil {
				return err
			}
			pl := stack.Planner{Planner: disk.Planner{Host: deps.Host, Roots: deps.Roots}}
			if r, isDisk := pl.CacheDeviceRequest(&st, host); isDisk {
				reqs = append(reqs, r)
			}
			plans, err := disk.PlanAll(reqs, host)
			if err != nil {
				return err
			}
			_, err = pl.PlanStacks(ctx, st, plans, reqs, host)
			return err
		},
		Build: func(ctx context.Context, host *hwinfo.Host) (string, error) {
			built, err := stack.BuildCache(ctx, build, host, deps)
			if built != nil && built.Cache.Device != "" {
				return built.Cache.Device, err
			}
			if err == nil {
				err = errors.New("the cache was built but names no device")
			}
			// Something may be half built: release takes what is there.
			return build.Origin, err
		},
		Release: func(ctx context.Context, cleanup bool) error {
			res, err := stack.ReleaseCache(ctx, build, true, deps)
			if err != nil && res != nil && cleanup {
				res.WriteText(e.Stderr)
			}
			released = cleanup && err == nil
			return err
		},
		// Each run's record is kept in memory and stored only once the
		// whole run has succeeded (Save): a failure or an interruption
		// leaves no record of a run whose cache it took apart.
		Bench: func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error) {
			was, raw := shown[req.Target]
			if !req.AllowDeviceWrite || !raw {
				return runBenchLive(ctx, req, host, &benchEnv, benchStart{}, nil)
			}
			look := func(ctx context.Context) (*hwinfo.Host, error) { return m.settledFacts(ctx, e, &factsEnv, deps) }
			return claimedWrite(ctx, req.Target, was, look, deps, func(now *hwinfo.Host, c *bench.Claim) (*record.Record, error) {
				return runBenchLive(ctx, req, now, &benchEnv, benchStart{}, []*bench.Claim{c})
			})
		},
		Save: func(recs []*record.Record) error {
			saving = true
			for _, rec := range recs {
				if _, err := unsaved.keep(rec, record.Save(e.ResultsDir, rec)); err != nil {
					return err
				}
			}
			return nil
		},
		Resolve: func(path string) (string, error) {
			real, err := hwinfo.FollowTrustedLinks(nil, path)
			if err != nil {
				return "", err
			}
			return filepath.Base(real), nil
		},
		FlushWriteCache: func(ctx context.Context, device string) error { return stack.FlushWriteCache(ctx, device, deps) },
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			if released {
				return interrupted("; released the cache, both disks left signature-free, no record saved", err)
			}
			return interrupted("; no record saved", err)
		}
		if !saving {
			return fmt.Errorf("%w; no record of this run saved", err)
		}
		return errors.Join(err, unsaved.err())
	}
	if n := compare.MinRuns(); run.Repeat < n {
		res.Warnings = append(res.Warnings, fmt.Sprintf("--repeat %d: the comparison needs %d runs a side to judge a difference, so it says %q throughout", run.Repeat, n, compare.VerdictTooFew))
	}
	var c *compare.Comparison
	if format != "json" {
		shown := res.Measured()
		if e.Redact {
			shown = redact.All(shown)
			res = res.Redacted()
		}
		if c, err = compare.Compare(shown, compare.Options{By: compare.ByLabel, Baseline: "hdd"}); err != nil {
			return err
		}
		if opts.Output != "" {
			// The terminal shows no report then: its warnings go to stderr.
			warnAll(e, c.Warnings)
		}
	}
	var buf bytes.Buffer
	if err := res.WriteLayout(&buf, format, c, tableLayout(e, format, opts.Output, report.Layout{})); err != nil {
		return err
	}
	if err := writeOutput(e, opts.Output, buf.Bytes()); err != nil {
		return errors.Join(err, unsaved.err())
	}
	return unsaved.err()
}

// claimedWrite runs one of cachebench's raw writes to dev (the SSD's
// fill): dev is claimed, then looked at once more (look) and refused
// unless it still holds what was shown (was), so that nothing written to
// it since the run's first check is overwritten unseen; run writes under
// the claim, given the facts of that look.
func claimedWrite(ctx context.Context, dev string, was *disk.Loss, look func(context.Context) (*hwinfo.Host, error), deps disk.Deps,
	run func(*hwinfo.Host, *bench.Claim) (*record.Record, error)) (*record.Record, error) {
	c, err := bench.ClaimDevice(hwinfo.Roots{}, dev)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	now, err := look(ctx)
	if err != nil {
		return nil, err
	}
	if err := stillAsShown(ctx, map[string]*disk.Loss{dev: was}, now, deps); err != nil {
		return nil, err
	}
	return run(now, c)
}

// stillAsShown refuses a device whose contents in host differ from what
// the question showed (shown, by device): it changed while the question
// waited, and the answer was not about what is there now.
func stillAsShown(ctx context.Context, shown map[string]*disk.Loss, host *hwinfo.Host, deps disk.Deps) error {
	for dev, was := range shown {
		d := deps
		d.Refresh = func(context.Context) (*hwinfo.Host, error) { return host, nil }
		now, err := disk.GuardDeviceWrite(ctx, dev, d)
		if err != nil {
			return err
		}
		if !slices.Equal(now.Signatures, was.Signatures) {
			return disk.Refuse(dev, fmt.Sprintf("what is on it changed after the question (asked about: %s; now: %s): run cachebench again to be asked about what is there", lossList(was), lossList(now)))
		}
	}
	return nil
}

// lossList is a device's signatures for a message.
func lossList(l *disk.Loss) string {
	if len(l.Signatures) == 0 {
		return "nothing"
	}
	return strings.Join(l.Signatures, "; ")
}
