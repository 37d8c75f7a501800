package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
)

// cancelOn is a stderr that cancels the command once it has been sent
// want: the test needs to see that line, not to sit through the run.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	want   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.want) {
		c.cancel()
	}
	return n, err
}

// Issue 25 item 6: bench with a stderr that is no terminal (a log, a
// pipe, </dev/null 2>log) says each workload and repetition as it starts
// instead of nothing for minutes. The run is planned for 40 s; the test
// interrupts it once the first step's line is out.
func TestBenchStepLinesWithoutTerminal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errw := &cancelOn{want: "[1/2] w (run 1/2)", cancel: cancel}
	var out bytes.Buffer
	code := run(ctx, []string{"diskprep", "bench", t.TempDir(), "--repeat", "2", "--results", t.TempDir(),
		"--workload", "name=w,rw=randread,bs=4k,size=4M,runtime=20s"}, strings.NewReader(""), &out, errw)
	errw.mu.Lock()
	defer errw.mu.Unlock()
	stderr := errw.buf.String()
	if !strings.Contains(stderr, "[1/2] w (run 1/2)  ETA ") {
		t.Errorf("exit %d, no step line on stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("a redrawn line on a stderr that is no terminal:\n%q", stderr)
	}
}
