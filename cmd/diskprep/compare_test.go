package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/diskprep/diskprep/bench/compare"
	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

func TestCompareStore(t *testing.T) {
	e, out, errb := resultsEnv(t, "")
	storeQuick(t, e.ResultsDir)
	os.WriteFile(filepath.Join(e.ResultsDir, "half-written.json"), []byte(`{"schema":"diskprep/result/v1","id":`), 0o644)
	if err := runCompare(context.Background(), compareOptions{}, e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Comparison of xfs vs ext4, by label", "ext4 vs xfs", "-10.0% worse", "Mann–Whitney", "seq1m-read"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errb.String(), "half-written.json") {
		t.Errorf("corrupt record not named in warnings: %q", errb)
	}

	// Filters: only ext4 left, one group, still a table with a warning.
	out.Reset()
	if err := runCompare(context.Background(), compareOptions{Filter: recordFilter{FS: "ext4"}, By: "fs"}, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nothing to compare against") {
		t.Errorf("single group not explained:\n%s", out)
	}
	err := runCompare(context.Background(), compareOptions{Filter: recordFilter{Label: "btrfs"}}, e)
	if !errors.Is(err, compare.ErrNothing) || exitCode(err) != exitFailure || !strings.Contains(err.Error(), "match the filters") {
		t.Errorf("no match: %v", err)
	}
}

func TestCompareSourcesAndFormats(t *testing.T) {
	e, out, _ := resultsEnv(t, "")
	xfs, _ := storeQuick(t, e.ResultsDir)
	// A directory copied from another host, and a single record file.
	other := t.TempDir()
	vm := ct.Quick(ct.ID(30), "vm", "xfs", 0.5, 5, resultsT0.Add(3*time.Hour))
	vm.Host.Hostname = "esx-guest"
	vm.Host.Kernel = "4.18.0-553.el8_10.x86_64"
	if err := record.Save(other, vm); err != nil {
		t.Fatal(err)
	}
	srcs := []string{xfs.ID, other}
	out.Reset()
	e.Format = "json"
	if err := runCompare(context.Background(), compareOptions{Sources: srcs, By: "host", Latency: true}, e); err != nil {
		t.Fatal(err)
	}
	var c compare.Comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if c.By != "host" || len(c.Groups) != 2 || c.Groups[1].Name != "esx-guest" || len(c.Metrics) != 3 {
		t.Errorf("json comparison: by %s groups %+v metrics %v", c.By, c.Groups, c.Metrics)
	}
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "Kernel") {
		t.Errorf("kernel difference not warned: %q", c.Warnings)
	}

	// --output picks the format from the extension; the file is complete.
	e.Format = ""
	html := filepath.Join(t.TempDir(), "report.html")
	if err := runCompare(context.Background(), compareOptions{Output: html}, e); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(html)
	if err != nil || !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.HasSuffix(string(b), "</html>\n") {
		t.Errorf("html report: %v %.60q", err, b)
	}
	for _, f := range []string{"markdown", "csv", "svg"} {
		out.Reset()
		e.Format = f
		if err := runCompare(context.Background(), compareOptions{}, e); err != nil || out.Len() == 0 {
			t.Errorf("-o %s: %v, %d bytes", f, err, out.Len())
		}
	}
	e.Format = "pdf"
	if err := runCompare(context.Background(), compareOptions{}, e); exitCode(err) != exitUsage {
		t.Errorf("-o pdf: %v", err)
	}
}

func TestCompareCLIExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	code, _, errb := runDiskprep(t, "", "compare", "--results", dir)
	if code != exitFailure || !strings.Contains(errb, "nothing to compare") {
		t.Errorf("empty store: exit %d %q", code, errb)
	}
	storeQuick(t, dir)
	code, _, errb = runDiskprep(t, "", "compare", "--by", "colour", "--results", dir)
	if code != exitUsage || !strings.Contains(errb, "colour") {
		t.Errorf("--by colour: exit %d %q", code, errb)
	}
	code, _, errb = runDiskprep(t, "", "compare", "nosuch-id", "--results", dir)
	if code != exitFailure || !strings.Contains(errb, "nosuch-id") {
		t.Errorf("unknown id: exit %d %q", code, errb)
	}
	code, out, _ := runDiskprep(t, "", "compare", "-o", "markdown", "--results", dir, "--latency")
	if code != 0 || !strings.Contains(out, "| **seq1m-read** |") || !strings.Contains(out, "p99 latency") {
		t.Errorf("markdown: exit %d\n%s", code, out)
	}
	code, out, _ = runDiskprep(t, "", "compare", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--by") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}

func TestCompareBaselineFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	storeQuick(t, dir)
	code, out, errb := runDiskprep(t, "", "compare", "--baseline", "ext4", "--results", dir)
	if code != 0 || !strings.Contains(out, "xfs vs ext4") || !strings.Contains(out, "ext4 (baseline)") || !strings.Contains(out, "better") {
		t.Errorf("--baseline ext4: exit %d %s\n%s", code, errb, out)
	}
	code, _, errb = runDiskprep(t, "", "compare", "--baseline", "zfs", "--results", dir)
	if code != exitUsage || !strings.Contains(errb, "zfs") {
		t.Errorf("--baseline zfs: exit %d %q", code, errb)
	}
}

func TestCompareFileSources(t *testing.T) {
	e, out, errb := resultsEnv(t, "csv")
	xfs, ext4 := storeQuick(t, e.ResultsDir)
	dir := t.TempDir()
	bad := filepath.Join(dir, "other-schema.json")
	os.WriteFile(bad, []byte(`{"schema":"someone/else/v1","id":"z"}`), 0o644)
	good := filepath.Join(e.ResultsDir, ext4.ID+".json")
	// The same record by id and by file counts once.
	err := runCompare(context.Background(), compareOptions{Sources: []string{xfs.ID, good, bad, ext4.ID[:len(ext4.ID)-1]}}, e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "skipped "+bad) {
		t.Errorf("warnings %q", errb)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1+4*2*2 {
		t.Errorf("csv has %d lines, want header + 4 rows x 2 metrics x 2 groups", lines)
	}
}

// TestCompareWide: a store of several kinds of runs fits 120 columns by
// default; --wide asks for the full table.
func TestCompareWide(t *testing.T) {
	store := filepath.Join("..", "..", "bench", "report", "testdata", "store")
	widest := func(args ...string) int {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"diskprep", "--results", store, "compare", "-o", "table"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("compare %v: exit %d: %s", args, code, errb.String())
		}
		w := 0
		for _, l := range strings.Split(out.String(), "\n") {
			w = max(w, utf8.RuneCountInString(l))
		}
		return w
	}
	if w := widest(); w > 120 {
		t.Errorf("default table is %d columns wide", w)
	}
	if w := widest("--wide"); w <= 120 {
		t.Errorf("--wide table is only %d columns wide", w)
	}
}
