package disk

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/golden"
)

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
			pl := fixedUUIDs(t)
			p, err := pl.PlanDisk(c.req, hostWith(c.disk))
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
			golden.Check(t, filepath.Join("testdata", name+".txt"), text.Bytes())
			golden.Check(t, filepath.Join("testdata", name+".json"), append(js, '\n'))
		})
	}
}
