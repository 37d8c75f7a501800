package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// readmeExample is one command of the code blocks of README.md or a page
// of docs/.
type readmeExample struct {
	file string // relative to the repository
	line int
	cmd  string // as a shell runs it: sudo and "go run ./cmd/diskprep" made the built binary
}

// docPages are README.md and then the pages of docs/ in the order of the
// README's "Read more" table: the order a reader meets them, and the order
// their examples run in (a later page may use what an earlier one made).
func docPages(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, m := range regexp.MustCompile(`(?m)^\| \[docs/([a-z0-9-]+\.md)\]`).FindAllStringSubmatch(string(b), -1) {
		pages = append(pages, "docs/"+m[1])
	}
	return pages
}

var trailingComment = regexp.MustCompile(`\s+#\s.*$`)

// readmeExamples parses README.md's indented code blocks for the commands
// it tells people to type: lines starting with diskprep, sudo diskprep,
// go run ./cmd/diskprep or source. The test follows the README: a new
// example is run without anyone listing it here.
func readmeExamples(t *testing.T, file string) []readmeExample {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeExample
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if !strings.HasPrefix(l, "    ") {
			continue
		}
		c := strings.TrimSpace(trailingComment.ReplaceAllString(l, ""))
		c = strings.TrimPrefix(c, "sudo ")
		c = strings.Replace(c, "go run ./cmd/diskprep ", "diskprep ", 1)
		if strings.HasPrefix(c, "diskprep ") || strings.HasPrefix(c, "source <(diskprep ") {
			out = append(out, readmeExample{file: file, line: n, cmd: c})
		}
	}
	return out
}

// readmeSkip says why an example cannot run here, or "" when it runs. Each
// reason is a fact about this machine or the example, not a choice.
func readmeSkip(cmd string) string {
	switch {
	case regexp.MustCompile(`/dev/(sd|nvme|vd)`).MatchString(cmd):
		return "names a disk this machine does not have (or its own system disk)"
	case regexp.MustCompile(`(^|\s)/(data|srv|scratch)\b|/mnt/(data|xfs|ext4)\b`).MatchString(cmd):
		return "works on filesystems made on such disks"
	case strings.Contains(cmd, "${fpath[1]}"):
		return "writes into zsh's system function directory"
	case strings.Contains(cmd, "["):
		return "a synopsis, not a command"
	case regexp.MustCompile(`\b2026\d{4}T\d{4}\b`).MatchString(cmd):
		return "names the id of a record made elsewhere"
	case regexp.MustCompile(`results import`).MatchString(cmd):
		return "imports fio output files made elsewhere"
	case strings.Contains(cmd, "/etc/diskprep/plan.yaml"):
		return "reads the plan file a package installs"
	case strings.Contains(cmd, "./results-"):
		return "compares result stores copied from other hosts"
	case strings.Contains(cmd, "/var/lib/node_exporter"):
		return "writes into node_exporter's directory"
	}
	return ""
}

