package hosttest

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// The storage stacks of the fake machine: md arrays (mdadm) and LVM
// (pvcreate, vgcreate, lvcreate, pvs, lvs and their removal), swap
// (mkswap, swapon, swapoff), blkdiscard and wipefs. Arrays and logical
// volumes are block devices of their own (md127 down, dm-0 up) with their
// own bytes, held on their members as the kernel shows it in sysfs, with
// the /dev/md/NAME and /dev/VG/LV links udev makes.

// stackDev is what the fake knows of an array or logical volume.
type stackDev struct {
	kind    string // md or lvm
	name    string // md: the array's name; lvm: VG-LV as device-mapper spells it
	vg, lv  string
	level   int
	uuid    string
	members []*blockDev
	// An LVM volume's segment type ("" is linear), the cache volume it
	// uses and its cache mode; hidden: a sub-volume lvs shows only with
	// -a, in brackets (cache.go).
	segtype, pool, mode string
	hidden              bool
	// segs are where a volume's extents lie on its physical volumes, in
	// the order LVM allocates them (lvs prints one row each); a cached
	// volume has none, its sub-volumes have them.
	segs []extentSeg
	// dmOnly is a device-mapper layer LVM adds under a volume without a
	// volume of its own in lvs: a dm-cache cache volume's -cdata and
	// -cmeta.
	dmOnly bool
	// corig and cvol are a cached volume's origin and cache sub-volumes
	// (kernel names); origin is the first's name in lvs ("[data_corig]").
	corig, cvol, origin string
}

// extentSeg is a run of extents of a volume on one physical volume (its
// node, as pvs names it).
type extentSeg struct {
	pv           string
	start, count uint64
}

type lvmPV struct{ vg string }

// inactiveLV is a logical volume made inactive (vgchange or lvchange
// --activate n, or a cache volume split off): lvs still lists it, from
// the metadata on its PVs (while LVM finds one of them), but it has no
// device-mapper device, no /dev/VG/LV and holds nothing in sysfs. dev
// keeps its bytes for --activate y.
type inactiveLV struct {
	st  *stackDev
	dev *blockDev
}

func (h *Host) stackState() {
	if h.stacks == nil {
		h.stacks = map[string]*stackDev{}
		h.pvs = map[string]*lvmPV{}
		h.swaps = map[string]bool{}
		h.inactive = map[string]*inactiveLV{}
		h.nextMD = 127
	}
}

// stackReadOnly are the stack programs that change nothing.
func stackReadOnly(name string, args []string) bool {
	switch name {
	case "pvs", "lvs", "vgs", "make-bcache", "dumpe2fs":
		return name != "make-bcache" || len(args) == 1 && args[0] == "-h"
	case "xfs_growfs":
		return slices.Contains(args, "-n")
	case "mdadm":
		return len(args) > 0 && (args[0] == "--version" || args[0] == "--detail")
	case "cryptsetup":
		return len(args) > 0 && (args[0] == "--version" || args[0] == "luksDump" || args[0] == "status")
	case "lvm":
		return len(args) > 0 && args[0] == "version"
	case "systemd-cryptenroll":
		return len(args) == 1 && args[0] == "--version"
	case "modprobe":
		return slices.Contains(args, "--dry-run") || slices.Contains(args, "-n")
	}
	return false
}

// runStack runs a stack program; ok is false for a program it does not know.
func (h *Host) runStack(name string, args []string, fail func(int, string) ([]byte, error)) (out []byte, err error, ok bool) {
	h.stackState()
	switch name {
	case "mdadm":
		out, err = h.mdadm(args, fail)
	case "cryptsetup":
		out, err = h.cryptsetup(args, fail)
	case "systemd-cryptenroll":
		out, err = h.cryptenroll(args, fail)
	case "lvm":
		out = []byte("  LVM version:     2.03.16(2) (2022-05-18)\n  Library version: 1.02.185 (2022-05-18)\n")
	case "pvs":
		if f, _ := flagValue(args, "-o"); f == "pv_name,pv_used,pv_free" {
			out = h.pvsSpace()
		} else {
			out = h.pvsOut()
		}
	case "lvs":
		if len(args) > 0 && args[0] == "-a" {
			out = h.lvsAll()
		} else {
			out = h.lvsOut()
		}
	case "lvconvert":
		out, err = h.lvconvert(args, fail)
	case "lvchange":
		out, err = h.lvchange(args, fail)
	case "make-bcache":
		out, err = h.makeBcache(args, fail)
	case "modprobe":
		out, err = h.modprobe(args, fail)
	case "pvcreate":
		out, err = h.pvcreate(args, fail)
	case "vgcreate":
		out, err = h.vgcreate(args, fail)
	case "lvcreate":
		out, err = h.lvcreate(args, fail)
	case "vgextend":
		out, err = h.vgextend(args, fail)
	case "lvextend":
		out, err = h.lvextend(args, fail)
	case "lvreduce":
		out, err = h.lvreduce(args, fail)
	case "e2fsck", "resize2fs":
		out, err = h.extTool(name, args, fail)
	case "xfs_growfs":
		out, err = h.xfsGrowfs(args, fail)
	case "dumpe2fs":
		out, err = h.dumpe2fs(args, fail)
	case "vgchange", "lvremove", "vgremove", "pvremove":
		out, err = h.lvmRemove(name, args, fail)
	case "mkswap":
		if len(args) == 1 && args[0] == "-V" {
			return []byte("mkswap from util-linux 2.38.1\n"), nil, true
		}
		out, err = h.mkswap(args, fail)
	case "swapon", "swapoff":
		out, err = h.swap(name == "swapon", args, fail)
	case "blkdiscard":
		if _, err := h.deviceAt(args[len(args)-1]); err != nil {
			out, err = fail(1, err.Error())
			return out, err, true
		}
	case "wipefs":
		out, err = h.wipefs(args, fail)
	default:
		return nil, nil, false
	}
	return out, err, true
}

func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// devArgs are the positional arguments after the flags (mdadm's members, a VG's
// PVs): those starting with /dev/ or, after the first, any bare word.
func devArgs(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "/dev/") {
			out = append(out, a)
		}
	}
	return out
}

