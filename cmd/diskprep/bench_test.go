package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
	"golang.org/x/sys/unix"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"diskprep"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

func TestBenchBadInput(t *testing.T) {
	target, results := t.TempDir(), filepath.Join(t.TempDir(), "results")
	file := filepath.Join(t.TempDir(), "small.img")
	os.WriteFile(file, make([]byte, 4096), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no target", []string{"bench"}, 2, "a TARGET"},
		{"one target twice", []string{"bench", target, target}, 2, "a label of its own"},
		{"labels short", []string{"bench", target, file, "--label", "a"}, 2, "names 1 labels for 2 targets"},
		{"targets repeat auto", []string{"bench", target, file, "--label", "a,b", "--repeat", "auto"}, 2, "not auto"},
		{"missing target", []string{"bench", filepath.Join(target, "nope")}, 2, "does not exist"},
		{"unknown set", []string{"bench", target, "--set", "turbo"}, 2, `unknown workload set "turbo"`},
		{"unknown key", []string{"bench", target, "--workload", "rw=read,colour=blue"}, 2, `unknown key "colour"`},
		{"set and workload", []string{"bench", target, "--set", "quick", "--workload", "rw=read"}, 2, "not both"},
		{"bad size", []string{"bench", target, "--size", "2X"}, 2, "--size"},
		{"bad runtime", []string{"bench", target, "--runtime", "soon"}, 2, "--runtime"},
		{"bs unaligned", []string{"bench", target, "--bs", "1000"}, 2, "multiple of 512"},
		{"size below bs", []string{"bench", target, "--workload", "bs=1M,size=4k"}, 2, "smaller than bs"},
		{"jobs range", []string{"bench", target, "--jobs", "100000"}, 2, "out of range"},
		{"iodepth negative", []string{"bench", target, "--iodepth", "-1"}, 2, "at least 1"},
		{"repeat zero", []string{"bench", target, "--repeat", "0"}, 2, "--repeat"},
		{"engine", []string{"bench", target, "--engine", "libaio"}, 2, "engine"},
		{"format", []string{"bench", target, "-o", "csv"}, 2, "unknown output format"},
		{"file too small", []string{"bench", file, "--size", "1M"}, 2, "file"},
		{"no space", []string{"bench", target, "--size", "1P"}, 1, "not enough free space"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(tc.args, "--results", results)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "diskprep: ") || !strings.Contains(stderr, tc.msg) {
				t.Errorf("stderr %q, want one line mentioning %q", stderr, tc.msg)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if left := append(entries(t, target), entries(t, results)...); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// Two targets are benchmarked in rounds, in turn, the first rotating:
// one record each, its runs' starts alternating with the other's, and
// their comparison by label on stdout.
func TestBenchInterleaved(t *testing.T) {
	a, b, results := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runCLI(t, "bench", a, b, "--label", "a,b", "--repeat", "4",
		"--workload", "name=rr,rw=randread,bs=4k,size=4M,runtime=100ms", "--results", results)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Comparison of a vs b, by label") || strings.Count(stderr, "bench: round ") != 8 || !strings.Contains(stderr, "(4 rounds, interleaved)") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	listed, _, err := record.List(results)
	if err != nil || len(listed) != 2 {
		t.Fatalf("store: %d records, %v", len(listed), err)
	}
	var recs []*record.Record
	for _, e := range listed {
		recs = append(recs, e.Record)
	}
	type run struct {
		label string
		at    time.Time
	}
	var runs []run
	for _, r := range recs {
		if r.Order != record.OrderInterleaved || r.Repeat != 4 || len(r.Workloads) != 1 || len(r.Workloads[0].Runs) != 4 {
			t.Fatalf("record %s: order %q repeat %d", r.ID, r.Order, r.Repeat)
		}
		for _, x := range r.Workloads[0].Runs {
			runs = append(runs, run{r.Label, x.Start})
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].at.Before(runs[j].at) })
	var order string
	for _, r := range runs {
		order += r.label
	}
	if order != "abbaabba" {
		t.Errorf("runs took the order %s, want abbaabba", order)
	}
	for _, d := range []string{a, b} {
		if left := entries(t, d); len(left) != 0 {
			t.Errorf("left in %s: %v", d, left)
		}
	}
}

func TestBenchHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, "bench", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range append(workload.SetNames(), "--workload", "--allow-device-write", "--keep-partial", "Examples:", "10^6") {
		if !strings.Contains(stdout, s) {
			t.Errorf("help lacks %q", s)
		}
	}
}

func TestPrivilegedBenchCLI(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mount", "umount")
	loop := testenv.NewLoop(t, 512<<20, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.xfs", "-f", "-q", loop.Dev)
	mnt := testenv.Mount(t, loop.Dev)
	results := t.TempDir()

	// Flags on both sides of the target, global ones too.
	code, stdout, stderr := runCLI(t, "-o", "json", "bench", "--set", "quick", mnt, "--runtime", "1s", "--size", "32M", "--label", "xfs", "--results", results, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rec record.Record
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatalf("stdout is not a record: %v\n%s", err, stdout)
	}
	if rec.Schema != record.Schema || rec.Label != "xfs" || rec.Target.FSType != "xfs" || rec.Host.Hostname == "" || rec.ToolVersion == "" {
		t.Errorf("record %+v", rec)
	}
	saved := entries(t, results)
	if len(saved) != 1 || saved[0] != rec.ID+".json" {
		t.Errorf("store %v, want %s.json", saved, rec.ID)
	}
	if left := entries(t, mnt); len(left) != 0 {
		t.Errorf("mount keeps %v", left)
	}

	// --hostname records an alias (fleets of VMs, Ansible aliases) and says so.
	code, stdout, stderr = runCLI(t, "bench", mnt, "--workload", "rw=read,size=8M,runtime=1s", "--hostname", "node-a", "--results", results, "-o", "json", "-q")
	var aliased record.Record
	if err := json.Unmarshal([]byte(stdout), &aliased); code != 0 || err != nil {
		t.Fatalf("--hostname: exit %d %v %s", code, err, stderr)
	}
	if aliased.Host.Hostname != "node-a" || !strings.Contains(strings.Join(aliased.Host.Warnings, "\n"), `recorded as "node-a"`) {
		t.Errorf("--hostname: host %q warnings %q", aliased.Host.Hostname, aliased.Host.Warnings)
	}
	os.Remove(filepath.Join(results, aliased.ID+".json"))

	// The table names its units.
	code, stdout, stderr = runCLI(t, "bench", mnt, "--workload", "name=rr,rw=randread,bs=4k,size=16M,runtime=1s", "--results", results)
	if code != 0 || !strings.Contains(stdout, "10^6 bytes/s") || !strings.Contains(stdout, "\nrr ") || !strings.Contains(stderr, "saved ") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}

	// A block device is not written without the flag: exit 3, bytes unchanged.
	raw := testenv.NewLoop(t, 16<<20, testenv.LoopOptions{})
	before := fileSum(t, raw.Image)
	code, _, stderr = runCLI(t, "bench", raw.Dev, "--workload", "rw=write,size=1M,runtime=1s", "--results", results)
	if code != 3 || !strings.Contains(stderr, "--allow-device-write") {
		t.Errorf("device write: exit %d %q", code, stderr)
	}
	if fileSum(t, raw.Image) != before {
		t.Error("device bytes changed")
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A raw write to a block device holding something (here an ext4 its user
// made) is shown and asked about on a terminal, and refused without one
// unless --yes, with the device's bytes as they were; a blank device, or
// --yes, is written without a question. Interleaved targets are looked
// at before the first round.
func TestPrivilegedBenchDeviceWriteGuard(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4")
	results := filepath.Join(t.TempDir(), "results")
	write := []string{"--workload", "rw=write,size=1M,runtime=0", "--allow-device-write", "--results", results, "-q"}
	blank := testenv.NewLoop(t, 16<<20, testenv.LoopOptions{})
	if code, _, stderr := runCLI(t, append([]string{"bench", blank.Dev}, write...)...); code != 0 {
		t.Fatalf("a blank device: exit %d %s", code, stderr)
	}

	used := testenv.NewLoop(t, 16<<20, testenv.LoopOptions{})
	if out, err := testenv.Run("mkfs.ext4", "-q", "-F", "-L", "keep", used.Dev); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	before := fileSum(t, used.Image)
	for _, args := range [][]string{{"bench", used.Dev}, {"bench", blank.Dev, used.Dev, "--label", "a,b"}} {
		code, _, stderr := runCLI(t, append(args, write...)...)
		if code != 3 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "refusing to write to "+used.Dev) ||
			!strings.Contains(stderr, `ext4 label "keep"`) || !strings.Contains(stderr, "pass --yes") {
			t.Errorf("%v, no terminal: exit %d %q", args, code, stderr)
		}
	}
	req := workload.Request{Target: used.Dev, Specs: []string{"rw=write,size=1M,runtime=0"}, AllowDeviceWrite: true}
	for answer, want := range map[string]bool{"n\n": false, "": false, "y\n": true} {
		var errb bytes.Buffer
		// While the question waits, the device is claimed: another
		// diskprep's claim and the kernel's exclusive open (mkfs, mount,
		// a stack) are refused.
		var during []error
		asked := &askedReader{answer: strings.NewReader(answer), first: func() {
			_, lerr := bench.ClaimDevice(hwinfo.Roots{}, used.Dev)
			f, xerr := os.OpenFile(used.Dev, os.O_RDONLY|unix.O_EXCL, 0)
			if xerr == nil {
				f.Close()
			}
			during = []error{lerr, xerr}
		}}
		e := &env{Stdin: asked, Stdout: io.Discard, Stderr: &errb, IsTerminal: true}
		host, err := benchHost(context.Background(), e, "")
		if err != nil {
			t.Fatal(err)
		}
		claims, err := guardDeviceWrites(context.Background(), []workload.Request{req}, host, false, liveMachine(), e)
		releaseClaims(claims)
		if !strings.Contains(errb.String(), "About to write to "+used.Dev) || !strings.Contains(errb.String(), `ext4 label "keep"`) {
			t.Errorf("answer %q: prompt %q", answer, errb.String())
		}
		if want != (err == nil) || (!want && exitCode(err) != exitRefused) {
			t.Errorf("answer %q: %v", answer, err)
		}
		if len(during) != 2 || !errors.Is(during[0], bench.ErrRefused) || !errors.Is(during[1], unix.EBUSY) {
			t.Errorf("answer %q: while asked, another claim and an exclusive open got %v, want both refused", answer, during)
		}
		if c, err := bench.ClaimDevice(hwinfo.Roots{}, used.Dev); err != nil {
			t.Errorf("answer %q: the device is still claimed after the question: %v", answer, err)
		} else {
			c.Release()
		}
	}
	if fileSum(t, used.Image) != before {
		t.Fatal("the refused runs changed the device's bytes")
	}
	// Mounted: the claim is refused, naming the mount, as the run's own
	// checks would, not only the kernel's busy.
	mnt := t.TempDir()
	if out, err := testenv.Run("mount", used.Dev, mnt); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	code, _, stderr := runCLI(t, append([]string{"bench", used.Dev, "--yes"}, write...)...)
	if out, err := testenv.Run("umount", mnt); err != nil {
		t.Fatalf("umount: %v %s", err, out)
	}
	before = fileSum(t, used.Image) // the mount wrote its superblock
	if code != exitRefused || !strings.Contains(stderr, used.Dev+" is mounted on "+mnt) {
		t.Errorf("mounted, --yes: exit %d %q, want a refusal naming the mount", code, stderr)
	}
	if code, _, stderr := runCLI(t, append([]string{"bench", used.Dev, "--yes"}, write...)...); code != 0 {
		t.Errorf("--yes: exit %d %s", code, stderr)
	}
	if fileSum(t, used.Image) == before {
		t.Error("--yes wrote nothing")
	}
}

// askedReader answers a question with answer, calling first before the
// first byte is read: while the question waits.
type askedReader struct {
	first  func()
	answer *strings.Reader
}

func (a *askedReader) Read(p []byte) (int, error) {
	if a.first != nil {
		a.first()
		a.first = nil
	}
	return a.answer.Read(p)
}
