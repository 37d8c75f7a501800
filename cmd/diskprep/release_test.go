package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/internal/testenv"
)

// release --dry-run needs no root: it only plans, and prints the plan.
func TestReleaseDryRunUnprivileged(t *testing.T) {
	m, _ := fakeMachine(t, 1000, false)
	m.planRelease = func(_ context.Context, target string, opt disk.ReleaseOptions, _ disk.Deps) (*disk.ReleasePlan, error) {
		return &disk.ReleasePlan{Schema: disk.ReleasePlanSchema, Target: target, Unmount: []string{target},
			FstabRemove: []string{"UUID=u\t" + target + "\txfs\tdefaults,nofail\t0\t0"}, RemoveImage: opt.RemoveImage}, nil
	}
	m.applyRelease = func(context.Context, *disk.ReleasePlan, disk.Deps) (*disk.ReleaseResult, error) {
		t.Error("a dry run applied the release")
		return nil, fmt.Errorf("not allowed")
	}
	code, out, errOut := runArgsOn(m, "release", "--dry-run", "/data")
	if code != 0 || out != "would unmount /data\nwould remove from fstab: UUID=u\t/data\txfs\tdefaults,nofail\t0\t0\n"+
		"would run: systemctl daemon-reload (only when systemd is PID 1)\ndry run: nothing was changed\n" {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runArgsOn(m, "-o", "json", "release", "/data", "-n")
	var p disk.ReleasePlan
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || p.Schema != disk.ReleasePlanSchema || len(p.Unmount) != 1 || p.Unmount[0] != "/data" {
		t.Errorf("json: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if code, _, errOut := runArgsOn(m, "release", "/data"); code != 1 || !strings.Contains(errOut, "needs root") {
		t.Errorf("without --dry-run as a user: exit %d %q", code, errOut)
	}
}

// release --dry-run of a prepared image, by mount point, by its loop
// device and by the image file, prints what release does and changes
// nothing: the device's bytes, the fstab and the mount table hash the same
// before and after.
func TestPrivilegedReleaseDryRun(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "findmnt", "losetup")
	root, m := useTempRoot(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "r.img"), filepath.Join(dir, "m")
	t.Cleanup(func() {
		if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
			runArgsOn(m, "release", img)
		}
	})
	code, out, errOut := runArgsOn(m, "-o", "json", "prepare", "--image", img, "--size", "256M", "--fs", "ext4", "--mount", mnt, "--persist", "--yes")
	if code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	var doc prepareResultDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Disks) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	res := doc.Disks[0]
	fstab := filepath.Join(root, "etc/fstab")
	state := func() string {
		h := sha256.New()
		f, err := os.Open(res.Device)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		io.Copy(h, f)
		fs, _ := os.ReadFile(fstab)
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		// What is mounted where of this test's device or under its
		// directory (other tests mount their own things meanwhile).
		var mounts []string
		for _, l := range strings.Split(string(mi), "\n") {
			f := strings.Fields(l)
			if len(f) < 10 {
				continue
			}
			if src := f[len(f)-2]; strings.HasPrefix(src, res.Device) || strings.HasPrefix(f[4], dir) {
				mounts = append(mounts, f[2]+" "+f[4]+" "+src)
			}
		}
		return fmt.Sprintf("%x\n%s\n%q", h.Sum(nil), fs, mounts)
	}
	uuid := res.Partitions[0].UUID
	for _, target := range []string{mnt, res.Device, img} {
		before := state()
		code, out, errOut := runArgsOn(m, "release", "--dry-run", target)
		if code != 0 || !strings.Contains(out, "would unmount "+mnt+"\n") || !strings.Contains(out, "would remove from fstab: UUID="+uuid) ||
			!strings.Contains(out, "would detach "+res.Device+"\n") || !strings.HasSuffix(out, "dry run: nothing was changed\n") {
			t.Errorf("release --dry-run %s: exit %d\n%s%s", target, code, out, errOut)
		}
		code, out, errOut = runArgsOn(m, "-o", "json", "release", "--dry-run", "--remove-image", target)
		var p disk.ReleasePlan
		if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || len(p.Unmount) != 1 || p.Unmount[0] != mnt ||
			len(p.FstabRemove) != 1 || !strings.Contains(p.FstabRemove[0], uuid) || p.Detach != res.Device || p.Image != img || !p.RemoveImage {
			t.Errorf("release --dry-run -o json %s: exit %d %v\n%s%s", target, code, err, out, errOut)
		}
		if after := state(); after != before {
			t.Errorf("release --dry-run %s changed the device, the fstab or the mounts:\n%s\n---\n%s", target, before, after)
		}
	}
	// And the release itself does what the dry run said.
	code, out, errOut = runArgsOn(m, "release", img)
	if code != 0 || !strings.Contains(out, "unmounted "+mnt) || !strings.Contains(out, "detached "+res.Device) {
		t.Errorf("release: exit %d\n%s%s", code, out, errOut)
	}
}
