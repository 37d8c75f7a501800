package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
)

type replaceOptions struct {
	Array, With       string
	Wipe, DryRun, Yes bool
	NoWait            bool
}

func replaceCommand() *cli.Command {
	return &cli.Command{
		Name:      "replace",
		Usage:     "put a new disk in the place of an md array's missing or failed member",
		ArgsUsage: "ARRAY --with DISK",
		Description: `Replace gives a degraded md array (RAID1, 4, 5, 6, 10: a member disk
died or was pulled) a new member: it partitions the new disk like the
members that remain (one RAID partition of their size), adds it to the
array and follows the rebuild to its end with its progress and the time
left (--no-wait returns once it is added; Ctrl-C stops the waiting, not
the rebuild). The array's mdadm.conf line names it by UUID and stays.

The new disk goes through prepare's guard: it is refused (exit 3, nothing
written) when it holds the system, is in use, is smaller than the
members' partition, already holds a working member, or carries a
partition table or signature (unless --wipe). An array with every member
working, or one that keeps no copy (raid0, linear), is refused too, and
one md left inactive at boot (a member was missing when it was assembled)
is refused with the command that starts it degraded (mdadm --run).
Running it again while the array rebuilds adds nothing twice.

Examples:
  diskprep replace /dev/md/data --with /dev/sdd --dry-run
  diskprep replace /dev/md/data --with /dev/disk/by-id/ata-ST4000DM004_ZFN0XYZ1 --yes`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "with", Usage: "the new `DISK` to take the missing member's place"},
			&cli.BoolFlag{Name: "wipe", Usage: "destroy the new disk's partition tables and signatures first"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print the plan and change nothing"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
			&cli.BoolFlag{Name: "no-wait", Usage: "return once the disk is added, without following the rebuild"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() != 1 || c.String("with") == "" {
				return usageErr(errors.New("replace takes the ARRAY (/dev/md/NAME) and --with DISK"))
			}
			opts := replaceOptions{Array: c.Args().First(), With: c.String("with"), Wipe: c.Bool("wipe"),
				DryRun: c.Bool("dry-run"), Yes: c.Bool("yes"), NoWait: c.Bool("no-wait")}
			return runReplace(c.Context, opts, machineOf(c), e)
		}),
	}
}

// replaceResultDoc is what replace -o json prints once applied.
type replaceResultDoc struct {
	Schema string `json:"schema"`
	*stack.ReplaceResult
}

const replaceResultSchema = "diskprep/replace/v1"

func runReplace(ctx context.Context, opts replaceOptions, m *machine, e *env) error {
	format, err := e.format("table", "json")
	if err != nil {
		return err
	}
	if e.Root != "" && e.Root != "/" && !opts.DryRun {
		return usageErr(errors.New("--root reads another machine's facts: replace can only --dry-run with it"))
	}
	if !opts.DryRun && m.geteuid() != 0 {
		return errors.New("replace needs root (try --dry-run to see the plan)")
	}
	deps := m.deps(e)
	if deps.Progress == nil && !e.Quiet {
		deps.Progress = e.Stderr
	}
	if !opts.DryRun {
		unlock, err := m.lockTarget(disk.Request{Device: opts.With}, deps)
		if err != nil {
			return err
		}
		defer unlock()
	}
	host, err := m.settledFacts(ctx, e, e, deps)
	if err != nil {
		return err
	}
	pl := disk.Planner{Host: deps.Host, Roots: deps.Roots, Protect: []string{e.resultsTree()}}
	rp, err := (stack.Planner{Planner: pl}).PlanReplace(opts.Array, opts.With, opts.Wipe, host)
	if err != nil {
		return err
	}
	if opts.DryRun {
		if format == "json" {
			return writeJSON(e.Stdout, rp)
		}
		if err := rp.WriteText(e.Stdout); err != nil {
			return err
		}
		_, err := fmt.Fprintln(e.Stdout, "dry run: nothing was changed")
		return err
	}
	if rp.Disk != nil {
		if err := confirmPlan(ctx, e, rp.Disk, opts.Yes); err != nil {
			return err
		}
	}
	if deps.Refresh == nil {
		deps.Refresh = func(ctx context.Context) (*hwinfo.Host, error) { return m.readFacts(ctx, e.Root, e) }
	}
	res, err := stack.ApplyReplace(ctx, rp, deps, !opts.NoWait)
	if err != nil {
		return fmt.Errorf("replace in %s: %w", opts.Array, err)
	}
	if format == "json" {
		return writeJSON(e.Stdout, replaceResultDoc{replaceResultSchema, res})
	}
	switch {
	case res.Rebuilt:
		fmt.Fprintf(e.Stdout, "%s: %s took the missing member's place and the array is whole again\n", opts.Array, res.Member)
	case res.Added:
		fmt.Fprintf(e.Stdout, "%s: %s added; the array rebuilds onto it (cat /proc/mdstat)\n", opts.Array, res.Member)
	default:
		fmt.Fprintf(e.Stdout, "%s: %s is in the array already\n", opts.Array, res.Member)
	}
	return nil
}
