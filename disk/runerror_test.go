package disk

import (
	"context"
	"strings"
	"testing"
	"unicode"
)

// Issue 13 item 3: a failing mkfs's progress drawing (backspaced counters)
// reaches the user as the text it left on screen, with no control bytes.
func TestRunErrorRendersProgress(t *testing.T) {
	_, err := ExecRunner{}.Run(context.Background(), "sh", "-c",
		`printf 'Allocating group tables: 0/8\b\b\b   \b\b\bdone                            \nWriting superblocks: failed\n' >&2; exit 1`)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exit status 1: Allocating group tables: done Writing superblocks: failed") {
		t.Errorf("error %q", msg)
	}
	for _, r := range msg {
		if unicode.IsControl(r) {
			t.Fatalf("control character %q in %q", r, msg)
		}
	}
}
