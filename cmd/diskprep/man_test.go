package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestManPageListsEveryVisibleCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"diskprep", "man"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	page := out.String()
	if !strings.Contains(page, ".TH diskprep 8") {
		t.Errorf("no .TH header:\n%.300s", page)
	}
	for _, c := range commands() {
		want := "\n.SH " + c.Name + "\n"
		if got := strings.Contains(page, want); got == c.Hidden {
			t.Errorf("command %s (hidden %v): section present %v", c.Name, c.Hidden, got)
		}
	}
	for _, flag := range []string{"--root", "--results", "--persist", "--plan"} {
		if !strings.Contains(page, flag) {
			t.Errorf("man page lacks %s", flag)
		}
	}
}

// man takes no argument but a command's name (one at most).
func TestManTakesNoArguments(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"diskprep", "man", "bench", "x"}, nil, &out, &errOut); code != 2 {
		t.Errorf("man bench x: exit %d, want 2 (%s)", code, errOut.String())
	}
	if code := run(context.Background(), []string{"diskprep", "man", "x"}, nil, &out, &errOut); code != 2 {
		t.Errorf("exit %d, want 2 (%s)", code, errOut.String())
	}
}

// Issue 25 item 8: a man page per command (man diskprep-prepare), made
// from the command's own definition and its page in docs/: every visible
// command has one, with its flags and the page's text.
func TestEveryCommandHasAManPage(t *testing.T) {
	for _, c := range commands() {
		if c.Hidden {
			continue
		}
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"diskprep", "man", c.Name}, strings.NewReader(""), &out, &errOut); code != 0 {
			t.Errorf("man %s: exit %d: %s", c.Name, code, errOut.String())
			continue
		}
		page := out.String()
		if !strings.Contains(page, ".TH diskprep-"+c.Name+" 8") || !strings.Contains(page, ".SH DESCRIPTION") {
			t.Errorf("man %s: no title or description:\n%.400s", c.Name, page)
		}
		for _, f := range c.VisibleFlags() {
			if name := f.Names()[0]; name != "help" && !strings.Contains(page, "--"+name) {
				t.Errorf("man %s lacks its flag --%s", c.Name, name)
			}
		}
		// The description is the docs page: its first words are there.
		md, err := os.ReadFile(filepath.Join("..", "..", "docs", manDocs[c.Name]))
		if err != nil {
			t.Fatalf("man %s: %v", c.Name, err)
		}
		_, body, _ := strings.Cut(string(md), "\n\n")
		first := strings.Fields(body)
		if len(first) > 3 {
			first = first[:3]
		}
		words := strings.Fields(roffText(page))
		if !containsRun(words, first) {
			t.Errorf("man %s: the page of docs/%s (%q) is not its description", c.Name, manDocs[c.Name], first)
		}
	}
}

// roffText strips the font escapes md2man puts around code and emphasis.
func roffText(s string) string {
	for _, e := range []string{`\fB`, `\fR`, `\fI`, `\fP`, `\fC`, "`"} {
		s = strings.ReplaceAll(s, e, "")
	}
	return strings.ReplaceAll(s, `\-`, "-")
}

func containsRun(words, run []string) bool {
	clean := strings.NewReplacer("`", "", "*", "").Replace
	for i := 0; i+len(run) <= len(words); i++ {
		ok := true
		for j, r := range run {
			if clean(words[i+j]) != clean(r) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestManDirWritesEveryPage(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"diskprep", "man", "--dir", dir}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := []string{"diskprep.8"}
	for _, c := range commands() {
		if !c.Hidden {
			want = append(want, "diskprep-"+c.Name+".8")
		}
	}
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("man --dir wrote %q, want %q", got, want)
	}
}

func TestManUnknownCommandHints(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"diskprep", "man", "prepar"}, nil, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "did you mean prepare?") || strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// A page that serves two commands (prepare.md: prepare and release) is
// always linked as the first of them, and a page of docs/ that is no man
// page as its address: the same man page on every build.
func TestManLinksAreStable(t *testing.T) {
	text := "[a](prepare.md), [b](compare.md), [c](bench.md), [d](plans.md#selectors) and [e](statistics.md)"
	want := "[a] (see diskprep-prepare(8)), [b] (see diskprep-compare(8)), [c](" + docsURL + "bench.md), " +
		"[d](" + docsURL + "plans.md#selectors) and [e](" + docsURL + "statistics.md)"
	for i := 0; i < 20; i++ {
		got := docLink.ReplaceAllString(manLinks(commands(), "bench.md").Replace(text), "]("+docsURL+"$1)")
		if got != want {
			t.Fatalf("links rewritten as\n%s\nwant\n%s", got, want)
		}
	}
}
