// Package lvm is the LVM layer of a stack: a volume group over its
// member partitions (each its own LUKS2 mapping when asked), its logical
// volumes made, grown or shrunk with their file systems, and released:
// volumes and group removed, or the group made inactive.
package lvm

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/hwinfo/probe"
	"github.com/diskprep/diskprep/internal/units"
)

// GroupResult is one volume group after ApplyStacks.
type GroupResult struct {
	VG           string     `json:"vg"`
	PVs          []string   `json:"pvs"`
	PVCreateArgv [][]string `json:"pvcreate_argv,omitempty"`
	Created      bool       `json:"created"`
	CreateArgv   []string   `json:"create_argv,omitempty"`
	// ExtendArgv added the plan's new members to an existing group.
	ExtendArgv []string `json:"extend_argv,omitempty"`
	// Crypts are the LUKS2 layers of encrypted members.
	Crypts []*crypt.Result `json:"crypts,omitempty"`
	// LVMVersion is lvm version's first line.
	LVMVersion string     `json:"lvm_version,omitempty"`
	Volumes    []LVResult `json:"volumes"`
}

// LVResult is one logical volume after ApplyStacks.
type LVResult struct {
	Name       string   `json:"name"`
	Path       string   `json:"path"`
	SizeBytes  uint64   `json:"size_bytes,omitempty"`
	Created    bool     `json:"created"`
	CreateArgv []string `json:"create_argv,omitempty"`
	// Grown: an existing volume and its file system were grown from
	// FromBytes, by GrowArgv.
	Grown    bool     `json:"grown,omitempty"`
	GrowArgv []string `json:"grow_argv,omitempty"`
	// Shrunk: an existing volume and its file system were shrunk from
	// FromBytes, unmounted, by ShrinkArgv (prepare --shrink).
	Shrunk     bool       `json:"shrunk,omitempty"`
	ShrinkArgv [][]string `json:"shrink_argv,omitempty"`
	// CryptResized: the LUKS2 mapping of a grown encrypted volume was
	// grown to fill it, by CryptResizeArgv.
	CryptResized    bool     `json:"crypt_resized,omitempty"`
	CryptResizeArgv []string `json:"crypt_resize_argv,omitempty"`
	// FSGrown: the file system, smaller than its volume, was grown by
	// FSGrowArgv to fill it.
	FSGrown    bool               `json:"fs_grown,omitempty"`
	FSGrowArgv []string           `json:"fs_grow_argv,omitempty"`
	FromBytes  uint64             `json:"from_bytes,omitempty"`
	Volume     layer.VolumeResult `json:"volume"`
}

// applyGroup opens a volume group's encrypted members, creates the
// group and its logical volumes (or grows or shrinks them), and puts
// each one's file system on it.
func (r *run) applyGroup(ctx context.Context, gp GroupPlan) (GroupResult, error) {
	gr := GroupResult{VG: gp.VG, PVs: gp.PVs, LVMVersion: r.Versions["lvm"]}
	err := r.groupSteps(ctx, &gp, &gr)
	return gr, err
}

func (r *run) groupSteps(ctx context.Context, gp *GroupPlan, gr *GroupResult) error {
	for _, c := range gp.Crypts {
		cr, err := r.Crypts().Up(ctx, c, r.Versions["cryptsetup"], r.Undo)
		gr.Crypts = append(gr.Crypts, cr)
		r.Changed = r.Changed || cr.Changed()
		if err != nil {
			return err
		}
	}
	if gp.Replan {
		// The members are open now: what LVM finds on them decides.
		pl := planner{r.Planner()}
		lvm, err := pl.readLVM(ctx)
		if err == nil && slices.Contains(slices.Collect(maps.Values(lvm.PVVG)), gr.VG) {
			// The group is there (a release without --wipe left it
			// inactive): active again, as it was.
			if err = r.Do(ctx, "activate volume group", []string{"vgchange", "--activate", "y", gr.VG}); err == nil {
				lvm, err = pl.readLVM(ctx)
			}
		}
		if err == nil {
			var crypts = gp.Crypts
			*gp, err = pl.planGroup(ctx, gp.spec, gp.members, gp.opt, lvm, gp.mounts)
			gp.Crypts = crypts
		}
		if err != nil {
			return fmt.Errorf("vg %s, its members opened: %w", gr.VG, err)
		}
	}
	for _, argv := range gp.PVCreate {
		dev := argv[len(argv)-1]
		if err := r.CheckMembersFree([]string{dev}, "lvm:"+gp.VG); err != nil {
			return err
		}
		if err := r.Do(ctx, "create physical volume", argv); err != nil {
			return fmt.Errorf("pvcreate %s: %w", dev, err)
		}
		gr.PVCreateArgv = append(gr.PVCreateArgv, argv)
		r.Changed = true
	}
	if gp.VGCreate != nil {
		if err := r.Do(ctx, "create volume group", gp.VGCreate); err != nil {
			return fmt.Errorf("vgcreate %s: %w", gp.VG, err)
		}
		gr.Created, gr.CreateArgv = true, gp.VGCreate
		r.Changed = true
	}
	if gp.VGExtend != nil {
		if err := r.Do(ctx, "extend volume group", gp.VGExtend); err != nil {
			return fmt.Errorf("vgextend %s: %w", gp.VG, err)
		}
		gr.ExtendArgv = gp.VGExtend
		r.Changed = true
	}
	for _, lp := range gp.Volumes {
		lr := LVResult{Name: lp.Name, Path: lp.Path, SizeBytes: lp.SizeBytes}
		err := r.lvSteps(ctx, gp.VG, lp, &lr)
		gr.Volumes = append(gr.Volumes, lr)
		if err != nil {
			return err
		}
	}
	return nil
}

