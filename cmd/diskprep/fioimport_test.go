package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 12's Done-when, through the command line: the seed's HDD runs as
// fio text files, imported per setup with a label, compare as the
// write-up's four rows.
func TestImportSeedTextAndCompare(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "bench", "fio", "testdata", "seed-hdd-handwritten")
	for _, setup := range []string{"direct", "vmdk", "raw"} {
		args := []string{"results", "import", "--label", setup, "--results", dir}
		for _, cmd := range []string{"seqread", "seqwrite", "randrw"} {
			args = append(args, filepath.Join(src, setup, cmd+".txt"))
		}
		if code, out, errb := runDiskprep(t, "", args...); code != 0 || strings.Count(out, "imported ") != 3 {
			t.Fatalf("import %s: exit %d\n%s%s", setup, code, out, errb)
		}
	}
	code, out, errb := runDiskprep(t, "", "compare", "--by", "label", "-o", "json", "--results", dir)
	if code != 0 {
		t.Fatalf("compare: exit %d %s", code, errb)
	}
	var c struct {
		Rows []struct {
			Name  string `json:"name"`
			Cells []struct {
				Metrics []struct {
					Metric    string   `json:"metric"`
					ChangePct *float64 `json:"change_pct"`
				} `json:"metrics"`
			} `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, r := range c.Rows {
		line := r.Name
		for _, cell := range r.Cells[1:] {
			line += fmt.Sprintf(" %+.1f%%", *cell.Metrics[0].ChangePct)
		}
		got = append(got, line)
	}
	want := []string{"seqread +1.6% +11.1%", "seqwrite -10.8% +19.0%", "randread -19.2% +16.2%", "randwrite -10.7% +8.2%"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Issue 25 item 7: the same fio file imported twice is one record.
func TestImportTwiceOneRecord(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join("..", "..", "bench", "fio", "testdata", "fio-3.33-randread.json")
	text := filepath.Join("..", "..", "bench", "fio", "testdata", "seed-hdd-handwritten", "raw", "seqread.txt")
	for i := range 2 {
		code, out, errb := runDiskprep(t, "", "results", "import", "--results", dir, file, text)
		if code != 0 {
			t.Fatalf("import %d: exit %d\n%s%s", i+1, code, out, errb)
		}
		if i == 1 && strings.Count(out, "already in the store as") != 2 {
			t.Errorf("second import said:\n%s", out)
		}
	}
	code, out, _ := runDiskprep(t, "", "results", "list", "-o", "json", "--results", dir)
	var list struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Results) != 2 {
		t.Errorf("store after two imports of two files: exit %d, %d records (%v)\n%s", code, len(list.Results), err, out)
	}
}
