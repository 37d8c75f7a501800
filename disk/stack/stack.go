// Package stack composes the layers of a stack request over the disks
// disk prepares: md arrays (package md), LVM groups (lvm), cached volumes
// (lvmcache, bcache, over cache) and LUKS2 on a partition. It validates
// the request, plans each layer from the bottom up (PlanStacks), applies
// the plan in the same order (ApplyStacks), and plans and carries out the
// teardown a release meets (Layers, passed to disk in Deps). A layer
// never calls back up: each package builds only on those below it and
// on internal/layer, which holds what every layer is given.
package stack

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/disk/stack/cache"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/disk/stack/lvm"
	"github.com/diskprep/diskprep/disk/stack/lvmcache"
	"github.com/diskprep/diskprep/disk/stack/md"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// StackPlanSchema names the JSON shape of a StackPlan.
const StackPlanSchema = "diskprep/stack-plan/v1"

// StackRequest asks for storage stacks over partitions that disk requests
// give to them (PartSpec.Use): md arrays and LVM volume groups.
type StackRequest struct {
	Arrays []ArraySpec `json:"arrays,omitempty"`
	Groups []GroupSpec `json:"groups,omitempty"`
	// Caches are cached volumes over the partitions whose Use is
	// "origin:"+Name and "cache:"+Name (cache.go).
	Caches []cache.Spec `json:"caches,omitempty"`
	// Encrypted are file systems on LUKS2 right on a partition, the one
	// whose Use is "crypt:"+Key (crypt.go).
	Encrypted []EncryptedSpec `json:"encrypted,omitempty"`
	Options
}

// Empty says the request asks for no stack.
func (r StackRequest) Empty() bool {
	return len(r.Arrays) == 0 && len(r.Groups) == 0 && len(r.Caches) == 0 && len(r.Encrypted) == 0
}

// StackPlan is everything ApplyStacks will do, decided up front, after the
// disks' own plans (their partitions are the members).
type StackPlan struct {
	Schema string       `json:"schema"`
	Arrays []ArrayPlan  `json:"arrays,omitempty"`
	Groups []GroupPlan  `json:"groups,omitempty"`
	Caches []cache.Plan `json:"caches,omitempty"`
	// Encrypted are the file systems on LUKS2 right on a partition.
	Encrypted []EncryptedPlan `json:"encrypted,omitempty"`
	// MdadmConf is the mdadm.conf the arrays' lines go to: Debian's
	// /etc/mdadm/mdadm.conf when /etc/mdadm exists, else /etc/mdadm.conf
	// (RHEL, Fedora, SUSE).
	MdadmConf string   `json:"mdadm_conf,omitempty"`
	Unchanged bool     `json:"unchanged"`
	Notes     []string `json:"notes,omitempty"`
}

