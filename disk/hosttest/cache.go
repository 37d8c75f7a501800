package hosttest

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/diskprep/diskprep/hwinfo/probe"
)

// The caches of the fake machine. lvmcache and dm-writecache:
// lvconvert --type cache|writecache --cachevol joins an origin volume and
// a cache volume as LVM does, the origin moved to a hidden sub-volume
// [LV_corig] ([LV_wcorig]) held on the origin's PV and the cache volume
// hidden as [CACHE_cvol], the cached volume (same dm device, same bytes)
// now over those two (dm-cache: over the origin and the -cdata and
// -cmeta layers of the cache volume); --splitcache and --uncache undo
// it. disk/stackconf_test.go holds all this to the kernel. bcache: make-bcache
// writes the superblocks the kernel reads, the writes into
// /sys/fs/bcache/register_quiet register them (a backing device becomes
// bcacheN, its data the partition's bytes from 8 KiB on; a cache device
// makes its cache set /sys/fs/bcache/UUID), and the backing device's
// attach, cache_mode, detach and stop attributes do what the kernel's do.
// dirty_data drains (halves at each read) once the mode is no longer
// writeback or a detach was asked, which completes once it is clean;
// DirtyBcache puts dirty data there.

// bcacheBacking is a registered backing device.
type bcacheBacking struct {
	part  *blockDev
	dev   *blockDev // bcacheN
	set   string    // attached cache set; "" when none
	mode  string
	dirty uint64
	// detaching: detach was asked with dirty data; the kernel writes it
	// back first (whatever the mode) and detaches once it is clean.
	detaching bool
}

// bcacheSet is a registered cache set.
type bcacheSet struct {
	cache *blockDev
}

func (h *Host) cacheState() {
	if h.bcacheB == nil {
		h.bcacheB = map[string]*bcacheBacking{}
		h.bcacheS = map[string]*bcacheSet{}
	}
}

// lvsAll is lvs -a -o vg_name,lv_name,segtype,pool_lv,cache_mode,devices:
// one row per segment, a segment's devices being its physical volume and
// first extent there, or a cached volume's origin sub-volume.
func (h *Host) lvsAll() []byte {
	var sts []*stackDev
	for _, st := range h.stacks {
		if st.kind == "lvm" && !st.dmOnly {
			sts = append(sts, st)
		}
	}
	for _, k := range sortedKeys(h.inactive) {
		// Inactive: the metadata still says what each volume is on.
		if st := h.inactive[k].st; !st.dmOnly && h.vgKnown(st.vg) {
			sts = append(sts, st)
		}
	}
	sort.SliceStable(sts, func(i, j int) bool { return sts[i].name < sts[j].name })
	var b strings.Builder
	for _, st := range sts {
		seg := st.segtype
		if seg == "" {
			seg = "linear"
		}
		devs := []string{strings.Trim(st.origin, "[]") + "(0)"}
		if st.origin == "" {
			devs = nil
			for _, sg := range st.segs {
				devs = append(devs, fmt.Sprintf("%s(%d)", sg.pv, sg.start))
			}
		}
		for _, d := range devs {
			fmt.Fprintf(&b, "  %s|%s|%s|%s|%s|%s\n", st.vg, st.lv, seg, st.pool, st.mode, d)
		}
	}
	return []byte(b.String())
}

// lvByName is the logical volume vg/lv (by its name in lvs).
func (h *Host) lvByName(vg, lv string) (string, *stackDev) {
	for n, st := range h.stacks {
		if st.kind == "lvm" && st.vg == vg && st.lv == lv {
			return n, st
		}
	}
	return "", nil
}

