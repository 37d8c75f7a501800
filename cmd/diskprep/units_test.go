package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Issue 13 item 4: GB is 10^9 as coreutils, parted and lsblk read it, G
// and GiB are 2^30, and the dry run says which was understood, in both
// forms.
func TestPrepareDryRunShowsSizeBothWays(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	img := filepath.Join(t.TempDir(), "x.img")
	for size, want := range map[string]string{
		"10GB":  "create sparse image " + img + " (10 GB (9.3 GiB))",
		"10G":   "create sparse image " + img + " (10 GiB (10.7 GB))",
		"10GiB": "create sparse image " + img + " (10 GiB (10.7 GB))",
	} {
		code, out, errOut := runArgsOn(m, "prepare", "--image", img, "--size", size, "--fs", "xfs", "--dry-run")
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--size %s: exit %d, want a plan with %q:\n%s%s", size, code, want, out, errOut)
		}
	}
}

// A duration without a unit is refused with the reading most people mean,
// not silently taken as seconds.
func TestDurationWithoutUnitRefused(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runDiskprep(t, "", "bench", dir, "--set", "quick", "--runtime", "10")
	if code != exitUsage || !strings.Contains(errOut, "did you mean 10s?") {
		t.Errorf("bench --runtime 10: exit %d, %q; want exit 2 with a hint", code, errOut)
	}
	code, _, errOut = runDiskprep(t, "", "bench", dir, "--workload", "rw=read,runtime=5")
	if code != exitUsage || !strings.Contains(errOut, "did you mean 5s?") {
		t.Errorf("--workload runtime=5: exit %d, %q; want exit 2 with a hint", code, errOut)
	}
}
