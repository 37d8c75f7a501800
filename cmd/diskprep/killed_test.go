package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/mountinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// Issue 19 item 4: fscompare killed outright (SIGKILL: no cleanup at all)
// or ended by a signal, on a disk and on an image, run as the built
// binary with a TMPDIR of the test's own. After a kill the same command
// converges: it releases what the killed run left and completes, and
// leaves nothing mounted, attached or in TMPDIR. After a signal the last
// line says what was cleaned up and what was kept.

// killedDiskSize holds xfs (mkfs.xfs wants 300 MiB) and the quick set's
// 256 MiB test file; sparse, so cheap.
const killedDiskSize = 400 << 20

// startIn starts the built command with TMPDIR=tmp; two minutes is the
// hang guard, and a test that fails before waiting kills it first, before
// the loop devices' cleanup.
func startIn(t *testing.T, bin, tmp string, args ...string) *faultProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	p := &faultProc{cmd: exec.CommandContext(ctx, bin, args...), stdout: &faultBuffer{}, stderr: &faultBuffer{}}
	p.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// mountsFrom lists the mount points of dev and its partitions.
func mountsFrom(t *testing.T, dev string) []string {
	t.Helper()
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, e := range entries {
		if e.Source == dev || strings.HasPrefix(e.Source, dev+"p") {
			points = append(points, e.Point)
		}
	}
	return points
}

// fscompareMount is the directory an fscompare run with TMPDIR=tmp
// mounts at, once something is mounted there; "" before.
func fscompareMount(t *testing.T, tmp string) string {
	t.Helper()
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Point, filepath.Join(tmp, "diskprep-fscompare-")) {
			return e.Point
		}
	}
	return ""
}

// fscompareTestFile reports whether an fscompare run with TMPDIR=tmp has
// laid out its test file: it is measuring.
func fscompareTestFile(tmp string) bool {
	dirs, _ := filepath.Glob(filepath.Join(tmp, "diskprep-fscompare-*"))
	return slices.ContainsFunc(dirs, func(d string) bool { return faultLaidOut(d, 16<<20)() })
}

// deviceRunRecord is where fscompare keeps its record of a run on dev.
func deviceRunRecord(t *testing.T, dev string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	return fscompareRunPath(hwinfo.Roots{}.DeviceLockPath(fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))))
}

// attachedTo lists the loop devices backed by img.
func attachedTo(img string) []string {
	out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img)
	return strings.Fields(out)
}

// detachImage is the cleanup of a test's image, whatever a run left.
func detachImage(t *testing.T, img string) {
	t.Cleanup(func() {
		for _, dev := range attachedTo(img) {
			testenv.UnmountAll(t, dev)
			testenv.Run("losetup", "-d", dev)
		}
	})
}

// storeLabels lists the labels of the records in store, in id order.
func storeLabels(t *testing.T, store string) (labels, ids []string) {
	t.Helper()
	entries, warnings, err := record.List(store)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("store %s: %v %v", store, warnings, err)
	}
	for _, e := range entries {
		labels, ids = append(labels, e.Record.Label), append(ids, e.Record.ID)
	}
	return labels, ids
}

// checkLeftNothing fails t when anything of an fscompare is left: a mount
// of dev (a disk) or of the image's loop device, a loop device on img, a
// directory in tmp, the run's record.
func checkLeftNothing(t *testing.T, dev, img, tmp, runRecord string) {
	t.Helper()
	if dev != "" {
		if points := mountsFrom(t, dev); len(points) != 0 {
			t.Errorf("%s still mounted at %v", dev, points)
		}
	}
	if img != "" {
		if devs := attachedTo(img); len(devs) != 0 {
			t.Errorf("%s still attached to %v", img, devs)
		}
		if _, err := os.Lstat(img); !os.IsNotExist(err) {
			t.Errorf("image left: %v", err)
		}
	}
	if left := entries(t, tmp); len(left) != 0 {
		t.Errorf("TMPDIR holds %v", left)
	}
	if _, err := os.Lstat(runRecord); !os.IsNotExist(err) {
		t.Errorf("run record %s left: %v", runRecord, err)
	}
}

// rerunConverges runs args again after a kill and checks that it released
// what the killed run left, saying so first in the exact line want, then
// only its progress; and that it completed.
func rerunConverges(t *testing.T, bin, tmp, want string, args ...string) {
	t.Helper()
	p := startIn(t, bin, tmp, args...)
	code, stderr := p.wait(t), p.stderr.String()
	if code != 0 {
		t.Fatalf("the same command after SIGKILL: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "fscompare: ") {
			t.Errorf("stderr line %q is not progress", l)
		}
	}
}

