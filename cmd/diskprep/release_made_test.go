package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// Issue 13 item 7: release removes a mount point directory prepare made
// (and left empty), and leaves one that was there before.
func TestPrivilegedReleaseRemovesMadeMountPoint(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "findmnt", "losetup")
	_, m := useTempRoot(t)
	dir := t.TempDir()
	for _, existed := range []bool{false, true} {
		img, mnt := filepath.Join(dir, "r.img"), filepath.Join(dir, "made", "m")
		if existed {
			mnt = filepath.Join(dir, "mine")
			os.Mkdir(mnt, 0o755)
		}
		t.Cleanup(func() {
			if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
				runArgsOn(m, "release", img, "--remove-image")
			}
		})
		if code, _, errOut := runArgsOn(m, "prepare", "--image", img, "--size", "256M", "--fs", "ext4", "--mount", mnt, "--yes"); code != 0 {
			t.Fatalf("prepare: exit %d: %s", code, errOut)
		}
		code, out, errOut := runArgsOn(m, "release", "--dry-run", mnt)
		if said := strings.Contains(out, "would remove the mount point "+mnt); code != 0 || said == existed {
			t.Errorf("existed %v: release --dry-run: exit %d\n%s%s", existed, code, out, errOut)
		}
		code, out, errOut = runArgsOn(m, "release", img, "--remove-image")
		if code != 0 {
			t.Fatalf("release: exit %d\n%s%s", code, out, errOut)
		}
		_, err := os.Stat(mnt)
		switch {
		case existed && err != nil:
			t.Errorf("release removed %s, which was there before prepare: %v\n%s", mnt, err, out)
		case !existed && !os.IsNotExist(err):
			t.Errorf("release left %s, which prepare made (%v):\n%s", mnt, err, out)
		case !existed && !strings.Contains(out, "removed the mount point "+mnt+" (prepare made it)"):
			t.Errorf("release does not say it removed %s:\n%s", mnt, out)
		}
		if !existed {
			// Only the directory prepare made goes, not its parents.
			if _, err := os.Stat(filepath.Dir(mnt)); err != nil {
				t.Errorf("parent of the mount point gone: %v", err)
			}
		}
	}
}
