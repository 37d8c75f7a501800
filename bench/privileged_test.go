package bench

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"

	"golang.org/x/sys/unix"
)

// liveHost reads the live inventory, loop devices included, as the command does.
func liveHost(t *testing.T) *hwinfo.Host {
	t.Helper()
	h, err := hwinfo.Read(context.Background(), hwinfo.Options{All: true})
	if err != nil {
		t.Fatalf("hwinfo: %v", err)
	}
	return h
}

func sha(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// checkNumbers asserts every row of rec measured something real.
func checkNumbers(t *testing.T, rec *record.Record) {
	t.Helper()
	rows := record.Rows(rec)
	if len(rows) == 0 {
		t.Fatal("record has no rows")
	}
	for _, r := range rows {
		s := r.Summary
		if s.IOPS.Median <= 0 || s.BWBytesPerS.Median <= 0 || s.RuntimeMS.Median <= 0 || s.LatP50NS.Median <= 0 || s.LatP99NS.Median < s.LatP50NS.Median {
			t.Errorf("row %s: %+v", r.Name, s)
		}
	}
	for _, wr := range rec.Workloads {
		for _, run := range wr.Runs {
			if run.Engine != engine.EngineSync && run.Engine != engine.EngineIOUring {
				t.Errorf("%s: engine %q", wr.Params.Name, run.Engine)
			}
			if run.Device == nil {
				t.Errorf("%s: no device statistics", wr.Params.Name)
			}
		}
	}
}

func TestPrivilegedQuickOnFilesystems(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "mount", "umount")
	for _, fs := range []struct {
		name string
		mkfs []string
	}{
		{"xfs", []string{"mkfs.xfs", "-f", "-q"}},
		{"ext4", []string{"mkfs.ext4", "-F", "-q"}},
	} {
		t.Run(fs.name, func(t *testing.T) {
			loop := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
			testenv.MustRun(t, fs.mkfs[0], append(fs.mkfs[1:], loop.Dev)...)
			mnt := testenv.Mount(t, loop.Dev)
			before := dirEntries(t, mnt)
			results := t.TempDir()
			rec, err := Run(context.Background(), workload.Request{
				Target: mnt, Set: "quick", Label: fs.name,
				Overrides: workload.Overrides{Runtime: time.Second, Size: 64 << 20},
			}, Options{Host: liveHost(t), ToolVersion: "test", ResultsDir: results})
			if err != nil {
				t.Fatal(err)
			}
			if got := dirEntries(t, mnt); strings.Join(got, ",") != strings.Join(before, ",") {
				t.Errorf("mount holds %v after the run, had %v", got, before)
			}
			saved, warnings, err := record.List(results)
			if err != nil || len(saved) != 1 || len(warnings) != 0 {
				t.Fatalf("store: %v %v %v", saved, warnings, err)
			}
			back := saved[0].Record
			if back.ID != rec.ID || back.Host.Hostname == "" || back.Host.Kernel == "" || back.Host.CPU.Threads == 0 {
				t.Errorf("host identity %+v", back.Host)
			}
			dev := filepath.Base(loop.Dev)
			tg := back.Target
			if tg.Kind != record.KindDir || tg.FSType != fs.name || tg.MountPoint != mnt || tg.Device != dev || tg.Disk != dev || tg.Transport != "loop" {
				t.Errorf("target identity %+v", tg)
			}
			if len(back.Workloads) != 4 {
				t.Fatalf("%d workloads", len(back.Workloads))
			}
			checkNumbers(t, back)
			// With O_DIRECT on a loop device the engine's bytes reach the
			// device: reads at least.
			rd := back.Workloads[0].Runs[0]
			if !rd.Direct || rd.Device.ReadBytes < rd.Read.IOBytes/2 {
				t.Errorf("seq read: direct %v, device read %d of %d bytes", rd.Direct, rd.Device.ReadBytes, rd.Read.IOBytes)
			}
			for _, r := range record.Rows(back) {
				t.Logf("%s: %.0f IOPS, %.0f B/s", r.Name, r.Summary.IOPS.Median, r.Summary.BWBytesPerS.Median)
			}
		})
	}
}

