package units

import "testing"

func TestFormatNanoseconds(t *testing.T) {
	for ns, want := range map[float64]string{
		0: "0 ns", 850: "850 ns", 999: "999 ns", 1000: "1.00 µs", 3200: "3.20 µs", 85_000: "85.0 µs",
		120_000: "120 µs", 1_400_000: "1.40 ms", 2e9: "2.00 s", 1234.5e9: "1234 s",
	} {
		if got := FormatNanoseconds(ns); got != want {
			t.Errorf("FormatNanoseconds(%v) = %q, want %q", ns, got, want)
		}
	}
}
