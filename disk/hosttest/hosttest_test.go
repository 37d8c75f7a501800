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
