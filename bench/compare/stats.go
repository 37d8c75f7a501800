package compare

import (
	"math"
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
