package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/cmd/diskprep/fscompare"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/redact"
	"github.com/diskprep/diskprep/internal/units"
)

type fscompareOptions struct {
	Device     string
	Image      string
	Size       string
	FS         []string
	Set        string
	Runtime    string
	Repeat     int
	RepeatAuto bool   // --repeat auto[:MAX]: Repeat is MAX
	Mount      string // mount point used for every filesystem; "" = a fresh temporary directory
	MountOpts  string
	SectorSize string
	Keep       bool
	Yes        bool
	Latency    bool
	Output     string
	// Order is --order: record.OrderInterleaved, record.OrderBlocked, or
	// "" for the default (interleaved; blocked for one filesystem or
	// --repeat auto, which have no rounds to take in turn).
	Order string
	// Encrypt is --encrypt: the encryption of each column, crossed with
	// FS ("none", "luks2", "luks2-512", "luks2-4096"); nil for none.
	Encrypt []string
	// KeyFile is --key-file: the key of the encrypted columns; "" makes
	// one for the run, removed at the end.
	KeyFile string
	// fsSet: --fs was given (with --encrypt, its default is xfs alone).
	fsSet bool
}

// fsColumn is one column of a comparison: a filesystem, alone or on an
// encryption layer.
type fsColumn struct {
	Name string // "xfs", "xfs+luks2": the records' label with --encrypt
	FS   string
	// Encrypt is "" for none, else "luks2" with its sector size (0: the
	// one diskprep chooses).
	Encrypt     string
	SectorBytes uint64
}

// encryptions are --encrypt's words: the sector each asks for.
var encryptions = map[string]uint64{"none": 0, "luks2": 0, "luks2-512": 512, "luks2-4096": 4096}

// columns are the comparison's columns, in order: every filesystem with
// each encryption of --encrypt in turn.
func (o fscompareOptions) columns() []fsColumn {
	var cols []fsColumn
	for _, fs := range o.FS {
		if len(o.Encrypt) == 0 {
			cols = append(cols, fsColumn{Name: fs, FS: fs})
			continue
		}
		for _, enc := range o.Encrypt {
			c := fsColumn{Name: fs, FS: fs}
			if enc != "none" {
				c.Name, c.Encrypt, c.SectorBytes = fs+"+"+enc, "luks2", encryptions[enc]
			}
			cols = append(cols, c)
		}
	}
	return cols
}

// defaultFSCompareRepeat is the fewest repetitions per filesystem at which
// the Mann–Whitney verdicts can say anything (4 against 4 reaches p<0.05;
// one more gives room for an outlier).
const defaultFSCompareRepeat = 5

