package hosttest

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// The fake's kernel: BLKPG makes a partition appear in sysfs and /dev as
// the live kernel does, a read-only handle cannot write, O_EXCL is refused
// while a partition is mounted, and every effect is logged in order.
func TestFakeKernel(t *testing.T) {
	h := New()
	h.AddDisk(Disk{Name: "sdb", Minor: 16, SizeBytes: 64 << 20})
	ro, err := h.OpenDevice("/dev/sdb", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EBADF) {
		t.Errorf("write through a read-only handle: %v", err)
	}
	ro.Close()
	rw, err := h.OpenDevice("/dev/sdb", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.OpenDevice("/dev/sdb", true); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("second O_EXCL open: %v", err)
	}
	if err := rw.AddPartition(1, 1<<20, 8<<20); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	for p, want := range map[string]string{
		"/sys/class/block/sdb1/dev": "8:17\n", "/sys/block/sdb/sdb1/start": "2048\n", "/sys/block/sdb/sdb1/size": "16384\n", "/sys/block/sdb/sdb1/partition": "1\n",
	} {
		if b, err := h.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", p, b, err, want)
		}
	}
	if major, minor, err := h.DeviceNumber("/dev/sdb1"); err != nil || major != 8 || minor != 17 {
		t.Errorf("/dev/sdb1: %d:%d %v", major, minor, err)
	}
	if real, err := h.EvalSymlinks("/sys/class/block/sdb1"); err != nil || !strings.HasSuffix(real, "/sdb/sdb1") {
		t.Errorf("sysfs link: %q %v", real, err)
	}
	if _, err := h.Run(context.Background(), "mkfs.ext4", "-U", "0f0e0d0c-0b0a-4908-8706-050403020100", "/dev/sdb1"); err != nil {
		t.Fatal(err)
	}
	h.SetFile("/mnt/x/.keep", nil)
	if _, err := h.Run(context.Background(), "mount", "-t", "ext4", "/dev/sdb1", "/mnt/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.OpenDevice("/dev/sdb", true); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("O_EXCL open of a disk with a mounted partition: %v", err)
	}
	if typ, _, uuid := fsOf(&reader{d: h.devs["sdb1"]}, 8<<20); typ != "ext4" || uuid != "0f0e0d0c-0b0a-4908-8706-050403020100" {
		t.Errorf("mkfs.ext4 made %q %q", typ, uuid)
	}
	if _, err := h.Stat("/nonexistent"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of nothing: %v", err)
	}
	want := `  open /dev/sdb ro
  write /dev/sdb 0+1 -> bad file descriptor
  open /dev/sdb rw excl
  open /dev/sdb rw excl
! BLKPG-add /dev/sdb 1 1048576+8388608
! run mkfs.ext4 -U 0f0e0d0c-0b0a-4908-8706-050403020100 /dev/sdb1
! run mount -t ext4 /dev/sdb1 /mnt/x
  open /dev/sdb rw excl
`
	if got := h.Transcript(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	if w := h.Writes(); len(w) != 3 {
		t.Errorf("writes %v", w)
	}
}

