package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/internal/testenv"
)

// badCase is one invocation that must fail cleanly: the exit code of
// DESIGN.md, one line on stderr naming the problem, nothing on stdout, and
// nothing created or changed.
type badCase struct {
	name string
	args []string // after "diskprep"
	code int
	want string // in the stderr line
}

// noDevice is a device path that exists nowhere; bad invocations never get
// a real disk, not even one they would fail on.
const noDevice = "/dev/diskprep-test-no-such-disk"

// badInputFixture lays out a working directory, a results store holding
// one record, a private fstab and TMPDIR under one base, which the
// snapshot covers.
type badInputFixture struct {
	base, work, results, tmp, fstab string
	recordID                        string
}

func newBadInputFixture(t *testing.T) *badInputFixture {
	t.Helper()
	base := t.TempDir()
	fx := &badInputFixture{
		base: base, work: filepath.Join(base, "work"), results: filepath.Join(base, "results"),
		tmp: filepath.Join(base, "tmp"), fstab: filepath.Join(base, "fstab"),
		recordID: "20261130T061500Z-abcd",
	}
	for _, d := range []string{fx.work, fx.results, fx.tmp, filepath.Join(fx.work, "target")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, "../../bench/testdata/record.golden.json", filepath.Join(fx.results, fx.recordID+".json"))
	copyFile(t, "../../bench/fio/testdata/fio-3.33-randread.json", filepath.Join(fx.work, "fio.json"))
	copyFile(t, "../../bench/fio/testdata/fio-3.33-err27-efbig.txt", filepath.Join(fx.work, "failed.txt"))
	copyFile(t, "../../bench/fio/testdata/fio-3.33-err27-efbig.terse", filepath.Join(fx.work, "failed.terse"))
	seq, err := os.ReadFile("../../bench/fio/testdata/fio-3.33-seed-seqread.txt")
	if err != nil {
		t.Fatal(err)
	}
	terse, err := os.ReadFile("../../bench/fio/testdata/fio-3.33-seed-seqread.terse")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"fstab":                      "UUID=0a3c-11 / xfs defaults 0 0\n",
		"work/bad.yaml":              "version: 1\ndisks:\n  - select: {model: [unclosed\n",
		"work/unknown-key.yaml":      "version: 1\ncolour: blue\ndisks:\n  - select: {model: X}\n    partitions: [{size: rest, fs: xfs}]\n",
		"work/plan.yaml":             "version: 1\ndisks:\n  - select: {model: NO-SUCH-MODEL}\n    partitions: [{size: rest, fs: xfs}]\n",
		"work/afile":                 "not a directory\n",
		"work/empty.json":            "",
		"work/cut.txt":               string(seq[:len(seq)/2]),
		"work/short.terse":           strings.Replace(string(terse), ";0;0;", ";0;", 1),
		"work/target/keep-this-file": "data\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(base, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A block device node of our own (stat is all prepare does with it),
	// else, without the right to make one, /dev/null: both are device nodes.
	blk := filepath.Join(fx.work, "blk")
	if err := unix.Mknod(blk, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0))); err != nil {
		if err := os.Symlink("/dev/null", blk); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(fx.work, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"linkblk": "blk", "linknull": "/dev/null"} {
		if err := os.Symlink(target, filepath.Join(fx.work, link)); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot is what a bad invocation must leave as it was: every file and
// directory under base (content, mode, mtime), and the loop devices,
// mounts and fstab lines of the host that mention base.
type snapshot struct {
	tree, loops, mounts, fstab []string
}

func takeSnapshot(t *testing.T, base string) snapshot {
	t.Helper()
	var s snapshot
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		entry := fmt.Sprintf("%s %v", p, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, fs.ErrPermission) {
				return err
			}
			entry += fmt.Sprintf(" %d %d %x", fi.Size(), fi.ModTime().UnixNano(), sha256.Sum256(b))
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			entry += " -> " + target
		}
		s.tree = append(s.tree, entry)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mentions := func(text string) []string {
		var out []string
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, base) {
				out = append(out, line)
			}
		}
		sort.Strings(out)
		return out
	}
	if out, err := exec.Command("losetup", "-a").Output(); err == nil {
		s.loops = mentions(string(out))
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		s.mounts = mentions(string(b))
	}
	if b, err := os.ReadFile("/etc/fstab"); err == nil {
		s.fstab = mentions(string(b))
	}
	return s
}

