// Package hist is a log-linear latency histogram in the manner of
// HdrHistogram: values below 2^(SubBits+1) are counted exactly; above that
// each power of two is split into 2^SubBits linear sub-buckets, so a value is
// known to within a relative error of 2^-SubBits (0.39%), and reported at the
// bucket midpoint (error <= 0.2%). Record is constant time and allocation
// free; histograms of several jobs merge exactly.
package hist

import (
	"math"
	"math/bits"
)

// SubBits sets the resolution: 2^SubBits linear sub-buckets per power of two.
const SubBits = 8

const (
	sub      = 1 << SubBits
	maxBits  = 48 // values are clamped below 2^48 (78 hours in ns)
	maxShift = maxBits - (SubBits + 1)
	nBuckets = (maxShift + 2) * sub
	maxValue = 1<<maxBits - 1
)

// Histogram counts non-negative integer values (nanoseconds here).
// The zero value is not usable; call New.
type Histogram struct {
	counts []uint64
	count  uint64
	sum    uint64
	min    uint64
	max    uint64
}

// New returns an empty histogram.
func New() *Histogram {
	return &Histogram{counts: make([]uint64, nBuckets), min: math.MaxUint64}
}

func index(v uint64) int {
	if v < 2*sub {
		return int(v)
	}
	shift := bits.Len64(v) - (SubBits + 1)
	return (shift+1)<<SubBits + int(v>>uint(shift)) - sub
}

// bounds returns the smallest value of bucket i and the bucket width.
func bounds(i int) (lo, width uint64) {
	if i < 2*sub {
		return uint64(i), 1
	}
	shift := i>>SubBits - 1
	return uint64(i-(shift+1)<<SubBits+sub) << uint(shift), 1 << uint(shift)
}

// Record counts one value.
func (h *Histogram) Record(v uint64) {
	if v > maxValue {
		v = maxValue
	}
	h.counts[index(v)]++
	h.count++
	h.sum += v
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Merge adds o's counts into h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.count == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.count += o.count
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Reset empties h without freeing it.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.count, h.sum, h.min, h.max = 0, 0, math.MaxUint64, 0
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.count }

// Sum is the exact sum of recorded values.
func (h *Histogram) Sum() uint64 { return h.sum }

// Min is the exact smallest value, 0 when empty.
func (h *Histogram) Min() uint64 {
	if h.count == 0 {
		return 0
	}
	return h.min
}

// Max is the exact largest value.
func (h *Histogram) Max() uint64 { return h.max }

// Mean is the exact mean, 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.count == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.count)
}

// Percentile returns the value at percentile p (0..100): the smallest
// recorded value v such that at least p% of values are <= v (nearest rank),
// approximated by its bucket's midpoint and clamped to [Min, Max].
func (h *Histogram) Percentile(p float64) uint64 {
	if h.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.count)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.count {
		rank = h.count
	}
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			lo, w := bounds(i)
			v := lo + (w-1)/2
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// Bucket is one non-empty bucket: values in [Lo, Lo+Width) counted Count times.
type Bucket struct {
	Lo, Width, Count uint64
}

// Buckets lists the non-empty buckets in increasing order (for storing the
// full distribution).
func (h *Histogram) Buckets() []Bucket {
	var out []Bucket
	for i, c := range h.counts {
		if c != 0 {
			lo, w := bounds(i)
			out = append(out, Bucket{lo, w, c})
		}
	}
	return out
}
