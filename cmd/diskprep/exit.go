package main

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// Exit codes of DESIGN.md: scripts depend on them.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitRefused     = 3
	exitInterrupted = 130 // cancelled without a signal (tests); SIGINT's 128+2 too
)

// exitSignal is the exit code of a command ended by sig: 128+n, as a shell
// reports a process killed by it (130 SIGINT, 129 SIGHUP, 143 SIGTERM).
func exitSignal(sig syscall.Signal) int { return 128 + int(sig) }

// usageError marks a bad invocation (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// silentError carries an exit code for an outcome already reported on
// stdout/stderr (for example a refusal the command explained itself).
type silentError struct {
	err  error
	code int
}

func (e silentError) Error() string { return e.err.Error() }
func (e silentError) Unwrap() error { return e.err }

func isSilent(err error) bool {
	var s silentError
	return errors.As(err, &s)
}

// sentinels maps the exported errors of the packages to exit codes. Only main
// decides exit codes (STYLE.md rule 2).
var sentinels = []struct {
	err  error
	code int
}{
	{context.Canceled, exitInterrupted},
	{units.ErrSyntax, exitUsage},
	{workload.ErrUsage, exitUsage},
	{bench.ErrRefused, exitRefused},
	{record.ErrUnsafeStore, exitRefused},
	{record.ErrAmbiguous, exitUsage},
	{compare.ErrUsage, exitUsage},
	{disk.ErrUsage, exitUsage},
	{disk.ErrRefused, exitRefused},
	{hwinfo.ErrUntrustedLink, exitRefused},
}

func exitCode(err error) int {
	var s silentError
	if errors.As(err, &s) {
		return s.code
	}
	var u usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return exitFailure
}

// oneLine keeps an error to the single line DESIGN.md promises.
func oneLine(err error) string {
	msg := strings.TrimSpace(err.Error())
	msg = strings.ReplaceAll(msg, "\r", " ")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[:i]) + " (more with --verbose)"
	}
	return msg
}