func fscompareCommand() *cli.Command {
	return &cli.Command{
		Name:      "fscompare",
		Usage:     "prepare a disk with each filesystem in turn, benchmark each, and compare them",
		ArgsUsage: "DEVICE | --image FILE --size SIZE",
		Description: `Fscompare answers "xfs or ext4 on this disk?" in one command. For each
filesystem of --fs in turn it prepares the disk (GPT, mkfs, mount: wiping it,
with the same safety checks and confirmation as prepare), runs the workload
set, and releases the disk; it stores one record a filesystem, labelled with
it, and then prints the comparison (MB/s, IOPS, change against the first
filesystem and whether it is larger than the run-to-run noise). mkfs and
mount options are kept in the records and shown in the report.

The runs are interleaved (--order interleaved, the default): --repeat rounds,
each preparing every filesystem in turn for one run of the set, the first
rotating (xfs ext4, ext4 xfs, ...), so whatever drifts during the comparison
(other load, caches, an SSD's garbage collection, heat) falls on every
filesystem alike instead of on the one measured last. Each round makes each
filesystem again, on the whole disk at the same place: side-by-side
partitions would put one filesystem on the faster outer zone of an HDD.
Remaking costs about 2 to 2.6 s a filesystem a round (mkfs, mount, laying
out the test file, release) on a loop image or zram: +19 to +24% on the quick
set's 5 rounds. A record is saved once its filesystem's last round
is done, and says "order": "interleaved", each run keeping its start time.
--order blocked runs every repetition of one filesystem, then of the next,
on one mkfs each; so does --repeat auto (each filesystem stops on its own).
--fs names at least two filesystems: one alone is refused (prepare and bench
measure one).

At the end the disk is released: unmounted, no fstab line, a loop image
detached; an --image file this run made is removed, one that was there
before stays (--keep leaves the last filesystem mounted, and the image).
An image this run makes needs no confirmation: nothing can be lost on it.
Ctrl-C releases what was prepared, and the last line says what it released
and which records were saved. The disk's (or image's) lock is held from start
to end, so another diskprep is refused it meanwhile. A run killed outright
(kill -9, a crash) leaves its record in /run/diskprep/fscompare: the same
command run again first releases what that run left (its mount, loop device,
the image it made, its temporary directory), saying so.

--encrypt none,luks2 answers "what does encryption cost on this disk?": the
same filesystem (--fs defaults to xfs alone then) plain and on LUKS2 over
the same partition, in turns, each column labelled (xfs, xfs+luks2) and
compared by label. luks2 takes the encryption sector diskprep chooses (4096
where the disk allows it); luks2-512 and luks2-4096 ask for one, to see what
the kernel's default 512 costs. The key is --key-file, or one made for the
run (root's alone, under /run/diskprep) and removed at the end; each LUKS2
column is released with its key slots destroyed (cryptsetup erase). The
report adds the host's CPU time per I/O (every process and kernel thread:
dm-crypt's work is not the benchmark's), and a note per encrypted column:
its cipher, key and sector sizes, whether the CPU has AES-NI, and how near
the disk came to the cipher's in-memory speed (cryptsetup benchmark).

On a terminal the live line counts the whole comparison: run i of every
filesystem's runs, and an ETA for all of them.

Examples:
  sudo diskprep fscompare --image /var/tmp/diskprep.img --size 4G --fs xfs,ext4 --set quick
  sudo diskprep fscompare /dev/sdb --fs xfs,ext4 --set fileserver --repeat 5 --yes
  sudo diskprep fscompare /dev/nvme1n1 --fs ext4,xfs --set nvme -o html --output fs.html
  sudo diskprep fscompare /dev/sdc --fs xfs,ext4 --mount-opt noatime --latency -o markdown
  sudo diskprep fscompare /dev/nvme1n1 --encrypt none,luks2,luks2-512 --set nvme --yes`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "fs", Value: "xfs,ext4", Usage: "filesystems to compare, comma separated, in column order: `LIST`"},
			&cli.StringFlag{Name: "image", Usage: "use a sparse image `FILE` on a loop device instead of a disk"},
			&cli.StringFlag{Name: "size", Usage: "`SIZE` of the --image file (4G)"},
			&cli.StringFlag{Name: "sector-size", Usage: "logical sector `BYTES` of the --image loop device: 512 or 4096", Value: "512"},
			&cli.StringFlag{Name: "set", Aliases: []string{"s"}, Usage: "built-in workload `SET`: " + strings.Join(workload.SetNames(), ", ") + " (default " + workload.DefaultSet + ")"},
			&cli.StringFlag{Name: "runtime", Usage: "`DURATION` of each time-based workload (overrides the set's)"},
			&cli.StringFlag{Name: "repeat", Value: strconv.Itoa(defaultFSCompareRepeat), Usage: "run each workload `N` times per filesystem (4 or more to judge differences), or auto[:MAX] (as bench)"},
			&cli.StringFlag{Name: "order", Usage: "`ORDER` of the runs: interleaved (round by round, each filesystem made again every round) or blocked (every run of one filesystem, then the next); default interleaved"},
			&cli.StringFlag{Name: "mount", Usage: "mount each filesystem at `DIR` (default: a new temporary directory)"},
			&cli.StringFlag{Name: "mount-opt", Usage: "mount `OPTIONS` for every filesystem, comma separated"},
			&cli.BoolFlag{Name: "keep", Usage: "leave the last filesystem prepared and mounted"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask before wiping the disk"},
			&cli.BoolFlag{Name: "latency", Usage: "add the p99 completion latency to the comparison"},
			&cli.StringFlag{Name: "output", Usage: "write the comparison to `FILE` (its extension picks the format when -o is not given)"},
			&cli.StringFlag{Name: "encrypt", Usage: "compare the filesystem plain and on LUKS2: `LIST` of none, luks2, luks2-512, luks2-4096 (the encryption sector), comma separated; --fs defaults to xfs alone then"},
			&cli.StringFlag{Name: "key-file", Usage: "the key `FILE` of --encrypt's LUKS2 columns (default: one made for the run and removed at the end)"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() > 1 {
				return usageErr(fmt.Errorf("fscompare takes one DEVICE (got %q)", c.Args().Slice()))
			}
			fss, encs := commaList(c.String("fs")), commaList(c.String("encrypt"))
			if c.IsSet("encrypt") && !c.IsSet("fs") {
				fss = []string{"xfs"}
			}
			repeat, auto, err := workload.ParseRepeat("--repeat", c.String("repeat"))
			if err != nil {
				return err
			}
			return runFSCompare(c.Context, fscompareOptions{
				Device: c.Args().First(), Image: c.String("image"), Size: c.String("size"), FS: fss,
				Set: c.String("set"), Runtime: c.String("runtime"), Repeat: repeat, RepeatAuto: auto, Order: c.String("order"),
				Mount: c.String("mount"), MountOpts: c.String("mount-opt"), SectorSize: c.String("sector-size"),
				Keep: c.Bool("keep"), Yes: c.Bool("yes"), Latency: c.Bool("latency"), Output: c.String("output"),
				Encrypt: encs, KeyFile: c.String("key-file"), fsSet: c.IsSet("fs") || !c.IsSet("encrypt"),
			}, machineOf(c), e)
		}),
	}
}

