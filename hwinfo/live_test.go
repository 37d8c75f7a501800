package hwinfo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestLiveRootDisk reads this machine (read-only, so not privileged) and
// checks the disk under / against what the kernel says directly.
func TestLiveRootDisk(t *testing.T) {
	var st syscall.Stat_t
	if err := syscall.Stat("/", &st); err != nil {
		t.Fatal(err)
	}
	major, minor := unixMajor(st.Dev), unixMinor(st.Dev)
	if major == 0 {
		t.Skipf("/ is on a virtual filesystem (dev 0:%d): no root disk to find", minor)
	}
	disks := rootDisks(t, fmt.Sprintf("/sys/dev/block/%d:%d", major, minor))
	if len(disks) == 0 {
		t.Fatalf("no disk found under %d:%d", major, minor)
	}
	h, err := Read(context.Background(), Options{Root: ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range disks {
		d, p := h.Device(name)
		if d == nil || p != nil {
			t.Errorf("root disk %s not listed as a disk: %+v", name, h.Disks)
			continue
		}
		b, err := os.ReadFile("/sys/block/" + name + "/size")
		if err != nil {
			t.Fatal(err)
		}
		sectors, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if d.SizeBytes != sectors*512 || d.SizeBytes == 0 {
			t.Errorf("%s: size %d, sysfs says %d", name, d.SizeBytes, sectors*512)
		}
		if !d.System {
			t.Errorf("%s holds / but is not marked system: %+v", name, d)
		}
		found := false
		for _, r := range d.SystemReasons {
			found = found || strings.HasPrefix(r, "/ on ")
		}
		if !found {
			t.Errorf("%s: no \"/ on\" reason in %q", name, d.SystemReasons)
		}
	}
}

// rootDisks resolves a /sys/dev/block entry to the whole disks beneath it,
// through partitions and device-mapper slaves.
func rootDisks(t *testing.T, sysdev string) []string {
	dir, err := filepath.EvalSymlinks(sysdev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		return []string{filepath.Base(filepath.Dir(dir))}
	}
	slaves, _ := os.ReadDir(filepath.Join(dir, "slaves"))
	if len(slaves) == 0 {
		return []string{filepath.Base(dir)}
	}
	var out []string
	for _, s := range slaves {
		out = append(out, rootDisks(t, filepath.Join(dir, "slaves", s.Name()))...)
	}
	return out
}

// Linux dev_t encoding (glibc's gnu_dev_major/minor).
func unixMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func unixMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

func BenchmarkReadLive(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := Read(ctx, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
