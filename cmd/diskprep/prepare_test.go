package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// fakeMachine is a machine with the facts, the uid and Apply of the test.
// Apply fails the test unless allowed, so a refusal is proven to stop
// before anything is written.
func fakeMachine(t *testing.T, uid int, allowApply bool) (*machine, *[]*disk.Plan) {
	t.Helper()
	m := liveMachine()
	m.readFacts = func(context.Context, string, *env) (*hwinfo.Host, error) {
		return &hwinfo.Host{Schema: hwinfo.Schema, Disks: []hwinfo.Disk{
			{Name: "sdb", Path: "/dev/sdb", SizeBytes: 100 << 30, LogicalSectorBytes: 512, PhysicalSectorBytes: 4096,
				Model: "ST4000", Serial: "ZC1", Partitions: nil},
			{Name: "sdc", Path: "/dev/sdc", SizeBytes: 100 << 30, LogicalSectorBytes: 512, PhysicalSectorBytes: 512,
				PartitionTable: "gpt", Partitions: []hwinfo.Partition{{Name: "sdc1", Path: "/dev/sdc1", Number: 1, StartBytes: 1 << 20, SizeBytes: 1 << 30,
					FSType: "xfs", Mounts: []hwinfo.Mount{{Point: "/srv", Source: "/dev/sdc1"}}}}},
		}}, nil
	}
	m.geteuid = func() int { return uid }
	var applied []*disk.Plan
	m.apply = func(ctx context.Context, p *disk.Plan, d disk.Deps) (*disk.Result, error) {
		if !allowApply {
			t.Errorf("Apply called for %s", p.Device)
			return nil, errors.New("not allowed")
		}
		applied = append(applied, p)
		return &disk.Result{Schema: disk.ResultSchema, Device: p.Device, Changed: true}, nil
	}
	return m, &applied
}

func runArgs(args ...string) (int, string, string) { return runArgsOn(nil, args...) }

