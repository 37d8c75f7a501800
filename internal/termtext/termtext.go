// Package termtext turns what a child program wrote for a terminal into
// plain text: mkfs.ext4 draws its progress with backspaces ("0/8\b\b\b"),
// other tools with carriage returns and escape sequences. Shown raw, those
// bytes garble the one line diskprep promises; rendered, they leave what a
// person saw on their screen in the end ("Allocating group tables: done").
package termtext

import (
	"strings"
	"unicode"
)

// Render plays s as a terminal would, line by line: a backspace moves back
// one column, a carriage return to the start of the line, and later text
// overwrites what was there. ANSI escape sequences and every other control
// character are dropped; tabs and newlines stay. Trailing spaces of each
// line go.
func Render(s string) string {
	var out strings.Builder
	var line []rune
	col := 0
	flush := func() {
		out.WriteString(strings.TrimRight(string(line), " "))
		line, col = line[:0], 0
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\n':
			flush()
			out.WriteByte('\n')
		case r == '\r':
			col = 0
		case r == '\b':
			col = max(col-1, 0)
		case r == 0x1b: // ESC [ ... final byte, or ESC and one more
			if i+1 < len(rs) && rs[i+1] == '[' {
				i += 2
				for i < len(rs) && (rs[i] < 0x40 || rs[i] > 0x7e) {
					i++
				}
			} else {
				i++
			}
		case r == '\t' || !unicode.IsControl(r):
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
		}
	}
	flush()
	return out.String()
}

// OneLine is Render with the lines joined by single spaces and runs of
// white space collapsed: for quoting a program's output inside an error.
func OneLine(s string) string {
	return strings.Join(strings.Fields(Render(s)), " ")
}
