package units

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds one string to both parsers and one number to the
// formatters. Beyond not panicking: every error wraps ErrSyntax on one line;
// an accepted size fits in an int64 and comes back unchanged through
// FormatSizeShort (the form fio export and spec names write); an accepted
// duration is never negative and comes back unchanged through its String.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"512", "4k", "4KiB", "32M", "2G", "1.5TiB", " 8 GiB ", "0", "1b",
		"10s", "1m", "1m30s", "500ms", "10", "-1G", "1e3", "0.3", "16E", "9223372036854775807", "4294967296"} {
		f.Add(s, uint64(4096))
	}
	f.Add("8P", uint64(1)<<60)
	f.Add("1", uint64(1)<<53+1)
	f.Add("", uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, s string, n uint64) {
		if v, err := ParseSize(s); err != nil {
			checkSyntaxError(t, "ParseSize", s, err)
		} else {
			if v > math.MaxInt64 {
				t.Fatalf("ParseSize(%q) = %d, beyond int64", s, v)
			}
			if back, err := ParseSize(FormatSizeShort(v)); err != nil || back != v {
				t.Fatalf("ParseSize(%q) = %d; FormatSizeShort gives %q which parses as %d, %v", s, v, FormatSizeShort(v), back, err)
			}
		}
		if d, err := ParseDuration(s); err != nil {
			checkSyntaxError(t, "ParseDuration", s, err)
		} else {
			if d < 0 {
				t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
			}
			if back, err := ParseDuration(d.String()); err != nil || back != d {
				t.Fatalf("ParseDuration(%q) = %v; its String parses as %v, %v", s, d, back, err)
			}
		}
		// Any size a record can hold up to int64 renders in a form the
		// parser reads back exactly.
		if n <= math.MaxInt64 {
			short := FormatSizeShort(n)
			if back, err := ParseSize(short); err != nil || back != n {
				t.Fatalf("FormatSizeShort(%d) = %q, parses as %d, %v", n, short, back, err)
			}
		}
		for _, out := range []string{FormatSize(n), FormatDecimalSize(n), time.Duration(n % math.MaxInt64).String()} {
			if out == "" || strings.Contains(out, "\n") {
				t.Fatalf("formatting %d gave %q", n, out)
			}
		}
	})
}

func checkSyntaxError(t *testing.T, fn, in string, err error) {
	t.Helper()
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("%s(%q) error %v does not wrap ErrSyntax", fn, in, err)
	}
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Fatalf("%s(%q) error is not one line: %q", fn, in, err)
	}
}

// Found by FuzzParse: FormatSizeShort went through float64, so an odd size
// above 2^53 came back as a neighbour, and 2^60 and up came out as "E",
// which ParseSize does not read.
func TestFormatSizeShortRoundTrip(t *testing.T) {
	cases := map[uint64]string{
		1<<53 + 1:     "9007199254740993",
		math.MaxInt64: "9223372036854775807",
		1 << 60:       "1024P",
		1<<63 - 1<<50: "8191P",
		0:             "0",
		3 << 29:       "1536M",
	}
	for n, want := range cases {
		got := FormatSizeShort(n)
		if got != want {
			t.Errorf("FormatSizeShort(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(got); err != nil || back != n {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", got, back, err, n)
		}
	}
}
