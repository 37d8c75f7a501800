package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

func TestFSCompareBadInput(t *testing.T) {
	two := []string{"xfs", "ext4"}
	cases := []struct {
		name string
		opts fscompareOptions
		want string
	}{
		{"nothing", fscompareOptions{FS: two, Repeat: 1}, "needs a DEVICE"},
		{"both", fscompareOptions{Device: "/dev/sdx", Image: "/x.img", FS: two, Repeat: 1}, "not both"},
		{"size without image", fscompareOptions{Device: "/dev/sdx", Size: "1G", FS: two, Repeat: 1}, "--size is for --image"},
		{"btrfs", fscompareOptions{Device: "/dev/sdx", FS: []string{"xfs", "btrfs"}, Repeat: 1}, "btrfs"},
		{"one", fscompareOptions{Device: "/dev/sdx", FS: []string{"ext4"}, Repeat: 1}, "--fs ext4: fscompare compares two filesystems"},
		{"twice", fscompareOptions{Device: "/dev/sdx", FS: []string{"xfs", "xfs"}, Repeat: 1}, "twice"},
		{"repeat 0", fscompareOptions{Device: "/dev/sdx", FS: two, Repeat: 0}, "--repeat"},
		{"unknown set", fscompareOptions{Device: "/dev/sdx", FS: two, Repeat: 1, Set: "nosuch"}, "nosuch"},
		{"bad runtime", fscompareOptions{Device: "/dev/sdx", FS: two, Repeat: 1, Runtime: "soon"}, "--runtime"},
		{"unknown order", fscompareOptions{Device: "/dev/sdx", FS: two, Repeat: 1, Order: "random"}, `--order "random": interleaved or blocked`},
		{"interleaved auto", fscompareOptions{Device: "/dev/sdx", FS: two, Repeat: 9, RepeatAuto: true, Order: "interleaved"}, "--repeat auto stops each filesystem's runs on its own"},
		{"one encryption", fscompareOptions{Device: "/dev/sdx", FS: []string{"xfs"}, Encrypt: []string{"luks2"}, Repeat: 1}, "--encrypt luks2: give two to compare: --encrypt none,luks2"},
		{"unknown encryption", fscompareOptions{Device: "/dev/sdx", FS: []string{"xfs"}, Encrypt: []string{"none", "luks1"}, Repeat: 1}, `--encrypt "luks1": none, luks2, luks2-512 or luks2-4096`},
		{"encryption twice", fscompareOptions{Device: "/dev/sdx", FS: []string{"xfs"}, Encrypt: []string{"luks2", "luks2"}, Repeat: 1}, "--encrypt lists luks2 twice"},
		{"encrypted image", fscompareOptions{Image: "/x.img", Size: "1G", FS: []string{"xfs"}, Encrypt: []string{"none", "luks2"}, Repeat: 1}, "--encrypt takes a DEVICE, not --image"},
		{"key file alone", fscompareOptions{Device: "/dev/sdx", FS: two, KeyFile: "/k", Repeat: 1}, "--key-file goes with --encrypt"},
		{"relative key file", fscompareOptions{Device: "/dev/sdx", FS: []string{"xfs"}, Encrypt: []string{"none", "luks2"}, KeyFile: "k", Repeat: 1}, `--key-file: key file "k": give a clean absolute path`},
	}
	for _, c := range cases {
		e, _, _ := resultsEnv(t, "")
		err := runFSCompare(context.Background(), c.opts, liveMachine(), e)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (exit %d), want usage error naming %q", c.name, err, exitCode(err), c.want)
		}
	}
	code, out, _ := runDiskprep(t, "", "fscompare", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--keep") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}

// --encrypt crosses each filesystem with each encryption, in the order
// given: the plain one keeps the filesystem's name, an encrypted one adds
// its own, with the sector it asks for (0: diskprep's choice).
func TestFSCompareEncryptColumns(t *testing.T) {
	o := fscompareOptions{FS: []string{"xfs", "ext4"}, Encrypt: []string{"none", "luks2", "luks2-512"}}
	var got []string
	for _, c := range o.columns() {
		got = append(got, fmt.Sprintf("%s=%s/%s/%d", c.Name, c.FS, c.Encrypt, c.SectorBytes))
	}
	want := "xfs=xfs//0 xfs+luks2=xfs/luks2/0 xfs+luks2-512=xfs/luks2/512 ext4=ext4//0 ext4+luks2=ext4/luks2/0 ext4+luks2-512=ext4/luks2/512"
	if strings.Join(got, " ") != want {
		t.Errorf("columns %s\nwant    %s", strings.Join(got, " "), want)
	}
	if o := (fscompareOptions{FS: []string{"xfs"}, Encrypt: []string{"none", "luks2"}, Repeat: 5}); o.order() != record.OrderInterleaved {
		t.Errorf("one filesystem, two encryptions: order %s, want interleaved", o.order())
	}
	// The encrypted column's request: one partition for LUKS2, the
	// filesystem on its mapping with the run's key and the sector asked.
	req := disk.Request{Device: "/dev/sdb", Wipe: true, Partitions: []disk.PartSpec{{FS: "xfs", Label: "fscmp-xfs", Mount: "/mnt/x", MountOpts: "noatime"}}}
	st := encryptedColumn(&req, fsColumn{Name: "xfs+luks2-512", FS: "xfs", Encrypt: "luks2", SectorBytes: 512}, "/run/diskprep/fscompare/x.key")
	if len(req.Partitions) != 1 || req.Partitions[0].Use != "crypt:sdb" || req.Partitions[0].FS != "" ||
		len(st.Encrypted) != 1 || st.Encrypted[0].Key != "sdb" || !st.Wipe {
		t.Fatalf("request %+v, stacks %+v", req, st)
	}
	v := st.Encrypted[0].Volume
	if v.FS != "xfs" || v.Mount != "/mnt/x" || v.MountOpts != "noatime" || v.Persist || v.Encrypt == nil ||
		*v.Encrypt != (crypt.Spec{KeyFile: "/run/diskprep/fscompare/x.key", SectorBytes: 512}) {
		t.Errorf("volume %+v (encrypt %+v)", v, v.Encrypt)
	}
	if err := st.Validate([]disk.Request{req}); err != nil {
		t.Errorf("the stack request is refused: %v", err)
	}
}

// Interleaved unless asked otherwise, or unless there are no rounds to
// take in turn: one filesystem, or --repeat auto stopping each on its own.
func TestFSCompareOrder(t *testing.T) {
	two := []string{"xfs", "ext4"}
	for _, c := range []struct {
		o    fscompareOptions
		want string
	}{
		{fscompareOptions{FS: two, Repeat: 5}, record.OrderInterleaved},
		{fscompareOptions{FS: two, Repeat: 5, Order: "blocked"}, record.OrderBlocked},
		{fscompareOptions{FS: two, Repeat: 1, Order: "interleaved"}, record.OrderInterleaved},
		{fscompareOptions{FS: []string{"ext4"}, Repeat: 5}, record.OrderBlocked},
		{fscompareOptions{FS: two, Repeat: 9, RepeatAuto: true}, record.OrderBlocked},
		{fscompareOptions{FS: two, Repeat: 9, RepeatAuto: true, Order: "blocked"}, record.OrderBlocked},
	} {
		if got := c.o.order(); got != c.want {
			t.Errorf("%+v: order %s, want %s", c.o, got, c.want)
		}
	}
}

// The real thing on an image: each filesystem made (blkid, while mounted)
// again each round, in turns (xfs ext4, then ext4 xfs), benchmarked and
// recorded, one record a filesystem whose runs took those turns, and at
// the end nothing left attached, mounted or in fstab.
func TestPrivilegedFSCompareImage(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "blkid", "findmnt", "losetup", "mount", "umount")
	dir := t.TempDir()
	img := filepath.Join(dir, "fscompare.img")
	mnt := filepath.Join(dir, "mnt")
	fstabBefore, _ := os.ReadFile("/etc/fstab")

	var seen []string // filesystem types blkid found on the mounted device
	m := liveMachine()
	orig := m.applyRelease
	m.applyRelease = func(ctx context.Context, p *disk.ReleasePlan, deps disk.Deps) (*disk.ReleaseResult, error) {
		if src, err := testenv.Run("findmnt", "-n", "-o", "SOURCE", mnt); err == nil {
			typ, _ := testenv.Run("blkid", "-p", "-o", "value", "-s", "TYPE", strings.TrimSpace(src))
			seen = append(seen, strings.TrimSpace(typ))
		}
		return orig(ctx, p, deps)
	}
	t.Cleanup(func() {
		// Whatever happened, leave no loop device behind.
		if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
			testenv.UnmountAll(t, strings.TrimSpace(out))
			testenv.Run("losetup", "-d", strings.TrimSpace(out))
		}
	})

	e, out, errb := resultsEnv(t, "markdown")
	err := runFSCompare(context.Background(), fscompareOptions{
		Image: img, Size: "640M", FS: []string{"xfs", "ext4"}, Set: "quick", Runtime: "500ms", Repeat: 2,
		Mount: mnt, Yes: true,
	}, m, e)
	if err != nil {
		t.Fatalf("fscompare: %v\n%s", err, errb)
	}
	if !slices.Equal(seen, []string{"xfs", "ext4", "ext4", "xfs"}) {
		t.Errorf("blkid saw %q on the mounted filesystems, want [xfs ext4 ext4 xfs]", seen)
	}
	entries, _, err := record.List(e.ResultsDir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("%d records (%v), want 2", len(entries), err)
	}
	for i, fs := range []string{"xfs", "ext4"} {
		r := entries[i].Record
		if r.Label != fs || r.Target.FSType != fs || r.Target.Prepared == nil || !strings.HasPrefix(r.Target.Prepared.MkfsArgv[0], "mkfs."+fs) {
			t.Errorf("record %d: label %q fs %q prepared %+v", i, r.Label, r.Target.FSType, r.Target.Prepared)
		}
		// Every record, the first too, names the disk it ran on: the
		// partition made by this round is in the facts it was taken with.
		if !strings.HasPrefix(r.Target.Disk, "loop") || r.Target.Transport != "loop" || r.Target.SizeBytes != 640<<20 {
			t.Errorf("record %d (%s): disk %q transport %q size %d, want the loop device of the 640 MiB image", i, fs, r.Target.Disk, r.Target.Transport, r.Target.SizeBytes)
		}
		if r.Order != record.OrderInterleaved || r.Repeat != 2 {
			t.Errorf("record %d (%s): order %q, %d repetitions, want interleaved, 2", i, fs, r.Order, r.Repeat)
		}
	}
	// Each workload's runs took turns: xfs, ext4 in round 1, ext4, xfs in
	// round 2, by the start time each run keeps.
	xfs, ext4 := entries[0].Record, entries[1].Record
	for w := range xfs.Workloads {
		xr, er := xfs.Workloads[w].Runs, ext4.Workloads[w].Runs
		if len(xr) != 2 || len(er) != 2 {
			t.Fatalf("%s: %d xfs and %d ext4 runs, want 2 each", xfs.Workloads[w].Params.Name, len(xr), len(er))
		}
		if starts := []time.Time{xr[0].Start, er[0].Start, er[1].Start, xr[1].Start}; !slices.IsSortedFunc(starts, time.Time.Compare) {
			t.Errorf("%s: runs started at %v (xfs 1, ext4 1, ext4 2, xfs 2), want that order", xfs.Workloads[w].Params.Name, starts)
		}
	}
	for _, want := range []string{"## xfs vs ext4", "ext4 vs xfs", "mkfs.xfs", "mkfs.ext4", "seq1m-read"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// Released: no loop device on the image, nothing mounted, fstab as before.
	if o, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(o) != "" {
		t.Errorf("image still attached to %s", o)
	}
	if o, err := testenv.Run("findmnt", "-n", mnt); err == nil {
		t.Errorf("still mounted: %s", o)
	}
	if after, _ := os.ReadFile("/etc/fstab"); string(after) != string(fstabBefore) {
		t.Error("/etc/fstab changed")
	}
}