// TestPrivilegedFSCompareDeviceKilled: fscompare DEVICE killed with
// SIGKILL once the xfs is mounted, once it measures, and once the ext4
// after it measures (the xfs record saved); and, in two interleaved
// rounds, once the ext4 made again first in round 2 measures (no record
// saved yet): the same command run again releases the killed run's mount,
// says so in one line, completes with both records, and leaves nothing
// mounted, no directory in TMPDIR and no record of the run.
func TestPrivilegedFSCompareDeviceKilled(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "sgdisk", "findmnt")
	bin := faultBuild(t)
	loop := testenv.NewLoop(t, killedDiskSize, testenv.LoopOptions{})
	runRecord := deviceRunRecord(t, loop.Dev)
	for _, c := range []struct {
		name   string
		at     func(p *faultProc, tmp string) bool
		saved  []string // labels the killed run saved
		repeat string   // rounds; "" for 1
	}{
		{"xfs mounted", func(_ *faultProc, tmp string) bool { return fscompareMount(t, tmp) != "" }, nil, ""},
		{"xfs measuring", func(_ *faultProc, tmp string) bool { return fscompareTestFile(tmp) }, nil, ""},
		{"ext4 measuring", func(p *faultProc, tmp string) bool {
			return strings.Contains(p.stderr.String(), "2/2: ext4 on ") && fscompareTestFile(tmp)
		}, []string{"xfs"}, ""},
		{"round 2 ext4 measuring", func(p *faultProc, tmp string) bool {
			return strings.Contains(p.stderr.String(), "3/4: ext4 on ") && fscompareTestFile(tmp)
		}, nil, "2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
			repeat := cmp.Or(c.repeat, "1")
			args := []string{"fscompare", loop.Dev, "--fs", "xfs,ext4", "--set", "quick", "--repeat", repeat, "--runtime", "500ms", "--results", store, "--yes"}
			p := startIn(t, bin, tmp, args...)
			faultWaitFor(t, c.name, func() bool { return c.at(p, tmp) })
			p.cmd.Process.Kill()
			if code := p.wait(t); code != -1 {
				t.Fatalf("exit %d, want killed\n%s", code, p.stderr)
			}
			point := fscompareMount(t, tmp)
			if point == "" {
				t.Fatalf("the killed run left nothing mounted: the test shows nothing\n%s", p.stderr)
			}
			if _, err := os.Stat(runRecord); err != nil {
				t.Fatalf("the killed run left no record: %v", err)
			}
			if labels, _ := storeLabels(t, store); !slices.Equal(labels, c.saved) {
				t.Fatalf("the killed run saved %v, want %v", labels, c.saved)
			}

			rerunConverges(t, bin, tmp, "an earlier fscompare of "+loop.Dev+" ended without cleaning up (mounted at "+point+"): releasing it first", args...)
			if labels, _ := storeLabels(t, store); !slices.Equal(labels, append(c.saved, "xfs", "ext4")) {
				t.Errorf("records %v, want %v then xfs and ext4", labels, c.saved)
			}
			entries, _, _ := record.List(store)
			for _, e := range entries[len(c.saved):] {
				if r := e.Record; r.Order != record.OrderInterleaved || strconv.Itoa(r.Repeat) != repeat {
					t.Errorf("the rerun's %s record: order %q, %d repetitions, want interleaved, %s", r.Label, r.Order, r.Repeat, repeat)
				}
			}
			checkLeftNothing(t, loop.Dev, "", tmp, runRecord)
		})
	}
}

