package compare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/diskprep/diskprep/bench/record"
)

// U's null distribution against a count by enumeration.
func TestUCDFMatchesEnumeration(t *testing.T) {
	for _, n := range [][2]int{{1, 1}, {2, 3}, {3, 3}, {4, 5}, {5, 5}, {3, 7}} {
		n1, n2 := n[0], n[1]
		cdf := uCDF(n1, n2)
		// Enumerate which n1 of the n1+n2 ranks are a's: U counts the
		// pairs (a, b) with b below a.
		counts := make([]float64, n1*n2+1)
		var total float64
		var walk func(pos, left, bs, u int)
		walk = func(pos, left, bs, u int) {
			if pos == n1+n2 {
				if left == 0 {
					counts[u]++
					total++
				}
				return
			}
			if left > 0 {
				walk(pos+1, left-1, bs, u+bs)
			}
			if pos-(n1-left) < n2 {
				walk(pos+1, left, bs+1, u)
			}
		}
		walk(0, n1, 0, 0)
		run := 0.0
		for u := range counts {
			run += counts[u]
			if math.Abs(cdf[u]-run/total) > 1e-12 {
				t.Errorf("n=%d,%d: P(U<=%d) = %v, enumerated %v", n1, n2, u, cdf[u], run/total)
			}
		}
	}
}

// 5 against 5: the 95% interval drops the 2 most extreme pairwise ratios
// at each end (P(U<=2) = 4/252 < 0.025 < P(U<=3) = 7/252).
func TestLehmannInterval(t *testing.T) {
	if k := lehmannK(5, 5, 0.95); k != 3 {
		t.Errorf("k = %d, want 3", k)
	}
	if k := lehmannK(3, 3, 0.95); k != 0 {
		t.Errorf("3 against 3 has no 95%% interval: k = %d", k)
	}
	a := []float64{100, 102, 98, 101, 99}
	b := []float64{80, 81.6, 78.4, 80.8, 79.2} // exactly 0.8 × a
	est, lo, hi, ok := shiftInterval(a, b, 0.95)
	if !ok || math.Abs(est-0.8) > 1e-9 || lo > 0.8 || hi < 0.8 || hi >= 1 {
		t.Errorf("ratio %v in [%v, %v] ok=%v: want 0.8 inside, 1 outside", est, lo, hi, ok)
	}
	// The normal approximation for many runs agrees with the exact count
	// where both apply.
	if ke, kn := lehmannK(40, 40, 0.95), int(math.Floor(800-normalQuantile(0.975)*math.Sqrt(1600*81/12.0))); ke < kn-2 || ke > kn+2 {
		t.Errorf("40 against 40: exact k %d, normal %d", ke, kn)
	}
}

func TestBenjaminiHochberg(t *testing.T) {
	ps := []float64{0.01, 0.04, 0.03, 0.005, 0.5}
	q, r := benjaminiHochberg(ps, 0.05)
	// Sorted 0.005 0.01 0.03 0.04 0.5 against 0.01 0.02 0.03 0.04 0.05:
	// the fourth is the last under its line.
	if r != 4 {
		t.Errorf("selected %d, want 4", r)
	}
	want := []float64{0.025, 0.05, 0.05, 0.025, 0.5}
	for i := range q {
		if math.Abs(q[i]-want[i]) > 1e-12 {
			t.Errorf("q[%d] = %v, want %v", i, q[i], want[i])
		}
	}
}

// The property the issue asks for, over random samples: no cell is called
// better or worse with an interval that holds no change, and every
// interval holds its own estimate.
func TestVerdictNeverContradictsInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	called := 0
	for trial := range 400 {
		n1, n2 := 3+rng.IntN(6), 3+rng.IntN(6)
		shift := math.Exp(rng.NormFloat64() * 0.3)
		base := make([]float64, n1)
		other := make([]float64, n2)
		for i := range base {
			base[i] = 100 * math.Exp(rng.NormFloat64()*0.2)
			if trial%7 == 0 {
				base[i] = math.Round(base[i] / 20) // coarse: ties
			}
		}
		for i := range other {
			other[i] = 100 * shift * math.Exp(rng.NormFloat64()*0.2)
			if trial%7 == 0 {
				other[i] = math.Round(other[i] / 20)
			}
		}
		c := comparisonOf(t, base, other)
		v := cellOf(t, c, "seqread", 1, MetricMBps)
		if v.Verdict == VerdictSignificant {
			called++
			if v.CILowPct == nil || *v.CILowPct <= 0 && *v.CIHighPct >= 0 {
				t.Fatalf("trial %d: %s with interval %v..%v", trial, v.Verdict, v.CILowPct, v.CIHighPct)
			}
			if v.Better != (*v.CILowPct > 0) {
				t.Fatalf("trial %d: better=%v with interval %v..%v", trial, v.Better, *v.CILowPct, *v.CIHighPct)
			}
		}
		if v.CILowPct != nil && v.ChangePct != nil && (*v.ChangePct < *v.CILowPct-1e-9 || *v.ChangePct > *v.CIHighPct+1e-9) {
			t.Fatalf("trial %d: change %v outside its interval %v..%v", trial, *v.ChangePct, *v.CILowPct, *v.CIHighPct)
		}
	}
	if called < 40 {
		t.Errorf("only %d of 400 trials called a change: the property was hardly exercised", called)
	}
}

func comparisonOf(t *testing.T, base, other []float64) *Comparison {
	t.Helper()
	c, err := Compare([]*record.Record{rec("a", "a", base...), rec("b", "b", other...)}, Options{By: ByLabel})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
