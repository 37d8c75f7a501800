package scripttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// The bootstrap on this (Debian) machine through its apt path, with a plan
// that picks a loop device by path, twice: the first run prepares, persists,
// inventories and baselines; the second changes nothing.
//
// /etc/fstab must not be the real one, and `diskprep prepare` has no way to
// write another when it applies a plan (--root is for --dry-run only). So
// both runs happen in a private mount namespace where a copy of /etc is
// bind-mounted over /etc: diskprep writes the copy's fstab through its
// usual temp-file-and-rename, and the mount it makes vanishes with the
// namespace.
func TestPrivilegedBootstrapAptLoopDevice(t *testing.T) {
	testenv.RequirePrivileged(t, "unshare", "mkfs.xfs", "blkid", "partx", "dpkg-query", "apt-get")
	bin := diskprepBinary(t)
	boot := script(t, "bootstrap-centos.sh")
	loop := testenv.NewLoop(t, 1<<30, testenv.LoopOptions{})
	t.Cleanup(func() { dropKernelPartitions(t, loop.Dev) })
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	plan := filepath.Join(dir, "plan.yaml")
	writeFile(t, plan, `version: 1
disks:
  - select: {path: `+loop.Dev+`}
    partitions:
      - {size: rest, fs: xfs, label: boot-test, mount: "`+mnt+`", options: noatime, persist: true}
`, 0o644)
	testenv.MustRun(t, "cp", "-a", "/etc", filepath.Join(dir, "etc"))
	fstab := filepath.Join(dir, "etc", "fstab")
	before, _ := os.ReadFile(fstab)
	realBefore, err := os.ReadFile("/etc/fstab")
	if err != nil {
		t.Fatal(err)
	}

	driver := filepath.Join(dir, "driver.sh")
	writeFile(t, driver, `set -u
mount --bind "$T/etc" /etc || exit 97
for i in 1 2; do
	bash "$BOOT" --binary "$BIN" --plan "$T/plan.yaml" --bench quick >"$T/out$i" 2>"$T/err$i"
	echo $? >"$T/rc$i"
	cp "$T/state/inventory.json" "$T/inventory$i.json" 2>/dev/null
	cp /etc/fstab "$T/fstab$i"
	findmnt -n -o SOURCE,FSTYPE,OPTIONS --mountpoint "$T/mnt" >"$T/findmnt$i"
done
`, 0o644)
	env := baseEnv(sysPath, append(stateEnv(dir), "T="+dir, "BOOT="+boot, "BIN="+bin)...)
	if r := runEnv(t, env, "/", "unshare", "--mount", "--propagation", "private", "bash", driver); r.code != 0 {
		t.Fatalf("driver: %v", r)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	run := func(i string) result {
		code := strings.TrimSpace(read("rc" + i))
		r := result{stdout: read("out" + i), stderr: read("err" + i)}
		if code != "0" {
			r.code = 1
			t.Fatalf("run %s: exit %s\n%v\nlog:\n%s", i, code, r, read("log/bootstrap.log"))
		}
		return r
	}
	first, second := run("1"), run("2")

	// First run: the disk is prepared as planned and persisted.
	part := loop.Dev + "p1"
	if got := strings.TrimSpace(testenv.MustRun(t, "blkid", "-p", "-s", "TYPE", "-o", "value", part)); got != "xfs" {
		t.Errorf("%s: TYPE %q, want xfs", part, got)
	}
	uuid := strings.TrimSpace(testenv.MustRun(t, "blkid", "-p", "-s", "UUID", "-o", "value", part))
	if f := strings.Fields(read("findmnt1")); len(f) < 3 || f[0] != part || f[1] != "xfs" || !strings.Contains(f[2], "noatime") {
		t.Errorf("mounted after run 1: %q", f)
	}
	var fstabLines []string
	for _, l := range strings.Split(read("fstab1"), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && f[1] == mnt {
			fstabLines = append(fstabLines, l)
			if f[0] != "UUID="+uuid || f[2] != "xfs" || !strings.Contains(f[3], "nofail") || !strings.Contains(f[3], "noatime") {
				t.Errorf("fstab line %q (filesystem UUID %s)", l, uuid)
			}
		}
	}
	if len(fstabLines) != 1 {
		t.Errorf("fstab has %d lines for %s:\n%s", len(fstabLines), mnt, read("fstab1"))
	}
	if now, _ := os.ReadFile("/etc/fstab"); string(now) != string(realBefore) {
		t.Errorf("the real /etc/fstab changed:\n%s", now)
	}
	if !strings.HasPrefix(read("fstab1"), string(before)) {
		t.Errorf("fstab lost its previous lines:\n%s", read("fstab1"))
	}
	if !strings.Contains(first.stdout, "Prepared "+loop.Dev) || !strings.Contains(first.stdout, "bootstrap: done:") {
		t.Errorf("run 1 report:\n%v", first)
	}
	var inv struct {
		Disks []struct {
			Name string `json:"name"`
		} `json:"disks"`
	}
	if err := json.Unmarshal([]byte(read("inventory1.json")), &inv); err != nil {
		t.Errorf("inventory.json: %v", err)
	}
	if !strings.Contains(read("state/inventory.md"), filepath.Base(loop.Dev)) {
		t.Errorf("inventory.md does not list %s", loop.Dev)
	}
	// The baseline: one record, of the plan's mount point, kept by id.
	ids := strings.Split(strings.TrimSpace(read("state/baseline-quick.ids")), "\n")
	if len(ids) != 1 || !strings.HasPrefix(ids[0], mnt+"\t") {
		t.Fatalf("baseline ids %q", ids)
	}
	var rec struct {
		Label  string `json:"label"`
		Set    string `json:"set"`
		Target struct {
			FSType     string `json:"fs_type"`
			MountPoint string `json:"mount_point"`
		} `json:"target"`
	}
	id := strings.TrimPrefix(ids[0], mnt+"\t")
	if err := json.Unmarshal([]byte(read("results/"+id+".json")), &rec); err != nil {
		t.Fatalf("record %s: %v", id, err)
	}
	if rec.Set != "quick" || rec.Label != "baseline-quick" || rec.Target.FSType != "xfs" || rec.Target.MountPoint != mnt {
		t.Errorf("record %+v", rec)
	}

	// Second run: nothing changed, nothing benchmarked again.
	if read("fstab2") != read("fstab1") {
		t.Errorf("fstab changed on run 2:\n%s", read("fstab2"))
	}
	if strings.Contains(second.stdout, "benchmarking") || !strings.Contains(second.stdout, "disks: already prepared") {
		t.Errorf("run 2 report:\n%v", second)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "results")); len(entries) != 1 {
		t.Errorf("results after run 2: %d records", len(entries))
	}
	assertNoOp(t, second, read("inventory1.json") == read("inventory2.json"))
	if !strings.Contains(read("log/bootstrap.log"), "prepare --plan "+plan+" --dry-run") {
		t.Errorf("log lacks the dry run:\n%s", read("log/bootstrap.log"))
	}
}

