package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/testenv"
)

// fillUp allocates every free block of the filesystem under dir in one
// file, as another writer would, and returns its path.
func fillUp(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var off int64
	for chunk := int64(64 << 20); chunk >= 4096; {
		if err := unix.Fallocate(int(f.Fd()), 0, off, chunk); err != nil {
			chunk /= 2 // ENOSPC: take what is left in smaller pieces
			continue
		}
		off += chunk
	}
	var st unix.Statfs_t
	unix.Statfs(dir, &st)
	t.Logf("filler took %d MiB; %d KiB left", off>>20, st.Bavail*uint64(st.Bsize)>>10)
	return path
}

// smallFS makes a 64 MiB ext4 filesystem on a loop device and mounts it.
func smallFS(t *testing.T) string {
	t.Helper()
	loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.ext4", "-F", "-q", loop.Dev)
	return testenv.Mount(t, loop.Dev)
}

// TestPrivilegedFilesystemFillsUp: the test file fits when the run starts,
// then another writer takes the space before it is laid out. The run fails
// naming ENOSPC, removes its test file and saves nothing.
func TestPrivilegedFilesystemFillsUp(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	mnt := smallFS(t)
	results := t.TempDir()
	var once sync.Once
	filler := ""
	progress := func(p Progress) {
		if p.Phase == "layout" {
			once.Do(func() { filler = fillUp(t, mnt) })
		}
	}
	_, err := Run(context.Background(), workload.Request{Target: mnt, Specs: []string{"rw=randread,bs=4k,size=32M,runtime=1s"}},
		Options{ResultsDir: results, Progress: progress})
	if !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), mnt+" filled up during the run") {
		t.Fatalf("err %v, want ENOSPC", err)
	}
	t.Logf("error: %v", err)
	if filler == "" {
		t.Fatal("no layout phase reported")
	}
	left := dirEntries(t, mnt)
	if strings.Join(left, ",") != "filler,lost+found" {
		t.Errorf("mount holds %v", left)
	}
	if saved := dirEntries(t, results); len(saved) != 0 {
		t.Errorf("store holds %v", saved)
	}
}

// TestPrivilegedTargetGoesAway removes the target directory, or lazily
// unmounts its filesystem, while the first of two workloads runs. The run
// stops with a clear error before the second (which would otherwise lay out
// a new test file on whatever is under the path now: after umount -l that
// is the parent filesystem), saves nothing, and its test file is gone from
// the filesystem it was made on.
func TestPrivilegedTargetGoesAway(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	specs := []string{"name=a,rw=randread,bs=4k,size=8M,runtime=1s", "name=b,rw=randwrite,bs=4k,size=16M,runtime=1s"}
	for _, how := range []string{"rm -r", "umount -l"} {
		t.Run(how, func(t *testing.T) {
			loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
			testenv.MustRun(t, "mkfs.ext4", "-F", "-q", loop.Dev)
			mnt := testenv.Mount(t, loop.Dev)
			target := mnt
			if how == "rm -r" {
				target = filepath.Join(mnt, "sub")
				os.Mkdir(target, 0o755)
			}
			results := t.TempDir()
			var once sync.Once
			progress := func(p Progress) {
				if p.Phase != "run" || p.Elapsed < 400*time.Millisecond {
					return
				}
				once.Do(func() {
					if how == "rm -r" {
						if err := os.RemoveAll(target); err != nil {
							t.Error(err)
						}
						return
					}
					// The engine's goroutine: t.Error, not t.Fatal.
					if _, err := testenv.Run("umount", "-l", mnt); err != nil {
						t.Error(err)
					}
				})
			}
			_, err := Run(context.Background(), workload.Request{Target: target, Specs: specs},
				Options{ResultsDir: results, Progress: progress})
			if err == nil || !strings.Contains(err.Error(), "went away during the run") {
				t.Fatalf("err %v", err)
			}
			t.Logf("error: %v", err)
			if saved := dirEntries(t, results); len(saved) != 0 {
				t.Errorf("store holds %v", saved)
			}
			// Nothing was made under the path after it stopped leading to
			// the target (after umount -l, mnt is the parent filesystem's
			// empty directory).
			if left := dirEntries(t, target); len(left) != 0 {
				t.Errorf("%s holds %v", target, left)
			}
			if how == "umount -l" {
				// The run's descriptors are closed, so the filesystem is
				// really gone now: mount it again and look for the test file.
				again := testenv.Mount(t, loop.Dev)
				if left := dirEntries(t, again); strings.Join(left, ",") != "lost+found" {
					t.Errorf("filesystem holds %v after the run", left)
				}
			}
		})
	}
}
