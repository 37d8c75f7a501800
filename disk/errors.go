package disk

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRefused is wrapped by every refusal for safety (main maps it to exit 3):
// the device is in use, holds the system, carries signatures, is read-only,
// too small, locked by another diskprep, changed since planning, or the
// change was not confirmed. Nothing has been written when it is returned.
var ErrRefused = errors.New("refused for safety")

// ErrUsage is wrapped by errors in the request itself (main maps it to exit 2):
// unknown filesystem, bad sizes or labels, a device that does not exist.
var ErrUsage = errors.New("bad input")

// refusal carries every reason found, so one run tells the whole story.
type refusal struct {
	verb    string // "" is prepare
	subject string
	reasons []string
}

func (e *refusal) Error() string {
	verb := e.verb
	if verb == "" {
		verb = "prepare"
	}
	return "refusing to " + verb + " " + e.subject + ": " + strings.Join(e.reasons, "; ")
}

func (e *refusal) Is(target error) bool { return target == ErrRefused }

// Refuse is the guard's refusal (ErrRefused) to prepare subject, with why.
func Refuse(subject string, reasons ...string) error {
	return &refusal{subject: subject, reasons: reasons}
}

// RefuseWipe is the refusal of release --wipe of subject.
func RefuseWipe(subject string, reasons ...string) error {
	return &refusal{verb: "wipe", subject: subject, reasons: reasons}
}

// LockHeldError is the refusal of a lock file at path that another
// diskprep (pid) holds for what: a Host's Lock returns it.
func LockHeldError(what, pid, path string) error {
	return Refuse(what, fmt.Sprintf("another diskprep (pid %s) holds %s (lock %s)", pid, what, path))
}

// Reasons returns the individual reasons of a refusal, nil for other errors.
func Reasons(err error) []string {
	var r *refusal
	if errors.As(err, &r) {
		return r.reasons
	}
	return nil
}

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

// Usagef is a usage error (ErrUsage): bad input, whatever the machine.
func Usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}