// dropKernelPartitions removes partitions added with BLKPG before testenv
// detaches the loop device, which would otherwise keep them.
func dropKernelPartitions(t *testing.T, dev string) {
	entries, _ := filepath.Glob(filepath.Join("/sys/block", filepath.Base(dev), filepath.Base(dev)+"p*"))
	for _, e := range entries {
		n := strings.TrimPrefix(filepath.Base(e), filepath.Base(dev)+"p")
		testenv.Run("partx", "-d", "--nr", n, dev)
	}
}

// A plan whose second disk matches nothing stops before the first disk is
// touched: the check comes before any write.
func TestPrivilegedBootstrapPlanAllOrNothing(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs")
	bin := diskprepBinary(t)
	loop := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	writeFile(t, plan, `version: 1
disks:
  - select: {path: `+loop.Dev+`}
    partitions:
      - {size: rest, fs: xfs, label: first, mount: "`+dir+`/first", persist: true}
  - select: {serial: NO-SUCH-SERIAL-0815}
    partitions:
      - {size: rest, fs: xfs, label: second}
`, 0o644)
	before := deviceHash(t, loop.Dev)
	r := runEnv(t, baseEnv(sysPath, stateEnv(dir)...), "/", "bash", script(t, "bootstrap-centos.sh"), "--binary", bin, "--plan", plan)
	if r.code != 2 || !strings.Contains(r.stderr, "matches no disk") {
		t.Errorf("%v", r)
	}
	oneLine(t, "stderr", r.stderr)
	if after := deviceHash(t, loop.Dev); after != before {
		t.Errorf("%s changed although the plan was refused", loop.Dev)
	}
	if exists(filepath.Join(dir, "first")) {
		t.Error("the first disk's mount point was made")
	}
}

func deviceHash(t *testing.T, dev string) string {
	t.Helper()
	return strings.Fields(testenv.MustRun(t, "sha256sum", dev))[0]
}
