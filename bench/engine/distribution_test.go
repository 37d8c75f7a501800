package engine

import (
	"bufio"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// zipfMass is the exact probability of ranks 1..m of n at exponent s.
func zipfMass(s float64, m, n int) float64 {
	var part, all float64
	for k := n; k >= 1; k-- { // small terms first
		p := math.Pow(float64(k), -s)
		all += p
		if k <= m {
			part += p
		}
	}
	return part / all
}

// TestZipfRanks: the sampler's rank frequencies match 1/k^s, for s below,
// at and above 1, each rank within 5 standard deviations of a binomial
// count, and the mass of the first 1% and 10% of ranks within 1 point.
func TestZipfRanks(t *testing.T) {
	const draws = 200000
	for _, s := range []float64{0.6, 0.99, 1, 1.2, 2} {
		n := 10000
		z := newZipf(s, uint64(n))
		r := newRNG(uint64(s * 1000))
		counts := make([]int, n+1)
		for i := 0; i < draws; i++ {
			k := z.rank(&r)
			if k < 1 || k > uint64(n) {
				t.Fatalf("s=%g: rank %d outside 1..%d", s, k, n)
			}
			counts[k]++
		}
		for k := 1; k <= 10; k++ {
			p := zipfMass(s, k, n) - zipfMass(s, k-1, n)
			want := p * draws
			sd := math.Sqrt(draws * p * (1 - p))
			if got := float64(counts[k]); math.Abs(got-want) > 5*sd+1 {
				t.Errorf("s=%g: rank %d drawn %d times, want %.0f ± %.0f", s, k, counts[k], want, 5*sd)
			}
		}
		for _, frac := range []float64{0.01, 0.1} {
			m := int(float64(n) * frac)
			got := 0
			for k := 1; k <= m; k++ {
				got += counts[k]
			}
			if want := zipfMass(s, m, n); math.Abs(float64(got)/draws-want) > 0.01 {
				t.Errorf("s=%g: top %g%% of ranks got %.4f of the draws, want %.4f", s, frac*100, float64(got)/draws, want)
			}
		}
	}
}

// TestZipfScatter: ranks are spread over the region (the hottest block is
// not block 0 for every seed, and the hot set is not the first blocks),
// and every block stays inside it.
func TestZipfScatter(t *testing.T) {
	const n = 4096
	g := newSkewedGen(1<<20, 4096, n, Distribution{Kind: DistZipf, Theta: 1.2}, 7)
	counts := map[int64]int{}
	for {
		off, ok := g.next()
		if !ok {
			break
		}
		if off < 1<<20 || off >= 1<<20+n*4096 || off%4096 != 0 {
			t.Fatalf("offset %d outside the region or unaligned", off)
		}
		counts[off]++
	}
	total := 0
	inFirst := 0
	for off, c := range counts {
		total += c
		if off < 1<<20+n/10*4096 {
			inFirst += c
		}
	}
	if total != n {
		t.Fatalf("a pass drew %d offsets, want %d", total, n)
	}
	if len(counts) > n/2 {
		t.Errorf("%d distinct blocks of %d in a pass: not skewed", len(counts), n)
	}
	// The top 10% of ranks carry about 94% of the draws; scattered, the
	// first 10% of the region gets about its share, nowhere near that.
	if f := float64(inFirst) / n; f > 0.5 {
		t.Errorf("the first 10%% of the region got %.2f of the draws: hot blocks not scattered", f)
	}
	// Two jobs of one run share the hot set: their hottest block is the same.
	hottest := func(seed uint64) int64 {
		g := newSkewedGen(0, 4096, n, Distribution{Kind: DistZipf, Theta: 1.2}, seed)
		c := map[int64]int{}
		best, bestN := int64(-1), 0
		for {
			off, ok := g.next()
			if !ok {
				return best
			}
			if c[off]++; c[off] > bestN {
				best, bestN = off, c[off]
			}
		}
	}
	if a, b := hottest(1), hottest(99); a != b {
		t.Errorf("jobs' hottest blocks differ: %d and %d", a, b)
	}
	g.newPass()
	if _, ok := g.next(); !ok {
		t.Error("a new pass drew nothing")
	}
}

// TestZoned: 90% of the I/O to the first 10% of the region, uniform
// within each zone; a three-zone split lands where it says.
func TestZoned(t *testing.T) {
	const n = 10000
	const draws = 100000
	for _, c := range []struct {
		zones []Zone
		// want fraction of draws per tenth of the region
		want [10]float64
	}{
		{[]Zone{{90, 10}, {10, 90}}, [10]float64{0.9, 0.1 / 9, 0.1 / 9, 0.1 / 9, 0.1 / 9, 0.1 / 9, 0.1 / 9, 0.1 / 9, 0.1 / 9, 0.1 / 9}},
		{[]Zone{{60, 10}, {30, 20}, {10, 70}}, [10]float64{0.6, 0.15, 0.15, 0.1 / 7, 0.1 / 7, 0.1 / 7, 0.1 / 7, 0.1 / 7, 0.1 / 7, 0.1 / 7}},
	} {
		s := newZonedSampler(c.zones, n)
		r := newRNG(3)
		var tenths [10]int
		for i := 0; i < draws; i++ {
			b := s.draw(&r)
			if b >= n {
				t.Fatalf("%v: block %d of %d", c.zones, b, n)
			}
			tenths[b*10/n]++
		}
		for i, w := range c.want {
			if got := float64(tenths[i]) / draws; math.Abs(got-w) > 0.01 {
				t.Errorf("%v: tenth %d got %.3f of the draws, want %.3f", c.zones, i, got, w)
			}
		}
	}
	// A zone too small for one block still gets one.
	s := newZonedSampler([]Zone{{50, 0.001}, {50, 99.999}}, 100)
	r := newRNG(1)
	hits0 := 0
	for i := 0; i < 1000; i++ {
		if s.draw(&r) == 0 {
			hits0++
		}
	}
	if hits0 < 400 {
		t.Errorf("block 0 drawn %d times of 1000, want about half", hits0)
	}
}

func TestDistributionValidate(t *testing.T) {
	for _, d := range []Distribution{
		{Kind: DistZipf}, {Kind: DistZipf, Theta: -1}, {Kind: DistZipf, Theta: math.NaN()},
		{Kind: DistZoned}, {Kind: DistZoned, Zones: []Zone{{90, 10}, {20, 90}}}, {Kind: DistZoned, Zones: []Zone{{100, 0}}},
		{Kind: "pareto"},
	} {
		if d.validate() == nil {
			t.Errorf("%+v: no error", d)
		}
	}
	for _, d := range []Distribution{{}, {Kind: DistZipf, Theta: 0.5}, {Kind: DistZoned, Zones: []Zone{{90, 10}, {10, 90}}}} {
		if err := d.validate(); err != nil {
			t.Errorf("%+v: %v", d, err)
		}
	}
}

// hotShares are the shares of all draws that went to the hottest 0.1%, 1%
// and 10% of the region's blocks, by what was drawn.
func hotShares(counts map[int64]int, nBlocks int) [3]float64 {
	var v []int
	total := 0
	for _, c := range counts {
		v = append(v, c)
		total += c
	}
	slices.Sort(v)
	slices.Reverse(v)
	var out [3]float64
	for i, frac := range []float64{0.001, 0.01, 0.1} {
		m := min(int(float64(nBlocks)*frac), len(v))
		s := 0
		for _, c := range v[:m] {
			s += c
		}
		out[i] = float64(s) / float64(total)
	}
	return out
}

// TestSkewAgainstFio: the same workload through fio's own generators (its
// null engine moves no data; write_iolog lists every offset) and through
// this engine give the same hot sets: the shares of I/O on the hottest
// 0.1%, 1% and 10% of blocks within 3 points for zipf (fio's zipf is Gray
// et al.'s approximation, ours exact: fio puts about 1.5 points more on
// its hottest blocks), and the share of the first 10% of the region for
// zoned within 1 point.
func TestSkewAgainstFio(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Skip("fio not installed (scripts/test.sh installs it)")
	}
	const size, bs = 256 << 20, 4096
	const n = size / bs
	dir := t.TempDir()
	for i, c := range []struct {
		fio  string
		dist Distribution
	}{
		{"zipf:1.2", Distribution{Kind: DistZipf, Theta: 1.2}},
		{"zipf:0.8", Distribution{Kind: DistZipf, Theta: 0.8}},
		{"zoned:90/10:10/90", Distribution{Kind: DistZoned, Zones: []Zone{{90, 10}, {10, 90}}}},
	} {
		log := filepath.Join(dir, "iolog"+strconv.Itoa(i)) // fio appends to a log that exists
		out, err := exec.CommandContext(context.Background(), fio, "--name=skew", "--ioengine=null", "--size="+strconv.Itoa(size),
			"--bs="+strconv.Itoa(bs), "--rw=randread", "--random_distribution="+c.fio, "--write_iolog="+log).CombinedOutput()
		if err != nil {
			t.Fatalf("fio %s: %v\n%s", c.fio, err, out)
		}
		theirs := readIOLog(t, log)
		ours := map[int64]int{}
		g := newSkewedGen(0, bs, n, c.dist, 12345)
		for {
			off, ok := g.next()
			if !ok {
				break
			}
			ours[off]++
		}
		if c.dist.Kind == DistZipf {
			a, b := hotShares(theirs, n), hotShares(ours, n)
			for i := range a {
				if math.Abs(a[i]-b[i]) > 0.03 {
					t.Errorf("%s: hottest %s of blocks: fio %.4f, ours %.4f", c.fio, []string{"0.1%", "1%", "10%"}[i], a[i], b[i])
				}
			}
			t.Logf("%s: hot shares fio %.4f, ours %.4f", c.fio, a, b)
			continue
		}
		first := func(m map[int64]int) float64 {
			in, all := 0, 0
			for off, k := range m {
				all += k
				if off < size/10 {
					in += k
				}
			}
			return float64(in) / float64(all)
		}
		if a, b := first(theirs), first(ours); math.Abs(a-b) > 0.01 {
			t.Errorf("%s: first 10%% of the region got fio %.4f, ours %.4f of the I/O", c.fio, a, b)
		}
	}
}

// readIOLog counts the offsets of fio's iolog (version 3: "time file
// action offset length").
func readIOLog(t *testing.T, path string) map[int64]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int64]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) == 5 && w[2] == "read" {
			off, err := strconv.ParseInt(w[3], 10, 64)
			if err != nil {
				t.Fatalf("iolog line %q", sc.Text())
			}
			out[off]++
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no reads logged", path)
	}
	return out
}
