package hwinfo

import (
	"fmt"
	"slices"
	"strings"

	"github.com/diskprep/diskprep/internal/units"
)

// Array returns the md array of that kernel name (md0, /dev/md0), or nil.
func (h *Host) Array(name string) *Array {
	name = strings.TrimPrefix(name, "/dev/")
	for i := range h.Arrays {
		if h.Arrays[i].Name == name {
			return &h.Arrays[i]
		}
	}
	return nil
}

// LogicalVolume returns the active LV on the dm device of that kernel name
// (dm-0), with its volume group, or nil.
func (h *Host) LogicalVolume(device string) (*VolumeGroup, *LogicalVolume) {
	device = strings.TrimPrefix(device, "/dev/")
	for i := range h.VolumeGroups {
		vg := &h.VolumeGroups[i]
		for j := range vg.LVs {
			if lv := &vg.LVs[j]; lv.Device != "" && lv.Device == device {
				return vg, lv
			}
		}
	}
	return nil, nil
}

// ArrayOf returns the md array the disk or partition dev is a member of,
// or nil: what prepare asks before it takes a disk.
func (h *Host) ArrayOf(dev string) *Array {
	dev = strings.TrimPrefix(dev, "/dev/")
	for i := range h.Arrays {
		for _, m := range h.Arrays[i].Members {
			if m.Device == dev {
				return &h.Arrays[i]
			}
		}
	}
	return nil
}

// VolumeGroupOf returns the volume group whose PV is dev, or nil.
func (h *Host) VolumeGroupOf(dev string) *VolumeGroup {
	dev = strings.TrimPrefix(dev, "/dev/")
	for i := range h.VolumeGroups {
		for _, p := range h.VolumeGroups[i].PVs {
			if p.Device == dev {
				return &h.VolumeGroups[i]
			}
		}
	}
	return nil
}

// Stack follows the block device dev (kernel name: md0, dm-1, sdb1) down to
// the disks: one Layer per md array, LVM logical volume or other stacked
// device on the way, top first, depth first (an LV on a RAID1 gives the LV,
// then the array). A disk or partition has no layers: nil means a plain
// device (or one the inventory does not know).
func (h *Host) Stack(dev string) []Layer {
	var out []Layer
	seen := map[string]bool{}
	var walk func(string, int)
	walk = func(dev string, depth int) {
		if depth > 8 || seen[dev] {
			return
		}
		seen[dev] = true
		l, ok := h.layer(dev)
		if !ok {
			return
		}
		out = append(out, l)
		for _, on := range l.On {
			walk(on, depth+1)
		}
	}
	walk(strings.TrimPrefix(dev, "/dev/"), 0)
	return out
}

// layer describes dev when it is a stacked device.
func (h *Host) layer(dev string) (Layer, bool) {
	if c := h.Cache(dev); c != nil {
		l := Layer{Kind: c.Kind, Device: c.Device, Name: c.Name, Type: c.Mode, State: c.State, SizeBytes: c.SizeBytes,
			On: append(append([]string(nil), c.OriginDevices...), c.CacheDevices...), CachedBy: append([]string(nil), c.CacheDevices...)}
		if c.Counters != nil && c.Counters.DirtyBytes > 0 && l.State == "" {
			l.State = units.FormatSize(c.Counters.DirtyBytes) + " dirty"
		}
		return l, true
	}
	if a := h.Array(dev); a != nil {
		l := Layer{Kind: "md", Device: a.Name, Name: a.ArrayName, Type: a.Level, State: a.problems(), SizeBytes: a.SizeBytes}
		for _, m := range a.Members {
			if m.Role == "active" {
				l.On = append(l.On, m.Device)
			}
		}
		return l, true
	}
	if vg, lv := h.LogicalVolume(dev); lv != nil {
		l := Layer{Kind: "lvm", Device: lv.Device, Name: vg.Name + "/" + lv.Name, Type: lv.Type, SizeBytes: lv.SizeBytes,
			On: append([]string(nil), lv.PVs...)}
		if vg.MissingPVs > 0 {
			l.State = fmt.Sprintf("%d PV missing", vg.MissingPVs)
		}
		return l, true
	}
	// Any other stacked device (dm-crypt, multipath, bcache): the disks
	// and holders that list it as their holder are what it is on.
	var l Layer
	var find func(name string, hs []Holder)
	find = func(name string, hs []Holder) {
		for _, hd := range hs {
			if hd.Name == dev {
				l.Kind, l.Device, l.Name = hd.Kind, hd.Name, hd.DMName
				if !slices.Contains(l.On, name) {
					l.On = append(l.On, name)
				}
			}
			find(hd.Name, hd.Holders)
		}
	}
	for _, d := range h.Disks {
		find(d.Name, d.Holders)
		for _, p := range d.Partitions {
			find(p.Name, p.Holders)
		}
		if d.Name == dev && len(d.StackedOn) > 0 {
			l = Layer{Kind: d.Transport, Device: d.Name, SizeBytes: d.SizeBytes, On: append([]string(nil), d.StackedOn...)}
			return l, true
		}
	}
	return l, l.Device != ""
}

