package termtext

import (
	"strings"
	"testing"
	"unicode"
)

func TestRender(t *testing.T) {
	cases := map[string]string{
		// mkfs.ext4 on a terminal-less pipe still draws its counters.
		"Allocating group tables: 0/8\b\b\b   \b\b\bdone                            \n":                         "Allocating group tables: done\n",
		"Writing inode tables:  0/64\b\b\b\b\b 1/64\b\b\b\b\b64/64\b\b\b\b\bdone                            \n": "Writing inode tables: done\n",
		"progress 10%\rprogress 100%\n":      "progress 100%\n",
		"\x1b[1;31merror\x1b[0m: bad\n":      "error: bad\n",
		"a\x00b\x07c\td":                     "abc\td",
		"\b\bstart":                          "start",
		"plain text, no controls":            "plain text, no controls",
		"Discarding device blocks: done\r\n": "Discarding device blocks: done\n",
		"ünïcödé \b\bé":                      "ünïcödé",
	}
	for in, want := range cases {
		if got := Render(in); got != want {
			t.Errorf("Render(%q) = %q, want %q", in, got, want)
		}
	}
	got := OneLine("mke2fs 1.47.0\nAllocating group tables: 0/8\b\b\b   \b\b\bdone\nmkfs failed:  no space\n")
	if got != "mke2fs 1.47.0 Allocating group tables: done mkfs failed: no space" {
		t.Errorf("OneLine = %q", got)
	}
	for _, r := range got {
		if unicode.IsControl(r) {
			t.Errorf("OneLine left control character %q in %q", r, got)
		}
	}
	if strings.Contains(Render("x\x1b[2Ky"), "\x1b") {
		t.Error("escape sequence left")
	}
}
