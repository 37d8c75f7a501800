package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of cols columns and returns its
// terminal side (closed at the end of the test).
func openPTY(t *testing.T, cols uint16) *os.File {
	t.Helper()
	_, pts := openPTYPair(t, cols)
	return pts
}

// openPTYPair is openPTY with its other side: what is written to ptm is
// typed on pts, and what pts shows is read from ptm.
func openPTYPair(t *testing.T, cols uint16) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("pty terminal side: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: cols}); err != nil {
		t.Fatalf("set pty size: %v", err)
	}
	return ptm, pts
}

// TestTerminalWidth: a terminal's width is its size, or $COLUMNS when
// that is a number; a pipe, a file or a buffer has none (0: the tables'
// 120 columns), whatever $COLUMNS says.
func TestTerminalWidth(t *testing.T) {
	pts := openPTY(t, 97)
	for _, tc := range []struct {
		columns string
		want    int
	}{{"", 97}, {"150", 150}, {" 72 ", 72}, {"wide", 97}, {"0", 97}, {"-5", 97}} {
		if got := terminalWidth(pts, tc.columns); got != tc.want {
			t.Errorf("terminal of 97 columns, COLUMNS=%q: width %d, want %d", tc.columns, got, tc.want)
		}
	}
	if got := terminalWidth(openPTY(t, 0), ""); got != 0 {
		t.Errorf("terminal of unknown size: width %d, want 0", got)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]io.Writer{"pipe": w, "file": f, "buffer": &bytes.Buffer{}} {
		if got := terminalWidth(out, "150"); got != 0 {
			t.Errorf("%s with COLUMNS=150: width %d, want 0", name, got)
		}
	}
}

// TestCompareFollowsTerminal: compare's table fits the terminal it is
// printed on, at 80 and 200 columns as at 120; with no terminal (width 0)
// it is the 120-column table; a file written with --output, and Markdown,
// keep the 120-column layout whatever the terminal.
func TestCompareFollowsTerminal(t *testing.T) {
	store := filepath.Join("..", "..", "bench", "report", "testdata", "store")
	render := func(width int, format, output string) string {
		t.Helper()
		e, out, errb := resultsEnv(t, format)
		e.ResultsDir, e.Width = store, width
		if err := runCompare(context.Background(), compareOptions{Latency: true, Output: output}, e); err != nil {
			t.Fatalf("compare at %d: %v: %s", width, err, errb)
		}
		if output != "" {
			b, err := os.ReadFile(output)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		return out.String()
	}
	widest := func(s string) int {
		w := 0
		for _, l := range strings.Split(s, "\n") {
			w = max(w, utf8.RuneCountInString(l))
		}
		return w
	}
	pipe := render(0, "table", "")
	if w := widest(pipe); w > 120 || w < 100 {
		t.Errorf("table with no terminal is %d columns wide, want up to 120", w)
	}
	if got := render(120, "table", ""); got != pipe {
		t.Errorf("table on a 120-column terminal differs from the one with no terminal")
	}
	for _, width := range []int{80, 200} {
		got := render(width, "table", "")
		if w := widest(got); w > width {
			t.Errorf("table on a %d-column terminal is %d columns wide", width, w)
		}
		if got == pipe {
			t.Errorf("table on a %d-column terminal is the 120-column one", width)
		}
	}
	if got := render(30, "table", ""); got != render(60, "table", "") {
		t.Errorf("table on a 30-column terminal is not the one at the minimum, 60 columns")
	}
	file := filepath.Join(t.TempDir(), "out.txt")
	if got := render(80, "table", file); got != pipe {
		t.Errorf("--output file on an 80-column terminal is not the 120-column table")
	}
	if render(80, "markdown", "") != render(0, "markdown", "") {
		t.Errorf("markdown follows the terminal's width")
	}
}

// Issue 25 item 7: -o html and -o svg without --output, with stdout a
// terminal, are refused before anything is read or run; to a pipe or a
// file they are written as before.
func TestMarkupNotToTerminal(t *testing.T) {
	pts := openPTY(t, 100)
	for _, format := range []string{"html", "svg"} {
		var errb bytes.Buffer
		code := run(context.Background(), []string{"diskprep", "compare", "-o", format, "--results", "../../bench/report/testdata/store"}, strings.NewReader(""), pts, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "--output FILE."+format) {
			t.Errorf("compare -o %s to a terminal: exit %d, %q", format, code, errb.String())
		}
		errb.Reset()
		code = run(context.Background(), []string{"diskprep", "fscompare", "--image", "/nonexistent/x.img", "--size", "1G", "-o", format}, strings.NewReader(""), pts, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "--output FILE."+format) {
			t.Errorf("fscompare -o %s to a terminal: exit %d, %q", format, code, errb.String())
		}
		var out bytes.Buffer
		if code := run(context.Background(), []string{"diskprep", "compare", "-o", format, "--results", "../../bench/report/testdata/store"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "<svg") {
			t.Errorf("compare -o %s to a buffer: exit %d", format, code)
		}
	}
}