// problems is what is not normal about an array: "degraded, 1 missing",
// "resync 15.2%", "inactive"; "" when healthy.
func (a *Array) problems() string {
	var out []string
	switch a.State {
	case "inactive", "broken", "suspended", "readonly":
		out = append(out, a.State)
	}
	return strings.Join(append(out, a.trouble(false)...), ", ")
}

// trouble is the degraded state and the sync in progress, with its speed.
func (a *Array) trouble(speed bool) []string {
	var out []string
	if a.Degraded {
		out = append(out, fmt.Sprintf("degraded, %d missing", a.MissingDevices))
	}
	if s := a.Sync; s != nil {
		t := s.Action + " pending"
		if s.TotalBytes > 0 {
			t = fmt.Sprintf("%s %.1f%%", s.Action, s.Percent)
		}
		if speed && s.SpeedBytesPerS > 0 {
			t += " at " + units.FormatSize(s.SpeedBytesPerS) + "/s"
		}
		out = append(out, t)
	}
	return out
}

// StateText says an array's state in one line for people: "clean",
// "clean, degraded, 1 missing", "active, resync 15.2% at 158 KiB/s".
func (a *Array) StateText() string {
	parts := append([]string{a.State}, a.trouble(true)...)
	if parts[0] == "" {
		parts[0] = "unknown"
	}
	return strings.Join(parts, ", ")
}

// DescribeStack says in one line what a filesystem (or a raw device, fs
// "") sits on: "xfs on sdb1", "xfs on md0 raid1 of sdb+sdc",
// "ext4 on fast/scratch (dm-0) linear on nvme0n1p2",
// "xfs on fast/data (dm-2) linear on md0 raid1 of sdb+sdc",
// "ext4 on luks-1 (dm-3) crypt on sdd1",
// "xfs on slow/data (dm-3) lvmcache writethrough of sda cached by nvme0n1p1".
func DescribeStack(fs, dev string, layers []Layer) string {
	var b strings.Builder
	if fs != "" {
		b.WriteString(fs + " on ")
	}
	if len(layers) == 0 {
		b.WriteString(dev)
		return b.String()
	}
	byDev := map[string]Layer{}
	for _, l := range layers {
		byDev[l.Device] = l
	}
	var say func(l Layer, depth int)
	// list says the devices a layer is on, joined by "+", stacked ones
	// with what they are on in turn.
	list := func(devs []string, depth int) {
		var plain []string
		var stacked []Layer
		for _, on := range devs {
			if sub, ok := byDev[on]; ok && depth < 8 {
				stacked = append(stacked, sub)
			} else {
				plain = append(plain, on)
			}
		}
		if len(plain) > 0 {
			b.WriteString(strings.Join(plain, "+"))
		}
		for i, sub := range stacked {
			if i > 0 || len(plain) > 0 {
				b.WriteString("+")
			}
			say(sub, depth+1)
		}
	}
	say = func(l Layer, depth int) {
		if l.Kind != "md" && l.Name != "" {
			fmt.Fprintf(&b, "%s (%s)", l.Name, l.Device)
		} else {
			b.WriteString(l.Device)
		}
		typ := l.Type
		switch {
		case len(l.CachedBy) > 0:
			typ = strings.TrimSpace(l.Kind + " " + l.Type)
		case typ == "" && l.Kind != "md" && l.Kind != "lvm":
			typ = l.Kind
		}
		if typ != "" {
			b.WriteString(" " + typ)
		}
		if l.State != "" {
			b.WriteString(" [" + l.State + "]")
		}
		if len(l.On) == 0 {
			return
		}
		word := " of "
		if l.Kind == "lvm" || l.Kind == "crypt" || l.Kind == "dm" {
			word = " on "
		}
		b.WriteString(word)
		if n := len(l.On) - len(l.CachedBy); len(l.CachedBy) > 0 && n >= 0 {
			list(l.On[:n], depth)
			b.WriteString(" cached by ")
			list(l.CachedBy, depth)
			return
		}
		list(l.On, depth)
	}
	say(layers[0], 0)
	return b.String()
}

// Topology names the kind of storage under a target for grouping: "raid1",
// "lvm linear", "lvm linear on raid1", "crypt on raid1"; "single disk" for a
// plain disk or partition (no layers).
func Topology(layers []Layer) string {
	if len(layers) == 0 {
		return "single disk"
	}
	var parts []string
	for _, l := range layers {
		var p string
		switch l.Kind {
		case "md":
			p = l.Type
			if p == "" || p == "linear" {
				p = "md " + p
			}
		case "lvm":
			p = strings.TrimSpace("lvm " + l.Type)
		default:
			p = l.Kind
		}
		p = strings.TrimSpace(p)
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " on ")
}