// runArgsOn runs diskprep with args on machine m, as main does.
func runArgsOn(m *machine, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runOn(context.Background(), m, append([]string{"diskprep"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestPrepareExitCodes(t *testing.T) {
	m, _ := fakeMachine(t, 0, false)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - fs: xfs\n        colour: red\n"), 0o644)
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"prepare", "/dev/sdb", "--fs", "btrfs", "--yes"}, 2, `unknown filesystem "btrfs"`},
		{[]string{"prepare", "/dev/sdb", "--yes"}, 2, "--fs is required"},
		{[]string{"prepare", "--image", dir + "/x.img", "--size", "10X", "--fs", "xfs", "--yes"}, 2, "10X"},
		{[]string{"prepare", "--image", dir + "/x.img", "--size=-1G", "--fs", "xfs", "--yes"}, 2, "-1G"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--partition-size", "lots", "--yes"}, 2, "lots"},
		{[]string{"prepare", "/dev/nonexistent-disk", "--fs", "xfs", "--yes"}, 2, "does not exist"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--fs", "xfs"}, 2, "one device"},
		{[]string{"prepare", "--plan", bad, "--yes"}, 2, "bad.yaml:6"},
		{[]string{"prepare", "--plan", bad, "--fs", "xfs"}, 2, "only --dry-run, --diff, --yes and --shrink"},
		{[]string{"prepare", "/dev/sdc", "--fs", "xfs", "--wipe", "--yes"}, 3, "sdc1 is mounted at /srv"},
		{[]string{"prepare", "/dev/sdc1", "--fs", "xfs", "--yes"}, 3, "sdc1 is a partition of sdc"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs"}, 3, "pass --yes"}, // no terminal
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--root", dir}, 2, "--dry-run"},
		{[]string{"release"}, 2, "one MOUNTPOINT"},
	}
	for _, c := range cases {
		code, _, errOut := runArgsOn(m, c.args...)
		if code != c.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", c.args, code, c.code, errOut)
		}
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], c.err) {
			t.Errorf("%q: stderr %q, want one line with %q", c.args, errOut, c.err)
		}
	}
}

func TestPrepareNeedsRoot(t *testing.T) {
	m, _ := fakeMachine(t, 1000, false)
	code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--yes")
	if code != 1 || !strings.Contains(errOut, "needs root") {
		t.Errorf("exit %d %q", code, errOut)
	}
	code, _, errOut = runArgsOn(m, "release", "/mnt")
	if code != 1 || !strings.Contains(errOut, "needs root") {
		t.Errorf("release: exit %d %q", code, errOut)
	}
	// A dry run reads facts only.
	code, out, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--label", "data", "--mount", "/data", "--persist", "--dry-run")
	if code != 0 || !strings.Contains(out, "mkfs.xfs -L data -m uuid=") || !strings.Contains(out, "mount -t xfs /dev/sdb1 /data") ||
		!strings.Contains(out, "nothing was changed") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestPrepareDryRunJSON(t *testing.T) {
	m, _ := fakeMachine(t, 1000, false)
	code, out, errOut := runArgsOn(m, "-o", "json", "prepare", "--dry-run", "/dev/sdb", "--fs", "ext4", "--mkfs-opt=-E", "--mkfs-opt", "lazy_itable_init=0,discard", "--partition-size", "10G")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	// One disk is a list of one, as several are.
	var doc preparePlanDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Schema != preparePlanSchema || len(doc.Disks) != 1 || doc.Stacks != nil || !strings.Contains(out, `"stacks": null`) {
		t.Fatalf("document %+v, want %s with one disk and stacks null:\n%s", doc, preparePlanSchema, out)
	}
	p := doc.Disks[0]
	pp := p.Partitions[0]
	if p.Schema != disk.PlanSchema || p.Device != "/dev/sdb" || pp.SizeBytes != 10<<30 || p.Table.AlignBytes != 1<<20 {
		t.Errorf("plan %+v", p)
	}
	// The UUID is made by planning: it must be a fresh random (v4) UUID,
	// the one the plan records and passes to mkfs, not whatever the output
	// happens to hold (an empty one would match itself).
	if !uuidV4.MatchString(pp.FSUUID) {
		t.Errorf("planned filesystem UUID %q is not a random UUID", pp.FSUUID)
	}
	want := []string{"mkfs.ext4", "-U", pp.FSUUID, "-E", "lazy_itable_init=0,discard", "/dev/sdb1"}
	if strings.Join(pp.Mkfs, " ") != strings.Join(want, " ") {
		t.Errorf("mkfs %q, want %q", pp.Mkfs, want)
	}
	// Another plan gets another UUID.
	_, out2, _ := runArgsOn(m, "-o", "json", "prepare", "--dry-run", "/dev/sdb", "--fs", "ext4")
	var doc2 preparePlanDoc
	if err := json.Unmarshal([]byte(out2), &doc2); err != nil || len(doc2.Disks) != 1 {
		t.Fatalf("second plan %v:\n%s", err, out2)
	}
	p2 := doc2.Disks[0]
	if len(p2.Partitions) != 1 || p2.Partitions[0].FSUUID == pp.FSUUID || !uuidV4.MatchString(p2.Partitions[0].FSUUID) {
		t.Errorf("second plan's UUID %+v, first %q", p2.Partitions, pp.FSUUID)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestPrepareConfirmation(t *testing.T) {
	for answer, wantApply := range map[string]bool{"y\n": true, "yes\n": true, "n\n": false, "\n": false, "": false} {
		m, applied := fakeMachine(t, 0, wantApply)
		var out, errb bytes.Buffer
		e := &env{Stdin: strings.NewReader(answer), Stdout: &out, Stderr: &errb, IsTerminal: true}
		err := runPrepare(context.Background(), prepareOptions{Device: "/dev/sdb", FS: "xfs"}, m, e)
		if !strings.Contains(errb.String(), "ST4000") || !strings.Contains(errb.String(), "serial: ZC1") || !strings.Contains(errb.String(), "[y/N]") {
			t.Errorf("prompt %q", errb.String())
		}
		if wantApply {
			if err != nil || len(*applied) != 1 {
				t.Errorf("answer %q: %v, %d applied", answer, err, len(*applied))
			}
		} else if !errors.Is(err, disk.ErrRefused) || exitCode(err) != exitRefused {
			t.Errorf("answer %q: %v", answer, err)
		}
	}
}

// useTempRoot is this machine with Apply's fstab and state in a temporary
// root.
func useTempRoot(t *testing.T) (string, *machine) {
	t.Helper()
	root := testenv.TempRoot(t)
	m := liveMachine()
	m.diskDeps = func(e *env) disk.Deps { return disk.Deps{Logger: e.Logger, Roots: hwinfo.Roots{Root: root}} }
	return root, m
}

func TestPrivilegedPrepareImageCLI(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "sgdisk", "findmnt")
	root, m := useTempRoot(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "a.img"), filepath.Join(dir, "m")
	t.Cleanup(func() {
		if out, _ := testenv.Run("losetup", "-j", img); strings.TrimSpace(out) != "" {
			t.Errorf("image still attached: %s", out)
			runArgsOn(m, "release", img)
		}
	})
	code, out, errOut := runArgsOn(m, "-o", "json", "prepare", "--image", img, "--size", "512M", "--fs", "ext4", "--label", "scratch", "--mount", mnt, "--persist", "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc prepareResultDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != prepareResultSchema || len(doc.Disks) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	res := doc.Disks[0]
	if !res.LoopAttached || len(res.Partitions) != 1 || res.Partitions[0].UUID == "" || res.Partitions[0].MkfsVersion == "" {
		t.Fatalf("result %+v", res)
	}
	if got := strings.TrimSpace(testenv.MustRun(t, "findmnt", "-n", "-o", "SOURCE", mnt)); got != res.Partitions[0].Device {
		t.Errorf("findmnt %q", got)
	}
	code, out, errOut = runArgsOn(m, "prepare", "--image", img, "--size", "512M", "--fs", "ext4", "--label", "scratch", "--mount", mnt, "--persist")
	if code != 0 || !strings.Contains(out, "already prepared as asked") {
		t.Errorf("second run: exit %d\n%s%s", code, out, errOut)
	}
	// Asked differently: refused, nothing touched.
	code, _, errOut = runArgsOn(m, "prepare", "--image", img, "--size", "512M", "--fs", "xfs", "--mount", mnt, "--yes")
	if code != 3 {
		t.Errorf("different fs: exit %d %s", code, errOut)
	}
	code, out, errOut = runArgsOn(m, "release", mnt)
	if code != 0 || !strings.Contains(out, "detached "+res.Device) || !strings.Contains(out, "image kept at "+img) {
		t.Errorf("release: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/fstab")); strings.Contains(string(b), res.Partitions[0].UUID) {
		t.Errorf("fstab keeps the line:\n%s", b)
	}
	if code, _, errOut = runArgsOn(m, "release", img, "--remove-image"); code != 0 {
		t.Errorf("remove image: %d %s", code, errOut)
	}
	if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image left: %v", err)
	}
}

func TestPrivilegedPreparePlanTwoDisks(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "sgdisk", "blkid")
	_, m := useTempRoot(t)
	a := testenv.NewLoop(t, 1<<30, testenv.LoopOptions{})
	b := testenv.NewLoop(t, 1<<30, testenv.LoopOptions{SectorSize: 4096})
	dir := t.TempDir()
	for _, l := range []*testenv.Loop{a, b} {
		dev := l.Dev
		t.Cleanup(func() { testenv.UnmountAll(t, dev); dropKernelPartitions(t, dev) })
	}
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
disks:
  - select: {path: `+a.Dev+`}
    partitions:
      - {size: 400M, fs: xfs, label: logs, mount: `+dir+`/logs}
      - {size: rest, fs: ext4, label: data, mount: `+dir+`/data, options: noatime}
  - select: {path: `+b.Dev+`}
    partitions:
      - {size: rest, fs: xfs, label: scratch}
`), 0o644)
	code, out, errOut := runArgsOn(m, "prepare", "--plan", plan, "--dry-run")
	if code != 0 || strings.Count(out, "Plan for ") != 2 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	// --diff reads only: every disk's bytes are the same after it.
	sums := func() string { return deviceWrites(t, a.Dev) + "; " + deviceWrites(t, b.Dev) }
	sum := sums()
	code, out, errOut = runArgsOn(m, "prepare", "--plan", plan, "--diff")
	if code != 1 || strings.Count(out, "create  partition") != 3 || !strings.Contains(out, "10 to create, 0 to change, 0 to destroy, 0 kept") {
		t.Errorf("diff before: exit %d, want 1 and 3 partitions made\n%s%s", code, out, errOut)
	}
	if sums() != sum {
		t.Fatal("prepare --diff changed a disk")
	}
	code, out, errOut = runArgsOn(m, "-o", "json", "prepare", "--plan", plan, "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc prepareResultDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != prepareResultSchema || len(doc.Disks) != 2 {
		t.Fatalf("%v\n%s", err, out)
	}
	results := doc.Disks
	for _, dev := range []string{a.Dev, b.Dev} {
		if v := testenv.MustRun(t, "sgdisk", "-v", dev); !strings.Contains(v, "No problems found") {
			t.Errorf("sgdisk -v %s:\n%s", dev, v)
		}
	}
	want := map[string]string{results[0].Partitions[0].Device: "xfs", results[0].Partitions[1].Device: "ext4", results[1].Partitions[0].Device: "xfs"}
	for dev, fs := range want {
		if got, _ := testenv.Run("blkid", "-p", "-s", "TYPE", "-o", "value", dev); strings.TrimSpace(got) != fs {
			t.Errorf("%s: TYPE %q, want %s", dev, got, fs)
		}
	}
	// The plan again: nothing to do.
	code, out, errOut = runArgsOn(m, "prepare", "--plan", plan, "--yes")
	if code != 0 || strings.Count(out, "already prepared as asked") != 2 {
		t.Errorf("second run: exit %d\n%s%s", code, out, errOut)
	}
	// The first disk's file systems are mounted now and write on their
	// own (journal commits); the second's is not mounted.
	sum = deviceWrites(t, b.Dev)
	code, out, errOut = runArgsOn(m, "prepare", "--plan", plan, "--diff")
	if code != 0 || strings.Contains(out, "create") || !strings.Contains(out, "no change: 10 layers already as planned") {
		t.Errorf("diff after: exit %d, want 0 and nothing made\n%s%s", code, out, errOut)
	}
	// The plan changed: the second disk's xfs becomes ext4, which the
	// guard refuses without wipe; the diff names what a wipe destroys.
	changed := filepath.Join(dir, "changed.yaml")
	old, _ := os.ReadFile(plan)
	os.WriteFile(changed, []byte(strings.Replace(string(old), "fs: xfs, label: scratch", "fs: ext4, label: scratch", 1)), 0o644)
	code, out, errOut = runArgsOn(m, "prepare", "--plan", changed, "--diff")
	if code != 3 || !strings.Contains(out, "destroy  partition   "+b.Dev+"p1") || !strings.Contains(out, `xfs label "scratch"`) ||
		!regexp.MustCompile(`[0-9.]+ [KMGT]iB used, on `+b.Dev).MatchString(out) {
		t.Errorf("diff of a changed plan: exit %d, want 3 and the xfs destroyed\n%s%s", code, out, errOut)
	}
	if deviceWrites(t, b.Dev) != sum {
		t.Fatal("prepare --diff wrote to the disk whose plan changed")
	}
}

// dropKernelPartitions removes BLKPG partitions before testenv detaches the
// loop device, which would otherwise keep them.
func dropKernelPartitions(t *testing.T, dev string) {
	entries, _ := filepath.Glob(filepath.Join("/sys/block", filepath.Base(dev), filepath.Base(dev)+"p*"))
	for _, e := range entries {
		n := strings.TrimPrefix(filepath.Base(e), filepath.Base(dev)+"p")
		testenv.Run("partx", "-d", "--nr", n, dev)
	}
}

// Bad input is a usage error even for a user who could not run prepare.
func TestPrepareBadInputBeforeRoot(t *testing.T) {
	m, _ := fakeMachine(t, 1000, false)
	for _, args := range [][]string{
		{"prepare", "/dev/sdb", "--fs", "zfs"},
		{"prepare", "--image", "/tmp/x.img", "--size", "10X", "--fs", "xfs"},
		{"prepare", "/dev/sdb", "--fs", "xfs", "--label", "much-too-long-for-xfs"},
		{"prepare", "/dev/sdb", "--fs", "xfs", "--persist"},
	} {
		if code, _, errOut := runArgsOn(m, args...); code != 2 {
			t.Errorf("%q: exit %d %q", args, code, errOut)
		}
	}
}
