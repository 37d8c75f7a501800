package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diskprep/diskprep/disk"
)

// Issue 13 item 3: Ctrl-C (or SIGTERM, SIGHUP: each cancels the context
// main makes) at the "Continue? [y/N]" question ends the command at once
// as interrupted, nothing applied, however long the question would have
// waited.
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

// An interruption during prepare ends in one line saying what the disk was
// left with and how to go on, exit 130 (a cancellation without a signal:
// signals_test.go has the signals' own codes).
func TestInterruptDuringPrepareSaysState(t *testing.T) {
	cases := []struct {
		name string
		res  func(p *disk.Plan) *disk.Result
		want string
	}{
		{"before writing", func(*disk.Plan) *disk.Result { return nil },
			"interrupted before anything was written to /dev/sdb: nothing changed on it; run the same command again to continue"},
		{"after the table", func(p *disk.Plan) *disk.Result {
			return &disk.Result{Device: p.Device, TableWritten: true}
		}, "interrupted after writing the partition table on /dev/sdb; nothing is formatted; run the same command again to continue"},
		{"after mkfs", func(p *disk.Plan) *disk.Result {
			return &disk.Result{Device: p.Device, TableWritten: true, Partitions: []disk.PartResult{{Device: "/dev/sdb1", FS: "xfs", Formatted: true}}}
		}, "interrupted after making xfs on /dev/sdb1; nothing is mounted; run the same command again to continue"},
	}
	for _, c := range cases {
		m, _ := fakeMachine(t, 0, false)
		ctx, cancel := context.WithCancel(context.Background())
		m.apply = func(ctx context.Context, p *disk.Plan, _ disk.Deps) (*disk.Result, error) {
			cancel() // Ctrl-C while mkfs runs: the runner returns the context's error
			return c.res(p), fmt.Errorf("make xfs on /dev/sdb1: mkfs.xfs /dev/sdb1: %w: signal: killed", ctx.Err())
		}
		var out, errb bytes.Buffer
		code := runOn(ctx, m, []string{"diskprep", "prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/data", "--yes"}, strings.NewReader(""), &out, &errb)
		if code != exitInterrupted || errb.String() != "diskprep: "+c.want+"\n" {
			t.Errorf("%s: exit %d, stderr %q; want 130 and %q", c.name, code, errb.String(), c.want)
		}
	}
}
