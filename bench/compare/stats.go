package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/diskprep/diskprep/bench/record"
)

// Alpha is the significance level of every verdict.
const Alpha = 0.05

// exactLimit bounds the number of rank arrangements enumerated for an exact
// Mann–Whitney p-value; beyond it the normal approximation is good anyway
// (it only happens with more than about 9 repeats per side).
const exactLimit = 100000

// mannWhitney is the two-sided Mann–Whitney U test of a against b. The
// p-value is exact (every arrangement of the pooled midranks enumerated, so
// ties are handled exactly) when there are at most exactLimit arrangements,
// else the normal approximation with tie and continuity correction.
func mannWhitney(a, b []float64) (u, p float64, exact bool) {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return 0, 1, true
	}
	ranks := midranks(a, b)
	var r1 float64
	for i := range n1 {
		r1 += ranks[i]
	}
	u = r1 - float64(n1*(n1+1))/2
	mean := float64(n1*n2) / 2
	if arrangements := binom(n1+n2, n1); arrangements <= exactLimit {
		if countCost(ranks, n1) < 8*arrangements {
			return u, exactPByCount(ranks, n1, r1), true
		}
		return u, exactPByWalk(ranks, n1, r1), true
	}
	n := float64(n1 + n2)
	// Tie correction: sum of t^3-t over groups of tied values.
	sorted := append([]float64(nil), ranks...)
	sort.Float64s(sorted)
	var ties float64
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j] == sorted[i] {
			j++
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	sigma := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - ties/(n*(n-1))))
	if sigma == 0 {
		return u, 1, false
	}
	z := (math.Abs(u-mean) - 0.5) / sigma
	if z < 0 {
		z = 0
	}
	return u, math.Erfc(z / math.Sqrt2), false
}

// exactPByWalk is the exact two-sided p: the share of the ways to pick
// n1 of the pooled midranks whose sum is at least as far from its
// expectation as a's, r1, walking every way.
func exactPByWalk(ranks []float64, n1 int, r1 float64) float64 {
	expect := float64(n1) * float64(len(ranks)+1) / 2
	obs := math.Abs(r1 - expect)
	var total, extreme float64
	var walk func(start, left int, sum float64)
	walk = func(start, left int, sum float64) {
		if left == 0 {
			total++
			if math.Abs(sum-expect) >= obs-1e-9 {
				extreme++
			}
			return
		}
		for i := start; i <= len(ranks)-left; i++ {
			walk(i+1, left-1, sum+ranks[i])
		}
	}
	walk(0, n1, 0)
	return extreme / total
}

// exactPByCount is exactPByWalk counting the ways per sum instead of
// walking them: midranks are halves, so twice a sum is an integer, and
// the ways to reach it with k ranks are added up rank by rank. Every
// count and every sum is an exact integer (or half) in a float64, so p
// is the walk's to the bit. A fleet's comparison by host tests
// thousands of columns of 8 or 9 runs, some 50,000 ways each to walk.
func exactPByCount(ranks []float64, n1 int, r1 float64) float64 {
	expect := float64(n1) * float64(len(ranks)+1) / 2
	obs := math.Abs(r1 - expect)
	doubled := make([]int, len(ranks))
	most := 0
	for i, r := range ranks {
		doubled[i] = int(2 * r)
		most += doubled[i]
	}
	// ways[k][s]: the ways to pick k of the ranks seen so far with
	// doubled sum s.
	ways := make([][]float64, n1+1)
	for k := range ways {
		ways[k] = make([]float64, most+1)
	}
	ways[0][0] = 1
	reach := 0 // the largest doubled sum of the ranks seen so far
	for i, d := range doubled {
		reach += d
		// Only counts that can still grow to n1 picks matter.
		for k := min(n1, i+1); k >= max(1, n1-(len(doubled)-1-i)); k-- {
			for s := reach; s >= d; s-- {
				ways[k][s] += ways[k-1][s-d]
			}
		}
	}
	var total, extreme float64
	for s, w := range ways[n1] {
		if w == 0 {
			continue
		}
		total += w
		if math.Abs(float64(s)/2-expect) >= obs-1e-9 {
			extreme += w
		}
	}
	return extreme / total
}

// countCost is about the steps exactPByCount takes, to weigh against the
// arrangements exactPByWalk visits: counting wins once there are many.
func countCost(ranks []float64, n1 int) float64 {
	n := float64(len(ranks))
	return n * float64(n1) * n * (n + 1)
}

// midranks ranks the pooled values 1..n, ties sharing the mean of their
// ranks; a's values come first in the result.
func midranks(a, b []float64) []float64 {
	type item struct {
		v float64
		i int
	}
	items := make([]item, 0, len(a)+len(b))
	for i, v := range a {
		items = append(items, item{v, i})
	}
	for i, v := range b {
		items = append(items, item{v, len(a) + i})
	}
	sort.SliceStable(items, func(x, y int) bool { return items[x].v < items[y].v })
	ranks := make([]float64, len(items))
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].v == items[i].v {
			j++
		}
		r := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			ranks[items[k].i] = r
		}
		i = j
	}
	return ranks
}

