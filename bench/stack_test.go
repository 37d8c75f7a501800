package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
)

// TestTargetStack: a target on an md array or an LVM volume records what
// it is built of, from the inventory of a real guest (hwinfo's
// guest-stacks tree: md1 a degraded RAID1 of sdc1 with xfs at /mnt/degr,
// dm-0 the LV fast/scratch on nvme0n1p2 with ext4 at /mnt/scratch); a
// plain partition records that it is one.
func TestTargetStack(t *testing.T) {
	host, err := hwinfo.Read(context.Background(), hwinfo.Options{Root: "../hwinfo/testdata/guest-stacks"})
	if err != nil {
		t.Fatal(err)
	}
	roots, sys, proc := fakeRoots(t)
	writeFile(t, filepath.Join(proc, "self/mountinfo"), `22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 22 9:1 / /mnt/degr rw,relatime - xfs /dev/md1 rw
41 22 253:0 / /mnt/scratch rw,relatime - ext4 /dev/mapper/fast-scratch rw
42 22 8:33 / /mnt/plain rw,relatime - xfs /dev/sdc1 rw
`)
	for mm, dev := range map[string]string{"9:1": "devices/virtual/block/md1", "253:0": "devices/virtual/block/dm-0", "8:33": "devices/pci0000:00/block/sdc/sdc1"} {
		if err := os.MkdirAll(filepath.Join(sys, dev), 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(sys, "dev/block", mm)
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(filepath.Join(sys, dev), link); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		dir          string
		major, minor uint32
		text         string
		layers       []hwinfo.Layer
	}{
		{"/mnt/degr", 9, 1, "xfs on md1 raid1 [degraded, 1 missing] of sdc1", []hwinfo.Layer{{Kind: "md", Device: "md1", Name: "guest:degr",
			Type: "raid1", State: "degraded, 1 missing", SizeBytes: 534708224, On: []string{"sdc1"}}}},
		{"/mnt/scratch", 253, 0, "ext4 on fast/scratch (dm-0) linear on nvme0n1p2", []hwinfo.Layer{{Kind: "lvm", Device: "dm-0",
			Name: "fast/scratch", Type: "linear", SizeBytes: 100 << 20, On: []string{"nvme0n1p2"}}}},
		{"/mnt/plain", 8, 33, "xfs on sdc1", nil},
	} {
		tg := &target{ident: record.Target{Path: c.dir, Kind: record.KindDir}, major: c.major, minor: c.minor, haveDev: true, roots: roots}
		tg.identify(host)
		if tg.ident.StackText != c.text {
			t.Errorf("%s: stack text %q, want %q", c.dir, tg.ident.StackText, c.text)
		}
		assertJSON(t, c.dir, tg.ident.Stack, c.layers)
	}
}

func assertJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}