// lvSteps creates, grows or shrinks one logical volume, then puts its
// file system on it (and grows that, or its LUKS2 mapping, to fill it).
func (r *run) lvSteps(ctx context.Context, vg string, lp LVPlan, lr *LVResult) error {
	if lp.Create != nil {
		if err := r.Do(ctx, "create logical volume", lp.Create); err != nil {
			return fmt.Errorf("lvcreate %s/%s: %w", vg, lp.Name, err)
		}
		lr.Created, lr.CreateArgv = true, lp.Create
		r.Changed = true
	}
	if lp.Grow != nil {
		// lvextend --resizefs grows the file system with it, mounted or
		// not (fsadm mounts an unmounted xfs for the time it takes).
		if err := r.Do(ctx, "grow logical volume and its file system", lp.Grow); err != nil {
			return fmt.Errorf("lvextend %s/%s: %w", vg, lp.Name, err)
		}
		lr.Grown, lr.GrowArgv, lr.FromBytes = true, lp.Grow, lp.FromBytes
		r.Changed = true
	}
	// The file system is checked and shrunk before the volume: one whose
	// data does not fit fails at resize2fs, nothing cut.
	for i, argv := range lp.Shrink {
		what := [...]string{"check the file system before shrinking it", "shrink the file system", "shrink the logical volume"}[min(i, 2)]
		if err := r.Do(ctx, what, argv); err != nil {
			return fmt.Errorf("%s %s/%s: %w", argv[0], vg, lp.Name, err)
		}
		lr.ShrinkArgv = append(lr.ShrinkArgv, argv)
	}
	if lp.Shrink != nil {
		lr.Shrunk, lr.FromBytes = true, lp.FromBytes
		r.Changed = true
	}
	if _, err := r.WaitStackNode(ctx, lp.Path); err != nil {
		return err
	}
	var err error
	lr.Volume, err = r.Volume(ctx, lp.Volume)
	if err == nil && lp.CryptResize != nil {
		if err = r.Do(ctx, "grow the LUKS2 mapping to fill its volume", lp.CryptResize); err != nil {
			return fmt.Errorf("cryptsetup resize %s: %w", lp.Path, err)
		}
		lr.CryptResized, lr.CryptResizeArgv = true, lp.CryptResize
		r.Changed = true
	}
	if err == nil && lp.FSGrow != nil {
		// After the mount: both tools grow a mounted file system.
		if err = r.Do(ctx, "grow the file system to fill its volume", lp.FSGrow); err != nil {
			return fmt.Errorf("%s %s: %w", lp.FSGrow[0], lp.Path, err)
		}
		lr.FSGrown, lr.FSGrowArgv = true, lp.FSGrow
		r.Changed = true
	}
	return err
}

// ExtentBytes is LVM's default extent; MetadataBytes the room pvcreate
// keeps before the first extent (its default data alignment).
const (
	ExtentBytes   = 4 << 20
	MetadataBytes = 1 << 20
)

// GroupSpec is one LVM volume group over the partitions whose Use is
// "lvm:"+VG, and its logical volumes in order.
type GroupSpec struct {
	VG      string   `json:"vg"`
	Volumes []LVSpec `json:"volumes"`
	Origin  string   `json:"origin,omitempty"`
	// Encrypt puts LUKS2 on each member partition, its mapping the
	// physical volume (crypt.go).
	Encrypt *crypt.Spec `json:"encrypt,omitempty"`
}

