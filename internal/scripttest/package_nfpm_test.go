package scripttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 25 item 7: package.sh on a machine without nfpm stopped at
// "nfpm not found"; it installs the pinned nfpm with go install, as
// scripts/test.sh installs its tools. A stand-in go records what it is
// asked and "installs" an nfpm that records its own call and fails, so
// nothing is built or fetched.
func TestPackageInstallsNfpm(t *testing.T) {
	dir := t.TempDir()
	bin, gopath := filepath.Join(dir, "bin"), filepath.Join(dir, "gopath")
	for _, d := range []string{bin, filepath.Join(gopath, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "log")
	fakeGo := `#!/bin/sh
echo "go $*" >>` + log + `
case "$1 $2" in
"env GOPATH") echo ` + gopath + ` ;;
"env GOARCH"|"env GOHOSTARCH") echo amd64 ;;
install*) printf '#!/bin/sh\necho "nfpm $*" >>` + log + `\nexit 1\n' >` + filepath.Join(gopath, "bin", "nfpm") + `; chmod +x ` + filepath.Join(gopath, "bin", "nfpm") + ` ;;
build*) out=; while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done; printf '#!/bin/sh\nexit 0\n' >"$out"; chmod +x "$out" ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	// A PATH with the stand-in go and the shell's tools, but no nfpm.
	path := bin + ":/usr/bin:/bin"
	for _, d := range []string{"/usr/bin", "/bin"} {
		if _, err := os.Stat(filepath.Join(d, "nfpm")); err == nil {
			t.Skipf("nfpm in %s: the test cannot hide it", d)
		}
	}
	root := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "scripts"), filepath.Join(root, "scripts"))
	r := runEnv(t, []string{"PATH=" + path, "HOME=" + dir}, root, "bash", filepath.Join(root, "scripts", "package.sh"), "deb")
	got, _ := os.ReadFile(log)
	if !strings.Contains(string(got), "go install github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2\n") {
		t.Errorf("package.sh did not install nfpm (exit %d):\n%s\n%s%s", r.code, got, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "nfpm not found") {
		t.Errorf("package.sh stopped at nfpm not found:\n%s", r.stderr)
	}
}

// copyTree copies the regular files under src to dst, keeping modes.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}
