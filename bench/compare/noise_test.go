package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/record"
)

// The noise floor of a row: its pooled spread, the change its runs detect
// and the runs that detect a change as large as the spread, for 5 runs a
// column at about 8% spread.
func TestNoiseFloor(t *testing.T) {
	a := []float64{92.3, 100, 108.3, 96, 104.2}
	b := []float64{184.6, 200, 216.6, 192, 208.4}
	c, err := Compare([]*record.Record{rec("a", "a", a...), rec("b", "b", b...)}, Options{By: ByLabel})
	if err != nil {
		t.Fatal(err)
	}
	nf := c.Rows[0].NoiseFloor
	if nf == nil || nf.Runs != 5 || math.Abs(nf.SpreadPct-6.1) > 0.5 || nf.DetectablePct < nf.SpreadPct || nf.RunsForSpread < 10 {
		t.Fatalf("noise floor %+v", nf)
	}
	// 2.8 z-units of power, √(2/(5·3/π)) of the spread: about 1.8 spreads.
	if r := math.Log1p(nf.DetectablePct/100) / math.Log1p(nf.SpreadPct/100); math.Abs(r-1.81) > 0.02 {
		t.Errorf("detectable %.1f%% is %.2f spreads, want 1.81", nf.DetectablePct, r)
	}
	if s := nf.String(); !strings.HasPrefix(s, "with 5 runs a column and 6.") || !strings.Contains(s, "cannot be told; ") {
		t.Errorf("said %q", s)
	}
	// One run a column: no floor.
	c, _ = Compare([]*record.Record{rec("a", "a", 100), rec("b", "b", 120)}, Options{By: ByLabel})
	if c.Rows[0].NoiseFloor != nil {
		t.Errorf("a floor from single runs: %+v", c.Rows[0].NoiseFloor)
	}
}
