package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/internal/testenv"
)

// prepare --diff on the recording fake: before the first apply every layer
// is created (exit 1), after it every layer is kept (exit 0), and the diff
// itself writes nothing.
func TestPrepareDiffBeforeAndAfter(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		layers []string
	}{
		{"disk", []string{"/dev/sdb", "--fs", "xfs", "--label", "data", "--mount", "/data", "--persist"},
			[]string{"table", "partition", "filesystem", "mount", "fstab"}},
		{"raid1", []string{"/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--mount", "/data", "--persist"},
			[]string{"table", "partition", "md", "mdadm.conf", "filesystem", "mount", "fstab"}},
		{"lvm", []string{"/dev/sdb", "/dev/sdc", "--lvm", "fast/scratch:1G", "--fs", "ext4", "--mount", "/scratch"},
			[]string{"table", "partition", "pv", "vg", "lv", "filesystem", "mount"}},
		{"lvmcache", []string{"--cache", "/dev/sdb", "--cache-device", "/dev/sdd", "--fs", "xfs", "--mount", "/srv", "--persist"},
			[]string{"table", "partition", "cache", "filesystem", "mount", "fstab"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, h := cacheMachine(t)
			args := append([]string{"prepare"}, c.args...)
			code, out, errOut := runArgsOn(m, append(args, "--diff")...)
			if code != exitFailure {
				t.Fatalf("diff before: exit %d, want 1: %s%s", code, out, errOut)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Fatalf("the diff wrote: %v", w)
			}
			before := diffLines(t, out)
			for _, l := range c.layers {
				if before[l] != disk.ActCreate {
					t.Errorf("before the first apply, layer %s is %q, want create:\n%s", l, before[l], out)
				}
			}
			if !strings.Contains(out, " to create, 0 to change, 0 to destroy, 0 kept\n") {
				t.Errorf("no count line:\n%s", out)
			}

			if code, _, errOut := runArgsOn(m, append(args, "--yes")...); code != 0 {
				t.Fatalf("prepare: exit %d: %s", code, errOut)
			}
			n := len(h.Writes())
			code, out, errOut = runArgsOn(m, append(args, "--diff")...)
			if code != 0 {
				t.Fatalf("diff after: exit %d, want 0: %s%s", code, out, errOut)
			}
			after := diffLines(t, out)
			for _, l := range c.layers {
				if after[l] != disk.ActKeep {
					t.Errorf("after apply, layer %s is %q, want keep:\n%s", l, after[l], out)
				}
			}
			if !strings.Contains(out, "no change: ") {
				t.Errorf("no 'no change' line:\n%s", out)
			}
			code, out, _ = runArgsOn(m, append(args, "--diff", "-o", "json")...)
			var doc planDiffDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.Schema != disk.DiffSchema || doc.Changed || len(doc.Changes) < len(c.layers) {
				t.Errorf("json: exit %d, err %v, doc %+v:\n%s", code, err, doc, out)
			}
			if len(h.Writes()) != n {
				t.Errorf("the diff after apply wrote: %v", h.Writes()[n:])
			}
		})
	}
}

