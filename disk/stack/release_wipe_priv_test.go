package stack_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// privDeps are the live machine's, with the stack layers, an fstab of
// the test's own and the log in the test's.
func privDeps(t *testing.T) disk.Deps {
	root := testenv.TempRoot(t)
	return disk.Deps{
		Roots:  hwinfo.Roots{Root: root},
		Logger: slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Refresh: func(ctx context.Context) (*hwinfo.Host, error) {
			return hwinfo.Read(ctx, hwinfo.Options{All: true})
		},
		Layers: stack.Layers{},
	}
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// hashFile hashes every byte of an image.
func hashFile(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// release --wipe of loop devices that are physical volumes of a group
// that is not active, with the real LVM tools (a group without volumes
// needs no device-mapper, which some hosts' kernels lack): a group wholly
// on the device released is removed (vgremove, pvremove) and its label
// is gone from the bytes; one across two devices is refused, nothing
// written, and the group is still whole.
func TestPrivilegedReleaseWipeInactiveGroup(t *testing.T) {
	testenv.RequirePrivileged(t, "pvcreate", "vgcreate", "vgremove", "pvremove", "pvs", "lvs", "wipefs", "blkid")
	a := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	b := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	c := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	span, one := fmt.Sprintf("diskprepspan%d", os.Getpid()), fmt.Sprintf("diskprepone%d", os.Getpid())
	t.Cleanup(func() {
		// Before the loop devices go (cleanups run last first).
		testenv.Run("vgremove", "--force", span, one)
		testenv.Run("pvremove", "--force", "--force", "--yes", a.Dev, b.Dev, c.Dev)
	})
	testenv.MustRun(t, "pvcreate", "-q", a.Dev, b.Dev, c.Dev)
	testenv.MustRun(t, "vgcreate", "-q", span, a.Dev, b.Dev)
	testenv.MustRun(t, "vgcreate", "-q", one, c.Dev)
	deps := privDeps(t)

	before := hashFile(t, a.Image) + hashFile(t, b.Image)
	_, err := disk.PlanRelease(context.Background(), a.Dev, disk.ReleaseOptions{Wipe: true}, deps)
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "inactive vg "+span+", which is also on "+b.Dev+", not released") {
		t.Fatalf("release %s --wipe of a group also on %s: %v", a.Dev, b.Dev, err)
	}
	if hashFile(t, a.Image)+hashFile(t, b.Image) != before {
		t.Error("refused, yet a device changed")
	}
	if out := testenv.MustRun(t, "pvs", "--noheadings", "-o", "vg_name", a.Dev, b.Dev); strings.Count(out, span) != 2 {
		t.Errorf("after the refusal, pvs says:\n%s", out)
	}

	plan, err := disk.PlanRelease(context.Background(), c.Dev, disk.ReleaseOptions{Wipe: true, Yes: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if s := plan.Stacks; s == nil || strings.Join(s.VGRemove, ",") != one || strings.Join(s.PVRemove, ",") != c.Dev || strings.Join(s.WipeSignatures, ",") != c.Dev {
		t.Fatalf("release %s --wipe plans %+v", c.Dev, plan.Stacks)
	}
	if _, err := disk.ApplyRelease(context.Background(), plan, deps); err != nil {
		t.Fatal(err)
	}
	if out, err := testenv.Run("pvs", "--noheadings", c.Dev); err == nil {
		t.Errorf("pvs still finds %s:\n%s", c.Dev, out)
	}
	if out, _ := testenv.Run("blkid", "-p", "-o", "export", c.Dev); strings.Contains(out, "TYPE=") {
		t.Errorf("%s after release --wipe: %s", c.Dev, out)
	}
}
