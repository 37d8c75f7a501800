package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// interruptSignals end a command the same way (DESIGN.md, Safety
// contract): Ctrl-C, kill's default, and a dropped terminal or ssh session.
var interruptSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalCause is the cause of a context cancelled by a signal: run names
// the signal in its last line and exits 128+n.
type signalCause struct{ sig syscall.Signal }

func (c signalCause) Error() string { return "interrupted by " + signalName(c.sig) }

func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

// signalOf reports the signal ctx was cancelled by, if any.
func signalOf(ctx context.Context) (syscall.Signal, bool) {
	var c signalCause
	if errors.As(context.Cause(ctx), &c) {
		return c.sig, true
	}
	return 0, false
}

// notifySignals returns ctx, cancelled with a signalCause by the first of
// interruptSignals; the command then cleans up as on any cancellation.
//
// A second signal does not cut that cleanup short: half a cleanup (an
// image removed but its loop device still attached, a mount left behind)
// is worse than waiting a few seconds more. It is ignored, said once on
// stderr, and SIGKILL stays the way to stop at once (DESIGN.md: a rerun
// converges). Children are in the terminal's process group, so a second
// Ctrl-C still reaches a program cleanup runs; unmount and loop detach are
// system calls and do not depend on one.
//
// From the first signal on, SIGPIPE is ignored too: with the terminal or
// the pipe reading stderr gone (ssh dropped, tee killed by the same Ctrl-C),
// a progress line written during cleanup would otherwise kill the process
// halfway.
//
// Before that, a SIGPIPE whose cause is stdout's or stderr's reader gone
// (diskprep fscompare ... | head) is the first signal: Go's default would
// end the process at that write, with an image mounted and a loop device
// attached; the command cleans up instead and exits 141. A SIGPIPE from
// another pipe (a child's) is not: that write fails with EPIPE, as any
// write does, and the command goes on.
//
// stop ends the watching; signals then have their default effect again.
func notifySignals(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, len(interruptSignals))
	signal.Notify(ch, interruptSignals...)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	var mu sync.Mutex
	stopped := false
	done := make(chan struct{})
	go func() {
		var first os.Signal
	wait:
		for {
			select {
			case first = <-ch:
				break wait
			case first = <-pipe:
				if outputGone() {
					break wait
				}
			case <-done:
				return
			}
		}
		signal.Ignore(syscall.SIGPIPE)
		cancel(signalCause{first.(syscall.Signal)})
		noted := false
		for {
			select {
			case s := <-ch:
				mu.Lock()
				if !stopped && !noted {
					noted = true
					fmt.Fprintf(stderr, "diskprep: %s ignored: cleaning up after %s first (SIGKILL stops at once)\n",
						signalName(s.(syscall.Signal)), signalName(first.(syscall.Signal)))
				}
				mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		stopped = true
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// outputGone says whether stdout or stderr is a pipe or socket whose
// reader has gone: poll(2) says POLLERR (a pipe) or POLLHUP (a socket)
// for its writing end.
func outputGone() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}

// interruptionLine is the one line an interrupted command ends with:
// "interrupted", or "interrupted by SIGHUP" when a signal did it, then what
// the command says it left (interruptedError) and any failure besides the
// interruption (a cleanup that failed). The bare "context canceled" of the
// cancellation itself is no news to the user and is never shown.
func interruptionLine(ctx context.Context, err error) string {
	line := "interrupted"
	if sig, ok := signalOf(ctx); ok {
		line = signalCause{sig}.Error()
	}
	var ie interruptedError
	if errors.As(err, &ie) {
		line += ie.detail
	}
	for _, f := range besidesInterruption(err) {
		line += "; " + oneLine(f)
	}
	return line
}

// besidesInterruption lists the failures err holds other than the
// cancellation: the parts of a joined error (errors.Join, as a cleanup
// adds its own failure to the interruption) that are not a cancellation,
// or err itself when it is none. A program's exit beside the cancellation
// (disk.RunError's "context canceled: signal: killed") is the kill that
// cancelling the context made, no failure of its own.
func besidesInterruption(err error) []error {
	var ie interruptedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return besidesInterruption(ie.err)
	case !errors.Is(err, context.Canceled):
		return []error{err}
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, p := range j.Unwrap() {
				if _, killed := p.(*exec.ExitError); !killed {
					out = append(out, besidesInterruption(p)...)
				}
			}
			return out
		}
	}
	return nil
}

// interruptedError is an interruption told as what the command left
// behind; its err is what the command failed with (a cancellation, and
// whatever else went wrong).
type interruptedError struct {
	detail string // follows "interrupted" or "interrupted by SIGHUP": " after ...", "; test file removed"
	err    error
}

func (e interruptedError) Error() string { return strings.TrimSpace("interrupted" + e.detail) }
func (e interruptedError) Unwrap() error { return e.err }

// interrupted wraps err, an interruption, with what the command left.
func interrupted(detail string, err error) error {
	return interruptedError{detail: detail, err: err}
}
