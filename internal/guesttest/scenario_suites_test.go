package guesttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Scenario g of issue 10: the crash and refusal suites that run on loop
// devices on the host, run once more inside the guest, where the kernel
// parses partition tables itself and udev watches every disk. Their loop
// devices (testenv.NewLoop attaches with --partscan, as diskprep does its
// images) sit on an ext4 file system on an emulated SATA disk, built on the
// host with mkfs.ext4 -d (test binaries and testdata, no 9p on the way).
//
// A subset, for the tier's 8 minutes under TCG (the whole set takes some
// 400 s of guest time): the suites' cases that depend on the kernel's own
// view of a disk (prepare's partition registration, its refusals of disks
// in use and their bytes, the crash points around the table and mkfs, the
// image's release) and the command's refusals; not the cases that only
// repeat a path (the other sector sizes' mkfs, fstab crash points, the
// concurrency rounds) or that depend on udev's database catching up with
// a write just made: the "wiped" kill point, where a prepare killed right
// after wiping a disk's filesystem is rerun at once, before udev has
// re-probed the disk, so the facts still name the wiped filesystem and the
// rerun is refused (safe, but not the convergence the suite asserts; no
// loop device on the host shows it, there is no udev there).
// Not TestPrivilegedLiveFactsUnregisteredTable either: it is the state of a
// kernel without a partition parser (a table written, never registered),
// which the guest's kernel only shows until udev re-reads the table after
// the write, so there it passed or skipped by a race (CI saw the skip).
var suites = []struct {
	name, pkg, tags, bin string // bin: the diskprep the suite runs ("" none)
	run                  string
}{
	{name: "disk", pkg: "./disk",
		run: `^(TestPrivilegedPrepare|TestPrivilegedRefusals)$`},
	{name: "crash", pkg: "./internal/crashtest", tags: "crashtest", bin: "diskprep-crashtest",
		run: `^(TestPrepareDeviceKilled|TestPrepareImageKilled)$/^(gpt-backup|partitions-registered|mkfs\+5ms|fstab-replaced)$`},
	// The conformance suite of the storage stacks and caches: the real
	// md, device-mapper and bcache, which the dev machines' kernel lacks,
	// against the fake's golden effect logs.
	{name: "stackconf", pkg: "./disk", run: `^TestPrivilegedStackConformance$`},
	{name: "cmd", pkg: "./cmd/diskprep", bin: "diskprep",
		run: `^(TestBadInvocations|TestPrivilegedPreparePlanTwoDisks|TestPrivilegedPrepareDiffStaleSignatures|TestPrivilegedPrepareImageCLI|TestPrivilegedReleaseForeignWipe|TestPrivilegedImageOtherUsers|TestPrivilegedUnsafeStore|TestPrivilegedStoreLinkOtherUser|TestPrivilegedDeviceLinkOtherUser|TestPrivilegedImageDirLinkOtherUser|TestReleaseRefusesSystemDiskLive)$`},
}

const suitesScript = `set -u
# As distributions ship it: the kernel refuses root's open of another
# user's link in a sticky directory (the image guard must not lean on it).
echo 1 >/proc/sys/fs/protected_symlinks
mount "$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_SUITES1)" /mnt || exit 1
mkdir -p /mnt/tmp
# The local user of the privileged tests (uid 65534, a process of its own)
# plants its files and links under TMPDIR: it reaches it as it does /tmp.
chmod 0755 /mnt && chmod 1777 /mnt/tmp
export TMPDIR=/mnt/tmp DISKPREP_REQUIRE_PRIVILEGED=1
suite() { # name package binary run
	mkdir -p "/mnt/src/$2"
	s=$(date +%s)
	(cd "/mnt/src/$2" && env ${3:+DISKPREP_TEST_BINARY=/mnt/bin/$3} "/mnt/bin/$1.test" \
		-test.v -test.count=1 -test.timeout="${suite_timeout:-10m}" -test.run "$4") >"/root/$1.log" 2>&1
	rc=$?
	echo "@@ $1.exit"; echo $rc
	echo "@@ $1.seconds"; echo $(( $(date +%s) - s ))
	echo "@@ $1.log"; cat "/root/$1.log"
}
`

