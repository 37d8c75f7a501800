package disk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
	"golang.org/x/sys/unix"
)

var privPrograms = []string{"mkfs.xfs", "mkfs.ext4", "sgdisk", "blkid", "xfs_repair", "e2fsck", "findmnt"}

// facts reads the machine's facts as prepare does: after udev, where it
// runs (the guest), has finished the events queued so far (SettleUdev).
// Without that a rerun in the guest right after mkfs once read udev's
// database while its change event was being handled, saw its own
// partition differ and refused it as mounted.
func facts(ctx context.Context) (*hwinfo.Host, error) {
	testenv.SettleUdev()
	return hwinfo.Read(ctx, hwinfo.Options{All: true})
}

func mustFacts(t *testing.T) *hwinfo.Host {
	t.Helper()
	h, err := facts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func testDeps(t *testing.T) Deps {
	root := testenv.TempRoot(t)
	return Deps{
		Roots:   hwinfo.Roots{Root: root},
		Logger:  slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Refresh: facts,
	}
}

// newDisk makes a loop device and registers, to run before testenv's
// detach, the removal of the mounts and BLKPG partitions the test made
// (a detached loop device keeps BLKPG partitions otherwise).
func newDisk(t *testing.T, size int64, sector int) *testenv.Loop {
	t.Helper()
	l := testenv.NewLoop(t, size, testenv.LoopOptions{SectorSize: sector})
	t.Cleanup(func() { dropPartitions(t, l.Dev) })
	return l
}

func dropPartitions(t *testing.T, dev string) {
	testenv.UnmountAll(t, dev)
	f, err := os.Open(dev)
	if err != nil {
		return
	}
	defer f.Close()
	parts, _ := kernelPartitions(&LiveHost{}, hwinfo.Roots{}, filepath.Base(dev))
	for _, kp := range parts {
		if err := blkpg(f.Fd(), unix.BLKPG_DEL_PARTITION, int32(kp.number), 0, 0); err != nil {
			t.Errorf("remove partition %s: %v", kp.name, err)
		}
	}
}

// hashFile hashes an image's bytes. Only the allocated extents are read
// (SEEK_DATA/SEEK_HOLE): holes read as zeros, and hashing gigabytes of zeros
// on a shared two-core machine would make every refusal test slow.
func hashFile(t *testing.T, path string) string {
	t.Helper()
	// Settle writeback first, so the extent map is the file's real one and
	// not a snapshot of delayed allocation in progress.
	unix.Sync()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "size %d\n", fi.Size())
	var off int64
	for off < fi.Size() {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil { // ENXIO: only a hole remains
			break
		}
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			t.Fatal(err)
		}
		// Hash non-zero blocks with their offsets: reading through the loop
		// device may allocate zero pages (tmpfs), which is not a change.
		buf := make([]byte, 1<<20)
		for pos := data; pos < hole; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), hole-pos)], pos)
			if err != nil && n == 0 {
				t.Fatal(err)
			}
			for b := 0; b < n; b += 4096 {
				blk := buf[b:min(b+4096, n)]
				if !allZero(blk) {
					fmt.Fprintf(h, "block %d\n", pos+int64(b))
					h.Write(blk)
				}
			}
			pos += int64(n)
		}
		off = hole
	}
	return hex.EncodeToString(h.Sum(nil))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// blkidValue runs blkid -p (low-level probe, no cache) for one tag.
func blkidValue(t *testing.T, dev, tag string) string {
	t.Helper()
	out, _ := testenv.Run("blkid", "-p", "-s", tag, "-o", "value", dev)
	return strings.TrimSpace(out)
}

