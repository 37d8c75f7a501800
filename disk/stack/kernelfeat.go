package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
)

// kernelFeature is one thing of the running kernel a stack needs: there
// when one of its sysfs, procfs or dev paths exists (loaded, or built in),
// else loadable when modprobe --dry-run finds its module.
type kernelFeature struct {
	what   string   // for the refusal: "the dm-cache target"
	module string   // modprobe's name
	sys    []string // under /sys: present when loaded
	proc   []string // under /proc
	dev    []string // under /dev
}

var (
	featDM         = kernelFeature{what: "device-mapper", module: "dm-mod", sys: []string{"module/dm_mod"}, dev: []string{"mapper/control"}}
	featDMCache    = kernelFeature{what: "the dm-cache target", module: "dm-cache", sys: []string{"module/dm_cache"}}
	featWritecache = kernelFeature{what: "the dm-writecache target", module: "dm-writecache", sys: []string{"module/dm_writecache"}}
	featBcache     = kernelFeature{what: "bcache", module: "bcache", sys: []string{"fs/bcache", "module/bcache"}}
	featDMCrypt    = kernelFeature{what: "the dm-crypt target", module: "dm-crypt", sys: []string{"module/dm_crypt"}}
	featMD         = kernelFeature{what: "md (software RAID)", module: "md-mod", sys: []string{"module/md_mod"}, proc: []string{"mdstat"}}
)

// raidFeature is the md personality of a RAID level.
func raidFeature(level int) kernelFeature {
	mod := fmt.Sprintf("raid%d", level)
	if level == 4 || level == 5 || level == 6 {
		mod = "raid456"
	}
	return kernelFeature{what: fmt.Sprintf("md's RAID %d personality", level), module: mod, sys: []string{"module/" + mod}}
}

// need is a kernel feature and the stack that needs it ("md array data").
type need struct {
	kernelFeature
	who string
}

// checkKernel refuses, at plan time and so before a byte is written, a
// stack plan whose kernel has not and cannot load a feature it needs
// (a kernel built without device-mapper, a module missing from
// /lib/modules), or whose bcache tools are missing. Without modprobe it
// cannot tell, and lets the tools say.
func (pl Planner) checkKernel(ctx context.Context, needs []need, caches []cache.Plan) error {
	h := pl.HostOrLive()
	seen := map[string]bool{}
	var lacks, whos []string
	for _, f := range needs {
		if seen[f.module] {
			continue
		}
		seen[f.module] = true
		if pl.kernelHas(f.kernelFeature) {
			continue
		}
		out, err := h.Run(ctx, "modprobe", "--dry-run", "--quiet", f.module)
		switch {
		case err == nil:
		case layer.IsNotFound(err):
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			why := strings.TrimSpace(string(out))
			if why == "" {
				why = "no module " + f.module + " for this kernel"
			}
			lacks = append(lacks, fmt.Sprintf("%s (%s)", f.what, firstLine(why)))
			if !slices.Contains(whos, f.who) {
				whos = append(whos, f.who)
			}
		}
	}
	// make-bcache, which planning does not otherwise run (lvm's tools it
	// does): missing, it would be found only after the tables are written.
	for _, cp := range caches {
		if cp.Kind != cache.KindBcache || len(cp.Steps) == 0 {
			continue
		}
		if _, err := h.Run(ctx, "make-bcache", "-h"); err != nil && layer.IsNotFound(err) {
			return fmt.Errorf("make-bcache is not installed: install the bcache-tools package: %w", disk.ErrMissingProgram)
		}
		break
	}
	if len(lacks) == 0 {
		return nil
	}
	return disk.Refuse(strings.Join(whos, ", "), fmt.Sprintf("this kernel lacks %s: it cannot be built on this machine", strings.Join(lacks, " and ")))
}

// kernelHas says whether the feature is loaded or built in.
func (pl Planner) kernelHas(f kernelFeature) bool {
	h := pl.HostOrLive()
	for _, p := range f.sys {
		if _, err := h.Stat(pl.Roots.SysPath(p)); err == nil {
			return true
		}
	}
	for _, p := range f.proc {
		if _, err := h.Stat(pl.Roots.ProcPath(p)); err == nil {
			return true
		}
	}
	for _, p := range f.dev {
		if _, err := h.Stat(pl.Roots.DevPath(p)); err == nil {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
