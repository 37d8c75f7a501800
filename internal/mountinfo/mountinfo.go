// Package mountinfo is the one reading of /proc/self/mountinfo (proc(5)):
// hwinfo's inventory, disk's and bench's live checks and the test helpers
// in internal/testenv all parse the mount table with it.
package mountinfo

import (
	"os"
	"strconv"
	"strings"
)

// Entry is one line of a mountinfo file, unescaped.
type Entry struct {
	MajMin       string // "8:17": the mounted device, however its source is spelled
	Point        string
	FSType       string
	Source       string
	MountOptions string // per-mount options (field 6)
	SuperOptions string // superblock options (after the fs type and source)
}

// Read parses the mountinfo file at path (/proc/self/mountinfo on the live
// machine). Malformed lines are skipped.
func Read(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	entries, _ := Parse(string(b))
	return entries, nil
}

// Parse parses the content of a mountinfo file. Malformed lines are
// skipped and counted in bad.
func Parse(data string) (entries []Entry, bad int) {
	for _, line := range strings.Split(data, "\n") {
		if line == "" {
			continue
		}
		e, ok := parseLine(line)
		if !ok {
			bad++
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad
}

// parseLine reads "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
// Fields are separated by single spaces: the kernel escapes only space, tab,
// newline and backslash in paths, so other bytes unicode calls space (\v,
// \r, U+00A0) belong to the path and must not split it.
func parseLine(line string) (Entry, bool) {
	f := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+2 >= len(f) || !isMajMin(f[2]) || f[4] == "" || f[sep+1] == "" || f[sep+2] == "" {
		return Entry{}, false
	}
	e := Entry{
		MajMin:       f[2],
		Point:        Unescape(f[4]),
		FSType:       f[sep+1],
		Source:       Unescape(f[sep+2]),
		MountOptions: f[5],
	}
	if sep+3 < len(f) {
		e.SuperOptions = f[sep+3]
	}
	return e, true
}

// isMajMin reports whether s is a "major:minor" device number.
func isMajMin(s string) bool {
	major, minor, ok := strings.Cut(s, ":")
	_, err1 := strconv.ParseUint(major, 10, 32)
	_, err2 := strconv.ParseUint(minor, 10, 32)
	return ok && err1 == nil && err2 == nil
}

// Unescape undoes the \040-style octal escapes of mountinfo, mounts and
// swaps.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
