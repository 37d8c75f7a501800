package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/internal/units"
)

// StackResultSchema names the JSON shape of a StackResult.
const StackResultSchema = "diskprep/stack-result/v1"

// StackResult is what ApplyStacks did.
type StackResult struct {
	Schema string        `json:"schema"`
	Arrays []ArrayResult `json:"arrays,omitempty"`
	Groups []GroupResult `json:"groups,omitempty"`
	Caches []CacheResult `json:"caches,omitempty"`
	// Encrypted are the file systems on LUKS2 right on a partition.
	Encrypted []EncryptedResult `json:"encrypted,omitempty"`
	Changed   bool              `json:"changed"`
	// Incomplete: ApplyStacks stopped at a failure; what it did until
	// then is here.
	Incomplete bool     `json:"incomplete,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// ArrayResult is one md array after ApplyStacks.
type ArrayResult struct {
	Name        string   `json:"name"`
	Device      string   `json:"device"`
	Node        string   `json:"node,omitempty"` // md127
	Level       int      `json:"level"`
	Members     []string `json:"members"`
	Metadata    string   `json:"metadata"`
	UUID        string   `json:"uuid"`
	ChunkBytes  uint64   `json:"chunk_bytes,omitempty"`
	DataMembers int      `json:"data_members,omitempty"`
	Created     bool     `json:"created"`
	CreateArgv  []string `json:"create_argv,omitempty"`
	// MdadmVersion is the first line of mdadm --version.
	MdadmVersion string       `json:"mdadm_version,omitempty"`
	ConfFile     string       `json:"conf_file"`
	ConfLine     string       `json:"conf_line"`
	ConfAdded    bool         `json:"conf_added,omitempty"`
	Volume       VolumeResult `json:"volume"`
}

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
	FSGrown    bool         `json:"fs_grown,omitempty"`
	FSGrowArgv []string     `json:"fs_grow_argv,omitempty"`
	FromBytes  uint64       `json:"from_bytes,omitempty"`
	Volume     VolumeResult `json:"volume"`
}

// VolumeResult is the file system on an array or logical volume.
type VolumeResult struct {
	Device      string   `json:"device"`
	FS          string   `json:"fs"`
	Label       string   `json:"label,omitempty"`
	UUID        string   `json:"uuid"`
	Formatted   bool     `json:"formatted"`
	MkfsArgv    []string `json:"mkfs_argv,omitempty"`
	MkfsVersion string   `json:"mkfs_version,omitempty"`
	// Geometry is the stripe geometry mkfs was given: xfs's -d
	// "su=512k,sw=2", ext4's -E "stride=128,stripe_width=256" (in 4 KiB
	// blocks, with -b 4096).
	Geometry   string `json:"geometry,omitempty"`
	MountPoint string `json:"mount_point,omitempty"`
	MountOpts  string `json:"mount_opts,omitempty"`
	Mounted    bool   `json:"mounted"`
	FstabLine  string `json:"fstab_line,omitempty"`
	FstabAdded bool   `json:"fstab_added,omitempty"`
	// Crypt is the LUKS2 layer under the file system; nil for none.
	Crypt *crypt.Result `json:"crypt,omitempty"`
}

// ApplyStacks carries out sp after the member disks' plans were applied:
// the arrays (mdadm --create, the mdadm.conf line) and the volume groups
// (pvcreate, vgcreate, lvcreate), then each one's file system, mount and
// fstab line as for a partition. Every argv was decided by PlanStacks.
// A step that was done by an earlier, interrupted run is found done: the
// same plan made again skips it.
func ApplyStacks(ctx context.Context, sp *StackPlan, deps disk.Deps) (res *StackResult, err error) {
	if sp == nil || sp.Schema != StackPlanSchema {
		return nil, fmt.Errorf("apply stacks: not a %s plan", StackPlanSchema)
	}
	a := newApplier(deps)
	ended := disk.RecordPlan(a.host, sp) // runs last, after the undo of a failure
	defer func() { ended(err) }()
	res = &StackResult{Schema: StackResultSchema, Notes: append([]string(nil), sp.Notes...)}
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			if res != nil {
				res.Incomplete = true
			}
		}
	}()

	// Every program needed, before the first one changes anything.
	versions := map[string]string{}
	need := func(prog, pkg string, args ...string) error {
		if _, ok := versions[prog]; ok {
			return nil
		}
		out, err := a.host.Run(ctx, prog, args...)
		if err != nil {
			if isNotFound(err) {
				return fmt.Errorf("%s is not installed: install the %s package: %w", prog, pkg, disk.ErrMissingProgram)
			}
			return fmt.Errorf("%s %s: %w", prog, strings.Join(args, " "), err)
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		versions[prog] = strings.Join(strings.Fields(line), " ")
		return nil
	}
	for _, v := range sp.volumes() {
		if v.Mkfs != nil {
			if err := need(v.Mkfs[0], disk.FSPackage(v.FS), "-V"); err != nil {
				return nil, err
			}
		}
	}
	for _, gp := range sp.Groups {
		if len(gp.Crypts) > 0 {
			if err := need("cryptsetup", "cryptsetup", "--version"); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range sp.crypts() {
		if c.Enroll != nil {
			if err := need("systemd-cryptenroll", "systemd", "--version"); err != nil {
				return nil, err
			}
		}
	}
	for _, v := range sp.volumes() {
		if v.Crypt == nil {
			continue
		}
		if err := need("cryptsetup", "cryptsetup", "--version"); err != nil {
			return nil, err
		}
		// A closed volume's file system is decided once it is open:
		// mkfs may run then, and its version goes in the record too.
		if mkfs := disk.MkfsFor(v.FS, "", "", nil, v.Device, false, true, ""); v.Crypt.FSAfterOpen && len(mkfs) > 0 {
			if err := need(mkfs[0], disk.FSPackage(v.FS), "-V"); err != nil {
				return nil, err
			}
		}
	}
	if len(sp.Arrays) > 0 {
		if err := need("mdadm", "mdadm", "--version"); err != nil {
			return nil, err
		}
	}
	if len(sp.Groups) > 0 {
		if err := need("lvm", "lvm2", "version"); err != nil {
			return nil, err
		}
	}
	if err := a.needCachePrograms(ctx, sp, need); err != nil {
		return nil, err
	}

	fstabChanged := false
	volume := func(v VolumePlan) (VolumeResult, error) {
		var cr *crypt.Result
		if v.Crypt != nil {
			var err error
			v, cr, err = a.applyCrypt(ctx, v, versions["cryptsetup"], &undo)
			res.Changed = res.Changed || cr.Changed()
			if err != nil {
				return VolumeResult{Device: v.Device, FS: v.FS, Crypt: cr}, err
			}
		}
		pp := v.partPlan()
		pp.Name, pp.Mkfs, pp.MountArgv, pp.FstabLine = filepath.Base(v.Device), v.Mkfs, v.MountArgv, v.FstabLine
		holder := &disk.Plan{Device: v.Device, Disk: disk.DiskSummary{Name: filepath.Base(v.Device)}}
		pr, err := a.PreparePartition(ctx, holder, pp, versions[firstOr(v.Mkfs)], &undo)
		vr := VolumeResult{Device: v.Device, FS: v.FS, Label: v.Label, UUID: pr.UUID, Formatted: pr.Formatted, MkfsArgv: pr.MkfsArgv,
			MkfsVersion: pr.MkfsVersion, Geometry: v.Geometry, MountPoint: v.MountPoint, MountOpts: v.MountOpts, Mounted: pr.Mounted,
			FstabLine: v.FstabLine, FstabAdded: pr.FstabAdded, Crypt: cr}
		fstabChanged = fstabChanged || pr.FstabAdded
		res.Changed = res.Changed || pr.Formatted || pr.Mounted || pr.FstabAdded
		return vr, err
	}

	for _, ap := range sp.Arrays {
		ar := ArrayResult{Name: ap.Name, Device: ap.Device, Level: ap.Level, Members: ap.Members, Metadata: ap.Metadata, UUID: ap.UUID,
			ChunkBytes: ap.ChunkBytes, DataMembers: ap.DataMembers, MdadmVersion: versions["mdadm"], ConfFile: sp.MdadmConf, ConfLine: ap.ConfLine}
		if ap.Create != nil {
			if err := a.CheckMembersFree(ap.Members, "raid:"+ap.Name); err != nil {
				return res, err
			}
			if err := a.Do(ctx, "create md array", ap.Create); err != nil {
				return res, fmt.Errorf("create md array %s: %w", ap.Name, err)
			}
			ar.Created, ar.CreateArgv = true, ap.Create
			res.Changed = true
		}
		node, err := a.waitStackNode(ctx, ap.Device)
		if err != nil {
			res.Arrays = append(res.Arrays, ar)
			return res, err
		}
		ar.Node = node
		if ap.Wipe != nil {
			if err := a.Do(ctx, "wipe the new array", ap.Wipe); err != nil {
				res.Arrays = append(res.Arrays, ar)
				return res, fmt.Errorf("wipe the new md array %s: %w", ap.Name, err)
			}
		}
		added, err := a.ensureMdadmConf(sp.MdadmConf, ap)
		if err != nil {
			res.Arrays = append(res.Arrays, ar)
			return res, err
		}
		ar.ConfAdded = added
		res.Changed = res.Changed || added
		ar.Volume, err = volume(ap.Volume)
		res.Arrays = append(res.Arrays, ar)
		if err != nil {
			return res, err
		}
	}
	if len(sp.Arrays) > 0 {
		res.Notes = append(res.Notes, "md arrays are created without --assume-clean: the first resync runs in the background (cat /proc/mdstat)")
	}

	for _, gp := range sp.Groups {
		gr := GroupResult{VG: gp.VG, PVs: gp.PVs, LVMVersion: versions["lvm"]}
		for _, c := range gp.Crypts {
			cr, err := a.crypts().Up(ctx, c, versions["cryptsetup"], &undo)
			gr.Crypts = append(gr.Crypts, cr)
			res.Changed = res.Changed || cr.Changed()
			if err != nil {
				res.Groups = append(res.Groups, gr)
				return res, err
			}
		}
		if gp.Replan {
			// The members are open now: what LVM finds on them decides.
			pl := Planner{disk.Planner{Host: a.host, Roots: a.roots}}
			lvm, err := pl.readLVM(ctx)
			if err == nil && slices.Contains(slices.Collect(maps.Values(lvm.pvVG)), gr.VG) {
				// The group is there (a release without --wipe left it
				// inactive): active again, as it was.
				if err = a.Do(ctx, "activate volume group", []string{"vgchange", "--activate", "y", gr.VG}); err == nil {
					lvm, err = pl.readLVM(ctx)
				}
			}
			if err == nil {
				var crypts = gp.Crypts
				gp, err = pl.planGroup(ctx, gp.spec, gp.members, gp.req, lvm, gp.mounts)
				gp.Crypts = crypts
			}
			if err != nil {
				res.Groups = append(res.Groups, gr)
				return res, fmt.Errorf("vg %s, its members opened: %w", gr.VG, err)
			}
		}
		for _, argv := range gp.PVCreate {
			dev := argv[len(argv)-1]
			if err := a.CheckMembersFree([]string{dev}, "lvm:"+gp.VG); err != nil {
				return res, err
			}
			if err := a.Do(ctx, "create physical volume", argv); err != nil {
				return res, fmt.Errorf("pvcreate %s: %w", dev, err)
			}
			gr.PVCreateArgv = append(gr.PVCreateArgv, argv)
			res.Changed = true
		}
		if gp.VGCreate != nil {
			if err := a.Do(ctx, "create volume group", gp.VGCreate); err != nil {
				return res, fmt.Errorf("vgcreate %s: %w", gp.VG, err)
			}
			gr.Created, gr.CreateArgv = true, gp.VGCreate
			res.Changed = true
		}
		if gp.VGExtend != nil {
			if err := a.Do(ctx, "extend volume group", gp.VGExtend); err != nil {
				return res, fmt.Errorf("vgextend %s: %w", gp.VG, err)
			}
			gr.ExtendArgv = gp.VGExtend
			res.Changed = true
		}
		for _, lp := range gp.Volumes {
			lr := LVResult{Name: lp.Name, Path: lp.Path, SizeBytes: lp.SizeBytes}
			if lp.Create != nil {
				if err := a.Do(ctx, "create logical volume", lp.Create); err != nil {
					gr.Volumes = append(gr.Volumes, lr)
					res.Groups = append(res.Groups, gr)
					return res, fmt.Errorf("lvcreate %s/%s: %w", gp.VG, lp.Name, err)
				}
				lr.Created, lr.CreateArgv = true, lp.Create
				res.Changed = true
			}
			if lp.Grow != nil {
				// lvextend --resizefs grows the file system with it,
				// mounted or not (fsadm mounts an unmounted xfs for the
				// time it takes).
				if err := a.Do(ctx, "grow logical volume and its file system", lp.Grow); err != nil {
					gr.Volumes = append(gr.Volumes, lr)
					res.Groups = append(res.Groups, gr)
					return res, fmt.Errorf("lvextend %s/%s: %w", gp.VG, lp.Name, err)
				}
				lr.Grown, lr.GrowArgv, lr.FromBytes = true, lp.Grow, lp.FromBytes
				res.Changed = true
			}
			// The file system is checked and shrunk before the volume: one
			// whose data does not fit fails at resize2fs, nothing cut.
			for i, argv := range lp.Shrink {
				what := [...]string{"check the file system before shrinking it", "shrink the file system", "shrink the logical volume"}[min(i, 2)]
				if err := a.Do(ctx, what, argv); err != nil {
					gr.Volumes = append(gr.Volumes, lr)
					res.Groups = append(res.Groups, gr)
					return res, fmt.Errorf("%s %s/%s: %w", argv[0], gp.VG, lp.Name, err)
				}
				lr.ShrinkArgv = append(lr.ShrinkArgv, argv)
			}
			if lp.Shrink != nil {
				lr.Shrunk, lr.FromBytes = true, lp.FromBytes
				res.Changed = true
			}
			if _, err := a.waitStackNode(ctx, lp.Path); err != nil {
				gr.Volumes = append(gr.Volumes, lr)
				res.Groups = append(res.Groups, gr)
				return res, err
			}
			var err error
			lr.Volume, err = volume(lp.Volume)
			if err == nil && lp.CryptResize != nil {
				if err = a.Do(ctx, "grow the LUKS2 mapping to fill its volume", lp.CryptResize); err != nil {
					err = fmt.Errorf("cryptsetup resize %s: %w", lp.Path, err)
				} else {
					lr.CryptResized, lr.CryptResizeArgv = true, lp.CryptResize
					res.Changed = true
				}
			}
			if err == nil && lp.FSGrow != nil {
				// After the mount: both tools grow a mounted file system.
				if err = a.Do(ctx, "grow the file system to fill its volume", lp.FSGrow); err != nil {
					err = fmt.Errorf("%s %s: %w", lp.FSGrow[0], lp.Path, err)
				} else {
					lr.FSGrown, lr.FSGrowArgv = true, lp.FSGrow
					res.Changed = true
				}
			}
			gr.Volumes = append(gr.Volumes, lr)
			if err != nil {
				res.Groups = append(res.Groups, gr)
				return res, err
			}
		}
		res.Groups = append(res.Groups, gr)
	}
	for _, cp := range sp.Caches {
		cr, err := a.applyCache(ctx, cp, versions, volume)
		res.Caches = append(res.Caches, cr)
		res.Changed = res.Changed || len(cr.Steps) > 0
		if err != nil {
			return res, err
		}
	}
	for _, ep := range sp.Encrypted {
		er := EncryptedResult{Key: ep.Key, Partition: ep.Partition}
		if ep.Volume.Crypt.Format != nil {
			if err := a.CheckMembersFree([]string{ep.Partition}, "crypt:"+ep.Key); err != nil {
				return res, err
			}
		}
		var err error
		er.Volume, err = volume(ep.Volume)
		res.Encrypted = append(res.Encrypted, er)
		if err != nil {
			return res, err
		}
	}
	if fstabChanged && a.SystemdIsInit() {
		if err := a.Do(ctx, "reload systemd units", []string{"systemctl", "daemon-reload"}); err != nil {
			res.Notes = append(res.Notes, "systemctl daemon-reload failed: "+err.Error())
		}
	}
	return res, nil
}

// waitStackNode waits for the node of a new array or logical volume (udev
// makes /dev/md/NAME and /dev/VG/LV) and returns the kernel's name of it.
func (a *applier) waitStackNode(ctx context.Context, path string) (string, error) {
	if a.UdevRunning() {
		// Cut short by an interruption, it is no news: the last line says so.
		if out, err := a.host.Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil && ctx.Err() == nil {
			a.log.Warn("udevadm settle failed", "err", err, "output", string(out))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		real, err := a.host.EvalSymlinks(path)
		if err == nil {
			if _, _, err := a.host.DeviceNumber(real); err == nil {
				return filepath.Base(real), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s did not appear: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// mdadmConfMarker starts diskprep's ownership comment above its ARRAY
// lines, as in fstab.
const mdadmConfMarker = "# diskprep: md "

// ensureMdadmConf adds the array's line to mdadm.conf (atomically, the
// file created when missing) unless it is there.
func (a *applier) ensureMdadmConf(path string, ap ArrayPlan) (bool, error) {
	old, err := a.host.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(old), "\n") {
		if strings.TrimSpace(line) == ap.ConfLine {
			return false, nil
		}
	}
	b := append([]byte(nil), old...)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = fmt.Appendf(b, "%s%s (\"diskprep release\" removes this entry)\n%s\n", mdadmConfMarker, ap.Name, ap.ConfLine)
	a.log.Info("add mdadm.conf line: started", "file", path, "line", ap.ConfLine)
	if err := a.host.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := a.host.WriteFile(path, b, 0o644); err != nil {
		a.log.Info("add mdadm.conf line: failed", "file", path, "err", err)
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	a.log.Info("add mdadm.conf line: finished", "file", path)
	return true, nil
}

// volumes lists every file system the plan touches.
func (sp *StackPlan) volumes() []VolumePlan {
	var out []VolumePlan
	for _, ap := range sp.Arrays {
		out = append(out, ap.Volume)
	}
	for _, gp := range sp.Groups {
		for _, lp := range gp.Volumes {
			out = append(out, lp.Volume)
		}
	}
	for _, cp := range sp.Caches {
		out = append(out, cp.Volume)
	}
	for _, ep := range sp.Encrypted {
		out = append(out, ep.Volume)
	}
	return out
}

// Steps lists, in order, what ApplyStacks will do, one line each.
func (sp *StackPlan) Steps() []string { return disk.Steps(sp.Actions()) }

// Actions lists, in order, what ApplyStacks will do: the steps the dry
// run prints, each with the effect that carries it out.
func (sp *StackPlan) Actions() []disk.Action {
	var s []disk.Action
	vol := func(v VolumePlan) {
		if v.Crypt != nil {
			s = append(s, crypt.Actions(v.Crypt)...)
		}
		if v.MkfsIfBlank != nil {
			s = append(s, disk.Action{Text: disk.QuoteArgv(v.MkfsIfBlank) + " (when the opened volume holds no file system)", Op: disk.OpRun, Argv: v.MkfsIfBlank, Maybe: true})
		}
		s = append(s, disk.FileSystemActions(v.Mkfs, v.MountPoint, v.MountArgv, v.Persist, v.FstabLine)...)
	}
	run := func(argv []string) disk.Action {
		return disk.Action{Text: disk.QuoteArgv(argv), Op: disk.OpRun, Argv: argv}
	}
	for _, ap := range sp.Arrays {
		if ap.Create != nil {
			s = append(s, run(ap.Create))
		} else {
			s = append(s, disk.Action{Text: fmt.Sprintf("md array %s exists as asked (%s, raid%d over %s)", ap.Name, ap.Existing, ap.Level, strings.Join(ap.Members, ", "))})
		}
		if ap.Wipe != nil {
			a := run(ap.Wipe)
			a.Text += " (what the members held before shows through a new array)"
			s = append(s, a)
		}
		// A new array's UUID is new: its line cannot be there yet.
		s = append(s, disk.Action{Text: fmt.Sprintf("ensure in %s: %s", sp.MdadmConf, ap.ConfLine), Op: disk.OpWriteFile, Path: sp.MdadmConf, Maybe: ap.Create == nil})
		vol(ap.Volume)
	}
	for _, gp := range sp.Groups {
		for _, c := range gp.Crypts {
			s = append(s, crypt.Actions(c)...)
		}
		// A closed member is opened, and the group planned again from
		// what LVM then finds: each step is as far as can be known.
		from := len(s)
		if gp.Replan {
			s = append(s, disk.Action{Text: fmt.Sprintf("once its members are open, vg %s is planned again from what LVM finds on them; until then, as if they held nothing:", gp.VG)})
			a := run([]string{"vgchange", "--activate", "y", gp.VG})
			a.Text += " (when LVM finds the group on them)"
			s = append(s, a)
		}
		for _, argv := range gp.PVCreate {
			s = append(s, run(argv))
		}
		if gp.VGCreate != nil {
			s = append(s, run(gp.VGCreate))
		}
		if gp.VGExtend != nil {
			s = append(s, run(gp.VGExtend))
		}
		for _, lp := range gp.Volumes {
			if lp.Create != nil {
				s = append(s, run(lp.Create))
			}
			if gp.Replan {
				vol(lp.Volume)
				continue
			}
			if lp.Grow != nil {
				a := run(lp.Grow)
				with := "with its " + lp.Volume.FS
				if lp.Volume.Crypt != nil {
					with = "then its LUKS2 mapping and " + lp.Volume.FS
				}
				a.Text += fmt.Sprintf(" (from %s to %s, %s)", units.FormatSize(lp.FromBytes), units.FormatSize(lp.SizeBytes), with)
				s = append(s, a)
			}
			for i, argv := range lp.Shrink {
				a := run(argv)
				if i == len(lp.Shrink)-1 {
					a.Text += fmt.Sprintf(" (from %s to %s, with its %s, unmounted)", units.FormatSize(lp.FromBytes), units.FormatSize(lp.SizeBytes), lp.Volume.FS)
				}
				s = append(s, a)
			}
			vol(lp.Volume)
			if lp.CryptResize != nil {
				s = append(s, disk.Action{Text: crypt.ArgvText(lp.CryptResize) + " (the LUKS2 mapping grown to fill its volume)", Op: disk.OpRun, Argv: lp.CryptResize})
			}
			if lp.FSGrow != nil {
				a := run(lp.FSGrow)
				a.Text += fmt.Sprintf(" (its %s, %s, grown to fill the %s volume)", lp.Volume.FS, units.FormatSize(lp.FSBytes), units.FormatSize(lp.SizeBytes))
				s = append(s, a)
			}
		}
		if gp.Replan {
			for i := from; i < len(s); i++ {
				s[i].Maybe = true
			}
		}
	}
	for _, cp := range sp.Caches {
		if len(cp.Steps) == 0 {
			s = append(s, disk.Action{Text: fmt.Sprintf("%s cache %s exists as asked (%s)", cp.Kind, cp.Name, cp.Existing)})
		}
		for _, st := range cp.Steps {
			if st.Argv != nil {
				s = append(s, run(st.Argv))
			} else {
				s = append(s, disk.Action{Text: st.String(), Op: disk.OpWriteSys, Path: st.Path, Value: st.Value})
			}
		}
		vol(cp.Volume)
	}
	for _, ep := range sp.Encrypted {
		vol(ep.Volume)
	}
	for _, v := range sp.volumes() {
		if v.Persist {
			s = append(s, disk.DaemonReload("only when systemd is PID 1 and fstab changed"))
			break
		}
	}
	return s
}

// WriteText renders the stack plan for people.
func (sp *StackPlan) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Plan for the storage stacks:\n")
	for _, ap := range sp.Arrays {
		fmt.Fprintf(&b, "  md array %s: raid%d over %s, %s, metadata %s", ap.Name, ap.Level, strings.Join(ap.Members, ", "), units.FormatSize(ap.SizeBytes), ap.Metadata)
		if ap.ChunkBytes > 0 {
			fmt.Fprintf(&b, ", chunk %s, %d data members", units.FormatSize(ap.ChunkBytes), ap.DataMembers)
		}
		fmt.Fprintf(&b, "; %s on %s%s\n", ap.Volume.FS, onDevice(ap.Volume, ap.Device), inMount(ap.Volume))
	}
	for _, gp := range sp.Groups {
		fmt.Fprintf(&b, "  lvm vg %s over %s, %s in %s extents\n", gp.VG, strings.Join(gp.PVs, ", "), units.FormatSize(gp.SizeBytes), units.FormatSize(gp.ExtentBytes))
		for _, lp := range gp.Volumes {
			size := "the rest"
			if lp.SizeBytes > 0 {
				size = units.FormatSize(lp.SizeBytes)
			}
			fmt.Fprintf(&b, "    lv %s: %s, %s%s%s\n", lp.Name, size, lp.Volume.FS, cryptSuffix(lp.Volume), inMount(lp.Volume))
		}
	}
	for _, cp := range sp.Caches {
		fmt.Fprintf(&b, "  %s\n", cp.summary())
		if cp.Risk != "" {
			fmt.Fprintf(&b, "  %s\n", cp.Risk)
		}
	}
	for _, ep := range sp.Encrypted {
		fmt.Fprintf(&b, "  %s on %s%s\n", ep.Volume.FS, onDevice(ep.Volume, ep.Partition), inMount(ep.Volume))
	}
	if sp.Unchanged {
		b.WriteString("  already prepared as asked: nothing to change\n")
	}
	for i, s := range sp.Steps() {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, s)
	}
	for _, n := range sp.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// onDevice is where the volume's file system is: the device, or LUKS2 on it.
func onDevice(v VolumePlan, dev string) string {
	if v.Crypt == nil {
		return dev
	}
	return v.Crypt.Mapper + ", LUKS2 on " + dev + v.Crypt.SectorText()
}

// cryptSuffix says a logical volume's file system is on LUKS2.
func cryptSuffix(v VolumePlan) string {
	if v.Crypt == nil {
		return ""
	}
	return " on " + v.Crypt.Mapper + " (LUKS2" + v.Crypt.SectorText() + ")"
}

func inMount(v VolumePlan) string {
	if v.MountPoint == "" {
		return ""
	}
	return " mounted at " + v.MountPoint
}

// WriteText renders the stack result for people.
func (r *StackResult) WriteText(w io.Writer) error {
	var b strings.Builder
	vol := func(v VolumeResult) {
		v.Crypt.Write(&b, "    ")
		if v.Device == "" && v.FS == "" {
			return // the run stopped before its file system
		}
		fmt.Fprintf(&b, "    %s UUID=%s", v.FS, v.UUID)
		if v.Geometry != "" {
			fmt.Fprintf(&b, " (stripe geometry %s)", v.Geometry)
		}
		b.WriteString("\n")
		if v.Formatted {
			fmt.Fprintf(&b, "    made with: %s (%s)\n", disk.QuoteArgv(v.MkfsArgv), v.MkfsVersion)
		}
		switch {
		case v.MountPoint == "":
		case v.Mounted || !r.Incomplete: // mounted now, or found mounted
			fmt.Fprintf(&b, "    mounted at %s\n", v.MountPoint)
		default: // the run may have stopped before its mount
			fmt.Fprintf(&b, "    mount point %s (not mounted by this run)\n", v.MountPoint)
		}
		if v.FstabLine != "" {
			state := "already present"
			if v.FstabAdded {
				state = "added"
			}
			fmt.Fprintf(&b, "    fstab (%s): %s\n", state, v.FstabLine)
		}
	}
	switch {
	case r.Incomplete:
		b.WriteString("The storage stacks are not all prepared; done until the failure:\n")
	case !r.Changed:
		b.WriteString("The storage stacks are already prepared as asked: nothing changed\n")
	}
	for _, ar := range r.Arrays {
		how := "exists"
		if ar.Created {
			how = "created with " + disk.QuoteArgv(ar.CreateArgv) + " (" + ar.MdadmVersion + ")"
		}
		fmt.Fprintf(&b, "  md array %s (%s, raid%d over %s): %s\n", ar.Name, ar.Node, ar.Level, strings.Join(ar.Members, ", "), how)
		state := "already present"
		if ar.ConfAdded {
			state = "added"
		}
		fmt.Fprintf(&b, "    %s (%s): %s\n", ar.ConfFile, state, ar.ConfLine)
		vol(ar.Volume)
	}
	for _, gr := range r.Groups {
		how := "exists"
		if gr.Created {
			how = "created with " + disk.QuoteArgv(gr.CreateArgv) + " (" + gr.LVMVersion + ")"
		}
		fmt.Fprintf(&b, "  lvm vg %s over %s: %s\n", gr.VG, strings.Join(gr.PVs, ", "), how)
		for _, c := range gr.Crypts {
			c.Write(&b, "   ")
		}
		for _, lr := range gr.Volumes {
			how := "exists"
			switch {
			case lr.Created:
				how = "created with " + disk.QuoteArgv(lr.CreateArgv)
			case lr.Grown:
				how = fmt.Sprintf("grown from %s to %s with %s", units.FormatSize(lr.FromBytes), units.FormatSize(lr.SizeBytes), disk.QuoteArgv(lr.GrowArgv))
			case lr.Shrunk:
				how = fmt.Sprintf("shrunk from %s to %s, unmounted", units.FormatSize(lr.FromBytes), units.FormatSize(lr.SizeBytes))
			case lr.CryptResized:
				how = "exists; its LUKS2 mapping grown to fill it with " + crypt.ArgvText(lr.CryptResizeArgv)
			case lr.FSGrown:
				how = "exists; its file system grown to fill it with " + disk.QuoteArgv(lr.FSGrowArgv)
			}
			if lr.Grown && lr.CryptResized {
				how += ", then its LUKS2 mapping with " + crypt.ArgvText(lr.CryptResizeArgv)
			}
			if (lr.Grown || lr.CryptResized) && lr.FSGrown {
				how += ", then its file system with " + disk.QuoteArgv(lr.FSGrowArgv)
			}
			fmt.Fprintf(&b, "   lv %s: %s\n", lr.Path, how)
			for _, argv := range lr.ShrinkArgv {
				fmt.Fprintf(&b, "    did: %s\n", disk.QuoteArgv(argv))
			}
			vol(lr.Volume)
		}
	}
	for _, cr := range r.Caches {
		how := "exists"
		switch {
		case !cr.Done:
			how = "not finished"
		case len(cr.Steps) > 0:
			how = "built"
		}
		fmt.Fprintf(&b, "  %s cache %s (%s, %s in front of %s, %s): %s\n", cr.Kind, cr.Name, cr.Device, cr.CacheDevice, cr.OriginDevice, cr.Mode, how)
		for _, st := range cr.Steps {
			fmt.Fprintf(&b, "    did: %s\n", st)
		}
		if cr.Risk != "" {
			fmt.Fprintf(&b, "    %s\n", cr.Risk)
		}
		vol(cr.Volume)
	}
	for _, er := range r.Encrypted {
		fmt.Fprintf(&b, "  encrypted partition %s:\n", er.Partition)
		vol(er.Volume)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