// Ctrl-C during the benchmark releases what was prepared, and the error is
// an interruption (exit 130). The machine is faked: nothing is written.
func TestFSCompareInterruptReleases(t *testing.T) {
	root, m := useTempRoot(t) // the image's lock and the run's record
	m.readFacts = func(context.Context, string, *env) (*hwinfo.Host, error) { return &hwinfo.Host{Hostname: "fake"}, nil }
	m.geteuid = func() int { return 0 }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var applied []string
	m.apply = func(_ context.Context, p *disk.Plan, _ disk.Deps) (*disk.Result, error) {
		applied = append(applied, p.Partitions[0].FS)
		if recs, _ := filepath.Glob(filepath.Join(root, "run/diskprep/fscompare/image-*.json")); len(recs) != 1 {
			t.Errorf("run records while preparing: %v, want this run's", recs)
		}
		cancel() // the user presses Ctrl-C once the disk is ready
		return &disk.Result{Device: "/dev/loop9", Partitions: []disk.PartResult{{Device: "/dev/loop9p1", FS: p.Partitions[0].FS}}}, nil
	}
	var released []string
	m.planRelease = func(_ context.Context, target string, _ disk.ReleaseOptions, _ disk.Deps) (*disk.ReleasePlan, error) {
		return &disk.ReleasePlan{Schema: disk.ReleasePlanSchema, Target: target}, nil
	}
	m.applyRelease = func(ctx context.Context, p *disk.ReleasePlan, _ disk.Deps) (*disk.ReleaseResult, error) {
		if ctx.Err() != nil {
			t.Error("release ran with a cancelled context")
		}
		released = append(released, p.Target)
		return &disk.ReleaseResult{Target: p.Target}, nil
	}
	e, out, _ := resultsEnv(t, "")
	img := filepath.Join(t.TempDir(), "x.img")
	err := runFSCompare(ctx, fscompareOptions{Image: img, Size: "1G", FS: []string{"xfs", "ext4"}, Repeat: 1, Mount: t.TempDir(), Yes: true}, m, e)
	if !errors.Is(err, context.Canceled) || exitCode(err) != exitInterrupted {
		t.Errorf("err %v (exit %d), want an interruption", err, exitCode(err))
	}
	if !slices.Equal(applied, []string{"xfs"}) || !slices.Equal(released, []string{img}) {
		t.Errorf("applied %v released %v, want [xfs] and [%s]", applied, released, img)
	}
	if out.Len() != 0 {
		t.Errorf("a comparison was printed after an interruption:\n%s", out)
	}
	if entries, _, _ := record.List(e.ResultsDir); len(entries) != 0 {
		t.Errorf("%d records saved from an interrupted run", len(entries))
	}
	// Cleaned up: the run's record, kept only for a rerun after a kill, is gone.
	if left, _ := filepath.Glob(filepath.Join(root, "run/diskprep/fscompare/*")); len(left) != 0 {
		t.Errorf("run records left: %v", left)
	}
}

