package disk

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A failed step is the error Apply returns, which the user sees as one
// line: the log says it too, but at Info, so that only --verbose (Debug)
// shows it, and never a second copy of mkfs's whole output at the default
// level (Warn). A QEMU guest with a disk whose writes fail showed the copy.
func TestFailedStepLoggedOnlyVerbose(t *testing.T) {
	mkfs := []string{"mkfs.xfs", "/dev/sdz1"}
	boom := &RunError{Argv: mkfs, ExitCode: 1, Stderr: "mkfs.xfs: pwrite failed: Input/output error"}
	for _, tc := range []struct {
		level slog.Level
		shown bool
	}{{slog.LevelWarn, false}, {slog.LevelDebug, true}} {
		var logged bytes.Buffer
		a := newApplier(Deps{
			Runner: &scriptedRunner{t: t, calls: []scriptedCall{{argv: mkfs, err: boom}}},
			Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: tc.level})),
		})
		if err := a.do(context.Background(), "make filesystem", mkfs); !errors.Is(err, boom) {
			t.Fatalf("do: %v, want the runner's error", err)
		}
		if got := strings.Contains(logged.String(), "make filesystem: failed"); got != tc.shown {
			t.Errorf("at level %v the failure is logged: %v, want %v:\n%s", tc.level, got, tc.shown, logged.String())
		}
	}
}
