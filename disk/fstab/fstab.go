// Package fstab reads and edits /etc/fstab without disturbing anything
// diskprep did not write.
//
// Parse keeps every line verbatim (comments, blank lines, odd spacing, lines
// it cannot make sense of), so rendering an unchanged file gives back the same
// bytes: an edit only ever touches the lines it adds or removes.
//
// # Ownership marker
//
// diskprep marks its own entries with a comment line directly above them:
//
//	# diskprep: UUID=3f0c... added 2026-11-30 ("diskprep release" removes this entry)
//	UUID=3f0c...  /data  xfs  defaults,nofail,noatime  0 0
//
// A preceding line was chosen over a trailing "# diskprep" comment because
// fstab(5) has no trailing comments: libmount and other parsers treat extra
// words after the sixth field as garbage or reject the line, and a user editing
// the options column easily drops a trailing tag. The marker names the entry's
// device spec, and an entry counts as diskprep's only when the marker sits
// directly above it and names the same spec. So a user who edits the options
// or mount point keeps it managed, while one who points the line at another
// device, moves it, or deletes the marker takes it over: Remove never touches it.
//
// # Writing
//
// Add, Remove and Replace (both in one write) rewrite the file atomically (temporary file, fsync, rename,
// directory fsync) after saving the previous content as "<name>.diskprep.bak"
// beside it. One backup, overwritten on each change, rather than one per
// timestamp: it is the file as it was just before diskprep's latest edit, at
// a name an admin can guess, and /etc does not fill up with copies. A symlinked
// fstab is edited at its target, with the backup beside the target. Edits are
// serialised with flock(2) on the directory holding the file, so two diskprep
// runs persisting different disks at once do not lose each other's line.
package fstab

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrConflict is wrapped when an entry cannot be added because the mount
// point (or the device) is already in fstab with something else.
var ErrConflict = errors.New("fstab conflict")

// markerPrefix starts diskprep's ownership comment (after "#" and blanks).
const markerPrefix = "diskprep:"

// Entry is one fstab entry with its fields decoded (octal escapes such as
// \040 turned back into the characters they stand for).
type Entry struct {
	Spec    string // UUID=..., LABEL=..., /dev/mapper/cl-root
	File    string // mount point, or "swap"/"none"
	VFSType string
	Options string
	Freq    int
	Pass    int
}

// Line is one line of an fstab file.
type Line struct {
	// Raw is the line exactly as in the file, without its newline.
	Raw string
	// Entry holds the decoded fields when the line is an entry (two or more
	// fields, not a comment); nil otherwise. Deliberately more lenient than
	// libmount, which skips lines with a missing type or non-numeric
	// dump/pass: such a line still shows what its author meant to mount
	// where, so Add treats its mount point as taken.
	Entry *Entry
	// Marker is true for a diskprep ownership comment; MarkerSpec is the
	// device spec it names.
	Marker     bool
	MarkerSpec string
	// Managed is true for an entry that diskprep owns: directly below a
	// marker naming the same spec.
	Managed bool

	// num is the 1-based line number in the parsed file (0 for new lines),
	// for messages that name an existing line.
	num int
	// noNewline records that this last line of the file had no trailing
	// newline, so Render gives back the same bytes.
	noNewline bool
}

// Parse splits fstab content into lines. It fails only on content that is
// not a text file (a NUL byte), which diskprep refuses to rewrite.
func Parse(data []byte) ([]Line, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, fmt.Errorf("line %d: NUL byte: not a text file", bytes.Count(data[:i], []byte("\n"))+1)
	}
	if len(data) == 0 {
		return nil, nil
	}
	text := string(data)
	noNewline := !strings.HasSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\n")
	parts := strings.Split(text, "\n")
	lines := make([]Line, len(parts))
	for i, raw := range parts {
		lines[i] = parseLine(raw)
		lines[i].num = i + 1
	}
	lines[len(lines)-1].noNewline = noNewline
	markManaged(lines)
	return lines, nil
}