func TestPrivilegedDeviceReadOnly(t *testing.T) {
	testenv.RequirePrivileged(t)
	loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	// Real content, so "unchanged" means something.
	if err := engine.Layout(context.Background(), loop.Image, 64<<20, engine.DataPattern{}); err != nil {
		t.Fatal(err)
	}
	// The image was written behind the loop device's back: the blocks
	// partition scanning cached at attach time are stale until dropped,
	// and a hash taken over them changes once memory pressure evicts them.
	testenv.MustRun(t, "blockdev", "--flushbufs", loop.Dev)
	sum := sha(t, loop.Dev)
	host := liveHost(t)

	rec, err := Run(context.Background(), workload.Request{
		Target: loop.Dev, Set: "quick", Overrides: workload.Overrides{Runtime: time.Second, Size: 32 << 20},
	}, Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, wr := range rec.Workloads {
		names = append(names, wr.Params.Name)
	}
	if strings.Join(names, " ") != "seq1m-read rnd4k-read" {
		t.Errorf("workloads on a device without --allow-device-write: %v", names)
	}
	if !strings.Contains(strings.Join(rec.Warnings, "\n"), "skipped write workloads") {
		t.Errorf("warnings %q", rec.Warnings)
	}
	if rec.Target.Kind != record.KindDevice || rec.Target.Device != filepath.Base(loop.Dev) || rec.Target.TestFile != "" {
		t.Errorf("target %+v", rec.Target)
	}
	checkNumbers(t, rec)

	// Only writes asked for: refused, exit 3.
	_, err = Run(context.Background(), workload.Request{Target: loop.Dev, Specs: []string{"rw=write,size=1M,runtime=1s"}}, Options{Host: host})
	if !errors.Is(err, ErrRefused) {
		t.Errorf("write to a device without the flag: %v", err)
	}
	if sha(t, loop.Dev) != sum {
		t.Fatal("device bytes changed")
	}

	// Even with the flag, a mounted device is refused.
	loop2 := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.ext4", "-F", "-q", loop2.Dev)
	testenv.Mount(t, loop2.Dev)
	sum2 := sha(t, loop2.Image)
	_, err = Run(context.Background(), workload.Request{Target: loop2.Dev, AllowDeviceWrite: true, Specs: []string{"rw=write,size=1M,runtime=1s"}}, Options{Host: liveHost(t)})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "mounted") {
		t.Errorf("write to a mounted device: %v", err)
	}
	if sha(t, loop2.Image) != sum2 {
		t.Error("mounted device's bytes changed")
	}

	// With the flag, an unused device the test owns is written.
	rec, err = Run(context.Background(), workload.Request{Target: loop.Dev, AllowDeviceWrite: true, Specs: []string{"rw=write,size=1M,runtime=0"}}, Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Workloads[0].Runs[0].Write == nil || sha(t, loop.Dev) == sum {
		t.Error("allowed device write did not write")
	}
}

func TestPrivilegedCancel(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mount", "umount")
	loop := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.xfs", "-f", "-q", loop.Dev)
	mnt := testenv.Mount(t, loop.Dev)
	results := t.TempDir()
	before := dirEntries(t, mnt)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the first workload is measuring, as Ctrl-C would.
	progress := func(p Progress) {
		if p.Phase == "run" && p.Elapsed > 300*time.Millisecond {
			cancel()
		}
	}
	start := time.Now()
	_, err := Run(ctx, workload.Request{Target: mnt, Set: "quick", Overrides: workload.Overrides{Runtime: time.Minute, Size: 64 << 20}},
		Options{ResultsDir: results, Progress: progress})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	t.Logf("cancelled run returned after %s", time.Since(start).Round(time.Millisecond))
	if got := dirEntries(t, mnt); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Errorf("mount holds %v after cancel", got)
	}
	if saved := dirEntries(t, results); len(saved) != 0 {
		t.Errorf("record written after cancel: %v", saved)
	}
}

// TestPrivilegedSystemDiskRefused checks the write guard against the disk
// holding / without ever running a workload: only the checks run, so the
// system disk is opened read-only at most.
func TestPrivilegedSystemDiskRefused(t *testing.T) {
	testenv.RequirePrivileged(t)
	major, minor, err := engine.DeviceOf("/")
	if err != nil {
		t.Skipf("root filesystem device: %v", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join("/sys/dev/block", fmtMajMin(major, minor)))
	if err != nil {
		t.Skipf("root filesystem is not on a block device (%d:%d)", major, minor)
	}
	dev := "/dev/" + filepath.Base(real)
	if fi, err := os.Stat(dev); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Skipf("no device node %s", dev)
	}
	tg, err := resolveTarget(dev, "x", liveHost(t), hwinfo.Roots{})
	if errors.Is(err, os.ErrPermission) {
		// Some sandboxes deny opening the system disk even to root; the
		// guard works from sysfs, mountinfo and the inventory all the same.
		tg = &target{ident: record.Target{Path: dev, Kind: record.KindDevice}, path: dev, major: major, minor: minor, haveDev: true}
		tg.identify(liveHost(t))
	} else if err != nil {
		t.Fatal(err)
	}
	ws, _ := workload.Plan(workload.Request{Specs: []string{"rw=write,size=1M"}})
	if _, _, err := tg.admit(ws, true); !errors.Is(err, ErrRefused) {
		t.Fatalf("write to the disk holding / (%s) with --allow-device-write: %v", dev, err)
	} else {
		t.Logf("refused: %v", err)
	}
	if err := checkPrecondition(workload.Request{Precondition: true, AllowDeviceWrite: true}, tg); !errors.Is(err, ErrRefused) {
		t.Errorf("--precondition of the disk holding / (%s): %v", dev, err)
	}
	// Reads of it are fine.
	ws, _ = workload.Plan(workload.Request{Specs: []string{"rw=read,size=1M"}})
	if kept, _, err := tg.admit(ws, false); err != nil || len(kept) != 1 {
		t.Errorf("read of the system disk: %v", err)
	}
}

