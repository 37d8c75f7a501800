package compare

import (
	"fmt"
	"testing"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

// TestFscompareRunsPool: three identical fscompare runs, each mounted at
// its own temporary directory, are two columns (xfs, ext4), not six.
func TestFscompareRunsPool(t *testing.T) {
	var recs []*record.Record
	for run := range 3 {
		for _, fs := range []string{"xfs", "ext4"} {
			r := ct.Record(ct.Opts{ID: ct.ID(len(recs) + 1), FS: fs, Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{100, 101, 99}}}})
			r.Target.Path = fmt.Sprintf("/tmp/diskprep-fscompare-%d", 1183225061+run*7919)
			recs = append(recs, r)
		}
	}
	c, err := Compare(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 {
		var names []string
		for _, g := range c.Groups {
			names = append(names, g.Name)
		}
		t.Fatalf("%d columns %q, want xfs and ext4", len(c.Groups), names)
	}
	// A record measured elsewhere stays apart.
	other := ct.Record(ct.Opts{ID: ct.ID(9), FS: "xfs", Workloads: []ct.Workload{{Name: "seqread", MBps: []float64{100, 101, 99}}}})
	other.Target.Path = "/mnt/data"
	c, err = Compare(append(recs, other), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 3 {
		t.Errorf("%d columns, want /mnt/data apart from fscompare's xfs", len(c.Groups))
	}
}