// LVSpec is one logical volume; SizeBytes 0 is the rest of the group (last
// only).
type LVSpec struct {
	Name      string `json:"name"`
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// SizePercent is a share of the group's size ("50%"), whole extents
	// rounded down: the group is what the plan's members make, so the
	// share comes to the same size on every run.
	SizePercent float64          `json:"size_percent,omitempty"`
	Volume      layer.VolumeSpec `json:"filesystem"`
	Origin      string           `json:"origin,omitempty"`
}

// GroupPlan is one LVM volume group.
type GroupPlan struct {
	VG  string   `json:"vg"`
	PVs []string `json:"pvs"`
	// PVCreate are the pvcreate argvs of the members not yet physical
	// volumes; VGCreate is nil when the group exists.
	PVCreate [][]string `json:"pvcreate,omitempty"`
	VGCreate []string   `json:"vgcreate,omitempty"`
	// VGExtend adds to an existing group the members the plan gives it
	// that are not in it yet; nil when none.
	VGExtend    []string `json:"vgextend,omitempty"`
	ExtentBytes uint64   `json:"extent_bytes"`
	SizeBytes   uint64   `json:"size_bytes"` // the extents the group will have
	Volumes     []LVPlan `json:"volumes"`
	Origin      string   `json:"origin,omitempty"`
	// Crypts are the LUKS2 layers of encrypted members, in PVs' order:
	// each member's mapping is its physical volume.
	Crypts []*crypt.Plan `json:"crypts,omitempty"`
	// Replan: a member's mapping was closed, so the group is planned
	// again once it is open (from spec, members and req).
	Replan  bool `json:"replan,omitempty"`
	spec    GroupSpec
	members []layer.Member
	opt     layer.Options
	mounts  []disk.MountEntry
}

// LVPlan is one logical volume.
type LVPlan struct {
	Name      string `json:"name"`
	Path      string `json:"path"` // /dev/VG/LV
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// Create is the lvcreate argv; nil when the volume exists as asked.
	Create []string `json:"create,omitempty"`
	// Grow is the lvextend argv that grows an existing volume and its
	// file system to the size asked (SizeBytes, from FromBytes); nil when
	// it has that size.
	Grow []string `json:"grow,omitempty"`
	// Shrink are the commands that shrink an existing, unmounted volume
	// and its ext file system to SizeBytes, from FromBytes, in order
	// (e2fsck -f -p, resize2fs, lvreduce; StackRequest.Shrink); nil
	// otherwise.
	Shrink    [][]string `json:"shrink,omitempty"`
	FromBytes uint64     `json:"from_bytes,omitempty"`
	// FSGrow grows a file system smaller than its volume (of FSBytes) to
	// fill it, once the volume is mounted: the volume was extended
	// without it (lvextend without --resizefs, or a run that died in
	// between). xfs_growfs MOUNTPOINT or resize2fs DEVICE, both online.
	FSGrow  []string `json:"fs_grow,omitempty"`
	FSBytes uint64   `json:"fs_bytes,omitempty"`
	// CryptResize grows an encrypted volume's LUKS2 mapping to fill the
	// grown volume (cryptsetup resize), before FSGrow grows the file
	// system on it.
	CryptResize []string         `json:"crypt_resize,omitempty"`
	Volume      layer.VolumePlan `json:"volume"`
}

// State is what pvs and lvs say.
type State struct {
	PVVG map[string]string            // PV node -> its VG ("" for none)
	LVs  map[string]map[string]uint64 // VG -> LV -> size in bytes
	// PVList is pvs's rows (node, VG) in its order: a group's missing
	// PVs are rows named "[unknown]", which pvVG keeps only one of.
	PVList [][2]string
	// PVUsed and PVFree are a PV's allocated and free bytes.
	PVUsed, PVFree map[string]uint64
}

// unusedMember says whether one of ms is a physical volume of vg that no
// volume uses.
func (st *State) unusedMember(vg string, ms []layer.Member) bool {
	for _, m := range ms {
		if st.PVVG[m.Path] == vg && st.PVUsed[m.Path] == 0 && st.PVFree[m.Path] > 0 {
			return true
		}
	}
	return false
}

