package hwinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// systemMounts are the mount points whose disk must never be prepared.
var systemMounts = map[string]bool{
	"/": true, "/boot": true, "/boot/efi": true, "/usr": true, "/var": true,
}

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
type MountEntry struct {
	MajMin       string // "8:17": the mounted device, however its source is spelled
	Point        string
	FSType       string
	Source       string
	MountOptions string // per-mount options (field 6)
	SuperOptions string // superblock options (after the fs type and source)
}

// ParseMountinfo parses the content of a mountinfo file. Malformed lines are
// skipped and counted in bad. disk and bench read the live mount table with
// it too, so there is one reading of the format.
func ParseMountinfo(data string) (entries []MountEntry, bad int) {
	for _, line := range strings.Split(data, "\n") {
		if line == "" {
			continue
		}
		e, ok := parseMountinfoLine(line)
		if !ok {
			bad++
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad
}

// parseMountinfoLine reads "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
// Fields are separated by single spaces: the kernel escapes only space, tab,
// newline and backslash in paths, so other bytes unicode calls space (\v,
// \r, U+00A0) belong to the path and must not split it.
func parseMountinfoLine(line string) (MountEntry, bool) {
	f := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+2 >= len(f) || !isMajMin(f[2]) || f[4] == "" || f[sep+1] == "" || f[sep+2] == "" {
		return MountEntry{}, false
	}
	e := MountEntry{
		MajMin:       f[2],
		Point:        UnescapeOctal(f[4]),
		FSType:       f[sep+1],
		Source:       UnescapeOctal(f[sep+2]),
		MountOptions: f[5],
	}
	if sep+3 < len(f) {
		e.SuperOptions = f[sep+3]
	}
	return e, true
}

// isMajMin reports whether s is a "major:minor" device number.
func isMajMin(s string) bool {
	major, minor, ok := strings.Cut(s, ":")
	_, err1 := strconv.ParseUint(major, 10, 32)
	_, err2 := strconv.ParseUint(minor, 10, 32)
	return ok && err1 == nil && err2 == nil
}

// UnescapeOctal undoes the \040-style escapes of mountinfo, mounts and swaps.
func UnescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readSwaps returns the kernel names of block devices in active swap.
// Swap files are not devices and are left out.
func (r *reader) readSwaps() map[string]bool {
	set := map[string]bool{}
	s, ok := r.readString("/proc/swaps")
	if !ok {
		return set
	}
	var dmByName map[string]string
	for i, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 2 || f[1] != "partition" {
			continue
		}
		dev := UnescapeOctal(f[0])
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

// readHolders walks sys/.../holders: the dm and md devices stacked on a disk
// or partition, and what is stacked on those in turn.
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
