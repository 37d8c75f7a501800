package scripttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// Every script of the bootstrap, packaging and fleet, and the shell inside
// the kickstart's %post, passes shellcheck.
func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		// Installable everywhere (scripts/test.sh does it): under
		// DISKPREP_REQUIRE_PRIVILEGED=1 a missing one fails.
		testenv.SkipOrFail(t, "shellcheck not installed (scripts/test.sh installs it)")
	}
	root := repoRoot(t)
	files := []string{
		"scripts/bootstrap-centos.sh",
		"scripts/package.sh",
		"scripts/packaging/postinstall.sh",
	}
	more, _ := filepath.Glob(filepath.Join(root, "scripts/ansible/*.sh"))
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		files = append(files, rel)
	}
	ks, err := os.ReadFile(filepath.Join(root, "scripts/kickstart/diskprep.ks"))
	if err != nil {
		t.Fatal(err)
	}
	var post []string
	in := false
	for _, l := range strings.Split(string(ks), "\n") {
		switch {
		case strings.HasPrefix(l, "%post"):
			in = true
		case strings.HasPrefix(l, "%end"):
			in = false
		case in:
			post = append(post, l)
		}
	}
	if len(post) == 0 {
		t.Fatal("diskprep.ks has no post-install section")
	}
	postFile := filepath.Join(t.TempDir(), "diskprep-ks-post.sh")
	writeFile(t, postFile, "#!/bin/bash\n"+strings.Join(post, "\n")+"\n", 0o644)
	args := append([]string{"-x"}, files...)
	args = append(args, postFile)
	cmd := exec.Command("shellcheck", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// The unit the kickstart enables is the one the packages ship, and it runs
// the bootstrap where the packages put it, once.
func TestFirstbootUnitMatchesPackage(t *testing.T) {
	root := repoRoot(t)
	unit, err := os.ReadFile(filepath.Join(root, "scripts/systemd/diskprep-firstboot.service"))
	if err != nil {
		t.Fatal(err)
	}
	nfpm, _ := os.ReadFile(filepath.Join(root, "scripts/nfpm.yaml"))
	ks, _ := os.ReadFile(filepath.Join(root, "scripts/kickstart/diskprep.ks"))
	for _, want := range []string{
		"ConditionPathExists=!/var/lib/diskprep/firstboot.done",
		"Type=oneshot",
		"ExecStart=/usr/libexec/diskprep/bootstrap-centos.sh ",
		"ExecStartPost=/bin/touch /var/lib/diskprep/firstboot.done",
		"WantedBy=multi-user.target",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	for _, want := range []string{"dst: /usr/libexec/diskprep/bootstrap-centos.sh", "dst: /usr/lib/systemd/system/diskprep-firstboot.service"} {
		if !strings.Contains(string(nfpm), want) {
			t.Errorf("nfpm.yaml lacks %q", want)
		}
	}
	if !strings.Contains(string(ks), "systemctl enable diskprep-firstboot.service") {
		t.Error("diskprep.ks does not enable diskprep-firstboot.service")
	}
	if p, err := exec.LookPath("systemd-analyze"); err == nil {
		// Only the missing executable (not installed here) may be reported.
		out, _ := exec.Command(p, "verify", filepath.Join(root, "scripts/systemd/diskprep-firstboot.service")).CombinedOutput()
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" && !strings.Contains(l, "/usr/libexec/diskprep/bootstrap-centos.sh") && !strings.Contains(l, "man diskprep(8)") {
				t.Errorf("systemd-analyze verify: %s", l)
			}
		}
	}
}
