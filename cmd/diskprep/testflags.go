//go:build !crashtest

package main

import "github.com/urfave/cli/v2"

// testFlags are the flags only a crashtest build has (testflags_crashtest.go):
// the binary built as the README says has none.
func testFlags() []cli.Flag { return nil }

// withTestFlags applies testFlags to m: nothing to apply here.
func withTestFlags(_ *cli.Context, m *machine) (*machine, error) { return m, nil }
