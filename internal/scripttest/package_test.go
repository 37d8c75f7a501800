package scripttest

import (
	"compress/gzip"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// nfpmPath finds nfpm on PATH or where `go install` puts it.
func nfpmPath() string {
	if p, err := exec.LookPath("nfpm"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "nfpm")
		if exists(p) {
			return p
		}
	}
	return ""
}

// scripts/package.sh builds both packages; each holds the binary, the man
// page, both completions, the unit, the bootstrap and the example plan, and
// declares the dependencies.
func TestPackageRpmDeb(t *testing.T) {
	if nfpmPath() == "" {
		testenv.SkipOrFail(t, "nfpm not installed (go install github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2)")
	}
	for _, p := range []string{"rpm", "dpkg-deb", "git"} {
		if _, err := exec.LookPath(p); err != nil {
			testenv.SkipOrFail(t, "%s not installed", p)
		}
	}
	root := repoRoot(t)
	r := runEnv(t, append(os.Environ(), "PATH="+os.Getenv("PATH")+":"+filepath.Dir(nfpmPath())), root, "bash", script(t, "package.sh"))
	if r.code != 0 {
		t.Fatalf("package.sh: %v", r)
	}
	debs, _ := filepath.Glob(filepath.Join(root, "dist", "diskprep_*.deb"))
	rpms, _ := filepath.Glob(filepath.Join(root, "dist", "diskprep-*.rpm"))
	if len(debs) != 1 || len(rpms) != 1 {
		t.Fatalf("dist/: debs %q rpms %q", debs, rpms)
	}
	want := []string{
		"/usr/bin/diskprep",
		"/usr/share/man/man8/diskprep.8.gz",
		"/usr/share/man/man8/diskprep-prepare.8.gz",
		"/usr/share/man/man8/diskprep-cachebench.8.gz",
		"/usr/share/bash-completion/completions/diskprep",
		"/usr/share/zsh/site-functions/_diskprep",
		"/usr/share/fish/vendor_completions.d/diskprep.fish",
		"/usr/lib/systemd/system/diskprep-firstboot.service",
		"/usr/libexec/diskprep/bootstrap-centos.sh",
		"/etc/diskprep/plan.yaml.example",
	}
	debList := testenv.MustRun(t, "dpkg-deb", "-c", debs[0])
	rpmList := testenv.MustRun(t, "rpm", "-qpl", rpms[0])
	for _, f := range want {
		if !strings.Contains(debList, " ."+f+"\n") {
			t.Errorf("deb lacks %s:\n%s", f, debList)
		}
		if !strings.Contains("\n"+rpmList, "\n"+f+"\n") {
			t.Errorf("rpm lacks %s:\n%s", f, rpmList)
		}
	}
	for _, dep := range []string{"xfsprogs", "e2fsprogs", "util-linux"} {
		if d := testenv.MustRun(t, "dpkg-deb", "-f", debs[0], "Depends"); !strings.Contains(d, dep) {
			t.Errorf("deb Depends %q lacks %s", d, dep)
		}
		if d := testenv.MustRun(t, "rpm", "-qpR", rpms[0]); !strings.Contains("\n"+d, "\n"+dep+"\n") {
			t.Errorf("rpm requires %q lacks %s", d, dep)
		}
	}
	if c := testenv.MustRun(t, "rpm", "-qpc", rpms[0]); !strings.Contains(c, "/etc/diskprep/plan.yaml.example") {
		t.Errorf("rpm config files %q", c)
	}

	// What is inside the deb: a static binary stamped with git's version, a
	// man page and completions that came from it, and the example plan.
	x := t.TempDir()
	testenv.MustRun(t, "dpkg-deb", "-x", debs[0], x)
	bin := filepath.Join(x, "usr/bin/diskprep")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the packaged binary is dynamically linked (has PT_INTERP)")
		}
	}
	f.Close()
	describe := strings.TrimSpace(testenv.MustRun(t, "git", "-C", root, "describe", "--tags", "--always"))
	if v := testenv.MustRun(t, bin, "--version"); !strings.Contains(v, describe) {
		t.Errorf("--version %q does not carry git describe %q", v, describe)
	}
	// Every page the binary makes is shipped as it makes it.
	for _, c := range []string{"", "inventory", "prepare", "release", "bench", "results", "compare", "fscompare", "cachebench", "completion"} {
		name, args := "diskprep.8.gz", []string{"man"}
		if c != "" {
			name, args = "diskprep-"+c+".8.gz", []string{"man", c}
		}
		if page := gunzip(t, filepath.Join(x, "usr/share/man/man8", name)); page != testenv.MustRun(t, bin, args...) {
			t.Errorf("packaged %s differs from `diskprep %s`", name, strings.Join(args, " "))
		}
	}
	for file, shell := range map[string]string{"usr/share/bash-completion/completions/diskprep": "bash", "usr/share/zsh/site-functions/_diskprep": "zsh", "usr/share/fish/vendor_completions.d/diskprep.fish": "fish"} {
		b, _ := os.ReadFile(filepath.Join(x, file))
		if want := testenv.MustRun(t, bin, "completion", shell); string(b) != want || len(b) == 0 {
			t.Errorf("%s differs from `diskprep completion %s`", file, shell)
		}
	}
	ex, _ := os.ReadFile(filepath.Join(x, "etc/diskprep/plan.yaml.example"))
	orig, _ := os.ReadFile(filepath.Join(root, "disk/planfile/testdata/example.yaml"))
	if len(ex) == 0 || string(ex) != string(orig) {
		t.Error("plan.yaml.example is not disk/planfile/testdata/example.yaml")
	}
	if st, err := os.Stat(filepath.Join(x, "usr/libexec/diskprep/bootstrap-centos.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("bootstrap in the package: %v %v", st, err)
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	gz, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}