func (h *Host) mdadm(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	if len(args) == 0 {
		return fail(2, "mdadm: no mode")
	}
	switch args[0] {
	case "--version":
		return []byte("mdadm - v4.2 - 2021-12-30 - Debian 4.2-5\n"), nil
	case "--create":
		devs := devArgs(args)
		if len(devs) < 2 {
			return fail(2, "mdadm: no devices")
		}
		link, members := devs[0], devs[1:]
		name, _ := flagValue(args, "--name")
		uuid, _ := flagValue(args, "--uuid")
		lvl, _ := flagValue(args, "--level")
		level, _ := strconv.Atoi(lvl)
		if n, _ := flagValue(args, "--raid-devices"); n != strconv.Itoa(len(members)) {
			return fail(2, "mdadm: --raid-devices does not match the devices given")
		}
		if _, _, err := h.fs.resolve(link, true); err == nil {
			return fail(1, "mdadm: "+link+" already exists")
		}
		var bs []*blockDev
		var smallest uint64
		for i, m := range members {
			b, err := h.deviceAt(m)
			if err != nil {
				return fail(1, err.Error())
			}
			if b.claimed || b.exclusive || h.mountedDev(b) {
				return fail(1, "mdadm: cannot open "+m+": Device or resource busy")
			}
			bs = append(bs, b)
			if i == 0 || b.size < smallest {
				smallest = b.size
			}
		}
		u, err := hex.DecodeString(strings.NewReplacer(":", "", "-", "").Replace(uuid))
		if err != nil || len(u) != 16 {
			return fail(2, "mdadm: bad uuid "+uuid)
		}
		data := smallest - 2<<20 // superblock and bitmap room
		size := data
		switch level {
		case 0:
			size = data * uint64(len(bs))
		case 10:
			size = data * uint64(len(bs)) / 2
		case 5:
			size = data * uint64(len(bs)-1)
		case 6:
			size = data * uint64(len(bs)-2)
		}
		for _, b := range bs {
			b.store.writeAt(mdSuperblock(name, u), b.offset+4096)
		}
		md := fmt.Sprintf("md%d", h.nextMD)
		h.nextMD--
		dev := &blockDev{name: md, major: 9, minor: uint32(h.nextMD + 1), size: size, sector: bs[0].sector, store: newSparse(), parts: map[int]*blockDev{}}
		h.addDev(dev)
		sys := h.sysDir(dev)
		h.fs.put(sys+"/md/level", &node{mode: 0o444, data: fmt.Appendf(nil, "raid%d\n", level)})
		h.fs.put(sys+"/md/uuid", &node{mode: 0o444, data: []byte(formatUUID(u) + "\n")})
		h.fs.put(sys+"/md/array_state", &node{mode: 0o444, data: []byte("clean\n")})
		st := &stackDev{kind: "md", name: name, level: level, uuid: formatUUID(u), members: bs}
		h.stacks[md] = st
		for _, b := range bs {
			h.fs.mkdirAll(sys + "/slaves/" + b.name)
			h.fs.mkdirAll(h.sysDir(b) + "/holders/" + md)
		}
		h.fs.mkdirAll("/dev/md")
		h.fs.put(link, &node{mode: fs.ModeSymlink | 0o777, link: "/dev/" + md})
		return nil, nil
	case "--stop":
		devs := devArgs(args)
		if len(devs) != 1 {
			return fail(2, "mdadm: --stop takes one array")
		}
		b, err := h.deviceAt(devs[0])
		if err != nil {
			return fail(1, err.Error())
		}
		st := h.stacks[b.name]
		if st == nil || st.kind != "md" {
			return fail(1, "mdadm: "+devs[0]+" is not an md array")
		}
		if h.mountedDev(b) || h.holdersOf(b) {
			return fail(1, "mdadm: Cannot get exclusive access to "+devs[0]+": Perhaps a running process, mounted filesystem or active volume group?")
		}
		h.dropStack(b, st)
		h.fs.removeAll("/dev/md/" + st.name)
		return nil, nil
	case "--zero-superblock":
		for _, m := range devArgs(args) {
			b, err := h.deviceAt(m)
			if err != nil {
				return fail(1, err.Error())
			}
			if h.holdersOf(b) {
				return fail(2, "mdadm: Couldn't open "+m+" for write - not zeroing")
			}
			b.store.writeAt(make([]byte, 4096), b.offset+4096)
		}
		return nil, nil
	case "--manage":
		return h.mdManage(args[1:], fail)
	}
	return fail(2, "mdadm: mode "+args[0]+" is not faked")
}

// mdManage runs mdadm --manage MD --add PART (the member joins the array,
// its superblock written) and --remove failed (the fake has no failed
// members: nothing to do).
func (h *Host) mdManage(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	if len(args) != 3 {
		return fail(2, "mdadm --manage: want MD --add|--remove DEV")
	}
	b, err := h.deviceAt(args[0])
	if err != nil {
		return fail(1, err.Error())
	}
	st := h.stacks[b.name]
	if st == nil || st.kind != "md" {
		return fail(1, "mdadm: "+args[0]+" does not appear to be an md device")
	}
	switch {
	case args[1] == "--remove" && args[2] == "failed":
		return nil, nil
	case args[1] == "--add":
		m, err := h.deviceAt(args[2])
		if err != nil {
			return fail(1, err.Error())
		}
		if m.claimed || m.exclusive || h.mountedDev(m) || h.holdersOf(m) {
			return fail(1, "mdadm: Cannot open "+args[2]+": Device or resource busy")
		}
		u, _ := hex.DecodeString(strings.NewReplacer(":", "", "-", "").Replace(st.uuid))
		m.store.writeAt(mdSuperblock(st.name, u), m.offset+4096)
		st.members = append(st.members, m)
		h.fs.mkdirAll(h.sysDir(b) + "/slaves/" + m.name)
		h.fs.mkdirAll(h.sysDir(m) + "/holders/" + b.name)
		return []byte("mdadm: added " + args[2] + "\n"), nil
	}
	return fail(2, "mdadm --manage "+args[1]+" is not faked")
}