// commaList is a flag's comma separated words, lower case, blanks dropped.
func commaList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// check validates the options and builds the parts that do not depend on
// the machine, so a typo is answered before anything is touched.
func (o fscompareOptions) check() (disk.Request, workload.Request, error) {
	var dreq disk.Request
	var breq workload.Request
	switch {
	case o.Device == "" && o.Image == "":
		return dreq, breq, errors.New("fscompare needs a DEVICE or --image FILE --size SIZE")
	case o.Image != "" && o.Size != "" && units.IsSizeUnit(o.Device):
		return dreq, breq, splitSizeErr(o.Size, o.Device)
	case o.Device != "" && o.Image != "":
		return dreq, breq, errors.New("give a DEVICE or --image, not both")
	case o.Size != "" && o.Image == "":
		return dreq, breq, errors.New("--size is for --image")
	case len(o.FS) == 0:
		return dreq, breq, errors.New("--fs needs two filesystems to compare: --fs xfs,ext4")
	case len(o.FS) == 1 && len(o.Encrypt) < 2:
		// Refused before the disk is touched: one filesystem would be
		// made and measured for nothing to compare it with.
		if len(o.Encrypt) == 1 {
			return dreq, breq, fmt.Errorf("--encrypt %s: give two to compare: --encrypt none,luks2", o.Encrypt[0])
		}
		return dreq, breq, fmt.Errorf("--fs %s: fscompare compares two filesystems (--fs xfs,ext4); to measure one, prepare it and run diskprep bench on its mount point", o.FS[0])
	case o.Repeat < 1 || o.Repeat > workload.MaxRepeat:
		return dreq, breq, fmt.Errorf("--repeat %d: must be 1..%d", o.Repeat, workload.MaxRepeat)
	case o.Order != "" && o.Order != record.OrderInterleaved && o.Order != record.OrderBlocked:
		return dreq, breq, fmt.Errorf("--order %q: interleaved or blocked", o.Order)
	case o.Order == record.OrderInterleaved && o.RepeatAuto:
		return dreq, breq, errors.New("--repeat auto stops each filesystem's runs on its own: give --repeat N with --order interleaved, or --order blocked")
	case o.KeyFile != "" && len(o.Encrypt) == 0:
		return dreq, breq, errors.New("--key-file goes with --encrypt")
	case len(o.Encrypt) > 0 && o.Image != "":
		return dreq, breq, errors.New("--encrypt takes a DEVICE, not --image (diskprep does not encrypt loop images)")
	}
	for i, enc := range o.Encrypt {
		if _, ok := encryptions[enc]; !ok {
			return dreq, breq, fmt.Errorf("--encrypt %q: none, luks2, luks2-512 or luks2-4096", enc)
		}
		if slices.Contains(o.Encrypt[:i], enc) {
			return dreq, breq, fmt.Errorf("--encrypt lists %s twice", enc)
		}
	}
	if o.KeyFile != "" {
		if err := (crypt.Spec{KeyFile: o.KeyFile}).Validate(); err != nil {
			return dreq, breq, fmt.Errorf("--key-file: %w", err)
		}
	}
	seen := map[string]bool{}
	for _, f := range o.FS {
		if f != "xfs" && f != "ext4" {
			return dreq, breq, fmt.Errorf("--fs %q: diskprep makes xfs and ext4", f)
		}
		if seen[f] {
			return dreq, breq, fmt.Errorf("--fs lists %s twice", f)
		}
		seen[f] = true
	}
	dreq = disk.Request{Device: o.Device, Image: o.Image, Wipe: true, Fresh: true}
	if o.Image != "" {
		var err error
		if dreq.ImageSizeBytes, dreq.ImageSectorBytes, err = imageGeometry(o.Size, o.SectorSize); err != nil {
			return dreq, breq, err
		}
	}
	breq = workload.Request{Target: "/", Set: o.Set, Repeat: o.Repeat, RepeatAuto: o.RepeatAuto}
	if o.Runtime != "" {
		d, err := units.ParseDuration(o.Runtime)
		if err != nil {
			return dreq, breq, fmt.Errorf("--runtime: %w", err)
		}
		breq.Overrides.Runtime = d
	}
	if _, err := workload.Plan(breq); err != nil {
		return dreq, breq, err
	}
	return dreq, breq, nil
}