// relink makes sysfs say that dm (kernel name) is built on members.
func (h *Host) relink(dm string, st *stackDev, members []*blockDev) {
	sys := h.sysDir(h.devs[dm])
	for _, m := range st.members {
		h.fs.removeAll(sys + "/slaves/" + m.name)
		h.fs.removeAll(h.sysDir(m) + "/holders/" + dm)
	}
	st.members = members
	for _, m := range members {
		h.fs.mkdirAll(sys + "/slaves/" + m.name)
		h.fs.mkdirAll(h.sysDir(m) + "/holders/" + dm)
	}
}

// newDM adds a dm device for an LVM (sub-)volume.
func (h *Host) newDM(vg, lv string, size uint64, members []*blockDev, hidden bool) (string, *stackDev) {
	i := 0
	for ; h.devs[fmt.Sprintf("dm-%d", i)] != nil; i++ {
	}
	dm := fmt.Sprintf("dm-%d", i)
	dev := &blockDev{name: dm, major: 253, minor: uint32(i), size: size, sector: members[0].sector, store: newSparse(), parts: map[int]*blockDev{}}
	h.addDev(dev)
	name := strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(strings.Trim(lv, "[]"), "-", "--")
	sys := h.sysDir(dev)
	h.fs.put(sys+"/dm/name", &node{mode: 0o444, data: []byte(name + "\n")})
	h.fs.put(sys+"/dm/uuid", &node{mode: 0o444, data: []byte("LVM-fake" + name + "\n")})
	st := &stackDev{kind: "lvm", name: name, vg: vg, lv: lv, hidden: hidden}
	h.stacks[dm] = st
	h.relink(dm, st, members)
	if !hidden {
		h.fs.mkdirAll("/dev/" + vg)
		h.fs.put("/dev/"+vg+"/"+lv, &node{mode: fs.ModeSymlink | 0o777, link: "/dev/" + dm})
		h.fs.put("/dev/mapper/"+name, &node{mode: fs.ModeSymlink | 0o777, link: "/dev/" + dm})
	}
	return dm, st
}

