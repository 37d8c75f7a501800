package scripttest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

const sysPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Every refusal: one line on stderr, a non-zero exit, nothing written.
func TestBootstrapRefusals(t *testing.T) {
	testenv.RequirePrivileged(t, "setpriv")
	bin := diskprepBinary(t)
	boot := script(t, "bootstrap-centos.sh")

	t.Run("not root", func(t *testing.T) {
		dir := t.TempDir()
		r := runEnv(t, baseEnv(sysPath, stateEnv(dir)...), "/",
			"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", boot, "--binary", bin)
		if r.code != 1 || !strings.Contains(r.stderr, "must run as root") {
			t.Errorf("%v", r)
		}
		oneLine(t, "stderr", r.stderr)
		assertNothingWritten(t, dir)
	})

	t.Run("no package manager", func(t *testing.T) {
		dir := t.TempDir()
		// A PATH with id and nothing else: no dnf, yum or apt-get.
		only := filepath.Join(dir, "onlyid")
		os.MkdirAll(only, 0o755)
		id, err := exec.LookPath("id")
		if err != nil {
			t.Fatal(err)
		}
		os.Symlink(id, filepath.Join(only, "id"))
		r := runEnv(t, baseEnv(only, stateEnv(dir)...), "/", "/bin/bash", boot, "--binary", bin)
		if r.code != 1 || !strings.Contains(r.stderr, "no package manager found") {
			t.Errorf("%v", r)
		}
		oneLine(t, "stderr", r.stderr)
		assertNothingWritten(t, dir)
	})

	t.Run("missing plan", func(t *testing.T) {
		dir := t.TempDir()
		r := runEnv(t, baseEnv(sysPath, stateEnv(dir)...), "/", "bash", boot, "--binary", bin, "--plan", filepath.Join(dir, "nope.yaml"))
		if r.code != 2 || !strings.Contains(r.stderr, "nope.yaml: no such file") {
			t.Errorf("%v", r)
		}
		oneLine(t, "stderr", r.stderr)
		assertNothingWritten(t, dir)
	})

	t.Run("selector matches no disk", func(t *testing.T) {
		dir := t.TempDir()
		plan := filepath.Join(dir, "plan.yaml")
		writeFile(t, plan, "version: 1\ndisks:\n  - select: {serial: NO-SUCH-SERIAL-4711}\n    partitions:\n      - {size: rest, fs: xfs, label: x, mount: \""+dir+"/mnt\", persist: true}\n", 0o644)
		r := runEnv(t, baseEnv(sysPath, stateEnv(dir)...), "/", "bash", boot, "--binary", bin, "--plan", plan, "--bench", "quick")
		// diskprep's own code for a bad plan (2) comes through.
		if r.code != 2 || !strings.Contains(r.stderr, "matches no disk") || !strings.Contains(r.stderr, "nothing was changed") {
			t.Errorf("%v", r)
		}
		oneLine(t, "stderr", r.stderr)
		// The log exists by then; nothing else does.
		for _, p := range []string{"bin/diskprep", "state/inventory.json", "state/inventory.md", "mnt", "results"} {
			if exists(filepath.Join(dir, p)) {
				t.Errorf("%s was written", p)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "log", "bootstrap.log")); !strings.Contains(string(b), "matches no disk") {
			t.Errorf("log lacks the error:\n%s", b)
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		for _, args := range [][]string{
			{"--frobnicate"},
			{"--plan"},
			{"--rpm", "a.rpm", "--binary", bin},
			{"--bench-target", "/tmp"},
			{"--bench", "quick", "--binary", bin}, // no plan, no target: nothing to benchmark
		} {
			dir := t.TempDir()
			r := runEnv(t, baseEnv(sysPath, stateEnv(dir)...), "/", append([]string{"bash", boot}, args...)...)
			if r.code != 2 {
				t.Errorf("%q: %v", args, r)
			}
			oneLine(t, strings.Join(args, " "), r.stderr)
			assertNothingWritten(t, dir)
		}
	})
}

func assertNothingWritten(t *testing.T, dir string) {
	t.Helper()
	for _, p := range []string{"state", "log", "bin", "results"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("%s was created", p)
		}
	}
}