// readLVM runs pvs and lvs (read-only) under ctx.
func (pl planner) readLVM(ctx context.Context) (*State, error) {
	st := &State{PVVG: map[string]string{}, LVs: map[string]map[string]uint64{}, PVUsed: map[string]uint64{}, PVFree: map[string]uint64{}}
	h := pl.HostOrLive()
	out, err := h.Run(ctx, "pvs", "--noheadings", "--separator", "|", "-o", "pv_name,vg_name")
	if err != nil {
		return nil, CmdError("pvs", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) == 2 && f[0] != "" {
			st.PVVG[f[0]] = f[1]
			st.PVList = append(st.PVList, [2]string{f[0], f[1]})
		}
	}
	out, err = h.Run(ctx, "lvs", "--noheadings", "--separator", "|", "--units", "b", "--nosuffix", "-o", "vg_name,lv_name,lv_size")
	if err != nil {
		return nil, CmdError("lvs", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 || f[0] == "" {
			continue
		}
		var size uint64
		fmt.Sscanf(f[2], "%d", &size)
		if st.LVs[f[0]] == nil {
			st.LVs[f[0]] = map[string]uint64{}
		}
		st.LVs[f[0]][f[1]] = size
	}
	out, err = h.Run(ctx, "pvs", "--noheadings", "--separator", "|", "--units", "b", "--nosuffix", "-o", "pv_name,pv_used,pv_free")
	if err != nil {
		return nil, CmdError("pvs", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		var used, free uint64
		if len(f) == 3 && f[0] != "" {
			fmt.Sscanf(f[1], "%d", &used)
			fmt.Sscanf(f[2], "%d", &free)
			st.PVUsed[f[0]], st.PVFree[f[0]] = used, free
		}
	}
	return st, nil
}

func CmdError(prog string, err error) error {
	if layer.IsNotFound(err) {
		return fmt.Errorf("%s is not installed: install the lvm2 package: %w", prog, disk.ErrMissingProgram)
	}
	return fmt.Errorf("%s: %w", prog, err)
}

func (pl planner) planGroup(ctx context.Context, g GroupSpec, ms []layer.Member, opt layer.Options, lvm *State, mounts []disk.MountEntry) (GroupPlan, error) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Path < ms[j].Path })
	gp := GroupPlan{VG: g.VG, ExtentBytes: ExtentBytes, Origin: g.Origin}
	var extents uint64
	for _, m := range ms {
		gp.PVs = append(gp.PVs, m.Path)
		if m.Part.SizeBytes > MetadataBytes {
			extents += (m.Part.SizeBytes - MetadataBytes) / ExtentBytes
		}
	}
	gp.SizeBytes = extents * ExtentBytes
	g.Volumes = append([]LVSpec(nil), g.Volumes...)
	for i, lv := range g.Volumes {
		if lv.SizePercent > 0 {
			lv.SizeBytes = uint64(float64(extents)*lv.SizePercent/100) * ExtentBytes
			if lv.SizeBytes == 0 {
				return gp, disk.Usagef("lvm vg %s: %g%% of the group (%s) is less than one extent", g.VG, lv.SizePercent, units.FormatSize(gp.SizeBytes))
			}
			g.Volumes[i] = lv
		}
	}
	// The group's members as pvs sees them now.
	var others []string
	for pv, vg := range lvm.PVVG {
		if vg == g.VG && !slices.Contains(gp.PVs, pv) {
			others = append(others, pv)
		}
	}
	sort.Strings(others)
	if len(others) > 0 {
		return gp, disk.Usagef("lvm vg %s already exists on %s, not on the partitions planned", g.VG, strings.Join(others, ", "))
	}
	vgExists := false
	for _, m := range ms {
		vg, isPV := lvm.PVVG[m.Path]
		switch {
		case !isPV:
			argv := []string{"pvcreate", "--metadatatype", "2", "--dataalignment", fmt.Sprintf("%dk", PVAlignment(m)>>10), m.Path}
			gp.PVCreate = append(gp.PVCreate, argv)
		case vg == g.VG:
			vgExists = true
		case vg != "":
			return gp, disk.Refuse(m.Path, fmt.Sprintf("%s is already a physical volume of vg %s", m.Path, vg))
		}
	}
	if vgExists {
		// A member the plan adds to the group: a new physical volume,
		// or one in no group, extends it.
		var add []string
		for _, m := range ms {
			if vg, isPV := lvm.PVVG[m.Path]; !isPV || vg == "" {
				add = append(add, m.Path)
			}
		}
		if len(add) > 0 {
			gp.VGExtend = append([]string{"vgextend", g.VG}, add...)
		}
	} else {
		gp.VGCreate = append([]string{"vgcreate", "--physicalextentsize", fmt.Sprintf("%dk", ExtentBytes>>10), g.VG}, gp.PVs...)
	}
	var fixed uint64
	for _, lv := range g.Volumes {
		fixed += layer.RoundUp(lv.SizeBytes, ExtentBytes)
	}
	last := g.Volumes[len(g.Volumes)-1]
	need := fixed
	if last.SizeBytes == 0 {
		need += ExtentBytes
	}
	if need > gp.SizeBytes {
		return gp, disk.Usagef("lvm vg %s: the volumes need %s, the group has %s", g.VG, units.FormatSize(need), units.FormatSize(gp.SizeBytes))
	}
	have := lvm.LVs[g.VG]
	for name := range have {
		found := false
		for _, lv := range g.Volumes {
			found = found || lv.Name == name
		}
		if !found {
			return gp, disk.Refuse(g.VG, fmt.Sprintf("vg %s has volume %s, which the plan does not declare (release it with --wipe first)", g.VG, name))
		}
	}
	h := pl.HostOrLive()
	for _, lv := range g.Volumes {
		lp := LVPlan{Name: lv.Name, Path: pl.Roots.DevPath(g.VG, lv.Name), SizeBytes: layer.RoundUp(lv.SizeBytes, ExtentBytes)}
		vol := layer.VolumePlan{Device: lp.Path, FS: lv.Volume.FS, Label: lv.Volume.Label, MkfsOpts: lv.Volume.MkfsOpts,
			MountPoint: pl.ResolveMountPoint(lv.Volume.Mount), MountOpts: lv.Volume.MountOpts, MountOver: lv.Volume.MountOver, Persist: lv.Volume.Persist}
		if size, ok := have[lv.Name]; ok {
			shrink := false
			switch {
			case lv.SizeBytes != 0 && size > lp.SizeBytes:
				more := fmt.Sprintf("%s has %s, more than the %s asked", lp.Path, units.FormatSize(size), units.FormatSize(lp.SizeBytes))
				switch {
				case !strings.HasPrefix(lv.Volume.FS, "ext"):
					return gp, layer.WithOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s: %s cannot shrink", more, lv.Volume.FS)))
				case !opt.Shrink:
					return gp, layer.WithOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s: give --shrink to shrink it and its %s (unmounted)", more, lv.Volume.FS)))
				}
				shrink = true
				// Three steps, not lvreduce --resizefs: resize2fs wants a
				// file system checked since it was last mounted, which
				// LVM's fsadm checks only when it did the unmounting, and
				// the steps are then the same on every LVM. Each step run
				// again is harmless (resize2fs to the size it has does
				// nothing), so a run killed between them converges.
				lp.Shrink = [][]string{{"e2fsck", "-f", "-p", lp.Path},
					{"resize2fs", lp.Path, fmt.Sprintf("%dK", lp.SizeBytes>>10)},
					{"lvreduce", "--yes", "--size", fmt.Sprintf("%db", lp.SizeBytes), g.VG + "/" + lv.Name}}
				lp.FromBytes = size
			case lv.SizeBytes != 0 && size < lp.SizeBytes:
				lp.Grow = []string{"lvextend", "--resizefs", "--size", fmt.Sprintf("%db", lp.SizeBytes), g.VG + "/" + lv.Name}
				lp.FromBytes = size
			case lv.SizeBytes == 0 && gp.VGExtend != nil:
				// The rest of a group that grows: what the others leave.
				rest := gp.SizeBytes
				for _, o := range g.Volumes {
					if o.Name != lv.Name {
						rest -= max(have[o.Name], layer.RoundUp(o.SizeBytes, ExtentBytes))
					}
				}
				if rest > size {
					lp.Grow = []string{"lvextend", "--resizefs", "--extents", "+100%FREE", g.VG + "/" + lv.Name}
					lp.FromBytes, lp.SizeBytes = size, rest
				} else {
					lp.SizeBytes = size
				}
			case lv.SizeBytes == 0 && lvm.unusedMember(g.VG, ms):
				// The rest of a group one of whose (planned) members no
				// volume uses: added by a run that stopped after its
				// vgextend, before the lvextend. Free space on members
				// in use is not taken: "rest" was resolved when made.
				lp.Grow = []string{"lvextend", "--resizefs", "--extents", "+100%FREE", g.VG + "/" + lv.Name}
				lp.FromBytes, lp.SizeBytes = size, size
				for pv, vg := range lvm.PVVG {
					if vg == g.VG {
						lp.SizeBytes += lvm.PVFree[pv]
					}
				}
			default:
				lp.SizeBytes = size
			}
			node := lp.Path
			if real, err := h.EvalSymlinks(lp.Path); err == nil {
				node = real
			}
			if lv.Volume.Encrypt != nil && lp.Shrink != nil {
				return gp, layer.WithOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s is encrypted: diskprep does not shrink an encrypted volume (asked %s, it has %s)",
					lp.Path, units.FormatSize(lp.SizeBytes), units.FormatSize(size))))
			}
			if lv.Volume.Encrypt != nil && lp.Grow != nil {
				// The mapping and the file system on it grow after the
				// volume, in steps of their own: --resizefs knows no LUKS.
				lp.Grow = slices.DeleteFunc(lp.Grow, func(a string) bool { return a == "--resizefs" })
			}
			if err := pl.PlanVolumeOn(&vol, lv.Volume.Encrypt, node, false, false, size, opt, mounts, ""); err != nil {
				return gp, layer.WithOrigin(lv.Origin, err)
			}
			// resize2fs shrinks only an unmounted file system, and only
			// the one asked for: a volume without it (mkfs planned) is
			// not shrunk blind.
			grow := pl.planFSGrow
			if vol.Crypt != nil {
				grow = pl.planCryptGrow
			}
			if err := grow(ctx, &lp, &vol, size); err != nil {
				return gp, layer.WithOrigin(lv.Origin, err)
			}
			switch {
			case shrink && vol.Mkfs != nil:
				return gp, layer.WithOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s holds no %s to shrink with it", lp.Path, vol.FS)))
			case shrink && vol.FSUsed >= lp.SizeBytes:
				// resize2fs would fail on it anyway; said before any step.
				return gp, layer.WithOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("its %s uses %s (files and metadata), more than the %s asked: resize2fs cannot shrink it that far",
					vol.FS, units.FormatSize(vol.FSUsed), units.FormatSize(lp.SizeBytes))))
			case shrink && vol.Mounted():
				return gp, layer.WithOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s is mounted at %s: %s shrinks only unmounted (umount %s, then prepare --shrink again)",
					lp.Path, vol.MountPoint, vol.FS, vol.MountPoint)))
			}
		} else {
			lp.Create = []string{"lvcreate", "--yes", "--wipesignatures", "y", "--name", lv.Name}
			if lv.SizeBytes == 0 {
				lp.Create = append(lp.Create, "--extents", "100%FREE")
			} else {
				lp.Create = append(lp.Create, "--size", fmt.Sprintf("%db", lp.SizeBytes))
			}
			lp.Create = append(lp.Create, g.VG)
			if err := pl.PlanVolumeOn(&vol, lv.Volume.Encrypt, "", true, false, lp.SizeBytes, opt, mounts, ""); err != nil {
				return gp, layer.WithOrigin(lv.Origin, err)
			}
		}
		if vol.Persist {
			vol.FstabLine = disk.FstabEntryLine(vol.PartPlan())
		}
		lp.Volume = vol
		gp.Volumes = append(gp.Volumes, lp)
	}
	return gp, nil
}