// Validate checks the stack request on its own and against the disk
// requests that give it members: bad input (ErrUsage) whatever the machine.
func (r StackRequest) Validate(reqs []disk.Request) error {
	members := map[string][]string{} // use -> where
	disks := map[string][]string{}   // use -> the disks
	for _, q := range reqs {
		for i, ps := range q.Partitions {
			if ps.Use != "" {
				members[ps.Use] = append(members[ps.Use], fmt.Sprintf("%s partition %d", layer.OrNone(q.Device+q.Image), i+1))
				disks[ps.Use] = append(disks[ps.Use], layer.OrNone(q.Device+q.Image))
			}
		}
	}
	at := func(origin, format string, args ...any) error {
		if origin != "" {
			return disk.Usagef("%s: %s", origin, fmt.Sprintf(format, args...))
		}
		return disk.Usagef(format, args...)
	}
	known := map[string]bool{}
	mounts := map[string]string{}
	checkVolume := func(origin, what string, v VolumeSpec) error {
		ps := disk.PartSpec{FS: v.FS, Label: v.Label, Mount: v.Mount, MountOpts: v.MountOpts, MkfsOpts: v.MkfsOpts, Persist: v.Persist, MountOver: v.MountOver, SizeBytes: 1}
		if v.FS == "swap" {
			return at(origin, "%s: swap belongs on a partition (fs: swap), not on a stack", what)
		}
		probe := disk.Request{Device: "x", Partitions: []disk.PartSpec{ps}}
		if err := probe.Validate(); err != nil {
			if r := disk.Reasons(err); len(r) > 0 {
				return layer.WithOrigin(origin, disk.Refuse(what, strings.TrimPrefix(r[0], "partition 1: ")))
			}
			return at(origin, "%s: %s", what, strings.TrimPrefix(err.Error(), "partition 1: "))
		}
		if err := checkEncrypt(v.Encrypt, what); err != nil {
			return layer.WithOrigin(origin, err)
		}
		if v.Encrypt != nil && v.Encrypt.Name != "" {
			if prev, dup := mounts["crypt:"+v.Encrypt.Name]; dup {
				return at(origin, "%s: encrypt name %s is already %s's", what, v.Encrypt.Name, prev)
			}
			mounts["crypt:"+v.Encrypt.Name] = what
		}
		if m := probe.Partitions[0].Mount; m != "" {
			if prev, dup := mounts[m]; dup {
				return at(origin, "%s: mount point %s is already %s's", what, m, prev)
			}
			mounts[m] = what
		}
		return nil
	}
	for _, a := range r.Arrays {
		use := "raid:" + a.Name
		if !disk.StackName.MatchString(a.Name) {
			return at(a.Origin, "raid %q: use letters, digits, '_', '.', '+' or '-'", a.Name)
		}
		if known[use] {
			return at(a.Origin, "raid %s is declared twice", a.Name)
		}
		known[use] = true
		min, ok := md.MinMembers(a.Level)
		if !ok {
			return at(a.Origin, "raid %s: unknown level %d: use 0, 1, 5, 6 or 10", a.Name, a.Level)
		}
		if n := len(members[use]); n < min {
			return at(a.Origin, "raid %s: level %d needs at least %d members, %d partitions say use: %s", a.Name, a.Level, min, n, use)
		}
		if err := checkVolume(a.Origin, "raid "+a.Name, a.Volume); err != nil {
			return err
		}
	}
	for _, g := range r.Groups {
		if err := checkEncrypt(g.Encrypt, "lvm vg "+g.VG); err != nil {
			return layer.WithOrigin(g.Origin, err)
		}
		if g.Encrypt != nil && g.Encrypt.Name != "" {
			return at(g.Origin, "lvm vg %s: encrypt takes no name for a group's members: each is NAME_crypt after its partition", g.VG)
		}
	}
	for _, g := range r.Groups {
		use := "lvm:" + g.VG
		if !disk.StackName.MatchString(g.VG) || g.VG == "." || g.VG == ".." {
			return at(g.Origin, "lvm vg %q: use letters, digits, '_', '.', '+' or '-'", g.VG)
		}
		if known[use] {
			return at(g.Origin, "lvm vg %s is declared twice", g.VG)
		}
		known[use] = true
		if len(members[use]) == 0 {
			return at(g.Origin, "lvm vg %s: no partition says use: %s", g.VG, use)
		}
		if len(g.Volumes) == 0 {
			return at(g.Origin, "lvm vg %s: no volumes", g.VG)
		}
		names := map[string]bool{}
		for i, lv := range g.Volumes {
			if !disk.StackName.MatchString(lv.Name) || strings.HasPrefix(lv.Name, "snapshot") || strings.HasPrefix(lv.Name, "pvmove") {
				return at(lv.Origin, "lvm vg %s: volume name %q: use letters, digits, '_', '.', '+' or '-'", g.VG, lv.Name)
			}
			if names[lv.Name] {
				return at(lv.Origin, "lvm vg %s: volume %s is declared twice", g.VG, lv.Name)
			}
			names[lv.Name] = true
			if lv.SizeBytes == 0 && lv.SizePercent == 0 && i != len(g.Volumes)-1 {
				return at(lv.Origin, "lvm vg %s: only the last volume may take the rest", g.VG)
			}
			if err := checkVolume(lv.Origin, "lvm "+g.VG+"/"+lv.Name, lv.Volume); err != nil {
				return err
			}
		}
	}
	for _, c := range r.Caches {
		if known["cache:"+c.Name] {
			return at(c.Origin, "cache %s is declared twice", c.Name)
		}
		if err := validateCache(c, disks, r.Groups, at); err != nil {
			return err
		}
		known["cache:"+c.Name], known["origin:"+c.Name] = true, true
		if c.Volume.Encrypt != nil && !lvmcache.Handles(c.KindOrDefault()) {
			return at(c.Origin, "cache %s: a bcache device cannot be encrypted yet; use kind lvmcache or writecache", c.Name)
		}
		if err := checkVolume(c.Origin, "cache "+c.Name, c.Volume); err != nil {
			return err
		}
	}
	for _, e := range r.Encrypted {
		use := "crypt:" + e.Key
		switch {
		case known[use]:
			return at(e.Origin, "encrypted partition %s is declared twice", e.Key)
		case len(members[use]) != 1:
			return at(e.Origin, "encrypted partition %s: %d partitions say use: %s, want one", e.Key, len(members[use]), use)
		case e.Volume.Encrypt == nil:
			return at(e.Origin, "encrypted partition %s: no encrypt (key_file)", e.Key)
		}
		known[use] = true
		if err := checkVolume(e.Origin, "encrypted partition "+e.Key, e.Volume); err != nil {
			return err
		}
	}
	for use, where := range members {
		if !known[use] {
			kind, name, _ := strings.Cut(use, ":")
			section := map[string]string{"raid": "raid: (name: " + name + ")", "lvm": "lvm: (vg: " + name + ")",
				"origin": "cache: (name: " + name + ")", "cache": "cache: (name: " + name + ")", "crypt": "encrypt: on the partition"}[kind]
			return disk.Usagef("%s says use: %s, but no %s declares it", where[0], use, section)
		}
	}
	return nil
}

