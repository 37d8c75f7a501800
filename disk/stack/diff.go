package stack

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/internal/units"
)

// Diff lists, layer by layer and in ApplyStacks' order, what it would do
// with sp: mdadmConf and crypttab are those files as they are ("" when
// missing), and fstabLines the host's fstab. It reads nothing itself.
func (sp *StackPlan) Diff(mdadmConf, crypttab string, fstabLines []fstab.Line) []disk.Change {
	var cs []disk.Change
	add := func(act, layer, dev, what string) {
		cs = append(cs, disk.Change{Act: act, Layer: layer, Device: dev, What: what})
	}
	act := func(argv []string) string {
		if argv != nil {
			return disk.ActCreate
		}
		return disk.ActKeep
	}
	for _, ap := range sp.Arrays {
		what := fmt.Sprintf("raid%d of %s, %s", ap.Level, strings.Join(ap.Members, ", "), units.FormatSize(ap.SizeBytes))
		if ap.Create == nil && ap.Existing != "" {
			what += ", running as " + ap.Existing
		}
		add(act(ap.Create), "md", ap.Device, what)
		conf := disk.ActCreate
		for _, l := range strings.Split(mdadmConf, "\n") {
			if strings.TrimSpace(l) == ap.ConfLine {
				conf = disk.ActKeep
			}
		}
		add(conf, "mdadm.conf", sp.MdadmConf, ap.ConfLine)
		cs = append(cs, volumeChanges(ap.Volume, crypttab, fstabLines)...)
	}
	for _, gp := range sp.Groups {
		for _, c := range gp.Crypts {
			cs = append(cs, crypt.Diff(c, crypttab)...)
		}
		made := map[string]bool{}
		for _, argv := range gp.PVCreate {
			made[argv[len(argv)-1]] = true
		}
		for _, pv := range gp.PVs {
			a := disk.ActKeep
			if made[pv] {
				a = disk.ActCreate
			}
			add(a, "pv", pv, "physical volume of "+gp.VG)
		}
		vgWhat := fmt.Sprintf("over %s, %s", strings.Join(gp.PVs, ", "), units.FormatSize(gp.SizeBytes))
		if gp.VGExtend != nil {
			var had []string
			for _, pv := range gp.PVs {
				if !slices.Contains(gp.VGExtend[2:], pv) {
					had = append(had, pv)
				}
			}
			cs = append(cs, disk.Change{Act: disk.ActChange, Layer: "vg", Device: gp.VG, What: vgWhat, From: "over " + strings.Join(had, ", ")})
		} else {
			add(act(gp.VGCreate), "vg", gp.VG, vgWhat)
		}
		for _, lv := range gp.Volumes {
			what := lv.Name
			if lv.SizeBytes > 0 {
				what += ", " + units.FormatSize(lv.SizeBytes)
			} else {
				what += ", the rest of " + gp.VG
			}
			switch {
			case lv.Grow != nil:
				cs = append(cs, disk.Change{Act: disk.ActChange, Layer: "lv", Device: lv.Path,
					What: fmt.Sprintf("%s (grown, with its %s)", units.FormatSize(lv.SizeBytes), lv.Volume.FS), From: lv.Name + ", " + units.FormatSize(lv.FromBytes)})
			case lv.Shrink != nil:
				cs = append(cs, disk.Change{Act: disk.ActChange, Layer: "lv", Device: lv.Path,
					What: fmt.Sprintf("%s (shrunk, with its %s, unmounted)", units.FormatSize(lv.SizeBytes), lv.Volume.FS), From: lv.Name + ", " + units.FormatSize(lv.FromBytes)})
			default:
				add(act(lv.Create), "lv", lv.Path, what)
			}
			vc := volumeChanges(lv.Volume, crypttab, fstabLines)
			for i, c := range vc {
				if lv.FSGrow != nil && c.Layer == "filesystem" && c.Act == disk.ActKeep {
					vc[i] = disk.Change{Act: disk.ActChange, Layer: "filesystem", Device: c.Device,
						What: fmt.Sprintf("%s, %s (grown to fill its volume)", lv.Volume.FS, units.FormatSize(lv.SizeBytes)), From: lv.Volume.FS + ", " + units.FormatSize(lv.FSBytes)}
				}
			}
			cs = append(cs, vc...)
		}
	}
	for _, cp := range sp.Caches {
		a := disk.ActKeep
		if len(cp.Steps) > 0 {
			a = disk.ActCreate
		}
		what := fmt.Sprintf("%s %s, %s (%s) in front of %s (%s)", cp.Kind, cp.Mode, cp.CacheDevice, units.FormatSize(cp.CacheBytes), cp.OriginDevice, units.FormatSize(cp.OriginBytes))
		if a == disk.ActKeep && cp.Existing != "" {
			what += ", " + cp.Existing
		}
		add(a, "cache", cp.Device, what)
		cs = append(cs, volumeChanges(cp.Volume, crypttab, fstabLines)...)
	}
	for _, ep := range sp.Encrypted {
		cs = append(cs, volumeChanges(ep.Volume, crypttab, fstabLines)...)
	}
	return cs
}

// volumeChanges are a stack volume's LUKS2 layer and crypttab line, when
// encrypted, then its filesystem, mount and fstab lines.
func volumeChanges(v VolumePlan, crypttab string, fstabLines []fstab.Line) []disk.Change {
	cs := crypt.Diff(v.Crypt, crypttab)
	pp := v.PartPlan()
	pp.Mkfs, pp.MountArgv = v.Mkfs, v.MountArgv
	return append(cs, disk.FileSystemChanges(pp, fstabLines)...)
}

// DiffStacks is sp.Diff with the mdadm.conf read through deps' host.
func DiffStacks(sp *StackPlan, fstabLines []fstab.Line, deps disk.Deps) ([]disk.Change, error) {
	conf := ""
	if sp.MdadmConf != "" && len(sp.Arrays) > 0 {
		b, err := disk.NewApplier(deps).Host().ReadFile(sp.MdadmConf)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", sp.MdadmConf, err)
		}
		conf = string(b)
	}
	h := disk.NewApplier(deps).Host()
	crypttab := ""
	for _, c := range sp.crypts() {
		if c.Crypttab != "" {
			b, err := h.ReadFile(c.Crypttab)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("read %s: %w", c.Crypttab, err)
			}
			crypttab = string(b)
			break
		}
	}
	return sp.Diff(conf, crypttab, fstabLines), nil
}
