package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
)

// FuzzImport feeds arbitrary bytes to Import. An error is one line and
// wraps ErrNotFio; an imported record is one the store can keep: it saves,
// reads back to the same JSON, and exports as fio JSON again.
func FuzzImport(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	text, _ := filepath.Glob("testdata/*.txt")
	terse, _ := filepath.Glob("testdata/*.terse")
	for _, p := range append(append(files, text...), terse...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"jobs":[{"jobname":"j","read":{"io_bytes":1e308,"bw":1e308,"iops":1,"runtime":1}}]}`))
	f.Add([]byte(`{"jobs":[{"jobname":"j","read":{"io_bytes":-5,"io_kbytes":1,"bw_bytes":-1,"iops":-1,"runtime":-1,"clat_ns":{"min":-1,"percentile":{"99.000000":-3}}}}]}`))
	f.Add([]byte("note: x\n{\"jobs\":[]}\n{\"jobs\":[{\"jobname\":\"a\"}]}"))
	dir := f.TempDir()
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, warnings, err := Import(data, ImportOptions{Source: "fuzz.json", Now: now, ID: "fuzz"})
		if err != nil {
			if !errors.Is(err, ErrNotFio) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("bad error: %q", err)
			}
			return
		}
		if rec.Schema != record.Schema || rec.ID != "fuzz" || len(rec.Workloads) == 0 {
			t.Fatalf("imported record without schema, id or workloads: %+v", rec)
		}
		for _, w := range warnings {
			if strings.ContainsAny(w, "\n\r") {
				t.Fatalf("warning is not one line: %q", w)
			}
		}
		first, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("imported record does not marshal: %v", err)
		}
		path := filepath.Join(dir, "fuzz.json")
		os.Remove(path)
		if err := record.Save(dir, rec); err != nil {
			t.Fatalf("imported record does not save: %v", err)
		}
		back, err := record.ReadFile(path)
		if err != nil {
			t.Fatalf("saved import does not read back: %v", err)
		}
		second, err := json.Marshal(back)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("imported record changes in the store:\n%s\n%s (%v)", first, second, err)
		}
		var out bytes.Buffer
		if err := Export(&out, back); err != nil {
			t.Fatalf("imported record does not export: %v", err)
		}
	})
}

// Found by FuzzImport: figures that overflow (fio 2.x io_bytes in KiB times
// 1024), negative figures, and timestamps past the year 9999 gave records
// that could not be saved (+Inf, JSON time range) or held wrapped counts.
func TestImportOutOfRangeFigures(t *testing.T) {
	for name, doc := range map[string]string{
		"inf bandwidth":      `{"jobs":[{"jobname":"j","read":{"io_bytes":1e308,"bw":1e308,"iops":1,"runtime":1}}]}`,
		"negative bytes":     `{"jobs":[{"jobname":"j","read":{"io_bytes":-5,"io_kbytes":1,"bw_bytes":1,"iops":1,"runtime":1}}]}`,
		"negative latency":   `{"jobs":[{"jobname":"j","read":{"io_bytes":4096,"io_kbytes":4,"bw_bytes":1,"iops":1,"runtime":1,"clat_ns":{"min":-1,"max":1,"mean":1}}}]}`,
		"inf latency":        `{"jobs":[{"jobname":"j","read":{"io_bytes":4096,"bw":1,"iops":1,"runtime":1,"clat":{"min":1,"max":1e306,"mean":1}}}]}`,
		"elapsed of an aeon": `{"jobs":[{"jobname":"j","read":{"io_bytes":4096,"io_kbytes":4,"bw_bytes":1,"iops":1,"runtime":1e17}}]}`,
	} {
		rec, _, err := Import([]byte(doc), ImportOptions{ID: "x"})
		if !errors.Is(err, ErrNotFio) || rec != nil || !strings.Contains(err.Error(), "out-of-range figures") {
			t.Errorf("%s: %v, %v; want out-of-range figures", name, rec, err)
		}
	}
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	rec, warnings, err := Import([]byte(`{"timestamp_ms":999999999999999999,"jobs":[{"jobname":"j","read":{"io_bytes":4096,"io_kbytes":4,"bw_bytes":4096,"iops":1,"runtime":1000}}]}`), ImportOptions{ID: "x", Now: now})
	if err != nil || !rec.Start.Equal(now) || len(warnings) == 0 || !strings.Contains(warnings[0], "year 9999") {
		t.Fatalf("timestamp past 9999: %v, %q, %v", rec, warnings, err)
	}
	if _, err := json.Marshal(rec); err != nil {
		t.Fatalf("record with a fallback start does not marshal: %v", err)
	}
}
