package hwinfo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// TestPrivilegedFactsReadFresh: a filesystem written to a loop device's
// image behind the loop device's back (its page cache, held open here,
// still has the blank start) is in the facts all the same: the prober
// reads the device as it is now, not as its cache kept it.
func TestPrivilegedFactsReadFresh(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "losetup")
	if r, err := resolveRoot(""); err != nil || r != "/" {
		t.Skipf("GHW_CHROOT points elsewhere (%q)", r)
	}
	if _, err := os.Stat("/run/udev/data"); err == nil {
		t.Skip("this host has a udev database; the prober is not used")
	}
	loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	dev, err := os.Open(loop.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	blank := make([]byte, 64<<10)
	if _, err := dev.ReadAt(blank, 0); err != nil { // into the cache
		t.Fatal(err)
	}
	testenv.MustRun(t, "mkfs.ext4", "-q", "-F", "-L", "behind", loop.Image)
	stale := make([]byte, len(blank))
	dev.ReadAt(stale, 0)
	if string(stale[1024+0x38:1024+0x3a]) == "\x53\xef" {
		t.Skip("the kernel dropped the loop device's cache itself: nothing to show")
	}
	h, err := Read(context.Background(), Options{All: true})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.Device(filepath.Base(loop.Dev))
	if d == nil || d.FSType != "ext4" || d.FSLabel != "behind" {
		t.Errorf("facts of %s: %+v, want the ext4 labelled behind", loop.Dev, d)
	}
	b := make([]byte, 2)
	if _, err := ReadFresh(dev, b, 1024+0x38); err != nil || string(b) != "\x53\xef" {
		t.Errorf("ReadFresh of the ext4 magic: %q %v", b, err)
	}
}
