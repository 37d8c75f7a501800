package compare

import (
	"math"
	"slices"
	"sort"
)

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
