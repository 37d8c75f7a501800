package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// A local user (a process of uid 65534) plants, in a sticky
// world-writable directory as /tmp is, a link to a loop device and a link
// to /dev. Every command of root's that takes a device (prepare, its lock
// taken before the facts, fscompare, bench, cachebench, both of its disks,
// and release) refuses the device named through either, the link the
// path's last part or a directory on it: exit 3 and one line naming the
// link, its owner and the device to give instead, with the kernel's
// fs.protected_symlinks off and on. The devices' bytes are unchanged,
// nothing is mounted, nothing is left in the directories concerned.
// Root's own link in the same directory is followed.
func TestPrivilegedDeviceLinkOtherUser(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "findmnt", "losetup")
	bin := faultBuild(t)
	shared := testenv.SharedDir(t)
	disk1 := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	disk2 := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	for _, l := range []*testenv.Loop{disk1, disk2} {
		writeDevice(t, l.Dev, strings.Repeat("diskprep device link guard test ", 1<<15)) // the first MiB
	}
	sums := map[string]string{disk1.Dev: hashDevice(t, disk1.Dev), disk2.Dev: hashDevice(t, disk2.Dev)}
	testenv.AsNobody(t, shared, `ln -s "$1" x && ln -s /dev d`, disk1.Dev)
	if err := os.Symlink(disk1.Dev, filepath.Join(shared, "root")); err != nil {
		t.Fatal(err)
	}

	store, tmp := filepath.Join(t.TempDir(), "results"), t.TempDir()
	name := filepath.Base(disk1.Dev)
	var cases []badCase
	for _, c := range []struct{ path, link string }{
		{filepath.Join(shared, "x"), filepath.Join(shared, "x")},
		{filepath.Join(shared, "d", name), filepath.Join(shared, "d")},
	} {
		why := c.link + " is a link owned by uid 65534; give the device itself (" + disk1.Dev + ")"
		as := func(verb string) string { return "refusing to " + verb + " " + c.path + ": " + why }
		kind := filepath.Base(c.link)
		cases = append(cases,
			badCase{"prepare dry run " + kind, []string{"prepare", c.path, "--fs", "ext4", "--wipe", "--dry-run"}, exitRefused, as("prepare")},
			badCase{"prepare " + kind, []string{"prepare", c.path, "--fs", "ext4", "--wipe", "--yes"}, exitRefused, as("prepare")},
			badCase{"fscompare " + kind, []string{"fscompare", c.path, "--fs", "xfs,ext4", "--set", "quick", "--results", store, "--yes"}, exitRefused, as("prepare")},
			badCase{"bench " + kind, []string{"--results", store, "bench", c.path, "--workload", "rw=read,size=1M,runtime=1s"}, exitRefused, as("bench")},
			badCase{"bench write " + kind, []string{"--results", store, "bench", c.path, "--workload", "rw=write,size=1M,runtime=1s", "--allow-device-write"}, exitRefused, as("bench")},
			badCase{"cachebench origin " + kind, []string{"--results", store, "cachebench", c.path, "--cache-device", disk2.Dev, "--yes"}, exitRefused, as("cachebench")},
			badCase{"cachebench cache " + kind, []string{"--results", store, "cachebench", disk2.Dev, "--cache-device", c.path, "--yes"}, exitRefused, as("cachebench")},
			badCase{"release " + kind, []string{"release", c.path}, exitRefused, as("release")},
			badCase{"release wipe " + kind, []string{"release", c.path, "--wipe", "--yes"}, exitRefused, as("release")},
		)
	}
	testenv.ProtectedSymlinks(t, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := takeSnapshot(t, shared)
				code, stdout, stderr := runBuilt(t, bin, tmp, c.args...)
				checkOutcome(t, c, code, stdout, stderr)
				if d := before.diff(takeSnapshot(t, shared)); d != "" {
					t.Errorf("changed:\n%s", d)
				}
				checkUntouched(t, sums)
				for _, l := range []*testenv.Loop{disk1, disk2} {
					if out, _ := testenv.Run("findmnt", "-n", "-S", l.Dev); out != "" {
						t.Errorf("%s mounted: %s", l.Dev, out)
					}
				}
				if left := entries(t, tmp); len(left) != 0 {
					t.Errorf("TMPDIR holds %v", left)
				}
				if _, err := os.Lstat(store); !os.IsNotExist(err) {
					t.Errorf("the results store was made: %v", err)
				}
			})
		}
	})
	code, out, errOut := runBuilt(t, bin, tmp, "prepare", filepath.Join(shared, "root"), "--fs", "ext4", "--wipe", "--dry-run")
	if code != 0 || !strings.Contains(out, disk1.Dev) {
		t.Errorf("prepare through root's own link: exit %d\n%s%s", code, out, errOut)
	}
	checkUntouched(t, sums)
}

