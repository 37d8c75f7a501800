package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// fakeRoots makes a fixture tree standing in for sysfs and procfs.
func fakeRoots(t *testing.T) (roots hwinfo.Roots, sys, proc string) {
	t.Helper()
	roots = hwinfo.RootsUnder(t.TempDir())
	return roots, roots.SysPath(), roots.ProcPath()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

const mountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 8:17 / /mnt/data rw,noatime shared:5 - xfs /dev/sdb1 rw,attr2,inode64,logbufs=8
31 22 8:33 / /mnt/my\040disk rw,relatime shared:6 - ext4 /dev/sdc1 rw
`

func TestDeviceBusy(t *testing.T) {
	roots, sys, proc := fakeRoots(t)
	writeFile(t, filepath.Join(proc, "self/mountinfo"), mountinfo)
	writeFile(t, filepath.Join(proc, "swaps"), "Filename\tType\tSize\tUsed\tPriority\n/dev/sdd2  partition\t1048572\t0\t-2\n")
	disk := func(name string, minor int, parts ...string) {
		writeFile(t, filepath.Join(sys, "class/block", name, "dev"), fmt.Sprintf("8:%d\n", minor))
		os.MkdirAll(filepath.Join(sys, "class/block", name, "holders"), 0o755)
		for i, p := range parts {
			writeFile(t, filepath.Join(sys, "class/block", name, p, "dev"), fmt.Sprintf("8:%d\n", minor+i+1))
			os.MkdirAll(filepath.Join(sys, "class/block", name, p, "holders"), 0o755)
		}
	}
	disk("sdb", 16, "sdb1")
	disk("sdc", 32, "sdc1")
	disk("sdd", 48, "sdd1", "sdd2")
	disk("sde", 64, "sde1")
	os.MkdirAll(filepath.Join(sys, "class/block/sde/sde1/holders/dm-0"), 0o755)
	disk("sdf", 80, "sdf1")

	mk := func(dev string, major, minor uint32, host *hwinfo.Host) *target {
		tg := &target{ident: record.Target{Path: "/nonexistent/" + dev, Kind: record.KindDevice, Device: dev}, path: "/nonexistent/" + dev, major: major, minor: minor, haveDev: true, roots: roots}
		if host != nil {
			tg.disk, tg.part = host.Device(dev)
		}
		return tg
	}
	system := &hwinfo.Host{Disks: []hwinfo.Disk{
		{Name: "vda", System: true, SystemReasons: []string{"/ on vda"}},
		{Name: "sdf", Partitions: []hwinfo.Partition{{Name: "sdf1", Holders: []hwinfo.Holder{{Name: "md127"}}}}},
	}}
	tests := []struct {
		tg   *target
		want string
	}{
		{mk("vda", 254, 0, system), "vda is a system disk (/ on vda)"},
		{mk("sdb", 8, 16, nil), "/dev/sdb1 is mounted on /mnt/data"},
		{mk("sdb1", 8, 17, nil), "/dev/sdb1 is mounted on /mnt/data"},
		{mk("sdc", 8, 32, nil), "/dev/sdc1 is mounted on /mnt/my disk"},
		{mk("sdd", 8, 48, nil), "/dev/sdd2 is in use as swap"},
		{mk("sde", 8, 64, nil), "sde1 is held by dm-0"},
		{mk("sdf", 8, 80, system), "sdf1 is held by md127"}, // from the inventory only
		{mk("sdf1", 8, 81, nil), ""},
		{mk("sdf", 8, 80, nil), ""},
	}
	for _, tc := range tests {
		if got := tc.tg.deviceBusy(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.tg.ident.Device, got, tc.want)
		}
	}
}

func TestFindMount(t *testing.T) {
	roots, _, proc := fakeRoots(t)
	writeFile(t, filepath.Join(proc, "self/mountinfo"), mountinfo)
	m, ok := findMount(roots, "/mnt/data/sub/dir", 8, 17, true, false)
	if !ok || m.point != "/mnt/data" || m.fstype != "xfs" || m.options != "rw,noatime,attr2,inode64,logbufs=8" || m.source != "/dev/sdb1" {
		t.Errorf("mount %+v %v", m, ok)
	}
	// Same path prefix but another device: not that mount.
	if m, ok := findMount(roots, "/mnt/data2", 254, 0, true, false); !ok || m.point != "/" {
		t.Errorf("root mount %+v %v", m, ok)
	}
	if m, ok := findMount(roots, "/dev/sdc1", 8, 33, true, true); !ok || m.point != "/mnt/my disk" {
		t.Errorf("device mount %+v %v", m, ok)
	}
	if _, ok := findMount(roots, "/dev/sdz", 8, 200, true, true); ok {
		t.Error("unmounted device found mounted")
	}
}

// A target named through a link another user made or could replace is
// refused (ErrRefused) before anything is read of what it names, the
// link and why in one line; the caller's own link, where no one else can
// change it, is followed.
func TestResolveTargetLinks(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real, open, sticky := filepath.Join(dir, "real"), filepath.Join(dir, "open"), filepath.Join(dir, "sticky")
	for _, d := range []string{real, open, sticky} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{filepath.Join(dir, "own"), filepath.Join(open, "l"), filepath.Join(sticky, "l")} {
		if err := os.Symlink(real, l); err != nil {
			t.Fatal(err)
		}
	}
	if tg, err := resolveTarget(filepath.Join(dir, "own"), "x", nil, hwinfo.Roots{}); err != nil || tg.ident.Kind != record.KindDir {
		t.Errorf("own link: %v", err)
	}
	refused := func(path, why string) {
		t.Helper()
		_, err := resolveTarget(path, "x", nil, hwinfo.Roots{})
		want := "refusing to bench " + path + ": " + why + "; give the path itself (" + real + ")"
		if !errors.Is(err, ErrRefused) || err.Error() != want {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	l := filepath.Join(open, "l")
	refused(l, l+" is a link in "+open+", which other users may write (mode 0777)")
	if os.Geteuid() != 0 {
		t.Skip("another user's link needs root to make")
	}
	l = filepath.Join(sticky, "l")
	if err := os.Lchown(l, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	refused(l, l+" is a link owned by uid 65534")
	if entries, _ := os.ReadDir(real); len(entries) != 0 {
		t.Errorf("the directory the links name holds %v", entries)
	}
}

// A directory under a mount point the fstab names, with nothing mounted
// there (a nofail mount that failed at boot): the test file would go to
// the file system below, so the run is refused before anything is
// written; once something is mounted at a point, or the fstab's point is
// the one mounted, the run goes on.
func TestRunRefusesUnmountedFstabPoint(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "my data")
	sub := filepath.Join(data, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	escaped := strings.ReplaceAll(data, " ", `\040`)
	run := func(target string) (*record.Record, error) {
		return Run(context.Background(), workload.Request{
			Target: target, Set: "quick", Overrides: workload.Overrides{Size: 1 << 20, Runtime: time.Second},
		}, Options{Host: syntheticHost(), Engine: &fakeEngine{}, Roots: hwinfo.Roots{Root: root}})
	}
	writeFile(t, filepath.Join(root, "etc/fstab"), "# a comment\nUUID=0b8e1e8c /  ext4 defaults 0 1\nUUID=5f2a7c01 "+escaped+" xfs defaults,nofail 0 0\n/dev/sdz9 none swap sw 0 0\n")
	for _, target := range []string{data, sub} {
		_, err := run(target)
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("bench %s under an unmounted fstab point: %v, want a refusal", target, err)
		}
		for _, want := range []string{target + " is under " + data, "UUID=5f2a7c01 (xfs)", "nothing is mounted there", "mount " + data} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		if left := dirEntries(t, sub); len(left) != 0 {
			t.Errorf("refused, yet %s holds %v", sub, left)
		}
	}
	// The fstab's line for the base (mounted: / holds it) or none: runs.
	writeFile(t, filepath.Join(root, "etc/fstab"), "UUID=0b8e1e8c /  ext4 defaults 0 1\n")
	if _, err := run(sub); err != nil {
		t.Errorf("bench %s with no fstab line above it: %v", sub, err)
	}
}
