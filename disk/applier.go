package disk

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
)

// ErrMissingProgram is wrapped when mkfs (or another needed program) is not
// installed; the message names the package to install.
var ErrMissingProgram = errors.New("program not installed")

type applier struct {
	host      Host
	log       *slog.Logger
	roots     hwinfo.Roots
	runDir    string
	fstabPath string
	refresh   func(ctx context.Context) (*hwinfo.Host, error)
	now       func() time.Time
	progress  io.Writer
	// passphrase is Deps'.
	passphrase func(ctx context.Context, name string, confirm bool) ([]byte, error)
	// madePoints are the mount points this run created.
	madePoints map[string]bool
	// keepFacts has the guard read the facts once (a release's planning),
	// into factsRead.
	keepFacts bool
	factsRead *hwinfo.Host
}

func firstOr(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return a[0]
}

// do runs one logged external step. Its failure is logged at Info, like
// its start and end: the error it returns is what the user sees, as one
// line; only --verbose shows the log (and the program's whole output).
func (a *applier) do(ctx context.Context, what string, argv []string) error {
	return a.doInput(ctx, what, argv, nil)
}

// doInput is do with stdin on the program's standard input (nil: none).
// stdin is a secret: it is never logged, and a host that cannot pass it
// is an error, not a run without it.
func (a *applier) doInput(ctx context.Context, what string, argv []string, stdin []byte) error {
	a.log.Info(what+": started", "argv", argv)
	var out []byte
	var err error
	if stdin == nil {
		out, err = a.host.Run(ctx, argv[0], argv[1:]...)
	} else if in, ok := a.host.(InputRunner); ok {
		out, err = in.RunInput(ctx, stdin, argv[0], argv[1:]...)
	} else {
		err = noInput(argv[0])
	}
	if err != nil {
		a.log.Info(what+": failed", "argv", argv, "err", err, "output", string(out))
		return err
	}
	a.log.Info(what+": finished", "argv", argv)
	return nil
}

func (a *applier) systemdIsInit() bool {
	b, err := a.host.ReadFile(a.roots.HostPath("proc/1/comm"))
	return err == nil && strings.TrimSpace(string(b)) == "systemd"
}
