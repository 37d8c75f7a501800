package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// runs draws n values the way repetitions come: around a level, with
// ties (rounded values), now and then a zero.
func runs(rng *rand.Rand, n int, level float64, zeros bool) []float64 {
	out := make([]float64, n)
	for i := range out {
		v := level * (0.8 + 0.4*rng.Float64())
		switch rng.IntN(4) {
		case 0:
			v = math.Round(v)
		case 1:
			v = math.Round(v/10) * 10
		}
		if zeros && rng.IntN(20) == 0 {
			v = 0
		}
		out[i] = v
	}
	return out
}

// The matrix's ranks are the sorted ratios', value for value.
func TestRatioMatrixAsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		n1, n2 := 1+rng.IntN(70), 1+rng.IntN(70)
		a := runs(rng, n1, 500, trial%3 == 0)
		b := runs(rng, n2, 450, trial%4 == 0)
		want := pairRatios(a, b)
		m := ratioMatrix{a: slices.Clone(a), b: slices.Clone(b)}
		slices.Sort(m.a)
		slices.Sort(m.b)
		if m.len() != len(want) {
			t.Fatalf("len %d, want %d", m.len(), len(want))
		}
		ks := []int{0, len(want) / 2, len(want) - 1}
		for range 60 {
			ks = append(ks, rng.IntN(len(want)))
		}
		for _, k := range ks {
			if got := m.at(k); math.Float64bits(got) != math.Float64bits(want[k]) {
				t.Fatalf("trial %d (%d×%d): rank %d is %v, sorted %v", trial, n1, n2, k, got, want[k])
			}
		}
		for _, level := range []float64{0.95, 0.99, 0.999} {
			e1, l1, h1, ok1 := shiftInterval(a, b, level)
			r := sortedValues(want)
			e2 := hodgesLehmann(r)
			k := lehmannK(n1, n2, level)
			ok2 := k >= 1 && k <= len(want)-k+1
			if math.Float64bits(e1) != math.Float64bits(e2) && !(math.IsNaN(e1) && math.IsNaN(e2)) {
				t.Fatalf("estimate %v, sorted %v", e1, e2)
			}
			if ok1 && (!ok2 || l1 != want[k-1] || h1 != want[len(want)-k]) {
				t.Fatalf("interval [%v, %v], sorted [%v, %v]", l1, h1, want[k-1], want[len(want)-k])
			}
		}
	}
}

// newRanked keeps whole (and sorted) what the matrix cannot order.
func TestNewRankedOddValues(t *testing.T) {
	big := make([]float64, 60)
	for i := range big {
		big[i] = float64(100 + i)
	}
	for _, odd := range []float64{math.NaN(), math.Inf(1), -1, math.Copysign(0, -1)} {
		a := append(slices.Clone(big), odd)
		if _, ok := newRanked(a, big).(sortedValues); !ok {
			t.Errorf("%v among the runs: not kept whole", odd)
		}
	}
	if _, ok := newRanked(big, big).(ratioMatrix); !ok {
		t.Error("plain runs of 60×60 pairs: not a matrix")
	}
}

func TestKendallSAsPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 60 {
		n := rng.IntN(700)
		xs := runs(rng, n, 300, trial%2 == 0)
		if trial%5 == 0 {
			for i := range xs {
				xs[i] += float64(i) // a trend
			}
		}
		if trial%7 == 0 && n > 0 {
			xs[rng.IntN(n)] = math.NaN()
		}
		if got, want := kendallS(xs), kendallSPairs(xs); got != want {
			t.Fatalf("trial %d, %d values: S %d, pair by pair %d", trial, n, got, want)
		}
	}
}

func senSlopeAll(xs []float64) float64 {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			slopes = append(slopes, (xs[j]-xs[i])/float64(j-i))
		}
	}
	return median(slopes)
}

func TestSenSlopeAsAllPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 12 {
		n := 2 + rng.IntN(600)
		if trial < 4 {
			n = 363 + trial // past senPairsSorted, odd and even pair counts
		}
		xs := runs(rng, n, 800, trial%3 == 0)
		switch trial % 4 {
		case 1:
			for i := range xs {
				xs[i] *= 1 - 0.0005*float64(i) // drifting down
			}
		case 2:
			for i := range xs {
				xs[i] = 100 + 2*float64(i) // every slope the same
			}
		}
		if got, want := senSlope(xs), senSlopeAll(xs); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("trial %d, %d values: %v, over all pairs %v", trial, n, got, want)
		}
	}
}

// Counting the ways per sum gives the walk's p to the bit, ties and all.
func TestExactPByCountAsWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		n1, n2 := 1+rng.IntN(10), 1+rng.IntN(12)
		if binom(n1+n2, n1) > exactLimit {
			continue
		}
		a, b := runs(rng, n1, 100, false), runs(rng, n2, 100+float64(rng.IntN(20)), false)
		if trial%3 == 0 {
			for i := range a {
				a[i] = math.Round(a[i] / 20) // many ties
			}
			for i := range b {
				b[i] = math.Round(b[i] / 20)
			}
		}
		ranks := midranks(a, b)
		var r1 float64
		for i := range n1 {
			r1 += ranks[i]
		}
		walk, count := exactPByWalk(ranks, n1, r1), exactPByCount(ranks, n1, r1)
		if math.Float64bits(walk) != math.Float64bits(count) {
			t.Fatalf("%d against %d: p %v by walking, %v by counting", n1, n2, walk, count)
		}
	}
}

func TestNthSmallestAsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 200 {
		n := 1 + rng.IntN(2000)
		xs := runs(rng, n, 50, trial%2 == 0)
		switch trial % 5 {
		case 1:
			slices.Sort(xs) // already in order
		case 2:
			slices.Sort(xs)
			slices.Reverse(xs)
		case 3:
			for i := range xs {
				xs[i] = math.Round(xs[i] / 25) // few distinct values
			}
		case 4:
			xs[rng.IntN(n)] = math.Inf(1 - 2*rng.IntN(2))
		}
		sorted := slices.Sorted(slices.Values(xs))
		k := rng.IntN(n)
		if got := nthSmallest(slices.Clone(xs), k); math.Float64bits(got) != math.Float64bits(sorted[k]) {
			t.Fatalf("trial %d: rank %d of %d is %v, sorted %v", trial, k, n, got, sorted[k])
		}
	}
}