func runFSCompare(ctx context.Context, opts fscompareOptions, m *machine, e *env) error {
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
	dreq, breq, err := opts.check()
	if err != nil {
		return usageErr(err)
	}
	if e.Root != "" && e.Root != "/" {
		return usageErr(errors.New("--root reads another machine's facts: fscompare works on this machine only"))
	}
	if m.geteuid() != 0 {
		return errors.New("fscompare needs root (it partitions, formats and mounts)")
	}
	if err := checkResultsDir(e.ResultsDir); err != nil {
		return err
	}
	// What to hand to release: the image (which also detaches its loop
	// device) or the disk (every mounted partition of it).
	releaseTarget := opts.Device
	if opts.Image != "" {
		releaseTarget = opts.Image
	}
	// hwinfo's notes (no DMI, no udev) are about the inventory, not this
	// comparison: only with --verbose, as bench does.
	factsEnv := *e
	if !e.Verbose {
		factsEnv.Logger = slog.New(slog.DiscardHandler)
	}
	deps := m.deps(e)
	if deps.Refresh == nil {
		deps.Refresh = func(ctx context.Context) (*hwinfo.Host, error) { return m.readFacts(ctx, e.Root, &factsEnv) }
	}
	cols := opts.columns()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	run := fscompare.Options{FS: names, Target: releaseTarget, Mount: opts.Mount, Bench: breq, Keep: opts.Keep, Order: opts.order()}
	if !e.Quiet {
		run.Progress = e.Stderr
	}
	// The target's lock is held from here to the end, cleanup included, as
	// prepare holds it while it works: another diskprep is refused the
	// disk meanwhile (naming this one), and a record of another run found
	// under it is one that was killed (fscompare_rerun.go).
	unlock, err := m.lockTarget(dreq, deps)
	if err != nil {
		return err
	}
	defer unlock()
	image := ""
	if opts.Image != "" {
		image = realImagePath(opts.Image)
	}
	runPath := ""
	if lockPath, err := disk.TargetLockPath(dreq, deps); err == nil && lockPath != "" {
		runPath = fscompareRunPath(lockPath)
	}
	if runPath != "" {
		if old := readFSCompareRun(runPath); old != nil {
			if err := releaseKilledRun(ctx, old, releaseTarget, opts.Device, image, opts.Yes, m, deps, &factsEnv, run.Progress); err != nil {
				return err
			}
		}
	}
	// An image this run makes holds nothing but what it makes: it needs no
	// question (disk.NeedConfirmation) and goes at the end, so the next run
	// makes it anew, unasked, as the README's first command does twice.
	imageNew := false
	if image != "" {
		if _, err := os.Lstat(image); errors.Is(err, os.ErrNotExist) {
			imageNew = true
		}
	}
	madeImage := imageNew && !opts.Keep
	releaseFailed := false // a release left something: the run's record stays for the next run
	if runPath != "" {
		rec := fscompareRun{Schema: fscompareRunSchema, PID: os.Getpid(), Device: opts.Device, Image: image, MadeImage: imageNew, Encrypted: len(opts.Encrypt) > 0}
		if opts.Mount == "" {
			target := opts.Device
			if image != "" {
				target = image
			}
			dir, err := makeMountDir(&rec, runPath, target)
			if err != nil {
				os.Remove(runPath)
				return err
			}
			run.Mount, run.MountMade = dir, true
		} else {
			if rec.Mount, err = filepath.Abs(opts.Mount); err != nil {
				return err
			}
			if err := rec.write(runPath); err != nil {
				return err
			}
		}
		defer func() {
			if !releaseFailed {
				os.Remove(runPath)
			}
		}()
	}
	// The encrypted columns' key: --key-file, or one made for this run
	// beside its record (root's alone), removed at the end once the
	// release has destroyed the key slots it opened.
	keyFile := opts.KeyFile
	if len(opts.Encrypt) > 0 && keyFile == "" {
		if runPath == "" {
			return errors.New("--encrypt: no place for the run's key file here: give --key-file")
		}
		keyFile = strings.TrimSuffix(runPath, ".json") + ".key"
		defer func() {
			if !releaseFailed && !opts.Keep {
				os.Remove(keyFile)
			}
		}()
	}
	encrypted := false // the prepared column is on LUKS2: its release wipes
	released := false  // by the cleanup after a failure or an interruption
	eta := &fsETA{steps: len(cols)}
	if run.Order == record.OrderInterleaved {
		eta.steps *= opts.Repeat
	}
	// Rounds are saved by Save, merged, once a filesystem's last is done.
	roundEnv := *e
	roundEnv.ResultsDir = ""
	steps := 0 // planned so far: one a filesystem a round
	var unsaved unsavedRecords
	var saved []*record.Record
	var preparing string      // the filesystem whose prepare was cut short
	var prepared *disk.Result // what that prepare did
	// planColumn plans the named column on the disk as host has it.
	planColumn := func(ctx context.Context, name, mount string, host *hwinfo.Host) ([]*disk.Plan, *stack.StackPlan, error) {
		col := cols[slices.IndexFunc(cols, func(c fsColumn) bool { return c.Name == name })]
		req := dreq
		req.Partitions = []disk.PartSpec{{FS: col.FS, Label: "fscmp-" + col.FS, Mount: mount, MountOpts: opts.MountOpts}}
		var st stack.StackRequest
		if col.Encrypt != "" {
			st = encryptedColumn(&req, col, keyFile)
		}
		pl := disk.Planner{Host: deps.Host, Roots: deps.Roots, Protect: []string{e.resultsTree()}}
		plans, sp, err := planPrepare(ctx, pl, []disk.Request{req}, st, host)
		if errors.Is(err, disk.ErrRefused) {
			// Mounts left by an fscompare --keep or a prepare: say how
			// to release them.
			return nil, nil, fmt.Errorf("prepare %s: %w%s", name, err, leftoverHint(host, opts.Device, image, releaseTarget))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("prepare %s: %w", name, err)
		}
		return plans, sp, nil
	}
	records, err := fscompare.Run(ctx, run, fscompare.Deps{
		Facts: func(ctx context.Context) (*hwinfo.Host, error) {
			return m.settledFacts(ctx, e, &factsEnv, deps)
		},
		Check: func(ctx context.Context, name, mount string, host *hwinfo.Host) error {
			_, _, err := planColumn(ctx, name, mount, host)
			return err
		},
		Plan: func(ctx context.Context, name, mount string, first bool, host *hwinfo.Host) (func(context.Context) (string, error), error) {
			steps++
			plans, sp, err := planColumn(ctx, name, mount, host)
			if err != nil {
				return nil, err
			}
			if first {
				// Later rounds only destroy the filesystem this command made.
				ask, err := disk.NeedConfirmation(plans[0], opts.Yes, e.IsTerminal)
				if err != nil {
					return nil, err
				}
				if ask {
					ok, err := confirm(ctx, e, plans[0])
					if err != nil {
						return nil, err
					}
					if !ok {
						return nil, disk.ErrNotConfirmed
					}
				}
			}
			return func(ctx context.Context) (string, error) {
				preparing = name
				encrypted = sp != nil
				res, err := m.apply(ctx, plans[0], deps)
				if err != nil {
					prepared = res
					return "", err
				}
				if sp != nil {
					sres, err := stack.ApplyStacks(ctx, sp, deps)
					if err != nil {
						prepared = res
						return "", err
					}
					preparing = ""
					return sres.Encrypted[0].Volume.Device, nil
				}
				preparing = ""
				if len(res.Partitions) > 0 {
					return res.Partitions[0].Device, nil
				}
				return res.Device, nil
			}, nil
		},
		Release: func(ctx context.Context, cleanup bool) error {
			// LUKS2 goes with its key slots destroyed (cryptsetup erase),
			// before the run's key does.
			// Yes: the disk was confirmed before this run prepared it, and
			// a LUKS2 header cut short before its filesystem bears no
			// marker of diskprep's.
			res, err := m.release(ctx, releaseTarget, disk.ReleaseOptions{Wipe: encrypted, Yes: encrypted}, deps)
			if err != nil && res != nil && cleanup {
				res.WriteText(e.Stderr)
			}
			released = cleanup && err == nil
			releaseFailed = releaseFailed || err != nil
			return err
		},
		Settled: func(ctx context.Context) error {
			if opts.Image == "" {
				return nil
			}
			return waitDetached(ctx, opts.Image, m, &factsEnv)
		},
		Bench: func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error) {
			eta.start(steps-1, req.Label, time.Now())
			rec, err := runBenchLive(ctx, req, host, &roundEnv, benchStart{}, nil, eta.adjust)
			eta.finish(time.Now())
			return rec, err
		},
		Save: func(rec *record.Record) (*record.Record, error) {
			rec, err := unsaved.keep(rec, record.Save(e.ResultsDir, rec))
			if err == nil && !slices.Contains(unsaved.ids, rec.ID) {
				saved = append(saved, rec)
			}
			return rec, err
		},
		NewID: record.NewID,
	})
	removed := madeImage && removeMadeImage(ctx, opts.Image, m, &factsEnv, run.Progress)
	if _, err := os.Lstat(image); imageNew && errors.Is(err, os.ErrNotExist) {
		removed = true // also by Apply, undoing the round that made it
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			var ie interruptedError
			if errors.As(err, &ie) {
				return err // at the question: it says what was left
			}
			left := fscompareLeft{target: releaseTarget, preparing: preparing, prepared: prepared,
				released: released, removedImage: removed, saved: saved}
			if run.Order == record.OrderInterleaved && opts.Repeat > 1 {
				left.round, left.rounds = max(steps-1, 0)/len(opts.FS)+1, opts.Repeat
			}
			// Said from what the machine shows, not from what the
			// cleanup meant to do.
			if point, err := filepath.Abs(run.Mount); run.Mount != "" && err == nil && mountedAt(deps.Roots, point) {
				left.stillMounted = point
				releaseFailed = true
			}
			if image != "" {
				if host, err := m.readFacts(context.WithoutCancel(ctx), e.Root, &factsEnv); err == nil {
					if d := targetDisk(host, "", image); d != nil {
						left.stillAttached = d.Path
						releaseFailed = true
					}
				}
			}
			return interrupted(left.detail(), errors.Join(err, unsaved.err()))
		}
		return errors.Join(err, unsaved.err())
	}
	shown := records
	if e.Redact {
		shown = redact.All(records) // the store keeps them whole
	}
	by := compare.ByFS
	if len(opts.Encrypt) > 0 {
		by = compare.ByLabel // xfs and xfs+luks2 share a filesystem
	}
	c, err := compare.Compare(shown, compare.Options{By: by, Latency: opts.Latency, CPU: len(opts.Encrypt) > 0})
	if err != nil {
		return err
	}
	buf, err := renderComparison(e, c, format, opts.Output, report.Layout{})
	if err != nil {
		return err
	}
	if slices.Contains([]string{"table", "markdown"}, format) && opts.Output == "" {
		ids := make([]string, len(records))
		for i, r := range records {
			ids[i] = r.ID
		}
		fmt.Fprintf(buf, "\nRecords: %s (diskprep compare %s -o html --output report.html)\n", strings.Join(ids, ", "), strings.Join(ids, " "))
	}
	if err := writeOutput(e, opts.Output, buf.Bytes()); err != nil {
		return errors.Join(err, unsaved.err())
	}
	return unsaved.err()
}

