package units

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := map[string]uint64{
		"512": 512, "0": 0, "4k": 4096, "4K": 4096, "4KiB": 4096, "4kb": 4000, "4KB": 4000, "4kB": 4000,
		"10GB": 10e9, "10gb": 10e9, "10G": 10 << 30, "10GiB": 10 << 30, "500MB": 500e6, "2TB": 2e12, "1.5GB": 1.5e9, "1PB": 1e15,
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
	good := map[string]time.Duration{"10s": 10 * time.Second, "1m": time.Minute, "500ms": 500 * time.Millisecond, "0": 0}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1s", "abc", "10x", "10"} {
		if _, err := ParseDuration(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseDuration(%q) err = %v; want ErrSyntax", in, err)
		}
	}
	// A bare number is ambiguous (fio: seconds, Go: nanoseconds): refused
	// with the reading most people mean.
	if _, err := ParseDuration("10"); err == nil || !strings.Contains(err.Error(), "did you mean 10s?") {
		t.Errorf("ParseDuration(\"10\") err = %v; want a hint \"did you mean 10s?\"", err)
	}
}

// What fio printed is read with fio's rules: every unit binary, a bare
// runtime in seconds.
func TestParseFio(t *testing.T) {
	for in, want := range map[string]uint64{"4KB": 4096, "4k": 4096, "1GB": 1 << 30, "2GiB": 2 << 30, "512": 512} {
		if got, err := ParseFioSize(in); err != nil || got != want {
			t.Errorf("ParseFioSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]time.Duration{"10": 10 * time.Second, "10s": 10 * time.Second, "500ms": 500 * time.Millisecond} {
		if got, err := ParseFioDuration(in); err != nil || got != want {
			t.Errorf("ParseFioDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseFioDuration("x"); !errors.Is(err, ErrSyntax) {
		t.Errorf("ParseFioDuration(x) err = %v", err)
	}
}

func TestFormatSizeBoth(t *testing.T) {
	for in, want := range map[uint64]string{
		10e9:       "10 GB (9.3 GiB)",
		4 << 30:    "4 GiB (4.3 GB)",
		512:        "512 B",
		1 << 20:    "1 MiB (1.0 MB)",
		500e6:      "500 MB (477 MiB)",
		1536 << 20: "1.5 GiB (1.6 GB)",
		10 << 30:   "10 GiB (10.7 GB)",
	} {
		if got := FormatSizeBoth(in); got != want {
			t.Errorf("FormatSizeBoth(%d) = %q; want %q", in, got, want)
		}
	}
}

// Issue 25 item 5: an image or file size of a bare small number is a
// missing unit, refused with a hint as a bare duration is; a byte count
// of a real size still reads.
func TestParseCapacity(t *testing.T) {
	if _, err := ParseCapacity("10"); err == nil || !strings.Contains(err.Error(), "did you mean 10G?") || !errors.Is(err, ErrSyntax) {
		t.Errorf("ParseCapacity(10) = %v, want a hint", err)
	}
	for in, want := range map[string]uint64{"10737418240": 10 << 30, "10G": 10 << 30, "10 GB": 10e9, "0": 0} {
		if got, err := ParseCapacity(in); err != nil || got != want {
			t.Errorf("ParseCapacity(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]bool{"GB": true, "g": true, "GiB": true, "b": false, "": false, "disk": false} {
		if IsSizeUnit(in) != want {
			t.Errorf("IsSizeUnit(%q) = %v", in, !want)
		}
	}
}

func TestParsePercent(t *testing.T) {
	for s, want := range map[string]float64{"50%": 50, "12.5%": 12.5, " 100% ": 100, "0.1%": 0.1} {
		if got, ok, err := ParsePercent(s); !ok || err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %v, %v, %v; want %v", s, got, ok, err, want)
		}
	}
	for _, s := range []string{"0%", "-5%", "100.5%", "%", "abc%", "NaN%", "Inf%"} {
		if _, ok, err := ParsePercent(s); !ok || err == nil {
			t.Errorf("ParsePercent(%q): ok %v, err %v; want a refused share", s, ok, err)
		}
	}
	for _, s := range []string{"50", "10G", "rest", ""} {
		if _, ok, err := ParsePercent(s); ok || err != nil {
			t.Errorf("ParsePercent(%q): ok %v, err %v; want not a share", s, ok, err)
		}
	}
}
