package disk

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// Layers are the storage that stands on disks: md arrays, volume groups and
// caches (disk/stack). A release asks them for the teardown of what stands
// on the devices it concerns, and has them carry it out; disk knows that
// teardown only as the record the guard judges and the dry run prints
// (StackRelease). The caller passes them in Deps, so that disk never
// imports the layers above it.
type Layers interface {
	// PlanTeardown adds to plan.Stacks what stands on devs ("major:minor"
	// -> kernel name), and adds the stacks' own devices to devs.
	PlanTeardown(ctx context.Context, a *Applier, plan *ReleasePlan, devs map[string]string, opt ReleaseOptions) error
	// ApplyTeardown carries out s after the unmounts and the fstab edit.
	ApplyTeardown(ctx context.Context, a *Applier, s StackRelease, res *ReleaseResult) error
}

// Applier is what a layer above disk gets to change the host with: the
// Host seam, the log, the roots and the steps partitions and layers
// share, each logged and guarded as disk's own.
type Applier struct{ a *applier }

// NewApplier is the Applier of deps.
func NewApplier(deps Deps) *Applier { return &Applier{newApplier(deps)} }

func (x *Applier) Host() Host                   { return x.a.host }
func (x *Applier) Log() *slog.Logger            { return x.a.log }
func (x *Applier) Roots() hwinfo.Roots          { return x.a.roots }
func (x *Applier) Progress() io.Writer          { return x.a.progress }
func (x *Applier) SystemdIsInit() bool          { return x.a.systemdIsInit() }
func (x *Applier) UdevRunning() bool            { return x.a.udevRunning() }
func (x *Applier) WholeDisk(name string) string { return x.a.wholeDisk(name) }
func (x *Applier) Now() time.Time               { return x.a.now() }

// Do runs one logged external step (what, then argv).
func (x *Applier) Do(ctx context.Context, what string, argv []string) error {
	return x.a.do(ctx, what, argv)
}

// DoInput is Do with a secret on the program's standard input, never
// logged.
func (x *Applier) DoInput(ctx context.Context, what string, argv []string, stdin []byte) error {
	return x.a.doInput(ctx, what, argv, stdin)
}

// Passphrase is the passphrase of the LUKS mapping name, as Deps'
// Passphrase asks it (confirm: asked twice, for a new volume).
func (x *Applier) Passphrase(ctx context.Context, name string, confirm bool) ([]byte, error) {
	if x.a.passphrase == nil {
		return nil, fmt.Errorf("LUKS volume %s needs a passphrase, and nothing asks for it here (give a key file)", name)
	}
	return x.a.passphrase(ctx, name, confirm)
}

// ProbeDevice reads the signatures on the device at path.
func (x *Applier) ProbeDevice(path string) ([]probe.Signature, error) { return x.a.probeDevice(path) }

// ReadDevnum reads a sysfs dev file: "major:minor".
func (x *Applier) ReadDevnum(path string) (string, error) { return x.a.readDevnum(path) }

// CheckMembersFree is the guard's last look at a stack's members before
// its superblock is written (guard.go).
func (x *Applier) CheckMembersFree(devs []string, use string) error {
	return x.a.checkMembersFree(devs, use)
}

// PreparePartition makes the file system of pp, mounts it, writes the
// marker and the fstab line, as Apply does for a partition; a layer's
// volume goes through it as a partition of p.
func (x *Applier) PreparePartition(ctx context.Context, p *Plan, pp PartPlan, version string, undo *[]func()) (PartResult, error) {
	return x.a.preparePartition(ctx, p, pp, version, undo)
}

// WipeOrder lists the devices names as /dev paths, partitions before
// their disks, as wipefs must take them.
func (x *Applier) WipeOrder(names []string) []string { return x.a.wipeOrder(names) }

// SetGroup names the stack ("vg NAME", "md NAME", "bcache set UUID") the
// kernel name dev belongs to, for the guard's account of what a wipe
// destroys; Group reads it back.
func (p *ReleasePlan) SetGroup(dev, group string) { p.groups[dev] = group }

// Group is the stack SetGroup gave dev; "" when none.
func (p *ReleasePlan) Group(dev string) string { return p.groups[dev] }

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

func newApplier(d Deps) *applier {
	a := &applier{host: d.Host, log: d.Logger, roots: d.Roots, fstabPath: d.FstabPath, refresh: d.Refresh, now: d.Now, progress: d.Progress, madePoints: map[string]bool{}, passphrase: d.Passphrase}
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

// SettleUdev waits, when udev runs, for it to finish the events queued so
// far (udevadm settle, up to 30 s), so that facts read next are the disks'
// as they are. The facts of partitions, arrays and volumes come from udev's
// database, which trails the kernel by the events not yet processed: right
// after a wipe (release --wipe, wipefs by hand, a stack torn down) it can
// still name the file system or member signature just erased, and a
// prepare planned on that refuses a blank disk. A real host has the same
// race. Failing to settle (udevadm missing, not allowed: a dry run as a
// user) is logged at debug level and changes nothing: the facts are then
// what udev has, as without udev.
func SettleUdev(ctx context.Context, d Deps) {
	a := newApplier(d)
	if !a.udevRunning() {
		return
	}
	if out, err := a.host.Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil {
		a.log.Debug("udevadm settle before reading the facts failed", "err", err, "output", string(out))
	}
}

// LockTarget takes, before the facts are read and the plan is made, the
// lock Apply would take for req's device (by device number) or image file
// (by real path), and holds it until unlock. Two prepare runs of one disk
// started together then cannot both plan against the untouched disk: the
// second is refused (ErrRefused, naming the holder's pid) instead of
// failing later on "changed since planning". A device that does not exist
// (yet) takes no lock here: planning reports it.
func LockTarget(req Request, deps Deps) (unlock func(), err error) {
	path, what, err := targetLock(req, deps)
	if err != nil || path == "" {
		return func() {}, err
	}
	return newApplier(deps).host.Lock(path, what)
}

// TargetLockPath is the lock file LockTarget takes for req, "" for none (a
// device that does not exist): what a command holding it for its whole
// run keys its own state by.
func TargetLockPath(req Request, deps Deps) (string, error) {
	path, _, err := targetLock(req, deps)
	return path, err
}

func targetLock(req Request, deps Deps) (path, what string, err error) {
	a := newApplier(deps)
	if req.Image != "" {
		real, err := resolveImagePath(a.host, req.Image)
		if err != nil {
			return "", "", err
		}
		return a.roots.ImageLockPath(real), real, nil
	}
	dev := req.Device
	if dev == "" {
		return "", "", nil
	}
	if !strings.HasPrefix(dev, "/") {
		dev = "/dev/" + dev
	}
	if _, err := FollowUserPath(a.host, "", req.Device, dev); IsRefusal(err) {
		return "", "", err // refused before the lock: planning would refuse it too
	}
	devnum, err := a.devNumber(dev)
	if err != nil {
		return "", "", nil
	}
	return a.roots.DeviceLockPath(devnum), dev, nil
}
