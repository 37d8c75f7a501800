package stack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
)

// replaceFacts is a RAID1 "data" (md127) that lost sdc: sdb1 is its one
// working member; sdd (blank, as large) and sde (smaller) are new disks.
func replaceFacts(t *testing.T, mutate func(a *hwinfo.Array)) (stack.Planner, *hwinfo.Host) {
	t.Helper()
	h := hosttest.New()
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 2 << 30, Model: "FAKE", Serial: "Ssdb"})
	h.AddDisk(hosttest.Disk{Name: "sdd", Minor: 48, SizeBytes: 2 << 30, Model: "NEW", Serial: "Ssdd"})
	h.AddDisk(hosttest.Disk{Name: "sde", Minor: 64, SizeBytes: 1 << 30, Model: "SMALL", Serial: "Ssde"})
	facts := h.FactsNow()
	for i := range facts.Disks {
		if facts.Disks[i].Name == "sdb" {
			facts.Disks[i].PartitionTable = "gpt"
			facts.Disks[i].Partitions = []hwinfo.Partition{{Name: "sdb1", Path: "/dev/sdb1", Number: 1, StartBytes: 1 << 20,
				SizeBytes: 2<<30 - 2<<20, FSType: "linux_raid_member", Holders: []hwinfo.Holder{{Name: "md127", Kind: "md"}}}}
		}
	}
	a := hwinfo.Array{Name: "md127", Path: "/dev/md127", ArrayName: "host:data", Level: "raid1", RaidDisks: 2, State: "clean",
		Degraded: true, MissingDevices: 1, Members: []hwinfo.ArrayMember{{Device: "sdb1", Disk: "sdb", Slot: 0, Role: "active"}}}
	if mutate != nil {
		mutate(&a)
	}
	facts.Arrays = []hwinfo.Array{a}
	return stack.Planner{Planner: disk.Planner{Host: h}}, facts
}

func TestPlanReplace(t *testing.T) {
	pl, facts := replaceFacts(t, nil)
	rp, err := pl.PlanReplace("/dev/md127", "/dev/sdd", false, facts)
	if err != nil {
		t.Fatal(err)
	}
	pp := rp.Disk.Partitions
	if rp.Like != "/dev/sdb1" || len(pp) != 1 || pp[0].SizeBytes != 2<<30-2<<20 || pp[0].TypeGUID != disk.LinuxRAIDGUID || pp[0].Use != "raid:data" {
		t.Errorf("the new disk's plan: like %s, partitions %+v", rp.Like, pp)
	}
	if got := strings.Join(rp.Add, " "); got != "mdadm --manage /dev/md127 --add /dev/sdd1" {
		t.Errorf("add: %q", got)
	}
	var b strings.Builder
	rp.WriteText(&b)
	if !strings.Contains(b.String(), "then: mdadm --manage /dev/md127 --add /dev/sdd1") {
		t.Errorf("text:\n%s", b.String())
	}

	// The new member already added (a rerun while it rebuilds): nothing
	// is added twice.
	pl, facts = replaceFacts(t, func(a *hwinfo.Array) {
		a.Members = append(a.Members, hwinfo.ArrayMember{Device: "sdd1", Disk: "sdd", Slot: 1, Role: "spare"})
		a.Sync = &hwinfo.ArraySync{Action: "recover"}
	})
	for i := range facts.Disks {
		if facts.Disks[i].Name == "sdd" {
			facts.Disks[i].PartitionTable = "gpt"
			facts.Disks[i].Partitions = []hwinfo.Partition{{Name: "sdd1", Path: "/dev/sdd1", Number: 1, StartBytes: 1 << 20, SizeBytes: 2<<30 - 2<<20,
				FSType: "linux_raid_member", PartType: disk.LinuxRAIDGUID, Holders: []hwinfo.Holder{{Name: "md127", Kind: "md"}}}}
		}
	}
	if rp, err := pl.PlanReplace("/dev/md127", "/dev/sdd", false, facts); err != nil || rp.Add != nil {
		t.Errorf("rerun: %+v, %v", rp, err)
	}
}

func TestPlanReplaceRefuses(t *testing.T) {
	for _, c := range []struct {
		name, with string
		mutate     func(a *hwinfo.Array)
		want       string
	}{
		{"smaller disk", "/dev/sde", nil, "too small"},
		{"a working member's disk", "/dev/sdb", nil, "refusing"},
		{"nothing missing", "/dev/sdd", func(a *hwinfo.Array) { a.Degraded, a.MissingDevices = false, 0 }, "every member working"},
		{"raid0", "/dev/sdd", func(a *hwinfo.Array) { a.Level = "raid0" }, "keeps no copy"},
		{"no member left", "/dev/sdd", func(a *hwinfo.Array) { a.Members[0].Role = "faulty" }, "no working member"},
		{"inactive", "/dev/sdd", func(a *hwinfo.Array) { a.Level, a.State, a.Members[0].Role = "", "inactive", "spare" }, "start it degraded with mdadm --run /dev/md127"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl, facts := replaceFacts(t, c.mutate)
			_, err := pl.PlanReplace("/dev/md127", c.with, false, facts)
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want a refusal saying %q", err, c.want)
			}
		})
	}
	pl, facts := replaceFacts(t, nil)
	if _, err := pl.PlanReplace("/dev/sdb", "/dev/sdd", false, facts); err == nil || errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "not an md array") {
		t.Errorf("not an array: %v", err)
	}
}
