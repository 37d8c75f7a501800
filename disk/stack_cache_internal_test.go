package disk

import "testing"

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