// PlanStacks decides the stacks of req over the disks' plans (planned
// first, by PlanAll). It reads, never writes: sysfs and /dev for running
// arrays, pvs and lvs for LVM, the file systems on existing volumes, the
// mount table and mdadm.conf.
func (pl Planner) PlanStacks(ctx context.Context, req StackRequest, plans []*disk.Plan, reqs []disk.Request, host *hwinfo.Host) (*StackPlan, error) {
	if err := req.Validate(reqs); err != nil {
		return nil, err
	}
	sp := &StackPlan{Schema: StackPlanSchema, Unchanged: true}
	byUse := map[string][]layer.Member{}
	for _, p := range plans {
		var d *hwinfo.Disk
		if host != nil {
			d, _ = host.Device(p.Device)
		}
		for _, pp := range p.Partitions {
			if pp.Use == "" {
				continue
			}
			m := layer.Member{Path: pp.Path, Part: pp, Plan: p, Disk: d}
			if d != nil && p.Table == nil {
				for i := range d.Partitions {
					if d.Partitions[i].Number == pp.Number {
						m.Ex = &d.Partitions[i]
					}
				}
			}
			byUse[pp.Use] = append(byUse[pp.Use], m)
		}
	}
	h := pl.HostOrLive()
	mounts, err := disk.ReadMounts(h, pl.Roots)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	if len(req.Arrays) > 0 {
		sp.MdadmConf = pl.Roots.HostPath("etc/mdadm.conf")
		if fi, err := h.Stat(pl.Roots.HostPath("etc/mdadm")); err == nil && fi.IsDir() {
			sp.MdadmConf = pl.Roots.HostPath("etc/mdadm/mdadm.conf")
		}
	}
	for _, a := range req.Arrays {
		ap, err := md.Plan(pl.layer(), a, byUse["raid:"+a.Name], req.Options, mounts, sp.MdadmConf)
		if err != nil {
			return nil, layer.WithOrigin(a.Origin, err)
		}
		if ap.Create != nil || ap.Volume.Changes() {
			sp.Unchanged = false
		}
		if ap.ChunkBytes > 0 && ap.Volume.FS == "xfs" && ap.Volume.Geometry == "" {
			sp.Notes = append(sp.Notes, fmt.Sprintf("md array %s is under %s: its xfs is made without the stripe geometry, as mkfs.xfs does for a small volume (with it, mkfs.xfs cannot make the log large enough)",
				ap.Name, units.FormatSize(md.MinStripedXFSBytes)))
		}
		sp.Arrays = append(sp.Arrays, ap)
	}
	if len(req.Groups) > 0 {
		lvms, err := lvm.Read(ctx, pl.layer())
		if err != nil {
			return nil, err
		}
		for _, g := range req.Groups {
			ms, crypts, err := lvm.PlanMemberCrypts(pl.layer(), g, byUse["lvm:"+g.VG], req.Options)
			if err != nil {
				return nil, layer.WithOrigin(g.Origin, err)
			}
			gp, err := lvm.Plan(ctx, pl.layer(), g, ms, crypts, req.Options, lvms, mounts)
			if err != nil {
				return nil, layer.WithOrigin(g.Origin, err)
			}
			if gp.VGCreate != nil || len(gp.PVCreate) > 0 || gp.VGExtend != nil {
				sp.Unchanged = false
			}
			for _, c := range crypts {
				if c.Changes() {
					sp.Unchanged = false
				}
			}
			for _, lv := range gp.Volumes {
				if lv.Create != nil || lv.Grow != nil || lv.Shrink != nil || lv.FSGrow != nil || lv.CryptResize != nil || lv.Volume.Changes() {
					sp.Unchanged = false
				}
			}
			sp.Groups = append(sp.Groups, gp)
		}
	}
	if len(req.Caches) > 0 {
		if sp.Caches, err = pl.planCaches(ctx, req.Caches, req.Options, byUse, host, mounts); err != nil {
			return nil, err
		}
		for _, cp := range sp.Caches {
			if len(cp.Steps) > 0 || cp.Volume.Changes() {
				sp.Unchanged = false
			}
		}
	}
	for _, e := range req.Encrypted {
		ep, err := pl.planEncrypted(e, byUse["crypt:"+e.Key][0], req.Options, mounts)
		if err != nil {
			return nil, layer.WithOrigin(e.Origin, err)
		}
		if ep.Volume.Changes() {
			sp.Unchanged = false
		}
		sp.Encrypted = append(sp.Encrypted, ep)
	}
	if err := md.CheckConf(pl.layer(), sp.MdadmConf, sp.Arrays); err != nil {
		return nil, err
	}
	if err := pl.checkVolumePoints(sp, mounts); err != nil {
		return nil, err
	}
	if err := pl.checkKernel(ctx, sp.needs(), sp.Caches); err != nil {
		return nil, err
	}
	return sp, nil
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
		fmt.Fprintf(&b, "; %s on %s%s\n", ap.Volume.FS, layer.OnDevice(ap.Volume, ap.Device), layer.InMount(ap.Volume))
	}
	for _, gp := range sp.Groups {
		fmt.Fprintf(&b, "  lvm vg %s over %s, %s in %s extents\n", gp.VG, strings.Join(gp.PVs, ", "), units.FormatSize(gp.SizeBytes), units.FormatSize(gp.ExtentBytes))
		for _, lp := range gp.Volumes {
			size := "the rest"
			if lp.SizeBytes > 0 {
				size = units.FormatSize(lp.SizeBytes)
			}
			fmt.Fprintf(&b, "    lv %s: %s, %s%s%s\n", lp.Name, size, lp.Volume.FS, layer.CryptSuffix(lp.Volume), layer.InMount(lp.Volume))
		}
	}
	for _, cp := range sp.Caches {
		fmt.Fprintf(&b, "  %s\n", cp.Summary())
		if cp.Risk != "" {
			fmt.Fprintf(&b, "  %s\n", cp.Risk)
		}
	}
	for _, ep := range sp.Encrypted {
		fmt.Fprintf(&b, "  %s on %s%s\n", ep.Volume.FS, layer.OnDevice(ep.Volume, ep.Partition), layer.InMount(ep.Volume))
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

// Passphrases are the plan's LUKS2 layers that a passphrase unlocks and
// that apply formats or opens: what the caller asks before the first
// step (Deps.Passphrase then answers by name).
func (sp *StackPlan) Passphrases() []*crypt.Plan {
	var out []*crypt.Plan
	for _, c := range sp.crypts() {
		if c.Passphrase && (c.Format != nil || c.Open != nil) {
			out = append(out, c)
		}
	}
	return out
}

// crypts are every LUKS2 layer of the plan: encrypted members, then
// encrypted volumes.
func (sp *StackPlan) crypts() []*crypt.Plan {
	var out []*crypt.Plan
	for _, gp := range sp.Groups {
		out = append(out, gp.Crypts...)
	}
	for _, v := range sp.volumes() {
		if v.Crypt != nil {
			out = append(out, v.Crypt)
		}
	}
	return out
}

// needs lists the kernel features of what the plan makes: nothing for a
// stack that exists as asked (a rerun), whose kernel has it running.
func (sp *StackPlan) needs() []need {
	var out []need
	add := func(who string, fs ...kernelFeature) {
		for _, f := range fs {
			out = append(out, need{f, who})
		}
	}
	for _, ap := range sp.Arrays {
		if ap.Create != nil {
			add("md array "+ap.Name, featMD, raidFeature(ap.Level))
		}
	}
	for _, gp := range sp.Groups {
		makes := gp.VGCreate != nil || len(gp.PVCreate) > 0
		for _, lv := range gp.Volumes {
			makes = makes || lv.Create != nil
		}
		if makes {
			add("volume group "+gp.VG, featDM)
		}
	}
	for _, c := range sp.crypts() {
		if c.Open != nil {
			add("LUKS2 volume "+c.Name, featDM, featDMCrypt)
		}
	}
	for _, cp := range sp.Caches {
		if len(cp.Steps) == 0 {
			continue
		}
		who := cp.Kind + " " + cp.Name
		switch cp.Kind {
		case cache.KindLVM:
			add(who, featDM, featDMCache)
		case cache.KindWritecache:
			add(who, featDM, featWritecache)
		case cache.KindBcache:
			add(who, featBcache)
		}
	}
	return out
}

// checkVolumePoints refuses, before anything is made, a volume's mount
// point that another file system holds, or that an fstab line gives to
// something else: either would only fail after the array or group exists.
func (pl Planner) checkVolumePoints(sp *StackPlan, mounts []disk.MountEntry) error {
	var lines []fstab.Line
	fstabPath := pl.Roots.HostPath("etc/fstab")
	if b, err := pl.HostOrLive().ReadFile(fstabPath); err == nil {
		if lines, err = fstab.Parse(b); err != nil {
			return fmt.Errorf("%s: %w", fstabPath, err)
		}
	}
	for _, v := range sp.volumes() {
		if v.MountPoint == "" {
			continue
		}
		note, err := pl.CheckMountPoint(v.Device, v.MountPoint, v.MountArgv == nil, v.MountOver, mounts)
		if err != nil {
			return err
		}
		if note != "" {
			sp.Notes = append(sp.Notes, note)
		}
		if !v.Persist || v.Crypt != nil && v.Crypt.FSAfterOpen {
			// A closed LUKS2 volume's file system UUID is read once it
			// is open; its fstab line is checked then.
			continue
		}
		want := disk.FstabEntry(v.PartPlan())
		for i, l := range lines {
			if l.Entry == nil {
				continue
			}
			samePoint := filepath.Clean(l.Entry.File) == v.MountPoint
			sameSpec := strings.EqualFold(l.Entry.Spec, want.Spec)
			if samePoint != sameSpec {
				return disk.Refuse(v.Device, fmt.Sprintf("%s line %d already says %q", fstabPath, i+1, l.Raw))
			}
		}
	}
	return nil
}
