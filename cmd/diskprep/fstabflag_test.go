//go:build crashtest

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
)

// TestHiddenFstabFlag: in a crashtest build, prepare and release hand
// --fstab (made absolute) to disk as the fstab to edit, and neither lists
// it in help.
func TestHiddenFstabFlag(t *testing.T) {
	m := liveMachine()
	m.readFacts = func(context.Context, string, *env) (*hwinfo.Host, error) {
		return &hwinfo.Host{Schema: hwinfo.Schema, Disks: []hwinfo.Disk{{Name: "sdb", Path: "/dev/sdb", SizeBytes: 100 << 30, LogicalSectorBytes: 512, PhysicalSectorBytes: 512}}}, nil
	}
	m.geteuid = func() int { return 0 }
	var got []string
	locked := 0
	m.lockTarget = func(r disk.Request, d disk.Deps) (func(), error) {
		locked++
		return func() {}, nil
	}
	m.apply = func(_ context.Context, p *disk.Plan, d disk.Deps) (*disk.Result, error) {
		got = append(got, d.FstabPath)
		return &disk.Result{Schema: disk.ResultSchema, Device: p.Device}, nil
	}
	m.planRelease = func(_ context.Context, target string, _ disk.ReleaseOptions, d disk.Deps) (*disk.ReleasePlan, error) {
		got = append(got, d.FstabPath)
		return &disk.ReleasePlan{Schema: disk.ReleasePlanSchema, Target: target}, nil
	}
	m.applyRelease = func(_ context.Context, p *disk.ReleasePlan, d disk.Deps) (*disk.ReleaseResult, error) {
		got = append(got, d.FstabPath)
		return &disk.ReleaseResult{}, nil
	}
	t.Chdir(t.TempDir())
	want, _ := filepath.Abs("test-fstab")
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/data", "--persist", "--fstab", "test-fstab", "--yes"); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runArgsOn(m, "release", "/data", "--fstab", "test-fstab"); code != 0 {
		t.Fatalf("release: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--yes"); code != 0 {
		t.Fatalf("prepare without --fstab: exit %d: %s", code, errOut)
	}
	if len(got) != 4 || got[0] != want || got[1] != want || got[2] != want || got[3] != "" {
		t.Errorf("fstab paths handed to disk: %q, want %q three times (prepare, release's plan and apply) and then the default", got, want)
	}
	if locked != 2 {
		t.Errorf("prepare took %d locks for two runs of one disk", locked)
	}
	for cmd, shown := range map[string]string{"prepare": "--persist", "release": "--remove-image"} {
		_, out, errOut := runArgs(cmd, "--help")
		if help := out + errOut; !strings.Contains(help, shown) || strings.Contains(help, "--fstab") {
			t.Errorf("%s --help: want %s listed and not the hidden --fstab:\n%s", cmd, shown, help)
		}
	}
}