// minAttainableP is the smallest two-sided p-value the exact test can give
// with n1 and n2 values: when it exceeds Alpha no data could show a
// difference, so the honest verdict is "n too small to judge".
func minAttainableP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	return math.Min(1, 2/binom(n1+n2, n1))
}

// MinRuns is the fewest repetitions a side from which the test can call
// a difference significant (4: 3 against 3 attain p = 0.1 at best).
func MinRuns() int {
	n := 1
	for minAttainableP(n, n) > Alpha {
		n++
	}
	return n
}

func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return math.Round(r)
}

// median is the record's median (record.Median), so a comparison's cell and
// the record's own summary agree on what the middle of the runs is.
func median(values []float64) float64 { return record.Median(values) }

// One method gives each cell its verdict, its estimate and its interval:
// the Mann–Whitney test and its inversion. The estimate is the
// Hodges–Lehmann ratio, the median of the ratios of every pair (a cell's
// run over a baseline run); the interval is the range of ratios the test
// would not reject, read off the same sorted pairwise ratios (Lehmann's
// interval, from U's exact distribution). So a change is called better
// or worse only when its interval excludes no change. Across the cells of
// a comparison the p-values are corrected with Benjamini–Hochberg and the
// intervals are the matching false-coverage-rate intervals
// (Benjamini–Yekutieli 2005): with R of m cells selected at α, every
// interval is at the level 1 - R·α/m.

// exactPairs bounds the pairs (n1·n2) for which U's null distribution is
// counted exactly; beyond it the normal approximation serves.
const exactPairs = 2500

// pairRatios are b_j / a_i for every pair, sorted; a zero baseline run
// gives +Inf (or 1 against another zero: no change).
func pairRatios(a, b []float64) []float64 {
	out := make([]float64, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, pairRatio(x, y))
		}
	}
	sort.Float64s(out)
	return out
}

// pairRatio is one pair's ratio, y over the baseline run x.
func pairRatio(x, y float64) float64 {
	switch {
	case x == 0 && y == 0:
		return 1
	case x == 0:
		return math.Inf(1)
	}
	return y / x
}

// ranked is a sorted multiset read by rank: at(k) is its k-th smallest
// (0-based) of len().
type ranked interface {
	len() int
	at(k int) float64
}

// sortedValues is a ranked multiset held whole, already sorted.
type sortedValues []float64

func (s sortedValues) len() int         { return len(s) }
func (s sortedValues) at(k int) float64 { return s[k] }

// ratioMatrix is pairRatios(a, b) without its n1·n2 values: a column
// of the five runs per side it was made for holds thousands when a fleet's
// records are pooled, and sorting millions of ratios per cell took most
// of a comparison's time. Both sides are sorted and every value is finite
// and not negative, so in the matrix of ratios (rows a ascending, columns
// b ascending) each row ascends and each column descends (IEEE division
// is monotone): the pairs at most t form a staircase, counted in
// n1+n2 steps, and the k-th smallest ratio is found by bisection over
// the float64s themselves. It is exactly the value sorting would put at
// k: the same division of the same two runs.
type ratioMatrix struct{ a, b []float64 }

// newRanked returns pairRatios(a, b) as a ranked multiset: a ratioMatrix
// when the values allow one, else every ratio, sorted.
func newRanked(a, b []float64) ranked {
	plain := func(vs []float64) bool {
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Signbit(v) {
				return false
			}
		}
		return true
	}
	if len(a)*len(b) <= exactPairs || !plain(a) || !plain(b) {
		return sortedValues(pairRatios(a, b))
	}
	m := ratioMatrix{a: slices.Clone(a), b: slices.Clone(b)}
	slices.Sort(m.a)
	slices.Sort(m.b)
	return m
}

func (m ratioMatrix) len() int { return len(m.a) * len(m.b) }

// countAtMost is the number of pairs whose ratio is at most t.
func (m ratioMatrix) countAtMost(t float64) int {
	n, j := 0, 0
	// A row's pairs at most t are a prefix of it, and a later row's
	// prefix is no shorter (its ratios are no larger).
	for _, x := range m.a {
		for j < len(m.b) && pairRatio(x, m.b[j]) <= t {
			j++
		}
		n += j
	}
	return n
}

// at is the k-th smallest ratio: the smallest float64 t with more than k
// pairs at most t. Non-negative float64s order as their bits do, so the
// bisection runs over the bits, +Inf (every pair) bounding it.
func (m ratioMatrix) at(k int) float64 {
	lo, hi := uint64(0), math.Float64bits(math.Inf(1))
	for lo < hi {
		mid := lo + (hi-lo)/2
		if m.countAtMost(math.Float64frombits(mid)) > k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return math.Float64frombits(lo)
}

// hodgesLehmann is the median of the sorted pairwise ratios (the middle
// two's geometric mean for an even count, as the median on a log scale).
func hodgesLehmann(r ranked) float64 {
	n := r.len()
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return r.at(n / 2)
	}
	lo, hi := r.at(n/2-1), r.at(n/2)
	if lo > 0 && !math.IsInf(hi, 0) {
		return math.Sqrt(lo * hi)
	}
	return (lo + hi) / 2
}