func TestScenarioSuitesInGuest(t *testing.T) {
	parallel(t)
	Require(t)
	script, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(script))
	tree, state := t.TempDir(), t.TempDir()
	start := time.Now()
	build := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bin := filepath.Join(tree, "bin")
	build("build", "-o", filepath.Join(bin, "diskprep"), "./cmd/diskprep")
	build("build", "-tags", "crashtest", "-o", filepath.Join(bin, "diskprep-crashtest"), "./cmd/diskprep")
	// Each suite's own deadline is stretched by the load as the guest's
	// is (budgetFor): under a loaded host a suite that takes 4 minutes
	// quiet took over 10 in the guest.
	cmdline := suitesScript + fmt.Sprintf("suite_timeout=%ds\n", int(budgetFor(10*time.Minute, loadAverage(), runtime.NumCPU(), 0).guest.Seconds()))
	for _, s := range chosenSuites(t) {
		build("test", "-c", "-tags", s.tags, "-o", filepath.Join(bin, s.name+".test"), s.pkg)
		cmdline += "suite " + s.name + " " + strings.TrimPrefix(s.pkg, "./") + " '" + s.bin + "' '" + s.run + "'\n"
	}
	cmdline += "echo '@@ loops'; losetup -a\necho '@@ end'\n"
	// Every testdata directory, where the test binaries look for it
	// (relative to their package: cmd/diskprep reads ../../bench/testdata).
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasPrefix(d.Name(), ".") && rel != ".":
			return filepath.SkipDir
		case d.Name() == "testdata":
			dst := filepath.Join(tree, "src", filepath.Dir(rel))
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			if out, err := exec.Command("cp", "-r", path, dst+"/").CombinedOutput(); err != nil {
				return fmt.Errorf("copy %s: %w: %s", rel, err, out)
			}
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The disk image under --state is the guest's SATA disk: guest.sh
	// keeps an image of the asked size it finds there.
	img := filepath.Join(state, "suites.img")
	if out, err := exec.Command("truncate", "-s", "2G", img).CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v\n%s", err, out)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-d", tree, img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 -d: %v\n%s", err, out)
	}
	t.Logf("built the suites and their disk in %.1fs", time.Since(start).Seconds())

	r := Run(t, Options{Disks: []string{"sata-ssd:2G:serial=SUITES1,name=suites"}, State: state, Timeout: 15 * time.Minute},
		"sh", "-c", cmdline)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	result := regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)$`)
	for _, s := range chosenSuites(t) {
		log := out[s.name+".log"]
		var ran, failed []string
		for _, m := range result.FindAllStringSubmatch(log, -1) {
			ran = append(ran, m[2]+" "+m[1]+" "+m[3]+"s")
			if m[1] != "PASS" {
				failed = append(failed, m[2]+" "+m[1])
			}
		}
		t.Logf("%s suite in the guest: exit %s, %ss; ran:\n  %s", s.name, out[s.name+".exit"], out[s.name+".seconds"], strings.Join(ran, "\n  "))
		if out[s.name+".exit"] != "0" || len(failed) > 0 || len(ran) == 0 {
			// The failing tests' own lines again after the whole log: a
			// report that keeps only the end of the output still shows them.
			t.Errorf("%s suite failed in the guest (exit %s; %v):\n%s\nthe failures:\n%s", s.name, out[s.name+".exit"], failed, log,
				failureExcerpts(log, failed))
		}
	}
	if out["loops"] != "" {
		t.Errorf("loop devices left in the guest: %s", out["loops"])
	}
}

// chosenSuites are the suites DISKPREP_GUEST_SUITES names (comma
// separated), to run one while working on it; all when it is unset.
func chosenSuites(t *testing.T) []struct{ name, pkg, tags, bin, run string } {
	only := os.Getenv("DISKPREP_GUEST_SUITES")
	if only == "" {
		return suites
	}
	var out []struct{ name, pkg, tags, bin, run string }
	for _, s := range suites {
		for _, n := range strings.Split(only, ",") {
			if n == s.name {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("DISKPREP_GUEST_SUITES=%s names no suite", only)
	}
	return out
}

// failureExcerpts is each failed test's part of a verbose go test log:
// from its last "=== RUN" (or "=== CONT") line to its "--- FAIL" line,
// at most 40 lines of it, the last ones.
func failureExcerpts(log string, failed []string) string {
	lines := strings.Split(log, "\n")
	var b strings.Builder
	for _, f := range failed {
		name, _, _ := strings.Cut(f, " ")
		start, end := -1, -1
		for i, l := range lines {
			switch strings.TrimSpace(l) {
			case "=== RUN   " + name, "=== CONT  " + name:
				start = i
			}
			if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL: "+name+" ") {
				end = i
				break
			}
		}
		if start < 0 || end < start {
			continue
		}
		if end-start > 40 {
			start = end - 40
		}
		b.WriteString(strings.Join(lines[start:end+1], "\n") + "\n")
	}
	return b.String()
}