// planFSGrow plans growing the file system v of an existing volume of size
// bytes that is smaller than the volume by an extent or more,
// when nothing else resizes it and it is or will be mounted (both tools
// grow online). A mounted file system's size is asked of it (xfs_growfs
// -n, dumpe2fs -h: xfs keeps its superblock in its own cache, so the
// disk's copy may lag); an unmounted one's is its superblock's.
func (pl planner) planFSGrow(ctx context.Context, lp *LVPlan, v *layer.VolumePlan, size uint64) error {
	if lp.Grow != nil || lp.Shrink != nil || v.Crypt != nil {
		return nil
	}
	argv, fsBytes, err := pl.fsGrowTo(ctx, v, lp.Path, size)
	if argv != nil {
		lp.FSGrow, lp.FSBytes, lp.SizeBytes = argv, fsBytes, size
	}
	return err
}

// fsGrowTo is the command that grows the existing file system v on dev
// to fill room bytes, and the bytes it has now; nil when it is within an
// extent of that, unmounted for good, or not one diskprep grows.
func (pl planner) fsGrowTo(ctx context.Context, v *layer.VolumePlan, dev string, room uint64) ([]string, uint64, error) {
	if v.Mkfs != nil || v.MountPoint == "" || v.FSBytes == 0 {
		return nil, 0, nil
	}
	fsBytes := v.FSBytes
	if v.Mounted() {
		var err error
		if fsBytes, err = pl.mountedFSBytes(ctx, v.FS, v.MountPoint, dev); err != nil {
			return nil, 0, err
		}
	}
	if fsBytes == 0 || fsBytes+ExtentBytes > room {
		return nil, 0, nil
	}
	switch {
	case v.FS == "xfs":
		return []string{"xfs_growfs", v.MountPoint}, fsBytes, nil
	case strings.HasPrefix(v.FS, "ext"):
		return []string{"resize2fs", dev}, fsBytes, nil
	}
	return nil, 0, nil
}

