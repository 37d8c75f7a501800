package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
)

// TestHiddenFstabFlag: prepare and release hand --fstab (made absolute) to
// disk as the fstab to edit, and neither lists it in help.
func TestHiddenFstabFlag(t *testing.T) {
	oldFacts, oldUID, oldApply, oldRelease, oldLock := readFacts, geteuid, applyPlan, releaseFunc, lockTarget
	t.Cleanup(func() {
		readFacts, geteuid, applyPlan, releaseFunc, lockTarget = oldFacts, oldUID, oldApply, oldRelease, oldLock
	})
	readFacts = func(context.Context, string, *env) (*hwinfo.Host, error) {
		return &hwinfo.Host{Schema: hwinfo.Schema, Disks: []hwinfo.Disk{{Name: "sdb", Path: "/dev/sdb", SizeBytes: 100 << 30, LogicalSectorBytes: 512, PhysicalSectorBytes: 512}}}, nil
	}
	geteuid = func() int { return 0 }
	var got []string
	locked := 0
	lockTarget = func(r disk.Request, d disk.Deps) (func(), error) {
		locked++
		return func() {}, nil
	}
	applyPlan = func(_ context.Context, p *disk.Plan, d disk.Deps) (*disk.Result, error) {
		got = append(got, d.FstabPath)
		return &disk.Result{Schema: disk.ResultSchema, Device: p.Device}, nil
	}
	releaseFunc = func(_ context.Context, _ string, _ disk.ReleaseOptions, d disk.Deps) (*disk.ReleaseResult, error) {
		got = append(got, d.FstabPath)
		return &disk.ReleaseResult{}, nil
	}
	t.Chdir(t.TempDir())
	want, _ := filepath.Abs("test-fstab")
	if code, _, errOut := runArgs("prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/data", "--persist", "--fstab", "test-fstab", "--yes"); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runArgs("release", "/data", "--fstab", "test-fstab"); code != 0 {
		t.Fatalf("release: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runArgs("prepare", "/dev/sdb", "--fs", "xfs", "--yes"); code != 0 {
		t.Fatalf("prepare without --fstab: exit %d: %s", code, errOut)
	}
	if len(got) != 3 || got[0] != want || got[1] != want || got[2] != "" {
		t.Errorf("fstab paths handed to disk: %q, want %q twice and then the default", got, want)
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
