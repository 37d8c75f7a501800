package stack

import (
	"io"
	"log/slog"
	"maps"
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