// Issue 13 item 6: every README example that can run on loop devices runs
// as written, in README order, without a terminal (stdin and stdout are no
// terminal), and succeeds. The store is a temporary one ($DISKPREP_RESULTS)
// and the working directory a temporary one with the repository's fixture
// trees, so relative paths (hwinfo/testdata/..., post.md, fs.html) work and
// land there. Only the image files and the scratch mount point move, into a
// directory of the test's own. The fscompare examples run twice in effect
// (two examples on the same image), the second after the first removed the
// image it made.
func TestPrivilegedREADMEExamples(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "losetup", "findmnt")
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipOrFail(t, "no go tool to build the binary: %v", err)
	}
	var examples []readmeExample
	for _, page := range docPages(t) {
		examples = append(examples, readmeExamples(t, page)...)
	}
	if len(examples) < 40 {
		t.Fatalf("found %d examples in README.md and docs/: the parser lost them", len(examples))
	}
	// The examples' image files and mount point move into a directory of
	// the test's own, so a file a killed run (or a user) left at
	// /var/tmp/diskprep.img is never touched and never stops the test.
	own := t.TempDir()
	paths := strings.NewReplacer(
		"/var/tmp/diskprep.img", filepath.Join(own, "diskprep.img"),
		"/var/tmp/scratch.img", filepath.Join(own, "scratch.img"),
		"/mnt/scratch", filepath.Join(own, "mnt", "scratch"))
	t.Cleanup(func() {
		for _, img := range []string{"diskprep.img", "scratch.img"} {
			img = filepath.Join(own, img)
			if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
				dev := strings.TrimSpace(out)
				t.Errorf("%s left attached to %s", img, dev)
				testenv.UnmountAll(t, dev)
				testenv.Run("losetup", "-d", dev)
			}
			if _, err := os.Stat(img); err == nil {
				t.Errorf("%s left behind", img)
			}
		}
		if _, err := os.Stat(filepath.Join(own, "mnt", "scratch")); err == nil {
			t.Errorf("the scratch mount point was left behind")
		}
	})
	fstabBefore, _ := os.ReadFile("/etc/fstab")
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "diskprep"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work, home := t.TempDir(), t.TempDir()
	repo, _ := filepath.Abs(filepath.Join("..", ".."))
	for _, d := range []string{"hwinfo", "disk"} {
		os.Symlink(filepath.Join(repo, d), filepath.Join(work, d))
	}
	os.MkdirAll(filepath.Join(home, ".config", "fish", "completions"), 0o755) // fish makes it on first start
	store := filepath.Join(t.TempDir(), "results")
	ran := 0
	for _, ex := range examples {
		if why := readmeSkip(ex.cmd); why != "" {
			t.Logf("%s:%d skipped, %s: %s", ex.file, ex.line, why, ex.cmd)
			continue
		}
		cmd := exec.Command("bash", "-c", "set -e -o pipefail\n"+paths.Replace(ex.cmd))
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"DISKPREP_RESULTS="+store, "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
		cmd.Stdin = nil // /dev/null: no terminal to answer on
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s:%d %s: %v\n%s", ex.file, ex.line, ex.cmd, err, out)
			continue
		}
		ran++
		t.Logf("%s:%d ran: %s", ex.file, ex.line, ex.cmd)
	}
	if ran < 10 {
		t.Errorf("only %d README examples ran", ran)
	}
	// What the examples wrote is where they said.
	for _, f := range []string{"post.md", "fs.html", "throughput.svg", filepath.Join(home, ".config/fish/completions/diskprep.fish")} {
		if !filepath.IsAbs(f) {
			f = filepath.Join(work, f)
		}
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v (empty or missing)", f, err)
		}
	}
	if after, _ := os.ReadFile("/etc/fstab"); string(after) != string(fstabBefore) {
		t.Errorf("/etc/fstab changed by the README's examples")
	}
}

// The parser finds the README's commands and the skip reasons hold for the
// ones this machine cannot run; the first command of the README is one that
// runs.
func TestREADMEExamplesParsed(t *testing.T) {
	ex := readmeExamples(t, "README.md")
	if len(ex) == 0 || !strings.HasPrefix(ex[0].cmd, "diskprep fscompare --image /var/tmp/diskprep.img") || readmeSkip(ex[0].cmd) != "" {
		t.Fatalf("first example %+v", ex)
	}
	for _, e := range ex {
		if strings.Contains(e.cmd, "  #") || strings.HasPrefix(e.cmd, "sudo") {
			t.Errorf("README.md:%d not cleaned: %q", e.line, e.cmd)
		}
	}
	if readmeSkip("diskprep bench /dev/sdb --set nvme") == "" || readmeSkip("diskprep inventory -o json") != "" {
		t.Error("skip rules")
	}
}

// Issue 25 item 8: the README is a front door of at most 250 lines; every
// page of docs/ is in its "Read more" table, so none is orphaned; and every
// relative link of the README, CONTRIBUTING.md and docs/ leads to a file
// that is there.
func TestDocsIndexAndLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 250 {
		t.Errorf("README.md has %d lines: at most 250 (the rest belongs in docs/)", n)
	}
	listed := map[string]bool{}
	for _, p := range docPages(t)[1:] {
		listed[p] = true
	}
	all, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if len(all) < 10 {
		t.Fatalf("docs/ has %d pages", len(all))
	}
	for _, p := range all {
		if rel := "docs/" + filepath.Base(p); !listed[rel] {
			t.Errorf("%s is not in README.md's \"Read more\" table", rel)
		}
	}
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, page := range append([]string{"README.md", "CONTRIBUTING.md"}, docPages(t)[1:]...) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(root, filepath.Dir(page), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which is not there", page, m[1])
			}
		}
	}
}

// TestContributingPathsExist holds CONTRIBUTING.md's "Where things live"
// to the tree: every path it names (a backquoted name with a slash) is a
// file or folder there, so a move leaves no stale answer behind.
func TestContributingPathsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Where things live")
	if !ok {
		t.Fatal(`CONTRIBUTING.md has no "Where things live" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	named := regexp.MustCompile("`([a-z][\\w./-]*/[\\w./-]*)`").FindAllStringSubmatch(table, -1)
	if len(named) < 20 {
		t.Fatalf("the table names %d paths; it is missing or no longer a table", len(named))
	}
	for _, m := range named {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("CONTRIBUTING.md names %s, which is not there", m[1])
		}
	}
}
