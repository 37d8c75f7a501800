package hwinfo

import (
	"errors"
	"os"
	"strings"
)

// Swap is one active swap area of /proc/swaps.
type Swap struct {
	Path string // as the kernel lists it: /dev/sdb2, /dev/mapper/vg-swap, /swapfile
	Type string // "partition" (a block device) or "file"
}

// ParseSwaps parses the content of /proc/swaps (a header line, then one
// area per line).
func ParseSwaps(data string) []Swap {
	var out []Swap
	for i, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 {
			continue
		}
		s := Swap{Path: UnescapeOctal(f[0])}
		if len(f) > 1 {
			s.Type = f[1]
		}
		out = append(out, s)
	}
	return out
}

// Swaps reads the active swap areas of the live machine.
func (r Roots) Swaps() ([]Swap, error) {
	b, err := os.ReadFile(r.ProcPath("swaps"))
	if err != nil {
		return nil, err
	}
	return ParseSwaps(string(b)), nil
}

// ErrNoMemTotal is a meminfo without a MemTotal line.
var ErrNoMemTotal = errors.New("no MemTotal")

// ParseMemTotal returns MemTotal of a /proc/meminfo content, in bytes: the
// memory usable by the kernel, as free(1) shows it. It is ParseMemInfo's
// TotalBytes, with its errors: a malformed line is an error naming it; a
// missing MemTotal is ErrNoMemTotal.
func ParseMemTotal(data string) (uint64, error) {
	m, err := ParseMemInfo(data)
	return m.TotalBytes, err
}

// MemTotal reads MemTotal of the live machine.
func (r Roots) MemTotal() (uint64, error) {
	m, err := r.MemInfo()
	return m.TotalBytes, err
}

// Mounts reads the live mount table (proc/self/mountinfo).
func (r Roots) Mounts() ([]MountEntry, error) {
	b, err := os.ReadFile(r.ProcPath("self/mountinfo"))
	if err != nil {
		return nil, err
	}
	entries, _ := ParseMountinfo(string(b))
	return entries, nil
}
