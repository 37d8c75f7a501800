package bcache

import (
	"testing"
)

// bcache's dirty_data as the kernel prints it (bch_hprint), seen in a
// guest: "1.7M" is not a whole number of bytes, and still a size.
func TestParseBcacheSize(t *testing.T) {
	for in, want := range map[string]uint64{"0.0k": 0, "512k": 512 << 10, "1.7M\n": 1782579, "3G": 3 << 30, "12.5M": 13107200, "0": 0} {
		if got, ok := parseBcacheSize(in); !ok || got != want {
			t.Errorf("%q: got %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "M", "-1k", "1.7X", "lots"} {
		if got, ok := parseBcacheSize(in); ok {
			t.Errorf("%q: read as %d", in, got)
		}
	}
}

// make-bcache's default 512 KiB buckets make too few of them on a cache
// under 512 MiB for the kernel (which refuses 512 or fewer): a smaller
// bucket is chosen there, down to a page; under 4 MiB it is refused.
func TestBcacheBucket(t *testing.T) {
	for _, c := range []struct{ size, want uint64 }{
		{0, 0}, {8 << 30, 0}, {512 << 20, 0}, {512<<20 - 1, 256 << 10}, {280 << 20, 256 << 10},
		{256 << 20, 256 << 10}, {160 << 20, 128 << 10}, {48 << 20, 32 << 10}, {4 << 20, 4 << 10},
	} {
		got, err := bcacheBucket(c.size)
		if err != nil || got != c.want {
			t.Errorf("%d MiB: got %d, %v; want %d", c.size>>20, got, err, c.want)
		}
		if got > 0 && c.size/got < bcacheMinBuckets {
			t.Errorf("%d MiB: %d buckets of %d", c.size>>20, c.size/got, got)
		}
	}
	if _, err := bcacheBucket(4<<20 - 4096); err == nil || err.Error() != "4092 KiB is too small for a bcache cache: it needs at least 4096 KiB (1024 buckets of 4 KiB)" {
		t.Errorf("a 4 MiB - 4 KiB cache: %v", err)
	}
}