// The same user links a directory of theirs in /tmp to a directory only
// root may enter: an image, or a results store, named through that link
// (a directory on the path, not the file itself) is refused, exit 3 and
// one line naming the link and its owner, with fs.protected_symlinks off
// and on; root's file there keeps its bytes and nothing is made there.
func TestPrivilegedImageDirLinkOtherUser(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "findmnt", "losetup")
	bin := faultBuild(t)
	shared := testenv.SharedDir(t)
	private := filepath.Join(t.TempDir(), "private") // root's alone
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	rootImg := filepath.Join(private, "root.img")
	if err := os.WriteFile(rootImg, []byte(strings.Repeat("root's image ", 1<<12)), 0o600); err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{rootImg: hashDevice(t, rootImg)}
	testenv.AsNobody(t, shared, `ln -s "$1" userdir`, private)
	userdir := filepath.Join(shared, "userdir")
	why := userdir + " is a link owned by uid 65534; "

	store, tmp, target := filepath.Join(t.TempDir(), "results"), t.TempDir(), t.TempDir()
	var cases []badCase
	for _, img := range []string{"new.img", "root.img"} {
		path := filepath.Join(userdir, img)
		want := "refusing to prepare " + path + ": " + why + "give the path itself (" + filepath.Join(private, img) + ")"
		cases = append(cases,
			badCase{"prepare " + img, []string{"prepare", "--image", path, "--size", "64M", "--fs", "ext4", "--wipe", "--yes"}, exitRefused, want},
			badCase{"prepare dry run " + img, []string{"prepare", "--image", path, "--size", "64M", "--fs", "ext4", "--wipe", "--dry-run"}, exitRefused, want},
			badCase{"fscompare " + img, []string{"fscompare", "--image", path, "--size", "64M", "--fs", "xfs,ext4", "--set", "quick", "--results", store, "--yes"}, exitRefused, want},
		)
	}
	cases = append(cases,
		badCase{"release", []string{"release", filepath.Join(userdir, "root.img"), "--remove-image"}, exitRefused,
			"refusing to release " + filepath.Join(userdir, "root.img") + ": " + why + "give the path itself (" + rootImg + ")"},
		badCase{"results", []string{"--results", filepath.Join(userdir, "results"), "bench", target, "--workload", "rw=read,size=1M,runtime=1s"}, exitRefused,
			"results store " + filepath.Join(userdir, "results") + ": " + userdir + " is a symbolic link owned by uid 65534"},
	)
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
				if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", rootImg); strings.TrimSpace(out) != "" {
					t.Errorf("%s attached to %s", rootImg, out)
				}
				for _, d := range []string{tmp, target} {
					if left := entries(t, d); len(left) != 0 {
						t.Errorf("%s holds %v", d, left)
					}
				}
				if _, err := os.Lstat(store); !os.IsNotExist(err) {
					t.Errorf("the results store was made: %v", err)
				}
			})
		}
	})
}