// lvconvert --yes --type cache|writecache --cachevol CLV [--cachemode M]
// VG/LV, and --splitcache or --uncache VG/LV. As LVM does: the origin's
// extents move to a hidden sub-volume [LV_corig] ([LV_wcorig] for
// writecache), the cache volume's to [CLV_cvol]; dm-cache adds the
// layers CLV_cvol-cdata and -cmeta over the latter and uses those. The
// cache volume split off is left inactive.
func (h *Host) lvconvert(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	target := args[len(args)-1]
	vg, lv, _ := strings.Cut(target, "/")
	dm, st := h.lvByName(vg, lv)
	if st == nil {
		return fail(5, "  Failed to find logical volume \""+target+"\"")
	}
	switch {
	case contains(args, "--splitcache") || contains(args, "--uncache"):
		if st.segtype != "cache" && st.segtype != "writecache" {
			return fail(5, "  Logical volume "+target+" is not cached.")
		}
		corig, cvol := h.devs[st.corig], h.devs[st.cvol]
		corigSt, cvolSt := h.stacks[st.corig], h.stacks[st.cvol]
		h.relink(dm, st, corigSt.members)
		st.segs = corigSt.segs
		for n, o := range h.stacks {
			if o.dmOnly && len(o.members) == 1 && o.members[0] == cvol {
				h.dropStack(h.devs[n], o)
			}
		}
		h.dropStack(corig, corigSt)
		h.dropStack(cvol, cvolSt)
		st.segtype, st.pool, st.mode, st.corig, st.cvol, st.origin = "", "", "", "", "", ""
		cacheLV := strings.TrimSuffix(strings.Trim(cvolSt.lv, "[]"), "_cvol")
		if contains(args, "--splitcache") {
			dmName := strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(cacheLV, "-", "--")
			h.inactive[vg+"/"+cacheLV] = &inactiveLV{st: &stackDev{kind: "lvm", name: dmName, vg: vg, lv: cacheLV, members: cvolSt.members, segs: cvolSt.segs}, dev: cvol}
			return []byte("  Logical volume " + target + " is not cached and " + vg + "/" + cacheLV + " is unused.\n"), nil
		}
		return []byte("  Logical volume \"" + cacheLV + "_cvol\" successfully removed.\n  Logical volume " + target + " is not cached.\n"), nil
	}
	typ, _ := flagValue(args, "--type")
	clv, _ := flagValue(args, "--cachevol")
	if typ != "cache" && typ != "writecache" || clv == "" {
		return fail(3, "lvconvert: the fake knows --type cache|writecache --cachevol, --splitcache and --uncache")
	}
	if st.segtype != "" {
		return fail(5, "  Logical volume "+target+" is already cached.")
	}
	mode, _ := flagValue(args, "--cachemode")
	if typ == "writecache" {
		if mode != "" {
			return fail(3, "  Option --cachemode is not allowed with --type writecache")
		}
	} else if mode == "" {
		mode = "writethrough"
	}
	// The cache volume: active (dm-cache deactivates it itself;
	// dm-writecache takes only an inactive one) or inactive.
	var cache *stackDev
	var cacheDev *blockDev
	if cdm, cst := h.lvByName(vg, clv); cst != nil {
		if typ == "writecache" {
			return fail(5, "  LV "+vg+"/"+clv+" must be inactive to attach.")
		}
		if h.mountedDev(h.devs[cdm]) {
			return fail(5, "  Logical volume "+vg+"/"+clv+" in use.")
		}
		h.deactivate(cdm, cst)
	}
	in := h.inactive[vg+"/"+clv]
	if in == nil {
		return fail(5, "  Failed to find logical volume \""+vg+"/"+clv+"\"")
	}
	delete(h.inactive, vg+"/"+clv)
	cache, cacheDev = in.st, in.dev
	var cacheMembers []*blockDev // as they are now
	for _, m := range cache.members {
		cacheMembers = append(cacheMembers, h.devs[m.name])
	}
	origin := "[" + lv + "_corig]"
	if typ == "writecache" {
		origin = "[" + lv + "_wcorig]"
	}
	corig, corigSt := h.newDM(vg, origin, h.devs[dm].size, st.members, true)
	corigSt.segs, st.segs = st.segs, nil
	cvol, cvolSt := h.newDM(vg, "["+clv+"_cvol]", cacheDev.size, cacheMembers, true)
	cvolSt.segs = cache.segs
	h.devs[cvol].store = cacheDev.store
	members := []*blockDev{h.devs[corig], h.devs[cvol]}
	if typ == "cache" {
		members = []*blockDev{h.devs[corig], h.devs[h.dmLayer(cvol, "-cdata")], h.devs[h.dmLayer(cvol, "-cmeta")]}
	}
	h.relink(dm, st, members)
	st.segtype, st.pool, st.mode, st.corig, st.cvol, st.origin = typ, "["+clv+"_cvol]", mode, corig, cvol, origin
	if typ == "writecache" {
		st.mode = ""
	}
	return []byte("  Logical volume " + target + " is now cached.\n"), nil
}

// dmLayer adds a device-mapper device over the volume on dm, named after
// it with suffix, that lvs does not list.
func (h *Host) dmLayer(dm, suffix string) string {
	over := h.stacks[dm]
	n, st := h.newDM(over.vg, over.lv+suffix, h.devs[dm].size, []*blockDev{h.devs[dm]}, true)
	st.name, st.dmOnly = over.name+suffix, true
	sys := h.sysDir(h.devs[n])
	h.fs.put(sys+"/dm/name", &node{mode: 0o444, data: []byte(st.name + "\n")})
	h.fs.put(sys+"/dm/uuid", &node{mode: 0o444, data: []byte("LVM-fake" + st.name + "\n")})
	return n
}

