package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

// fleetStore is a directory of three hosts' records of one synchronized
// run, as the playbook fetches them, and the failures file it writes.
func fleetStore(t *testing.T) (dir, failures string) {
	t.Helper()
	dir = t.TempDir()
	off := 5012.3
	for _, r := range ct.Fleet([]ct.FleetHost{
		{Name: "node-a", Factor: 1, OffsetMS: new(0.42)},
		{Name: "node-b", Factor: 0.98, OffsetMS: &off, Late: 9 * time.Millisecond},
		{Name: "node-c", Factor: 0.1, Disk: "ST4000DM004-2CV104", Late: 30 * time.Millisecond},
	}) {
		if err := record.Save(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	failures = filepath.Join(t.TempDir(), "failed.txt")
	os.WriteFile(failures, []byte("# written by site.yml\nnode-d: prepare: refused: /dev/sdb holds an xfs filesystem\n\nnode-e: unreachable\n"), 0o644)
	return dir, failures
}

// compare --expect-hosts --failures: the fleet summary first, the
// throttled host an outlier, each failed host with its reason, and a host
// expected with no record and no reason named as such.
func TestCompareFleetFlags(t *testing.T) {
	dir, failures := fleetStore(t)
	code, out, errOut := runCLI(t, "compare", dir, "--expect-hosts", "node-a,node-b,node-c", "--expect-hosts", "node-d,node-e,node-f",
		"--failures", failures, "--results", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Fleet summary: 3 of 6 hosts measured, 3 failed; synchronized start 2026-12-03T10:00:00Z",
		"node-c: seq1m-read 52.0 MB/s (0.1×)",
		"- node-d: prepare: refused: /dev/sdb holds an xfs filesystem",
		"- node-e: unreachable",
		"- node-f: no record (expected: --expect-hosts)",
		"clock offset unknown: 1 host (node-c)",
	} {
		if !strings.Contains(oneLineText(out), want) {
			t.Errorf("compare lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "Fleet summary") > strings.Index(out, "Environment") {
		t.Error("the fleet summary is not first")
	}

	code, out, errOut = runCLI(t, "compare", dir, "--failures", failures, "-o", "json", "--results", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		By    string         `json:"by"`
		Fleet *compare.Fleet `json:"fleet"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Fleet == nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []compare.FailedHost{{Host: "node-d", Reason: "prepare: refused: /dev/sdb holds an xfs filesystem"}, {Host: "node-e", Reason: "unreachable"}}
	if doc.By != "host" || !slices.Equal(doc.Fleet.Failed, want) || len(doc.Fleet.Hosts) != 3 || doc.Fleet.Outliers[0].Host != "node-c" {
		t.Errorf("by %s, fleet %+v", doc.By, doc.Fleet)
	}
}

func TestCompareFleetFlagsBadInput(t *testing.T) {
	dir, failures := fleetStore(t)
	// A named pipe where the failures file should be: refused at once,
	// not waited on for a writer that never comes.
	fifo := filepath.Join(t.TempDir(), "failed.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--by", "label", "--expect-hosts", "node-a"}, "go with --by host, not --by label"},
		{[]string{"--failures", filepath.Join(t.TempDir(), "none.txt")}, "--failures: open"},
		{[]string{"--failures", t.TempDir()}, "not a regular file"},
		{[]string{"--failures", fifo}, "not a regular file"},
		{[]string{"--by", "fs", "--failures", failures}, "go with --by host"},
	} {
		code, out, errOut := runCLI(t, append([]string{"compare", dir, "--results", t.TempDir()}, tc.args...)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, errOut, tc.msg)
		}
	}
}

func TestParseFailures(t *testing.T) {
	got := parseFailures("node-a: bench: workload rr on /data: input/output error\n  # a comment\nnode-b\nnode-c:\n[::1]: unreachable: ssh: timeout\n")
	want := []compare.FailedHost{
		{Host: "node-a", Reason: "bench: workload rr on /data: input/output error"},
		{Host: "node-b"}, {Host: "node-c"},
		{Host: "[::1]", Reason: "unreachable: ssh: timeout"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsed %+v, want %+v", got, want)
	}
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// With --redact the failed and expected hosts are tokens too, the same a
// record of theirs gets, so they still line up with the records.
func TestCompareFleetRedacted(t *testing.T) {
	dir, failures := fleetStore(t)
	code, out, errOut := runCLI(t, "compare", dir, "--expect-hosts", "node-a,node-b,node-c,node-d,node-e,node-f", "--failures", failures,
		"--redact", "--results", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "node-") {
		t.Errorf("a hostname is shown:\n%s", out)
	}
	if !strings.Contains(out, "3 of 6 hosts measured, 3 failed") || strings.Count(out, ": unreachable") != 1 {
		t.Errorf("redacted fleet:\n%s", out)
	}
}
