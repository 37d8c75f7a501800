package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
)

// A system directory as mount point is a refusal (exit 3) with one line
// saying why, found from the request before root or the disk is looked
// at: --dry-run refuses too, and Apply is never reached (fakeMachine
// fails the test if it is).
func TestPrepareMountPointRefused(t *testing.T) {
	for _, uid := range []int{0, 1000} {
		m, _ := fakeMachine(t, uid, false)
		for _, point := range []string{"/etc", "/usr", "/var", "/var/lib", "/boot", "/bin", "/root", "/run", "/tmp", "/dev/shm",
			"/var/lib/diskprep", "/var/tmp/x/../../../../etc", "/proc/x", "/"} {
			for _, extra := range [][]string{{"--persist", "--yes"}, {"--dry-run"}} {
				args := append([]string{"prepare", "/dev/sdb", "--fs", "xfs", "--mount", point}, extra...)
				code, out, errOut := runArgsOn(m, args...)
				if code != 3 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "mount point") || out != "" {
					t.Errorf("uid %d %q: exit %d, stdout %q, stderr %q; want exit 3 and one line", uid, args, code, out, errOut)
				}
			}
		}
	}
}

// The results store is diskprep's own: no mount point inside it.
func TestPrepareMountPointInResults(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	results := t.TempDir()
	code, _, errOut := runArgsOn(m, "--results", results, "prepare", "/dev/sdb", "--fs", "xfs", "--mount", results+"/mnt", "--dry-run")
	if code != 3 || !strings.Contains(errOut, "diskprep's own") {
		t.Errorf("exit %d %q", code, errOut)
	}
	// Given relative, and reached through a link.
	t.Chdir(results)
	code, _, errOut = runArgsOn(m, "--results", "rel", "prepare", "/dev/sdb", "--fs", "xfs", "--mount", results+"/rel/x", "--dry-run")
	if code != 3 || !strings.Contains(errOut, "is in "+results+"/rel, diskprep's own") {
		t.Errorf("relative results: exit %d %q", code, errOut)
	}
	if err := os.Mkdir(filepath.Join(results, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(results, "real"), filepath.Join(results, "link")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runArgsOn(m, "--results", results+"/link", "prepare", "/dev/sdb", "--fs", "xfs", "--mount", results+"/real/x", "--dry-run")
	if code != 3 || !strings.Contains(errOut, "diskprep's own") {
		t.Errorf("linked results: exit %d %q", code, errOut)
	}
}

// Over a directory that holds files: refused, unless --mount-over, when
// the plan says what it hides.
func TestPrepareMountOver(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--mount", dir, "--dry-run")
	if code != 3 || !strings.Contains(errOut, "is not empty (keep.txt)") || !strings.Contains(errOut, "--mount-over") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("not empty: exit %d %q", code, errOut)
	}
	code, out, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--mount", dir, "--mount-over", "--dry-run")
	if code != 0 || !strings.Contains(out, "mount -t xfs /dev/sdb1 "+dir) || !strings.Contains(out, "hidden while the file system is mounted there") {
		t.Errorf("--mount-over: exit %d\n%s\n%s", code, out, errOut)
	}
	// An empty directory and a new one need nothing.
	for _, p := range []string{t.TempDir(), filepath.Join(dir, "new")} {
		if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--mount", p, "--dry-run"); code != 0 {
			t.Errorf("%s: exit %d %q", p, code, errOut)
		}
	}
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--mount-over", "--dry-run"); code != 2 || !strings.Contains(errOut, "no mount point") {
		t.Errorf("--mount-over without --mount: exit %d %q", code, errOut)
	}
}

// Mount options mount(8) or the file system does not take, or that an
// fstab line cannot hold, are bad input (exit 2), one line naming the
// option.
func TestPrepareMountOptions(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	for opts, want := range map[string]string{
		"bind":              `mount option "bind" is refused`,
		"noatime,remount":   `mount option "remount" is refused`,
		"loop=/dev/loop0":   `mount option "loop=/dev/loop0" is refused`,
		"rbind":             `"rbind" is refused`,
		"noatime #x":        "cannot be written in an fstab line",
		"noatime,,nodev":    "an empty option",
		"noatime,frobulate": `"frobulate" is not one mount(8) or xfs takes`,
	} {
		code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/data", "--mount-opt", opts, "--persist", "--yes")
		if code != 2 || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("--mount-opt %q: exit %d %q, want exit 2 saying %q", opts, code, errOut, want)
		}
	}
	code, out, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/data", "--mount-opt", "noatime,logbsize=256k,x-systemd.device-timeout=5s", "--dry-run")
	if code != 0 || !strings.Contains(out, "-o noatime,logbsize=256k,x-systemd.device-timeout=5s") {
		t.Errorf("good options: exit %d\n%s%s", code, out, errOut)
	}
}

// A plan file's mount point under /proc is refused by planning, dry run
// or not, and nothing is written: not the table, not mkfs, not a mkdir
// (the fake machine keeps every effect).
func TestPreparePlanMountInProc(t *testing.T) {
	m, h := stackMachine(t)
	m.apply = disk.Apply
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	y := "version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: 1G, fs: xfs, mount: /srv/a}\n      - {size: rest, fs: ext4, mount: /proc/x}\n"
	if err := os.WriteFile(plan, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"--dry-run", "--yes"} {
		code, out, errOut := runArgsOn(m, "prepare", "--plan", plan, mode)
		if code != 3 || !strings.Contains(errOut, "plan.yaml:3") || !strings.Contains(errOut, "mount point /proc/x is in /proc") || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", mode, code, out, errOut)
		}
	}
	// / itself, and a stack volume's mount point, the same way.
	for _, y := range []string{
		"version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: rest, fs: xfs, mount: /.}\n",
		"version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: rest, use: lvm:vg}\nlvm:\n  - vg: vg\n    volumes:\n      - {name: a, size: rest, fs: xfs, mount: /usr/local}\n",
	} {
		if err := os.WriteFile(plan, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runArgsOn(m, "prepare", "--plan", plan, "--yes")
		if code != 3 || !strings.Contains(errOut, "mount point /") {
			t.Errorf("%q: exit %d, stderr %q", y, code, errOut)
		}
	}
	if w := h.Writes(); len(w) > 0 {
		t.Errorf("a refused plan wrote: %v", w)
	}
}

// The help of prepare tells of --mount-over and what is refused.
func TestPrepareHelpMountPoints(t *testing.T) {
	code, out, _ := runArgs("prepare", "--help")
	for _, w := range []string{"--mount-over", "system directory", "/var/lib/libvirt/images", "bind", "exit 2"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("prepare --help (exit %d) does not say %q", code, w)
		}
	}
}