// lvchange --yes --activate y|n VG/LV.
func (h *Host) lvchange(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	target := args[len(args)-1]
	vg, lv, _ := strings.Cut(target, "/")
	dm, st := h.lvByName(vg, lv)
	in := h.inactive[target]
	if st == nil && in == nil {
		return fail(5, "  Failed to find logical volume \""+target+"\"")
	}
	switch a, _ := flagValue(args, "--activate"); a {
	case "n":
		if st == nil {
			return nil, nil
		}
		if h.mountedDev(h.devs[dm]) {
			return fail(5, "  Logical volume "+target+" contains a filesystem in use.")
		}
		h.deactivate(dm, st)
	case "y":
		if in != nil {
			h.activate(target)
		}
	default:
		return fail(3, "lvchange: the fake knows --activate y|n")
	}
	return nil, nil
}

func (h *Host) modprobe(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	dry, quiet := false, false
	for _, m := range args {
		dry = dry || m == "-n" || m == "--dry-run"
		quiet = quiet || m == "-q" || m == "--quiet"
	}
	for _, m := range args {
		if h.noMod[m] && quiet {
			return fail(1, "")
		}
		if h.noMod[m] {
			return fail(1, "modprobe: FATAL: Module "+m+" not found in directory /lib/modules/6.1.0-fake")
		}
	}
	if dry {
		return nil, nil
	}
	for _, m := range args {
		if m == "bcache" {
			h.fs.mkdirAll("/sys/fs/bcache")
			h.fs.put("/sys/fs/bcache/register", &node{mode: 0o200})
			h.fs.put("/sys/fs/bcache/register_quiet", &node{mode: 0o200})
		}
	}
	return nil, nil
}

var bcacheMagic = []byte{0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81}

// makeBcache is make-bcache -B DEV or -C [--cset-uuid U] DEV.
func (h *Host) makeBcache(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	if len(args) == 1 && args[0] == "-h" {
		return fail(1, "Usage: make-bcache [options] device")
	}
	devs := devArgs(args)
	if len(devs) != 1 || contains(args, "-B") == contains(args, "-C") {
		return fail(1, "make-bcache: the fake takes -B DEV or -C DEV")
	}
	d, err := h.deviceAt(devs[0])
	if err != nil {
		return fail(1, err.Error())
	}
	if d.claimed || h.mountedDev(d) || h.holdersOf(d) {
		return fail(1, "Can't open dev "+devs[0]+": Device or resource busy")
	}
	for _, s := range probeAll(&reader{d: d}, d.size) {
		switch {
		case s == "bcache" && !contains(args, "--wipe-bcache"):
			return fail(1, "Already a bcache device on "+devs[0]+", overwrite with --wipe-bcache")
		case s != "bcache":
			return fail(1, "Device "+devs[0]+" already has a non-bcache superblock, remove it using wipefs and wipefs -a")
		}
	}
	h.nextBcacheUUID++
	uuid := fmt.Sprintf("%08x-0000-4000-8000-%012x", h.nextBcacheUUID, h.nextBcacheUUID)
	set, _ := flagValue(args, "--cset-uuid")
	if set == "" {
		set = fmt.Sprintf("%08x-1111-4000-8000-%012x", h.nextBcacheUUID, h.nextBcacheUUID)
	}
	u, err1 := hex.DecodeString(strings.ReplaceAll(uuid, "-", ""))
	s, err2 := hex.DecodeString(strings.ReplaceAll(set, "-", ""))
	if err1 != nil || err2 != nil || len(s) != 16 {
		return fail(1, "Bad uuid")
	}
	sb := make([]byte, 512)
	le := binary.LittleEndian
	le.PutUint64(sb[8:], 8)
	if contains(args, "-B") {
		le.PutUint64(sb[16:], 1)
	} else {
		// A cache's bucket count and size (in sectors), where bcache's
		// superblock has them; make-bcache's default bucket is 512 KiB.
		bucket := uint64(512 << 10)
		if v, ok := flagValue(args, "--bucket"); ok {
			b, err := parseFakeSize(v)
			if err != nil || b < 4096 || b&(b-1) != 0 {
				return fail(1, "Bad bucket size "+v)
			}
			bucket = b
		}
		n := d.size / bucket
		if n < 1<<7 {
			return fail(1, fmt.Sprintf("Not enough buckets: %d, need %d", n, 1<<7))
		}
		le.PutUint64(sb[184:], n)
		le.PutUint16(sb[194:], uint16(bucket/512))
	}
	copy(sb[24:40], bcacheMagic)
	copy(sb[40:56], u)
	copy(sb[56:72], s)
	d.store.writeAt(sb, d.offset+4096)
	return fmt.Appendf(nil, "UUID:\t\t\t%s\nSet UUID:\t\t%s\n", uuid, set), nil
}

