package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

type (
	planner struct{ layer.Planner }
	applier struct{ *layer.Applier }
	run     struct{ *layer.Run }
)

func (r *run) app() *applier { return &applier{r.Applier} }

// MinMembers is the least number of members an md level takes; ok is
// false for a level diskprep does not make.
func MinMembers(level int) (n int, ok bool) {
	n, ok = minMembers[level]
	return n, ok
}

// Plan plans the array a over its members ms; conf is the mdadm.conf its
// line goes to.
func Plan(pl layer.Planner, a ArraySpec, ms []layer.Member, opt layer.Options, mounts []disk.MountEntry, conf string) (ArrayPlan, error) {
	return planner{pl}.planArray(a, ms, opt, mounts, conf)
}

// CheckConf refuses an mdadm.conf that already names one of arrays'
// devices or UUIDs with another line.
func CheckConf(pl layer.Planner, conf string, arrays []ArrayPlan) error {
	return planner{pl}.checkMdadmConf(conf, arrays)
}

// Apply creates the array ap (unless it exists), writes its line to conf
// and puts its file system on it.
func Apply(ctx context.Context, r *layer.Run, ap ArrayPlan, conf string) (*ArrayResult, error) {
	return (&run{r}).applyArray(ctx, ap, conf)
}

// PlanRelease plans the release of the running array md (kernel name):
// stopped, and with opt.Wipe its members' superblocks zeroed; diskprep's
// lines for it leave mdadm.conf. addDev adds a device the release takes
// (its mounts and fstab lines go too); members collects the member
// devices, wiped with opt.Wipe.
func PlanRelease(a *layer.Applier, plan *disk.ReleasePlan, md string, opt disk.ReleaseOptions, addDev func(string), members map[string]bool) {
	addDev(md)
	plan.SetGroup(md, "md "+md)
	plan.Stacks.MDStop = append(plan.Stacks.MDStop, a.Roots().DevPath(md))
	des, _ := a.Host().ReadDir(a.Roots().SysPath("block", md, "slaves"))
	for _, de := range des {
		members[de.Name()] = true
		plan.SetGroup(de.Name(), "md "+md)
		if opt.Wipe {
			plan.Stacks.MDZero = append(plan.Stacks.MDZero, a.Roots().DevPath(de.Name()))
		}
	}
	b, err := a.Host().ReadFile(a.Roots().SysPath("block", md, "md", "uuid"))
	if err != nil {
		return
	}
	uuid := mdUUIDForm(strings.TrimSpace(string(b)))
	for _, conf := range []string{a.Roots().HostPath("etc/mdadm/mdadm.conf"), a.Roots().HostPath("etc/mdadm.conf")} {
		data, err := a.Host().ReadFile(conf)
		if err != nil {
			continue
		}
		for _, l := range managedConfLines(string(data), uuid) {
			plan.Stacks.MdadmConf = conf
			plan.Stacks.MdadmConfRemove = append(plan.Stacks.MdadmConfRemove, l)
		}
	}
}

// PlanDormant plans zeroing the superblock of dev, a member of a stopped
// array (sig its signature), or refuses when a device not in wiped is a
// member of the same array.
func PlanDormant(a *layer.Applier, plan *disk.ReleasePlan, dev string, sig probe.Signature, wiped map[string]bool) error {
	return (&applier{a}).addDormantMD(plan, dev, sig, wiped)
}

// Release carries out the arrays' part of the teardown s: stop, zero the
// superblocks, remove diskprep's mdadm.conf lines. step runs and records
// one command.
func Release(a *layer.Applier, s disk.StackRelease, res *disk.ReleaseResult, step func(what string, argv ...string) error) error {
	for _, md := range s.MDStop {
		if err := step("stop md array "+md, "mdadm", "--stop", md); err != nil {
			return err
		}
	}
	for _, m := range s.MDZero {
		if err := step("zero md superblock of "+m, "mdadm", "--zero-superblock", m); err != nil {
			return err
		}
	}
	if len(s.MdadmConfRemove) == 0 {
		return nil
	}
	b, err := a.Host().ReadFile(s.MdadmConf)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", s.MdadmConf, err)
	}
	lines := strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		if i+1 < len(lines) && strings.HasPrefix(lines[i], mdadmConfMarker) && slices.Contains(s.MdadmConfRemove, lines[i+1]) {
			res.StackSteps = append(res.StackSteps, "removed from "+s.MdadmConf+": "+lines[i+1])
			i++
			continue
		}
		out = append(out, lines[i])
	}
	if len(out) == len(lines) {
		return nil
	}
	if err := a.Host().WriteFile(s.MdadmConf, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", s.MdadmConf, err)
	}
	return nil
}
