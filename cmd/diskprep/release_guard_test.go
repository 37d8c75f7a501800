package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// release --wipe of a loop device holding an ext4 that diskprep never made:
// refused without a terminal and without --yes (exit 3, one line naming
// the device and its signature, bytes unchanged); wiped with --yes.
func TestPrivilegedReleaseForeignWipe(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "wipefs", "losetup")
	_, m := useTempRoot(t)
	loop := testenv.NewLoop(t, 32<<20, testenv.LoopOptions{})
	if _, err := testenv.Run("mkfs.ext4", "-q", "-L", "theirs", loop.Dev); err != nil {
		t.Fatal(err)
	}
	hash := func() string {
		f, err := os.Open(loop.Dev)
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
	before := hash()
	for _, args := range [][]string{
		{"release", loop.Dev, "--wipe"},
		{"release", loop.Dev, "--wipe", "--dry-run"},
	} {
		code, out, errOut := runArgsOn(m, args...)
		switch {
		case args[len(args)-1] == "--dry-run":
			if code != 0 || !strings.Contains(out, "would destroy "+loop.Dev) || !strings.Contains(out, `ext4 label "theirs"`) || !strings.Contains(out, "not made by diskprep") {
				t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
			}
		default:
			if code != exitRefused || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not made by diskprep: "+loop.Dev) ||
				!strings.Contains(errOut, `ext4 label "theirs"`) || !strings.Contains(errOut, "--yes") {
				t.Errorf("%v: exit %d, stderr %q; want exit 3 and one line naming the device, its ext4 and --yes", args, code, errOut)
			}
		}
		if after := hash(); after != before {
			t.Fatalf("%v changed the device's bytes", args)
		}
	}
	code, out, errOut := runArgsOn(m, "release", loop.Dev, "--wipe", "--yes")
	if code != 0 {
		t.Fatalf("release --wipe --yes: exit %d\n%s%s", code, out, errOut)
	}
	if sigs, _ := testenv.Run("wipefs", "--noheadings", loop.Dev); strings.TrimSpace(sigs) != "" {
		t.Errorf("after release --wipe --yes: %s", sigs)
	}
}

// The disk the running system is on is refused by release, dry run
// included, whatever the flags: exit 3 and one line.
func TestReleaseRefusesSystemDiskLive(t *testing.T) {
	h, err := hwinfo.Read(context.Background(), hwinfo.Options{All: true})
	if err != nil {
		t.Skipf("no facts of this machine: %v", err)
	}
	var sys string
	for _, d := range h.Disks {
		if d.System {
			sys = d.Path
			break
		}
	}
	if sys == "" {
		t.Skip("no disk here holds the running system (a container)")
	}
	m := liveMachine()
	for _, args := range [][]string{
		{"release", sys, "--wipe", "--dry-run"},
		{"release", sys, "--wipe", "--yes", "--force-unmount", "--dry-run"},
		{"release", "/", "--dry-run"},
	} {
		code, out, errOut := runArgsOn(m, args...)
		if code != exitRefused || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "running system") || out != "" {
			t.Errorf("%v: exit %d\n%s%s; want exit 3, one line naming the running system", args, code, out, errOut)
		}
	}
}

