package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/disk"
)

type releaseOptions struct {
	Target       string
	RemoveImage  bool
	Wipe         bool
	DryRun       bool
	Yes          bool
	ForceUnmount bool
}

func releaseCommand() *cli.Command {
	cmd := &cli.Command{
		Name:      "release",
		Usage:     "unmount a prepared disk, drop its fstab line, detach a loop image diskprep made",
		ArgsUsage: "MOUNTPOINT | DEVICE | IMAGE",
		Description: `Release undoes the tail end of prepare: it unmounts the filesystem(s),
removes the /etc/fstab lines diskprep added for them (lines it did not add
are never touched), and detaches a loop device that prepare --image attached.
The data stays on the disk; the image file stays where it is unless
--remove-image.

On a storage stack (a mount point or device of an md array or logical
volume, or a member disk) release also turns off swap areas, deactivates
the volume groups and stops the arrays, and removes diskprep's mdadm.conf
lines; with --wipe it removes the logical volumes, volume groups and
physical volumes, zeroes the md superblocks and wipes the member disks'
signatures (wipefs --all), leaving them blank. A group or array that no
longer runs (released before without --wipe) is removed the same way when
all of it is on what is wiped, and refused, nothing written, when part of
it is on another disk.

What release will not do (the guard, README "What diskprep will and will
not destroy"): it refuses anything the running system sits on (/, /boot,
/usr, /var, active swap and the stacks under them), exit 3, dry run too.
It unmounts a filesystem diskprep did not mount only when that mount point
is the one named, or with --force-unmount. With --wipe, what diskprep did
not make (no marker, no fstab line of its own, not in a stack holding one)
is shown with its model, serial, size and signatures and destroyed only
once confirmed on a terminal or with --yes; without either, exit 3 and
nothing is written. --remove-image removes only an image prepare created.
A target named through a symbolic link another user owns or could replace
(one in /tmp, say, or a directory on its path) is refused, exit 3: root
follows its own links only, as /dev/disk/by-id's.

--dry-run prints what release would unmount, which fstab lines it would
remove, what it would detach and destroy (-o json for the machine-readable
plan), and changes nothing; it needs no root when the facts are readable.

Examples:
  diskprep release /data
  diskprep release /dev/sdb                  # every mounted partition of sdb
  diskprep release /data --dry-run           # what would be undone
  diskprep release /var/tmp/scratch.img --remove-image
  diskprep release /dev/sdb --wipe --dry-run  # a RAID member: the whole array
  diskprep release /dev/sdc --wipe --yes      # a disk diskprep did not prepare`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "remove-image", Usage: "also delete the image file behind a loop device diskprep attached"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be released and change nothing"},
			&cli.BoolFlag{Name: "wipe", Usage: "also remove the storage stacks released (LVs, VGs, PVs, md superblocks) and wipe their disks' signatures"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "destroy what diskprep did not make without asking (with --wipe)"},
			&cli.BoolFlag{Name: "force-unmount", Usage: "also unmount filesystems on the device that diskprep did not mount"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() != 1 {
				return usageErr(errors.New("release takes one MOUNTPOINT, DEVICE or IMAGE"))
			}
			m, err := withTestFlags(c, machineOf(c))
			if err != nil {
				return err
			}
			opts := releaseOptions{Target: c.Args().First(), RemoveImage: c.Bool("remove-image"), Wipe: c.Bool("wipe"), DryRun: c.Bool("dry-run"),
				Yes: c.Bool("yes"), ForceUnmount: c.Bool("force-unmount")}
			return runRelease(c.Context, opts, m, e)
		}),
	}
	cmd.Flags = append(cmd.Flags, testFlags()...)
	return cmd
}

func runRelease(ctx context.Context, opts releaseOptions, m *machine, e *env) error {
	format, err := e.format("table", "json")
	if err != nil {
		return err
	}
	if e.Root != "" && e.Root != "/" {
		return usageErr(errors.New("--root reads another machine's facts: release works on this machine only"))
	}
	if !opts.DryRun && m.geteuid() != 0 {
		return errors.New("release needs root")
	}
	deps := m.deps(e)
	if deps.Progress == nil && !e.Quiet {
		deps.Progress = e.Stderr // a cache's flush before it is detached
	}
	plan, err := m.planRelease(ctx, opts.Target, disk.ReleaseOptions{RemoveImage: opts.RemoveImage, Wipe: opts.Wipe, Yes: opts.Yes, ForceUnmount: opts.ForceUnmount}, deps)
	if errors.Is(err, disk.ErrRefused) {
		return err // it names the target itself
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", opts.Target, err)
	}
	if opts.DryRun {
		if format == "json" {
			return writeJSON(e.Stdout, plan)
		}
		if err := plan.WriteText(e.Stdout); err != nil {
			return err
		}
		_, err := fmt.Fprintln(e.Stdout, "dry run: nothing was changed")
		return err
	}
	if plan.NeedsConfirmation && !plan.Confirmed {
		if !e.IsTerminal {
			return disk.ErrReleaseNotConfirmed(plan, "no terminal to confirm on: pass --yes to destroy it")
		}
		fmt.Fprint(e.Stderr, disk.ReleaseQuestion(plan))
		answer, err := readLine(ctx, e.Stdin)
		if err != nil {
			fmt.Fprintln(e.Stderr)
			return fmt.Errorf("interrupted at the question: nothing was changed: %w", err)
		}
		if !disk.Confirmed(answer) {
			return fmt.Errorf("release %s: %w", opts.Target, disk.ErrNotConfirmed)
		}
		plan.Confirmed = true
	}
	res, err := m.applyRelease(ctx, plan, deps)
	if res != nil && err != nil {
		res.WriteText(e.Stderr)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", opts.Target, err)
	}
	if format == "json" {
		return writeJSON(e.Stdout, releaseResultDoc{releaseResultSchema, res})
	}
	return res.WriteText(e.Stdout)
}
