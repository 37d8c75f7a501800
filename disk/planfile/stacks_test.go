package planfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
)

func TestStacksExample(t *testing.T) {
	p, err := Load("testdata/stacks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Disks) != 3 || p.Disks[2].Select.Transport != "nvme" || p.Disks[2].Select.SizeMin != 200<<30 {
		t.Fatalf("disks %+v", p.Disks)
	}
	if ps := p.Disks[2].Partitions; ps[0].FS != "swap" || !ps[0].Persist || ps[1].Use != "lvm:fast" || p.Disks[0].Partitions[0].Use != "raid:data" {
		t.Errorf("partitions %+v", ps)
	}
	st := p.Stacks()
	if len(st.Arrays) != 1 || st.Arrays[0].Level != 1 || !reflect.DeepEqual(st.Arrays[0].Volume, disk.VolumeSpec{FS: "xfs", Label: "data", Mount: "/data", Persist: true}) || st.Arrays[0].Origin != "testdata/stacks.yaml:31" {
		t.Errorf("arrays %+v", st.Arrays)
	}
	if len(st.Groups) != 1 || len(st.Groups[0].Volumes) != 2 || st.Groups[0].Volumes[0].SizeBytes != 100<<30 || st.Groups[0].Volumes[1].SizeBytes != 0 || st.Groups[0].Volumes[1].Volume.Mount != "/var/lib/vm" {
		t.Errorf("groups %+v", st.Groups)
	}
}

// The bad input: exit 2 (ErrUsage) with file:line.
func TestStacksBadInput(t *testing.T) {
	head := "version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: raid:data}]\n  - select: {serial: B}\n    partitions: [{size: rest, use: raid:data}]\n"
	for name, c := range map[string]struct{ doc, want string }{
		"unknown level":   {head + "raid:\n  - {name: data, level: 3, filesystem: {fs: xfs}}\n", `plan.yaml:8: raid[0].level: unknown RAID level 3`},
		"too few members": {head + "raid:\n  - {name: data, level: 5, filesystem: {fs: xfs}}\n", `plan.yaml:8: raid data: level 5 needs at least 3 members, 2 partitions say use: raid:data`},
		"swap with mount": {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions:\n      - {size: 1G, fs: swap, mount: /swap}\n", `plan.yaml:5: disks[0].partitions[0].mount: a swap partition has no mount point`},
		"undeclared use":  {head, `plan.yaml:4: partition use raid:data: no raid entry with name: data in this plan`},
		"use with fs":     {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions:\n      - {size: rest, use: raid:x, fs: xfs}\n", `a partition with use: raid:x has no fs of its own`},
		"rest not last":   {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: lvm:v}]\nlvm:\n  - vg: v\n    volumes:\n      - {name: a, size: rest, fs: xfs}\n      - {name: b, size: 1G, fs: xfs}\n", `plan.yaml:8: lvm[0].volumes[0].size: "rest" is allowed only for the last volume`},
		"bad transport":   {"version: 1\ndisks:\n  - select: {transport: firewire}\n    partitions: [{size: rest, fs: xfs}]\n", `plan.yaml:3: disks[0].select.transport: "firewire": want one of nvme`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(c.doc))
			if !errors.Is(err, disk.ErrUsage) || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want bad input containing %q", err, c.want)
			}
		})
	}
}
