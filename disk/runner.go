package disk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/diskprep/diskprep/internal/termtext"
)

// InputRunner runs a program with bytes on its standard input: a secret
// (a LUKS passphrase) that must never be in its argv, where any user sees
// it in /proc.
type InputRunner interface {
	RunInput(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)
}

// noInput is the error of a host or runner that cannot give program name
// its standard input: the secret is not dropped, the run fails.
func noInput(name string) error {
	return fmt.Errorf("%s: this host cannot pass a secret on standard input", name)
}

// ExecRunner runs programs with exec.CommandContext; cancelling the context
// kills the child. It returns stdout followed by stderr, since version banners
// (mkfs.ext4 -V) go to stderr; on failure the error is a *RunError.
type ExecRunner struct{}

// RunError is a program that could not be run or exited non-zero.
type RunError struct {
	Argv     []string
	ExitCode int // -1 when it did not run or was killed
	Stderr   string
	Err      error
}

func (e *RunError) Error() string {
	msg := fmt.Sprintf("%s: %v", QuoteArgv(e.Argv), e.Err)
	if e.ExitCode > 0 {
		msg = fmt.Sprintf("%s: exit status %d", QuoteArgv(e.Argv), e.ExitCode)
	}
	// A program's terminal drawing (mkfs.ext4's backspaced counters) is
	// rendered to what it left on screen: no control bytes in the one line.
	if s := termtext.OneLine(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.RunInput(ctx, nil, name, args...)
}

// RunInput implements InputRunner; nil stdin is none (the null device).
func (ExecRunner) RunInput(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := append(stdout.Bytes(), stderr.Bytes()...)
	if err != nil {
		re := &RunError{Argv: append([]string{name}, args...), ExitCode: -1, Stderr: stderr.String(), Err: err}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			re.ExitCode = ee.ExitCode()
		}
		if ctx.Err() != nil {
			re.Err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return out, re
	}
	return out, nil
}
