package disk

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

func TestHostProbes(t *testing.T) {
	root := t.TempDir()
	a := newApplier(Deps{Roots: hwinfo.Roots{Root: root}})
	if a.systemdIsInit() || a.udevRunning() {
		t.Fatal("empty root: no systemd, no udev")
	}
	os.MkdirAll(filepath.Join(root, "proc/1"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/1/comm"), []byte("systemd\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "run/udev"), 0o755)
	os.WriteFile(filepath.Join(root, "run/udev/control"), nil, 0o644)
	if !a.systemdIsInit() || !a.udevRunning() {
		t.Fatal("systemd and udev not seen")
	}
	os.WriteFile(filepath.Join(root, "proc/1/comm"), []byte("process_api\n"), 0o644)
	if a.systemdIsInit() {
		t.Fatal("another init taken for systemd")
	}
}

// With udev running, the device node is waited for after `udevadm settle`,
// which goes through the runner.
func TestWaitDeviceNodeSettlesUdev(t *testing.T) {
	if _, err := liveApplier().devNumber("/dev/loop0"); err != nil {
		t.Skip("needs a /dev/loop0 node to stand for a partition")
	}
	root, sys := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "run/udev"), 0o755)
	os.WriteFile(filepath.Join(root, "run/udev/control"), nil, 0o644)
	os.MkdirAll(filepath.Join(sys, "class/block/loop0"), 0o755)
	os.WriteFile(filepath.Join(sys, "class/block/loop0/dev"), []byte("7:0\n"), 0o644)
	r := &scriptedRunner{t: t, calls: []scriptedCall{{argv: []string{"udevadm", "settle", "--timeout=30"}}}}
	a := newApplier(Deps{Roots: hwinfo.Roots{Root: root, Sys: sys}, Runner: r})
	if err := a.waitDeviceNode(context.Background(), "loop0"); err != nil {
		t.Fatal(err)
	}
	r.done()
	// A node with another device number is not the partition: with udev
	// running, diskprep waits for udev rather than replacing it.
	os.WriteFile(filepath.Join(sys, "class/block/loop0/dev"), []byte("7:12345\n"), 0o644)
	r = &scriptedRunner{t: t, calls: []scriptedCall{{argv: []string{"udevadm", "settle", "--timeout=30"}}}}
	a.host = &LiveHost{Runner: r}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.waitDeviceNode(ctx, "loop0"); err == nil {
		t.Fatal("wrong device number accepted")
	}
}

// udev re-reads a disk's partition table when a writer closes it, so a
// partition the kernel had can be missing from sysfs for a moment (an
// fscompare in a guest failed so: "device number of sda1: ... no such
// file"): it is waited for after the settle, not taken as an error.
func TestWaitDeviceNodeDuringUdevReread(t *testing.T) {
	if _, err := liveApplier().devNumber("/dev/loop0"); err != nil {
		t.Skip("needs a /dev/loop0 node to stand for a partition")
	}
	root, sys := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "run/udev"), 0o755)
	os.WriteFile(filepath.Join(root, "run/udev/control"), nil, 0o644)
	r := &scriptedRunner{t: t, calls: []scriptedCall{{argv: []string{"udevadm", "settle", "--timeout=30"}}}}
	a := newApplier(Deps{Roots: hwinfo.Roots{Root: root, Sys: sys}, Runner: r})
	back := make(chan struct{})
	go func() {
		defer close(back)
		time.Sleep(200 * time.Millisecond)
		os.MkdirAll(filepath.Join(sys, "class/block/loop0"), 0o755)
		os.WriteFile(filepath.Join(sys, "class/block/loop0/dev"), []byte("7:0\n"), 0o644)
	}()
	err := a.waitDeviceNode(context.Background(), "loop0")
	<-back
	if err != nil {
		t.Fatal(err)
	}
	r.done()
}

// Without udev and without a devtmpfs node, the partition's node is made
// from its sysfs device number; a stale node with another number is replaced.
func TestWaitDeviceNodeMknod(t *testing.T) {
	testenv.RequirePrivileged(t) // mknod
	root, sys, dev := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(sys, "class/block/sdz1"), 0o755)
	os.WriteFile(filepath.Join(sys, "class/block/sdz1/dev"), []byte("8:250\n"), 0o644)
	a := newApplier(Deps{Roots: hwinfo.Roots{Root: root, Sys: sys, Dev: dev}, Runner: &scriptedRunner{t: t}})
	os.WriteFile(filepath.Join(dev, "sdz1"), []byte("stale"), 0o644)
	for i := 0; i < 2; i++ {
		if err := a.waitDeviceNode(context.Background(), "sdz1"); err != nil {
			t.Fatal(err)
		}
		if got, err := liveApplier().devNumber(filepath.Join(dev, "sdz1")); err != nil || got != "8:250" {
			t.Fatalf("node %q %v", got, err)
		}
	}
}

// TestPrivilegedProbeReadsFresh: the guard's probe of a device sees a
// filesystem written behind the device's back (to a loop device's image)
// while the device's page cache, held open elsewhere, still has the
// blank start: a blank-looking disk is never one that holds something.
func TestPrivilegedProbeReadsFresh(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "losetup")
	loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	held, err := os.Open(loop.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	start := make([]byte, 64<<10)
	if _, err := held.ReadAt(start, 0); err != nil { // into the cache
		t.Fatal(err)
	}
	testenv.MustRun(t, "mkfs.ext4", "-q", "-F", "-L", "behind", loop.Image)
	held.ReadAt(start, 0)
	if string(start[1024+0x38:1024+0x3a]) == "\x53\xef" {
		t.Skip("the kernel dropped the loop device's cache itself: nothing to show")
	}
	sigs, err := newApplier(Deps{}).probeDevice(loop.Dev)
	if err != nil || len(sigs) == 0 || sigs[0].Type != "ext4" || sigs[0].Label != "behind" {
		t.Errorf("probe of %s: %+v %v, want the ext4 labelled behind", loop.Dev, sigs, err)
	}
}
