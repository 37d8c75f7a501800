package stack

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/disk/stack/lvm"
	"github.com/diskprep/diskprep/disk/stack/md"
	"github.com/diskprep/diskprep/internal/units"
)

// StackResultSchema names the JSON shape of a StackResult.
const StackResultSchema = "diskprep/stack-result/v1"

// StackResult is what ApplyStacks did.
type StackResult struct {
	Schema string         `json:"schema"`
	Arrays []ArrayResult  `json:"arrays,omitempty"`
	Groups []GroupResult  `json:"groups,omitempty"`
	Caches []cache.Result `json:"caches,omitempty"`
	// Encrypted are the file systems on LUKS2 right on a partition.
	Encrypted []EncryptedResult `json:"encrypted,omitempty"`
	Changed   bool              `json:"changed"`
	// Incomplete: ApplyStacks stopped at a failure; what it did until
	// then is here.
	Incomplete bool     `json:"incomplete,omitempty"`
	Notes      []string `json:"notes,omitempty"`
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
	ended := disk.RecordPlan(a.Host(), sp) // runs last, after the undo of a failure
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
		out, err := a.Host().Run(ctx, prog, args...)
		if err != nil {
			if layer.IsNotFound(err) {
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
	if err := a.needCachePrograms(ctx, sp.Caches, need); err != nil {
		return nil, err
	}

	r := &run{&layer.Run{Applier: a.Applier, Versions: versions, Undo: &undo}}
	defer func() { res.Changed = res.Changed || r.Changed }()
	for _, ap := range sp.Arrays {
		ar, err := md.Apply(ctx, r.Run, ap, sp.MdadmConf)
		if ar != nil {
			res.Arrays = append(res.Arrays, *ar)
		}
		if err != nil {
			return res, err
		}
	}
	if len(sp.Arrays) > 0 {
		res.Notes = append(res.Notes, "md arrays are created without --assume-clean: the first resync runs in the background (cat /proc/mdstat)")
	}
	for _, gp := range sp.Groups {
		gr, err := lvm.Apply(ctx, r.Run, gp)
		res.Groups = append(res.Groups, gr)
		if err != nil {
			return res, err
		}
	}
	for _, cp := range sp.Caches {
		cr, err := r.applyCache(ctx, cp)
		res.Caches = append(res.Caches, cr)
		if err != nil {
			return res, err
		}
	}
	for _, ep := range sp.Encrypted {
		er, err := r.applyEncrypted(ctx, ep)
		if er != nil {
			res.Encrypted = append(res.Encrypted, *er)
		}
		if err != nil {
			return res, err
		}
	}
	if r.FstabChanged && a.SystemdIsInit() {
		if err := a.Do(ctx, "reload systemd units", []string{"systemctl", "daemon-reload"}); err != nil {
			res.Notes = append(res.Notes, "systemctl daemon-reload failed: "+err.Error())
		}
	}
	return res, nil
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