// bcacheSB reads the superblock make-bcache wrote on d: backing or cache,
// and its set; ok false when there is none.
func bcacheSB(d *blockDev) (backing bool, set string, ok bool) {
	sb := make([]byte, probe.BcacheSuperSize)
	(&reader{d: d}).ReadAt(sb, probe.BcacheSuperOffset)
	s, ok := probe.ParseBcacheSuper(sb)
	return s.Backing, s.SetUUID, ok
}

// bcacheDir is the bcache directory of a registered device.
func (h *Host) bcacheDir(b *blockDev) string { return h.sysDir(b) + "/bcache" }

// writeSys is the kernel's side of a write into a bcache attribute.
func (h *Host) writeSys(p, value string) error {
	h.cacheState()
	p = path.Clean(p)
	switch p {
	case "/sys/fs/bcache/register", "/sys/fs/bcache/register_quiet":
		if _, _, err := h.fs.resolve(p, true); err != nil {
			return err
		}
		return h.bcacheRegister(strings.TrimSpace(value), p == "/sys/fs/bcache/register_quiet")
	}
	dir, attr := path.Split(p)
	dir = path.Clean(dir)
	if strings.HasPrefix(dir, "/sys/fs/bcache/") && attr == "unregister" {
		set := path.Base(dir)
		bs := h.bcacheS[set]
		if bs == nil {
			return syscall.ENOENT
		}
		for _, bb := range h.bcacheB {
			if bb.set == set {
				h.bcacheDetach(bb)
			}
		}
		bs.cache.claimed = false
		h.fs.removeAll(h.bcacheDir(bs.cache))
		h.fs.removeAll(dir)
		delete(h.bcacheS, set)
		return nil
	}
	var bb *bcacheBacking
	for _, b := range h.bcacheB {
		if path.Clean(h.bcacheDir(b.part)) == h.resolvedDir(dir) {
			bb = b
		}
	}
	if bb == nil {
		return syscall.ENOENT
	}
	switch attr {
	case "attach":
		bs := h.bcacheS[value]
		switch {
		case bb.set != "":
			return syscall.EINVAL // already attached
		case bs == nil:
			return syscall.ENOENT
		}
		bb.set = value
		h.fs.put(h.bcacheDir(bb.part)+"/cache", &node{mode: fs.ModeSymlink | 0o777, link: "/sys/fs/bcache/" + value})
		h.fs.put("/sys/fs/bcache/"+value+"/bdev0", &node{mode: fs.ModeSymlink | 0o777, link: h.bcacheDir(bb.part)})
		st := h.stacks[bb.dev.name]
		st.members = append(st.members, bs.cache)
		h.fs.mkdirAll(h.sysDir(bb.dev) + "/slaves/" + bs.cache.name)
		h.fs.mkdirAll(h.sysDir(bs.cache) + "/holders/" + bb.dev.name)
	case "cache_mode":
		if !contains([]string{"writethrough", "writeback", "writearound", "none"}, value) {
			return syscall.EINVAL
		}
		bb.mode = value
	case "writeback_percent", "writeback_delay":
		if _, err := strconv.Atoi(value); err != nil {
			return syscall.EINVAL
		}
	case "detach":
		if bb.set == "" {
			return syscall.EINVAL
		}
		if bb.dirty > 0 {
			bb.detaching = true
			break
		}
		h.bcacheDetach(bb)
	case "stop":
		if h.mountedDev(bb.dev) {
			return syscall.EBUSY
		}
		h.bcacheDetach(bb)
		h.dropStack(bb.dev, h.stacks[bb.dev.name])
		h.fs.removeAll(h.bcacheDir(bb.part))
		bb.part.claimed = false
		delete(h.bcacheB, bb.part.name)
	default:
		return syscall.EACCES
	}
	return nil
}