// fakeTools writes recording stand-ins for a package manager (dnf, yum or
// apt-get), rpm, dpkg-query and dpkg-deb into a directory put first on PATH. Each call appends its argv to
// calls.log. rpm answers from the environment: FAKE_MISSING lists packages
// not installed, FAKE_INSTALLED_DISKPREP is the installed diskprep (empty:
// none), FAKE_FILE_NEVRA what the rpm file given to -qp holds.
func fakeTools(t *testing.T, pm string) (dir, calls string) {
	dir = t.TempDir()
	calls = filepath.Join(dir, "calls.log")
	rec := "#!/bin/bash\nprintf '%s\\n' \"$(basename \"$0\") $*\" >>" + calls + "\n"
	writeFile(t, filepath.Join(dir, "bin", pm), rec+"exit 0\n", 0o755)
	writeFile(t, filepath.Join(dir, "bin", "rpm"), rec+`
qf=0 file=0 pkg=
for a in "$@"; do
	case $a in
	--qf) qf=1 ;;
	-qp) file=1 ;;
	-q) ;;
	*) if [ "$qf" = 1 ]; then qf=2; else pkg=$a; fi ;;
	esac
done
if [ "$file" = 1 ]; then printf '%s' "$FAKE_FILE_NEVRA"; exit 0; fi
if [ "$pkg" = diskprep ]; then
	if [ -n "$FAKE_INSTALLED_DISKPREP" ]; then printf '%s' "$FAKE_INSTALLED_DISKPREP"; exit 0; fi
	echo "package diskprep is not installed"; exit 1
fi
for m in $FAKE_MISSING; do
	if [ "$m" = "$pkg" ]; then echo "package $pkg is not installed"; exit 1; fi
done
echo "$pkg-1.0-1.el9.x86_64"
`, 0o755)
	// The Debian side: dpkg-query answers from FAKE_MISSING and
	// FAKE_INSTALLED_DISKPREP, dpkg-deb -f gives FAKE_FILE_NEVRA.
	writeFile(t, filepath.Join(dir, "bin", "dpkg-query"), rec+`
pkg=${!#}
if [ "$pkg" = diskprep ]; then
	if [ -z "$FAKE_INSTALLED_DISKPREP" ]; then exit 1; fi
	case "$*" in *Version*) printf '%s' "$FAKE_INSTALLED_DISKPREP" ;; *) printf 'install ok installed' ;; esac
	exit 0
fi
for m in $FAKE_MISSING; do
	if [ "$m" = "$pkg" ]; then echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; fi
done
printf 'install ok installed'
`, 0o755)
	writeFile(t, filepath.Join(dir, "bin", "dpkg-deb"), rec+"printf '%s\\n' \"$FAKE_FILE_NEVRA\"\n", 0o755)
	return filepath.Join(dir, "bin"), calls
}

func pmCalls(t *testing.T, calls, pm string) []string {
	t.Helper()
	b, _ := os.ReadFile(calls)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, pm+" ") {
			out = append(out, l)
		}
	}
	return out
}

