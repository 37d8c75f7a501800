// Package units parses and formats the sizes and durations people type on the
// command line and in plan files ("4k", "32M", "1.5TiB", "10s", "1m"), and
// formats the figures and times a benchmark measured ("1.40 ms").
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax is wrapped by every parse error, so callers can map it to a usage error.
var ErrSyntax = errors.New("invalid value")

// Sizes are read as coreutils (dd, truncate, df) and parted read them: a
// bare letter or an "iB" unit is binary ("4k", "4K" and "4KiB" are 4096
// bytes, so a block size of "4k" is always one page; "2G" and "2GiB" are
// 2^31), and an SI unit with "B" is decimal, as drive vendors and lsblk
// print it ("4kB" and "4KB" are 4000 bytes, "10GB" is 10^10). Case does
// not matter.
var sizeSuffixes = map[string]uint64{
	"":  1,
	"b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	"p": 1 << 50, "pib": 1 << 50, "pb": 1e15,
}

// fio reads every unit as binary (its kb_base=1024 default: "4KB" is 4096),
// so what fio printed is read back with this table.
var fioSizeSuffixes = map[string]uint64{
	"":  1,
	"b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
	"p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50,
}

// ParseSize parses a byte size such as "512", "4k", "32M", "2G", "1.5TiB"
// (binary) or "10GB", "500MB" (decimal; see sizeSuffixes). Zero is
// accepted (callers decide whether it makes sense); negative values,
// fractions of a byte and values beyond 2^63 are rejected.
func ParseSize(s string) (uint64, error) {
	return parseSize(s, sizeSuffixes)
}

// ParseCapacity parses the size of an image or of a test file: as
// ParseSize, but a bare number under 1 MiB is refused with a hint, as a
// bare duration is ("10" -> did you mean 10G?). Nobody means an image of
// 10 bytes; a byte count of a real size (10737418240) still reads.
func ParseCapacity(s string) (uint64, error) {
	in := strings.TrimSpace(s)
	if n, err := strconv.ParseUint(in, 10, 64); err == nil && n > 0 && n < 1<<20 {
		return 0, fmt.Errorf("size %q has no unit: did you mean %sG? (a bare number is bytes; units: M, G, T or MB, GB, TB): %w", s, in, ErrSyntax)
	}
	return ParseSize(s)
}

// IsSizeUnit reports whether s is a size unit alone ("GB", "g", "GiB"):
// the second word of "--size 10 GB", where the shell split one size in two.
func IsSizeUnit(s string) bool {
	u := strings.ToLower(strings.TrimSpace(s))
	_, ok := sizeSuffixes[u]
	return ok && u != "" && u != "b"
}

// ParseFioSize parses a size as fio wrote it, every unit binary ("4KB" is
// 4096), for reading fio's own output back.
func ParseFioSize(s string) (uint64, error) {
	return parseSize(s, fioSizeSuffixes)
}

func parseSize(s string, sizeSuffixes map[string]uint64) (uint64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("size %q: empty: %w", s, ErrSyntax)
	}
	i := 0
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
		i++
	}
	num, suffix := in[:i], strings.ToLower(strings.TrimSpace(in[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit such as 4k, 32M, 2G: %w", s, ErrSyntax)
	}
	mult, ok := sizeSuffixes[suffix]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use k, M, G, T or KiB, MiB, GiB, TiB for powers of 2; kB, MB, GB, TB for powers of 10): %w", s, in[i:], ErrSyntax)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil || (n != 0 && mult > math.MaxInt64/n) {
			return 0, fmt.Errorf("size %q: too large: %w", s, ErrSyntax)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: bad number: %w", s, ErrSyntax)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: too large: %w", s, ErrSyntax)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q: not a whole number of bytes: %w", s, ErrSyntax)
	}
	return uint64(v), nil
}

// FormatSize renders n bytes with a binary unit, e.g. "4 KiB", "1.5 GiB", "512 B".
func FormatSize(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n)
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// FormatSizeShort renders n bytes as fio does, in the largest unit that
// divides it exactly: "4k", "32M", "1536M", "1000". ParseSize reads it back
// to the same n; integer arithmetic keeps that true beyond 2^53, and the
// largest unit is P because ParseSize (and fio) take no E.
func FormatSizeShort(n uint64) string {
	units := []string{"", "k", "M", "G", "T", "P"}
	u := 0
	for n >= 1024 && n%1024 == 0 && u < len(units)-1 {
		n /= 1024
		u++
	}
	return strconv.FormatUint(n, 10) + units[u]
}

// FormatSizeBoth renders n bytes in both forms, for showing what a typed
// size was read as: "10 GB (9.3 GiB)", "4 GiB (4.3 GB)", "512 B".
func FormatSizeBoth(n uint64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	dec, bin := FormatDecimalSize(n), FormatSize(n)
	// Whichever form is exact comes first: that is the one the user typed.
	if whole, ok := exactDecimal(n); ok {
		return whole + " (" + bin + ")"
	}
	return bin + " (" + dec + ")"
}

// exactDecimal renders n as a whole number of its decimal unit ("10 GB"),
// when it is one.
func exactDecimal(n uint64) (string, bool) {
	names := []string{"kB", "MB", "GB", "TB", "PB", "EB"}
	u, i := uint64(1000), 0
	for n/u >= 1000 && i < len(names)-1 {
		u *= 1000
		i++
	}
	if n%u != 0 {
		return "", false
	}
	return fmt.Sprintf("%d %s", n/u, names[i]), true
}

// FormatDecimalSize renders n bytes with decimal units as drive vendors label
// them ("960 GB", "3 TB"), used next to the binary figure for disk sizes.
func FormatDecimalSize(n uint64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	v := float64(n)
	u := 0
	for v >= 1000 && u < len(units)-1 {
		v /= 1000
		u++
	}
	if u == 0 || v >= 100 {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// ParseDuration parses "10s", "1m", "1m30s", "500ms". A bare number other
// than 0 is refused with a hint ("10" -> did you mean 10s?): fio reads it as
// seconds, Go as nanoseconds, and a user cannot tell which was meant.
// Negative durations are rejected.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("duration %q: empty: %w", s, ErrSyntax)
	}
	if n, err := strconv.ParseUint(in, 10, 32); err == nil {
		if n == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("duration %q has no unit: did you mean %ss? (units: ms, s, m, h): %w", s, in, ErrSyntax)
	}
	return parseGoDuration(s, in)
}

// ParseFioDuration parses a duration as fio wrote it: a bare number is
// seconds (fio's runtime=10), else as ParseDuration.
func ParseFioDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if n, err := strconv.ParseUint(in, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	if in == "" {
		return 0, fmt.Errorf("duration %q: empty: %w", s, ErrSyntax)
	}
	return parseGoDuration(s, in)
}

func parseGoDuration(s, in string) (time.Duration, error) {
	d, err := time.ParseDuration(in)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want e.g. 10s, 1m, 500ms: %w", s, ErrSyntax)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q: negative: %w", s, ErrSyntax)
	}
	return d, nil
}

// ParsePercent reads a share written as "50%" or "12.5%": ok is false
// when s is not a percentage at all (a size, "rest"), and err says why a
// percentage is not one of more than 0 and at most 100.
func ParsePercent(s string) (pct float64, ok bool, err error) {
	num, isPct := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !isPct {
		return 0, false, nil
	}
	pct, err = strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || pct <= 0 || pct > 100 || pct != pct {
		return 0, true, fmt.Errorf("%q: a share is more than 0%% and at most 100%%", s)
	}
	return pct, true, nil
}