// The last line of an interrupted fscompare says what it cleaned up and
// what it kept: the release, the image it made, a prepare cut short and
// what that left on the disk, the records saved before.
func TestFSCompareInterruptedDetail(t *testing.T) {
	xfs := &record.Record{ID: "20261130T000000Z-aaaa", Label: "xfs"}
	ext4 := &record.Record{ID: "20261130T000100Z-bbbb", Label: "ext4"}
	formatted := &disk.Result{Device: "/dev/loop3", TableWritten: true, Partitions: []disk.PartResult{{Device: "/dev/loop3p1", FS: "ext4", Formatted: true}}}
	for _, c := range []struct {
		name string
		left fscompareLeft
		want string
	}{
		{"bench of the first", fscompareLeft{target: "/dev/loop3", released: true},
			"; released /dev/loop3"},
		{"bench of the second", fscompareLeft{target: "/dev/loop3", released: true, saved: []*record.Record{xfs}},
			"; released /dev/loop3; the xfs record is saved (id 20261130T000000Z-aaaa)"},
		{"image made", fscompareLeft{target: "/var/tmp/fc.img", released: true, removedImage: true},
			"; released /var/tmp/fc.img, removed the image this run made"},
		{"interleaved, round 2 of 5", fscompareLeft{target: "/dev/loop3", released: true, round: 2, rounds: 5},
			"; released /dev/loop3; in round 2 of 5, no record saved"},
		{"interleaved, the last round", fscompareLeft{target: "/dev/loop3", released: true, round: 5, rounds: 5, saved: []*record.Record{xfs}},
			"; released /dev/loop3; the xfs record is saved (id 20261130T000000Z-aaaa)"},
		{"interleaved, preparing", fscompareLeft{target: "/dev/loop3", preparing: "ext4", round: 3, rounds: 5},
			" while preparing ext4 on /dev/loop3: nothing was written to it, nothing is mounted; in round 3 of 5, no record saved"},
		{"between rounds", fscompareLeft{target: "/dev/loop3", saved: []*record.Record{xfs}},
			"; the xfs record is saved (id 20261130T000000Z-aaaa)"},
		{"after the last round", fscompareLeft{target: "/dev/loop3", saved: []*record.Record{xfs, ext4}},
			"; the xfs and ext4 records are saved (ids 20261130T000000Z-aaaa, 20261130T000100Z-bbbb)"},
		{"release failed", fscompareLeft{target: "/dev/loop3", stillMounted: "/tmp/diskprep-fscompare-1"},
			"; /tmp/diskprep-fscompare-1 is still mounted: diskprep release /dev/loop3 releases it"},
		{"prepare, nothing written", fscompareLeft{target: "/dev/loop3", preparing: "xfs"},
			" while preparing xfs on /dev/loop3: nothing was written to it, nothing is mounted"},
		{"prepare, table", fscompareLeft{target: "/dev/loop3", preparing: "ext4", prepared: &disk.Result{Device: "/dev/loop3", TableWritten: true}, saved: []*record.Record{xfs}},
			" while preparing ext4 on /dev/loop3: only its partition table is written, nothing is mounted; the xfs record is saved (id 20261130T000000Z-aaaa)"},
		{"prepare, mkfs", fscompareLeft{target: "/dev/loop3", preparing: "ext4", prepared: formatted},
			" while preparing ext4 on /dev/loop3: ext4 is made on /dev/loop3p1, nothing is mounted"},
		{"prepare, image made", fscompareLeft{target: "/var/tmp/fc.img", preparing: "xfs", removedImage: true,
			prepared: &disk.Result{Device: "/dev/loop3", LoopAttached: true, TableWritten: true}},
			" while preparing xfs on /var/tmp/fc.img: nothing is mounted, its loop device /dev/loop3 is detached, removed the image this run made"},
		{"prepare, detach failed", fscompareLeft{target: "/var/tmp/fc.img", preparing: "xfs", stillAttached: "/dev/loop3",
			prepared: &disk.Result{Device: "/dev/loop3", LoopAttached: true, TableWritten: true}},
			" while preparing xfs on /var/tmp/fc.img: only its partition table is written, nothing is mounted, it is still attached to /dev/loop3: diskprep release /var/tmp/fc.img detaches it"},
		{"release failed, image", fscompareLeft{target: "/var/tmp/fc.img", stillMounted: "/tmp/diskprep-fscompare-1", stillAttached: "/dev/loop3"},
			"; /tmp/diskprep-fscompare-1 is still mounted: diskprep release /var/tmp/fc.img releases it; it is still attached to /dev/loop3: diskprep release /var/tmp/fc.img detaches it"},
		{"prepare, image kept", fscompareLeft{target: "/var/tmp/fc.img", preparing: "xfs",
			prepared: &disk.Result{Device: "/dev/loop3", LoopAttached: true, Wiped: []string{"xfs"}}},
			" while preparing xfs on /var/tmp/fc.img: its signatures are wiped, nothing is mounted, its loop device /dev/loop3 is detached"},
	} {
		if got := c.left.detail(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// A column this kernel cannot build (no device-mapper, no dm-crypt: this
// machine's CI kernel) is refused before the first column is prepared or
// measured: the disk's bytes unchanged, no record made. On a kernel with
// dm-crypt (the guest tier) there is nothing to refuse.
func TestPrivilegedFSCompareRefusesAColumnFirst(t *testing.T) {
	testenv.RequirePrivileged(t, "modprobe")
	if _, err := testenv.Run("modprobe", "--dry-run", "--quiet", "dm-crypt"); err == nil {
		t.Log("this kernel has dm-crypt: no column to refuse")
		return
	}
	lo := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
	before := fileSum(t, lo.Image)
	results := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runCLI(t, "fscompare", lo.Dev, "--encrypt", "none,luks2", "--runtime", "1s", "--repeat", "1", "--yes", "--results", results)
	if code != exitRefused || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "prepare xfs+luks2: ") || !strings.Contains(stderr, "the dm-crypt target") {
		t.Errorf("exit %d %q, want xfs+luks2 refused in one line before anything ran", code, stderr)
	}
	if fileSum(t, lo.Image) != before {
		t.Error("the refused run wrote to the disk")
	}
	if entries, _, _ := record.List(results); len(entries) != 0 {
		t.Errorf("%d records saved", len(entries))
	}
}