// The dnf, yum and apt-get paths, through stand-ins that record their argv: the exact
// package names and commands, and a second run that installs nothing.
func TestBootstrapPackageManagerStandIns(t *testing.T) {
	testenv.RequirePrivileged(t)
	bin := diskprepBinary(t)
	boot := script(t, "bootstrap-centos.sh")

	t.Run("dnf and a binary", func(t *testing.T) {
		fake, calls := fakeTools(t, "dnf")
		dir := t.TempDir()
		env := baseEnv(fake+":"+sysPath, append(stateEnv(dir),
			"FAKE_MISSING=xfsprogs e2fsprogs util-linux gdisk", "FAKE_INSTALLED_DISKPREP=", "FAKE_FILE_NEVRA=")...)
		r := runEnv(t, env, "/", "bash", boot, "--binary", bin)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		want := []string{"dnf install -y xfsprogs e2fsprogs util-linux gdisk"}
		if got := pmCalls(t, calls, "dnf"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("dnf calls %q, want %q", got, want)
		}
		if b, _ := os.ReadFile(calls); !strings.Contains(string(b), "rpm -q gdisk\n") {
			t.Errorf("installed packages not asked with rpm -q:\n%s", b)
		}
		if !strings.Contains(r.stdout, "no plan at") || !exists(filepath.Join(dir, "bin", "diskprep")) {
			t.Errorf("%v", r)
		}
		var inv map[string]any
		if b, err := os.ReadFile(filepath.Join(dir, "state", "inventory.json")); err != nil || json.Unmarshal(b, &inv) != nil || inv["hostname"] == nil {
			t.Errorf("inventory.json: %v %v", err, inv)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "state", "inventory.md")); err != nil || !strings.HasPrefix(string(b), "#") {
			t.Errorf("inventory.md: %v %.80q", err, b)
		}
	})

	t.Run("yum and an rpm file then nothing to do", func(t *testing.T) {
		fake, calls := fakeTools(t, "yum")
		os.Symlink(bin, filepath.Join(fake, "diskprep")) // what the rpm would install
		dir := t.TempDir()
		pkg := filepath.Join(dir, "diskprep-1.2.3-1.x86_64.rpm")
		writeFile(t, pkg, "not really an rpm", 0o644)
		nevra := "diskprep-1.2.3-1.x86_64"
		env := baseEnv(fake+":"+sysPath, append(stateEnv(dir),
			"FAKE_MISSING=gdisk", "FAKE_INSTALLED_DISKPREP=", "FAKE_FILE_NEVRA="+nevra)...)
		r := runEnv(t, env, "/", "bash", boot, "--rpm", pkg)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		want := []string{"yum install -y gdisk", "yum install -y " + pkg}
		if got := pmCalls(t, calls, "yum"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("yum calls %q, want %q", got, want)
		}
		inv1, _ := os.ReadFile(filepath.Join(dir, "state", "inventory.json"))

		// Now everything is installed: no yum at all.
		os.Remove(calls)
		env = baseEnv(fake+":"+sysPath, append(stateEnv(dir),
			"FAKE_MISSING=", "FAKE_INSTALLED_DISKPREP="+nevra, "FAKE_FILE_NEVRA="+nevra)...)
		r = runEnv(t, env, "/", "bash", boot, "--rpm", pkg)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		if got := pmCalls(t, calls, "yum"); len(got) != 0 {
			t.Errorf("second run called yum: %q", got)
		}
		inv2, _ := os.ReadFile(filepath.Join(dir, "state", "inventory.json"))
		assertNoOp(t, r, string(inv1) == string(inv2))
	})

	t.Run("apt-get and a deb file", func(t *testing.T) {
		fake, calls := fakeTools(t, "apt-get")
		os.Symlink(bin, filepath.Join(fake, "diskprep"))
		dir := t.TempDir()
		pkg := filepath.Join(dir, "diskprep_1.2.3-1_amd64.deb")
		writeFile(t, pkg, "not really a deb", 0o644)
		env := baseEnv(fake+":"+sysPath, append(stateEnv(dir),
			"FAKE_MISSING=gdisk xfsprogs", "FAKE_INSTALLED_DISKPREP=", "FAKE_FILE_NEVRA=1.2.3-1")...)
		r := runEnv(t, env, "/", "bash", boot, "--deb", pkg)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		want := []string{"apt-get update", "apt-get install -y --no-install-recommends xfsprogs gdisk", "apt-get install -y " + pkg}
		if got := pmCalls(t, calls, "apt-get"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("apt-get calls %q, want %q", got, want)
		}
		os.Remove(calls)
		env = baseEnv(fake+":"+sysPath, append(stateEnv(dir),
			"FAKE_MISSING=", "FAKE_INSTALLED_DISKPREP=1.2.3-1", "FAKE_FILE_NEVRA=1.2.3-1")...)
		if r = runEnv(t, env, "/", "bash", boot, "--deb", pkg); r.code != 0 {
			t.Fatalf("%v", r)
		}
		if got := pmCalls(t, calls, "apt-get"); len(got) != 0 {
			t.Errorf("second run called apt-get: %q", got)
		}
	})

	t.Run("deb on a dnf host", func(t *testing.T) {
		fake, _ := fakeTools(t, "dnf")
		dir := t.TempDir()
		pkg := filepath.Join(dir, "diskprep.deb")
		writeFile(t, pkg, "x", 0o644)
		r := runEnv(t, baseEnv(fake+":"+sysPath, stateEnv(dir)...), "/", "bash", boot, "--deb", pkg)
		if r.code != 2 || !strings.Contains(r.stderr, "--deb needs apt-get") {
			t.Errorf("%v", r)
		}
		oneLine(t, "stderr", r.stderr)
		assertNothingWritten(t, dir)
	})
}