// order is the order the runs take: --order, else interleaved where there
// are rounds to take in turn.
func (o fscompareOptions) order() string {
	switch {
	case o.Order != "":
		return o.Order
	case len(o.columns()) < 2 || o.RepeatAuto:
		return record.OrderBlocked
	}
	return record.OrderInterleaved
}

// waitDetached waits until no loop device is backed by image any more. The
// kernel clears a loop device lazily when something still has it open (a
// prober, the last close of the filesystem), and until then the facts still
// show the image attached: planning the next filesystem against that
// vanishing device would be refused.
func waitDetached(ctx context.Context, image string, m *machine, e *env) error {
	abs, err := filepath.Abs(image)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		host, err := m.readFacts(ctx, e.Root, e)
		if err != nil {
			return err
		}
		attached := slices.ContainsFunc(host.Disks, func(d hwinfo.Disk) bool { return d.LoopBackingFile == abs })
		if !attached {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still attached to a loop device 10s after release", image)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeMadeImage deletes the image fscompare made, once no loop device
// uses it (a failed release may have left it attached: then it stays, and
// release --remove-image takes it later), and reports whether it did.
func removeMadeImage(ctx context.Context, image string, m *machine, e *env, progress io.Writer) bool {
	say := func(format string, args ...any) {
		if progress != nil {
			fmt.Fprintf(progress, "fscompare: "+format+"\n", args...)
		}
	}
	abs, err := filepath.Abs(image)
	if err != nil {
		return false
	}
	host, err := m.readFacts(context.WithoutCancel(ctx), e.Root, e)
	if err != nil || slices.ContainsFunc(host.Disks, func(d hwinfo.Disk) bool { return d.LoopBackingFile == abs }) {
		say("%s is still attached: kept (diskprep release %s --remove-image removes it)", image, image)
		return false
	}
	if err := os.Remove(image); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			say("remove %s: %v", image, err)
		}
		return false
	}
	say("removed %s (made by this run)", image)
	return true
}