// A disk prepared otherwise is refused as planned (exit 3, the guard's
// line on stderr); the diff shows what --wipe would destroy, naming what
// the old partition holds and the disk it is on.
func TestPrepareDiffRefusedShowsWhatWipeDestroys(t *testing.T) {
	m, h := cacheMachine(t)
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--label", "old", "--yes"); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	n := len(h.Writes())
	code, out, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "ext4", "--label", "new", "--diff")
	if code != exitRefused || !strings.Contains(errOut, "refusing") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, want 3 and one line on stderr:\n%s%s", code, out, errOut)
	}
	for _, w := range []string{
		"refused as planned; with --wipe it would do:",
		"destroy  partition   /dev/sdb1",
		`xfs label "old" UUID `,
		"on /dev/sdb (FAKE serial Ssdb)",
		"change   table       /dev/sdb",
		"create   filesystem  /dev/sdb1",
		`ext4 label "new"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the diff does not say %q:\n%s", w, out)
		}
	}
	if len(h.Writes()) != n {
		t.Errorf("the diff wrote: %v", h.Writes()[n:])
	}
	code, out, _ = runArgsOn(m, "prepare", "/dev/sdb", "--fs", "ext4", "--label", "new", "--diff", "-o", "json")
	var doc planDiffDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitRefused || doc.Refused == "" || !doc.Changed {
		t.Errorf("json: exit %d, err %v, doc %+v", code, err, doc)
	}
}

// diffLines maps each layer to its action, from the diff's text (the first
// line of a layer wins).
func diffLines(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		switch f[0] {
		case disk.ActKeep, disk.ActCreate, disk.ActChange, disk.ActDestroy:
			if _, ok := got[f[1]]; !ok {
				got[f[1]] = f[0]
			}
		}
	}
	return got
}

// Stale signatures inside the partitions a plan would make, which no
// partition of today's disk shows (the disk has no table): an LVM label
// near the first region's start, a bcache superblock at 4 KiB of the
// second and, where the kernel has md, an md 1.0 superblock at its end.
// --diff lists each and, without wipe, says the guard would refuse (exit
// 3), reading only; with wipe, prepare wipes them before the table and
// the partitions hold the new filesystem alone.
func TestPrivilegedPrepareDiffStaleSignatures(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "losetup", "pvcreate", "make-bcache", "wipefs")
	_, m := useTempRoot(t)
	l := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
	t.Cleanup(func() { testenv.UnmountAll(t, l.Dev); dropKernelPartitions(t, l.Dev) })
	dir := t.TempDir()
	write := func(wipe bool) string {
		p := filepath.Join(dir, fmt.Sprintf("plan-%v.yaml", wipe))
		w := ""
		if wipe {
			w = "    wipe: true\n"
		}
		os.WriteFile(p, []byte("version: 1\ndisks:\n  - select: {path: "+l.Dev+"}\n"+w+
			"    partitions:\n      - {size: 100M, fs: ext4, label: one}\n      - {size: rest, fs: ext4, label: two}\n"), 0o644)
		return p
	}
	plan, wiped := write(false), write(true)
	code, out, errOut := runArgsOn(m, "-o", "json", "prepare", "--plan", plan, "--dry-run")
	var doc struct {
		Disks []disk.Plan `json:"disks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Disks) != 1 || len(doc.Disks[0].Partitions) != 2 {
		t.Fatalf("dry run: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	p1, p2 := doc.Disks[0].Partitions[0], doc.Disks[0].Partitions[1]
	// A loop device over a byte range of the disk's image: where a
	// partition will be.
	region := func(start, size uint64) string {
		dev := strings.TrimSpace(testenv.MustRun(t, "losetup", "-f", "--show", "-o", fmt.Sprint(start), "--sizelimit", fmt.Sprint(size), l.Image))
		t.Cleanup(func() { testenv.Run("losetup", "-d", dev) })
		return dev
	}
	want := []string{"LVM2_member signature, its magic at byte 536 of the new partition 1", "bcache signature, its magic at byte 4120 of the new partition 2"}
	if _, err := os.Stat("/proc/mdstat"); err == nil {
		r := region(p2.StartBytes, p2.SizeBytes)
		t.Cleanup(func() { stopArraysOn(t, r) })
		testenv.MustRun(t, "mdadm", "--create", "/dev/md/diffstale", "--run", "--metadata=1.0", "--level=1", "--raid-devices=2", r, "missing")
		testenv.MustRun(t, "mdadm", "--stop", "/dev/md/diffstale")
		// udev may assemble it again from the superblock just written.
		stopArraysOn(t, r)
		want = append(want, "linux_raid_member signature, its magic at byte ")
	} else {
		t.Log("no md in this kernel: the md 1.0 case runs in the guest tier")
	}
	testenv.MustRun(t, "pvcreate", "-ff", "-y", region(p1.StartBytes, p1.SizeBytes))
	bc := region(p2.StartBytes, 64<<20)
	testenv.MustRun(t, "make-bcache", "-B", bc)
	// Where the kernel has bcache, udev registers the new backing device,
	// which then holds the region's loop device: stop it, so that only
	// the superblock is left and the loop device can go.
	stopBcache(t, bc)
	sum := deviceWrites(t, l.Dev)

	code, out, errOut = runArgsOn(m, "prepare", "--plan", plan, "--diff")
	if code != exitRefused || !strings.Contains(errOut, "refusing to prepare") || !strings.Contains(errOut, "pass --wipe") {
		t.Errorf("diff without wipe: exit %d, want 3 and the guard's line:\n%s%s", code, out, errOut)
	}
	for _, w := range want {
		if !strings.Contains(out, "destroy  signature   ") || !strings.Contains(out, w) {
			t.Errorf("the diff does not list %q:\n%s", w, out)
		}
	}
	code, out, errOut = runArgsOn(m, "prepare", "--plan", wiped, "--diff")
	if code != exitFailure || strings.Count(out, "destroy  signature") != len(want) {
		t.Errorf("diff with wipe: exit %d, want 1 and %d signatures to destroy:\n%s%s", code, len(want), out, errOut)
	}
	if deviceWrites(t, l.Dev) != sum {
		t.Fatal("prepare --diff changed the disk")
	}

	// Without wipe, prepare refuses as the diff said, and writes nothing.
	if code, _, errOut := runArgsOn(m, "prepare", "--plan", plan, "--yes"); code != exitRefused {
		t.Errorf("prepare without wipe: exit %d, want 3: %s", code, errOut)
	}
	if deviceWrites(t, l.Dev) != sum {
		t.Fatal("a refused prepare changed the disk")
	}
	if code, _, errOut := runArgsOn(m, "prepare", "--plan", wiped, "--yes"); code != 0 {
		t.Fatalf("prepare with wipe: exit %d: %s", code, errOut)
	}
	for _, part := range []string{p1.Path, p2.Path} {
		dev := strings.Replace(part, disk.LoopPlaceholder, l.Dev, 1)
		if got := strings.Fields(testenv.MustRun(t, "wipefs", "--no-act", "--noheadings", "--output", "TYPE", dev)); len(got) != 1 || got[0] != "ext4" {
			t.Errorf("%s holds %q after prepare, want ext4 alone", dev, got)
		}
	}
	if code, out, errOut := runArgsOn(m, "prepare", "--plan", wiped, "--diff"); code != 0 {
		t.Errorf("diff after prepare: exit %d, want 0:\n%s%s", code, out, errOut)
	}
}

// stopArraysOn stops the md arrays /proc/mdstat shows with dev as a
// member, after udev has handled its events: only those, never another
// array of the machine's.
func stopArraysOn(t *testing.T, dev string) {
	t.Helper()
	testenv.Run("udevadm", "settle", "--timeout=10")
	b, err := os.ReadFile("/proc/mdstat")
	if err != nil {
		return
	}
	name := filepath.Base(dev)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || !strings.HasPrefix(f[0], "md") || f[1] != ":" {
			continue
		}
		for _, m := range f[2:] {
			if strings.HasPrefix(m, name+"[") {
				testenv.Run("mdadm", "--stop", "/dev/"+f[0])
			}
		}
	}
}

// stopBcache stops the bcache device udev may have registered on dev and
// waits until the kernel has let go of dev.
func stopBcache(t *testing.T, dev string) {
	t.Helper()
	testenv.SettleUdev()
	stop := filepath.Join("/sys/block", filepath.Base(dev), "bcache", "stop")
	if _, err := os.Stat(stop); err != nil {
		return
	}
	if err := os.WriteFile(stop, []byte("1"), 0o200); err != nil {
		t.Fatalf("stop the bcache on %s: %v", dev, err)
	}
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(stop); err != nil {
			testenv.SettleUdev()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the bcache on %s did not stop in 10 s", dev)
}
