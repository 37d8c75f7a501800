// Package golden compares test output with files under testdata and
// rewrites them when the tests run with -update (STYLE.md rule 9). Only
// tests import it; importing it registers the -update flag.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ instead of comparing with them")

// Updating reports whether this run rewrites golden files.
func Updating() bool { return *update }

// Check compares got with the file at path (relative to the package under
// test), or writes it there under -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
