package stack

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os/exec"
	"slices"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/hwinfo"
)

// Planner plans stacks and caches on the machine of its disk.Planner.
type Planner struct{ disk.Planner }

// applier applies stacks and caches with what disk gives a layer.
type applier struct {
	*disk.Applier
	host     disk.Host
	log      *slog.Logger
	roots    hwinfo.Roots
	progress io.Writer
}

func newApplier(deps disk.Deps) *applier { return fromDisk(disk.NewApplier(deps)) }

// crypts is the LUKS2 layer's applier over the same host.
func (a *applier) crypts() crypt.Applier { return crypt.Applier{Applier: a.Applier} }

func fromDisk(x *disk.Applier) *applier {
	return &applier{Applier: x, host: x.Host(), log: x.Log(), roots: x.Roots(), progress: x.Progress()}
}

// Layers are the stacks and caches as disk's release sees them
// (disk.Layers): pass them in disk.Deps wherever a release may meet one.
type Layers struct{}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

func firstOr(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return a[0]
}

func orNone(s string) string {
	if s == "" {
		return "(none reported)"
	}
	return s
}

const mib = uint64(1) << 20

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// progressf reports progress of a long step to the user (Deps.Progress).
func (a *applier) progressf(format string, args ...any) {
	a.log.Info(fmt.Sprintf(format, args...))
	if a.progress != nil {
		fmt.Fprintf(a.progress, format+"\n", args...)
	}
}

// run is one ApplyStacks under way: the programs' versions its steps
// record, the undo list they push onto, and whether they changed anything.
type run struct {
	*applier
	versions map[string]string
	undo     *[]func()
	// changed: a step changed the machine; fstabChanged: a volume's
	// fstab line was added.
	changed, fstabChanged bool
}

// Options are what a stack request allows every layer (its JSON fields
// are the request's own).
type Options struct {
	// Wipe allows replacing a file system found on a new array or volume
	// that is not the one asked for.
	Wipe bool `json:"wipe,omitempty"`
	// NoDiscard: mkfs on the stacks' volumes does not discard.
	NoDiscard bool `json:"no_discard,omitempty"`
	// Shrink allows a logical volume asked smaller than it is to shrink,
	// with its ext2/3/4 file system, when that is unmounted (prepare
	// --shrink). Without it a smaller size is refused.
	Shrink bool `json:"shrink,omitempty"`
}

// member is one stack member partition as planned, with its disk.
type member struct {
	path string
	part disk.PartPlan
	plan *disk.Plan
	disk *hwinfo.Disk
	ex   *hwinfo.Partition // in the facts; nil when the partition is new
}

func withOrigin(origin string, err error) error {
	if origin == "" {
		return err
	}
	return fmt.Errorf("%s: %w", origin, err)
}

func isNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }

func boolSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
