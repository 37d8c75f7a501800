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

// Deps are Apply's and release's ties to the host. Zero values mean the
// live machine.
type Deps struct {
	// Host carries out every effect; nil is the live machine (LiveHost
	// with Runner).
	Host Host
	// Runner runs programs on the live host when Host is nil; nil is
	// ExecRunner.
	Runner Runner
	Logger *slog.Logger // nil: discard
	// Roots are where the kernel interfaces (sys, proc, dev) and the host's
	// own files (run/diskprep: locks and attached loops, etc/fstab,
	// proc/1/comm, run/udev/control) are found; the zero value is the live
	// machine.
	Roots hwinfo.Roots
	// FstabPath overrides Roots.HostPath("etc/fstab").
	FstabPath string
	// Refresh re-reads the host facts just before writing, to re-check the
	// fingerprint and that nothing got mounted or stacked on the disk since
	// planning. Nil is hwinfo.Read on the live machine (Host and the
	// kernel roots unset); with another Host, nil skips that re-check (the
	// O_EXCL open and the on-disk size and table id are still checked).
	Refresh func(ctx context.Context) (*hwinfo.Host, error)
	// Now dates the records diskprep writes; nil is time.Now.
	Now func() time.Time
	// Progress gets the progress lines of long steps (a cache's dirty
	// blocks flushed before it is detached); nil: none shown.
	Progress io.Writer
	// Layers release what stands on the disks released (disk/stack);
	// nil releases disks and partitions only, and refuses a stack.
	Layers Layers
	// Passphrase asks the passphrase of the LUKS mapping name (twice when
	// confirm, for a new volume); nil: no one to ask, and a layer that
	// needs one fails before its first step.
	Passphrase func(ctx context.Context, name string, confirm bool) ([]byte, error)
}

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
	layers    Layers
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

func newApplier(d Deps) *applier {
	a := &applier{host: d.Host, log: d.Logger, roots: d.Roots, fstabPath: d.FstabPath, refresh: d.Refresh, now: d.Now, progress: d.Progress, madePoints: map[string]bool{}, layers: d.Layers, passphrase: d.Passphrase}
	if a.host == nil {
		a.host = defaultHost(d.Runner)
		if a.refresh == nil && d.Roots.Sys == "" && d.Roots.Proc == "" && d.Roots.Dev == "" {
			// On the live machine the facts are always re-read before
			// writing, whoever calls.
			a.refresh = func(ctx context.Context) (*hwinfo.Host, error) {
				return hwinfo.Read(ctx, hwinfo.Options{All: true, Logger: a.log})
			}
		}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.fstabPath == "" {
		a.fstabPath = a.roots.HostPath("etc/fstab")
	}
	a.runDir = a.roots.StateDir()
	return a
}
