// Command diskprep takes a Linux host from blank data disks to disks that are
// partitioned, formatted, mounted, persisted and benchmarked, with the numbers
// recorded next to the exact hardware they came from.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

func main() {
	ctx, stop := notifySignals(context.Background(), os.Stderr)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	// The last line is written and the exit code decided: a signal from
	// now on changes neither.
	signal.Ignore(interruptSignals...)
	stop()
	os.Exit(code)
}

// run builds the app, runs it and turns its error into one line on stderr
// and an exit code. Tests call it with buffers.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runOn(ctx, nil, args, stdin, stdout, stderr)
}

// runOn is run on machine m (nil: this one), for tests.
func runOn(ctx context.Context, m *machine, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	st := &runState{machine: m}
	app := newApp(stdin, stdout, stderr, st)
	err := app.RunContext(ctx, reorderArgs(app, args))
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil {
		return 0
	}
	// An interruption ends the same way whatever the command and however
	// its error is made: the command has cleaned up, one line says so.
	sig, signalled := signalOf(ctx)
	if signalled || errors.Is(err, context.Canceled) || errors.As(err, new(interruptedError)) {
		// Output read by a pipe that closed (| head) ends quietly, as
		// other tools do, unless the command has something to say of
		// what it cleaned up or failed to.
		if sig != syscall.SIGPIPE || errors.As(err, new(interruptedError)) || slices.ContainsFunc(besidesInterruption(err), notEPIPE) {
			fmt.Fprintf(stderr, "diskprep: %s\n", interruptionLine(ctx, err))
		}
		if signalled {
			return exitSignal(sig)
		}
		return exitInterrupted
	}
	if errors.Is(err, syscall.EPIPE) && outputGone() {
		// The write failed before the SIGPIPE it raised arrived: the
		// same quiet end.
		return exitSignal(syscall.SIGPIPE)
	}
	code := exitCode(err)
	switch {
	case isSilent(err):
	case st.verbose:
		fmt.Fprintf(stderr, "diskprep: %s\n", err)
	default:
		fmt.Fprintf(stderr, "diskprep: %s\n", oneLine(err))
	}
	return code
}

// notEPIPE says err is no failed write to a closed pipe.
func notEPIPE(err error) bool { return !errors.Is(err, syscall.EPIPE) }
