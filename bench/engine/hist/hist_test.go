package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exact is the nearest-rank percentile of sorted samples, the definition
// Percentile approximates.
func exact(sorted []uint64, p float64) uint64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func TestPercentilesAgainstExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() uint64{
		"uniform":     func() uint64 { return 1 + r.Uint64N(1e9) },
		"small":       func() uint64 { return r.Uint64N(3000) },
		"lognormal":   func() uint64 { return uint64(math.Exp(r.NormFloat64()*1.5 + 11)) },
		"exponential": func() uint64 { return uint64(r.ExpFloat64() * 2e5) },
		"bimodal": func() uint64 {
			if r.IntN(10) < 8 {
				return uint64(math.Max(0, r.NormFloat64()*2e3+20e3))
			}
			return uint64(math.Max(0, r.NormFloat64()*1e6+40e6))
		},
		"huge": func() uint64 { return 1<<40 + r.Uint64N(1<<44) },
	}
	ps := []float64{0, 0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100}
	for name, draw := range dists {
		t.Run(name, func(t *testing.T) {
			h := New()
			samples := make([]uint64, 200000)
			var sum uint64
			for i := range samples {
				samples[i] = draw()
				sum += samples[i]
				h.Record(samples[i])
			}
			slices.Sort(samples)
			if h.Count() != uint64(len(samples)) || h.Min() != samples[0] || h.Max() != samples[len(samples)-1] {
				t.Fatalf("count/min/max %d/%d/%d, want %d/%d/%d", h.Count(), h.Min(), h.Max(), len(samples), samples[0], samples[len(samples)-1])
			}
			if want := float64(sum) / float64(len(samples)); h.Mean() != want {
				t.Fatalf("mean %v, want %v", h.Mean(), want)
			}
			for _, p := range ps {
				got, want := h.Percentile(p), exact(samples, p)
				if rel := math.Abs(float64(got)-float64(want)) / math.Max(1, float64(want)); rel >= 0.01 {
					t.Errorf("p%v = %d, exact %d: relative error %.4f", p, got, want, rel)
				}
			}
		})
	}
}

func TestSmallValuesExact(t *testing.T) {
	h := New()
	for v := uint64(0); v < 2*sub; v++ {
		h.Record(v)
	}
	for v := uint64(0); v < 2*sub; v++ {
		p := 100 * float64(v+1) / float64(2*sub)
		if got := h.Percentile(p); got != v {
			t.Fatalf("p%v = %d, want %d", p, got, v)
		}
	}
}

func TestBucketsCoverValues(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		v := r.Uint64N(1 << (1 + r.IntN(47)))
		lo, w := bounds(index(v))
		if v < lo || v >= lo+w {
			t.Fatalf("value %d in bucket [%d,%d)", v, lo, lo+w)
		}
		if v >= 2*sub && float64(w)/float64(lo) > 1.0/sub {
			t.Fatalf("bucket [%d,+%d) wider than 1/%d", lo, w, sub)
		}
	}
}

func TestMergeEqualsCombined(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a, b, all := New(), New(), New()
	for i := 0; i < 50000; i++ {
		v := uint64(r.ExpFloat64() * 1e5)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		all.Record(v)
	}
	a.Merge(b)
	if a.Count() != all.Count() || a.Sum() != all.Sum() || a.Min() != all.Min() || a.Max() != all.Max() {
		t.Fatal("merged summary differs from recording everything in one histogram")
	}
	if !slices.Equal(a.Buckets(), all.Buckets()) {
		t.Fatal("merged buckets differ")
	}
	a.Reset()
	if a.Count() != 0 || a.Percentile(50) != 0 || len(a.Buckets()) != 0 {
		t.Fatal("reset left data")
	}
}

func TestClampsHugeValues(t *testing.T) {
	h := New()
	h.Record(math.MaxUint64)
	if h.Max() != maxValue || h.Percentile(100) != maxValue {
		t.Fatalf("max %d p100 %d, want clamp to %d", h.Max(), h.Percentile(100), uint64(maxValue))
	}
}

func BenchmarkRecord(b *testing.B) {
	h := New()
	for i := 0; b.Loop(); i++ {
		h.Record(uint64(i*7919) & 0xffffff)
	}
}
