package compare

import (
	"math"
	"sort"
)

// Drift: anything that changes while a side runs (other load, the page
// cache, an SSD's garbage collection, heat) shows as a trend in its
// repetitions taken in run order. Each side is tested for one with the
// Mann–Kendall test, and Sen's slope says how far it went; a cell whose
// side drifted is "unstable", not better or worse.

// mannKendall is the two-sided Mann–Kendall trend test of xs in run
// order: S sums the signs of every later-minus-earlier pair; p is exact
// (the distribution of inversions of a permutation) up to 10 values, the
// normal approximation with tie correction beyond. 1 under 3 values.
func mannKendall(xs []float64) (s int, p float64) {
	n := len(xs)
	if n < 3 {
		return 0, 1
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			switch {
			case xs[j] > xs[i]:
				s++
			case xs[j] < xs[i]:
				s--
			}
		}
	}
	if s == 0 {
		return 0, 1
	}
	abs := s
	if abs < 0 {
		abs = -abs
	}
	if n <= 10 {
		// S = C(n,2) - 2·inversions: P(|S| >= abs) from the count of
		// permutations by inversions (Mahonian numbers).
		counts := []float64{1}
		for m := 2; m <= n; m++ {
			next := make([]float64, len(counts)+m-1)
			for k, c := range counts {
				for j := range m {
					next[k+j] += c
				}
			}
			counts = next
		}
		pairs := n * (n - 1) / 2
		var total, tail float64
		for inv, c := range counts {
			total += c
			si := pairs - 2*inv
			if si < 0 {
				si = -si
			}
			if si >= abs {
				tail += c
			}
		}
		return s, tail / total
	}
	// Tie correction over groups of equal values.
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	nf := float64(n)
	v := nf * (nf - 1) * (2*nf + 5)
	for i := 0; i < n; {
		j := i
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		t := float64(j - i)
		v -= t * (t - 1) * (2*t + 5)
		i = j
	}
	sd := math.Sqrt(v / 18)
	if sd == 0 {
		return s, 1
	}
	z := (float64(abs) - 1) / sd
	return s, math.Erfc(z / math.Sqrt2)
}

// driftPct is how far xs moved over the run, by Sen's slope (the median
// of the slopes of every pair) times the runs it spans, as a percentage
// of their median.
func driftPct(xs []float64) float64 {
	n := len(xs)
	var slopes []float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			slopes = append(slopes, (xs[j]-xs[i])/float64(j-i))
		}
	}
	m := median(xs)
	if len(slopes) == 0 || m == 0 {
		return 0
	}
	return median(slopes) * float64(n-1) / m * 100
}
