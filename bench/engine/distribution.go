package engine

import (
	"fmt"
	"math"
)

// Skewed random offsets, as fio's random_distribution: a cache helps only
// as much as the workload comes back to the same blocks, which a uniform
// random map (every block once per pass) never does.
//
//   - zipf:THETA: block of rank k is drawn with probability proportional
//     to 1/k^THETA (fio's zipf:1.2; YCSB's 0.99); ranks are scattered over
//     the region by the keyed permutation, as fio hashes them, so the hot
//     blocks are not all at its start;
//   - zoned: access percentages per size percentage of the region, in
//     order from its start (fio's zoned:90/10:10/90, 90% of I/O to the
//     first 10% of the data); uniform within a zone.
//
// Draws are independent (no random map: a hot block repeats within a
// pass); a size-based pass is still as many I/Os as the region has blocks.

// Distribution kinds.
const (
	DistUniform = ""
	DistZipf    = "zipf"
	DistZoned   = "zoned"
)

// Distribution says how random offsets are spread over the region. The
// zero value is uniform (the random map).
type Distribution struct {
	Kind  string
	Theta float64 // zipf: > 0
	Zones []Zone  // zoned: access and size percentages each summing to 100
}

// Zone is one part of a zoned distribution: AccessPercent of the I/O goes
// to the next SizePercent of the region.
type Zone struct {
	AccessPercent float64
	SizePercent   float64
}

func (d Distribution) validate() error {
	switch d.Kind {
	case DistUniform:
		return nil
	case DistZipf:
		if !(d.Theta > 0) || math.IsInf(d.Theta, 0) || d.Theta > 100 {
			return fmt.Errorf("zipf theta %g: want a number above 0", d.Theta)
		}
		return nil
	case DistZoned:
		if len(d.Zones) == 0 {
			return fmt.Errorf("zoned distribution without zones")
		}
		var acc, size float64
		for _, z := range d.Zones {
			if !(z.AccessPercent >= 0) || !(z.SizePercent > 0) {
				return fmt.Errorf("zone %g/%g: want access >= 0 and size > 0 percent", z.AccessPercent, z.SizePercent)
			}
			acc += z.AccessPercent
			size += z.SizePercent
		}
		if math.Abs(acc-100) > 0.01 || math.Abs(size-100) > 0.01 {
			return fmt.Errorf("zones add up to %g%% of the I/O over %g%% of the region, want 100 and 100", acc, size)
		}
		return nil
	}
	return fmt.Errorf("unknown distribution %q (want zipf or zoned)", d.Kind)
}

// sampler draws block indexes in [0, n) by a skewed distribution.
type sampler interface {
	draw(r *rng) uint64
}

func newSampler(d Distribution, n, seed uint64) sampler {
	switch d.Kind {
	case DistZipf:
		return &zipfSampler{z: newZipf(d.Theta, n), scatter: newPerm(n, splitmix(seed^0x7a17f5))}
	case DistZoned:
		return newZonedSampler(d.Zones, n)
	}
	return nil
}

// unit is a uniform float64 in [0, 1) from 53 random bits.
func (r *rng) unit() float64 { return float64(r.next()>>11) / (1 << 53) }

type zipfSampler struct {
	z       zipf
	scatter perm
}

func (s *zipfSampler) draw(r *rng) uint64 { return s.scatter.at(s.z.rank(r) - 1) }

// zipf draws ranks 1..n with P(k) proportional to k^-s by rejection-
// inversion (Hörmann and Derflinger, "Rejection-inversion to generate
// variates from monotone discrete distributions", 1996), which needs no
// table, takes O(1) per draw for every n and works for every s > 0,
// including s = 1 and the s < 1 that Go's math/rand.Zipf refuses.
type zipf struct {
	s, n               float64
	hX1, hN, threshold float64
}

func newZipf(s float64, n uint64) zipf {
	z := zipf{s: s, n: float64(n)}
	z.hX1 = z.hIntegral(1.5) - 1
	z.hN = z.hIntegral(z.n + 0.5)
	z.threshold = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	return z
}

func (z zipf) rank(r *rng) uint64 {
	for {
		u := z.hN + r.unit()*(z.hX1-z.hN)
		x := z.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > z.n {
			k = z.n
		}
		if k-x <= z.threshold || u >= z.hIntegral(k+0.5)-z.h(k) {
			return uint64(k)
		}
	}
}

// h is the density x^-s; hIntegral its antiderivative (x^(1-s)-1)/(1-s),
// log x at s = 1, written with helpers that stay exact near s = 1.
func (z zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

func (z zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return helperExpm1((1-z.s)*lx) * lx
}

func (z zipf) hIntegralInverse(x float64) float64 {
	t := x * (1 - z.s)
	if t < -1 {
		t = -1 // rounding; the true value is never below -1
	}
	return math.Exp(helperLog1p(t) * x)
}

// helperLog1p is log(1+x)/x, helperExpm1 (e^x-1)/x, both continuous at 0.
func helperLog1p(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

func helperExpm1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x*(1.0/3)*(1+0.25*x))
}

// zonedSampler picks a zone by its access share, then a block in it.
type zonedSampler struct {
	cum   []float64 // cumulative access fraction, last 1
	start []uint64  // first block of each zone
	count []uint64  // blocks in each zone (at least 1)
}

func newZonedSampler(zones []Zone, n uint64) *zonedSampler {
	s := &zonedSampler{}
	var acc, size float64
	var first uint64
	for i, z := range zones {
		acc += z.AccessPercent / 100
		size += z.SizePercent / 100
		end := uint64(math.Round(size * float64(n)))
		if i == len(zones)-1 || end > n {
			end = n
		}
		if end <= first {
			end = min(first+1, n)
		}
		s.cum = append(s.cum, acc)
		s.start = append(s.start, min(first, n-1))
		s.count = append(s.count, max(end-first, 1))
		first = end
	}
	s.cum[len(s.cum)-1] = 1
	return s
}

func (s *zonedSampler) draw(r *rng) uint64 {
	u := r.unit()
	i := 0
	for i < len(s.cum)-1 && u >= s.cum[i] {
		i++
	}
	return s.start[i] + r.next()%s.count[i]
}
