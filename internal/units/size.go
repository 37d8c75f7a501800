// Package units parses and formats the sizes and durations people type on the
// command line and in plan files ("4k", "32M", "1.5TiB", "10s", "1m").
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

// Sizes are binary: "4k", "4K", "4KiB" and "4KB" all mean 4096 bytes, as in fio,
// parted and mkfs, so that a block size of "4k" is always one page.
var sizeSuffixes = map[string]uint64{
	"":  1,
	"b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
	"p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50,
}

// ParseSize parses a byte size such as "512", "4k", "32M", "2G" or "1.5TiB".
// Zero is accepted (callers decide whether it makes sense); negative values,
// fractions of a byte and values beyond 2^63 are rejected.
func ParseSize(s string) (uint64, error) {
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
		return 0, fmt.Errorf("size %q: unknown unit %q (use k, M, G, T or KiB, MiB, GiB, TiB): %w", s, in[i:], ErrSyntax)
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

// ParseDuration parses "10s", "1m", "1m30s", "500ms"; a bare number means
// seconds, as in fio's runtime=. Negative durations are rejected.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("duration %q: empty: %w", s, ErrSyntax)
	}
	if n, err := strconv.ParseUint(in, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(in)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want e.g. 10s, 1m, 500ms: %w", s, ErrSyntax)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q: negative: %w", s, ErrSyntax)
	}
	return d, nil
}