// holdersOf says whether a stack device is held on b.
func (h *Host) holdersOf(b *blockDev) bool {
	for _, st := range h.stacks {
		for _, m := range st.members {
			if m == b {
				return true
			}
		}
	}
	return false
}

func (h *Host) dropStack(b *blockDev, st *stackDev) {
	for _, m := range st.members {
		h.fs.removeAll(h.sysDir(m) + "/holders/" + b.name)
	}
	delete(h.stacks, b.name)
	h.dropDev(b)
}

// mdSuperblock is an md 1.2 superblock as the prober reads it.
func mdSuperblock(name string, uuid []byte) []byte {
	sb := make([]byte, 256)
	le := binary.LittleEndian
	le.PutUint32(sb[0:], 0xa92b4efc)
	le.PutUint32(sb[4:], 1)
	copy(sb[16:32], uuid)
	copy(sb[32:64], "fake:"+name)
	le.PutUint64(sb[144:], 4096>>9)
	return sb
}

func formatUUID(u []byte) string {
	x := hex.EncodeToString(u)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

func (h *Host) pvsOut() []byte {
	var b strings.Builder
	for _, l := range h.pvLines() {
		fmt.Fprintf(&b, "  %s|%s\n", l[0], l[1])
	}
	return []byte(b.String())
}

// pvsSpace is pvs -o pv_name,pv_used,pv_free in bytes, for the physical
// volumes in a group.
func (h *Host) pvsSpace() []byte {
	var b strings.Builder
	for _, n := range sortedKeys(h.pvs) {
		d, err := h.deviceAt(n)
		if h.pvs[n].vg == "" || !h.pvVisible(n) || err != nil {
			continue
		}
		free := h.freeExtents([]string{n})
		fmt.Fprintf(&b, "  %s|%d|%d\n", n, (pvExtents(d)-free)*fakeExtent, free*fakeExtent)
	}
	return []byte(b.String())
}

// pvVisible says whether LVM finds the physical volume at node: the device
// is there and its bytes still carry the label (wipefs, or a partition
// table wiped from under it, hide it; making the same partition again
// shows it again, as it would to pvs).
func (h *Host) pvVisible(node string) bool {
	d, err := h.deviceAt(node)
	return err == nil && contains(probeAll(&reader{d: d}, d.size), "LVM2_member")
}

// pvLines are pvs's rows (node, VG): the physical volumes LVM finds, and
// for a group some of whose PVs it no longer finds, one "[unknown]" row
// per missing PV, as pvs prints a group's missing members.
func (h *Host) pvLines() [][2]string {
	var names []string
	for n := range h.pvs {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for _, n := range names {
		if h.pvVisible(n) && h.pvs[n].vg != "" {
			seen[h.pvs[n].vg] = true
		}
	}
	var out, missing [][2]string
	for _, n := range names {
		vg := h.pvs[n].vg
		switch {
		case h.pvVisible(n):
			out = append(out, [2]string{n, vg})
		case vg != "" && seen[vg]:
			missing = append(missing, [2]string{"[unknown]", vg})
		}
	}
	return append(out, missing...)
}

func (h *Host) lvsOut() []byte {
	var names []string
	for n, st := range h.stacks {
		if st.kind == "lvm" && !st.hidden && !st.dmOnly {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return h.stacks[names[i]].name < h.stacks[names[j]].name })
	var b strings.Builder
	for _, n := range names {
		st := h.stacks[n]
		fmt.Fprintf(&b, "  %s|%s|%d\n", st.vg, st.lv, h.devs[n].size)
	}
	for _, k := range sortedKeys(h.inactive) {
		if in := h.inactive[k]; !in.st.hidden && h.vgKnown(in.st.vg) {
			fmt.Fprintf(&b, "  %s|%s|%d\n", in.st.vg, in.st.lv, in.dev.size)
		}
	}
	return []byte(b.String())
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (h *Host) pvcreate(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	devs := devArgs(args)
	if len(devs) != 1 {
		return fail(3, "pvcreate: one device, please")
	}
	b, err := h.deviceAt(devs[0])
	if err != nil {
		return fail(5, err.Error())
	}
	if b.claimed || h.mountedDev(b) || h.holdersOf(b) {
		return fail(5, "  Can't open "+devs[0]+" exclusively.  Mounted filesystem?")
	}
	if _, ok := h.pvs[devs[0]]; ok && h.pvVisible(devs[0]) {
		return fail(5, "  Can't initialize physical volume \""+devs[0]+"\" of volume group: already a PV")
	}
	if typ, _, _ := fsOf(&reader{d: b}, b.size); typ != "" && !contains(args, "--yes") {
		return fail(5, "WARNING: "+typ+" signature detected on "+devs[0]+". Wipe it? [y/n]: [n]\n  Aborted wiping of "+typ+".")
	}
	l := make([]byte, 512)
	copy(l, "LABELONE")
	binary.LittleEndian.PutUint64(l[8:], 1)
	binary.LittleEndian.PutUint32(l[20:], 32)
	copy(l[24:], "LVM2 001")
	copy(l[32:], fmt.Sprintf("FAKEPV%026d", len(h.pvs)+1))
	b.store.writeAt(l, b.offset+512)
	h.pvs[devs[0]] = &lvmPV{}
	return []byte("  Physical volume \"" + devs[0] + "\" successfully created.\n"), nil
}

func (h *Host) vgcreate(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	devs := devArgs(args)
	vg := ""
	for i, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "/dev/") && (i == 0 || !strings.HasPrefix(args[i-1], "--")) {
			vg = a
			break
		}
	}
	if vg == "" || len(devs) == 0 {
		return fail(3, "vgcreate: want a VG name and PVs")
	}
	for n, pv := range h.pvs {
		if pv.vg == vg && h.pvVisible(n) {
			return fail(5, "  A volume group called "+vg+" already exists.")
		}
	}
	if msg := h.joinGroup(vg, devs); msg != "" {
		return fail(5, msg)
	}
	return []byte("  Volume group \"" + vg + "\" successfully created\n"), nil
}

// joinGroup puts the physical volumes devs, each in no group, into vg;
// else it changes nothing and says why, as LVM does.
func (h *Host) joinGroup(vg string, devs []string) string {
	for _, d := range devs {
		pv, ok := h.pvs[d]
		if !ok || !h.pvVisible(d) {
			return "  " + d + " is not a physical volume"
		}
		if pv.vg != "" {
			return "  Physical volume '" + d + "' is already in volume group '" + pv.vg + "'"
		}
	}
	for _, d := range devs {
		h.pvs[d].vg = vg
	}
	return ""
}

// fakeExtent is the groups' extent size (vgcreate --physicalextentsize
// 4096k); a PV's extents start after 1 MiB of label and metadata.
const fakeExtent = 4 << 20

func pvExtents(b *blockDev) uint64 { return (b.size - 1<<20) / fakeExtent }

// groupPVs are the nodes of vg's physical volumes LVM finds, in the
// order it allocates from them.
func (h *Host) groupPVs(vg string) []string {
	var out []string
	for _, n := range sortedKeys(h.pvs) {
		if h.pvs[n].vg == vg && h.pvVisible(n) {
			out = append(out, n)
		}
	}
	return out
}

// usedExtents marks the extents of the physical volume at node that a
// volume has, active or not.
func (h *Host) usedExtents(node string, b *blockDev) []bool {
	used := make([]bool, pvExtents(b))
	mark := func(st *stackDev) {
		for _, sg := range st.segs {
			for i := sg.start; sg.pv == node && i < sg.start+sg.count && i < uint64(len(used)); i++ {
				used[i] = true
			}
		}
	}
	for _, st := range h.stacks {
		if st.kind == "lvm" {
			mark(st)
		}
	}
	for _, in := range h.inactive {
		mark(in.st)
	}
	return used
}

// allocate gives n extents from the physical volumes at nodes, the
// lowest free ones of the first PV first, as LVM's normal policy does;
// ok false when they have fewer free.
func (h *Host) allocate(nodes []string, n uint64) (segs []extentSeg, ok bool) {
	for _, node := range nodes {
		b, err := h.deviceAt(node)
		if err != nil {
			continue
		}
		used := h.usedExtents(node, b)
		for i := uint64(0); i < uint64(len(used)) && n > 0; i++ {
			if used[i] {
				continue
			}
			if k := len(segs) - 1; k >= 0 && segs[k].pv == node && segs[k].start+segs[k].count == i {
				segs[k].count++
			} else {
				segs = append(segs, extentSeg{pv: node, start: i, count: 1})
			}
			n--
		}
	}
	return segs, n == 0
}

// freeExtents counts the free extents on the physical volumes at nodes.
func (h *Host) freeExtents(nodes []string) uint64 {
	var free uint64
	for _, node := range nodes {
		if b, err := h.deviceAt(node); err == nil {
			for _, u := range h.usedExtents(node, b) {
				if !u {
					free++
				}
			}
		}
	}
	return free
}

// segMembers are the devices segs lie on, each once, in order.
func (h *Host) segMembers(segs []extentSeg) []*blockDev {
	var out []*blockDev
	seen := map[string]bool{}
	for _, sg := range segs {
		if b, err := h.deviceAt(sg.pv); err == nil && !seen[sg.pv] {
			seen[sg.pv] = true
			out = append(out, b)
		}
	}
	return out
}

func (h *Host) lvcreate(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	name, _ := flagValue(args, "--name")
	// lvcreate [options] VG [PV...]: the group is the first word that is
	// neither an option, an option's value nor a device.
	vg := ""
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			if !strings.Contains(args[i], "=") && args[i] != "--yes" {
				i++
			}
			continue
		}
		if !strings.HasPrefix(args[i], "/dev/") {
			vg = args[i]
			break
		}
	}
	nodes := h.groupPVs(vg)
	if len(nodes) == 0 {
		return fail(5, "  Volume group \""+vg+"\" not found")
	}
	if pvs := devArgs(args); len(pvs) > 0 {
		// On the physical volumes named only.
		for _, pv := range pvs {
			if _, err := h.deviceAt(pv); err != nil || h.pvs[pv] == nil || h.pvs[pv].vg != vg {
				return fail(5, "  Physical volume "+pv+" not in volume group "+vg)
			}
		}
		nodes = pvs
	}
	for _, st := range h.stacks {
		if st.kind == "lvm" && st.vg == vg && st.lv == name {
			return fail(5, "  Logical Volume \""+name+"\" already exists in volume group \""+vg+"\"")
		}
	}
	free := h.freeExtents(nodes)
	var extents uint64
	if s, ok := flagValue(args, "--size"); ok {
		n, err := strconv.ParseUint(strings.TrimSuffix(s, "b"), 10, 64)
		if err != nil {
			return fail(3, "lvcreate: bad size "+s)
		}
		extents = (n + fakeExtent - 1) / fakeExtent
	} else if e, _ := flagValue(args, "--extents"); e == "100%FREE" || e == "100%PVS" {
		extents = free
	}
	segs, ok := h.allocate(nodes, extents)
	if extents == 0 || !ok {
		return fail(5, "  Volume group \""+vg+"\" has insufficient free space")
	}
	members, size := h.segMembers(segs), extents*fakeExtent
	i := 0
	for ; h.devs[fmt.Sprintf("dm-%d", i)] != nil; i++ {
	}
	dm := fmt.Sprintf("dm-%d", i)
	dev := &blockDev{name: dm, major: 253, minor: uint32(i), size: size, sector: members[0].sector, store: newSparse(), parts: map[int]*blockDev{}}
	h.addDev(dev)
	dmName := strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(name, "-", "--")
	sys := h.sysDir(dev)
	h.fs.put(sys+"/dm/name", &node{mode: 0o444, data: []byte(dmName + "\n")})
	h.fs.put(sys+"/dm/uuid", &node{mode: 0o444, data: []byte("LVM-fake" + dmName + "\n")})
	h.stacks[dm] = &stackDev{kind: "lvm", name: dmName, vg: vg, lv: name, members: members, segs: segs}
	for _, m := range members {
		h.fs.mkdirAll(sys + "/slaves/" + m.name)
		h.fs.mkdirAll(h.sysDir(m) + "/holders/" + dm)
	}
	h.fs.mkdirAll("/dev/" + vg)
	h.fs.mkdirAll("/dev/mapper")
	h.fs.put("/dev/"+vg+"/"+name, &node{mode: fs.ModeSymlink | 0o777, link: "/dev/" + dm})
	h.fs.put("/dev/mapper/"+dmName, &node{mode: fs.ModeSymlink | 0o777, link: "/dev/" + dm})
	return []byte("  Logical volume \"" + name + "\" created.\n"), nil
}

