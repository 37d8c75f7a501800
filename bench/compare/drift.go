package compare

import (
	"math"
	"math/rand/v2"
	"slices"
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
	s = kendallS(xs)
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

// kendallS is Mann–Kendall's S, the signs of every later-minus-earlier
// pair summed. Pair by pair it is n²/2 comparisons, 12 million for the
// 5,000 runs of a fleet's pooled column; without NaN (which compares
// with nothing, so adds nothing) it is the pairs less those tied and
// twice those out of order, and a merge sort counts those in n·log n.
func kendallS(xs []float64) int {
	n := len(xs)
	if n < 64 || slices.ContainsFunc(xs, math.IsNaN) {
		s := 0
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
		return s
	}
	sorted := slices.Clone(xs)
	inversions := mergeCount(sorted, make([]float64, n))
	ties := 0
	for i := 0; i < n; {
		j := i
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		ties += (j - i) * (j - i - 1) / 2
		i = j
	}
	pairs := n * (n - 1) / 2
	return pairs - ties - 2*inversions
}

// mergeCount sorts xs (tmp is as long) and returns its inversions: the
// pairs i < j with xs[i] > xs[j], ties not counted.
func mergeCount(xs, tmp []float64) int {
	if len(xs) < 2 {
		return 0
	}
	mid := len(xs) / 2
	inv := mergeCount(xs[:mid], tmp[:mid]) + mergeCount(xs[mid:], tmp[mid:])
	i, j, k := 0, mid, 0
	for i < mid && j < len(xs) {
		if xs[j] < xs[i] {
			// Every left value still waiting is above this right one.
			inv += mid - i
			tmp[k] = xs[j]
			j++
		} else {
			tmp[k] = xs[i]
			i++
		}
		k++
	}
	k += copy(tmp[k:], xs[i:mid])
	copy(tmp[k:], xs[j:])
	copy(xs, tmp[:len(xs)])
	return inv
}

// driftPct is how far xs moved over the run, by Sen's slope (the median
// of the slopes of every pair) times the runs it spans, as a percentage
// of their median.
func driftPct(xs []float64) float64 {
	n := len(xs)
	m := median(xs)
	if n < 2 || m == 0 {
		return 0
	}
	return senSlope(xs) * float64(n-1) / m * 100
}

// slopeAt is the slope of the pair i < j.
func slopeAt(xs []float64, i, j int) float64 { return (xs[j] - xs[i]) / float64(j-i) }

// senPairsSorted bounds the pairs whose slopes senSlope sorts whole; a
// column of thousands of runs has millions.
const senPairsSorted = 1 << 16

// senSlope is the median of the slopes of every pair of xs (at least
// two values), as median would give it over all of them. With many
// pairs it does not keep them all: a sample of slopes brackets the
// median's ranks, one pass over the pairs counts those below the bracket
// and keeps those in it, and the ranks are read off the few kept. The
// values are the very slopes (the same subtraction and division), so
// the median is the same to the bit; a sample that misses, which its
// margin makes rare, costs a second pass, never a different answer.
func senSlope(xs []float64) float64 {
	n := len(xs)
	pairs := n * (n - 1) / 2
	all := func() float64 {
		slopes := make([]float64, 0, pairs)
		for i := range n {
			for j := i + 1; j < n; j++ {
				slopes = append(slopes, slopeAt(xs, i, j))
			}
		}
		return median(slopes)
	}
	// NaN and infinities make slopes that do not order; a negative zero
	// one that orders as a zero but prints otherwise, so which of the two
	// lands mid-way would be the sort's choice.
	odd := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v == 0 && math.Signbit(v) }
	if pairs <= senPairsSorted || slices.ContainsFunc(xs, odd) {
		return all()
	}
	// The ranks median reads: the middle one, or the middle two.
	k1, k2 := (pairs-1)/2, pairs/2
	const samples = 1 << 14
	rng := rand.New(rand.NewPCG(0x5e75, uint64(n)))
	sample := make([]float64, samples)
	for s := range sample {
		i, j := rng.IntN(n), rng.IntN(n-1)
		if j >= i {
			j++
		} else {
			i, j = j, i
		}
		sample[s] = slopeAt(xs, i, j)
	}
	slices.Sort(sample)
	// Four standard deviations of a sampled rank either side.
	margin := int(4*math.Sqrt(samples*0.25)) + 1
	lo := sample[max(k1*samples/pairs-margin, 0)]
	hi := sample[min(k2*samples/pairs+margin, samples-1)]
	below := 0
	var kept []float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			switch s := slopeAt(xs, i, j); {
			case s < lo:
				below++
			case s <= hi:
				kept = append(kept, s)
			}
		}
	}
	if below > k1 || below+len(kept) <= k2 {
		return all()
	}
	if k1 == k2 {
		return nthSmallest(kept, k1-below)
	}
	return (nthSmallest(kept, k1-below) + nthSmallest(kept, k2-below)) / 2
}

// nthSmallest is what xs[k] would be were xs sorted (xs holds no NaN),
// found by partitioning around a median of three and keeping only the
// side that holds k: the slopes kept around a median are some 3% of the
// pairs, 140,000 for a column of 3,000 runs, and sorting them took most
// of Sen's slope. xs is reordered. Past a depth no good pivot gives, the
// rest is sorted.
func nthSmallest(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for depth := 0; lo < hi; depth++ {
		if depth == 64 {
			slices.Sort(xs[lo : hi+1])
			break
		}
		a, b, c := xs[lo], xs[lo+(hi-lo)/2], xs[hi]
		p := max(min(a, b), min(max(a, b), c))
		// Three ways, so that runs of equal slopes end the search.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case xs[i] < p:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case xs[i] > p:
				xs[i], xs[gt] = xs[gt], xs[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return xs[k]
}
