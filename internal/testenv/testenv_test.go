package testenv

import (
	"os"
	"strings"
	"testing"
)

func TestLoopLifecycle(t *testing.T) {
	RequirePrivileged(t, "mkfs.ext4")
	var dev, img string
	t.Run("inner", func(t *testing.T) {
		l := NewLoop(t, 64<<20, LoopOptions{SectorSize: 4096})
		dev, img = l.Dev, l.Image
		b, err := os.ReadFile("/sys/block/" + strings.TrimPrefix(dev, "/dev/") + "/queue/logical_block_size")
		if err != nil || strings.TrimSpace(string(b)) != "4096" {
			t.Fatalf("logical block size %q %v", b, err)
		}
		MustRun(t, "mkfs.ext4", "-q", dev)
		Mount(t, dev)
	})
	if stillAttached(dev, img) {
		t.Fatalf("%s still attached", dev)
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Fatalf("image %s not removed", img)
	}
}

func TestLoopCleanupDropsPartitions(t *testing.T) {
	RequirePrivileged(t, "sgdisk", "partx")
	var dev string
	t.Run("inner", func(t *testing.T) {
		l := NewLoop(t, 64<<20, LoopOptions{})
		dev = l.Dev
		MustRun(t, "sgdisk", "-n", "1:2048:+16M", "-n", "2:0:0", l.Dev)
		MustRun(t, "partx", "-a", l.Dev)
		if _, err := os.Stat("/sys/block/" + strings.TrimPrefix(dev, "/dev/") + "/" + strings.TrimPrefix(dev, "/dev/") + "p2"); err != nil {
			t.Fatalf("partition not registered: %v", err)
		}
	})
	name := strings.TrimPrefix(dev, "/dev/")
	if _, err := os.Stat("/sys/block/" + name + "/" + name + "p1"); err == nil {
		t.Fatalf("%sp1 still registered after cleanup", dev)
	}
}