// The block count and size in xfs_growfs -n's data line and dumpe2fs -h.
var (
	xfsBlocks    = regexp.MustCompile(`(?m)^data\s*=\s*bsize=\d+\s+blocks=(\d+)`)
	xfsBlockSize = regexp.MustCompile(`(?m)^data\s*=\s*bsize=(\d+)`)
	extBlocks    = regexp.MustCompile(`(?m)^Block count:\s*(\d+)`)
	extBlockSize = regexp.MustCompile(`(?m)^Block size:\s*(\d+)`)
)

// mountedFSBytes asks a mounted xfs or ext file system its size: blocks
// times block size, as xfs_growfs -n and dumpe2fs -h print them (0 for
// another file system).
func (pl planner) mountedFSBytes(ctx context.Context, fs, point, dev string) (uint64, error) {
	var argv []string
	var blocks, bsize *regexp.Regexp
	switch {
	case fs == "xfs":
		argv, blocks, bsize = []string{"xfs_growfs", "-n", point}, xfsBlocks, xfsBlockSize
	case strings.HasPrefix(fs, "ext"):
		argv, blocks, bsize = []string{"dumpe2fs", "-h", dev}, extBlocks, extBlockSize
	default:
		return 0, nil
	}
	out, err := pl.HostOrLive().Run(ctx, argv[0], argv[1:]...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	b, s := blocks.FindSubmatch(out), bsize.FindSubmatch(out)
	if b == nil || s == nil {
		return 0, fmt.Errorf("%s: no block count and size in %q", strings.Join(argv, " "), out)
	}
	n, _ := strconv.ParseUint(string(b[1]), 10, 64)
	m, _ := strconv.ParseUint(string(s[1]), 10, 64)
	return n * m, nil
}

// PVAlignment is where a PV's first extent starts: the partition
// alignment rule (1 layer.MiB, or the physical sector and optimal I/O size).
func PVAlignment(m layer.Member) uint64 {
	if m.Disk == nil {
		return layer.MiB
	}
	a, _ := disk.Alignment(m.Disk.LogicalSectorBytes, m.Disk.PhysicalSectorBytes, m.Disk.OptimalIOBytes)
	return a
}

// addDormantVG plans the removal of the physical volume pv and, when it
// is in a group, of the whole group, or refuses when the group has a
// physical volume that is not wiped.
func (a *applier) addDormantVG(plan *disk.ReleasePlan, lvm *State, pv string, pvNode map[string]string, wiped, done map[string]bool) error {
	s := plan.Stacks
	vg := lvm.PVVG[pv]
	if vg == "" {
		s.PVRemove = append(s.PVRemove, pv)
		done[filepath.Base(pv)] = true
		return nil
	}
	var pvs, others []string
	missing := false
	for _, row := range lvm.PVList {
		if row[1] != vg {
			continue
		}
		if row[0] == "[unknown]" {
			missing = true
			continue
		}
		pvs = append(pvs, row[0])
		n := filepath.Base(row[0])
		for k, node := range pvNode {
			if node == row[0] {
				n = k
			}
		}
		if !wiped[n] {
			others = append(others, row[0])
		}
	}
	if missing {
		return disk.RefuseWipe(plan.Target, fmt.Sprintf("%s is a physical volume of vg %s, which is missing another (a disk unplugged?): wiping it would leave the rest of the group beyond repair; plug that disk back in, or drop it from the group first (vgreduce --removemissing %s)", pv, vg, vg))
	}
	if len(others) > 0 {
		sort.Strings(others)
		how := "remove it by hand (vgremove " + vg + ", then pvremove each)"
		if lvs := layer.SortedKeys(layer.BoolSet(lvm.LVs[vg])); len(lvs) > 0 {
			how = fmt.Sprintf("activate it (vgchange --activate y %s) and release one of its volumes with --wipe (diskprep release /dev/%s/%s --wipe)", vg, vg, lvs[0])
		}
		return disk.RefuseWipe(plan.Target, fmt.Sprintf("%s is a physical volume of the inactive vg %s, which is also on %s, not released: wiping only this would break the group there; to remove all of it, %s",
			pv, vg, strings.Join(others, ", "), how))
	}
	for _, lv := range layer.SortedKeys(layer.BoolSet(lvm.LVs[vg])) {
		s.LVRemove = append(s.LVRemove, vg+"/"+lv)
	}
	s.VGRemove = append(s.VGRemove, vg)
	sort.Strings(pvs)
	s.PVRemove = append(s.PVRemove, pvs...)
	for n, node := range pvNode {
		if slices.Contains(pvs, node) {
			done[n] = true
		}
	}
	return nil
}

// planCryptGrow plans what fills an encrypted volume of size bytes (the
// size asked when lp grows it): its open LUKS2 mapping is resized, then
// the file system on it grown (online, as planFSGrow does). A closed
// mapping opens at the full size; what is on it is looked at then.
func (pl planner) planCryptGrow(ctx context.Context, lp *LVPlan, v *layer.VolumePlan, size uint64) error {
	c := v.Crypt
	if lp.Grow != nil {
		size = lp.SizeBytes
	}
	if c == nil || c.Open != nil || v.Mkfs != nil {
		return nil
	}
	h := pl.HostOrLive()
	offset := uint64(crypt.HeaderBytes)
	if l, err := crypt.ReadHeader(h, lp.Path); err == nil && l.DataOffsetBytes > 0 {
		offset = l.DataOffsetBytes
	}
	if size <= offset {
		return nil
	}
	want := size - offset
	f, err := h.OpenDevice(c.Mapper, false)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Mapper, err)
	}
	have, err := f.Size()
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", c.Mapper, err)
	}
	if have < want {
		lp.CryptResize = crypt.ResizeArgv(c)
	}
	argv, fsBytes, err := pl.fsGrowTo(ctx, v, v.Device, want)
	if argv != nil {
		lp.FSGrow, lp.FSBytes = argv, fsBytes
		if lp.Grow == nil {
			lp.SizeBytes = size
		}
	}
	return err
}

