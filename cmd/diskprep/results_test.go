package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
)

var resultsT0 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

// resultsEnv is an env writing into buffers, with its own results store.
func resultsEnv(t *testing.T, format string) (*env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errb bytes.Buffer
	return &env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Format: format,
		ResultsDir: filepath.Join(t.TempDir(), "results"),
	}, &out, &errb
}

// storeQuick saves an xfs and an ext4 record (five repetitions each, ext4
// 10% slower) and returns them.
func storeQuick(t *testing.T, dir string) (xfs, ext4 *record.Record) {
	t.Helper()
	xfs = ct.Quick(ct.ID(1), "xfs", "xfs", 1, 5, resultsT0)
	ext4 = ct.Quick(ct.ID(2), "ext4", "ext4", 0.9, 5, resultsT0.Add(time.Hour))
	for _, r := range []*record.Record{xfs, ext4} {
		if err := record.Save(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	return xfs, ext4
}

// runDiskprep runs the whole CLI with buffers: flags, exit codes, stderr.
func runDiskprep(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"diskprep"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestResultsList(t *testing.T) {
	e, out, errb := resultsEnv(t, "")
	xfs, ext4 := storeQuick(t, e.ResultsDir)
	// A corrupt file and another schema: skipped, named, never fatal.
	os.WriteFile(filepath.Join(e.ResultsDir, "broken.json"), []byte("{not json"), 0o644)
	os.WriteFile(filepath.Join(e.ResultsDir, "future.json"), []byte(`{"schema":"diskprep/result/v9","id":"x"}`), 0o644)
	if err := runResultsList(context.Background(), recordFilter{}, e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ID", xfs.ID, ext4.ID, "xfs", "ext4", "box1", "quick ×5", "2026-11-30 06:00"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"broken.json", "future.json", "diskprep/result/v9"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("warnings lack %q: %s", want, errb)
		}
	}

	out.Reset()
	if err := runResultsList(context.Background(), recordFilter{FS: "ext*"}, e); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), xfs.ID) || !strings.Contains(out.String(), ext4.ID) {
		t.Errorf("--fs ext* kept the wrong records:\n%s", out)
	}

	out.Reset()
	e.Format = "json"
	if err := runResultsList(context.Background(), recordFilter{Label: "xfs"}, e); err != nil {
		t.Fatal(err)
	}
	var list report.ResultListJSON
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	rows := list.Results
	if list.Schema != report.ResultListSchema || list.Total != 2 {
		t.Errorf("json list %s of %d records, want %s of 2", list.Schema, list.Total, report.ResultListSchema)
	}
	if len(rows) != 1 || rows[0].ID != xfs.ID || rows[0].FS != "xfs" || rows[0].Workloads != 4 {
		t.Errorf("json rows %+v", rows)
	}

	for _, f := range []string{"csv", "markdown"} {
		out.Reset()
		e.Format = f
		if err := runResultsList(context.Background(), recordFilter{}, e); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out.String(), "\n"); n != 3 && !(f == "markdown" && n == 4) {
			t.Errorf("%s: %d lines:\n%s", f, n, out)
		}
	}

	e.Format = "html"
	if err := runResultsList(context.Background(), recordFilter{}, e); exitCode(err) != exitUsage {
		t.Errorf("-o html for list: %v", err)
	}
	if err := runResultsList(context.Background(), recordFilter{Host: "["}, e); exitCode(err) != exitUsage {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestResultsListEmpty(t *testing.T) {
	e, out, _ := resultsEnv(t, "")
	if err := runResultsList(context.Background(), recordFilter{}, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no results in") {
		t.Errorf("empty store: %q", out)
	}
}

func TestResultsShow(t *testing.T) {
	e, out, _ := resultsEnv(t, "")
	xfs, _ := storeQuick(t, e.ResultsDir)
	// A unique prefix is enough.
	if err := runResultsShow(context.Background(), xfs.ID[:len(xfs.ID)-2], e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{xfs.ID, "seq1m-read", "rnd4k-write", "MB/s", "LAT p99", "Samsung SSD 870 EVO"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	out.Reset()
	e.Format = "json"
	if err := runResultsShow(context.Background(), xfs.ID, e); err != nil {
		t.Fatal(err)
	}
	var back record.Record
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.ID != xfs.ID || len(back.Workloads) != 4 {
		t.Errorf("json show: %v %+v", err, back.ID)
	}
	// Both stored records share the prefix "20261130T060": ambiguous, a
	// usage error (issue 25 item 7: it exited 1).
	if err := runResultsShow(context.Background(), "20261130T060", e); !errors.Is(err, record.ErrAmbiguous) || exitCode(err) != exitUsage {
		t.Errorf("ambiguous prefix: %v (exit %d)", err, exitCode(err))
	}
	if err := runResultsShow(context.Background(), "19990101", e); !errors.Is(err, record.ErrNotFound) || exitCode(err) != exitFailure {
		t.Errorf("unknown id: %v (exit %d)", err, exitCode(err))
	}
}

func TestResultsRm(t *testing.T) {
	e, out, _ := resultsEnv(t, "")
	xfs, ext4 := storeQuick(t, e.ResultsDir)
	// One bad id among good ones removes nothing.
	if err := runResultsRm(context.Background(), []string{xfs.ID, "nosuch"}, e); err == nil {
		t.Fatal("rm with an unknown id succeeded")
	}
	if _, err := os.Stat(filepath.Join(e.ResultsDir, xfs.ID+".json")); err != nil {
		t.Errorf("a record was removed although the command failed: %v", err)
	}
	if err := runResultsRm(context.Background(), []string{xfs.ID}, e); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.ResultsDir, xfs.ID+".json")); !os.IsNotExist(err) {
		t.Errorf("record still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.ResultsDir, ext4.ID+".json")); err != nil {
		t.Errorf("the other record went too: %v", err)
	}
	if !strings.Contains(out.String(), "removed "+xfs.ID) {
		t.Errorf("output %q", out)
	}
}

func TestResultsImportExport(t *testing.T) {
	e, out, errb := resultsEnv(t, "")
	src := filepath.Join("..", "..", "bench", "fio", "testdata")
	files := []string{filepath.Join(src, "fio-3.33-randrw-numjobs2-group.json"), filepath.Join(src, "fio-3.33-note-before-json.json")}
	err := runResultsImport(context.Background(), resultsImportOptions{Files: files, Label: "old-vm", HostNote: "esx01 guest"}, e)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := record.List(e.ResultsDir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("%d records stored (%v), want 2", len(entries), err)
	}
	for _, en := range entries {
		if en.Record.Label != "old-vm" || en.Record.Host.Hostname != "esx01 guest" {
			t.Errorf("imported record %s: label %q host %q", en.Record.ID, en.Record.Label, en.Record.Host.Hostname)
		}
	}
	if strings.Count(out.String(), "imported ") != 2 || !strings.Contains(errb.String(), "note: both iodepth") {
		t.Errorf("stdout %q stderr %q", out, errb)
	}

	// Not fio JSON: a clear error, nothing saved.
	bad := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(bad, []byte("just some notes\n"), 0o644)
	err = runResultsImport(context.Background(), resultsImportOptions{Files: []string{bad}}, e)
	if err == nil || !strings.Contains(err.Error(), "not fio JSON") || exitCode(err) != exitFailure {
		t.Errorf("importing text: %v", err)
	}
	if after, _, _ := record.List(e.ResultsDir); len(after) != 2 {
		t.Errorf("%d records after a failed import", len(after))
	}

	// Export: --as fio, and --format fio arriving as the global format.
	id := entries[0].Record.ID
	for _, c := range []struct{ as, format string }{{"fio", ""}, {"", "fio"}, {"", ""}} {
		out.Reset()
		e.Format = c.format
		if err := runResultsExport(context.Background(), resultsExportOptions{ID: id, As: c.as}, e); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Version string `json:"fio version"`
			Jobs    []struct {
				Name string `json:"jobname"`
				Read struct {
					IOPS float64 `json:"iops"`
				} `json:"read"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Jobs) == 0 || doc.Jobs[0].Read.IOPS == 0 {
			t.Errorf("export as=%q format=%q: %v %+v", c.as, c.format, err, doc)
		}
	}
	// --format prom: Prometheus text exposition with the record's figures.
	out.Reset()
	e.Format = "prom"
	if err := runResultsExport(context.Background(), resultsExportOptions{ID: id}, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "# TYPE diskprep_") || !strings.Contains(out.String(), `workload="`) {
		t.Errorf("export --format prom:\n%s", out.String())
	}
	e.Format = ""
	if err := runResultsExport(context.Background(), resultsExportOptions{ID: id, As: "xml"}, e); exitCode(err) != exitUsage {
		t.Errorf("export as xml: %v", err)
	}
	file := filepath.Join(t.TempDir(), "out.fio.json")
	if err := runResultsExport(context.Background(), resultsExportOptions{ID: id, Output: file}, e); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.Contains(b, []byte(`"clat_ns"`)) {
		t.Errorf("export file: %v", err)
	}
}

// The whole CLI: flags after positionals, --format fio for export, exit codes.
func TestResultsCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	xfs, _ := storeQuick(t, dir)
	code, out, errb := runDiskprep(t, "", "results", "export", xfs.ID, "--format", "fio", "--results", dir)
	if code != 0 || !strings.Contains(out, `"jobs"`) {
		t.Errorf("export --format fio: exit %d, %s %s", code, errb, out)
	}
	code, out, _ = runDiskprep(t, "", "results", "list", "--results", dir, "--label", "ext4", "-o", "json")
	if code != 0 || strings.Contains(out, xfs.ID) || !strings.Contains(out, `"ext4"`) {
		t.Errorf("list: exit %d %s", code, out)
	}
	code, _, errb = runDiskprep(t, "", "results", "show", "nosuch", "--results", dir)
	if code != exitFailure || !strings.Contains(errb, "nosuch") {
		t.Errorf("show unknown: exit %d %s", code, errb)
	}
	code, _, _ = runDiskprep(t, "", "results", "show", "--results", dir)
	if code != exitUsage {
		t.Errorf("show without id: exit %d", code)
	}
	fioJSON, err := os.ReadFile(filepath.Join("..", "..", "bench", "fio", "testdata", "fio-3.33-randread.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errb = runDiskprep(t, string(fioJSON), "results", "import", "-", "--label", "piped", "--results", dir)
	if code != 0 || !strings.Contains(out, "imported - as ") {
		t.Errorf("import from stdin: exit %d %s %s", code, out, errb)
	}
	code, out, _ = runDiskprep(t, "", "results", "--help")
	for _, sub := range []string{"list", "show", "rm", "import", "export", "Examples:"} {
		if !strings.Contains(out, sub) {
			t.Errorf("results help lacks %q (exit %d)", sub, code)
		}
	}
}

// export --format csv and prom of a record with every newer field (a real
// steady-state run on a loop device, SMART and cache grafted on; see
// bench/prom/testdata), read back: the CSV as the same lines results show
// -o csv gives, parsed, and the exposition naming the newer figures.
func TestResultsExportObserved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	rec, err := record.ReadFile(filepath.Join("..", "..", "bench", "prom", "testdata", "record-observed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := record.Save(dir, rec); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "run.csv")
	code, _, errb := runDiskprep(t, "", "results", "export", rec.ID[:13], "--format", "csv", "--output", file, "--results", dir)
	if code != 0 {
		t.Fatalf("export --format csv: exit %d %s", code, errb)
	}
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code, shown, _ := runDiskprep(t, "", "results", "show", rec.ID, "-o", "csv", "--results", dir)
	if code != 0 || shown != string(exported) {
		t.Errorf("export --format csv differs from show -o csv (exit %d)", code)
	}
	lines, err := csv.NewReader(bytes.NewReader(exported)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range lines[0] {
		col[c] = i
	}
	if col["iops"] != 10 || col["lat_max_ns"] != 19 {
		t.Errorf("first columns moved: %v", lines[0][:20])
	}
	// The last line: seq1m-read's 17th round, the one that reached steady
	// state, with its cache counters.
	last := lines[len(lines)-1]
	wl := rec.Workloads[len(rec.Workloads)-1]
	r := wl.Runs[len(wl.Runs)-1]
	for name, want := range map[string]string{
		"workload":                wl.Params.Name,
		"repetition":              strconv.Itoa(r.Index),
		"iops":                    strconv.FormatFloat(r.Read.IOPS, 'f', -1, 64),
		"steady_state_reached":    "true",
		"steady_state_round":      strconv.Itoa(wl.SteadyState.Round),
		"engine_cpu_ns_per_io":    strconv.FormatFloat(r.EngineCPUNSPerIO, 'f', -1, 64),
		"cache_kind":              "lvmcache",
		"cache_mode":              "writethrough",
		"cache_hit_ratio":         strconv.FormatFloat(*r.Cache.HitRatio, 'f', -1, 64),
		"health_crc_errors_after": strconv.FormatUint(*rec.Health.After.CRCErrors, 10),
		"precondition_passes":     "2",
	} {
		i, ok := col[name]
		if !ok || last[i] != want {
			t.Errorf("%s = %q, want %q", name, last[min(i, len(last)-1)], want)
		}
	}
	code, prom, errb := runDiskprep(t, "", "results", "export", rec.ID, "--as", "prom", "--results", dir)
	if code != 0 {
		t.Fatalf("export --as prom: exit %d %s", code, errb)
	}
	for _, want := range []string{
		`diskprep_bench_steady_state_reached_round{host="vm",device_model="",fs="",label="loop-steady",set="custom",workload="seq1m-read",direction="read"} 17` + "\n",
		"# TYPE diskprep_bench_cache_hit_ratio gauge\n", `reading="after"} 7` + "\n", `kind="lvmcache",mode="writethrough"`,
	} {
		if !strings.Contains(prom, want) {
			t.Errorf("export --as prom lacks %q:\n%s", want, prom)
		}
	}
	code, _, errb = runDiskprep(t, "", "results", "export", rec.ID, "--as", "xlsx", "--results", dir)
	if code != exitUsage || !strings.Contains(errb, "valid: fio, csv, prom, json") {
		t.Errorf("export --as xlsx: exit %d %s", code, errb)
	}
}