// TestPrivilegedFSCompareImageKilled: fscompare --image killed with
// SIGKILL as soon as its image is attached, wherever that lands (before
// or after the mount), and once its filesystem is mounted: the same
// command run again releases what is left (the mount, the loop device,
// the image the killed run made), saying which in one line, completes,
// and leaves no image, loop device, directory in TMPDIR or record of the
// run.
func TestPrivilegedFSCompareImageKilled(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "sgdisk", "findmnt", "losetup")
	bin := faultBuild(t)
	for _, c := range []struct {
		name string
		at   func(img, tmp string) bool
	}{
		{"attached", func(img, _ string) bool { return len(attachedTo(img)) > 0 }},
		{"mounted", func(_, tmp string) bool { return fscompareMount(t, tmp) != "" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, tmp := t.TempDir(), t.TempDir()
			img, store := filepath.Join(dir, "fc.img"), filepath.Join(dir, "results")
			detachImage(t, img)
			runRecord := fscompareRunPath(hwinfo.Roots{}.ImageLockPath(realImagePath(img)))
			args := []string{"fscompare", "--image", img, "--size", "400M", "--fs", "xfs,ext4", "--set", "quick", "--repeat", "1", "--runtime", "500ms", "--results", store}
			p := startIn(t, bin, tmp, args...)
			faultWaitFor(t, c.name, func() bool { return c.at(img, tmp) })
			p.cmd.Process.Kill()
			if code := p.wait(t); code != -1 {
				t.Fatalf("exit %d, want killed\n%s", code, p.stderr)
			}
			// What the kill left says what the rerun's first line is.
			var want string
			switch devs, point := attachedTo(img), fscompareMount(t, tmp); {
			case point != "":
				want = "(mounted at " + point + "): releasing it first"
			case len(devs) == 1:
				want = "(attached to " + devs[0] + "): releasing it first"
			default:
				t.Fatalf("the killed run left %v attached, nothing mounted:\n%s", devs, p.stderr)
			}
			t.Logf("killed at %s: %s", c.name, want)
			rerunConverges(t, bin, tmp, "an earlier fscompare of "+img+" ended without cleaning up "+want, args...)
			if labels, _ := storeLabels(t, store); !slices.Equal(labels, []string{"xfs", "ext4"}) {
				t.Errorf("records %v, want xfs and ext4", labels)
			}
			checkLeftNothing(t, "", img, tmp, runRecord)
		})
	}
}