func parseLine(raw string) Line {
	l := Line{Raw: raw}
	trimmed := strings.TrimLeft(raw, " \t\r")
	if strings.HasPrefix(trimmed, "#") {
		rest := strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
		if strings.HasPrefix(rest, markerPrefix) {
			if f := strings.Fields(strings.TrimPrefix(rest, markerPrefix)); len(f) > 0 {
				l.Marker = true
				l.MarkerSpec = unescape(f[0])
			}
		}
		return l
	}
	f := strings.Fields(raw)
	if len(f) < 2 {
		return l
	}
	e := &Entry{Spec: unescape(f[0]), File: unescape(f[1])}
	if len(f) > 2 {
		e.VFSType = unescape(f[2])
	}
	if len(f) > 3 {
		e.Options = unescape(f[3])
	}
	// Non-numeric dump/pass fields leave 0: the line itself is kept verbatim,
	// and mount(8) treats it the same way.
	if len(f) > 4 {
		e.Freq, _ = strconv.Atoi(f[4])
	}
	if len(f) > 5 {
		e.Pass, _ = strconv.Atoi(f[5])
	}
	l.Entry = e
	return l
}

func markManaged(lines []Line) {
	for i := range lines {
		lines[i].Managed = i > 0 && lines[i].Entry != nil && lines[i-1].Marker &&
			sameSpec(lines[i-1].MarkerSpec, lines[i].Entry.Spec)
	}
}

// Render joins lines back into file content. For lines from Parse it returns
// exactly the bytes parsed.
func Render(lines []Line) []byte {
	var b bytes.Buffer
	for i, l := range lines {
		b.WriteString(l.Raw)
		if !(i == len(lines)-1 && l.noNewline) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// EntryLine renders the line diskprep adds for e: fields escaped, options
// "defaults,nofail" followed by e.Options without duplicates. nofail keeps a
// missing data disk from dropping the next boot into emergency mode.
func EntryLine(e Entry) string {
	vfs := e.VFSType
	if vfs == "" {
		vfs = "auto"
	}
	return strings.Join([]string{
		escape(e.Spec), escape(e.File), escape(vfs), escape(MergeOptions("defaults,nofail", e.Options)),
		strconv.Itoa(e.Freq), strconv.Itoa(e.Pass),
	}, "\t")
}

// MergeOptions joins comma-separated option lists, dropping empty and
// repeated options while keeping first-seen order.
func MergeOptions(lists ...string) string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, o := range strings.Split(l, ",") {
			o = strings.TrimSpace(o)
			if o == "" || seen[o] {
				continue
			}
			seen[o] = true
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}

// MarkerLine renders diskprep's ownership comment for e.
func MarkerLine(e Entry, date string) string {
	return fmt.Sprintf("# %s %s added %s (\"diskprep release\" removes this entry)", markerPrefix, escape(e.Spec), date)
}

// escape encodes what would otherwise split or end a field as octal, as
// mount(8) decodes it: blanks, newlines, backslashes and other control bytes.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '\\' || c == 0x7f || (i == 0 && c == '#') {
			fmt.Fprintf(&b, "\\%03o", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unescape decodes \ooo octal escapes (\040 space, \011 tab, \134 backslash);
// anything else, including a backslash not followed by three octal digits
// that fit in a byte, is kept as written, as libmount does.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) && s[i+1] <= '3' {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// sameSpec compares device specs as mount(8) resolves them: UUID= and
// PARTUUID= values are case-insensitive and may be quoted; paths are cleaned.
func sameSpec(a, b string) bool {
	return normSpec(a) == normSpec(b)
}

func normSpec(s string) string {
	if k, v, ok := strings.Cut(s, "="); ok && !strings.HasPrefix(s, "/") {
		k = strings.ToUpper(k)
		v = strings.Trim(v, `"'`)
		if k == "UUID" || k == "PARTUUID" {
			v = strings.ToLower(v)
		}
		return k + "=" + v
	}
	if strings.HasPrefix(s, "/") {
		return filepath.Clean(s)
	}
	return s
}

// sameFile compares mount points; "none", "swap" and other non-paths never
// clash, as several swap entries are normal.
func sameFile(a, b string) bool {
	if !strings.HasPrefix(a, "/") || !strings.HasPrefix(b, "/") {
		return false
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// sameTarget is sameFile that also matches identical non-path targets
// ("none", "swap"), for the already-present check.
func sameTarget(a, b string) bool {
	return a == b || sameFile(a, b)
}
