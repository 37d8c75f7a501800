//go:build crashtest

package crashtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// race starts two identical prepare runs back to back and judges the pair:
// exactly one prepares; the other is refused (exit 3) naming the first's
// pid. Should the second start only after the first finished (a loaded
// machine), it must find the disk prepared and change nothing; such a
// round proves nothing about concurrency and is counted apart.
func race(t *testing.T, args []string) (overlapped bool) {
	t.Helper()
	c1, o1, e1 := start(t, "", args...)
	c2, o2, e2 := start(t, "", args...)
	r := []outcome{wait(t, c1, o1, e1), wait(t, c2, o2, e2)}
	for i, o := range r {
		other := r[1-i]
		switch {
		case o.code == 0 && other.code == 3:
			want := fmt.Sprintf("another diskprep (pid %d) holds", o.pid)
			if !strings.Contains(other.stderr, want) {
				t.Errorf("refusal does not name the holder (%q):\n%s", want, other)
			}
			return true
		case o.code == 0 && other.code == 0:
			if strings.Contains(o.stdout, "already prepared") == strings.Contains(other.stdout, "already prepared") {
				t.Errorf("both runs succeeded and not one of them found the disk prepared:\n%s\n%s", o, other)
			}
			return false
		}
	}
	t.Errorf("want one success and one refusal:\n%s\n%s", r[0], r[1])
	return false
}

func TestPrepareConcurrent(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "sgdisk", "blkid", "findmnt")
	binary(t)
	const deviceRounds, imageRounds = 10, 4
	overlapped := 0
	for i := range deviceRounds {
		t.Run(fmt.Sprintf("device-%d", i), func(t *testing.T) {
			l := testenv.NewLoop(t, diskSize, testenv.LoopOptions{})
			dir := t.TempDir()
			fstabPath, old := newFstab(t, dir)
			mnt := filepath.Join(dir, "mnt")
			t.Cleanup(func() { diskprep(t, "", "release", mnt, "--fstab", fstabPath) })
			if race(t, []string{"prepare", l.Dev, "--fs", "xfs", "--label", label, "--mount", mnt, "--persist", "--fstab", fstabPath, "--yes"}) {
				overlapped++
			}
			checkPrepared(t, l.Dev, "xfs", label, mnt, fstabPath, old)
		})
	}
	for i := range imageRounds {
		t.Run(fmt.Sprintf("image-%d", i), func(t *testing.T) {
			dir := t.TempDir()
			fstabPath, old := newFstab(t, dir)
			img, mnt := filepath.Join(dir, "scratch.img"), filepath.Join(dir, "mnt")
			t.Cleanup(func() {
				diskprep(t, "", "release", mnt, "--fstab", fstabPath)
				if dev := loopOf(t, img); dev != "" {
					t.Errorf("%s still attached to %s", img, dev)
					testenv.Run("losetup", "-d", dev)
				}
			})
			if race(t, []string{"prepare", "--image", img, "--size", "320M", "--fs", "xfs", "--label", label, "--mount", mnt, "--persist", "--fstab", fstabPath, "--yes"}) {
				overlapped++
			}
			if devs := strings.Fields(loopOf(t, img)); len(devs) != 1 {
				t.Fatalf("%s is attached to %v, want exactly one loop device", img, devs)
			}
			checkPrepared(t, loopOf(t, img), "xfs", label, mnt, fstabPath, old)
		})
	}
	t.Logf("concurrent prepare: %d rounds (%d device, %d image), %d overlapped (one refused naming the holder), %d ran one after the other",
		deviceRounds+imageRounds, deviceRounds, imageRounds, overlapped, deviceRounds+imageRounds-overlapped)
	if overlapped == 0 {
		t.Error("no round had the two runs overlap: the test proved nothing")
	}
}