// TestPrivilegedFSCompareSignalSays: SIGHUP ends fscompare with 129 and a
// last line that says what was cleaned up and what was kept: during the
// ext4 round's measurement, the disk released and the xfs record saved;
// during round 2 of 2, the disk released and no record saved;
// during the ext4 round's mkfs (or, should the signal come late, after
// it), what the prepare left; during the xfs round's mkfs on an image the
// run made, the image removed and its loop device detached. Nothing is
// left mounted or attached, nor in TMPDIR.
func TestPrivilegedFSCompareSignalSays(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "sgdisk", "findmnt", "losetup")
	bin := faultBuild(t)
	loop := testenv.NewLoop(t, killedDiskSize, testenv.LoopOptions{})
	runRecord := deviceRunRecord(t, loop.Dev)
	signal := func(t *testing.T, p *faultProc) (string, string) {
		t.Helper()
		p.cmd.Process.Signal(syscall.SIGHUP)
		code, stderr := p.wait(t), p.stderr.String()
		last := faultLastLine(stderr)
		t.Logf("exit %d, last line %q", code, last)
		// -v logs the cancelled steps in full; the last line is what anyone sees.
		if code != 129 || strings.Contains(last, "context canceled") {
			t.Errorf("exit %d, want 129\n%s", code, stderr)
		}
		return last, stderr
	}
	t.Run("ext4 measuring", func(t *testing.T) {
		tmp, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
		p := startIn(t, bin, tmp, "fscompare", loop.Dev, "--fs", "xfs,ext4", "--set", "quick", "--repeat", "1", "--runtime", "2s", "--results", store, "--yes")
		faultWaitFor(t, "the ext4 round's test file", func() bool {
			return strings.Contains(p.stderr.String(), "2/2: ext4 on ") && fscompareTestFile(tmp)
		})
		last, _ := signal(t, p)
		labels, ids := storeLabels(t, store)
		if !slices.Equal(labels, []string{"xfs"}) {
			t.Fatalf("records %v, want xfs", labels)
		}
		if want := "diskprep: interrupted by SIGHUP; released " + loop.Dev + "; the xfs record is saved (id " + ids[0] + ")"; last != want {
			t.Errorf("last line %q\nwant %q", last, want)
		}
		checkLeftNothing(t, loop.Dev, "", tmp, runRecord)
	})
	t.Run("round 2 ext4 measuring", func(t *testing.T) {
		tmp, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
		p := startIn(t, bin, tmp, "fscompare", loop.Dev, "--fs", "xfs,ext4", "--set", "quick", "--repeat", "2", "--runtime", "2s", "--results", store, "--yes")
		faultWaitFor(t, "round 2's ext4 test file", func() bool {
			return strings.Contains(p.stderr.String(), "3/4: ext4 on ") && fscompareTestFile(tmp)
		})
		last, _ := signal(t, p)
		if labels, _ := storeLabels(t, store); len(labels) != 0 {
			t.Errorf("records %v, want none before a filesystem's last round", labels)
		}
		if want := "diskprep: interrupted by SIGHUP; released " + loop.Dev + "; in round 2 of 2, no record saved"; last != want {
			t.Errorf("last line %q\nwant %q", last, want)
		}
		checkLeftNothing(t, loop.Dev, "", tmp, runRecord)
	})
	t.Run("ext4 mkfs", func(t *testing.T) {
		tmp, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
		p := startIn(t, bin, tmp, "fscompare", loop.Dev, "-v", "--fs", "xfs,ext4", "--set", "quick", "--repeat", "1", "--runtime", "500ms", "--results", store, "--yes")
		faultWaitFor(t, "mkfs.ext4", func() bool {
			return strings.Contains(p.stderr.String(), `msg="make filesystem: started" argv="[mkfs.ext4`)
		})
		last, _ := signal(t, p)
		labels, ids := storeLabels(t, store)
		if !slices.Equal(labels, []string{"xfs"}) {
			t.Fatalf("records %v, want xfs", labels)
		}
		saved := "; the xfs record is saved (id " + ids[0] + ")"
		preparing := "diskprep: interrupted by SIGHUP while preparing ext4 on " + loop.Dev + ": "
		if want := []string{
			preparing + "only its partition table is written, nothing is mounted" + saved, // mkfs killed
			preparing + "ext4 is made on " + loop.Dev + "p1, nothing is mounted" + saved,  // the signal after mkfs
			"diskprep: interrupted by SIGHUP; released " + loop.Dev + saved,               // ... after the mount
		}; !slices.Contains(want, last) {
			t.Errorf("last line %q\nwant one of %q", last, want)
		}
		checkLeftNothing(t, loop.Dev, "", tmp, runRecord)
	})
	t.Run("image mkfs", func(t *testing.T) {
		dir, tmp := t.TempDir(), t.TempDir()
		img, store := filepath.Join(dir, "fc.img"), filepath.Join(dir, "results")
		detachImage(t, img)
		p := startIn(t, bin, tmp, "fscompare", "--image", img, "-v", "--size", "400M", "--fs", "xfs,ext4", "--set", "quick", "--repeat", "1", "--runtime", "500ms", "--results", store)
		faultWaitFor(t, "mkfs.xfs", func() bool {
			return strings.Contains(p.stderr.String(), `msg="make filesystem: started" argv="[mkfs.xfs`)
		})
		last, stderr := signal(t, p)
		_, attached, _ := strings.Cut(stderr, `msg="attach image: finished" path=`+img+" device=")
		dev, _, _ := strings.Cut(attached, "\n")
		if want := []string{
			"diskprep: interrupted by SIGHUP while preparing xfs on " + img + ": nothing is mounted, its loop device " + dev + " is detached, removed the image this run made",
			"diskprep: interrupted by SIGHUP; released " + img + ", removed the image this run made", // the signal after the mount
		}; !slices.Contains(want, last) {
			t.Errorf("last line %q\nwant one of %q", last, want)
		}
		if labels, _ := storeLabels(t, store); len(labels) != 0 {
			t.Errorf("records %v, want none", labels)
		}
		checkLeftNothing(t, "", img, tmp, fscompareRunPath(hwinfo.Roots{}.ImageLockPath(realImagePath(img))))
	})
}