// lvmRemove runs vgchange --activate n|y VG, lvremove -y VG/LV, vgremove
// VG and pvremove PV.
func (h *Host) lvmRemove(prog string, args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	target := args[len(args)-1]
	switch prog {
	case "vgchange", "lvremove":
		vg, lv, _ := strings.Cut(target, "/")
		if a, _ := flagValue(args, "--activate"); prog == "vgchange" && a == "y" {
			return h.vgActivate(vg, fail)
		}
		found := false
		for n, st := range h.stacks {
			if st.kind != "lvm" || st.vg != vg || lv != "" && st.lv != lv {
				continue
			}
			found = true
			b := h.devs[n]
			if h.mountedDev(b) || h.swaps[n] {
				return fail(5, "  Logical volume "+vg+"/"+st.lv+" in use.")
			}
		}
		if prog == "lvremove" {
			if in := h.inactive[target]; in != nil {
				// An inactive volume goes from the metadata only, with the
				// hidden sub-volumes and layers it is built on, down to
				// its physical volumes.
				delete(h.inactive, target)
				for gone := []*inactiveLV{in}; len(gone) > 0; {
					next := gone[0]
					gone = gone[1:]
					for k, o := range h.inactive {
						if slices.Contains(next.st.members, o.dev) {
							delete(h.inactive, k)
							gone = append(gone, o)
						}
					}
				}
				h.removedLVs = append(h.removedLVs, target)
				return nil, nil
			}
			if !found {
				return fail(5, "  Failed to find logical volume \""+target+"\"")
			}
		}
		if !found && prog == "vgchange" && !h.vgKnown(vg) {
			return fail(5, "  Volume group \""+vg+"\" not found")
		}
		for n, st := range h.stacks {
			if st.kind == "lvm" && st.vg == vg && (lv == "" || st.lv == lv) {
				b := h.devs[n]
				h.dropStack(b, st)
				h.fs.removeAll("/dev/" + vg + "/" + st.lv)
				h.fs.removeAll("/dev/mapper/" + st.name)
				if prog == "vgchange" {
					h.inactive[vg+"/"+st.lv] = &inactiveLV{st: st, dev: b}
				}
			}
		}
		if des, _ := h.fs.readDir("/dev/" + vg); len(des) == 0 {
			h.fs.removeAll("/dev/" + vg)
		}
		if prog == "lvremove" {
			h.removedLVs = append(h.removedLVs, vg+"/"+lv)
		}
	case "vgremove":
		for _, st := range h.stacks {
			if st.kind == "lvm" && st.vg == target {
				return fail(5, "  Volume group \""+target+"\" still contains logical volumes")
			}
		}
		for _, in := range h.inactive {
			if in.st.vg == target {
				return fail(5, "  Volume group \""+target+"\" still contains logical volumes")
			}
		}
		for _, l := range h.pvLines() {
			if l[0] == "[unknown]" && l[1] == target {
				return fail(5, "  Volume group \""+target+"\" has a missing physical volume: vgreduce --removemissing first")
			}
		}
		found := false
		for n, pv := range h.pvs {
			if pv.vg == target && h.pvVisible(n) {
				pv.vg, found = "", true
			}
		}
		if !found {
			return fail(5, "  Volume group \""+target+"\" not found")
		}
	case "pvremove":
		pv, ok := h.pvs[target]
		if !ok || !h.pvVisible(target) {
			return fail(5, "  No PV found on device "+target+".")
		}
		if pv.vg != "" {
			return fail(5, "  PV "+target+" is used by VG "+pv.vg)
		}
		b, err := h.deviceAt(target)
		if err != nil {
			return fail(5, err.Error())
		}
		b.store.writeAt(make([]byte, 512), b.offset+512)
		delete(h.pvs, target)
	}
	return nil, nil
}

