package compare

import (
	"math"
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
			switch {
			case x == 0 && y == 0:
				out = append(out, 1)
			case x == 0:
				out = append(out, math.Inf(1))
			default:
				out = append(out, y/x)
			}
		}
	}
	sort.Float64s(out)
	return out
}

// hodgesLehmann is the median of the sorted pairwise ratios (the middle
// two's geometric mean for an even count, as the median on a log scale).
func hodgesLehmann(r []float64) float64 {
	n := len(r)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return r[n/2]
	}
	lo, hi := r[n/2-1], r[n/2]
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
	r := pairRatios(a, b)
	est = hodgesLehmann(r)
	k := lehmannK(len(a), len(b), level)
	if k < 1 || k > len(r)-k+1 {
		return est, 0, 0, false
	}
	lo, hi = r[k-1], r[len(r)-k]
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
