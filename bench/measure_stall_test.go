package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/workload"
)

// A repetition whose device completed nothing in the window keeps the
// direction with a zero and a warning: a missing direction would read as
// one the workload does not do, and drop out of every comparison.
func TestStalledDirectionIsAZeroNotAGap(t *testing.T) {
	for _, tc := range []struct {
		rw          string
		mix         int
		read, write bool
	}{
		{"randread", 0, true, false},
		{"write", 0, false, true},
		{"randrw", 70, true, true},
		{"randrw", 100, true, false},
		{"randrw", 0, false, true},
	} {
		w := workload.Workload{Name: "w", RW: tc.rw, RWMixRead: tc.mix}
		one := repetitionOf(&engine.Result{Elapsed: 3 * time.Second}, 1, time.Now())
		stalled(&one, w, 3*time.Second)
		if (one.Read != nil) != tc.read || (one.Write != nil) != tc.write {
			t.Errorf("%s mix %d: read %v write %v", tc.rw, tc.mix, one.Read, one.Write)
		}
		if one.Read != nil && (one.Read.IOPS != 0 || one.Read.RuntimeMS != 3000) {
			t.Errorf("%s: read %+v", tc.rw, *one.Read)
		}
		want := 0
		if tc.read {
			want++
		}
		if tc.write {
			want++
		}
		if len(one.Warnings) != want || want > 0 && !strings.Contains(one.Warnings[0], "stalled") {
			t.Errorf("%s mix %d: warnings %q", tc.rw, tc.mix, one.Warnings)
		}
	}

	// Something completed: untouched.
	res := &engine.Result{Elapsed: time.Second, Read: engine.DirResult{IOs: 5, Bytes: 5 * 4096}}
	one := repetitionOf(res, 1, time.Now())
	stalled(&one, workload.Workload{Name: "w", RW: "randread"}, time.Second)
	if one.Read == nil || one.Read.IOs != 5 || len(one.Warnings) != 0 {
		t.Errorf("a run with I/O changed: %+v %q", one.Read, one.Warnings)
	}
}