// The fake's LVM, as the real tools behave: a group made inactive keeps
// its volumes in lvs (no device-mapper device, no /dev/VG/LV, nothing held
// in sysfs) and vgchange --activate y brings them back with their bytes;
// wipefs of a physical volume hides it from pvs, and its group then shows
// a missing PV, which vgremove refuses.
func TestFakeLVMInactiveAndWiped(t *testing.T) {
	h := New()
	h.AddDisk(Disk{Name: "sdb", Minor: 16, SizeBytes: 64 << 20})
	h.AddDisk(Disk{Name: "sdc", Minor: 32, SizeBytes: 64 << 20})
	ctx := context.Background()
	run := func(argv ...string) error {
		_, err := h.Run(ctx, argv[0], argv[1:]...)
		return err
	}
	for _, argv := range [][]string{
		{"pvcreate", "/dev/sdb"}, {"pvcreate", "/dev/sdc"}, {"vgcreate", "fast", "/dev/sdb", "/dev/sdc"},
		{"lvcreate", "--yes", "--name", "a", "--size", "8388608b", "fast", "/dev/sdb"},
	} {
		if err := run(argv...); err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
	}
	f, err := h.OpenDevice("/dev/fast/a", true)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("data"), 4096)
	f.Close()
	if err := run("vgchange", "--activate", "n", "fast"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.LVs(), ","); got != "fast/a inactive" {
		t.Errorf("lvs of the inactive group: %s", got)
	}
	if _, err := h.Stat("/dev/fast/a"); err == nil {
		t.Error("/dev/fast/a is there while inactive")
	}
	if des, _ := h.ReadDir("/sys/class/block/sdb/holders"); len(des) != 0 {
		t.Errorf("sdb is held while the group is inactive: %v", des)
	}
	if err := run("vgchange", "--activate", "y", "fast"); err != nil {
		t.Fatal(err)
	}
	f, err = h.OpenDevice("/dev/fast/a", false)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	f.ReadAt(b, 4096)
	f.Close()
	if string(b) != "data" {
		t.Errorf("after vgchange --activate y the volume reads %q", b)
	}
	if des, _ := h.ReadDir("/sys/class/block/sdb/holders"); len(des) != 1 {
		t.Errorf("sdb holders after activation: %v", des)
	}
	if err := run("vgchange", "--activate", "n", "fast"); err != nil {
		t.Fatal(err)
	}
	if err := run("wipefs", "--all", "/dev/sdc"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.PVs(), ","); got != "/dev/sdb fast,[unknown] fast" {
		t.Errorf("pvs after wipefs of a PV: %s", got)
	}
	if err := run("lvremove", "--yes", "fast/a"); err != nil {
		t.Fatal(err)
	}
	if err := run("vgremove", "fast"); err == nil || !strings.Contains(err.Error(), "missing physical volume") {
		t.Errorf("vgremove of a group missing a PV: %v", err)
	}
	if err := run("wipefs", "--all", "/dev/sdb"); err != nil {
		t.Fatal(err)
	}
	if pvs, lvs := h.PVs(), h.LVs(); len(pvs)+len(lvs) != 0 {
		t.Errorf("with every label wiped, pvs %q, lvs %q", pvs, lvs)
	}
}

// A cached group made inactive and then removed volume by volume, as
// release --wipe does after a release without it: the cached volume's
// lvremove takes its sub-volumes and dm-cache's layers too, so the group
// is empty and vgremove takes it.
func TestRemoveInactiveCachedGroup(t *testing.T) {
	h := New()
	h.AddDisk(Disk{Name: "sdb", Minor: 16, SizeBytes: 64 << 20})
	h.AddDisk(Disk{Name: "sdc", Minor: 32, SizeBytes: 64 << 20})
	ctx := context.Background()
	for _, argv := range [][]string{
		{"pvcreate", "/dev/sdb"}, {"pvcreate", "/dev/sdc"}, {"vgcreate", "vg", "/dev/sdb", "/dev/sdc"},
		{"lvcreate", "--yes", "--name", "data", "--extents", "100%PVS", "vg", "/dev/sdb"},
		{"lvcreate", "--yes", "--name", "fast", "--extents", "100%PVS", "vg", "/dev/sdc"},
		{"lvconvert", "--yes", "--type", "cache", "--cachevol", "fast", "--cachemode", "writethrough", "vg/data"},
		{"vgchange", "--activate", "n", "vg"},
		{"lvremove", "--yes", "vg/data"},
		{"vgremove", "vg"},
	} {
		if out, err := h.Run(ctx, argv[0], argv[1:]...); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	if lvs := h.LVs(); len(lvs) != 0 {
		t.Errorf("after vgremove, lvs lists %v", lvs)
	}
}