func TestPrivilegedPrepare(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	cases := []struct {
		fs     string
		sector int
	}{{"xfs", 512}, {"ext4", 512}, {"xfs", 4096}, {"ext4", 4096}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%d", c.fs, c.sector), func(t *testing.T) {
			ctx := context.Background()
			l := newDisk(t, 1<<30, c.sector)
			deps := testDeps(t)
			mnt := filepath.Join(t.TempDir(), "mnt")
			req := Request{Device: l.Dev, Partitions: []PartSpec{{FS: c.fs, Label: "bench", Mount: mnt, MountOpts: "noatime", Persist: true}}}
			planned, err := PlanDisk(req, mustFacts(t))
			if err != nil {
				t.Fatal(err)
			}
			// Apply what --dry-run -o json prints: the JSON is the whole plan.
			js, err := json.Marshal(planned)
			if err != nil {
				t.Fatal(err)
			}
			var plan *Plan
			if err := json.Unmarshal(js, &plan); err != nil {
				t.Fatal(err)
			}
			res, err := Apply(ctx, plan, deps)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Unmount(mnt, 0) })
			pp := plan.Partitions[0]
			pr := res.Partitions[0]
			if !res.Changed || !res.TableWritten || !pr.Formatted || !pr.Mounted || !pr.FstabAdded || pr.UUID != pp.FSUUID {
				t.Fatalf("result %+v", res)
			}
			// Which path registered the partition: the kernel's own parser
			// where it has one (a real host, the QEMU guest), else BLKPG.
			blkpg := strings.Contains(strings.Join(res.Notes, "\n"), "added with BLKPG")
			if parser := testenv.KernelParsesPartitions(t); blkpg == parser {
				t.Errorf("kernel parses partitions: %v, but BLKPG used: %v (notes %q)", parser, blkpg, res.Notes)
			}

			// The table, as sgdisk sees it.
			out := testenv.MustRun(t, "sgdisk", "-v", l.Dev)
			if !strings.Contains(out, "No problems found") {
				t.Errorf("sgdisk -v:\n%s", out)
			}
			out = testenv.MustRun(t, "sgdisk", "-p", l.Dev)
			wantRow := fmt.Sprintf("1 %d %d", pp.StartLBA, pp.EndLBA)
			if !strings.Contains(strings.Join(strings.Fields(out), " "), wantRow) || !strings.Contains(out, "bench") ||
				!strings.Contains(out, fmt.Sprintf("Sector size (logical/physical): %d/", c.sector)) {
				t.Errorf("sgdisk -p lacks %q:\n%s", wantRow, out)
			}
			if pp.StartBytes != 1<<20 {
				t.Errorf("start %d, want 1 MiB", pp.StartBytes)
			}
			// The filesystem, as blkid sees it.
			if got := blkidValue(t, pp.Path, "TYPE"); got != c.fs {
				t.Errorf("blkid TYPE %q", got)
			}
			if got := blkidValue(t, pp.Path, "UUID"); got != pr.UUID {
				t.Errorf("blkid UUID %q, result %q", got, pr.UUID)
			}
			if got := blkidValue(t, pp.Path, "LABEL"); got != "bench" {
				t.Errorf("blkid LABEL %q", got)
			}
			if got := blkidValue(t, l.Dev, "PTTYPE"); got != "gpt" {
				t.Errorf("blkid PTTYPE %q", got)
			}
			// Mounted where asked, with the options.
			out = testenv.MustRun(t, "findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", mnt)
			if f := strings.Fields(out); len(f) < 3 || f[0] != pp.Path || f[1] != c.fs || !strings.Contains(f[2], "noatime") {
				t.Errorf("findmnt: %q", out)
			}
			m, err := ReadMarker(mnt)
			if err != nil || m.FS != c.fs || m.UUID != pr.UUID || m.MkfsVersion == "" || len(m.MkfsArgv) == 0 || m.Device != pp.Path {
				t.Errorf("marker %+v %v", m, err)
			}
			fst, _ := os.ReadFile(filepath.Join(deps.Roots.Root, "etc/fstab"))
			if !strings.Contains(string(fst), "UUID="+pr.UUID+"\t"+mnt+"\t"+c.fs+"\tdefaults,nofail,noatime") {
				t.Errorf("fstab:\n%s", fst)
			}

			// Again: nothing to do.
			again, err := PlanDisk(req, mustFacts(t))
			if err != nil {
				t.Fatal(err)
			}
			if !again.Unchanged {
				t.Fatalf("second plan is not a no-op: %+v", again)
			}
			res2, err := Apply(ctx, again, deps)
			if err != nil || res2.Changed {
				t.Fatalf("second apply: %v %+v", err, res2)
			}
			fst2, _ := os.ReadFile(filepath.Join(deps.Roots.Root, "etc/fstab"))
			if string(fst2) != string(fst) {
				t.Errorf("fstab changed on the second run:\n%s", fst2)
			}

			// The filesystem checks clean once unmounted.
			if err := unix.Unmount(mnt, 0); err != nil {
				t.Fatal(err)
			}
			if c.fs == "xfs" {
				testenv.MustRun(t, "xfs_repair", "-n", pp.Path)
			} else {
				testenv.MustRun(t, "e2fsck", "-fn", pp.Path)
			}
		})
	}
}

