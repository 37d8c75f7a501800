package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Sizes people write: a share of the disk for a partition, a share of the
// group for a logical volume, 100%FREE for the last one. Each comes to
// the same bytes on every run, so a rerun is "already as planned" (the
// diff keeps every layer) even after the free space is gone.
func TestPrepareSizeShares(t *testing.T) {
	planOf := func(t *testing.T, out string) preparePlanDoc {
		t.Helper()
		var doc preparePlanDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return doc
	}
	t.Run("partition", func(t *testing.T) {
		m, h := cacheMachine(t) // sdb: 2 GiB
		args := []string{"prepare", "/dev/sdb", "--fs", "ext4", "--partition-size", "50%", "--mount", "/half"}
		code, out, errOut := runArgsOn(m, append(args, "--dry-run", "-o", "json")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got := planOf(t, out).Disks[0].Partitions[0].SizeBytes; got != 1<<30 {
			t.Errorf("50%% of 2 GiB made %d bytes, want %d", got, 1<<30)
		}
		if code, _, errOut := runArgsOn(m, append(args, "--yes")...); code != 0 {
			t.Fatalf("prepare: exit %d: %s", code, errOut)
		}
		n := len(h.Writes())
		code, out, errOut = runArgsOn(m, append(args, "--diff")...)
		if code != 0 || !strings.Contains(out, "keep  partition   /dev/sdb1  1: 1 GiB") {
			t.Errorf("rerun diff: exit %d, want 0 and the 1 GiB partition kept:\n%s%s", code, out, errOut)
		}
		if code, out, errOut := runArgsOn(m, append(args, "--yes")...); code != 0 || !strings.Contains(out, "already prepared as asked") || len(h.Writes()) != n {
			t.Errorf("rerun: exit %d, wrote %v:\n%s%s", code, h.Writes()[n:], out, errOut)
		}
	})
	t.Run("whole", func(t *testing.T) {
		m, _ := cacheMachine(t)
		_, all, _ := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--partition-size", "100%", "--dry-run", "-o", "json")
		_, rest, _ := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--dry-run", "-o", "json")
		a, r := planOf(t, all).Disks[0].Partitions[0], planOf(t, rest).Disks[0].Partitions[0]
		if a.StartLBA != r.StartLBA || a.EndLBA != r.EndLBA {
			t.Errorf("100%% is LBA %d-%d, the rest of the disk %d-%d", a.StartLBA, a.EndLBA, r.StartLBA, r.EndLBA)
		}
	})
	t.Run("volume", func(t *testing.T) {
		m, h := cacheMachine(t) // sdb, sdc: 2 GiB each
		args := []string{"prepare", "/dev/sdb", "/dev/sdc", "--lvm", "pool/half:50%", "--fs", "ext4", "--mount", "/half"}
		code, out, errOut := runArgsOn(m, append(args, "--dry-run", "-o", "json")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		g := planOf(t, out).Stacks.Groups[0]
		want := g.SizeBytes / 2 / g.ExtentBytes * g.ExtentBytes
		if lv := g.Volumes[0]; lv.SizeBytes != want || !strings.Contains(strings.Join(lv.Create, " "), "--size "+strconv.FormatUint(want, 10)+"b") {
			t.Errorf("50%% of a %d-byte group: %d bytes (%q), want %d", g.SizeBytes, lv.SizeBytes, lv.Create, want)
		}
		if code, _, errOut := runArgsOn(m, append(args, "--yes")...); code != 0 {
			t.Fatalf("prepare: exit %d: %s", code, errOut)
		}
		n := len(h.Writes())
		if code, out, errOut := runArgsOn(m, append(args, "--diff")...); code != 0 || !strings.Contains(out, "keep  lv ") {
			t.Errorf("rerun diff: exit %d, want 0 and the volume kept:\n%s%s", code, out, errOut)
		}
		if len(h.Writes()) != n {
			t.Errorf("the diff wrote %v", h.Writes()[n:])
		}
	})
}

// The plan file takes the same shares; a bad one is one line, exit 2.
func TestPlanFileSizeShares(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "p.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	m, _ := cacheMachine(t)
	ok := write("version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: 25%, fs: ext4}\n      - {size: 25%, fs: ext4}\n      - {size: rest, fs: xfs}\n")
	code, out, errOut := runArgsOn(m, "prepare", "--plan", ok, "--dry-run", "-o", "json")
	var doc preparePlanDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Disks) != 1 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if ps := doc.Disks[0].Partitions; ps[0].SizeBytes != 512<<20 || ps[1].SizeBytes != 512<<20 {
		t.Errorf("25%% of 2 GiB: %d and %d bytes, want %d", ps[0].SizeBytes, ps[1].SizeBytes, 512<<20)
	}
	for body, want := range map[string]string{
		"version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: 150%, fs: ext4}\n": "a share is more than 0% and at most 100%",
		"version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: 0%, fs: ext4}\n":   "a share is more than 0% and at most 100%",
		"version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: rest, use: lvm:vg}\n  - select: {path: /dev/sdc}\n    partitions:\n      - {size: rest, use: lvm:vg}\n" +
			"lvm:\n  - vg: vg\n    volumes:\n      - {name: a, size: 100%FREE, fs: xfs}\n      - {name: b, size: 1G, fs: xfs}\n": `"100%FREE" is allowed only for the last volume`,
	} {
		code, _, errOut := runArgsOn(m, "prepare", "--plan", write(body), "--dry-run")
		if code != exitUsage || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("exit %d, want 2 and one line saying %q:\n%s", code, want, errOut)
		}
	}
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--partition-size", "101%", "--dry-run"); code != exitUsage || !strings.Contains(errOut, "at most 100%") {
		t.Errorf("--partition-size 101%%: exit %d: %s", code, errOut)
	}
}