// A local user's file or link where root's image goes, planted by a
// process of that user's (uid 65534) in a sticky world-writable directory
// as /tmp is: their own file, their link to a file only root may read, and
// their link to a device node. prepare --image and fscompare --image, run
// as root by the built binary, refuse each (exit 3, one line), with the
// kernel's fs.protected_symlinks off and on, and write nothing: the user's
// file stays empty and theirs, the bytes behind the links are unchanged,
// nothing is attached or mounted. release --remove-image removes neither
// the user's file nor root's. An image diskprep makes itself in the same
// directory is 0600, and mounted nosuid,nodev.
func TestPrivilegedImageOtherUsers(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "findmnt", "losetup")
	bin := faultBuild(t)
	_, m := useTempRoot(t)
	shared := testenv.SharedDir(t) // a /tmp of the test's own
	private := t.TempDir()         // 0700: only root enters
	secret := filepath.Join(private, "root-only")
	if err := os.WriteFile(secret, []byte("root's data"), 0o600); err != nil {
		t.Fatal(err)
	}
	loop := testenv.NewLoop(t, 8<<20, testenv.LoopOptions{})
	writeDevice(t, loop.Dev, strings.Repeat("diskprep image guard test ", 1<<10))
	sums := map[string]string{secret: hashDevice(t, secret), loop.Dev: hashDevice(t, loop.Dev)}
	theirs, link, devLink := shared+"/theirs.img", shared+"/link.img", shared+"/dev.img"
	testenv.AsNobody(t, shared, `: >theirs.img && ln -s "$1" link.img && ln -s "$2" dev.img`, secret, loop.Dev)

	store, tmp := filepath.Join(t.TempDir(), "results"), t.TempDir()
	var cases []badCase
	theirLink := " is a link owned by uid 65534; "
	for _, c := range []struct{ path, want, release string }{
		{theirs, theirs + " belongs to uid 65534 with mode 0644", theirs + " was not created by diskprep"},
		{link, link + " is a symbolic link: diskprep opens image files only by their own path", link + theirLink + "give the path itself (" + secret + ")"},
		{devLink, devLink + " is a symbolic link: diskprep opens image files only by their own path", devLink + theirLink + "give the device itself (" + loop.Dev + ")"},
	} {
		cases = append(cases,
			badCase{"prepare " + filepath.Base(c.path), []string{"prepare", "--image", c.path, "--size", "64M", "--fs", "ext4", "--yes"}, exitRefused, c.want},
			badCase{"fscompare " + filepath.Base(c.path), []string{"fscompare", "--image", c.path, "--size", "64M", "--fs", "xfs,ext4", "--set", "quick", "--results", store, "--yes"}, exitRefused, c.want},
			badCase{"release " + filepath.Base(c.path), []string{"release", c.path, "--remove-image"}, exitRefused, c.release},
		)
	}
	testenv.ProtectedSymlinks(t, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before, beforePrivate := takeSnapshot(t, shared), takeSnapshot(t, private)
				code, stdout, stderr := runBuilt(t, bin, tmp, c.args...)
				checkOutcome(t, c, code, stdout, stderr)
				if d := before.diff(takeSnapshot(t, shared)) + beforePrivate.diff(takeSnapshot(t, private)); d != "" {
					t.Errorf("changed:\n%s", d)
				}
				checkUntouched(t, sums)
				if out, _ := testenv.Run("findmnt", "-n", "-S", loop.Dev); out != "" {
					t.Errorf("%s mounted: %s", loop.Dev, out)
				}
				if left := entries(t, tmp); len(left) != 0 {
					t.Errorf("TMPDIR holds %v", left)
				}
				if _, err := os.Lstat(store); !os.IsNotExist(err) {
					t.Errorf("fscompare made its results store: %v", err)
				}
			})
		}
	})
	if fi, err := os.Stat(theirs); err != nil || fi.Size() != 0 || fi.Sys().(*syscall.Stat_t).Uid != testenv.Nobody {
		t.Errorf("the user's file was written: %v %v", fi, err)
	}

	img, mnt := shared+"/ours.img", t.TempDir()+"/m"
	t.Cleanup(func() {
		if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
			runArgsOn(m, "release", img)
		}
	})
	if code, out, errOut := runArgsOn(m, "prepare", "--image", img, "--size", "64M", "--fs", "ext4", "--mount", mnt, "--yes"); code != 0 {
		t.Fatalf("prepare --image: exit %d\n%s%s", code, out, errOut)
	}
	if fi, err := os.Stat(img); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new image: %v %v, want mode 0600", fi, err)
	}
	opts, _ := testenv.Run("findmnt", "-n", "-o", "OPTIONS", mnt)
	if !strings.Contains(opts, "nosuid") || !strings.Contains(opts, "nodev") {
		t.Errorf("image mounted with %q, want nosuid,nodev", opts)
	}
	if code, out, errOut := runArgsOn(m, "release", img, "--remove-image"); code != 0 || !strings.Contains(out, "removed image "+img) {
		t.Errorf("release --remove-image of diskprep's own image: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runArgsOn(m, "release", secret, "--remove-image"); code != exitRefused || !strings.Contains(errOut, "not created by diskprep") {
		t.Errorf("release --remove-image of another file: exit %d %s", code, errOut)
	}
	checkUntouched(t, sums)
}

// checkUntouched fails t when a file or device of root's no longer holds
// the bytes it held: sums maps its path to its hashDevice sum.
func checkUntouched(t *testing.T, sums map[string]string) {
	t.Helper()
	for path, sum := range sums {
		if hashDevice(t, path) != sum {
			t.Errorf("the bytes of %s changed", path)
		}
	}
}

// runBuilt runs the built binary as the test's user (root) with TMPDIR
// set to tmp, as main runs: its exit code, stdout and stderr.
func runBuilt(t *testing.T, bin, tmp string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", bin, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// fscompare killed outright (SIGKILL: no cleanup at all) leaves its image
// attached and mounted at its temporary directory; the same command run
// again releases that first and completes, and leaves nothing behind.
func TestPrivilegedFSCompareAfterSIGKILL(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "sgdisk", "findmnt")
	bin := faultBuild(t)
	dir, tmp := t.TempDir(), t.TempDir()
	img, store := filepath.Join(dir, "fc.img"), filepath.Join(dir, "results")
	t.Cleanup(func() {
		out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img)
		for _, dev := range strings.Fields(out) {
			testenv.UnmountAll(t, dev)
			testenv.Run("losetup", "-d", dev)
		}
	})
	args := []string{"fscompare", "--image", img, "--size", "1G", "--fs", "xfs,ext4", "--repeat", "1", "--results", store, "--yes"}
	p := exec.Command(bin, append(args, "--runtime", "30s")...)
	p.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	faultWaitFor(t, "the test file", func() bool {
		dirs, _ := filepath.Glob(filepath.Join(tmp, "diskprep-fscompare-*"))
		for _, d := range dirs {
			if faultLaidOut(d, 16<<20)() {
				return true
			}
		}
		return false
	})
	p.Process.Kill()
	p.Wait()
	if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) == "" {
		t.Fatal("the killed run left nothing attached: the test shows nothing")
	}

	again := exec.Command(bin, append(args, "--runtime", "1s")...)
	again.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := again.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "an earlier fscompare of "+img+" ended without cleaning up") {
		t.Fatalf("the same command after SIGKILL: %v\n%s", err, out)
	}
	if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
		t.Errorf("%s still attached to the image", out)
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Errorf("image left: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "diskprep-fscompare-*")); len(left) != 0 {
		t.Errorf("temporary mount points left: %v", left)
	}
}