// vgKnown says whether LVM finds the group vg on a physical volume.
func (h *Host) vgKnown(vg string) bool {
	for _, l := range h.pvLines() {
		if l[1] == vg && l[0] != "[unknown]" {
			return true
		}
	}
	return false
}

// vgActivate is vgchange --activate y VG: its inactive volumes get their
// device-mapper devices back, with their bytes. The fake brings back
// volumes on physical volumes only (not a cached volume, whose
// sub-volumes it would have to rebuild first).
func (h *Host) vgActivate(vg string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	if !h.vgKnown(vg) {
		return fail(5, "  Volume group \""+vg+"\" not found")
	}
	for _, l := range h.pvLines() {
		if l[0] == "[unknown]" && l[1] == vg {
			return fail(5, "  Cannot activate "+vg+": a physical volume is missing (activation/partial)")
		}
	}
	var keys []string
	for k, in := range h.inactive {
		if in.st.vg == vg {
			for _, m := range in.st.members {
				if st := h.stacks[m.name]; st != nil && st.kind == "crypt" {
					continue // an encrypted member, open
				}
				if h.stacks[m.name] != nil || m.major == 253 {
					return fail(5, "  the fake does not reactivate "+k+": it is built on other volumes")
				}
			}
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, m := range h.inactive[k].st.members {
			if h.devs[m.name] == nil {
				return fail(5, "  Cannot activate "+k+": /dev/"+m.name+" is missing")
			}
		}
	}
	for _, k := range keys {
		h.activate(k)
	}
	return nil, nil
}

// activate gives the inactive volume k ("VG/LV") its device-mapper
// device back, with its bytes.
func (h *Host) activate(k string) {
	in := h.inactive[k]
	delete(h.inactive, k)
	var members []*blockDev // as they are now: a partition made again is another node
	for _, m := range in.st.members {
		members = append(members, h.devs[m.name])
	}
	dm, st := h.newDM(in.st.vg, in.st.lv, in.dev.size, members, in.st.hidden)
	h.devs[dm].store = in.dev.store
	st.segtype, st.pool, st.mode, st.segs = in.st.segtype, in.st.pool, in.st.mode, in.st.segs
}

// deactivate drops the device-mapper device of the volume on dm, which
// lvs still lists from the metadata.
func (h *Host) deactivate(dm string, st *stackDev) {
	b := h.devs[dm]
	h.dropStack(b, st)
	h.fs.removeAll("/dev/" + st.vg + "/" + st.lv)
	h.fs.removeAll("/dev/mapper/" + st.name)
	h.inactive[st.vg+"/"+st.lv] = &inactiveLV{st: st, dev: b}
	if des, _ := h.fs.readDir("/dev/" + st.vg); len(des) == 0 {
		h.fs.removeAll("/dev/" + st.vg)
	}
}

func (h *Host) mkswap(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	label, _ := flagValue(args, "-L")
	uuid, _ := flagValue(args, "-U")
	d, err := h.deviceAt(args[len(args)-1])
	if err != nil {
		return fail(1, err.Error())
	}
	if h.mountedDev(d) || d.claimed || h.swaps[d.name] {
		return fail(1, "mkswap: "+d.name+" is in use")
	}
	u, err := hex.DecodeString(strings.ReplaceAll(uuid, "-", ""))
	if err != nil || len(u) != 16 {
		return fail(1, "mkswap: bad uuid "+uuid)
	}
	page := make([]byte, 4096)
	le := binary.LittleEndian
	le.PutUint32(page[1024:], 1)                     // version
	le.PutUint32(page[1028:], uint32(d.size/4096-1)) // last page
	copy(page[1036:1052], u)                         // uuid
	copy(page[1052:1068], label)                     // label
	copy(page[4086:], "SWAPSPACE2")                  // magic
	d.store.writeAt(page, d.offset)
	return nil, nil
}

func (h *Host) swap(on bool, args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	d, err := h.deviceAt(args[len(args)-1])
	if err != nil {
		return fail(1, err.Error())
	}
	switch {
	case on && h.swaps[d.name]:
		return fail(255, "swapon: "+args[len(args)-1]+": swapon failed: Device or resource busy")
	case !on && !h.swaps[d.name]:
		return fail(255, "swapoff: "+args[len(args)-1]+": swapoff failed: Invalid argument")
	}
	if on {
		if !contains(probeAll(&reader{d: d}, d.size), "swap") {
			return fail(255, "swapon: "+args[len(args)-1]+": read swap header failed")
		}
		h.swaps[d.name] = true
	} else {
		delete(h.swaps, d.name)
	}
	h.writeSwaps()
	return nil, nil
}

func (h *Host) writeSwaps() {
	var names []string
	for n := range h.swaps {
		names = append(names, n)
	}
	sort.Strings(names)
	b := []byte("Filename\tType\tSize\tUsed\tPriority\n")
	for _, n := range names {
		b = fmt.Appendf(b, "/dev/%s\tpartition\t%d\t0\t-2\n", n, h.devs[n].size>>10)
	}
	h.fs.put("/proc/swaps", &node{mode: 0o444, data: b})
}

// wipefs -a DEV zeroes every signature the prober finds on DEV; on a
// whole disk that includes its partition table, and the kernel's
// partitions go.
func (h *Host) wipefs(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	d, err := h.deviceAt(args[len(args)-1])
	if err != nil {
		return fail(1, err.Error())
	}
	if h.mountedDev(d) || h.holdersOf(d) || h.swaps[d.name] || d.claimed {
		return fail(1, "wipefs: error: "+args[len(args)-1]+": probing initialization failed: Device or resource busy")
	}
	for _, p := range d.parts {
		if h.mountedDev(p) || h.holdersOf(p) || h.swaps[p.name] {
			return fail(1, "wipefs: error: "+args[len(args)-1]+": probing initialization failed: Device or resource busy")
		}
	}
	sigs, _ := probe.Probe(&reader{d: d}, int64(d.size))
	for _, s := range sigs {
		d.store.writeAt(make([]byte, len(s.Magic)), d.offset+s.Offset)
	}
	if len(d.parts) > 0 && d.disk == nil {
		for _, p := range d.parts {
			h.dropDev(p)
		}
	}
	return nil, nil
}

// stackHolders are the arrays, volumes and bcache devices held on b, and
// what is held on those in turn, as hwinfo shows them.
func (h *Host) stackHolders(b *blockDev) []hwinfo.Holder {
	var out []hwinfo.Holder
	var names []string
	for n, st := range h.stacks {
		for _, m := range st.members {
			if m == b {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		st := h.stacks[n]
		hd := hwinfo.Holder{Name: n, Kind: st.kind, DMName: st.name, Mounts: h.mountsOf(h.devs[n]), Swap: h.swaps[n],
			Holders: h.stackHolders(h.devs[n])}
		if st.kind == "bcache" {
			hd.DMName = "" // a bcache device has no name but its own
		}
		out = append(out, hd)
	}
	return out
}

// Stacks lists the arrays and logical volumes ("md127 md data raid1 sdb1,sdc1").
func (h *Host) Stacks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for n, st := range h.stacks {
		var ms []string
		for _, m := range st.members {
			ms = append(ms, m.name)
		}
		out = append(out, fmt.Sprintf("%s %s %s raid%d %s", n, st.kind, st.name, st.level, strings.Join(ms, ",")))
	}
	sort.Strings(out)
	return out
}

// PVs lists the LVM physical volumes and their groups as pvs sees them
// ("/dev/sdb1 fast"; "[unknown] fast" for a group's missing PV).
func (h *Host) PVs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range h.pvLines() {
		out = append(out, strings.TrimSpace(l[0]+" "+l[1]))
	}
	return out
}

// LVs lists the logical volumes lvs shows, active or not ("fast/scratch",
// "fast/vm inactive").
func (h *Host) LVs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, st := range h.stacks {
		if st.kind == "lvm" && !st.hidden && !st.dmOnly {
			out = append(out, st.vg+"/"+st.lv)
		}
	}
	for k, in := range h.inactive {
		if !in.st.hidden && h.vgKnown(in.st.vg) {
			out = append(out, k+" inactive")
		}
	}
	sort.Strings(out)
	return out
}