// fsETA makes the live line of each step (one filesystem's bench in one
// round) cover the whole comparison: run [i/N] counts every step's runs,
// and the ETA adds the steps still to come, each estimated as long as the
// last finished one (the first: as long as it will have taken, by its own
// ETA).
type fsETA struct {
	mu      sync.Mutex
	steps   int
	step    int // 0-based
	fs      string
	began   time.Time
	perStep time.Duration // of the last finished step; 0 before one
}

func (f *fsETA) start(step int, fs string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step, f.fs, f.began = max(step, 0), fs, now
}

func (f *fsETA) finish(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.perStep = now.Sub(f.began)
}

// adjust turns one step's progress into the comparison's, at now.
func (f *fsETA) adjust(p bench.Progress, now time.Time) bench.Progress {
	f.mu.Lock()
	defer f.mu.Unlock()
	left := f.steps - 1 - f.step
	p.Workload = fmt.Sprintf("%s %d/%d: %s", f.fs, f.step+1, f.steps, p.Workload)
	p.Index += f.step * p.Count
	p.Count *= f.steps
	if left > 0 && p.ETA > 0 {
		per := f.perStep
		if per == 0 {
			per = now.Sub(f.began) + p.ETA
		}
		p.ETA += time.Duration(left) * per
	}
	return p
}