func (s snapshot) diff(after snapshot) string {
	var b strings.Builder
	for _, part := range []struct {
		name          string
		before, after []string
	}{{"files", s.tree, after.tree}, {"loop devices", s.loops, after.loops}, {"mounts", s.mounts, after.mounts}, {"/etc/fstab", s.fstab, after.fstab}} {
		was := map[string]bool{}
		for _, l := range part.before {
			was[l] = true
		}
		now := map[string]bool{}
		for _, l := range part.after {
			now[l] = true
			if !was[l] {
				fmt.Fprintf(&b, "%s: + %s\n", part.name, l)
			}
		}
		for _, l := range part.before {
			if !now[l] {
				fmt.Fprintf(&b, "%s: - %s\n", part.name, l)
			}
		}
	}
	return b.String()
}

// checkOutcome asserts the contract of a failed invocation.
func checkOutcome(t *testing.T, c badCase, code int, stdout, stderr string) {
	t.Helper()
	if code != c.code {
		t.Errorf("exit %d, want %d (stderr %q)", code, c.code, stderr)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") || !strings.HasPrefix(stderr, "diskprep: ") {
		t.Errorf("stderr is not one \"diskprep: \" line: %q", stderr)
	}
	if !strings.Contains(stderr, c.want) {
		t.Errorf("stderr %q does not say %q", stderr, c.want)
	}
	if stdout != "" {
		t.Errorf("stdout not empty: %q", stdout)
	}
}