// Swaps lists the active swap areas.
func (h *Host) Swaps() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for n := range h.swaps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Signatures lists what the prober finds on the device name (the whole
// disk's bytes, partitions included: "gpt", "xfs" ...).
func (h *Host) Signatures(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.devs[name]
	if d == nil {
		return nil
	}
	return probeAll(&reader{d: d}, d.size)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Extent is where a partition lies on its disk, in bytes.
type Extent struct {
	Name          string
	Offset, Bytes uint64
}

// Extents are the partitions the kernel has of disk now, by number.
func (h *Host) Extents(disk string) []Extent {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.devs[disk]
	if d == nil {
		return nil
	}
	var nums []int
	for n := range d.parts {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	var out []Extent
	for _, n := range nums {
		p := d.parts[n]
		out = append(out, Extent{Name: p.name, Offset: uint64(p.offset - d.offset), Bytes: p.size})
	}
	return out
}

// SignaturesAt lists what the prober finds in the bytes of disk at e, as
// it would on a partition made there again (after its table was wiped).
func (h *Host) SignaturesAt(disk string, e Extent) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.devs[disk]
	if d == nil {
		return nil
	}
	return probeAll(&reader{d: &blockDev{store: d.store, offset: d.offset + int64(e.Offset), size: e.Bytes}}, e.Bytes)
}

// vgextend VG PV...: physical volumes in no group join VG.
func (h *Host) vgextend(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) < 2 {
		return fail(3, "vgextend: want a VG name and PVs")
	}
	vg, pvs := words[0], words[1:]
	if len(h.groupPVs(vg)) == 0 {
		return fail(5, "  Volume group \""+vg+"\" not found")
	}
	if msg := h.joinGroup(vg, pvs); msg != "" {
		return fail(5, msg)
	}
	return []byte("  Volume group \"" + vg + "\" successfully extended\n"), nil
}

// logicalVolume is the volume VG/LV names: its device and its stack
// (nil, nil when there is none).
func (h *Host) logicalVolume(target string) (*blockDev, *stackDev) {
	vg, lv, _ := strings.Cut(target, "/")
	for name, s := range h.stacks {
		if s.kind == "lvm" && s.vg == vg && s.lv == lv {
			return h.devs[name], s
		}
	}
	return nil, nil
}

// lvextend [--resizefs] --size Nb|--extents +100%FREE VG/LV: the volume
// takes more extents of its group; its device grows, and with --resizefs
// the file system on it is taken to fill it (the fake keeps no file
// system size apart from the device's).
func (h *Host) lvextend(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	target := args[len(args)-1]
	vg, _, _ := strings.Cut(target, "/")
	dev, st := h.logicalVolume(target)
	if st == nil || dev == nil {
		return fail(5, "  Failed to find logical volume \""+target+"\"")
	}
	have := dev.size / fakeExtent
	var more uint64
	if s, ok := flagValue(args, "--size"); ok {
		n, err := strconv.ParseUint(strings.TrimSuffix(s, "b"), 10, 64)
		if err != nil {
			return fail(3, "lvextend: bad size "+s)
		}
		want := (n + fakeExtent - 1) / fakeExtent
		if want <= have {
			return fail(5, "  New size given ("+strconv.FormatUint(want, 10)+" extents) not larger than existing size ("+strconv.FormatUint(have, 10)+" extents)")
		}
		more = want - have
	} else if e, _ := flagValue(args, "--extents"); e == "+100%FREE" {
		more = h.freeExtents(h.groupPVs(vg))
	}
	segs, ok := h.allocate(h.groupPVs(vg), more)
	if more == 0 || !ok {
		return fail(5, "  Insufficient free space: "+strconv.FormatUint(more, 10)+" extents needed")
	}
	for _, sg := range segs {
		// LVM merges a segment that continues the last one on its PV.
		if k := len(st.segs) - 1; k >= 0 && st.segs[k].pv == sg.pv && st.segs[k].start+st.segs[k].count == sg.start {
			st.segs[k].count += sg.count
		} else {
			st.segs = append(st.segs, sg)
		}
	}
	sys := h.sysDir(dev)
	for _, m := range h.segMembers(segs) {
		if !slices.Contains(st.members, m) {
			st.members = append(st.members, m)
			h.fs.mkdirAll(sys + "/slaves/" + m.name)
			h.fs.mkdirAll(h.sysDir(m) + "/holders/" + dev.name)
		}
	}
	dev.size += more * fakeExtent
	h.fs.put(sys+"/size", &node{mode: 0o444, data: fmt.Appendf(nil, "%d\n", dev.size/512)})
	if slices.Contains(args, "--resizefs") {
		growFS(dev)
		resizeExt(dev, dev.size)
	}
	return []byte("  Logical volume " + target + " successfully resized.\n"), nil
}

// lvreduce [--yes] [--resizefs] --size Nb VG/LV: the volume gives back
// its last extents. With --resizefs, as LVM's fsadm does, an xfs or a
// mounted file system is refused before anything changes (the fake's
// ext4 keeps no size to shrink); without it the volume is cut as asked.
func (h *Host) lvreduce(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	target := args[len(args)-1]
	dev, st := h.logicalVolume(target)
	if st == nil || dev == nil {
		return fail(5, "  Failed to find logical volume \""+target+"\"")
	}
	s, ok := flagValue(args, "--size")
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "b"), 10, 64)
	if !ok || err != nil {
		return fail(3, "lvreduce: bad size "+s)
	}
	have, want := dev.size/fakeExtent, (n+fakeExtent-1)/fakeExtent
	if want >= have || want == 0 {
		return fail(5, "  New size ("+strconv.FormatUint(want, 10)+" extents) matches or exceeds existing size ("+strconv.FormatUint(have, 10)+" extents)")
	}
	if slices.Contains(args, "--resizefs") {
		b := make([]byte, 512)
		dev.store.readAt(b, dev.offset)
		switch {
		case string(b[:4]) == "XFSB":
			return fail(5, "  xfs filesystem shrinking is unsupported.")
		case h.mountedDev(dev):
			return fail(5, "  File system reduce is required and not supported on a mounted file system.")
		}
	}
	cut := have - want
	for cut > 0 && len(st.segs) > 0 {
		k := len(st.segs) - 1
		if st.segs[k].count > cut {
			st.segs[k].count -= cut
			break
		}
		cut -= st.segs[k].count
		st.segs = st.segs[:k]
	}
	sys := h.sysDir(dev)
	kept := h.segMembers(st.segs)
	for _, m := range st.members {
		if !slices.Contains(kept, m) {
			h.fs.removeAll(sys + "/slaves/" + m.name)
			h.fs.removeAll(h.sysDir(m) + "/holders/" + dev.name)
		}
	}
	st.members = kept
	dev.size = want * fakeExtent
	h.fs.put(sys+"/size", &node{mode: 0o444, data: fmt.Appendf(nil, "%d\n", dev.size/512)})
	return []byte("  Logical volume " + target + " successfully resized.\n"), nil
}

