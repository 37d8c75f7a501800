//go:build !crashtest

package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// TestNoTestFlags: the binary built without the crashtest tag (as the
// README builds it) has no --fstab: the commands do not define it, hidden
// or not (urfave's completion offers hidden flags too), help does not show
// it, and giving it is a usage error.
func TestNoTestFlags(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard, &runState{})
	for _, c := range app.Commands {
		for _, f := range c.Flags {
			if slices.Contains(f.Names(), "fstab") {
				t.Errorf("%s defines --fstab", c.Name)
			}
		}
	}
	for cmd, args := range map[string][]string{
		"prepare": {"prepare", "/dev/sdb", "--fs", "xfs", "--fstab", "x", "--dry-run"},
		"release": {"release", "/data", "--fstab", "x", "--dry-run"},
	} {
		m, _ := fakeMachine(t, 0, false)
		code, _, errOut := runArgsOn(m, args...)
		if code != exitUsage || !strings.Contains(errOut, "flag provided but not defined: --fstab") {
			t.Errorf("%s --fstab: exit %d %q, want a usage error", cmd, code, errOut)
		}
		_, out, errOut := runArgs(cmd, "--help")
		if strings.Contains(out+errOut, "fstab FILE") || strings.Contains(out+errOut, "--fstab") {
			t.Errorf("%s --help mentions --fstab:\n%s", cmd, out+errOut)
		}
	}
	if len(testFlags()) != 0 {
		t.Errorf("test flags in a release build: %v", testFlags())
	}
}
