package main

import (
	"bytes"
	"context"
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

func TestManTakesNoArguments(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"diskprep", "man", "x"}, nil, &out, &errOut); code != 2 {
		t.Errorf("exit %d, want 2 (%s)", code, errOut.String())
	}
}