func badCases(fx *badInputFixture) []badCase {
	w := func(name string) string { return filepath.Join(fx.work, name) }
	img, dir, id := w("new.img"), w("target"), fx.recordID
	afile := w("afile")
	return []badCase{
		// The app and global flags.
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"version as a command", []string{"version"}, 2, "did you mean diskprep --version?"},
		{"prepare a plan without --plan", []string{"prepare", w("plan.yaml")}, 2, "give it with --plan"},
		{"unknown global flag", []string{"--frobnicate", "inventory"}, 2, "flag provided but not defined"},
		{"global flag without value", []string{"inventory", "--format"}, 2, "flag needs an argument"},
		{"global flag without value after a positional", []string{"bench", "/tmp", "--results"}, 2, "flag needs an argument"},
		{"command flag without value after a positional", []string{"bench", "/tmp", "--set"}, 2, "flag needs an argument"},
		{"root missing", []string{"--root", w("no-such-root"), "inventory"}, 1, "no such file or directory"},
		{"root is a file", []string{"--root", afile, "inventory"}, 1, "not a directory"},

		{"inventory unknown flag", []string{"inventory", "--frobnicate"}, 2, "flag provided but not defined"},
		{"inventory argument", []string{"inventory", "extra"}, 2, "takes no arguments"},
		{"inventory unknown -o", []string{"inventory", "-o", "csv"}, 2, `unknown output format "csv"`},

		{"prepare nothing", []string{"prepare"}, 2, "prepare needs a DEVICE"},
		{"prepare unknown flag", []string{"prepare", noDevice, "--fs", "xfs", "--frobnicate"}, 2, "flag provided but not defined"},
		{"prepare two devices", []string{"prepare", noDevice, "/dev/diskprep-test-no-such-ssd", "--fs", "xfs"}, 2, "takes one device"},
		{"prepare --image with DEVICE", []string{"prepare", noDevice, "--image", img, "--size", "1G", "--fs", "xfs"}, 2, "not both"},
		{"prepare --plan with DEVICE", []string{"prepare", "--plan", w("plan.yaml"), noDevice}, 2, "only --dry-run, --diff, --yes and --shrink"},
		{"prepare --plan with --image", []string{"prepare", "--plan", w("plan.yaml"), "--image", img}, 2, "only --dry-run, --diff, --yes and --shrink"},
		{"prepare --plan with --fs", []string{"prepare", "--plan", w("plan.yaml"), "--fs", "xfs"}, 2, "only --dry-run, --diff, --yes and --shrink"},
		{"prepare --size without --image", []string{"prepare", noDevice, "--size", "1G", "--fs", "xfs"}, 2, "--size is for --image"},
		{"prepare --image without --size", []string{"prepare", "--image", img, "--fs", "xfs"}, 2, "give its size with --size"},
		{"prepare --image a device node", []string{"prepare", "--image", w("blk"), "--size", "1G", "--fs", "xfs"}, 3, "is a device node"},
		{"prepare --image a symlink to a device", []string{"prepare", "--image", w("linkblk"), "--size", "1G", "--fs", "xfs"}, 3, "is a device node"},
		{"prepare --image a symlink to /dev/null", []string{"prepare", "--image", w("linknull"), "--size", "1G", "--fs", "xfs"}, 3, "is a device node"},
		{"prepare --size 0", []string{"prepare", "--image", img, "--size", "0", "--fs", "xfs"}, 2, "--size must be more than 0"},
		{"prepare --size negative", []string{"prepare", "--image", img, "--size", "-1G", "--fs", "xfs"}, 2, `size "-1G"`},
		{"prepare --size overflowing", []string{"prepare", "--image", img, "--size", "99999999999T", "--fs", "xfs"}, 2, "too large"},
		{"prepare --size fraction of a byte", []string{"prepare", "--image", img, "--size", "1.5", "--fs", "xfs"}, 2, "not a whole number"},
		{"prepare --size unknown unit", []string{"prepare", "--image", img, "--size", "1Q", "--fs", "xfs"}, 2, "unknown unit"},
		{"prepare --size without unit", []string{"prepare", "--image", img, "--size", "10", "--fs", "xfs"}, 2, "did you mean 10G?"},
		{"prepare --size split from its unit", []string{"prepare", "--image", img, "--size", "10", "GB", "--fs", "xfs"}, 2, "write the size as one word: --size 10GB"},
		{"fscompare --size without unit", []string{"fscompare", "--image", img, "--size", "10"}, 2, "did you mean 10G?"},
		{"fscompare --size split from its unit", []string{"fscompare", "--image", img, "--size", "10", "G"}, 2, "--size 10G"},
		{"prepare without --fs", []string{"prepare", "--image", img, "--size", "1G"}, 2, "--fs is required"},
		{"prepare unknown --fs", []string{"prepare", "--image", img, "--size", "1G", "--fs", "btrfs"}, 2, `unknown filesystem "btrfs"`},
		{"prepare unknown -o", []string{"prepare", "--image", img, "--size", "1G", "--fs", "xfs", "-o", "csv"}, 2, `unknown output format "csv"`},
		{"prepare bad --sector-size", []string{"prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--sector-size", "1000"}, 2, "use 512 or 4096"},
		{"prepare --partition-size 0", []string{"prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--partition-size", "0"}, 2, "--partition-size must be more than 0"},
		{"prepare relative --mount", []string{"prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--mount", "data"}, 2, "not an absolute path"},
		{"prepare --persist without --mount", []string{"prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--persist"}, 2, "--persist needs a mount point"},
		{"prepare label with a space", []string{"prepare", "--image", img, "--size", "1G", "--fs", "xfs", "--label", "my data"}, 2, `label "my data"`},
		{"prepare malformed plan", []string{"prepare", "--plan", w("bad.yaml"), "--dry-run"}, 2, "bad.yaml:"},
		{"prepare plan with an unknown key", []string{"prepare", "--plan", w("unknown-key.yaml"), "--dry-run"}, 2, "colour"},
		{"prepare missing plan", []string{"prepare", "--plan", w("no-such-plan.yaml")}, 2, "no such file"},
		{"prepare nonexistent device", []string{"prepare", noDevice, "--fs", "xfs", "--yes"}, 2, "does not exist"},
		{"prepare --cache without --cache-device", []string{"prepare", "--cache", noDevice, "--fs", "xfs"}, 2, "--cache needs --cache-device"},
		{"prepare --cache on itself", []string{"prepare", "--cache", noDevice, "--cache-device", noDevice, "--fs", "xfs"}, 2, "the cache goes on another, faster disk"},
		{"prepare --cache unknown kind", []string{"prepare", "--cache", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--cache-kind", "flashcache", "--fs", "xfs"}, 2, `unknown kind "flashcache"`},
		{"prepare --cache unknown mode", []string{"prepare", "--cache", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--cache-mode", "writearound", "--fs", "xfs"}, 2, `unknown mode "writearound"`},
		{"prepare --cache bcache --encrypt", []string{"prepare", "--cache", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--cache-kind", "bcache", "--fs", "xfs", "--encrypt", "--key-file", "/etc/k"}, 2, "a bcache device cannot be encrypted yet"},
		{"prepare --cache --encrypt no key", []string{"prepare", "--cache", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--fs", "xfs", "--encrypt"}, 2, "encrypt needs a key file"},
		{"prepare --cache writecache writethrough", []string{"prepare", "--cache", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--cache-kind", "writecache", "--fs", "xfs"}, 2, "writecache caches writes only"},
		{"prepare --cache-kind without --cache", []string{"prepare", noDevice, "--cache-kind", "bcache", "--fs", "xfs"}, 2, "go with --cache ORIGIN_DISK"},
		{"prepare --root without --dry-run", []string{"--root", fx.work, "prepare", noDevice, "--fs", "xfs"}, 2, "can only --dry-run"},

		{"release nothing", []string{"release"}, 2, "release takes one"},
		{"release two targets", []string{"release", "/mnt/a", "/mnt/b"}, 2, "release takes one"},
		{"release unknown flag", []string{"release", "/mnt/a", "--frobnicate"}, 2, "flag provided but not defined"},
		{"release unknown -o", []string{"release", "/mnt/a", "-o", "csv"}, 2, `unknown output format "csv"`},
		{"release with --root", []string{"--root", fx.work, "release", "/mnt/a"}, 2, "this machine only"},

		{"bench without target", []string{"bench"}, 2, "bench takes a TARGET"},
		{"bench one target twice", []string{"bench", dir, dir}, 2, "each target needs a label of its own"},
		{"bench unknown flag", []string{"bench", dir, "--frobnicate"}, 2, "flag provided but not defined"},
		{"bench nonexistent target", []string{"bench", w("no-such-dir"), "--set", "quick"}, 2, "does not exist"},
		{"bench unknown set", []string{"bench", dir, "--set", "nope"}, 2, `unknown workload set "nope"`},
		{"bench --set with --workload", []string{"bench", dir, "--set", "quick", "--workload", "rw=read"}, 2, "not both"},
		{"bench bad duration", []string{"bench", dir, "--runtime", "10x"}, 2, `duration "10x"`},
		{"bench --size without unit", []string{"bench", dir, "--size", "10"}, 2, "did you mean 10G?"},
		{"bench negative duration", []string{"bench", dir, "--runtime", "-1s"}, 2, "negative"},
		{"bench zero duration", []string{"bench", dir, "--runtime", "0"}, 2, "--runtime must be positive"},
		{"bench --size 0", []string{"bench", dir, "--size", "0"}, 2, "--size must be positive"},
		{"bench negative --size", []string{"bench", dir, "--size", "-1G"}, 2, `size "-1G"`},
		{"bench overflowing --bs", []string{"bench", dir, "--bs", "99999999999T"}, 2, "too large"},
		{"bench --bs not a sector multiple", []string{"bench", dir, "--bs", "3"}, 2, "not a multiple of 512"},
		{"bench --jobs 0", []string{"bench", dir, "--jobs", "0"}, 2, "--jobs 0"},
		{"bench negative --iodepth", []string{"bench", dir, "--iodepth", "-1"}, 2, "--iodepth -1"},
		{"bench --repeat 0", []string{"bench", dir, "--repeat", "0"}, 2, "--repeat 0"},
		{"bench --repeat auto:1", []string{"bench", dir, "--repeat", "auto:1"}, 2, "--repeat auto:1: MAX must be 3..100"},
		{"bench --steady-state size-based", []string{"bench", dir, "--steady-state", "--workload", "name=fill,rw=write,bs=1M,size=4M,runtime=0"}, 2, "--steady-state: workload fill is size-based"},
		{"bench --steady-state video set", []string{"bench", dir, "--steady-state", "--set", "video"}, 2, "is size-based (runtime=0)"},
		{"bench --steady-state with --repeat", []string{"bench", dir, "--steady-state", "--repeat", "3"}, 2, "does not take --repeat"},
		{"bench --precondition a directory", []string{"bench", dir, "--precondition", "--allow-device-write", "--set", "quick"}, 2, "--precondition writes a whole raw device"},
		{"bench --repeat not a count", []string{"bench", dir, "--repeat", "often"}, 2, "want N, auto or auto:MAX"},
		{"bench unknown engine", []string{"bench", dir, "--engine", "libaio"}, 2, `engine "libaio"`},
		{"bench bad rw in spec", []string{"bench", dir, "--workload", "rw=nope"}, 2, "rw=nope"},
		{"bench unknown key in spec", []string{"bench", dir, "--workload", "colour=blue"}, 2, `unknown key "colour"`},
		{"bench spec size below bs", []string{"bench", dir, "--workload", "name=a,bs=8M,size=1M"}, 2, "smaller than bs"},
		{"bench unknown -o", []string{"bench", dir, "-o", "csv"}, 2, `unknown output format "csv"`},
		{"bench results dir is a file", []string{"--results", afile, "bench", dir, "--set", "quick"}, 1, "is not a directory"},

		{"results unknown subcommand", []string{"results", "frobnicate"}, 2, `unknown subcommand "frobnicate"`},
		{"results list argument", []string{"results", "list", "extra"}, 2, "takes no arguments"},
		{"results list unknown -o", []string{"results", "list", "-o", "html"}, 2, `unknown output format "html"`},
		{"results list bad pattern", []string{"results", "list", "--label", "["}, 2, "bad pattern"},
		{"results list results dir is a file", []string{"--results", afile, "results", "list"}, 1, "not a directory"},
		{"results show without id", []string{"results", "show"}, 2, "takes one ID"},
		{"results show unknown id", []string{"results", "show", "19990101"}, 1, "no such result"},
		{"results show unknown -o", []string{"results", "show", id, "-o", "svg"}, 2, `unknown output format "svg"`},
		{"results rm without id", []string{"results", "rm"}, 2, "one or more IDs"},
		{"results rm unknown id", []string{"results", "rm", "19990101"}, 1, "no such result"},
		{"results import without file", []string{"results", "import"}, 2, "one or more fio JSON files"},
		{"results import missing file", []string{"results", "import", w("no-such.json")}, 1, "no such file"},
		{"results import empty file", []string{"results", "import", w("empty.json")}, 1, "not fio JSON"},
		{"results import a named pipe", []string{"results", "import", w("fifo.json")}, 1, "fifo.json: not a regular file"},
		{"results import a device", []string{"results", "import", "/dev/zero"}, 1, "/dev/zero: not a regular file"},
		{"results import failed fio job", []string{"results", "import", w("failed.txt")}, 2, "job big failed: fio reported err=27"},
		{"results import failed fio job terse", []string{"results", "import", w("fio.json"), w("failed.terse")}, 2, "job big failed: fio reported err=27"},
		{"results import truncated fio text", []string{"results", "import", w("cut.txt")}, 2, "truncated fio output"},
		{"results import terse wrong field count", []string{"results", "import", w("short.terse")}, 2, "with 129 fields, want 121 plus 9 per disk"},
		{"results import results dir is a file", []string{"--results", afile, "results", "import", w("fio.json")}, 1, "not a directory"},
		{"results export without id", []string{"results", "export"}, 2, "takes one ID"},
		{"results export unknown format", []string{"results", "export", id, "--as", "xml"}, 2, `unknown export format "xml"`},
		{"results export unknown id", []string{"results", "export", "19990101"}, 1, "no such result"},

		{"compare unknown --by", []string{"compare", "--by", "colour"}, 2, `unknown --by "colour"`},
		{"compare --by without value", []string{"compare", "--by"}, 2, "flag needs an argument"},
		{"compare unknown -o", []string{"compare", "-o", "xml"}, 2, `unknown output format "xml"`},
		{"compare unknown baseline", []string{"compare", "--baseline", "nope"}, 2, `no group "nope"`},
		{"compare nonexistent source", []string{"compare", w("no-such-record.json")}, 1, "neither a file, a directory nor a result id"},
		{"compare results dir is a file", []string{"--results", afile, "compare"}, 1, "not a directory"},

		{"fscompare nothing", []string{"fscompare"}, 2, "fscompare needs a DEVICE"},
		{"fscompare unknown flag", []string{"fscompare", "--image", img, "--size", "1G", "--frobnicate"}, 2, "flag provided but not defined"},
		{"fscompare --image with DEVICE", []string{"fscompare", noDevice, "--image", img, "--size", "1G"}, 2, "not both"},
		{"fscompare --size without --image", []string{"fscompare", noDevice, "--size", "1G"}, 2, "--size is for --image"},
		{"fscompare --image without --size", []string{"fscompare", "--image", img}, 2, "give its size with --size"},
		{"fscompare --size 0", []string{"fscompare", "--image", img, "--size", "0"}, 2, "--size must be more than 0"},
		{"fscompare --size negative", []string{"fscompare", "--image", img, "--size", "-1G"}, 2, `size "-1G"`},
		{"fscompare --size overflowing", []string{"fscompare", "--image", img, "--size", "99999999999T"}, 2, "too large"},
		{"fscompare unknown --fs", []string{"fscompare", "--image", img, "--size", "1G", "--fs", "xfs,btrfs"}, 2, `--fs "btrfs"`},
		{"fscompare --fs twice", []string{"fscompare", "--image", img, "--size", "1G", "--fs", "xfs,xfs"}, 2, "twice"},
		{"fscompare one --fs", []string{"fscompare", "--image", img, "--size", "1G", "--fs", "xfs"}, 2, "--fs xfs: fscompare compares two filesystems"},
		{"fscompare empty --fs", []string{"fscompare", "--image", img, "--size", "1G", "--fs", ","}, 2, "--fs needs two filesystems"},
		{"fscompare unknown set", []string{"fscompare", "--image", img, "--size", "1G", "--set", "nope"}, 2, `unknown workload set "nope"`},
		{"fscompare bad duration", []string{"fscompare", "--image", img, "--size", "1G", "--runtime", "1x"}, 2, `duration "1x"`},
		{"fscompare --repeat 0", []string{"fscompare", "--image", img, "--size", "1G", "--repeat", "0"}, 2, "--repeat 0"},
		{"fscompare --repeat auto:1", []string{"fscompare", "--image", img, "--size", "1G", "--repeat", "auto:1"}, 2, "--repeat auto:1: MAX must be 3..100"},
		{"fscompare unknown --order", []string{"fscompare", "--image", img, "--size", "1G", "--order", "abab"}, 2, `--order "abab": interleaved or blocked`},
		{"fscompare --order interleaved --repeat auto", []string{"fscompare", "--image", img, "--size", "1G", "--order", "interleaved", "--repeat", "auto"}, 2, "give --repeat N with --order interleaved, or --order blocked"},
		{"fscompare unknown -o", []string{"fscompare", "--image", img, "--size", "1G", "-o", "xml"}, 2, `unknown output format "xml"`},
		{"fscompare --image a device node", []string{"fscompare", "--image", w("linkblk"), "--size", "1G", "--yes"}, 3, "is a device node"},
		{"fscompare nonexistent device", []string{"fscompare", noDevice, "--yes"}, 2, "does not exist"},
		{"fscompare results dir is a file", []string{"--results", afile, "fscompare", "--image", img, "--size", "1G"}, 1, "is not a directory"},

		{"cachebench nothing", []string{"cachebench"}, 2, "takes one ORIGIN_DISK"},
		{"cachebench no cache device", []string{"cachebench", noDevice, "--yes"}, 2, "needs --cache-device DEVICE"},
		{"cachebench without --yes", []string{"cachebench", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd"}, 2, "does not exist"},
		{"cachebench unknown kind", []string{"cachebench", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--cache-kind", "flashcache", "--yes"}, 2, `--cache-kind "flashcache"`},
		{"cachebench writecache writethrough", []string{"cachebench", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--cache-kind", "writecache", "--cache-mode", "writethrough", "--yes"}, 2, "writeback only"},
		{"cachebench same disk twice", []string{"cachebench", noDevice, "--cache-device", noDevice, "--yes"}, 2, "both"},
		{"cachebench bad size", []string{"cachebench", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--size", "lots", "--yes"}, 2, `--size "lots"`},
		{"cachebench short runtime", []string{"cachebench", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--runtime", "100ms", "--yes"}, 2, "1s or more"},
		{"cachebench unknown -o", []string{"cachebench", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "-o", "csv", "--yes"}, 2, `unknown output format "csv"`},
		{"cachebench nonexistent origin", []string{"cachebench", noDevice, "--cache-device", "/dev/diskprep-test-no-such-ssd", "--yes"}, 2, "does not exist"},

		{"completion without shell", []string{"completion"}, 2, "want one shell"},
		{"completion unknown shell", []string{"completion", "tcsh"}, 2, `unknown shell "tcsh"`},
		{"completion two shells", []string{"completion", "bash", "zsh"}, 2, "want one shell"},
	}
}

// TestBadInvocations runs every bad invocation in process (run, as main
// does) with apply and release replaced by tripwires, as root would run
// them (planning happens; the privilege checks are TestPrivilege's).
func TestBadInvocations(t *testing.T) {
	fx := newBadInputFixture(t)
	t.Chdir(fx.work)
	t.Setenv("TMPDIR", fx.tmp)
	t.Setenv("DISKPREP_RESULTS", fx.results)
	t.Setenv("GHW_CHROOT", "")
	m := liveMachine()
	m.geteuid = func() int { return 0 }
	reached := ""
	m.apply = func(_ context.Context, p *disk.Plan, _ disk.Deps) (*disk.Result, error) {
		reached = "apply"
		return nil, errors.New("tripwire: a bad invocation reached apply")
	}
	m.applyRelease = func(context.Context, *disk.ReleasePlan, disk.Deps) (*disk.ReleaseResult, error) {
		reached = "release"
		return nil, errors.New("tripwire: a bad invocation reached release")
	}
	m.diskDeps = func(e *env) disk.Deps { return disk.Deps{Logger: e.Logger, FstabPath: fx.fstab} }

	cases := badCases(fx)
	if len(cases) < 40 {
		t.Fatalf("%d bad invocations; the contract asks for at least 40", len(cases))
	}
	commands := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, a := range c.args {
				commands[a] = true
			}
			reached = ""
			before := takeSnapshot(t, fx.base)
			var stdout, stderr bytes.Buffer
			code := runOn(context.Background(), m, append([]string{"diskprep"}, c.args...), strings.NewReader(""), &stdout, &stderr)
			if reached != "" {
				t.Errorf("reached %s", reached)
			}
			checkOutcome(t, c, code, stdout.String(), stderr.String())
			if d := before.diff(takeSnapshot(t, fx.base)); d != "" {
				t.Errorf("changed:\n%s", d)
			}
		})
	}
	for _, cmd := range []string{"inventory", "prepare", "release", "bench", "results", "compare", "fscompare", "cachebench", "completion"} {
		if !commands[cmd] {
			t.Errorf("no bad invocation of %s", cmd)
		}
	}
	t.Logf("%d bad invocations", len(cases))
}

// TestBadInvocationsUnprivileged runs through the built binary, as nobody,
// what needs another user: a plan file the user may not read (root reads
// any file), and the real main's exit codes.
func TestBadInvocationsUnprivileged(t *testing.T) {
	bin := buildAsNobody(t)
	fx := newBadInputFixture(t)
	openUp(t, fx.base)
	plan := filepath.Join(fx.work, "plan.yaml")
	if err := os.Chmod(plan, 0); err != nil {
		t.Fatal(err)
	}
	home := nobodyHome(t)
	cases := []badCase{
		{"unreadable plan", []string{"prepare", "--plan", plan, "--dry-run"}, 2, "permission denied"},
		{"unreadable plan without --dry-run", []string{"prepare", "--plan", plan}, 2, "permission denied"},
		{"unknown flag", []string{"results", "list", "--frobnicate"}, 2, "flag provided but not defined"},
		{"--image a symlink to a device, not root", []string{"prepare", "--image", filepath.Join(fx.work, "linkblk"), "--size", "1G", "--fs", "xfs", "--dry-run"}, 3, "is a device node"},
		{"store is a file", []string{"--results", filepath.Join(fx.work, "afile"), "results", "list"}, 1, "not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := takeSnapshot(t, fx.base)
			code, stdout, stderr := runAsNobody(t, bin, home, fx.work, c.args...)
			checkOutcome(t, c, code, stdout, stderr)
			if d := before.diff(takeSnapshot(t, fx.base)); d != "" {
				t.Errorf("changed:\n%s", d)
			}
		})
	}
}

// nobody is the unprivileged user the binary is re-run as.
const nobody = 65534

// buildAsNobody builds the binary where nobody can run it. Switching users
// needs root; without it the test skips (or fails in CI).
func buildAsNobody(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to run the binary as uid %d", nobody)
	}
	if _, err := exec.LookPath("go"); err != nil && os.Getenv(testenv.BinaryEnv) == "" {
		testenv.SkipOrFail(t, "no go tool to build the binary: %v", err)
	}
	dir := t.TempDir()
	openUp(t, dir)
	bin := filepath.Join(dir, "diskprep")
	if err := testenv.BuildDiskprep(bin, "", "."); err != nil {
		t.Fatal(err)
	}
	return bin
}

// openUp lets nobody reach dir: t.TempDir makes its directories 0700.
func openUp(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, fi.Mode().Perm()|0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// nobodyHome is a home directory nobody owns, for HOME and XDG_DATA_HOME.
func nobodyHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	openUp(t, filepath.Dir(home))
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return home
}

// runAsNobody runs the binary as uid/gid 65534 with a clean environment
// whose HOME and XDG_DATA_HOME are home.
func runAsNobody(t *testing.T, bin, home, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, "data"), "TMPDIR=" + home, "LANG=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run %s as nobody: %v", bin, err)
	return 0, "", ""
}

// A fio output past import's bound is refused in one line, exit 1. Its
// own test: the table's fixture is hashed before and after every case.
func TestResultsImportHugeFile(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.json")
	// Sparse, so cheap to make.
	if f, err := os.Create(huge); err != nil || f.Truncate(64<<20+1) != nil || f.Close() != nil {
		t.Fatalf("make huge.json: %v", err)
	}
	code, _, stderr := runCLI(t, "--results", t.TempDir(), "results", "import", huge)
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "huge.json: larger than 64 MiB") {
		t.Errorf("import of a huge file: exit %d %q", code, stderr)
	}
}
