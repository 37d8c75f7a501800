package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the plan parser and resolver: they must
// never panic, every error must wrap ErrPlan and be one line, and every plan
// accepted must keep the invariants apply relies on.
func FuzzLoad(f *testing.F) {
	if data, err := os.ReadFile("testdata/example.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(head + "      - {size: rest, fs: xfs}\n"))
	f.Add([]byte("version: 1\ndisks:\n  - select: {model: TOSHIBA DT01ACA300, size: 2.5T-3T}\n    partitions: [{size: 1G, fs: ext4}, {size: rest, fs: xfs}]\n"))
	host := testHost()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrPlan) || !strings.HasPrefix(err.Error(), "fuzz.yaml") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad error: %q", err)
			}
			return
		}
		if len(p.Disks) == 0 {
			t.Fatal("plan without disks accepted")
		}
		for _, d := range p.Disks {
			if len(d.Partitions) == 0 {
				t.Fatal("disk without partitions accepted")
			}
			for i, ps := range d.Partitions {
				if ps.SizeBytes == 0 && i != len(d.Partitions)-1 {
					t.Fatal("rest before the last partition accepted")
				}
				if ps.FS != "xfs" && ps.FS != "ext4" {
					t.Fatalf("fs %q accepted", ps.FS)
				}
				if ps.Persist && ps.Mount == "" {
					t.Fatal("persist without mount accepted")
				}
				// "/" and the system's directories parse: disk refuses them
				// (exit 3), as it does on the command line.
				if ps.Mount != "" && (!strings.HasPrefix(ps.Mount, "/") || ps.Mount != filepath.Clean(ps.Mount)) {
					t.Fatalf("mount %q accepted", ps.Mount)
				}
			}
		}
		rs, err := p.Resolve(host)
		if err != nil {
			if !errors.Is(err, ErrPlan) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad resolve error: %q", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range rs {
			if seen[r.Disk.Name] || r.Request.Expect == nil || r.Request.Device != r.Disk.Path {
				t.Fatalf("bad resolution %+v", r)
			}
			seen[r.Disk.Name] = true
		}
	})
}