// TestPrivilegedFSCompareLiveRunKept: a second fscompare of the disk or
// image a live one is measuring on is refused, exit 3, one line naming
// the live run's pid, and touches nothing of it (the live run's mount is
// not taken for a killed run's); the live run completes.
func TestPrivilegedFSCompareLiveRunKept(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "sgdisk", "findmnt", "losetup")
	bin := faultBuild(t)
	loop := testenv.NewLoop(t, killedDiskSize, testenv.LoopOptions{})
	dir := t.TempDir()
	img := filepath.Join(dir, "fc.img")
	detachImage(t, img)
	var st unix.Stat_t
	if err := unix.Stat(loop.Dev, &st); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, subject, lock string
		target              []string
	}{
		{"device", loop.Dev, hwinfo.Roots{}.DeviceLockPath(fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))), []string{loop.Dev, "--yes"}},
		{"image", realImagePath(img), hwinfo.Roots{}.ImageLockPath(realImagePath(img)), []string{"--image", img, "--size", "400M"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			run := func(runtime, store string) []string {
				return append(append([]string{"fscompare"}, c.target...), "--fs", "xfs,ext4", "--set", "quick", "--repeat", "1", "--runtime", runtime, "--results", store)
			}
			storeA, storeB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			live := startIn(t, bin, tmp, run("2s", storeA)...)
			faultWaitFor(t, "the live run's test file", func() bool { return fscompareTestFile(tmp) })
			point := fscompareMount(t, tmp)
			second := startIn(t, bin, tmp, run("500ms", storeB)...)
			code, stderr := second.wait(t), second.stderr.String()
			want := fmt.Sprintf("diskprep: refusing to prepare %s: another diskprep (pid %d) holds %s (lock %s)\n", c.subject, live.cmd.Process.Pid, c.subject, c.lock)
			if code != exitRefused || stderr != want {
				t.Errorf("second run: exit %d, stderr %q; want 3 and %q", code, stderr, want)
			}
			if got := fscompareMount(t, tmp); got != point {
				t.Errorf("the live run's mount at %s is now %q", point, got)
			}
			if code := live.wait(t); code != 0 {
				t.Fatalf("live run: exit %d\n%s", code, live.stderr)
			}
			if labels, _ := storeLabels(t, storeA); !slices.Equal(labels, []string{"xfs", "ext4"}) {
				t.Errorf("live run's records %v", labels)
			}
			if _, err := os.Lstat(storeB); !os.IsNotExist(err) {
				t.Errorf("the refused run made its store: %v", err)
			}
			checkLeftNothing(t, loop.Dev, "", tmp, fscompareRunPath(c.lock))
		})
	}
	if _, err := os.Lstat(img); !os.IsNotExist(err) {
		t.Errorf("image left: %v", err)
	}
}

// TestPrivilegedFSCompareKeptRefused: a filesystem an fscompare --keep
// left mounted is no killed run's: the next fscompare of the disk is
// refused, exit 3, in one line naming the command that releases it; run,
// that command lets the same fscompare complete.
func TestPrivilegedFSCompareKeptRefused(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "sgdisk", "findmnt")
	bin := faultBuild(t)
	loop := testenv.NewLoop(t, killedDiskSize, testenv.LoopOptions{})
	tmp, store := t.TempDir(), filepath.Join(t.TempDir(), "results")
	args := []string{"fscompare", loop.Dev, "--fs", "xfs,ext4", "--set", "quick", "--repeat", "1", "--runtime", "500ms", "--results", store, "--yes"}
	if p := startIn(t, bin, tmp, append(args, "--keep")...); p.wait(t) != 0 {
		t.Fatalf("fscompare --keep: %s", p.stderr)
	}
	point := fscompareMount(t, tmp)
	if point == "" {
		t.Fatal("--keep left nothing mounted")
	}
	p := startIn(t, bin, tmp, args...)
	code, stderr := p.wait(t), p.stderr.String()
	name := filepath.Base(loop.Dev)
	// --keep left the round's last filesystem (ext4) mounted; the next
	// run's first (xfs) finds it.
	want := "diskprep: prepare xfs: refusing to prepare " + name + ": " + name + "p1 is mounted at " + point +
		"; the disk differs from the plan: " + name + "p1 is named \"fscmp-ext4\", the plan's \"fscmp-xfs\"" +
		" (diskprep made what is mounted there: diskprep release " + loop.Dev + " releases it)\n"
	if code != exitRefused || stderr != want {
		t.Fatalf("after --keep: exit %d, stderr %q; want 3 and %q", code, stderr, want)
	}
	if got := fscompareMount(t, tmp); got != point {
		t.Errorf("the kept filesystem at %s is now %q", point, got)
	}
	if rel := startIn(t, bin, tmp, "release", loop.Dev); rel.wait(t) != 0 {
		t.Fatalf("release: %s", rel.stderr)
	}
	if p := startIn(t, bin, tmp, args...); p.wait(t) != 0 {
		t.Fatalf("after release: %s", p.stderr)
	}
	if labels, _ := storeLabels(t, store); !slices.Equal(labels, []string{"xfs", "ext4", "xfs", "ext4"}) {
		t.Errorf("records %v", labels)
	}
	if points := mountsFrom(t, loop.Dev); len(points) != 0 {
		t.Errorf("%s still mounted at %v", loop.Dev, points)
	}
	// The --keep run's directory outlives its release (release removes
	// only the mount points prepare made).
	os.Remove(point)
	if left := entries(t, tmp); len(left) != 0 {
		t.Errorf("TMPDIR holds %v", left)
	}
}