// fscompareLeft is what an interrupted fscompare did and left, for the
// one line it ends with: what it cleaned up and what it kept.
type fscompareLeft struct {
	target       string // the DEVICE or --image, as given
	preparing    string // the filesystem whose prepare was cut short, "" for none
	prepared     *disk.Result
	released     bool   // the cleanup released the target
	removedImage bool   // the image this run made is gone
	stillMounted string // the mount point the cleanup could not release
	// stillAttached is the loop device the image is still attached to.
	stillAttached string
	saved         []*record.Record
	// round of rounds the run was in, interleaved; 0 for one round.
	round, rounds int
}

// detail follows "interrupted by SIGHUP": " while preparing ext4 on
// /dev/loop3: nothing is mounted; the xfs record is saved (id ...)", or
// "; released /dev/loop3; ...".
func (l fscompareLeft) detail() string {
	var b strings.Builder
	mounted := "nothing is mounted"
	if l.stillMounted != "" {
		mounted = l.stillMounted + " is still mounted: diskprep release " + l.target + " releases it"
	}
	attached := ""
	if l.stillAttached != "" {
		attached = "it is still attached to " + l.stillAttached + ": diskprep release " + l.target + " detaches it"
	}
	if l.preparing != "" {
		// Apply undid its own mount and loop device; the disk keeps
		// what it wrote, which the same command wipes again.
		fmt.Fprintf(&b, " while preparing %s on %s: ", l.preparing, l.target)
		var parts []string
		if !l.removedImage {
			parts = append(parts, preparedState(l.prepared))
		}
		parts = append(parts, mounted)
		switch {
		case attached != "":
			parts = append(parts, attached)
		case l.prepared != nil && l.prepared.LoopAttached:
			parts = append(parts, "its loop device "+l.prepared.Device+" is detached")
		}
		if l.removedImage {
			parts = append(parts, "removed the image this run made")
		}
		b.WriteString(strings.Join(parts, ", "))
	} else {
		var done []string
		if l.released {
			done = append(done, "released "+l.target)
		}
		if l.removedImage {
			done = append(done, "removed the image this run made")
		}
		if len(done) > 0 {
			b.WriteString("; " + strings.Join(done, ", "))
		}
		if l.stillMounted != "" {
			b.WriteString("; " + mounted)
		}
		if attached != "" {
			b.WriteString("; " + attached)
		}
	}
	if n := len(l.saved); n == 0 && l.rounds > 1 {
		fmt.Fprintf(&b, "; in round %d of %d, no record saved", l.round, l.rounds)
	} else if n > 0 {
		fss, ids := make([]string, n), make([]string, n)
		for i, r := range l.saved {
			fss[i], ids[i] = r.Label, r.ID
		}
		if n == 1 {
			fmt.Fprintf(&b, "; the %s record is saved (id %s)", fss[0], ids[0])
		} else {
			fmt.Fprintf(&b, "; the %s records are saved (ids %s)", strings.Join(fss, " and "), strings.Join(ids, ", "))
		}
	}
	return b.String()
}