// planMemberCrypts gives each member partition of an encrypted group its
// LUKS2 layer and returns the members as LVM sees them: the mappings. A
// plain group's member holding LUKS is refused: pvcreate over it would
// destroy someone's encrypted volume.
func (pl planner) planMemberCrypts(g GroupSpec, ms []layer.Member, opt layer.Options) ([]layer.Member, []*crypt.Plan, error) {
	if g.Encrypt == nil {
		for _, m := range ms {
			if m.Ex == nil {
				continue
			}
			sigs, err := pl.ProbeVolume(m.Path)
			if err != nil {
				return nil, nil, err
			}
			if slices.ContainsFunc(sigs, func(s probe.Signature) bool { return s.Type == "crypto_LUKS" }) {
				return nil, nil, disk.Refuse(m.Path, fmt.Sprintf("%s holds a LUKS volume, and vg %s's members are not encrypted (encrypt: under the lvm entry), or release it first", m.Path, g.VG))
			}
		}
		return ms, nil, nil
	}
	cp := crypt.Planner{Planner: pl.Planner.Planner}
	makeKey, err := cp.KeyFileMissing(g.Encrypt)
	if err != nil {
		return nil, nil, err
	}
	out := make([]layer.Member, len(ms))
	var crypts []*crypt.Plan
	for i, m := range ms {
		b := crypt.Target{Path: m.Path, Node: m.Path, SizeBytes: m.Part.SizeBytes}
		if m.Disk != nil {
			b.LogicalSector = m.Disk.LogicalSectorBytes
		}
		if m.Ex != nil {
			sigs, err := pl.ProbeVolume(m.Path)
			if err != nil {
				return nil, nil, err
			}
			if i := slices.IndexFunc(sigs, func(s probe.Signature) bool { return s.Usage != "partition_table" }); i >= 0 {
				b.Found = &sigs[i]
			}
		}
		// The group is nothing at boot without its members open: each
		// has its crypttab line. The first makes the key they share.
		c, err := cp.Layer(g.Encrypt, filepath.Base(m.Path)+"_crypt", b, makeKey, opt.Wipe, true)
		if err != nil {
			return nil, nil, err
		}
		c.MakeKey = c.MakeKey && i == 0
		c.Wipe, c.NoDiscard = opt.Wipe, opt.NoDiscard
		crypts = append(crypts, c)
		m.Path = c.Mapper
		if m.Part.SizeBytes > crypt.HeaderBytes {
			m.Part.SizeBytes -= crypt.HeaderBytes
		}
		out[i] = m
	}
	return out, crypts, nil
}
