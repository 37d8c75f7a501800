//go:build crashtest

package crashtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/mountinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// fscompareImagePoints are the kill points of the first round of
// `fscompare --image`, from the image made to its filesystem mounted.
var fscompareImagePoints = []string{
	"image-created", "loop-attaching", "loop-attached", "gpt-backup", "gpt-written",
	"partitions-registered", "mkfs+5ms", "formatted", "mounted",
}

// fscompareDevicePoints are those of `fscompare DEVICE`, on a disk that
// holds an earlier round's filesystem (so the wipe has something to wipe).
var fscompareDevicePoints = []string{
	"wiped", "gpt-backup", "gpt-written", "partitions-registered", "mkfs+5ms", "formatted", "mounted",
}

// fscompareKilled kills args at each point and runs the same command
// again, which must converge: exit 0, a record of each filesystem, and
// nothing left mounted from dev (when given) or attached to img (when
// given), no image, no directory in TMPDIR.
func fscompareKilled(t *testing.T, points []string, setup func(t *testing.T) (args []string, dev, img string)) {
	kills, converged := 0, 0
	for _, at := range points {
		t.Run(at, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // the binary's temporary mount points, apart
			args, dev, img := setup(t)
			store := filepath.Join(t.TempDir(), "results")
			args = append(args, "--fs", "xfs,ext4", "--set", "quick", "--repeat", "1", "--runtime", "200ms", "--results", store)
			o := diskprep(t, at, args...)
			if !o.killed {
				t.Fatalf("not killed at %s: %s", at, o)
			}
			kills++
			if r := diskprep(t, "", args...); r.code != 0 {
				t.Fatalf("the same command after the kill: %s", r)
			}
			entries, _, err := record.List(store)
			if err != nil || len(entries) != 2 || entries[0].Record.Label != "xfs" || entries[1].Record.Label != "ext4" {
				t.Errorf("store: %d records (%v), want xfs and ext4", len(entries), err)
			}
			if dev != "" {
				mounts, _ := mountinfo.Read("/proc/self/mountinfo")
				for _, m := range mounts {
					if m.Source == dev || strings.HasPrefix(m.Source, dev+"p") {
						t.Errorf("%s still mounted at %s", m.Source, m.Point)
					}
				}
			}
			if img != "" {
				if l := loopOf(t, img); l != "" {
					t.Errorf("%s still attached to %s", img, l)
				}
				if _, err := os.Lstat(img); !os.IsNotExist(err) {
					t.Errorf("image left: %v", err)
				}
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("TMPDIR holds %v", left)
			}
			if !t.Failed() {
				converged++
			}
		})
	}
	t.Logf("%d kill points, %d kills, %d converged", len(points), kills, converged)
}

func TestFSCompareImageKilled(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "sgdisk", "blkid", "findmnt")
	binary(t)
	fscompareKilled(t, fscompareImagePoints, func(t *testing.T) ([]string, string, string) {
		img := filepath.Join(t.TempDir(), "fc.img")
		t.Cleanup(func() {
			if dev := loopOf(t, img); dev != "" {
				testenv.UnmountAll(t, dev)
				testenv.DropPartitions(t, dev)
				testenv.Run("losetup", "-d", dev)
			}
		})
		return []string{"fscompare", "--image", img, "--size", "400M"}, "", img
	})
}

func TestFSCompareDeviceKilled(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "sgdisk", "blkid", "findmnt")
	binary(t)
	fscompareKilled(t, fscompareDevicePoints, func(t *testing.T) ([]string, string, string) {
		l := testenv.NewLoop(t, 400<<20, testenv.LoopOptions{})
		testenv.MustRun(t, "mkfs.ext4", "-q", "-F", l.Dev)
		return []string{"fscompare", l.Dev, "--yes"}, l.Dev, ""
	})
}
