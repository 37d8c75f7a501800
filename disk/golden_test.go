package disk

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The dry-run output (text and JSON) for fixed facts and fixed GUIDs, kept
// in testdata/ so a change to what prepare would do shows up in review.
func TestPlanGolden(t *testing.T) {
	cases := map[string]struct {
		disk hwinfo.Disk
		req  Request
	}{
		"sata-512e-wipe": {
			disk: func() hwinfo.Disk {
				d := blankDisk("sdb", 4000787030016, 512, 4096, 0)
				d.PartitionTable, d.PartitionTableID = "dos", "0x1a2b3c4d"
				d.Partitions = []hwinfo.Partition{{Name: "sdb1", Path: "/dev/sdb1", Number: 1, StartBytes: 1 << 20, SizeBytes: 4000785981440, FSType: "ntfs", FSLabel: "Backup"}}
				return d
			}(),
			req: Request{Device: "/dev/sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs", Label: "data", Mount: "/data", MountOpts: "noatime", Persist: true, MkfsOpts: []string{"-m", "reflink=1"}}}},
		},
		"nvme-4k-two": {
			disk: blankDisk("nvme1n1", 1<<40, 4096, 4096, 131072),
			req: Request{Device: "nvme1n1", Partitions: []PartSpec{
				{FS: "ext4", Label: "logs", SizeBytes: 100 << 30, Mount: "/var/log/app"},
				{FS: "xfs", Label: "db", Mount: "/srv/db", Persist: true},
			}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			fixedUUIDs(t)
			p, err := PlanDisk(c.req, hostWith(c.disk))
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := p.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", name+".txt"), text.Bytes())
			golden(t, filepath.Join("testdata", name+".json"), append(js, '\n'))
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
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
		t.Fatalf("%v (run go test ./disk -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", path, got)
	}
}
