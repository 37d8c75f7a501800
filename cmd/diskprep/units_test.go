package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 13 item 4: GB is 10^9 as coreutils, parted and lsblk read it, G
// and GiB are 2^30, and the dry run says which was understood, in both
// forms.
func TestPrepareDryRunShowsSizeBothWays(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	img := filepath.Join(t.TempDir(), "x.img")
	for size, want := range map[string]string{
		"10GB":  "create sparse image " + img + " (10 GB (9.3 GiB))",
		"10G":   "create sparse image " + img + " (10 GiB (10.7 GB))",
		"10GiB": "create sparse image " + img + " (10 GiB (10.7 GB))",
	} {
		code, out, errOut := runArgsOn(m, "prepare", "--image", img, "--size", size, "--fs", "xfs", "--dry-run")
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--size %s: exit %d, want a plan with %q:\n%s%s", size, code, want, out, errOut)
		}
	}
}

// --partition-size says how it was read, in both forms.
func TestPartitionSizeShownBothWays(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	code, out, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--partition-size", "50GB", "--dry-run")
	if code != 0 || !strings.Contains(out, "--partition-size 50GB reads as 50 GB (46.6 GiB)\n") {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
}

// A duration without a unit is refused with the reading most people mean,
// not silently taken as seconds.
func TestDurationWithoutUnitRefused(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runDiskprep(t, "", "bench", dir, "--set", "quick", "--runtime", "10")
	if code != exitUsage || !strings.Contains(errOut, "did you mean 10s?") {
		t.Errorf("bench --runtime 10: exit %d, %q; want exit 2 with a hint", code, errOut)
	}
	code, _, errOut = runDiskprep(t, "", "bench", dir, "--workload", "rw=read,runtime=5")
	if code != exitUsage || !strings.Contains(errOut, "did you mean 5s?") {
		t.Errorf("--workload runtime=5: exit %d, %q; want exit 2 with a hint", code, errOut)
	}
}

// Issue 13 item 7: --persist on an image is warned about (the line mounts
// nothing after a reboot) with the unit that would attach the image at
// boot; the plan itself is unchanged.
func TestPersistOnImageWarns(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	img := filepath.Join(t.TempDir(), "scratch.img")
	code, out, errOut := runArgsOn(m, "prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--mount", "/mnt/scratch", "--persist", "--dry-run")
	if code != 0 || !strings.Contains(out, "fstab") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"warning: --persist on an image: the fstab line for /mnt/scratch mounts nothing after a reboot unless " + img + " is attached",
		`ExecStart=/sbin/losetup --find --partscan "` + img + `"`,
		"WantedBy=local-fs.target",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// Without --persist, or with --quiet: no warning.
	for _, args := range [][]string{
		{"prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--mount", "/mnt/scratch", "--dry-run"},
		{"-q", "prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--mount", "/mnt/scratch", "--persist", "--dry-run"},
	} {
		if code, _, errOut := runArgsOn(m, args...); code != 0 || strings.Contains(errOut, "warning") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
	if got := unitName("/var/tmp/my disk.img"); got != `var-tmp-my\x20disk.img` {
		t.Errorf("unitName = %q", got)
	}
}

// Issue 25 item 5: the unit of an image whose path has a "-" is named
// with \x2d; the systemctl command printed quotes it, and a shell given
// that command passes systemctl the name the unit file has.
func TestPersistUnitCommandQuoted(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	img := filepath.Join(t.TempDir(), "scratch-1.img")
	code, _, errOut := runArgsOn(m, "prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--mount", "/mnt/scratch", "--persist", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	name := "diskprep-loop-" + unitName(img) + ".service"
	if !strings.Contains(name, `\x2d`) {
		t.Fatalf("unit name %q has no escaped dash: the test lost its point", name)
	}
	// Where to save it: the unit's path once (it was printed as
	// /etc/systemd/system//etc/systemd/system/NAME).
	_, saveAs, _ := strings.Cut(errOut, "to save as ")
	saveAs, _, _ = strings.Cut(saveAs, " and enable")
	where, err := exec.Command("sh", "-c", "printf '%s\\n' "+saveAs).Output()
	if err != nil || strings.TrimSuffix(string(where), "\n") != "/etc/systemd/system/"+name {
		t.Errorf("save as %q reads %q, want /etc/systemd/system/%s (%v)", saveAs, where, name, err)
	}
	_, cmd, ok := strings.Cut(errOut, "enable with ")
	if !ok {
		t.Fatalf("no enable command in %q", errOut)
	}
	cmd, _, _ = strings.Cut(cmd, ":\n")
	// What the shell passes systemctl: the printed words, as sh reads them.
	words, err := exec.Command("sh", "-c", "printf '%s\\n' "+strings.TrimPrefix(cmd, "systemctl enable ")).Output()
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.TrimSuffix(string(words), "\n"); w != name {
		t.Errorf("the shell reads %q as %q, want the unit %q", cmd, w, name)
	}
}

// Issue 25 item 7: --fs is read whatever its case, as --set is.
func TestFSFlagCaseInsensitive(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	img := filepath.Join(t.TempDir(), "x.img")
	code, out, errOut := runArgsOn(m, "prepare", "--image", img, "--size", "1G", "--fs", "XFS", "--dry-run")
	if code != 0 || !strings.Contains(out, "mkfs.xfs") {
		t.Errorf("--fs XFS: exit %d:\n%s%s", code, out, errOut)
	}
}
