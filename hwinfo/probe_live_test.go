package hwinfo

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// TestLiveSignaturesWithoutUdev: with no udev database (this machine has
// none), filesystem and partition facts come from reading the device. They
// must match what blkid reads from the same device.
func TestLiveSignaturesWithoutUdev(t *testing.T) {
	testenv.RequirePrivileged(t, "sgdisk", "partx", "mkfs.xfs", "mkfs.ext4", "blkid")
	if r, err := resolveRoot(""); err != nil || r != "/" {
		t.Skipf("GHW_CHROOT points elsewhere (%q)", r)
	}
	if _, err := testenv.Run("test", "-d", "/run/udev/data"); err == nil {
		t.Skip("this host has a udev database; the signature fallback is not used")
	}
	gpt := testenv.NewLoop(t, 1<<30, testenv.LoopOptions{})
	testenv.MustRun(t, "sgdisk", "-n1:2048:+64M", "-c1:small part", "-t1:8300", "-n2:0:+400M", "-c2:big", "-t2:8300", gpt.Dev)
	// Partitions added by BLKPG outlive a detach: drop any left on this
	// loop device by an earlier user, and ours before testenv detaches it.
	testenv.Run("partx", "-d", gpt.Dev)
	testenv.MustRun(t, "partx", "-a", gpt.Dev)
	t.Cleanup(func() { testenv.Run("partx", "-d", gpt.Dev) })
	testenv.MustRun(t, "mkfs.ext4", "-q", "-L", "smallfs", gpt.Dev+"p1")
	testenv.MustRun(t, "mkfs.xfs", "-q", "-f", "-L", "bigfs", gpt.Dev+"p2")
	whole := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.xfs", "-q", "-f", "-L", "wholefs", whole.Dev)

	h, err := Read(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.Device(filepath.Base(gpt.Dev))
	if d == nil {
		t.Fatalf("%s not listed", gpt.Dev)
	}
	if d.LoopBackingFile != gpt.Image || d.Transport != "loop" {
		t.Errorf("loop facts: %q %q", d.Transport, d.LoopBackingFile)
	}
	disk := blkid(t, gpt.Dev)
	if d.PartitionTable != disk["PTTYPE"] || d.PartitionTableID != disk["PTUUID"] {
		t.Errorf("table %q %q, blkid %q %q", d.PartitionTable, d.PartitionTableID, disk["PTTYPE"], disk["PTUUID"])
	}
	if len(d.Partitions) != 2 {
		t.Fatalf("partitions: %+v", d.Partitions)
	}
	for _, p := range d.Partitions {
		b := blkid(t, "/dev/"+p.Name)
		got := []string{p.FSType, p.FSLabel, p.FSUUID, p.PartUUID, p.PartLabel, p.PartType}
		want := []string{b["TYPE"], b["LABEL"], b["UUID"], b["PART_ENTRY_UUID"], b["PART_ENTRY_NAME"], b["PART_ENTRY_TYPE"]}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: got %q, blkid %q", p.Name, got, want)
		}
		if want[0] == "" || want[2] == "" {
			t.Errorf("%s: blkid found nothing: %q", p.Name, b)
		}
	}
	w, _ := h.Device(filepath.Base(whole.Dev))
	b := blkid(t, whole.Dev)
	if w == nil || w.FSType != "xfs" || w.FSLabel != "wholefs" || w.FSUUID != b["UUID"] || w.PartitionTable != "" {
		t.Errorf("whole-disk xfs: %+v, blkid %q", w, b)
	}
}

// blkid returns `blkid -p -o export` of dev as a map.
func blkid(t *testing.T, dev string) map[string]string {
	t.Helper()
	out := testenv.MustRun(t, "blkid", "-p", "-o", "export", dev)
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = strings.ReplaceAll(v, `\ `, " ") // export format escapes blanks
		}
	}
	return m
}
