// Package layer is what every layer of a stack is given and shares:
// the planner and applier over disk's, one run's state, a member
// partition, the options a request allows, and the volume (LUKS2, file
// system, mount) a layer puts on top. Nothing here knows md, LVM or a
// cache.
package layer

import (
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/hwinfo"
)

// Planner plans a layer on the machine of its disk.Planner.
type Planner struct{ disk.Planner }

// Applier applies a layer with what disk gives one.
type Applier struct{ *disk.Applier }

// NewApplier is disk's applier of deps as a layer's.
func NewApplier(deps disk.Deps) *Applier { return FromDisk(disk.NewApplier(deps)) }

// Crypts is the LUKS2 layer's applier over the same host.
func (a *Applier) Crypts() crypt.Applier { return crypt.Applier{Applier: a.Applier} }

// Planner is a planner that reads the machine the applier changes, for
// a step that must look again at what is there now.
func (a *Applier) Planner() Planner {
	return Planner{disk.Planner{Host: a.Host(), Roots: a.Roots()}}
}

// FromDisk is x as a layer's applier.
func FromDisk(x *disk.Applier) *Applier {
	return &Applier{Applier: x}
}

// SortedKeys are the keys of m, sorted.
func SortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// FirstOr is a's first element, or "" for none (an argv's program).
func FirstOr(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return a[0]
}

// OrNone is s, or "(none reported)" for a tool's empty answer.
func OrNone(s string) string {
	if s == "" {
		return "(none reported)"
	}
	return s
}

// MiB is a mebibyte in bytes.
const MiB = uint64(1) << 20

// RoundUp is n rounded up to a multiple of m.
func RoundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// Progressf reports progress of a long step to the user (Deps.Progress).
func (a *Applier) Progressf(format string, args ...any) {
	a.Log().Info(fmt.Sprintf(format, args...))
	if a.Progress() != nil {
		fmt.Fprintf(a.Progress(), format+"\n", args...)
	}
}

// Run is one ApplyStacks under way: the programs' versions its steps
// record, the undo list they push onto, and whether they changed anything.
type Run struct {
	*Applier
	Versions map[string]string
	Undo     *[]func()
	// Changed: a step Changed the machine; FstabChanged: a volume's
	// fstab line was added.
	Changed, FstabChanged bool
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

// Member is one stack Member partition as planned, with its disk.
type Member struct {
	Path string
	Part disk.PartPlan
	Plan *disk.Plan
	Disk *hwinfo.Disk
	Ex   *hwinfo.Partition // in the facts; nil when the partition is new
}

// WithOrigin prefixes err with origin, the request entry (a plan file's
// line) it came from, when there is one.
func WithOrigin(origin string, err error) error {
	if origin == "" {
		return err
	}
	return fmt.Errorf("%s: %w", origin, err)
}

// IsNotFound says whether err is a program that is not installed.
func IsNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }

// BoolSet is the set of m's keys.
func BoolSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
