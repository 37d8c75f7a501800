package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/redact"
)

type inventoryOptions struct {
	All bool
}

func inventoryCommand() *cli.Command {
	return &cli.Command{
		Name:  "inventory",
		Usage: "show the hardware and software identity of this host and its disks",
		Description: `Inventory reads CPU, memory, board, BIOS, OS, kernel, hypervisor and every
disk (model, serial, firmware, transport, HDD/SSD/NVMe, virtual or physical,
partitions, filesystems, mounts, LVM/MD holders) without running any program.
Disks holding /, /boot or swap are marked "system": prepare refuses them.
The same facts are embedded in every benchmark record.

Examples:
  diskprep inventory
  diskprep inventory -o json > inventory.json
  diskprep inventory -o markdown >> post.md     # an "Environment" section
  diskprep inventory --all                      # also unused loop, zram, optical
  diskprep inventory --redact -o markdown       # serials, WWNs, hostname, UUIDs hashed for a public post
  diskprep inventory --root ./fixture-tree      # another machine's captured /sys, /proc, /etc`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "also show unused loop devices, zram, ram disks and optical drives"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() > 0 {
				return usageErr(fmt.Errorf("inventory takes no arguments (got %q)", c.Args().First()))
			}
			return runInventory(c.Context, inventoryOptions{All: c.Bool("all")}, e)
		}),
	}
}

func runInventory(ctx context.Context, opts inventoryOptions, e *env) error {
	format, err := e.format("table", "json", "markdown")
	if err != nil {
		return err
	}
	host, err := hwinfo.Read(ctx, hwinfo.Options{Root: e.Root, All: opts.All, Logger: e.Logger})
	if err != nil {
		return err
	}
	if e.Redact {
		host = redact.Copy(host)
	}
	if err := report.Inventory(e.Stdout, format, host); err != nil {
		return err
	}
	if format == "table" {
		// Markdown lists them itself; JSON carries them.
		warnAll(e, host.Warnings)
	}
	return nil
}
