package hwinfo

import (
	"fmt"
	"os"
	"strings"

	"github.com/diskprep/diskprep/internal/mountinfo"
)

// systemMounts are the mount points whose disk must never be prepared.
var systemMounts = map[string]bool{
	"/": true, "/boot": true, "/boot/efi": true, "/usr": true, "/var": true,
}

// IsSystemMount says whether point is one of the mount points the running
// system stands on (/, /boot, /boot/efi, /usr, /var): its disk is the
// system's, never prepared or released.
func IsSystemMount(point string) bool { return systemMounts[point] }

// readMountinfo indexes /proc/self/mountinfo by the "major:minor" of the
// mounted device (proc(5)): that matches a device however its source is
// spelled (/dev/mapper/cl-root, /dev/dm-0, a by-uuid path).
func (r *reader) readMountinfo() map[string][]Mount {
	idx := map[string][]Mount{}
	s, ok := r.readString("/proc/self/mountinfo")
	if !ok {
		r.warn("mounts unknown: %s not readable", r.rel("/proc/self/mountinfo"))
		return idx
	}
	entries, bad := ParseMountinfo(s)
	for _, e := range entries {
		idx[e.MajMin] = append(idx[e.MajMin], Mount{Point: e.Point, FSType: e.FSType, Options: e.MountOptions, Source: e.Source})
	}
	if bad > 0 {
		r.warn("%s: %d malformed line(s) ignored", r.rel("/proc/self/mountinfo"), bad)
	}
	return idx
}

// MountEntry is one line of /proc/self/mountinfo (proc(5)), unescaped.
type MountEntry = mountinfo.Entry

// ParseMountinfo parses the content of a mountinfo file. Malformed lines are
// skipped and counted in bad. It is internal/mountinfo's parser, the one
// reading of the format that disk, bench and the test helpers share.
func ParseMountinfo(data string) (entries []MountEntry, bad int) { return mountinfo.Parse(data) }

// UnescapeOctal undoes the \040-style escapes of mountinfo, mounts and swaps.
func UnescapeOctal(s string) string { return mountinfo.Unescape(s) }

// readSwaps returns the kernel names of block devices in active swap.
// Swap files are not devices and are left out.
func (r *reader) readSwaps() map[string]bool {
	set := map[string]bool{}
	s, ok := r.readString("/proc/swaps")
	if !ok {
		return set
	}
	var dmByName map[string]string
	for _, sw := range ParseSwaps(s) {
		if sw.Type != "partition" {
			continue
		}
		dev := sw.Path
		name, ok := strings.CutPrefix(dev, "/dev/")
		if !ok {
			continue
		}
		if mapped, ok := strings.CutPrefix(name, "mapper/"); ok {
			if dmByName == nil {
				dmByName = r.dmNames()
			}
			if k := dmByName[mapped]; k != "" {
				set[k] = true
			}
			continue
		}
		if strings.Contains(name, "/") {
			// /dev/disk/by-uuid/... or /dev/vg/lv: follow the link if the
			// tree has it.
			if target, err := os.Readlink(r.path(dev)); err == nil {
				name = target[strings.LastIndex(target, "/")+1:]
			}
		}
		set[name] = true
	}
	return set
}

// dmNames maps device-mapper names (cl-root) to kernel names (dm-0).
func (r *reader) dmNames() map[string]string {
	m := map[string]string{}
	entries, _ := os.ReadDir(r.path("/sys/block"))
	for _, e := range entries {
		if n, ok := r.readString("/sys/block/" + e.Name() + "/dm/name"); ok && n != "" {
			m[n] = e.Name()
		}
	}
	return m
}