// resolvedDir is dir with its symlinks followed (/sys/class/block/sdb1
// is a link to the device's directory).
func (h *Host) resolvedDir(dir string) string {
	if _, rp, err := h.fs.resolve(dir, true); err == nil {
		return path.Clean(rp)
	}
	return dir
}

func (h *Host) bcacheDetach(bb *bcacheBacking) {
	if bb.set == "" {
		return
	}
	bs := h.bcacheS[bb.set]
	st := h.stacks[bb.dev.name]
	var keep []*blockDev
	for _, m := range st.members {
		if m != bs.cache {
			keep = append(keep, m)
		}
	}
	st.members = keep
	h.fs.removeAll(h.sysDir(bb.dev) + "/slaves/" + bs.cache.name)
	h.fs.removeAll(h.sysDir(bs.cache) + "/holders/" + bb.dev.name)
	h.fs.removeAll(h.bcacheDir(bb.part) + "/cache")
	h.fs.removeAll("/sys/fs/bcache/" + bb.set + "/bdev0")
	bb.set, bb.dirty, bb.detaching = "", 0, false
}

func (h *Host) bcacheRegister(dev string, quiet bool) error {
	d, err := h.deviceAt(dev)
	if err != nil {
		return syscall.ENOENT
	}
	backing, set, ok := bcacheSB(d)
	if !ok {
		return syscall.EINVAL // "Not a bcache superblock"
	}
	if d.claimed {
		if quiet {
			return nil
		}
		return syscall.EBUSY // "device already registered"
	}
	if !backing {
		// The kernel's cache_alloc: "ca->sb.nbuckets is too small" when
		// the bucket count rounded up to a power of two is under 1024.
		sb := make([]byte, 8)
		(&reader{d: d}).ReadAt(sb, 4096+184)
		if n := binary.LittleEndian.Uint64(sb); n <= 512 {
			return syscall.EINVAL
		}
	}
	d.claimed = true
	if !backing {
		dir := "/sys/fs/bcache/" + set
		h.fs.mkdirAll(dir)
		h.fs.put(dir+"/unregister", &node{mode: 0o200})
		h.fs.put(dir+"/stop", &node{mode: 0o200})
		h.fs.put(dir+"/cache0", &node{mode: fs.ModeSymlink | 0o777, link: h.bcacheDir(d)})
		h.fs.mkdirAll(h.bcacheDir(d))
		h.fs.put(h.bcacheDir(d)+"/set", &node{mode: fs.ModeSymlink | 0o777, link: dir})
		h.bcacheS[set] = &bcacheSet{cache: d}
		return nil
	}
	n := 0
	for ; h.devs[fmt.Sprintf("bcache%d", n)] != nil; n++ {
	}
	name := fmt.Sprintf("bcache%d", n)
	bdev := &blockDev{name: name, major: 252, minor: uint32(n * 128), size: d.size - 8192, sector: d.sector, store: d.store,
		offset: d.offset + 8192, parts: map[int]*blockDev{}}
	h.addDev(bdev)
	h.stacks[name] = &stackDev{kind: "bcache", name: name, members: []*blockDev{d}}
	h.fs.mkdirAll(h.sysDir(bdev) + "/slaves/" + d.name)
	h.fs.mkdirAll(h.sysDir(d) + "/holders/" + name)
	dir := h.bcacheDir(d)
	h.fs.mkdirAll(dir)
	for _, a := range []string{"attach", "detach", "stop", "cache_mode", "dirty_data", "state", "writeback_percent", "writeback_delay"} {
		h.fs.put(dir+"/"+a, &node{mode: 0o644})
	}
	h.fs.put(dir+"/dev", &node{mode: fs.ModeSymlink | 0o777, link: h.sysDir(bdev)})
	h.fs.put(h.sysDir(bdev)+"/bcache", &node{mode: fs.ModeSymlink | 0o777, link: dir})
	h.bcacheB[d.name] = &bcacheBacking{part: d, dev: bdev, mode: "writethrough"}
	return nil
}