func fmtMajMin(major, minor uint32) string {
	return strconv.FormatUint(uint64(major), 10) + ":" + strconv.FormatUint(uint64(minor), 10)
}

func TestPrivilegedSectorAlignment(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mount", "umount")
	loop := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{SectorSize: 4096})
	testenv.MustRun(t, "mkfs.xfs", "-f", "-q", loop.Dev)
	mnt := testenv.Mount(t, loop.Dev)
	results := t.TempDir()
	for _, target := range []string{mnt, loop.Dev} {
		_, err := Run(context.Background(), workload.Request{Target: target, Specs: []string{"rw=randread,bs=512,size=1M,runtime=1s"}},
			Options{ResultsDir: results})
		if !errors.Is(err, workload.ErrUsage) || !strings.Contains(err.Error(), "4096-byte logical sector") {
			t.Errorf("%s: bs=512 on a 4K-sector device: %v", target, err)
		}
	}
	if left := append(dirEntries(t, mnt), dirEntries(t, results)...); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	// Buffered I/O has no alignment rule.
	rec, err := Run(context.Background(), workload.Request{Target: mnt, Specs: []string{"rw=randread,bs=512,size=1M,runtime=1s,direct=0"}}, Options{Host: liveHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Target.LogicalSectorBytes != 4096 {
		t.Errorf("logical sector %d", rec.Target.LogicalSectorBytes)
	}
	if !strings.Contains(strings.Join(record.Warnings(rec), "\n"), "O_DIRECT is off") {
		t.Errorf("warnings %q", record.Warnings(rec))
	}
}

// Writes to a block device hold it from the busy check to the end: a
// device another diskprep holds is refused, and while the writes run the
// kernel refuses to mount it.
func TestPrivilegedDeviceWriteClaims(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4")
	loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.ext4", "-F", "-q", loop.Dev)
	host := liveHost(t)
	var st unix.Stat_t
	if err := unix.Stat(loop.Dev, &st); err != nil {
		t.Fatal(err)
	}
	var roots hwinfo.Roots
	lockPath := roots.DeviceLockPath(fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))))
	os.MkdirAll(filepath.Dir(lockPath), 0o700)
	held := exec.Command("flock", "-x", "-o", lockPath, "sleep", "30")
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := roots.LockHeld(lockPath); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	req := workload.Request{Target: loop.Dev, AllowDeviceWrite: true, Specs: []string{"rw=write,bs=4k,size=8M,runtime=3s"}}
	_, err := Run(context.Background(), req, Options{Host: host})
	held.Process.Kill()
	held.Wait()
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), " by another diskprep") && !strings.Contains(err.Error(), "another diskprep (pid") {
		t.Fatalf("write to a device another diskprep holds: %v, want a refusal", err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), req, Options{Host: host})
		done <- err
	}()
	mnt := t.TempDir()
	var mountErr string
	for i := 0; i < 50 && mountErr == ""; i++ {
		time.Sleep(40 * time.Millisecond)
		if f, err := os.OpenFile(loop.Dev, os.O_RDONLY|unix.O_EXCL, 0); err == nil {
			f.Close()
			continue // not claimed yet
		}
		out, err := exec.Command("mount", "-t", "ext4", loop.Dev, mnt).CombinedOutput()
		if err == nil {
			exec.Command("umount", mnt).Run()
			t.Fatal("mounted the device while a bench wrote to it")
		}
		mountErr = string(out)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if mountErr == "" {
		t.Fatal("the bench never showed its claim on the device")
	}
}
