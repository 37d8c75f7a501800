package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFscompareMountDirStable: every run on one target mounts at the
// same directory, so their records name one target and pool in compare;
// when that directory exists (a run beside it, or anyone's), a fresh
// random one is made instead, never the existing one reused.
func TestFscompareMountDirStable(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	runPath := filepath.Join(tmp, "run.json")
	var rec fscompareRun
	dir, err := makeMountDir(&rec, runPath, "/dev/loop3")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tmp, "diskprep-fscompare-dev-loop3"); dir != want || rec.Mount != want || !rec.MadeMount {
		t.Errorf("mount dir %q (record %q, made %v), want %q", dir, rec.Mount, rec.MadeMount, want)
	}
	again, err := makeMountDir(&rec, runPath, "/dev/loop3")
	if err != nil {
		t.Fatal(err)
	}
	if again == dir || filepath.Dir(again) != tmp {
		t.Errorf("second run beside the first got %q", again)
	}
	if err := os.Remove(again); err != nil {
		t.Fatal(err)
	}
	if got := mountSlug("/var/tmp/my fs.img"); got != "var-tmp-my-fs.img" {
		t.Errorf("mountSlug = %q", got)
	}
}