// assertNoOp checks a second run's report. Its inventory may differ from
// the first run's when something else on the machine changed in between (a
// loop device of another test): then that alone may be reported.
func assertNoOp(t *testing.T, r result, inventorySame bool) {
	t.Helper()
	if inventorySame {
		if !strings.Contains(r.stdout, "bootstrap: nothing to do") {
			t.Errorf("second run is not a no-op:\n%v", r)
		}
		return
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "bootstrap: done: "); ok {
			for _, c := range strings.Split(rest, "; ") {
				if !strings.HasPrefix(c, "wrote ") || !strings.Contains(c, "/inventory.") {
					t.Errorf("second run changed %q:\n%v", c, r)
				}
			}
		}
	}
}

// With --root, the bootstrap reads another machine's facts from a fixture
// tree: the plan is checked against them, never applied, and a refusal for
// safety comes through as diskprep's exit 3.
func TestBootstrapRootFixture(t *testing.T) {
	testenv.RequirePrivileged(t)
	bin := diskprepBinary(t)
	boot := script(t, "bootstrap-centos.sh")
	fixtures := filepath.Join(repoRoot(t), "hwinfo", "testdata")

	t.Run("blank disk: checked not applied", func(t *testing.T) {
		dir := t.TempDir()
		// No --plan: the default one in the configuration directory.
		plan := filepath.Join(dir, "conf", "plan.yaml")
		writeFile(t, plan, "version: 1\ndisks:\n  - select: {serial: DATA01}\n    partitions:\n      - {size: rest, fs: xfs, label: data, mount: \""+dir+"/data\", persist: true}\n", 0o644)
		r := runEnv(t, baseEnv(sysPath, stateEnv(dir)...), "/", "bash", boot, "--binary", bin, "--root", filepath.Join(fixtures, "kvm-virtio"))
		if r.code != 0 || !strings.Contains(r.stdout, "plan "+plan+" checked against the facts under") || !strings.Contains(r.stdout, "not applied (--root)") {
			t.Fatalf("%v", r)
		}
		if exists(filepath.Join(dir, "data")) {
			t.Error("the plan's mount point was made")
		}
		var inv struct {
			Hostname string `json:"hostname"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, "state", "inventory.json"))
		if err := json.Unmarshal(b, &inv); err != nil || inv.Hostname == "" {
			t.Fatalf("inventory.json: %v %q", err, b)
		}
		want := strings.TrimSpace(testenv.MustRun(t, bin, "--root", filepath.Join(fixtures, "kvm-virtio"), "-o", "json", "inventory"))
		if strings.TrimSpace(string(b)) != want {
			t.Error("inventory.json is not the fixture's inventory")
		}
		if host, _ := os.Hostname(); inv.Hostname == host {
			t.Errorf("inventory is this machine's (%s), not the fixture's", host)
		}
	})

	t.Run("mounted disk: refused with exit 3", func(t *testing.T) {
		dir := t.TempDir()
		plan := filepath.Join(dir, "plan.yaml")
		writeFile(t, plan, "version: 1\ndisks:\n  - select: {model: TOSHIBA DT01ACA300}\n    partitions:\n      - {size: rest, fs: xfs, label: data, mount: /data}\n", 0o644)
		r := runEnv(t, baseEnv(sysPath, stateEnv(dir)...), "/", "bash", boot, "--binary", bin, "--plan", plan, "--root", filepath.Join(fixtures, "desktop-nvme-sata"))
		if r.code != 3 || !strings.Contains(r.stderr, "sda1 is mounted at /mnt") {
			t.Errorf("%v", r)
		}
		oneLine(t, "stderr", r.stderr)
		for _, p := range []string{"bin/diskprep", "state/inventory.json"} {
			if exists(filepath.Join(dir, p)) {
				t.Errorf("%s was written", p)
			}
		}
	})
}
