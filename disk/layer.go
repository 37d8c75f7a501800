package disk

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
	// PlanRelease adds to plan.Stacks what stands on devs ("major:minor"
	// -> kernel name), and adds the stacks' own devices to devs.
	PlanRelease(ctx context.Context, a *Applier, plan *ReleasePlan, devs map[string]string, opt ReleaseOptions) error
	// ApplyRelease carries out s after the unmounts and the fstab edit.
	ApplyRelease(ctx context.Context, a *Applier, s StackRelease, res *ReleaseResult) error
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
