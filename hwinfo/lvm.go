package hwinfo

import (
	"errors"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/hwinfo/probe"
)

// LVM volume groups. Device-mapper names the active LVs: a dm device whose
// dm/uuid is "LVM-" + the VG's UUID + the LV's UUID (32 characters each,
// without dashes; a suffix such as "-real" or "-tpool" marks an internal
// layer). Everything else (the VG's extents and free space, inactive LVs,
// which PV each LV is on) is only in the VG metadata on the PVs themselves,
// which hwinfo/probe reads (the label, the metadata area header and the
// newest text), read-only, from the device nodes under the root: the live
// /dev as root, or the PVs' captured first MiB in a fixture tree.

// dmLV is an active LVM dm device.
type dmLV struct {
	dev, dmName, majmin string
	vgID, lvID          string // 32 characters each
	sizeBytes           uint64
	slaves              []string
}

// readVolumeGroups builds the VGs from the PVs' metadata where it can be
// read, and from the active dm devices otherwise. candidates are the block
// devices that may be PVs (kernel names), sizes their sizes.
func (r *reader) readVolumeGroups(st *blockState, candidates []string, sizes map[string]uint64, diskOf map[string]string) []VolumeGroup {
	dms := r.lvmDMDevices()
	// Slaves of LVM devices are PVs whatever udev says.
	for _, d := range dms {
		for _, s := range d.slaves {
			if !slices.Contains(candidates, s) && !isLVMDM(dms, s) {
				candidates = append(candidates, s)
			}
		}
	}
	type found struct {
		md   *probe.VGMetadata
		pvOn map[string]string // PV UUID without dashes -> device
	}
	vgs := map[string]*found{}
	var order []string
	for _, dev := range candidates {
		pv, ok := r.readPV(dev, sizes[dev])
		if !ok || pv.Metadata == nil {
			continue
		}
		md, err := probe.ParseVGMetadata(pv.Metadata)
		if err != nil {
			r.warn("%s: lvm2 metadata: %v", dev, err)
			continue
		}
		id := undash(md.ID)
		f := vgs[id]
		if f == nil {
			f = &found{pvOn: map[string]string{}}
			vgs[id] = f
			order = append(order, id)
		}
		f.pvOn[undash(pv.UUID)] = dev
		if f.md == nil || md.SeqNo > f.md.SeqNo {
			f.md = md
		}
	}
	var out []VolumeGroup
	for _, id := range order {
		f := vgs[id]
		out = append(out, r.vgFromMetadata(f.md, f.pvOn, dms, st, diskOf))
	}
	// VGs with active LVs whose metadata could not be read.
	bySysfs := map[string]*VolumeGroup{}
	for _, d := range dms {
		if _, ok := vgs[d.vgID]; ok || d.lvID == "" {
			continue
		}
		vgName, lvName, ok := splitDMName(d.dmName)
		if !ok {
			continue
		}
		vg := bySysfs[d.vgID]
		if vg == nil {
			vg = &VolumeGroup{Name: vgName, UUID: dashUUID(d.vgID), Source: "sysfs"}
			bySysfs[d.vgID] = vg
		}
		lv := LogicalVolume{Name: lvName, UUID: dashUUID(d.lvID), Path: "/dev/" + vgName + "/" + lvName, DMName: d.dmName,
			Device: d.dev, SizeBytes: d.sizeBytes}
		lv.PVs = lvmPVsOf(dms, d)
		for _, p := range lv.PVs {
			if !slices.ContainsFunc(vg.PVs, func(x PhysicalVolume) bool { return x.Device == p }) {
				vg.PVs = append(vg.PVs, PhysicalVolume{Device: p, Disk: diskOf[p]})
			}
		}
		r.lvUse(&lv, d, st)
		vg.LVs = append(vg.LVs, lv)
	}
	for _, vg := range bySysfs {
		if len(vg.LVs) > 0 {
			sort.Slice(vg.LVs, func(i, j int) bool { return vg.LVs[i].Name < vg.LVs[j].Name })
			out = append(out, *vg)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// readPV reads the LVM label and metadata of the device dev, if the root
// has its contents.
func (r *reader) readPV(dev string, size uint64) (*probe.PV, bool) {
	f, size, ok := r.openHeader("/dev/"+dev, size, &r.pvOpenFailed, "LVM sizes, free space and inactive volumes")
	if !ok {
		return nil, false
	}
	defer f.Close()
	pv, err := probe.ReadPV(f, int64(size))
	if err != nil {
		if !errors.Is(err, probe.ErrNoPV) {
			r.warn("/dev/%s: %v", dev, err)
		}
		return nil, false
	}
	return pv, true
}

// vgFromMetadata lays a VG out from its newest metadata, with the devices
// its PVs were found on and its active LVs.
func (r *reader) vgFromMetadata(md *probe.VGMetadata, pvOn map[string]string, dms []dmLV, st *blockState, diskOf map[string]string) VolumeGroup {
	ext := md.ExtentSectors * 512
	vg := VolumeGroup{Name: md.Name, UUID: md.ID, Source: "metadata", SeqNo: md.SeqNo, ExtentBytes: ext}
	// Extents each PV has allocated, by PV key.
	used := map[string]uint64{}
	for _, lv := range md.LVs {
		for _, seg := range lv.Segments {
			if len(seg.Stripes) == 0 {
				continue
			}
			per := seg.ExtentCount / uint64(len(seg.Stripes))
			for _, a := range seg.Stripes {
				used[a.PV] += per
			}
		}
	}
	devOf := map[string]string{} // PV key -> device
	for _, p := range md.PVs {
		pv := PhysicalVolume{UUID: p.ID, SizeBytes: p.PECount * ext}
		if p.PECount >= used[p.Key] {
			pv.FreeBytes = (p.PECount - used[p.Key]) * ext
		}
		pv.Device = pvOn[undash(p.ID)]
		pv.Missing = pv.Device == "" || slices.Contains(p.Flags, "MISSING")
		if pv.Missing {
			vg.MissingPVs++
		}
		pv.Disk = diskOf[pv.Device]
		devOf[p.Key] = pv.Device
		vg.SizeBytes += pv.SizeBytes
		vg.FreeBytes += pv.FreeBytes
		vg.PVs = append(vg.PVs, pv)
	}
	byName := map[string]probe.VGLV{}
	for _, lv := range md.LVs {
		byName[lv.Name] = lv
	}
	vgID := undash(md.ID)
	for _, l := range md.LVs {
		if !l.Visible() {
			continue
		}
		lv := LogicalVolume{Name: l.Name, UUID: l.ID, Path: "/dev/" + md.Name + "/" + l.Name, DMName: dmNameOf(md.Name, l.Name)}
		var extents uint64
		for _, s := range l.Segments {
			extents += s.ExtentCount
		}
		lv.SizeBytes = extents * ext
		if len(l.Segments) > 0 {
			s := l.Segments[0]
			// Metadata keeps flags after a "+" (cache+CACHE_USES_CACHEVOL
			// for a cache volume); lvs shows the type alone.
			lv.Type, _, _ = strings.Cut(s.Type, "+")
			if s.Type == "striped" {
				if s.StripeCount <= 1 {
					lv.Type = "linear"
				} else {
					lv.Stripes = int(s.StripeCount)
				}
			}
		}
		for _, key := range lvPVKeys(byName, l, 0) {
			if dev := devOf[key]; dev != "" && !slices.Contains(lv.PVs, dev) {
				lv.PVs = append(lv.PVs, dev)
			}
		}
		for i := range dms {
			if d := &dms[i]; d.vgID == vgID && d.lvID == undash(l.ID) {
				lv.Device, lv.DMName = d.dev, d.dmName
				r.lvUse(&lv, *d, st)
			}
		}
		vg.LVs = append(vg.LVs, lv)
	}
	sort.Slice(vg.LVs, func(i, j int) bool { return vg.LVs[i].Name < vg.LVs[j].Name })
	return vg
}

// lvPVKeys lists the PV keys an LV's extents are on, following the sub-LVs
// its segments are built from.
func lvPVKeys(byName map[string]probe.VGLV, lv probe.VGLV, depth int) []string {
	if depth > 8 {
		return nil
	}
	var out []string
	for _, s := range lv.Segments {
		for _, a := range s.Stripes {
			out = append(out, a.PV)
		}
		for _, refs := range s.LVRefs {
			for _, name := range refs {
				if sub, ok := byName[name]; ok {
					out = append(out, lvPVKeys(byName, sub, depth+1)...)
				}
			}
		}
	}
	return out
}

// lvUse fills an active LV's filesystem, mounts and swap.
func (r *reader) lvUse(lv *LogicalVolume, d dmLV, st *blockState) {
	u := r.udevData(d.majmin)
	if u["ID_FS_TYPE"] != "" {
		lv.FSType, lv.FSLabel, lv.FSUUID = u["ID_FS_TYPE"], udevString(u, "ID_FS_LABEL"), u["ID_FS_UUID"]
	}
	lv.Mounts = append(lv.Mounts, st.mounts[d.majmin]...)
	lv.Swap = st.swaps[d.dev]
	lv.FSType = fallbackFSType(lv.FSType, lv.Mounts, lv.Swap)
	if lv.FSType == "crypto_LUKS" {
		lv.Holders = r.readHolders("/sys/block/"+d.dev, st, 0)
		lv.Crypt = r.cryptOf("/dev/"+d.dev, lv.SizeBytes, lv.Holders)
	}
}

// lvmDMDevices lists the dm devices LVM made.
func (r *reader) lvmDMDevices() []dmLV {
	entries, err := os.ReadDir(r.path("/sys/block"))
	if err != nil {
		return nil
	}
	var out []dmLV
	for _, e := range entries {
		name := e.Name()
		sys := "/sys/block/" + name
		uuid, ok := r.readString(sys + "/dm/uuid")
		if !ok {
			continue
		}
		ids, ok := strings.CutPrefix(uuid, "LVM-")
		if !ok || len(ids) < 64 {
			continue
		}
		d := dmLV{dev: name, vgID: ids[:32]}
		if len(ids) == 64 {
			d.lvID = ids[32:64] // a suffix is an internal layer, not the LV
		}
		d.dmName, _ = r.readString(sys + "/dm/name")
		d.majmin, _ = r.readString(sys + "/dev")
		if n, ok := r.readUint(sys + "/size"); ok {
			d.sizeBytes = n * 512
		}
		slaves, _ := os.ReadDir(r.path(sys + "/slaves"))
		for _, s := range slaves {
			d.slaves = append(d.slaves, s.Name())
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i].dev, out[j].dev) })
	return out
}

func isLVMDM(dms []dmLV, dev string) bool {
	return slices.ContainsFunc(dms, func(d dmLV) bool { return d.dev == dev })
}

// lvmPVsOf follows an LV's dm slaves through its internal layers (the
// sub-LVs of a RAID LV are LVM dm devices too) to the PVs.
func lvmPVsOf(dms []dmLV, d dmLV) []string {
	var out []string
	var walk func(dmLV, int)
	walk = func(d dmLV, depth int) {
		for _, s := range d.slaves {
			i := slices.IndexFunc(dms, func(x dmLV) bool { return x.dev == s })
			switch {
			case i >= 0 && dms[i].vgID == d.vgID && depth < 8:
				walk(dms[i], depth+1)
			case !slices.Contains(out, s):
				out = append(out, s)
			}
		}
	}
	walk(d, 0)
	return out
}

// splitDMName undoes LVM's dm naming: VG and LV joined by "-", each with
// its own dashes doubled ("my--vg-lv--1" is VG my-vg, LV lv-1).
func splitDMName(s string) (vg, lv string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '-' {
			i++
			continue
		}
		return strings.ReplaceAll(s[:i], "--", "-"), strings.ReplaceAll(s[i+1:], "--", "-"), i > 0 && i+1 < len(s)
	}
	return "", "", false
}

func dmNameOf(vg, lv string) string {
	return strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}

func undash(s string) string { return strings.ReplaceAll(s, "-", "") }

// dashUUID prints a 32-character LVM UUID as lvm2 does: 6-4-4-4-4-4-6.
func dashUUID(s string) string {
	if len(s) != 32 {
		return s
	}
	return s[0:6] + "-" + s[6:10] + "-" + s[10:14] + "-" + s[14:18] + "-" + s[18:22] + "-" + s[22:26] + "-" + s[26:32]
}
