package main

import (
	"bytes"
	"flag"
	"log/slog"
	"strings"
	"testing"
	"unicode"

	"github.com/urfave/cli/v2"
)

// Without --verbose, what the packages log at Warn or above is one plain
// line, with no log-record syntax and no child output; with --verbose the
// record keeps the output whole (quoted, so no raw control bytes either).
func TestPlainLogLines(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newPlainHandler(&b, slog.LevelWarn))
	progress := "Allocating group tables: 0/8\b\b\b   \b\b\bdone\n"
	log.Info("make filesystem: failed", "output", progress) // below the level
	log.With("device", "/dev/sdb").Warn("udevadm settle failed", "err", "exit status 1", "output", progress)
	got := b.String()
	if got != "diskprep: warning: udevadm settle failed device=/dev/sdb err=exit status 1\n" {
		t.Errorf("plain line %q", got)
	}
	var v bytes.Buffer
	e := envFrom(newTestContext(t, "--verbose"), nil, &v, &v)
	e.Logger.Info("make filesystem: failed", "output", progress)
	if !strings.Contains(v.String(), `output="Allocating group tables: 0/8\b\b\b`) {
		t.Errorf("--verbose record lacks the whole output: %q", v.String())
	}
	for _, r := range got + v.String() {
		if unicode.IsControl(r) && r != '\n' {
			t.Fatalf("control character %q on the terminal", r)
		}
	}
}

// newTestContext is a cli context holding the global flags args set.
func newTestContext(t *testing.T, args ...string) *cli.Context {
	t.Helper()
	set := flag.NewFlagSet("diskprep", flag.ContinueOnError)
	for _, f := range globalFlags() {
		if err := f.Apply(set); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cli.NewContext(&cli.App{}, set, nil)
}
