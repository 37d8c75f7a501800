package fstab

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// libmountEntries parses an fstab file with util-linux findmnt, the parser
// mount(8) and systemd's fstab generator use, as an independent check.
func libmountEntries(t *testing.T, path string) []Entry {
	t.Helper()
	if _, err := exec.LookPath("findmnt"); err != nil {
		testenv.SkipOrFail(t, "findmnt (util-linux) not installed")
	}
	out, err := exec.Command("findmnt", "--tab-file", path, "-J", "-o", "SOURCE,TARGET,FSTYPE,OPTIONS,FREQ,PASSNO").Output()
	if err != nil {
		t.Fatalf("findmnt --tab-file %s: %v", path, err)
	}
	var doc struct {
		Filesystems []struct {
			Source  string `json:"source"`
			Target  string `json:"target"`
			FSType  string `json:"fstype"`
			Options string `json:"options"`
			Freq    int    `json:"freq"`
			Passno  int    `json:"passno"`
		} `json:"filesystems"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("findmnt output: %v\n%s", err, out)
	}
	var es []Entry
	for _, f := range doc.Filesystems {
		es = append(es, Entry{f.Source, f.Target, f.FSType, f.Options, f.Freq, f.Passno})
	}
	return es
}

// Parse, and the lines Add writes, must read the same as libmount reads
// them: same entries, same decoded mount points, markers taken as comments.
func TestAgreesWithLibmount(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.fstab")
	// A file diskprep edited, with mount points that need escaping.
	edited := filepath.Join(t.TempDir(), "fstab")
	data, err := os.ReadFile("testdata/debian12.fstab")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(edited, data, 0o644)
	for _, e := range []Entry{
		{Spec: "UUID=11111111-2222-3333-4444-555555555555", File: "/srv/my data", VFSType: "xfs", Options: "noatime"},
		{Spec: "LABEL=with space", File: "/srv/tab\there\\back#hash", VFSType: "ext4", Pass: 2},
		{Spec: "UUID=22222222-2222-3333-4444-555555555555", File: "/srv/ünïcode", VFSType: "xfs", Options: "nofail,ro,noatime"},
	} {
		if _, err := Add(edited, e, day); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range append(files, edited) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			// findmnt drops lines it cannot parse (fewer than three
			// fields); Parse keeps their spec and mount point.
			var ours []Entry
			for _, e := range entries(lines) {
				if e.VFSType != "" {
					ours = append(ours, e)
				}
			}
			if theirs := libmountEntries(t, f); !reflect.DeepEqual(ours, theirs) {
				t.Fatalf("Parse and libmount differ:\n ours   %+v\n theirs %+v", ours, theirs)
			}
		})
	}
}