// uCDF is P(U <= u) for u = 0..n1·n2 under the null hypothesis (no
// ties): the counts of the rank arrangements, f(i,j,u) = f(i-1,j,u-j) +
// f(i,j-1,u), over their total.
func uCDF(n1, n2 int) []float64 {
	// f[j] holds the counts for sizes (i, j) as i grows.
	f := make([][]float64, n2+1)
	for j := range f {
		f[j] = []float64{1} // i = 0: U is 0 in one way
	}
	for i := 1; i <= n1; i++ {
		g := make([][]float64, n2+1)
		g[0] = []float64{1}
		for j := 1; j <= n2; j++ {
			c := make([]float64, i*j+1)
			for u, v := range g[j-1] { // f(i, j-1, u)
				c[u] += v
			}
			for u, v := range f[j] { // f(i-1, j, u-j)
				c[u+j] += v
			}
			g[j] = c
		}
		f = g
	}
	counts := f[n2]
	var total float64
	for _, v := range counts {
		total += v
	}
	cdf := make([]float64, len(counts))
	var run float64
	for u, v := range counts {
		run += v
		cdf[u] = run / total
	}
	return cdf
}

// lehmannK is the rank k (1-based) of the sorted pairwise ratios that
// bounds the interval at level: [r_k, r_{N+1-k}], k the largest with
// P(U <= k-1) <= (1-level)/2. 0 when no k does: too few runs for an
// interval at that level.
func lehmannK(n1, n2 int, level float64) int {
	half := (1 - level) / 2
	if n1*n2 <= exactPairs {
		cdf := uCDF(n1, n2)
		k := 0
		for k < len(cdf) && cdf[k] <= half+1e-12 {
			k++
		}
		return k
	}
	n := float64(n1 * n2)
	z := normalQuantile(1 - half)
	k := int(math.Floor(n/2 - z*math.Sqrt(n*float64(n1+n2+1)/12)))
	return max(k, 0)
}

// shiftInterval is the Hodges–Lehmann ratio of b over a and its interval
// at level; ok is false when the runs are too few for one, or it is
// unbounded (a zero baseline).
func shiftInterval(a, b []float64, level float64) (est, lo, hi float64, ok bool) {
	return shiftIntervalK(a, b, lehmannK(len(a), len(b), level))
}

// lehmannKs remembers lehmannK at one level by the sizes of the two
// sides: a comparison of a thousand hosts asks for the same few sizes
// thousands of times, and each exact answer counts U's whole
// distribution.
type lehmannKs struct {
	level float64
	k     map[[2]int]int
}

func (m *lehmannKs) get(n1, n2 int) int {
	if k, ok := m.k[[2]int{n1, n2}]; ok {
		return k
	}
	if m.k == nil {
		m.k = map[[2]int]int{}
	}
	k := lehmannK(n1, n2, m.level)
	m.k[[2]int{n1, n2}] = k
	return k
}

// shiftIntervalK is shiftInterval with the interval's rank k given.
func shiftIntervalK(a, b []float64, k int) (est, lo, hi float64, ok bool) {
	r := newRanked(a, b)
	est = hodgesLehmann(r)
	if k < 1 || k > r.len()-k+1 {
		return est, 0, 0, false
	}
	lo, hi = r.at(k-1), r.at(r.len()-k)
	if math.IsInf(hi, 0) || math.IsNaN(est) || math.IsInf(est, 0) {
		return est, 0, 0, false
	}
	return est, lo, hi, true
}

// benjaminiHochberg returns the adjusted p-values (q) of ps and R, how many
// are selected at alpha: the largest k with p_(k) <= k·alpha/m.
func benjaminiHochberg(ps []float64, alpha float64) (q []float64, selected int) {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return ps[order[x]] < ps[order[y]] })
	for k := m; k >= 1; k-- {
		if ps[order[k-1]] <= float64(k)*alpha/float64(m) {
			selected = k
			break
		}
	}
	q = make([]float64, m)
	run := 1.0
	for k := m; k >= 1; k-- {
		i := order[k-1]
		run = math.Min(run, ps[i]*float64(m)/float64(k))
		q[i] = run
	}
	return q, selected
}

// normalQuantile is the standard normal's quantile function (p in (0,1)),
// by bisection on the complementary error function: exact enough for an
// interval's rank.
func normalQuantile(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

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
		return kendallSPairs(xs)
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

// kendallSPairs is S pair by pair, for few runs or with NaN among them.
func kendallSPairs(xs []float64) int {
	s := 0
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
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