// Day two on the fake: a volume asked bigger (50% -> 75% of its group)
// and a group given another disk (its last volume, the rest, grows onto
// it) are diffed as changes, grown by prepare through lvextend
// --resizefs and vgextend, and kept on the next diff. Smaller is
// refused: xfs cannot shrink.
func TestPrepareGrowsAVolume(t *testing.T) {
	m, h := cacheMachine(t) // sdb, sdc: 2 GiB; sdd: 1 GiB
	base := []string{"prepare", "/dev/sdb", "/dev/sdc", "--fs", "xfs", "--mount", "/pool", "--persist"}
	with := func(lvm string, more ...string) []string {
		return append(append(slices.Clone(base), more...), "--lvm", lvm)
	}
	if code, _, errOut := runArgsOn(m, append(with("pool/data:50%"), "--yes")...); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	code, out, errOut := runArgsOn(m, append(with("pool/data:75%"), "--diff")...)
	if code != exitFailure || !strings.Contains(squash(out), "change lv /dev/pool/data data, 2.0 GiB -> 3.0 GiB (grown, with its xfs)") {
		t.Errorf("diff of 50%% -> 75%%: exit %d, want 1 and the volume grown:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runArgsOn(m, append(with("pool/data:75%"), "--dry-run")...)
	if code != 0 || !strings.Contains(out, "lvextend --resizefs --size ") || !strings.Contains(out, "pool/data (from 2.0 GiB to 3.0 GiB, with its xfs)") {
		t.Errorf("dry run: exit %d:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runArgsOn(m, append(with("pool/data:75%"), "--yes")...); code != 0 {
		t.Fatalf("grow: exit %d: %s", code, errOut)
	}
	if code, out, errOut := runArgsOn(m, append(with("pool/data:75%"), "--diff")...); code != 0 {
		t.Errorf("diff after the grow: exit %d, want 0:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runArgsOn(m, append(with("pool/data:50%"), "--diff")...); code != exitRefused || !strings.Contains(errOut, "xfs cannot shrink") {
		t.Errorf("50%% again: exit %d, want 3 (xfs cannot shrink): %s", code, errOut)
	}

	// Another disk for the group; the volume is the rest of it.
	if code, _, errOut := runArgsOn(m, append(with("pool/data"), "--yes")...); code != 0 {
		t.Fatalf("rest: exit %d: %s", code, errOut)
	}
	n := len(h.Writes())
	code, out, errOut = runArgsOn(m, append(with("pool/data", "/dev/sdd"), "--diff")...)
	if s := squash(out); code != exitFailure || !strings.Contains(s, "create pv /dev/sdd1") ||
		!strings.Contains(s, "change vg pool over /dev/sdb1, /dev/sdc1 -> over /dev/sdb1, /dev/sdc1, /dev/sdd1, 5.0 GiB") ||
		!strings.Contains(s, "change lv /dev/pool/data data, 3.0 GiB -> 5.0 GiB (grown, with its xfs)") {
		t.Errorf("diff with a third disk: exit %d:\n%s%s", code, out, errOut)
	}
	if len(h.Writes()) != n {
		t.Errorf("the diff wrote %v", h.Writes()[n:])
	}
	code, out, errOut = runArgsOn(m, append(with("pool/data", "/dev/sdd"), "--yes", "-o", "json")...)
	var doc prepareResultDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Stacks == nil || len(doc.Stacks.Groups) != 1 {
		t.Fatalf("grow onto sdd: exit %d:\n%s%s", code, out, errOut)
	}
	g := doc.Stacks.Groups[0]
	if lv := g.Volumes[0]; !lv.Grown || g.ExtendArgv == nil || lv.FromBytes == 0 || lv.SizeBytes <= lv.FromBytes {
		t.Errorf("result: group %+v", g)
	}
	if code, out, errOut := runArgsOn(m, append(with("pool/data", "/dev/sdd"), "--diff")...); code != 0 {
		t.Errorf("diff after growing onto sdd: exit %d, want 0:\n%s%s", code, out, errOut)
	}
}

// squash is out with every run of blanks one space: the diff's columns
// are aligned to its widest entry.
func squash(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

// Issue 24 item 4 on the fake: an ext4 volume asked smaller is refused
// without --shrink (exit 3, a hint), refused mounted even with it (the
// way to unmount said), and, unmounted, diffed as a change, shrunk by
// lvreduce --resizefs, mounted again and kept on the next diff. Nothing
// is written by the refusals or the diffs.
func TestPrepareShrinksAnUnmountedExt4Volume(t *testing.T) {
	m, h := cacheMachine(t) // sdb, sdc: 2 GiB
	args := func(lvm string, more ...string) []string {
		return append([]string{"prepare", "/dev/sdb", "/dev/sdc", "--fs", "ext4", "--mount", "/pool", "--persist", "--lvm", lvm}, more...)
	}
	if code, _, errOut := runArgsOn(m, args("pool/data:75%", "--yes")...); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	n := len(h.Writes())
	code, _, errOut := runArgsOn(m, args("pool/data:50%", "--diff")...)
	if code != exitRefused || !strings.Contains(errOut, "give --shrink to shrink it and its ext4 (unmounted)") {
		t.Errorf("50%% without --shrink: exit %d, want 3 and the hint: %s", code, errOut)
	}
	code, _, errOut = runArgsOn(m, args("pool/data:50%", "--shrink", "--yes")...)
	if code != exitRefused || !strings.Contains(errOut, "is mounted at /pool: ext4 shrinks only unmounted (umount /pool, then prepare --shrink again)") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("--shrink mounted: exit %d, want 3 and one line saying how: %s", code, errOut)
	}
	if w := h.Writes()[n:]; len(w) != 0 {
		t.Fatalf("the refusals wrote %v", w)
	}
	if err := h.Unmount("/pool"); err != nil {
		t.Fatal(err)
	}
	// Files that would not fit in the size asked: refused, nothing run.
	if err := h.FillExt("/dev/pool/data", 2200<<20); err != nil {
		t.Fatal(err)
	}
	n = len(h.Writes())
	code, _, errOut = runArgsOn(m, args("pool/data:50%", "--shrink", "--yes")...)
	if code != exitRefused || !strings.Contains(errOut, "its ext4 uses 2.1 GiB (files and metadata), more than the 2.0 GiB asked: resize2fs cannot shrink it that far") {
		t.Errorf("a shrink below what the ext4 uses: exit %d, want 3: %s", code, errOut)
	}
	if w := h.Writes()[n:]; len(w) != 0 {
		t.Fatalf("the refusal below the data wrote %v", w)
	}
	if err := h.FillExt("/dev/pool/data", 100<<20); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgsOn(m, args("pool/data:50%", "--shrink", "--diff")...)
	if s := squash(out); code != exitFailure || !strings.Contains(s, "change lv /dev/pool/data data, 3.0 GiB -> 2.0 GiB (shrunk, with its ext4, unmounted)") || !strings.Contains(s, "create mount") {
		t.Errorf("diff of 75%% -> 50%%: exit %d, want 1, the volume shrunk and mounted again:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runArgsOn(m, args("pool/data:50%", "--shrink", "--dry-run")...)
	if code != 0 || !strings.Contains(out, "e2fsck -f -p /dev/pool/data") || !strings.Contains(out, "resize2fs /dev/pool/data 2093056K") ||
		!strings.Contains(out, "lvreduce --yes --size 2143289344b pool/data (from 3.0 GiB to 2.0 GiB, with its ext4, unmounted)") {
		t.Errorf("dry run: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runArgsOn(m, args("pool/data:50%", "--shrink", "--yes", "-o", "json")...)
	var doc prepareResultDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Stacks == nil || len(doc.Stacks.Groups) != 1 {
		t.Fatalf("shrink: exit %d:\n%s%s", code, out, errOut)
	}
	lv := doc.Stacks.Groups[0].Volumes[0]
	if !lv.Shrunk || lv.SizeBytes == 0 || lv.FromBytes <= lv.SizeBytes || len(lv.ShrinkArgv) != 3 || lv.ShrinkArgv[1][0] != "resize2fs" || !lv.Volume.Mounted {
		t.Errorf("result: %+v", lv)
	}
	if !slices.Contains(h.Mounted(), "/pool /dev/dm-0") {
		t.Errorf("/pool is not mounted again: %q", h.Mounted())
	}
	if code, out, errOut := runArgsOn(m, args("pool/data:50%", "--diff")...); code != 0 {
		t.Errorf("diff after the shrink: exit %d, want 0:\n%s%s", code, out, errOut)
	}
	// --shrink is about volumes: alone on one disk it is bad input.
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdd", "--fs", "ext4", "--shrink", "--dry-run"); code != exitUsage || !strings.Contains(errOut, "--shrink shrinks LVM volumes") {
		t.Errorf("--shrink without --lvm: exit %d: %s", code, errOut)
	}
}

// A volume extended without its file system (lvextend without
// --resizefs by hand, or a run that died between the two): the diff
// names the file system as changed, prepare grows it online to fill the
// volume (xfs_growfs on the mount point; resize2fs for ext4) and the next
// diff is empty. A dry run of it does not claim nothing is to change.
func TestPrepareGrowsAFileSystemBehindItsVolume(t *testing.T) {
	for _, c := range []struct{ fs, tool string }{{"xfs", "xfs_growfs /pool"}, {"ext4", "resize2fs /dev/pool/data"}} {
		t.Run(c.fs, func(t *testing.T) {
			m, h := cacheMachine(t)
			args := func(more ...string) []string {
				return append([]string{"prepare", "/dev/sdb", "--fs", c.fs, "--mount", "/pool", "--persist", "--lvm", "pool/data:75%"}, more...)
			}
			if code, _, errOut := runArgsOn(m, append(args("--yes"), "--lvm", "pool/data:50%")...); code != 0 {
				t.Fatalf("prepare: exit %d: %s", code, errOut)
			}
			// The volume taken to 75% of the group, its file system not.
			if out, err := h.Run(context.Background(), "lvextend", "--size", "1606418432b", "pool/data"); err != nil {
				t.Fatalf("lvextend by hand: %v: %s", err, out)
			}
			code, out, errOut := runArgsOn(m, args("--diff")...)
			if s := squash(out); code != exitFailure || !strings.Contains(s, "change filesystem /dev/pool/data") || !strings.Contains(s, "(grown to fill its volume)") {
				t.Errorf("diff: exit %d, want 1 and the file system grown:\n%s%s", code, out, errOut)
			}
			code, out, errOut = runArgsOn(m, args("--dry-run")...)
			_, stacks, _ := strings.Cut(out, "Plan for the storage stacks:")
			if code != 0 || !strings.Contains(stacks, c.tool+" (its "+c.fs) || strings.Contains(stacks, "already prepared as asked") {
				t.Errorf("dry run: exit %d:\n%s%s", code, out, errOut)
			}
			if code, out, errOut := runArgsOn(m, args("--yes")...); code != 0 || !strings.Contains(out, "its file system grown to fill it with "+c.tool) {
				t.Errorf("prepare: exit %d:\n%s%s", code, out, errOut)
			}
			if code, out, errOut := runArgsOn(m, args("--diff")...); code != 0 {
				t.Errorf("diff after: exit %d, want 0:\n%s%s", code, out, errOut)
			}
		})
	}
}
