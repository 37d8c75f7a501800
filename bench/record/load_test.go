package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/atomicfile"
)

// decodeTwoSteps is how a record was decoded before decodeRecord: the
// schema first, then the whole document. decodeRecord must give the same
// record or the same error for every input.
func decodeTwoSteps(b []byte) (*Record, error) {
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("not a result record: %w", err)
	}
	if probe.Schema != Schema {
		return nil, fmt.Errorf("schema %q, want %q", probe.Schema, Schema)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("corrupt result record: %w", err)
	}
	if rec.ID == "" {
		return nil, errors.New("result record without id")
	}
	return &rec, nil
}

// decodeCases are documents at the edges of the two decodes: another
// schema with a field of the wrong type, a schema of the wrong type,
// keys spelt in another case, duplicates, truncations.
var decodeCases = []string{
	`{"schema":"diskprep/result/v1","id":"a"}`,
	`{"schema":"diskprep/result/v1"}`,
	`{"schema":"diskprep/result/v1","id":""}`,
	`{"schema":"diskprep/result/v2","id":"a"}`,
	`{"schema":"diskprep/result/v2","id":"a","repeat":"three"}`,
	`{"schema":"diskprep/result/v1","id":"a","repeat":"three"}`,
	`{"schema":"diskprep/result/v1","id":"a","workloads":[{"runs":[{"read":{"io_bytes":-1}}]}]}`,
	`{"schema":"diskprep/result/v1","id":"a","workloads":{}}`,
	`{"schema":5,"id":"a"}`,
	`{"schema":null,"id":"a"}`,
	`{"SCHEMA":"diskprep/result/v1","Id":"a"}`,
	`{"schema":"diskprep/result/v1","schema":"x","id":"a"}`,
	`{"schema":"x","schema":"diskprep/result/v1","id":"a"}`,
	`{"schema":"diskprep/result/v1","id":"a","start":"yesterday"}`,
	`{"schema":"diskprep/result/v2","id":"a","start":"yesterday"}`,
	`{"schema":"diskprep/result/v1","id":"a"`,
	`{"schema":"diskprep/result/v1","id":"a"} trailing`,
	`[]`,
	`null`,
	`"diskprep/result/v1"`,
	``,
}

func checkDecodeAsTwoSteps(t *testing.T, b []byte) {
	t.Helper()
	got, gerr := decodeRecord(b)
	want, werr := decodeTwoSteps(b)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%q: error %v, two steps %v", b, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: record %+v, two steps %+v", b, got, want)
	}
}

func TestDecodeRecordAsTwoSteps(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "testdata", "record.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := append([]string{string(golden), string(golden[:len(golden)/2])}, decodeCases...)
	for _, c := range cases {
		checkDecodeAsTwoSteps(t, []byte(c))
	}
}

func FuzzDecodeRecord(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "testdata", "record.golden.json")); err == nil {
		f.Add(b)
	}
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkDecodeAsTwoSteps)
}

// TestListReadsAsOneByOne holds the readers of List to what reading the
// store's files one by one, in name order, gives: the same entries in
// the same order and the same warnings in the same order, however many
// readers there are.
func TestListReadsAsOneByOne(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		id := fmt.Sprintf("20261130T%06dZ-%04x", 300-i, i)
		switch i % 10 {
		case 3:
			write(id+".json", `{"schema":"diskprep/result/v1","id":`)
		case 5:
			write(id+".json", `{"schema":"diskprep/result/v2","id":"`+id+`"}`)
		case 7:
			// A copy under another name: one id, two files.
			rec := recWithID(fmt.Sprintf("20261130T%06dZ-%04x", 300-i+1, i-1))
			b, _ := json.Marshal(rec)
			write(id+".json", string(b))
		default:
			b, _ := json.Marshal(recWithID(id))
			write(id+".json", string(b))
		}
	}
	write(atomicfile.TempPrefix+"x.json-1", `{}`)
	if err := os.Symlink(filepath.Join(dir, "20261130T000300Z-0000.json"), filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}

	var want []Entry
	var wantWarn []string
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		name := de.Name()
		if atomicfile.IsTemp(name) {
			continue
		}
		path := filepath.Join(dir, name)
		rec, err := readRecord(path, false)
		if err != nil {
			wantWarn = append(wantWarn, skipped{path, err}.String())
			continue
		}
		want = append(want, Entry{Path: path, Record: rec})
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].Record.ID < want[j].Record.ID })

	for _, procs := range []int{1, 2, 5} {
		prev := runtime.GOMAXPROCS(procs)
		got, warnings, err := List(dir)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GOMAXPROCS %d: List gave %d entries, one by one %d (or in another order)", procs, len(got), len(want))
		}
		if !reflect.DeepEqual(warnings, wantWarn) {
			t.Errorf("GOMAXPROCS %d: warnings\n%s\nwant\n%s", procs, strings.Join(warnings, "\n"), strings.Join(wantWarn, "\n"))
		}
	}
	if len(want) < 200 || len(wantWarn) != 61 {
		t.Errorf("the store is not what the test meant: %d records, %d warnings", len(want), len(wantWarn))
	}
}