// preparedState says what a prepare cut short wrote to its disk.
func preparedState(res *disk.Result) string {
	var made []string
	if res != nil {
		for _, pr := range res.Partitions {
			if pr.Formatted {
				made = append(made, pr.FS+" is made on "+pr.Device)
			}
		}
	}
	switch {
	case len(made) > 0:
		return strings.Join(made, ", ")
	case res != nil && res.TableWritten:
		return "only its partition table is written"
	case res != nil && len(res.Wiped) > 0:
		return "its signatures are wiped"
	}
	return "nothing was written to it"
}

// mountedAt says whether something is mounted at point.
func mountedAt(roots hwinfo.Roots, point string) bool {
	mounts, err := roots.Mounts()
	if err != nil {
		return false
	}
	return slices.ContainsFunc(mounts, func(m hwinfo.MountEntry) bool { return m.Point == point })
}

// realImagePath is the path of an --image with the links of its directory
// resolved, as disk keys the image's lock and records by it.
func realImagePath(image string) string {
	abs, err := filepath.Abs(image)
	if err != nil {
		return image
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// encryptedColumn turns the disk's request for col into one partition for
// LUKS2 and the filesystem on its mapping, as prepare DEVICE --encrypt
// does.
func encryptedColumn(req *disk.Request, col fsColumn, keyFile string) stack.StackRequest {
	ps := req.Partitions[0]
	key := filepath.Base(req.Device)
	req.Partitions = []disk.PartSpec{{Label: ps.Label, Use: "crypt:" + key}}
	return stack.StackRequest{Options: stack.Options{Wipe: true}, Encrypted: []stack.EncryptedSpec{{Key: key, Volume: stack.VolumeSpec{
		FS: ps.FS, Label: ps.Label, Mount: ps.Mount, MountOpts: ps.MountOpts,
		Encrypt: &crypt.Spec{KeyFile: keyFile, SectorBytes: col.SectorBytes}}}}}
}