// bcacheRead answers a read of a backing device's cache_mode, dirty_data
// or state; ok false for any other path.
func (h *Host) bcacheRead(p string) ([]byte, bool) {
	if h.bcacheB == nil || !strings.HasPrefix(p, "/sys/") {
		return nil, false
	}
	dir, attr := path.Split(path.Clean(p))
	dir = h.resolvedDir(path.Clean(dir))
	for _, bb := range h.bcacheB {
		if path.Clean(h.bcacheDir(bb.part)) != dir {
			continue
		}
		switch attr {
		case "cache_mode":
			var out []string
			for _, m := range []string{"writethrough", "writeback", "writearound", "none"} {
				if m == bb.mode {
					m = "[" + m + "]"
				}
				out = append(out, m)
			}
			return []byte(strings.Join(out, " ") + "\n"), true
		case "dirty_data":
			out := []byte(hprint(bb.dirty) + "\n")
			if bb.mode != "writeback" || bb.detaching {
				if bb.dirty /= 2; bb.dirty < 4096 {
					bb.dirty = 0
				}
			}
			if bb.dirty == 0 && bb.detaching {
				h.bcacheDetach(bb)
			}
			return out, true
		case "state":
			switch {
			case bb.set == "":
				return []byte("no cache\n"), true
			case bb.dirty > 0:
				return []byte("dirty\n"), true
			}
			return []byte("clean\n"), true
		}
	}
	return nil, false
}

// hprint is bcache's bch_hprint: binary units, one decimal below 10.
func hprint(n uint64) string {
	units := "kMGTPEZY"
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	if v < 10 {
		return fmt.Sprintf("%.1f%c", v, units[u])
	}
	return fmt.Sprintf("%.0f%c", v, units[u])
}

// DirtyBcache gives the bcache device over the backing device name that
// many bytes of dirty data (written to its cache, not yet to name).
func (h *Host) DirtyBcache(name string, bytes uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cacheState()
	h.bcacheB[name].dirty = bytes
}

// Bcache lists the registered bcache devices and cache sets
// ("bcache0 sdb1 writeback set=UUID", "set UUID nvme0n1p1").
func (h *Host) Bcache() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, bb := range h.bcacheB {
		out = append(out, fmt.Sprintf("%s %s %s set=%s", bb.dev.name, bb.part.name, bb.mode, bb.set))
	}
	for u, bs := range h.bcacheS {
		out = append(out, "set "+u+" "+bs.cache.name)
	}
	sort.Strings(out)
	return out
}

// parseFakeSize reads make-bcache's sizes: bytes, or a number with k, M
// or G (powers of 1024).
func parseFakeSize(v string) (uint64, error) {
	mult := uint64(1)
	if i := strings.IndexAny(v, "kKmMgG"); i > 0 && i == len(v)-1 {
		mult = map[byte]uint64{'k': 1 << 10, 'K': 1 << 10, 'm': 1 << 20, 'M': 1 << 20, 'g': 1 << 30, 'G': 1 << 30}[v[i]]
		v = v[:i]
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n * mult, err
}
