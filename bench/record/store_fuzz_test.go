package record

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadFile puts arbitrary bytes in a store as a record file: ReadFile
// and List never panic, List skips what ReadFile refuses (with a warning
// naming the file) and returns what it accepts, and an accepted record
// marshals to JSON that reads back to the same record.
func FuzzReadFile(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "testdata", "record.golden.json")); err == nil {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(bytes.Replace(b, []byte(Schema), []byte("diskprep/result/v2"), 1))
	}
	f.Add([]byte(`{"schema":"diskprep/result/v1","id":"x","workloads":null}`))
	f.Add([]byte(`{"schema":"diskprep/result/v1"}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	path := filepath.Join(dir, "20261130T061500Z-abcd.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rec, rerr := ReadFile(path)
		entries, warnings, err := List(dir)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if rerr != nil {
			if rec != nil || len(entries) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], path) {
				t.Fatalf("ReadFile refused (%v); List gave %d entries, warnings %q", rerr, len(entries), warnings)
			}
			return
		}
		if rec.Schema != Schema || rec.ID == "" || len(entries) != 1 || len(warnings) != 0 {
			t.Fatalf("ReadFile accepted schema %q id %q; List gave %d entries, warnings %q", rec.Schema, rec.ID, len(entries), warnings)
		}
		first, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("a record ReadFile accepts does not marshal: %v", err)
		}
		var back Record
		if err := json.Unmarshal(first, &back); err != nil {
			t.Fatalf("marshalled record does not read back: %v", err)
		}
		second, err := json.Marshal(&back)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("record changes through JSON:\n%s\n%s (%v)", first, second, err)
		}
	})
}
