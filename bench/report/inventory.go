package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// InventoryFormats are the outputs of Inventory.
var InventoryFormats = []string{"table", "json", "markdown"}

// Inventory renders what `diskprep inventory` shows of a host: the
// identity, then one line per disk (and partition) with what it is used
// for. Markdown is an "Environment" section for a write-up.
func Inventory(w io.Writer, format string, h *hwinfo.Host) error {
	switch format {
	case "table", "":
		return inventoryTable(w, h)
	case "markdown", "md":
		return inventoryMarkdown(w, h)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(h)
	}
	return fmt.Errorf("%q (valid: %s): %w", format, strings.Join(InventoryFormats, ", "), ErrFormat)
}

func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

func osLine(h *hwinfo.Host) string {
	if h.OS.RedHatRelease != "" {
		return h.OS.RedHatRelease
	}
	if h.OS.PrettyName != "" {
		return h.OS.PrettyName
	}
	return join(h.OS.Name, h.OS.Version)
}

func cpuLine(h *hwinfo.Host) string {
	if h.CPU.Model == "" {
		return ""
	}
	var topo []string
	if h.CPU.Sockets > 1 {
		topo = append(topo, fmt.Sprintf("%d sockets", h.CPU.Sockets))
	}
	if h.CPU.Cores > 0 {
		topo = append(topo, fmt.Sprintf("%d cores", h.CPU.Cores))
	}
	if h.CPU.Threads > 0 {
		topo = append(topo, fmt.Sprintf("%d threads", h.CPU.Threads))
	}
	if len(topo) == 0 {
		return h.CPU.Model
	}
	return fmt.Sprintf("%s (%s)", h.CPU.Model, strings.Join(topo, ", "))
}

func memLine(h *hwinfo.Host) string {
	if h.Memory.TotalBytes == 0 {
		return ""
	}
	return units.FormatSize(h.Memory.TotalBytes)
}

func virtLine(h *hwinfo.Host) string {
	v := dash(h.Virt.Hypervisor)
	if h.Virt.Container != "" && h.Virt.Container != "none" {
		v += ", container " + h.Virt.Container
	}
	return v
}

func biosLine(h *hwinfo.Host) string {
	s := join(h.BIOS.Vendor, h.BIOS.Version)
	if h.BIOS.Date != "" {
		s = join(s, "("+h.BIOS.Date+")")
	}
	return s
}

// diskType is what people call a disk at a glance: NVMe, SSD, HDD (with
// its rpm when it says), or the kind of virtual device; "-" for a disk that
// does not say what it is (virtio-blk, a hypervisor's SCSI disk).
func diskType(d *hwinfo.Disk) string {
	switch {
	case d.Media == "nvme":
		return "NVMe"
	case d.Media == "hdd" && d.RotationRPM > 0:
		return fmt.Sprintf("HDD %d rpm", d.RotationRPM)
	case d.Media != "":
		return strings.ToUpper(d.Media)
	}
	switch d.Transport {
	case "loop", "zram", "ram", "bcache":
		return d.Transport
	}
	return "-"
}

func diskModel(d *hwinfo.Disk) string {
	m := hwinfo.DisplayModel(d.Vendor, d.Model)
	if d.LoopBackingFile != "" && m == "" {
		m = d.LoopBackingFile
	}
	if len(d.StackedOn) > 0 && m == "" {
		m = "on " + strings.Join(d.StackedOn, ", ")
	}
	return m
}

func diskSize(n uint64) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%s (%s)", units.FormatSize(n), units.FormatDecimalSize(n))
}

