package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndKeepsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fstab")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "new\n" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v", b, fi.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("leftover files: %v", ents)
	}
}

func TestWriteNewRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := WriteNew(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(p, []byte("{2}"), 0o644); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second WriteNew: %v", err)
	}
	b, _ := os.ReadFile(p)
	ents, _ := os.ReadDir(dir)
	if string(b) != "{}" || len(ents) != 1 {
		t.Fatalf("content %q, entries %v", b, ents)
	}
	if !IsTemp(TempPrefix+"x") || IsTemp("x.json") {
		t.Fatal("IsTemp")
	}
}
