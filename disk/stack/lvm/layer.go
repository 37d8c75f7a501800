package lvm

import (
	"context"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
)

type (
	planner struct{ layer.Planner }
	applier struct{ *layer.Applier }
	run     struct{ *layer.Run }
)

// Read runs pvs and lvs (read-only) under ctx: the groups, volumes and
// physical volumes there are.
func Read(ctx context.Context, pl layer.Planner) (*State, error) {
	return planner{pl}.readLVM(ctx)
}

// PlanMemberCrypts plans the LUKS2 mapping of each of a group's members
// when g asks for it: the members the group is then made over, and the
// mappings.
func PlanMemberCrypts(pl layer.Planner, g GroupSpec, ms []layer.Member, opt layer.Options) ([]layer.Member, []*crypt.Plan, error) {
	return planner{pl}.planMemberCrypts(g, ms, opt)
}

// Plan plans the group g over its members ms (crypts their LUKS2
// mappings, from PlanMemberCrypts), given what st says is there.
func Plan(ctx context.Context, pl layer.Planner, g GroupSpec, ms []layer.Member, crypts []*crypt.Plan, opt layer.Options, st *State, mounts []disk.MountEntry) (GroupPlan, error) {
	gp, err := planner{pl}.planGroup(ctx, g, ms, opt, st, mounts)
	if err != nil {
		return gp, err
	}
	gp.Crypts = crypts
	for _, c := range crypts {
		if c.FSAfterOpen {
			gp.Replan, gp.spec, gp.members, gp.opt, gp.mounts = true, g, ms, opt, mounts
		}
	}
	return gp, nil
}

// Apply makes, grows or shrinks the group gp and its volumes, and puts
// their file systems on them.
func Apply(ctx context.Context, r *layer.Run, gp GroupPlan) (GroupResult, error) {
	return (&run{r}).applyGroup(ctx, gp)
}

// GroupsOf are the volume groups of the device-mapper devices dms (kernel
// names): a logical volume's, or a hidden sub-volume's (a cached volume's
// origin or cache) by its name.
func GroupsOf(a *layer.Applier, st *State, dms map[string]bool) map[string]bool {
	vgs := map[string]bool{}
	for dm := range dms {
		b, err := a.Host().ReadFile(a.Roots().SysPath("block", dm, "dm", "name"))
		if err != nil {
			continue
		}
		dmName := strings.TrimSpace(string(b))
		for vg, lvs := range st.LVs {
			for lv := range lvs {
				if disk.DMEscape(vg)+"-"+disk.DMEscape(lv) == dmName {
					vgs[vg] = true
				}
			}
		}
		// A hidden sub-volume (a cached volume's origin or cache,
		// data-data_corig): its group by the name's first single dash.
		if vg := GroupOfDMName(dmName); vg != "" && !vgs[vg] {
			for _, g := range st.PVVG {
				if g == vg {
					vgs[vg] = true
				}
			}
		}
	}
	return vgs
}

// PlanRelease plans the release of the group vg: its volumes removed and
// the group with them with opt.Wipe, made inactive without. addDev adds a
// device the release takes (its mounts and fstab lines go too); crypts
// collects the LUKS2 mappings of encrypted members, members the devices
// wiped with opt.Wipe.
func PlanRelease(a *layer.Applier, plan *disk.ReleasePlan, st *State, vg string, opt disk.ReleaseOptions, addDev func(string), crypts, members map[string]bool) {
	var lvNames []string
	for lv := range st.LVs[vg] {
		lvNames = append(lvNames, lv)
	}
	sort.Strings(lvNames)
	for _, lv := range lvNames {
		if real, err := a.Host().EvalSymlinks(a.Roots().DevPath(vg, lv)); err == nil {
			addDev(filepath.Base(real))
			plan.SetGroup(filepath.Base(real), "vg "+vg)
		}
		if opt.Wipe {
			plan.Stacks.LVRemove = append(plan.Stacks.LVRemove, vg+"/"+lv)
		}
	}
	if opt.Wipe {
		plan.Stacks.VGRemove = append(plan.Stacks.VGRemove, vg)
	} else {
		plan.Stacks.Deactivate = append(plan.Stacks.Deactivate, vg)
	}
	var pvs []string
	for pv, g := range st.PVVG {
		if g != vg {
			continue
		}
		pvs = append(pvs, pv)
		// An encrypted member: the mapping closes after the
		// group, and its partition is the member wiped.
		if real, err := a.Host().EvalSymlinks(a.Roots().DevPath(strings.TrimPrefix(pv, "/dev/"))); err == nil && a.Crypts().IsMapping(filepath.Base(real)) {
			dm := filepath.Base(real)
			crypts[dm] = true
			plan.SetGroup(dm, "vg "+vg)
			for _, m := range a.Crypts().Backing(dm) {
				members[m] = true
				plan.SetGroup(m, "vg "+vg)
			}
			continue
		}
		members[filepath.Base(pv)] = true
		plan.SetGroup(filepath.Base(pv), "vg "+vg)
	}
	sort.Strings(pvs)
	if opt.Wipe {
		plan.Stacks.PVRemove = append(plan.Stacks.PVRemove, pvs...)
	}
}

// PlanDormant plans the removal of the physical volume pv and, when it
// is in an inactive group, of the whole group, or refuses when the group
// has a physical volume not in wiped. pvNode maps a kernel name to the
// PV as pvs names it; done collects the kernel names taken care of.
func PlanDormant(a *layer.Applier, plan *disk.ReleasePlan, st *State, pv string, pvNode map[string]string, wiped, done map[string]bool) error {
	return (&applier{a}).addDormantVG(plan, st, pv, pvNode, wiped, done)
}

// Release carries out the groups' part of the teardown s: groups made
// inactive, or their volumes, the groups and their physical volumes
// removed. step runs and records one command.
func Release(s disk.StackRelease, step func(what string, argv ...string) error) error {
	for _, vg := range s.Deactivate {
		if err := step("deactivate volume group "+vg, "vgchange", "--activate", "n", vg); err != nil {
			return err
		}
	}
	for _, lv := range s.LVRemove {
		if err := step("remove logical volume "+lv, "lvremove", "--yes", lv); err != nil {
			return err
		}
	}
	for _, vg := range s.VGRemove {
		if err := step("remove volume group "+vg, "vgremove", vg); err != nil {
			return err
		}
	}
	for _, pv := range s.PVRemove {
		if err := step("remove physical volume "+pv, "pvremove", pv); err != nil {
			return err
		}
	}
	return nil
}

// GroupOfDMName is the volume group of a device-mapper name LVM made
// ("data-data_corig" -> "data"; a dash in a name is doubled): "" when
// the name has no single dash.
func GroupOfDMName(dm string) string {
	for i := 0; i < len(dm); i++ {
		if dm[i] != '-' {
			continue
		}
		if i+1 < len(dm) && dm[i+1] == '-' {
			i++
			continue
		}
		return strings.ReplaceAll(dm[:i], "--", "-")
	}
	return ""
}
