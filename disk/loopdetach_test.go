package disk

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/internal/testenv"
	"golang.org/x/sys/unix"
)

// A loop device diskprep detaches may be open elsewhere for a moment: udev
// probes a device and its partitions after every write (blkid opens them),
// as a QEMU guest showed. Then the kernel defers the detach to the last
// close, and refuses to drop an open partition (EBUSY). detachLoop waits
// both out, so that "detached" is true when release says it.
func TestPrivilegedDetachLoopHeldOpen(t *testing.T) {
	testenv.RequirePrivileged(t)
	img := filepath.Join(t.TempDir(), "x.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	dev, err := attachLoop("/dev", img, 512, true)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(dev)
	t.Cleanup(func() {
		if liveApplier().loopBackingFile(name) == img {
			testenv.Run("losetup", "-d", dev)
		}
	})
	// A partition, as the kernel's parser or BLKPG registers it.
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	err = blkpg(f.Fd(), unix.BLKPG_ADD_PARTITION, 1, 1<<20, 32<<20)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(t.TempDir(), name+"p1")
	num, err := os.ReadFile(filepath.Join("/sys/class/block", name+"p1", "dev"))
	if err != nil {
		t.Fatal(err)
	}
	var major, minor uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(num)), "%d:%d", &major, &minor); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(part, unix.S_IFBLK|0o600, int(unix.Mkdev(major, minor))); err != nil {
		t.Fatal(err)
	}
	// Another process's probe: the disk and its partition open for 300 ms.
	holdDisk, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	holdPart, err := os.Open(part)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		holdPart.Close()
		time.Sleep(300 * time.Millisecond)
		holdDisk.Close()
	}()
	if err := detachLoop(dev); err != nil {
		t.Fatalf("detach while probed: %v", err)
	}
	if got := liveApplier().loopBackingFile(name); got == img {
		t.Errorf("detachLoop returned with %s still attached to %s", dev, img)
	}
}
