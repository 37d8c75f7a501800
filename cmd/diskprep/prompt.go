package main

import (
	"context"
	"fmt"
	"io"

	"github.com/diskprep/diskprep/disk"
)

// confirm shows the disk and what will be lost, and reads y/N. Ctrl-C or
// SIGTERM while it waits (ctx cancelled) returns at once with an error
// wrapping context.Canceled (exit 130), nothing changed; the read itself
// cannot be interrupted, so it runs aside and is left behind.
func confirm(ctx context.Context, e *env, p *disk.Plan) (bool, error) {
	p.WriteText(e.Stderr)
	fmt.Fprint(e.Stderr, disk.ConfirmationPrompt(p))
	if e.Stdin == nil {
		return false, nil
	}
	answer, err := readLine(ctx, e.Stdin)
	if err != nil {
		fmt.Fprintln(e.Stderr) // the prompt's line is left open
		return false, fmt.Errorf("interrupted at the question: nothing was changed: %w", err)
	}
	return disk.Confirmed(answer), nil
}

// readLine reads one line from r, byte by byte so that, with several disks,
// no answer is swallowed by a buffer meant for the first; it returns
// ctx's error as soon as ctx is done.
func readLine(ctx context.Context, r io.Reader) (string, error) {
	done := make(chan string, 1)
	go func() {
		var line []byte
		b := make([]byte, 1)
		for len(line) < 256 {
			n, err := r.Read(b)
			if n == 1 {
				if b[0] == '\n' {
					break
				}
				line = append(line, b[0])
			}
			if err != nil {
				break
			}
		}
		done <- string(line)
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case s := <-done:
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return s, nil
	}
}
