package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/disk"
)

type releaseOptions struct {
	Target      string
	RemoveImage bool
	Fstab       string // hidden --fstab, as for prepare
}

func releaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "unmount a prepared disk, drop its fstab line, detach a loop image diskprep made",
		ArgsUsage: "MOUNTPOINT | DEVICE | IMAGE",
		Description: `Release undoes the tail end of prepare: it unmounts the filesystem(s),
removes the /etc/fstab lines diskprep added for them (lines it did not add
are never touched), and detaches a loop device that prepare --image attached.
The data stays on the disk; the image file stays where it is unless
--remove-image.

Examples:
  diskprep release /data
  diskprep release /dev/sdb                  # every mounted partition of sdb
  diskprep release /var/tmp/scratch.img --remove-image`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "remove-image", Usage: "also delete the image file behind a loop device diskprep attached"},
			fstabFlag(),
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() != 1 {
				return usageErr(errors.New("release takes one MOUNTPOINT, DEVICE or IMAGE"))
			}
			return runRelease(c.Context, releaseOptions{Target: c.Args().First(), RemoveImage: c.Bool("remove-image"), Fstab: c.String("fstab")}, e)
		}),
	}
}

func runRelease(ctx context.Context, opts releaseOptions, e *env) error {
	format, err := e.format("table", "json")
	if err != nil {
		return err
	}
	if e.Root != "" && e.Root != "/" {
		return usageErr(errors.New("--root reads another machine's facts: release works on this machine only"))
	}
	if geteuid() != 0 {
		return errors.New("release needs root")
	}
	deps, err := withFstab(applyDeps(e), opts.Fstab)
	if err != nil {
		return err
	}
	res, err := releaseFunc(ctx, opts.Target, disk.ReleaseOptions{RemoveImage: opts.RemoveImage}, deps)
	if res != nil && err != nil {
		res.WriteText(e.Stderr)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", opts.Target, err)
	}
	if format == "json" {
		return writeJSON(e.Stdout, res)
	}
	return res.WriteText(e.Stdout)
}
