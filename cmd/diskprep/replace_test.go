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
	return m
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
