package hwinfo

import (
	"strconv"
	"strings"
)

// parseMountinfoLine parses one line through the shared parser, for the
// tests written against the line parser before it moved to
// internal/mountinfo.
func parseMountinfoLine(line string) (MountEntry, bool) {
	es, _ := ParseMountinfo(line)
	if len(es) != 1 || strings.Contains(line, "\n") {
		return MountEntry{}, false
	}
	return es[0], true
}

// isMajMin is the oracle for a "major:minor" device number.
func isMajMin(s string) bool {
	major, minor, ok := strings.Cut(s, ":")
	_, err1 := strconv.ParseUint(major, 10, 32)
	_, err2 := strconv.ParseUint(minor, 10, 32)
	return ok && err1 == nil && err2 == nil
}