// extTool is e2fsck -f -p DEV or resize2fs DEV SIZE on an unmounted ext4:
// both succeed and change nothing the fake keeps (its ext4 has no size of
// its own); a mounted device or one without ext4 fails, as they do.
func (h *Host) extTool(name string, args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	dev := ""
	for _, a := range args {
		if strings.HasPrefix(a, "/") {
			dev = a
		}
	}
	d, err := h.deviceAt(dev)
	if err != nil {
		return fail(8, name+": "+err.Error())
	}
	if h.mountedDev(d) && (name == "e2fsck" || len(args) > 1) {
		// resize2fs grows a mounted ext4 (no size: to fill its device),
		// never shrinks one.
		return fail(8, name+": "+dev+" is mounted; on-line shrinking not supported.")
	}
	b := make([]byte, 2)
	d.store.readAt(b, d.offset+1024+0x38)
	if b[0] != 0x53 || b[1] != 0xef {
		return fail(8, name+": Bad magic number in super-block while trying to open "+dev)
	}
	if name == "resize2fs" {
		size := d.size
		if k, ok := strings.CutSuffix(args[len(args)-1], "K"); ok {
			n, err := strconv.ParseUint(k, 10, 64)
			if err != nil || n<<10 > d.size {
				return fail(1, "resize2fs: Invalid new size: "+args[len(args)-1])
			}
			size = n << 10
		}
		resizeExt(d, size)
	}
	return nil, nil
}