// readHolders walks sys/.../holders: the dm, md and bcache devices stacked
// on a disk or partition, and what is stacked on those in turn.
func (r *reader) readHolders(sys string, st *blockState, depth int) []Holder {
	if depth > 8 {
		return nil
	}
	entries, err := os.ReadDir(r.path(sys + "/holders"))
	if err != nil {
		return nil
	}
	var hs []Holder
	for _, e := range entries {
		name := e.Name()
		hsys := "/sys/block/" + name
		h := Holder{Name: name, Kind: "other"}
		uuid, _ := r.readString(hsys + "/dm/uuid")
		h.DMName, _ = r.readString(hsys + "/dm/name")
		switch {
		case strings.HasPrefix(uuid, "LVM-"):
			h.Kind = "lvm"
		case strings.HasPrefix(uuid, "CRYPT-"):
			h.Kind = "crypt"
		case strings.HasPrefix(uuid, "mpath-"):
			h.Kind = "multipath"
		case strings.HasPrefix(name, "md"):
			h.Kind = "md"
		case strings.HasPrefix(name, "dm-"):
			h.Kind = "dm"
		case strings.HasPrefix(name, "bcache"):
			h.Kind = "bcache"
		}
		majmin, _ := r.readString(hsys + "/dev")
		if h.Kind == "md" {
			// The array's own name ("root", or "host:root") is only in udev.
			u := r.udevData(majmin)
			h.DMName = firstNonEmpty(u["MD_DEVNAME"], u["MD_NAME"])
		}
		h.Mounts = st.mounts[majmin]
		h.Swap = st.swaps[name]
		h.Holders = r.readHolders(hsys, st, depth+1)
		hs = append(hs, h)
	}
	return hs
}

// holderLabel is "dm-0 (cl-root)", or "md127".
func holderLabel(h Holder) string {
	if h.DMName != "" {
		return h.Name + " (" + h.DMName + ")"
	}
	return h.Name
}

// stackedUse adds the mounts of holders to a device's own, marked with the
// chain they come through, and sets swap when any holder is swap.
func stackedUse(mounts *[]Mount, swap *bool, hs []Holder, via string) {
	for _, h := range hs {
		chain := holderLabel(h)
		if via != "" {
			chain = via + " -> " + chain
		}
		for _, m := range h.Mounts {
			m.Via = chain
			*mounts = append(*mounts, m)
		}
		if h.Swap {
			*swap = true
		}
		stackedUse(mounts, swap, h.Holders, chain)
	}
}

// swapChains lists the holder chains under hs that are active swap.
func swapChains(hs []Holder, via string) []string {
	var out []string
	for _, h := range hs {
		chain := holderLabel(h)
		if via != "" {
			chain = via + " -> " + chain
		}
		if h.Swap {
			out = append(out, chain)
		}
		out = append(out, swapChains(h.Holders, chain)...)
	}
	return out
}

// markSystem sets System when the disk, a partition, or anything stacked on
// them holds a system mount point or active swap.
func markSystem(d *Disk) {
	add := func(dev string, mounts []Mount, directSwap bool, hs []Holder) {
		for _, m := range mounts {
			if systemMounts[m.Point] {
				d.SystemReasons = append(d.SystemReasons, reason(m.Point, dev, m.Via))
			}
		}
		if directSwap {
			d.SystemReasons = append(d.SystemReasons, reason("swap", dev, ""))
		}
		for _, via := range swapChains(hs, "") {
			d.SystemReasons = append(d.SystemReasons, reason("swap", dev, via))
		}
	}
	add(d.Name, d.Mounts, directSwapOf(d.Swap, d.Holders), d.Holders)
	for _, p := range d.Partitions {
		add(p.Name, p.Mounts, directSwapOf(p.Swap, p.Holders), p.Holders)
	}
	d.System = len(d.SystemReasons) > 0
}

// directSwapOf tells whether a device is itself swap, given that its Swap
// flag also covers holders.
func directSwapOf(swap bool, hs []Holder) bool {
	return swap && len(swapChains(hs, "")) == 0
}

func reason(what, dev, via string) string {
	if via == "" {
		return fmt.Sprintf("%s on %s", what, dev)
	}
	return fmt.Sprintf("%s on %s via %s", what, dev, via)
}
