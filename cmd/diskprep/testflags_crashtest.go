//go:build crashtest

package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/disk"
)

// testFlags adds, in a crashtest build only, the hidden --fstab: it exists
// so that tests running the real binary (the crash-safety harness) edit a
// temporary file instead of /etc/fstab.
func testFlags() []cli.Flag {
	return []cli.Flag{&cli.StringFlag{Name: "fstab", Hidden: true, Usage: "edit `FILE` instead of /etc/fstab (for tests)"}}
}

// withTestFlags returns m editing the --fstab file given, if any.
func withTestFlags(c *cli.Context, m *machine) (*machine, error) {
	path := c.String("fstab")
	if path == "" {
		return m, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--fstab %s: %w", path, err))
	}
	mm := *m
	deps := m.diskDeps
	mm.diskDeps = func(e *env) disk.Deps {
		d := deps(e)
		d.FstabPath = abs
		return d
	}
	return &mm, nil
}
