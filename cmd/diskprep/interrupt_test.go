package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 13 item 3: Ctrl-C (or SIGTERM: both cancel the context main
// makes) at the "Continue? [y/N]" question ends the command at once with
// exit 130, nothing applied, however long the question would have waited.
func TestInterruptAtPrompt(t *testing.T) {
	m, applied := fakeMachine(t, 0, false)
	e, _, _ := testEnv("", "")
	errb := &syncBuffer{}
	e.Stderr, e.IsTerminal = errb, true
	stdin, w := io.Pipe() // nobody answers
	defer w.Close()
	e.Stdin = stdin
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !strings.Contains(errb.String(), "Continue? [y/N]") {
			time.Sleep(5 * time.Millisecond)
		}
		cancel() // the user presses Ctrl-C
	}()
	done := make(chan error, 1)
	go func() { done <- runPrepare(ctx, prepareOptions{Device: "/dev/sdb", FS: "xfs", Mount: "/data"}, m, e) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || exitCode(err) != exitInterrupted {
			t.Errorf("err %v (exit %d), want an interruption (130)", err, exitCode(err))
		}
		if !strings.Contains(err.Error(), "nothing was changed") {
			t.Errorf("err %q does not say nothing was changed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting for an answer 5s after Ctrl-C")
	}
	if len(*applied) != 0 {
		t.Errorf("applied %d plans after Ctrl-C at the question", len(*applied))
	}
}

// syncBuffer is a bytes.Buffer a test may read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
