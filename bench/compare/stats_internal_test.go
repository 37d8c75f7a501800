package compare

import "testing"

// MinRuns is where the exact test first can reach Alpha: 3 against 3
// attain p = 2/20 at best, 4 against 4 2/70.
func TestMinRuns(t *testing.T) {
	if n := MinRuns(); n != 4 || minAttainableP(n, n) > Alpha || minAttainableP(n-1, n-1) <= Alpha {
		t.Errorf("MinRuns %d", n)
	}
}
