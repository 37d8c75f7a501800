package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/diskprep/diskprep/disk"
)

// confirm shows the disk and what will be lost, and reads y/N. A signal
// while it waits (ctx cancelled) returns at once with an interruption,
// nothing changed; the read itself cannot be interrupted, so it runs aside
// and is left behind.
func confirm(ctx context.Context, e *env, p *disk.Plan) (bool, error) {
	p.WriteText(e.Stderr)
	fmt.Fprint(e.Stderr, disk.ConfirmationPrompt(p))
	if e.Stdin == nil {
		return false, nil
	}
	answer, err := readLine(ctx, e.Stdin)
	if err != nil {
		fmt.Fprintln(e.Stderr) // the prompt's line is left open
		return false, interrupted(" at the question: nothing was changed", err)
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

// interruptedState says, in one line, what an interrupted Apply of p left
// on the disk (res is what Apply returned with its error, nil when it got
// no further than its checks) and how to go on. Apply undid the mounts it
// made and the loop device it attached, and removed an image it created.
func interruptedState(p *disk.Plan, res *disk.Result, err error) error {
	target := p.Device
	if p.Image != nil {
		target = "image " + p.Image.Path
	}
	const again = "run the same command again to continue"
	if p.Image != nil && p.Image.Create {
		return interrupted(fmt.Sprintf(" while making image %s: it is removed again, no loop device left; %s", p.Image.Path, again), err)
	}
	var made, fstab []string
	if res != nil {
		for _, pr := range res.Partitions {
			if pr.Formatted {
				made = append(made, pr.FS+" on "+pr.Device)
			}
			if pr.FstabAdded {
				fstab = append(fstab, pr.Device)
			}
		}
	}
	var msg string
	switch {
	case res == nil || (!res.TableWritten && len(res.Wiped) == 0 && len(made) == 0):
		msg = fmt.Sprintf(" before anything was written to %s: nothing changed on it", target)
	case !res.TableWritten && len(made) == 0:
		msg = fmt.Sprintf(" after wiping the signatures on %s, before writing the partition table: it is blank", target)
	case len(made) == 0:
		msg = fmt.Sprintf(" after writing the partition table on %s; nothing is formatted", target)
	default:
		rest := "nothing is mounted"
		if len(made) < len(p.Partitions) {
			rest = fmt.Sprintf("%d of %d partitions formatted, nothing is mounted", len(made), len(p.Partitions))
		}
		if len(fstab) > 0 {
			rest += "; /etc/fstab has the line for " + strings.Join(fstab, ", ")
		}
		msg = fmt.Sprintf(" after making %s; %s", strings.Join(made, ", "), rest)
	}
	if res != nil && res.LoopAttached {
		msg += "; its loop device " + res.Device + " is detached"
	}
	return interrupted(msg+"; "+again, err)
}

// confirmPlan asks, when the plan needs it (disk.NeedConfirmation), and
// says ErrNotConfirmed unless the answer is yes.
func confirmPlan(ctx context.Context, e *env, p *disk.Plan, yes bool) error {
	ask, err := disk.NeedConfirmation(p, yes, e.IsTerminal)
	if err != nil || !ask {
		return err
	}
	ok, err := confirm(ctx, e, p)
	if err != nil {
		return err
	}
	if !ok {
		return disk.ErrNotConfirmed
	}
	return nil
}