// use says what a disk or partition is used for: its own mounts and swap,
// then each holder stacked on it with the holder's use. Mounts reached
// through a holder (Via set) are shown under that holder, not twice.
func use(mounts []hwinfo.Mount, swap bool, holders []hwinfo.Holder) string {
	var out []string
	for _, m := range mounts {
		if m.Via == "" {
			out = append(out, m.Point)
		}
	}
	if swap && !holderSwap(holders) {
		out = append(out, "[swap]")
	}
	for _, h := range holders {
		name := h.Name
		if h.DMName != "" {
			name = fmt.Sprintf("%s %s", h.Kind, h.DMName)
		}
		sub := use(h.Mounts, h.Swap, h.Holders)
		if sub != "" {
			out = append(out, fmt.Sprintf("%s: %s", name, sub))
		} else {
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

// cryptText is a LUKS volume as the FS column says it: "LUKS2
// aes-xts-plain64".
func cryptText(c *hwinfo.Crypt) string {
	return fmt.Sprintf("LUKS%d %s", c.Version, c.Cipher)
}

// cryptUse is the rest of a LUKS volume and its use: "512-bit key, 4096 B
// sectors, " then its mapping's use u, or "closed".
func cryptUse(c *hwinfo.Crypt, u string) string {
	if !c.Open {
		u = "closed"
	}
	s := fmt.Sprintf("%d-bit key, %d B sectors", c.KeyBits, c.SectorBytes)
	if slices.Contains(c.Tokens, "systemd-tpm2") {
		s += ", TPM2"
	}
	if u != "" {
		s += ", " + u
	}
	return s
}

// cryptAndUse is both, for a column that holds both.
func cryptAndUse(c *hwinfo.Crypt, u string) string {
	return cryptText(c) + " " + cryptUse(c, u)
}

func holderSwap(holders []hwinfo.Holder) bool {
	for _, h := range holders {
		if h.Swap || holderSwap(h.Holders) {
			return true
		}
	}
	return false
}

func inventoryTable(w io.Writer, h *hwinfo.Host) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	rows := [][2]string{
		{"Host", h.Hostname},
		{"OS", osLine(h)},
		{"Kernel", h.Kernel},
		{"CPU", cpuLine(h)},
		{"Memory", memLine(h)},
		{"Board", join(h.Board.Vendor, h.Board.Model)},
		{"System", join(h.System.Vendor, h.System.Product)},
		{"BIOS", biosLine(h)},
		{"Hypervisor", virtLine(h)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], dash(r[1]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "DISK\tSIZE\tTYPE\tBUS\tMODEL\tSERIAL\tFIRMWARE\tSECTOR L/P\tVIRTUAL\tUSE")
	for i := range h.Disks {
		d := &h.Disks[i]
		virtual := "no"
		switch {
		case d.Virtual && d.VirtualBy != "":
			virtual = d.VirtualBy
		case d.Virtual:
			virtual = "yes" // the kernel's (bcache), not a hypervisor's
		}
		u := use(d.Mounts, d.Swap, d.Holders)
		if d.Crypt != nil {
			u = cryptAndUse(d.Crypt, u)
		} else if d.FSType != "" {
			u = join(d.FSType, u)
		}
		if d.System {
			u = join("SYSTEM", u)
		}
		if d.ReadOnly {
			u = join("read-only", u)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n",
			d.Name, units.FormatSize(d.SizeBytes), diskType(d), dash(d.Transport), dash(diskModel(d)),
			dash(d.Serial), dash(d.Firmware), d.LogicalSectorBytes, d.PhysicalSectorBytes, virtual, dash(u))
		for _, p := range d.Partitions {
			fs, pu := p.FSType, use(p.Mounts, p.Swap, p.Holders)
			if p.Crypt != nil {
				fs, pu = cryptText(p.Crypt), cryptUse(p.Crypt, pu)
			}
			if p.FSLabel != "" {
				fs = fmt.Sprintf("%s %q", fs, p.FSLabel)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\t\t\t\t\t\t%s\n", p.Name, units.FormatSize(p.SizeBytes), dash(fs), dash(pu))
		}
	}
	if len(h.Disks) == 0 {
		fmt.Fprintln(tw, "(no disks found)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return stacksTable(w, h)
}

// stacksTable lists the md arrays and the LVM volume groups with their
// LVs, after the disks, when there are any.
func stacksTable(w io.Writer, h *hwinfo.Host) error {
	if len(h.Arrays) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ARRAY\tNAME\tLEVEL\tSIZE\tSTATE\tMEMBERS\tUSE")
		for i := range h.Arrays {
			a := &h.Arrays[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, dash(a.ArrayName), dash(a.Level), units.FormatSize(a.SizeBytes),
				a.StateText(), dash(arrayMembers(a)), dash(stackCell(a.FSType, a.Mounts, a.Swap, a.Crypt, a.Holders)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(h.VolumeGroups) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "VG / LV\tSIZE\tFREE / TYPE\tDEVICE\tON\tUSE")
		for i := range h.VolumeGroups {
			vg := &h.VolumeGroups[i]
			size, free := units.FormatSize(vg.SizeBytes), units.FormatSize(vg.FreeBytes)+" free"
			if vg.Source != "metadata" {
				size, free = "?", "? free" // only the active LVs are known
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t%s\t%s\n", vg.Name, size, free, dash(vgPVs(vg)), dash(vgNote(vg)))
			for _, lv := range vg.LVs {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", lv.Name, units.FormatSize(lv.SizeBytes), dash(lvType(lv)), dash(lv.Device),
					dash(strings.Join(lv.PVs, ", ")), dash(stackCell(lv.FSType, lv.Mounts, lv.Swap, lv.Crypt, lv.Holders)))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(h.Caches) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "CACHED VOLUME\tKIND\tMODE\tSIZE\tCACHE\tORIGIN\tCACHE DEVICE\tDIRTY\tHITS (READ/WRITE)\tUSE")
		for i := range h.Caches {
			c := &h.Caches[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cacheName(c), c.Kind, cacheMode(c), units.FormatSize(c.SizeBytes),
				cacheSize(c), dash(strings.Join(c.OriginDevices, ", ")), dash(strings.Join(c.CacheDevices, ", ")),
				cacheDirty(c), cacheHits(c), dash(stackUse(c.FSType, c.Mounts, false)))
		}
		return tw.Flush()
	}
	return nil
}

// cacheName is a cached volume's device with what people call it.
func cacheName(c *hwinfo.CachedVolume) string {
	if c.Name != "" && c.Name != c.Device {
		return c.Name + " (" + c.Device + ")"
	}
	return c.Device
}

// cacheMode is the mode with what is not normal about the cache, and
// bcache's sequential cutoff, which passes large sequential I/O by.
func cacheMode(c *hwinfo.CachedVolume) string {
	s := dash(c.Mode)
	if c.State != "" {
		s += " [" + c.State + "]"
	}
	if n := c.SequentialCutoffBytes; n != nil && *n > 0 {
		s += ", sequential cutoff " + units.FormatSize(*n)
	}
	return s
}

func cacheSize(c *hwinfo.CachedVolume) string {
	if c.CacheBytes == 0 {
		return "?"
	}
	return units.FormatSize(c.CacheBytes)
}

func cacheDirty(c *hwinfo.CachedVolume) string {
	if c.Counters == nil {
		return "?"
	}
	return units.FormatSize(c.Counters.DirtyBytes)
}

// cacheHits says the kernel's hits and misses since the cache was set up:
// "484/744 read, 4/256 write (ios)".
func cacheHits(c *hwinfo.CachedVolume) string {
	k := c.Counters
	if k == nil {
		return "?"
	}
	s := fmt.Sprintf("%d/%d read", k.ReadHits+k.BypassHits, k.ReadHits+k.ReadMisses+k.BypassHits+k.BypassMisses)
	if k.CountsWrites {
		s += fmt.Sprintf(", %d/%d write", k.WriteHits, k.WriteHits+k.WriteMisses)
	}
	return s + " " + k.Unit
}

// arrayMembers lists the members by slot, with the role of any that is
// not an active one: "sda, sdb", "sdc1, sdd1 (spare)".
func arrayMembers(a *hwinfo.Array) string {
	var out []string
	for _, m := range a.Members {
		s := m.Device
		if m.Role != "active" {
			s += " (" + m.Role + ")"
		}
		out = append(out, s)
	}
	if a.MissingDevices > 0 {
		out = append(out, fmt.Sprintf("%d missing", a.MissingDevices))
	}
	return strings.Join(out, ", ")
}

// vgPVs lists the PVs with their sizes, missing ones said so.
func vgPVs(vg *hwinfo.VolumeGroup) string {
	var out []string
	for _, p := range vg.PVs {
		switch {
		case p.Missing && p.Device == "":
			out = append(out, "missing PV "+p.UUID)
		case p.SizeBytes > 0:
			out = append(out, fmt.Sprintf("%s (%s)", p.Device, units.FormatSize(p.SizeBytes)))
		default:
			out = append(out, p.Device)
		}
	}
	return strings.Join(out, ", ")
}

func vgNote(vg *hwinfo.VolumeGroup) string {
	var out []string
	if vg.MissingPVs > 0 {
		out = append(out, fmt.Sprintf("%d PV missing", vg.MissingPVs))
	}
	if vg.Source != "metadata" {
		out = append(out, "PVs not readable: active LVs only")
	}
	return strings.Join(out, "; ")
}

func lvType(lv hwinfo.LogicalVolume) string {
	if lv.Stripes > 1 {
		return fmt.Sprintf("%s (%d stripes)", lv.Type, lv.Stripes)
	}
	return lv.Type
}

// stackCell is an array's or logical volume's use: its LUKS volume and
// what the mapping holds, or its file system and mounts.
func stackCell(fs string, mounts []hwinfo.Mount, swap bool, c *hwinfo.Crypt, holders []hwinfo.Holder) string {
	if c != nil {
		return cryptAndUse(c, use(mounts, swap, holders))
	}
	return stackUse(fs, mounts, swap)
}

func stackUse(fs string, mounts []hwinfo.Mount, swap bool) string {
	parts := []string{fs}
	for _, m := range mounts {
		parts = append(parts, m.Point)
	}
	if swap && fs != "swap" {
		parts = append(parts, "[swap]")
	}
	return join(parts...)
}

func inventoryMarkdown(w io.Writer, h *hwinfo.Host) error {
	var b strings.Builder
	b.WriteString("## Environment\n\n")
	b.WriteString("| | |\n|---|---|\n")
	for _, r := range [][2]string{
		{"Host", h.Hostname},
		{"Board", join(h.Board.Vendor, h.Board.Model)},
		{"System", join(h.System.Vendor, h.System.Product)},
		{"CPU", cpuLine(h)},
		{"Memory", memLine(h)},
		{"OS", osLine(h)},
		{"Kernel", h.Kernel},
		{"Hypervisor", virtLine(h)},
		{"BIOS", biosLine(h)},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], mdCell(r[1]))
	}
	b.WriteString("\n| Disk | Model | Size | Type | Transport | Firmware | Virtual | Use |\n|---|---|---|---|---|---|---|---|\n")
	for i := range h.Disks {
		d := &h.Disks[i]
		virtual := "no"
		switch {
		case d.Virtual && d.VirtualBy != "":
			virtual = "yes (" + d.VirtualBy + ")"
		case d.Virtual:
			virtual = "yes"
		}
		var uses []string
		if d.System {
			uses = append(uses, "**system**")
		}
		du := use(d.Mounts, d.Swap, d.Holders)
		if d.Crypt != nil {
			du = cryptAndUse(d.Crypt, du)
		}
		if du != "" {
			uses = append(uses, du)
		}
		for _, p := range d.Partitions {
			pu := use(p.Mounts, p.Swap, p.Holders)
			if p.Crypt != nil {
				pu = p.Name + ": " + cryptAndUse(p.Crypt, pu)
			}
			if pu != "" {
				uses = append(uses, pu)
			}
		}
		u := strings.Join(uses, "; ")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", d.Name, mdCell(diskModel(d)), diskSize(d.SizeBytes),
			diskType(d), mdCell(d.Transport), mdCell(d.Firmware), virtual, mdCell(u))
	}
	if len(h.Arrays) > 0 {
		b.WriteString("\n| Array | Level | Size | State | Members | Use |\n|---|---|---|---|---|---|\n")
		for i := range h.Arrays {
			a := &h.Arrays[i]
			name := a.Name
			if a.ArrayName != "" {
				name += " (" + a.ArrayName + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(name), mdCell(a.Level), diskSize(a.SizeBytes),
				mdCell(a.StateText()), mdCell(arrayMembers(a)), mdCell(stackCell(a.FSType, a.Mounts, a.Swap, a.Crypt, a.Holders)))
		}
	}
	if len(h.VolumeGroups) > 0 {
		b.WriteString("\n| Volume group | Size | Free | Physical volumes | Logical volumes |\n|---|---|---|---|---|\n")
		for i := range h.VolumeGroups {
			vg := &h.VolumeGroups[i]
			size, free := diskSize(vg.SizeBytes), units.FormatSize(vg.FreeBytes)
			if vg.Source != "metadata" {
				size, free = "unknown", "unknown"
			}
			var lvs []string
			for _, lv := range vg.LVs {
				s := fmt.Sprintf("%s %s %s", lv.Name, units.FormatSize(lv.SizeBytes), lvType(lv))
				if u := stackCell(lv.FSType, lv.Mounts, lv.Swap, lv.Crypt, lv.Holders); u != "" {
					s += " (" + u + ")"
				}
				lvs = append(lvs, strings.TrimSpace(s))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(vg.Name), size, free, mdCell(vgPVs(vg)), mdCell(strings.Join(lvs, "; ")))
		}
	}
	if len(h.Caches) > 0 {
		b.WriteString("\n| Cached volume | Kind | Mode | Size | Cache | Origin | Cache device | Dirty | Hits | Use |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for i := range h.Caches {
			c := &h.Caches[i]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(cacheName(c)), mdCell(c.Kind), mdCell(cacheMode(c)),
				diskSize(c.SizeBytes), cacheSize(c), mdCell(strings.Join(c.OriginDevices, ", ")),
				mdCell(strings.Join(c.CacheDevices, ", ")), cacheDirty(c), mdCell(cacheHits(c)), mdCell(stackUse(c.FSType, c.Mounts, false)))
		}
	}
	if len(h.Warnings) > 0 {
		b.WriteString("\nNot read:\n\n")
		for _, wn := range h.Warnings {
			fmt.Fprintf(&b, "- %s\n", wn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
