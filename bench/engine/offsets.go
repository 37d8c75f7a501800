package engine

import "math/bits"

// offsetGen yields the block offsets of one pass over the region.
// Sequential: base, base+bs, ... Random: a seeded permutation of the
// blocks, so a pass visits every block exactly once (fio's default random
// map) while the order is uniform-looking and reproducible from the seed;
// or, with a skewed distribution (distribution.go), n independent draws.
type offsetGen struct {
	base, bs int64
	n, i     uint64
	random   bool
	seed     uint64
	pass     uint64
	perm     perm
	skew     sampler // nil: the permutation
	draws    rng
}

func newOffsetGen(base, bs int64, n uint64, random bool, seed uint64) *offsetGen {
	g := &offsetGen{base: base, bs: bs, n: n, random: random, seed: seed}
	g.perm = newPerm(n, seed)
	return g
}

// newSkewedGen is a random offsetGen drawing blocks by d (not uniform).
func newSkewedGen(base, bs int64, n uint64, d Distribution, seed uint64) *offsetGen {
	g := newOffsetGen(base, bs, n, true, seed)
	// The scatter of ranks is the same for every job (the seed of the
	// run, not the job's), so all jobs share one hot set, as fio's jobs
	// on one file do.
	g.skew = newSampler(d, n, 0)
	g.draws = newRNG(seed ^ 0xd1b54a32d192ed03)
	return g
}

// next returns the next offset, or false when the pass is over.
func (g *offsetGen) next() (int64, bool) {
	if g.i >= g.n {
		return 0, false
	}
	b := g.i
	g.i++
	switch {
	case g.skew != nil:
		b = g.skew.draw(&g.draws)
	case g.random:
		b = g.perm.at(b)
	}
	return g.base + int64(b)*g.bs, true
}

// newPass starts another pass; random passes get a fresh order.
func (g *offsetGen) newPass() {
	g.i = 0
	g.pass++
	if g.random && g.skew == nil {
		g.perm = newPerm(g.n, splitmix(g.seed+g.pass*0x9e3779b97f4a7c15))
	}
}

// perm is a keyed bijection on [0, 2^k) (multiply by an odd constant and
// add, then xor-shift, three rounds: each step is invertible mod 2^k),
// restricted to [0, n) by cycle walking: applying it again until the value
// falls below n keeps it a bijection on [0, n), at under two rounds on
// average since 2^k < 2n.
type perm struct {
	n, mask uint64
	shift   uint
	mul     [3]uint64
	add     [3]uint64
}

func newPerm(n, seed uint64) perm {
	k := uint(1)
	if n > 1 {
		k = uint(bits.Len64(n - 1))
	}
	p := perm{n: n, mask: 1<<k - 1, shift: max(1, (k+1)/2)}
	if k == 64 {
		p.mask = ^uint64(0)
	}
	s := seed
	for r := range p.mul {
		s = splitmix(s)
		p.mul[r] = s | 1
		s = splitmix(s)
		p.add[r] = s
	}
	return p
}

func (p *perm) round(x uint64) uint64 {
	for r := 0; r < 3; r++ {
		x = (x*p.mul[r] + p.add[r]) & p.mask
		x ^= x >> p.shift
	}
	return x
}

func (p *perm) at(i uint64) uint64 {
	x := p.round(i)
	for x >= p.n {
		x = p.round(x)
	}
	return x
}

// splitmix is the SplitMix64 finaliser, used to derive seeds.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// rng is xorshift64*: one multiply per draw, per job, for the read/write mix
// and for buffer contents.
type rng struct{ s uint64 }

func newRNG(seed uint64) rng {
	s := splitmix(seed)
	if s == 0 {
		s = 1
	}
	return rng{s}
}

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 0x2545f4914f6cdd1d
}