func TestPrivilegedWipe(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	ctx := context.Background()
	l := newDisk(t, 768<<20, 0)
	testenv.MustRun(t, "mkfs.ext4", "-q", "-L", "old", l.Dev)
	req := Request{Device: l.Dev, Partitions: []PartSpec{{FS: "xfs", Label: "new", SizeBytes: 512 << 20}, {FS: "ext4", Label: "rest"}}}
	before := hashFile(t, l.Image)
	if _, err := PlanDisk(req, mustFacts(t)); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "ext4") {
		t.Fatalf("without --wipe: %v", err)
	}
	req.Wipe = true
	plan, err := PlanDisk(req, mustFacts(t))
	if err != nil {
		t.Fatal(err)
	}
	if hashFile(t, l.Image) != before {
		t.Fatal("planning wrote to the device")
	}
	res, err := Apply(ctx, plan, testDeps(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Wiped) == 0 || !strings.Contains(res.Wiped[0], "ext4") {
		t.Errorf("wiped %q", res.Wiped)
	}
	if got := blkidValue(t, l.Dev, "TYPE"); got != "" {
		t.Errorf("whole disk still has TYPE %q", got)
	}
	if got := blkidValue(t, l.Dev, "PTTYPE"); got != "gpt" {
		t.Errorf("PTTYPE %q", got)
	}
	for i, fs := range []string{"xfs", "ext4"} {
		if got := blkidValue(t, plan.Partitions[i].Path, "TYPE"); got != fs {
			t.Errorf("partition %d TYPE %q", i+1, got)
		}
	}
	out := testenv.MustRun(t, "sgdisk", "-v", l.Dev)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("sgdisk -v:\n%s", out)
	}
	testenv.MustRun(t, "xfs_repair", "-n", plan.Partitions[0].Path)
	testenv.MustRun(t, "e2fsck", "-fn", plan.Partitions[1].Path)
}

// Every refusal leaves the device's bytes exactly as they were.
func TestPrivilegedRefusals(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	ctx := context.Background()
	xfs := func(dev string, wipe bool) Request {
		return Request{Device: dev, Wipe: wipe, Partitions: []PartSpec{{FS: "ext4", Label: "x"}}}
	}
	type setup func(t *testing.T, l *testenv.Loop) (Request, func() error)
	plainly := func(req Request) func() error { return nil }
	_ = plainly
	cases := []struct {
		name     string
		setup    setup
		evidence string
	}{
		{"signature", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			testenv.MustRun(t, "mkfs.ext4", "-q", l.Dev)
			return xfs(l.Dev, false), nil
		}, "ext4 signature"},
		{"mounted", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			// Inode tables and journal zeroed now, not by the kernel in
			// the background once mounted (ext4lazyinit): those writes
			// are not diskprep's, and a slow machine (a QEMU guest) is
			// still making them while the refusal is checked.
			testenv.MustRun(t, "mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", l.Dev)
			testenv.Mount(t, l.Dev)
			return xfs(l.Dev, true), nil
		}, "is mounted at"},
		{"swap", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			testenv.MustRun(t, "mkswap", l.Dev)
			testenv.MustRun(t, "swapon", l.Dev)
			t.Cleanup(func() { testenv.Run("swapoff", l.Dev) })
			return xfs(l.Dev, true), nil
		}, "swap on loop"},
		{"too small", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			return Request{Device: l.Dev, Partitions: []PartSpec{{FS: "xfs"}}}, nil
		}, "too small"},
		{"partition", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			f, err := os.Open(l.Dev)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := blkpg(f.Fd(), unix.BLKPG_ADD_PARTITION, 1, 1<<20, 32<<20); err != nil {
				t.Fatal(err)
			}
			testenv.SettleUdev()
			if _, err := os.Stat(filepath.Join("/sys/class/block", PartitionName(filepath.Base(l.Dev), 1))); err != nil {
				t.Fatalf("the partition registered with BLKPG is gone: %v", err)
			}
			return xfs(PartitionName(filepath.Base(l.Dev), 1), true), nil
		}, "is a partition of"},
		{"locked", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			return xfs(l.Dev, false), nil
		}, "another diskprep (pid"},
		{"mounted after planning", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			testenv.MustRun(t, "mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", l.Dev) // as "mounted"
			return xfs(l.Dev, true), func() error {
				testenv.Mount(t, l.Dev)
				return nil
			}
		}, "is mounted at"},
		{"changed after planning", func(t *testing.T, l *testenv.Loop) (Request, func() error) {
			return xfs(l.Dev, false), func() error {
				_, err := testenv.Run("sgdisk", "-o", l.Dev)
				return err
			}
		}, "changed since planning"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newDisk(t, 64<<20, 0)
			req, between := c.setup(t, l)
			deps := testDeps(t)
			if c.name == "locked" {
				devnum, err := liveApplier().devNumber(l.Dev)
				if err != nil {
					t.Fatal(err)
				}
				// As another process would: a lock of this process's
				// own is re-entrant.
				dir := filepath.Join(deps.Roots.Root, "run/diskprep/locks")
				os.MkdirAll(dir, 0o755)
				unlock, err := flockFileOnce(filepath.Join(dir, devnum+".lock"), l.Dev)
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
			}
			before := hashFile(t, l.Image)
			plan, err := PlanDisk(req, mustFacts(t))
			if err == nil {
				if between != nil {
					if err := between(); err != nil {
						t.Fatal(err)
					}
					before = hashFile(t, l.Image)
				}
				_, err = Apply(ctx, plan, deps)
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("got %v, want a refusal", err)
			}
			if !strings.Contains(err.Error(), c.evidence) {
				t.Errorf("refusal %q does not name %q", err, c.evidence)
			}
			if after := hashFile(t, l.Image); after != before {
				t.Errorf("device bytes changed by a refused prepare")
			}
		})
	}
}

