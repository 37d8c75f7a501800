package units

import (
	"errors"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := map[string]uint64{
		"512": 512, "0": 0, "4k": 4096, "4K": 4096, "4KiB": 4096, "4kb": 4096,
		"32M": 32 << 20, "2G": 2 << 30, "1.5TiB": 3 << 39, "1.5G": 3 << 29, " 8 GiB ": 8 << 30, "1b": 1,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10X", "-1G", "G", "1.2.3k", "0.3", "99999999999999999999", "16E", "9223372036854775808", "1e3"} {
		if _, err := ParseSize(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseSize(%q) err = %v; want ErrSyntax", in, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	cases := map[uint64]string{0: "0 B", 512: "512 B", 4096: "4 KiB", 3 << 29: "1.5 GiB", 256 << 30: "256 GiB", 3000592982016: "2.7 TiB"}
	for in, want := range cases {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q; want %q", in, got, want)
		}
	}
	short := map[uint64]string{4096: "4k", 32 << 20: "32M", 3 << 29: "1536M", 1000: "1000"}
	for in, want := range short {
		if got := FormatSizeShort(in); got != want {
			t.Errorf("FormatSizeShort(%d) = %q; want %q", in, got, want)
		}
	}
	if got := FormatDecimalSize(3000592982016); got != "3.0 TB" {
		t.Errorf("FormatDecimalSize = %q", got)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{"10s": 10 * time.Second, "1m": time.Minute, "10": 10 * time.Second, "500ms": 500 * time.Millisecond, "0": 0}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1s", "abc", "10x"} {
		if _, err := ParseDuration(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseDuration(%q) err = %v; want ErrSyntax", in, err)
		}
	}
}
