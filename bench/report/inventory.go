package report

import (
	"encoding/json"
	"fmt"
	"io"
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
		if d.FSType != "" {
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
			fs := p.FSType
			if p.FSLabel != "" {
				fs = fmt.Sprintf("%s %q", fs, p.FSLabel)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\t\t\t\t\t\t%s\n", p.Name, units.FormatSize(p.SizeBytes), dash(fs), dash(use(p.Mounts, p.Swap, p.Holders)))
		}
	}
	if len(h.Disks) == 0 {
		fmt.Fprintln(tw, "(no disks found)")
	}
	return tw.Flush()
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
		if du := use(d.Mounts, d.Swap, d.Holders); du != "" {
			uses = append(uses, du)
		}
		for _, p := range d.Partitions {
			if pu := use(p.Mounts, p.Swap, p.Holders); pu != "" {
				uses = append(uses, pu)
			}
		}
		u := strings.Join(uses, "; ")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", d.Name, mdCell(diskModel(d)), diskSize(d.SizeBytes),
			diskType(d), mdCell(d.Transport), mdCell(d.Firmware), virtual, mdCell(u))
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