// A read-only device is refused by planning and, were facts stale, by the
// write itself; its bytes stay the same either way.
func TestPrivilegedReadOnly(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	l := newDisk(t, 400<<20, 0)
	testenv.MustRun(t, "blockdev", "--setro", l.Dev)
	t.Cleanup(func() { testenv.Run("blockdev", "--setrw", l.Dev) })
	before := hashFile(t, l.Image)
	_, err := PlanDisk(Request{Device: l.Dev, Partitions: []PartSpec{{FS: "xfs"}}}, mustFacts(t))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("got %v", err)
	}
	if hashFile(t, l.Image) != before {
		t.Error("device changed")
	}
}

func TestPrivilegedImageAndRelease(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	ctx := context.Background()
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	mnt := filepath.Join(dir, "mnt")
	deps := testDeps(t)
	req := Request{Image: img, ImageSizeBytes: 1 << 30, Partitions: []PartSpec{{FS: "xfs", Label: "img", Mount: mnt, Persist: true}}}
	var attached []string
	t.Cleanup(func() {
		for _, dev := range attached {
			if liveApplier().loopBackingFile(filepath.Base(dev)) == img {
				dropPartitions(t, dev)
				detachLoop(dev)
				t.Errorf("%s left attached", dev)
			}
		}
	})
	prepare := func() *Result {
		t.Helper()
		plan, err := PlanDisk(req, mustFacts(t))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Apply(ctx, plan, deps)
		if res != nil && res.LoopAttached {
			attached = append(attached, res.Device)
		}
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := prepare()
	if !res.LoopAttached || !strings.HasPrefix(res.Device, "/dev/loop") || res.Image != img {
		t.Fatalf("result %+v", res)
	}
	fi, err := os.Stat(img)
	if err != nil || fi.Size() != 1<<30 {
		t.Fatalf("image %v %v", fi, err)
	}
	var st unix.Stat_t
	if unix.Stat(img, &st); st.Blocks*512 > 256<<20 {
		t.Errorf("image not sparse: %d bytes allocated", st.Blocks*512)
	}
	if got := liveApplier().loopBackingFile(filepath.Base(res.Device)); got != img {
		t.Errorf("backing file %q", got)
	}
	out := testenv.MustRun(t, "sgdisk", "-v", res.Device)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("sgdisk -v:\n%s", out)
	}
	if m, err := ReadMarker(mnt); err != nil || m.Image != img {
		t.Errorf("marker %+v %v", m, err)
	}

	// Same again while attached: nothing changes.
	if res2 := prepare(); res2.Changed || res2.Device != res.Device {
		t.Errorf("second run %+v", res2)
	}

	rel, err := Release(ctx, mnt, ReleaseOptions{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(rel.Unmounted) != 1 || len(rel.FstabRemoved) != 1 || rel.Detached != res.Device || rel.Image != img || rel.ImageRemoved {
		t.Errorf("release %+v", rel)
	}
	if out, _ := testenv.Run("findmnt", mnt); strings.TrimSpace(out) != "" {
		t.Errorf("still mounted: %s", out)
	}
	if liveApplier().loopBackingFile(filepath.Base(res.Device)) == img {
		t.Errorf("still attached")
	}
	if fst, _ := os.ReadFile(filepath.Join(deps.Roots.Root, "etc/fstab")); strings.Contains(string(fst), "UUID=") || !strings.Contains(string(fst), "/dev/vda1") {
		t.Errorf("fstab still has the entry:\n%s", fst)
	}

	// The detached image is still prepared: attaching it again is all it takes.
	res3 := prepare()
	if !res3.LoopAttached || res3.TableWritten || res3.Partitions[0].Formatted || !res3.Partitions[0].Mounted {
		t.Errorf("re-attach %+v", res3)
	}
	rel, err = Release(ctx, res3.Device, ReleaseOptions{RemoveImage: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if !rel.ImageRemoved || rel.Detached != res3.Device {
		t.Errorf("release %+v", rel)
	}
	if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image still there: %v", err)
	}
}

// An existing image of another size, or a device node given as --image, is
// refused without touching it.
func TestPrivilegedImageRefusals(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	dir := t.TempDir()
	img := filepath.Join(dir, "x.img")
	if err := os.WriteFile(img, []byte("not empty"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := PlanDisk(Request{Image: img, ImageSizeBytes: 1 << 30, Partitions: []PartSpec{{FS: "xfs"}}}, mustFacts(t))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--wipe") {
		t.Errorf("other size: %v", err)
	}
	l := newDisk(t, 400<<20, 0)
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(l.Dev, link); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{l.Dev: "device node", link: "device node"} {
		_, err = PlanDisk(Request{Image: p, ImageSizeBytes: 400 << 20, Partitions: []PartSpec{{FS: "xfs"}}}, mustFacts(t))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal saying %q", p, err, want)
		}
	}
}

// The exact programs Apply runs, in order, for a two-partition plan.
func TestPrivilegedArgvSequence(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	l := newDisk(t, 1<<30, 0)
	dir := t.TempDir()
	req := Request{Device: l.Dev, Partitions: []PartSpec{
		{FS: "ext4", Label: "a", SizeBytes: 256 << 20, MkfsOpts: []string{"-E", "lazy_itable_init=1"}, Mount: dir + "/a", MountOpts: "noatime"},
		{FS: "xfs", Label: "b", Mount: dir + "/b"},
	}}
	plan, err := PlanDisk(req, mustFacts(t))
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := plan.Partitions[0], plan.Partitions[1]
	r := &scriptedRunner{t: t, calls: []scriptedCall{
		{argv: []string{"mkfs.ext4", "-V"}, pass: true},
		{argv: []string{"mkfs.xfs", "-V"}, pass: true},
		{argv: []string{"mkfs.ext4", "-L", "a", "-U", p1.FSUUID, "-E", "lazy_itable_init=1", p1.Path}, pass: true},
		{argv: []string{"mount", "-t", "ext4", "-o", "noatime", p1.Path, dir + "/a"}, pass: true},
		{argv: []string{"mkfs.xfs", "-L", "b", "-m", "uuid=" + p2.FSUUID, p2.Path}, pass: true},
		{argv: []string{"mount", "-t", "xfs", p2.Path, dir + "/b"}, pass: true},
	}}
	deps := testDeps(t)
	deps.Runner = r
	res, err := Apply(context.Background(), plan, deps)
	t.Cleanup(func() { unix.Unmount(dir+"/a", 0); unix.Unmount(dir+"/b", 0) })
	if err != nil {
		t.Fatal(err)
	}
	r.done()
	if !strings.HasPrefix(res.Partitions[0].MkfsVersion, "mke2fs ") || !strings.HasPrefix(res.Partitions[1].MkfsVersion, "mkfs.xfs version") {
		t.Errorf("versions %q %q", res.Partitions[0].MkfsVersion, res.Partitions[1].MkfsVersion)
	}
}

// Prepared once, then asked differently with --wipe: the old GPT (both
// headers, the PMBR) and the old filesystem go, the new layout is clean.
func TestPrivilegedWipeOverPrepared(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	ctx := context.Background()
	l := newDisk(t, 512<<20, 0)
	deps := testDeps(t)
	first, err := PlanDisk(Request{Device: l.Dev, Partitions: []PartSpec{{FS: "xfs", Label: "old"}}}, mustFacts(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, first, deps); err != nil {
		t.Fatal(err)
	}
	req := Request{Device: l.Dev, Partitions: []PartSpec{{FS: "ext4", Label: "a", SizeBytes: 100 << 20}, {FS: "ext4", Label: "b"}}}
	before := hashFile(t, l.Image)
	if _, err := PlanDisk(req, mustFacts(t)); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--wipe") {
		t.Fatalf("without --wipe: %v", err)
	}
	if hashFile(t, l.Image) != before {
		t.Fatal("refused plan changed the device")
	}
	req.Wipe = true
	plan, err := PlanDisk(req, mustFacts(t))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply(ctx, plan, deps)
	if err != nil {
		t.Fatal(err)
	}
	wiped := strings.Join(res.Wiped, ",")
	for _, want := range []string{"gpt", "PMBR", "xfs"} {
		if !strings.Contains(wiped, want) {
			t.Errorf("wiped %q lacks %s", wiped, want)
		}
	}
	out := testenv.MustRun(t, "sgdisk", "-v", l.Dev)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("sgdisk -v:\n%s", out)
	}
	out = testenv.MustRun(t, "sgdisk", "-p", l.Dev)
	if !strings.Contains(out, strings.ToUpper(plan.Table.DiskGUID)) || strings.Count(out, "8300") != 2 {
		t.Errorf("sgdisk -p:\n%s", out)
	}
	for _, pp := range plan.Partitions {
		if got := blkidValue(t, pp.Path, "TYPE"); got != "ext4" {
			t.Errorf("%s TYPE %q", pp.Path, got)
		}
		testenv.MustRun(t, "e2fsck", "-fn", pp.Path)
	}
}

// Beyond 2 TiB of 512-byte sectors the protective MBR's sector count
// saturates at 0xFFFFFFFF (go-diskfs alone would truncate it). Only the
// table is written: a sparse 3 TiB loop device costs nothing.
func TestPrivilegedLargeDiskPMBR(t *testing.T) {
	testenv.RequirePrivileged(t, "sgdisk")
	l := newDisk(t, 3<<40, 0)
	pl := fixedUUIDs(t)
	plan, err := pl.PlanDisk(Request{Device: l.Dev, Partitions: []PartSpec{{FS: "xfs"}}}, mustFacts(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.Dev, os.O_RDWR|os.O_EXCL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := writeGPT(liveDevice{f}, plan); err != nil {
		t.Fatal(err)
	}
	if err := verifyGPT(liveDevice{f}, plan); err != nil {
		t.Fatal(err)
	}
	mbr := make([]byte, 512)
	if _, err := f.ReadAt(mbr, 0); err != nil {
		t.Fatal(err)
	}
	if got := mbr[446+12 : 446+16]; string(got) != "\xff\xff\xff\xff" || mbr[446+4] != 0xee || mbr[510] != 0x55 || mbr[511] != 0xaa {
		t.Errorf("protective MBR entry % x", mbr[446:462])
	}
	out := testenv.MustRun(t, "sgdisk", "-v", l.Dev)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("sgdisk -v:\n%s", out)
	}
}

// A mount point already in use, or claimed by another fstab line, is refused
// before the table is written.
func TestPrivilegedPreflightRefusals(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	ctx := context.Background()
	for _, name := range []string{"mount point taken", "fstab conflict"} {
		t.Run(name, func(t *testing.T) {
			l := newDisk(t, 64<<20, 0)
			deps := testDeps(t)
			mnt := t.TempDir()
			req := Request{Device: l.Dev, Partitions: []PartSpec{{FS: "ext4", Mount: mnt, Persist: true}}}
			want := "already a mount point"
			// Taken after planning, which refuses it too (TestPlanMountPoint).
			plan, err := PlanDisk(req, mustFacts(t))
			if err != nil {
				t.Fatal(err)
			}
			if name == "mount point taken" {
				testenv.MustRun(t, "mount", "-t", "tmpfs", "none", mnt)
				t.Cleanup(func() { unix.Unmount(mnt, 0) })
			} else {
				want = "already says"
				line := "LABEL=other " + mnt + " xfs defaults 0 0\n"
				if err := os.WriteFile(filepath.Join(deps.Roots.Root, "etc/fstab"), []byte(line), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := hashFile(t, l.Image)
			_, err = Apply(ctx, plan, deps)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want a refusal naming %q", err, want)
			}
			if hashFile(t, l.Image) != before {
				t.Error("device bytes changed")
			}
		})
	}
}

// Releasing a whole disk unmounts every partition and drops diskprep's
// fstab lines, leaves other lines, and does not detach a loop device
// diskprep did not attach.
func TestPrivilegedReleaseDisk(t *testing.T) {
	testenv.RequirePrivileged(t, privPrograms...)
	ctx := context.Background()
	l := newDisk(t, 256<<20, 0)
	deps := testDeps(t)
	dir := t.TempDir()
	req := Request{Device: l.Dev, Partitions: []PartSpec{
		{FS: "ext4", SizeBytes: 64 << 20, Mount: dir + "/a", Persist: true},
		{FS: "ext4", Mount: dir + "/a/b", Persist: true}, // nested: unmounted first
	}}
	plan, err := PlanDisk(req, mustFacts(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, plan, deps); err != nil {
		t.Fatal(err)
	}
	rel, err := Release(ctx, l.Dev, ReleaseOptions{RemoveImage: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(rel.Unmounted) != 2 || rel.Unmounted[0] != dir+"/a/b" || len(rel.FstabRemoved) != 2 || rel.Detached != "" || rel.ImageRemoved {
		t.Errorf("release %+v", rel)
	}
	if !strings.Contains(strings.Join(rel.Notes, " "), "not attached by diskprep") {
		t.Errorf("notes %q", rel.Notes)
	}
	if fst, _ := os.ReadFile(filepath.Join(deps.Roots.Root, "etc/fstab")); string(fst) != "/dev/vda1\t/\txfs\tdefaults\t0 0\n" {
		t.Errorf("fstab:\n%s", fst)
	}
	if liveApplier().loopBackingFile(filepath.Base(l.Dev)) != l.Image {
		t.Error("a loop device diskprep did not attach was detached")
	}
	// Nothing left to do: still fine.
	if rel, err = Release(ctx, l.Dev, ReleaseOptions{}, deps); err != nil || len(rel.Unmounted) != 0 {
		t.Errorf("second release %+v %v", rel, err)
	}
}

// Both ways of attaching an image: LOOP_CONFIGURE, and LOOP_SET_FD +
// LOOP_SET_STATUS64 (+ LOOP_SET_BLOCK_SIZE) as on kernels before 5.8.
func TestPrivilegedAttachLoop(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, configure := range []bool{true, false} {
		for _, sector := range []uint64{512, 4096} {
			t.Run(fmt.Sprintf("configure=%v/%d", configure, sector), func(t *testing.T) {
				img := filepath.Join(t.TempDir(), "x.img")
				if err := os.WriteFile(img, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(img, 64<<20); err != nil {
					t.Fatal(err)
				}
				dev, err := attachLoop("/dev", img, sector, configure)
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Base(dev)
				defer func() {
					if err := detachLoop(dev); err != nil {
						t.Error(err)
					}
					if liveApplier().loopBackingFile(name) == img {
						t.Errorf("%s still attached", dev)
					}
				}()
				if got := liveApplier().loopBackingFile(name); got != img {
					t.Errorf("backing file %q", got)
				}
				read := func(f string) string {
					b, _ := os.ReadFile(filepath.Join("/sys/block", name, f))
					return strings.TrimSpace(string(b))
				}
				if read("queue/logical_block_size") != fmt.Sprint(sector) || read("loop/partscan") != "1" || read("loop/autoclear") != "0" {
					t.Errorf("sector %s partscan %s autoclear %s", read("queue/logical_block_size"), read("loop/partscan"), read("loop/autoclear"))
				}
			})
		}
	}
}