// xfsGrowfs is xfs_growfs [-n] MOUNTPOINT on the fake xfs mounted there:
// -n prints its data section's block size and count (the line diskprep
// reads), else it grows to fill the device.
func (h *Host) xfsGrowfs(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	point := args[len(args)-1]
	for _, m := range h.mounts {
		if m.point != point {
			continue
		}
		b := make([]byte, 512)
		m.dev.store.readAt(b, m.dev.offset)
		if string(b[:4]) != "XFSB" {
			break
		}
		if !slices.Contains(args, "-n") {
			growFS(m.dev)
			m.dev.store.readAt(b, m.dev.offset)
		}
		be := binary.BigEndian
		return fmt.Appendf(nil, "meta-data=/dev/%s\ndata     =                       bsize=%d   blocks=%d, imaxpct=25\n",
			m.dev.name, be.Uint32(b[4:]), be.Uint64(b[8:])), nil
	}
	return fail(1, "xfs_growfs: "+point+" is not a mounted XFS filesystem")
}

// dumpe2fs -h DEV on the fake ext4: its superblock's block count and size.
func (h *Host) dumpe2fs(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	d, err := h.deviceAt(args[len(args)-1])
	if err != nil {
		return fail(1, "dumpe2fs: "+err.Error())
	}
	b := make([]byte, 1024)
	d.store.readAt(b, d.offset+1024)
	le := binary.LittleEndian
	if le.Uint16(b[56:]) != 0xef53 {
		return fail(1, "dumpe2fs: Bad magic number in super-block while trying to open "+args[len(args)-1])
	}
	return fmt.Appendf(nil, "Block count:              %d\nBlock size:               %d\n", le.Uint32(b[4:]), 1024<<le.Uint32(b[24:])), nil
}

// FillExt makes the fake ext4 on the device at node count used bytes as
// in use (its superblock's free block count), as files written there
// would; it fails when there is no ext4 or it is smaller.
func (h *Host) FillExt(node string, used uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceAt(node)
	if err != nil {
		return err
	}
	b := make([]byte, 1024)
	d.store.readAt(b, d.offset+1024)
	le := binary.LittleEndian
	bs := uint64(1024) << le.Uint32(b[24:])
	blocks, n := uint64(le.Uint32(b[4:])), (used+bs-1)/bs
	if le.Uint16(b[56:]) != 0xef53 || n > blocks {
		return fmt.Errorf("%s: no ext4 of %d bytes or more", node, used)
	}
	le.PutUint32(b[12:], uint32(blocks-n))
	d.store.writeAt(b, d.offset+1024)
	return nil
}

// resizeExt sets the fake ext4's block count on dev to bytes (whole 4 KiB
// blocks), all free, as resize2fs leaves it; nothing without an ext4.
func resizeExt(dev *blockDev, bytes uint64) {
	b := make([]byte, 1024)
	dev.store.readAt(b, dev.offset+1024)
	le := binary.LittleEndian
	if le.Uint16(b[56:]) != 0xef53 {
		return
	}
	n := uint32(bytes / (1024 << le.Uint32(b[24:])))
	le.PutUint32(b[4:], n)
	le.PutUint32(b[12:], n)
	dev.store.writeAt(b, dev.offset+1024)
}

// growFS takes the fake xfs on dev (its superblock's block counts) to the
// device's size, as xfs_growfs would; the fake's ext4 keeps no size.
func growFS(dev *blockDev) {
	b := make([]byte, 512)
	dev.store.readAt(b, dev.offset)
	if string(b[:4]) != "XFSB" {
		return
	}
	be := binary.BigEndian
	dblocks := dev.size / uint64(be.Uint32(b[4:]))
	be.PutUint64(b[8:], dblocks)
	be.PutUint32(b[84:], uint32((dblocks+uint64(be.Uint32(b[88:]))-1)/uint64(be.Uint32(b[88:]))))
	dev.store.writeAt(b, dev.offset)
}
