package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
)

// replaceMachine is the fake with a RAID1 "data" over sdb and sdc made by
// prepare, whose facts say sdc is gone: sdb1 is the one working member.
// sdd (1 GiB) is smaller than the members; sde (2 GiB) is the new disk.
func replaceMachine(t *testing.T) *machine {
	t.Helper()
	m, _ := replaceMachineHost(t)
	return m
}

// replaceMachineHost is replaceMachine and its fake host.
func replaceMachineHost(t *testing.T) (*machine, *hosttest.Host) {
	t.Helper()
	m, h := cacheMachine(t)
	h.AddDisk(hosttest.Disk{Name: "sde", Minor: 64, SizeBytes: 2 << 30, Model: "NEW", Serial: "Ssde"})
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--mount", "/data", "--yes"); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	facts := m.readFacts
	m.readFacts = func(ctx context.Context, root string, e *env) (*hwinfo.Host, error) {
		f, err := facts(ctx, root, e)
		if err != nil {
			return nil, err
		}
		if len(f.Arrays) == 0 { // the fake's sysfs has no md/ members
			f.Arrays = []hwinfo.Array{{Name: "md127", Path: "/dev/md127"}}
		}
		for i := range f.Arrays {
			a := &f.Arrays[i]
			a.ArrayName, a.Level, a.RaidDisks, a.Degraded, a.MissingDevices = "data", "raid1", 2, true, 1
			a.Members = []hwinfo.ArrayMember{{Device: "sdb1", Disk: "sdb", Slot: 0, Role: "active"}}
			if slices.ContainsFunc(h.Log(), func(ef hosttest.Effect) bool { return strings.Contains(ef.String(), "--manage /dev/md127 --add") }) {
				a.Sync = &hwinfo.ArraySync{Action: "recover"}
				a.Members = append(a.Members, hwinfo.ArrayMember{Device: "sde1", Disk: "sde", Slot: 1, Role: "spare"})
			}
		}
		return f, nil
	}
	return m, h
}

// A replace right after a killed one reads its facts only once udev has
// processed the kill's events (the close of the disk it wrote): planned
// from udev's older view of the new disk, the run is refused when the
// disk is checked before the write ("the partition table changed since
// planning").
func TestReplaceSettlesUdevBeforeFacts(t *testing.T) {
	for _, udev := range []bool{true, false} {
		m, h := replaceMachineHost(t)
		if udev {
			h.SetFile("/run/udev/control", nil)
		}
		settles := func() int {
			n := 0
			for _, ef := range h.Log() {
				if ef.String() == "  run udevadm settle --timeout=30" {
					n++
				}
			}
			return n
		}
		start := settles()
		before := -1
		facts := m.readFacts
		m.readFacts = func(ctx context.Context, root string, e *env) (*hwinfo.Host, error) {
			if before < 0 {
				before = settles() - start
			}
			return facts(ctx, root, e)
		}
		if code, out, errOut := runArgsOn(m, "replace", "/dev/md/data", "--with", "/dev/sde", "--dry-run"); code != 0 {
			t.Fatalf("udev %v: exit %d:\n%s%s", udev, code, out, errOut)
		}
		if want := map[bool]int{true: 1, false: 0}[udev]; before != want {
			t.Errorf("udev running %v: %d settles before the facts were read, want %d", udev, before, want)
		}
	}
}

func TestReplaceOnTheFake(t *testing.T) {
	m := replaceMachine(t)
	code, out, errOut := runArgsOn(m, "replace", "/dev/md/data", "--with", "/dev/sde", "--dry-run")
	if code != 0 || !strings.Contains(out, "the new member is made like /dev/sdb1") || !strings.Contains(out, "then: mdadm --manage /dev/md127 --add /dev/sde1") {
		t.Fatalf("dry run: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runArgsOn(m, "-o", "json", "replace", "/dev/md/data", "--with", "/dev/sde", "--dry-run")
	var rp stack.ReplacePlan
	if code != 0 || json.Unmarshal([]byte(out), &rp) != nil || rp.Schema != stack.ReplacePlanSchema || rp.Member != "/dev/sde1" {
		t.Fatalf("dry run json: exit %d:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runArgsOn(m, "replace", "/dev/md/data", "--with", "/dev/sdd", "--dry-run"); code != exitRefused || !strings.Contains(errOut, "too small") {
		t.Errorf("a smaller disk: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runArgsOn(m, "replace", "/dev/md/data", "--with", "/dev/sdb", "--dry-run"); code != exitRefused || !strings.Contains(errOut, "a working member") {
		t.Errorf("the working member's disk: exit %d: %s", code, errOut)
	}
	code, out, errOut = runArgsOn(m, "-o", "json", "replace", "/dev/md/data", "--with", "/dev/sde", "--yes", "--no-wait")
	var res replaceResultDoc
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Schema != replaceResultSchema || !res.Added || res.Member != "/dev/sde1" {
		t.Fatalf("replace: exit %d:\n%s%s", code, out, errOut)
	}
	// Again while it rebuilds: nothing is added twice.
	code, out, errOut = runArgsOn(m, "replace", "/dev/md/data", "--with", "/dev/sde", "--yes", "--no-wait")
	if code != 0 || !strings.Contains(out, "is in the array already") {
		t.Errorf("rerun: exit %d:\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"replace"}, {"replace", "/dev/md/data"}, {"replace", "--with", "/dev/sde"}} {
		if code, _, errOut := runArgsOn(m, args...); code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, want 2 and one line: %s", args, code, errOut)
		}
	}
	m.geteuid = func() int { return 1000 }
	if code, _, errOut := runArgsOn(m, "replace", "/dev/md/data", "--with", "/dev/sde", "--yes"); code != exitFailure || !strings.Contains(errOut, "replace needs root") {
		t.Errorf("as a user: exit %d: %s", code, errOut)
	}
}
