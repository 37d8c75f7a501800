package hwinfo

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Cached volumes (issue 15): a fast device in front of a slow one.
//
//   - dm-cache (lvmcache when LVM made it): a dm device whose table is one
//     "cache" target over a metadata device, a cache device and the origin
//     (Documentation/admin-guide/device-mapper/cache.rst); its status has
//     the block counts, read and write hits and misses per bio, dirty
//     blocks and the mode among its feature words;
//   - dm-writecache: one "writecache" target over the origin and the cache
//     device (writecache.rst); its status has blocks total, free and under
//     writeback, and since kernel 5.15 reads, read hits, writes, write
//     hits and writes around the cache, in blocks;
//   - bcache: bcacheN over a backing device, cached by the caches of a
//     cache set; sysfs has it all (bcacheN/bcache: cache_mode, state,
//     dirty_data, sequential_cutoff, stats_total/), counting reads only.
//
// Device-mapper tables and statuses are not in sysfs: on the live root they
// come from the DM_TABLE_STATUS ioctl (dmioctl.go), elsewhere from
// Options.DeviceMapper (a fixture's captured dmsetup output).

// Cache kinds.
const (
	CacheKindLVM        = "lvmcache"   // dm-cache made by LVM (lvconvert --type cache)
	CacheKindDMCache    = "dm-cache"   // dm-cache made by something else
	CacheKindWritecache = "writecache" // dm-writecache (LVM's or not)
	CacheKindBcache     = "bcache"
)

// DMTarget is one line of a device-mapper table or status, as `dmsetup
// table` and `dmsetup status` print it after the device's name: the
// sectors it maps, the target type and the target's own text.
type DMTarget struct {
	Start, Length uint64
	Type          string
	Args          string
}

// DeviceMapper reads device-mapper tables and statuses by dm name. The
// live one is the kernel's ioctl; DMSetupText stands in for it.
type DeviceMapper interface {
	Table(name string) ([]DMTarget, error)
	Status(name string) ([]DMTarget, error)
}

// DMSetupText is captured `dmsetup table` and `dmsetup status` output (all
// devices, "name: start length type args" per line), as a DeviceMapper.
type DMSetupText struct{ TableText, StatusText string }

func (d DMSetupText) Table(name string) ([]DMTarget, error) { return dmsetupLookup(d.TableText, name) }
func (d DMSetupText) Status(name string) ([]DMTarget, error) {
	return dmsetupLookup(d.StatusText, name)
}

func dmsetupLookup(text, name string) ([]DMTarget, error) {
	all, err := ParseDMSetup(text)
	if err != nil {
		return nil, err
	}
	t, ok := all[name]
	if !ok {
		return nil, fmt.Errorf("device-mapper device %s: %w", name, os.ErrNotExist)
	}
	return t, nil
}

// ParseDMSetup reads the output of `dmsetup table` or `dmsetup status` for
// all devices: "name: start length type args", one line per target (a
// device of several targets repeats its name).
func ParseDMSetup(text string) (map[string][]DMTarget, error) {
	out := map[string][]DMTarget{}
	for n, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || line == "No devices found" {
			continue
		}
		name, rest, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("dmsetup line %d: no name: %q", n+1, clip(line))
		}
		t, err := ParseDMTarget(rest)
		if err != nil {
			return nil, fmt.Errorf("dmsetup line %d: %w", n+1, err)
		}
		out[name] = append(out[name], t)
	}
	return out, nil
}

// ParseDMTarget reads one target line without the device name:
// "0 524288 cache 8 27/2048 ...".
func ParseDMTarget(s string) (DMTarget, error) {
	f := strings.SplitN(strings.TrimSpace(s), " ", 4)
	if len(f) < 3 {
		return DMTarget{}, fmt.Errorf("target %q: want start, length and type", clip(s))
	}
	start, err1 := strconv.ParseUint(f[0], 10, 64)
	length, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return DMTarget{}, fmt.Errorf("target %q: bad start or length", clip(s))
	}
	t := DMTarget{Start: start, Length: length, Type: f[2]}
	if len(f) == 4 {
		t.Args = strings.TrimSpace(f[3])
	}
	return t, nil
}

// dmCacheStatus is what a dm-cache status line says.
type dmCacheStatus struct {
	blockSectors             uint64
	usedBlocks, totalBlocks  uint64
	readHits, readMisses     uint64
	writeHits, writeMisses   uint64
	demotions, promotions    uint64
	dirty                    uint64
	mode                     string // writethrough, writeback, passthrough
	metadataMode, needsCheck string
}

// parseDMCacheStatus reads a "cache" target's status: <metadata block size>
// <used>/<total metadata blocks> <cache block size> <used>/<total cache
// blocks> <read hits> <read misses> <write hits> <write misses> <demotions>
// <promotions> <dirty> <#features> <features>* <#core args> <core args>*
// <policy> <#policy args> <policy args>* <metadata mode> <needs_check>. A
// cache that failed says only "Fail".
func parseDMCacheStatus(s string) (dmCacheStatus, error) {
	f := strings.Fields(s)
	var st dmCacheStatus
	if len(f) == 1 && f[0] == "Fail" {
		return st, errors.New("cache status: Fail")
	}
	if len(f) < 12 {
		return st, fmt.Errorf("cache status %q: %d fields, want at least 12", clip(s), len(f))
	}
	num := func(i int) (uint64, error) { return strconv.ParseUint(f[i], 10, 64) }
	frac := func(i int) (uint64, uint64, error) {
		a, b, ok := strings.Cut(f[i], "/")
		if !ok {
			return 0, 0, fmt.Errorf("cache status field %d %q: want used/total", i+1, f[i])
		}
		x, err1 := strconv.ParseUint(a, 10, 64)
		y, err2 := strconv.ParseUint(b, 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("cache status field %d %q: want used/total", i+1, f[i])
		}
		return x, y, nil
	}
	var err error
	if st.blockSectors, err = num(2); err != nil {
		return st, fmt.Errorf("cache status block size %q: %w", f[2], err)
	}
	if st.usedBlocks, st.totalBlocks, err = frac(3); err != nil {
		return st, err
	}
	for i, dst := range []*uint64{&st.readHits, &st.readMisses, &st.writeHits, &st.writeMisses, &st.demotions, &st.promotions, &st.dirty} {
		if *dst, err = num(4 + i); err != nil {
			return st, fmt.Errorf("cache status field %d %q: %w", 5+i, f[4+i], err)
		}
	}
	nf, err := num(11)
	if err != nil || 12+int(nf) > len(f) {
		return st, fmt.Errorf("cache status %q: bad feature count", clip(s))
	}
	st.mode = "writethrough" // the kernel's default when no word says otherwise
	for _, w := range f[12 : 12+nf] {
		switch w {
		case "writeback", "writethrough", "passthrough":
			st.mode = w
		}
	}
	if n := len(f); n >= 2 {
		st.metadataMode, st.needsCheck = f[n-2], f[n-1]
	}
	return st, nil
}

// dmCacheTable is what a "cache" table says: <metadata dev> <cache dev>
// <origin dev> <block size> <#features> <features>* <policy> <#policy
// args> <policy args>*. Devices are major:minor.
type dmCacheTable struct {
	metadata, cache, origin string
	blockSectors            uint64
	mode                    string
}

func parseDMCacheTable(s string) (dmCacheTable, error) {
	f := strings.Fields(s)
	var t dmCacheTable
	if len(f) < 5 {
		return t, fmt.Errorf("cache table %q: want metadata, cache and origin devices and a block size", clip(s))
	}
	t.metadata, t.cache, t.origin = f[0], f[1], f[2]
	n, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil {
		return t, fmt.Errorf("cache table block size %q: %w", f[3], err)
	}
	t.blockSectors = n
	t.mode = "writethrough"
	if nf, err := strconv.Atoi(f[4]); err == nil && 5+nf <= len(f) {
		for _, w := range f[5 : 5+nf] {
			switch w {
			case "writeback", "writethrough", "passthrough":
				t.mode = w
			}
		}
	}
	return t, nil
}

// dmWritecacheTable: <p|s> <origin dev> <cache dev> <block size in bytes>
// <#optional args> <args>*.
type dmWritecacheTable struct {
	persistent    string // "s" (SSD) or "p" (persistent memory)
	origin, cache string
	blockBytes    uint64
}

func parseDMWritecacheTable(s string) (dmWritecacheTable, error) {
	f := strings.Fields(s)
	var t dmWritecacheTable
	if len(f) < 4 {
		return t, fmt.Errorf("writecache table %q: want type, origin and cache devices and a block size", clip(s))
	}
	t.persistent, t.origin, t.cache = f[0], f[1], f[2]
	n, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil || n == 0 {
		return t, fmt.Errorf("writecache table block size %q: want bytes", f[3])
	}
	t.blockBytes = n
	return t, nil
}

// dmWritecacheStatus: <error> <blocks> <free blocks> <blocks under
// writeback>, then (kernel 5.15+) <read blocks> <read hits> <write
// blocks> <write hits on uncommitted blocks> <write hits on committed
// blocks> <writes around the cache> <writes allocated in the cache>
// <writes blocked on the freelist> <flushes> <discards>.
type dmWritecacheStatus struct {
	errno                   int64
	blocks, free, writeback uint64
	haveStats               bool
	reads, readHits, writes uint64
	hitsUncommitted         uint64
	hitsCommitted           uint64
	around, allocated       uint64
}

func parseDMWritecacheStatus(s string) (dmWritecacheStatus, error) {
	f := strings.Fields(s)
	var st dmWritecacheStatus
	if len(f) < 4 {
		return st, fmt.Errorf("writecache status %q: %d fields, want at least 4", clip(s), len(f))
	}
	e, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return st, fmt.Errorf("writecache status error %q: %w", f[0], err)
	}
	st.errno = e
	vals := []*uint64{&st.blocks, &st.free, &st.writeback}
	if len(f) >= 14 {
		st.haveStats = true
		vals = append(vals, &st.reads, &st.readHits, &st.writes, &st.hitsUncommitted, &st.hitsCommitted, &st.around, &st.allocated)
	}
	for i, dst := range vals {
		if *dst, err = strconv.ParseUint(f[1+i], 10, 64); err != nil {
			return st, fmt.Errorf("writecache status field %d %q: %w", 2+i, f[1+i], err)
		}
	}
	return st, nil
}

// parseBcacheSize reads a size bcache prints for people (bch_hprint):
// "0.0k", "512.0k", "4.0M", "1.2G", "37k" in powers of 1024, rounded down
// to what the text says; a bare number is bytes.
func parseBcacheSize(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty size")
	}
	mult := uint64(1)
	if i := strings.IndexByte("kMGTPEZY", s[len(s)-1]); i >= 0 {
		mult = 1 << (10 * (i + 1))
		s = s[:len(s)-1]
	}
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	n := w * mult
	if frac != "" {
		d, err := strconv.ParseUint(frac[:1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("size %q: %w", s, err)
		}
		n += d * mult / 10
	}
	return n, nil
}

// bcacheMode picks the bracketed word of cache_mode: "writethrough
// [writeback] writearound none".
func bcacheMode(s string) string {
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") {
			return strings.Trim(w, "[]")
		}
	}
	return ""
}

// readCaches lists the cached volumes: dm-cache and dm-writecache devices
// (by their tables), then bcache devices.
func (r *reader) readCaches(st *blockState) []CachedVolume {
	entries, err := os.ReadDir(r.path("/sys/block"))
	if err != nil {
		return nil
	}
	names := r.blockNamesByDev()
	var out []CachedVolume
	for _, e := range entries {
		name := e.Name()
		var cv *CachedVolume
		switch {
		case r.exists("/sys/block/" + name + "/dm/name"):
			cv = r.readDMCache(name, names)
		case isBcache(name) && r.exists("/sys/block/"+name+"/bcache"):
			cv = r.readBcache(name)
		}
		if cv == nil {
			continue
		}
		if st != nil {
			majmin, _ := r.readString("/sys/block/" + name + "/dev")
			u := r.udevData(majmin)
			cv.FSType = u["ID_FS_TYPE"]
			cv.Mounts = append(cv.Mounts, st.mounts[majmin]...)
			cv.FSType = fallbackFSType(cv.FSType, cv.Mounts, st.swaps[name])
		}
		out = append(out, *cv)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i].Device, out[j].Device) })
	return out
}

// blockNamesByDev maps "major:minor" to kernel names for every block
// device and partition in sysfs.
func (r *reader) blockNamesByDev() map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(r.path("/sys/class/block"))
	for _, e := range entries {
		if mm, ok := r.readString("/sys/class/block/" + e.Name() + "/dev"); ok {
			out[mm] = e.Name()
		}
	}
	return out
}

// dm returns the DeviceMapper to ask, or nil when there is none.
func (r *reader) dm() DeviceMapper {
	if r.dmSource != nil {
		return r.dmSource
	}
	if r.live {
		return liveDM{control: "/dev/mapper/control"}
	}
	return nil
}

// readDMCache reads the dm device name as a cached volume, or nil when its
// table is not one cache or writecache target.
func (r *reader) readDMCache(name string, names map[string]string) *CachedVolume {
	sys := "/sys/block/" + name
	dmName, _ := r.readString(sys + "/dm/name")
	uuid, _ := r.readString(sys + "/dm/uuid")
	dm := r.dm()
	if dm == nil || r.dmFailed {
		return nil
	}
	table, err := dm.Table(dmName)
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			r.warn("device-mapper tables: %v: cached volumes unknown; run as root", unwrapPath(err))
			r.dmFailed = true
		} else if !errors.Is(err, os.ErrNotExist) {
			r.warn("device-mapper table of %s: %v", dmName, unwrapPath(err))
		}
		return nil
	}
	if len(table) != 1 || (table[0].Type != "cache" && table[0].Type != "writecache") {
		return nil
	}
	cv := &CachedVolume{Device: name, Path: "/dev/mapper/" + dmName, Name: dmName}
	if vg, lv, ok := splitDMName(dmName); ok && strings.HasPrefix(uuid, "LVM-") {
		cv.Name = vg + "/" + lv
	}
	if n, ok := r.readUint(sys + "/size"); ok {
		cv.SizeBytes = n * 512
	}
	dev := func(mm string) string {
		if n := names[mm]; n != "" {
			return n
		}
		return mm
	}
	status, serr := dm.Status(dmName)
	if serr == nil && (len(status) != 1 || status[0].Type != table[0].Type) {
		serr = fmt.Errorf("status of %d targets, table of one %s", len(status), table[0].Type)
	}
	switch table[0].Type {
	case "cache":
		cv.Kind = CacheKindDMCache
		if strings.HasPrefix(uuid, "LVM-") {
			cv.Kind = CacheKindLVM
		}
		t, err := parseDMCacheTable(table[0].Args)
		if err != nil {
			r.warn("%s: %v", dmName, err)
			return nil
		}
		cv.Mode, cv.BlockBytes = t.mode, t.blockSectors*512
		cv.OriginDevices = r.belowInternal(dev(t.origin))
		cv.CacheDevices = r.belowInternal(dev(t.cache), dev(t.metadata))
		if serr != nil {
			r.warn("device-mapper status of %s: %v", dmName, unwrapPath(serr))
			break
		}
		s, err := parseDMCacheStatus(status[0].Args)
		if err != nil {
			cv.State = "failed"
			r.warn("%s: %v", dmName, err)
			break
		}
		cv.Mode, cv.BlockBytes = s.mode, s.blockSectors*512
		cv.CacheBytes = s.totalBlocks * cv.BlockBytes
		if s.needsCheck == "needs_check" {
			cv.State = "needs check"
		} else if s.metadataMode == "ro" {
			cv.State = "read-only metadata"
		}
		cv.Counters = &CacheCounters{
			Unit: "ios", CountsWrites: true,
			UsedBytes: s.usedBlocks * cv.BlockBytes, DirtyBytes: s.dirty * cv.BlockBytes,
			ReadHits: s.readHits, ReadMisses: s.readMisses, WriteHits: s.writeHits, WriteMisses: s.writeMisses,
			Promotions: s.promotions, Demotions: s.demotions,
		}
	case "writecache":
		cv.Kind, cv.Mode = CacheKindWritecache, "writeback"
		t, err := parseDMWritecacheTable(table[0].Args)
		if err != nil {
			r.warn("%s: %v", dmName, err)
			return nil
		}
		cv.BlockBytes = t.blockBytes
		cv.OriginDevices = r.belowInternal(dev(t.origin))
		cv.CacheDevices = r.belowInternal(dev(t.cache))
		if serr != nil {
			r.warn("device-mapper status of %s: %v", dmName, unwrapPath(serr))
			break
		}
		s, err := parseDMWritecacheStatus(status[0].Args)
		if err != nil {
			r.warn("%s: %v", dmName, err)
			break
		}
		if s.errno != 0 {
			cv.State = fmt.Sprintf("error %d", s.errno)
		}
		cv.CacheBytes = s.blocks * t.blockBytes
		used := (s.blocks - min(s.free, s.blocks)) * t.blockBytes
		// dm-writecache frees a block once it is written back, so every
		// used block holds data the origin does not have yet.
		cv.Counters = &CacheCounters{Unit: "blocks", UsedBytes: used, DirtyBytes: used}
		if s.haveStats {
			c := cv.Counters
			c.CountsWrites = true
			c.ReadHits, c.ReadMisses = s.readHits, s.reads-min(s.readHits, s.reads)
			// A write the cache took (a new block, or one it held)
			// went to the fast device; one written around it did not.
			c.WriteHits, c.WriteMisses = s.writes-min(s.around, s.writes), s.around
		}
	}
	return cv
}

// belowInternal follows LVM's hidden sub-LVs (the _corig, _cdata, _cmeta,
// _cvol layers of a cache: dm devices whose dm uuid has a suffix) down to
// the devices they are on; other devices are kept as they are.
func (r *reader) belowInternal(devs ...string) []string {
	var out []string
	var walk func(string, int)
	walk = func(d string, depth int) {
		uuid, _ := r.readString("/sys/block/" + d + "/dm/uuid")
		internal := strings.HasPrefix(uuid, "LVM-") && len(uuid) > 4+64
		if internal && depth < 8 {
			slaves, _ := os.ReadDir(r.path("/sys/block/" + d + "/slaves"))
			if len(slaves) > 0 {
				for _, s := range slaves {
					walk(s.Name(), depth+1)
				}
				return
			}
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, d := range devs {
		walk(d, 0)
	}
	return out
}

// readBcache reads bcacheN from sysfs: its bcache directory is the backing
// device's, whose cache link is the cache set.
func (r *reader) readBcache(name string) *CachedVolume {
	sys := "/sys/block/" + name
	dir := sys + "/bcache"
	cv := &CachedVolume{Device: name, Path: "/dev/" + name, Kind: CacheKindBcache}
	if n, ok := r.readUint(sys + "/size"); ok {
		cv.SizeBytes = n * 512
	}
	if l, ok := r.readString(dir + "/label"); ok && l != "" {
		cv.Name = l
	}
	if m, ok := r.readString(dir + "/cache_mode"); ok {
		cv.Mode = bcacheMode(m)
	}
	if s, ok := r.readString(dir + "/state"); ok && s != "clean" && s != "dirty" {
		cv.State = s // "no cache", "inconsistent"
	}
	if b := r.linkOwner(dir); b != "" {
		cv.OriginDevices = []string{b}
	}
	if s, ok := r.readString(dir + "/sequential_cutoff"); ok {
		if n, err := parseBcacheSize(s); err == nil {
			cv.SequentialCutoffBytes = &n
		} else {
			r.warn("%s: sequential_cutoff: %v", r.rel(dir), err)
		}
	}
	set := dir + "/cache"
	var availPct uint64
	haveAvail := false
	if r.exists(set) {
		for _, link := range r.numbered(set, "cache") {
			cache := set + "/" + link
			if d := r.linkOwner(cache); d != "" {
				cv.CacheDevices = append(cv.CacheDevices, d)
			}
			nb, ok1 := r.readUint(cache + "/nbuckets")
			bs, ok2 := r.readString(cache + "/bucket_size")
			if n, err := parseBcacheSize(bs); ok1 && ok2 && err == nil {
				cv.CacheBytes += nb * n
			}
		}
		if bs, ok := r.readString(set + "/block_size"); ok {
			if n, err := parseBcacheSize(bs); err == nil {
				cv.BlockBytes = n
			}
		}
		availPct, haveAvail = r.readUint(set + "/cache_available_percent")
	}
	c := &CacheCounters{Unit: "ios"}
	ok := true
	for _, f := range []struct {
		file string
		dst  *uint64
	}{
		{"cache_hits", &c.ReadHits}, {"cache_misses", &c.ReadMisses},
		{"cache_bypass_hits", &c.BypassHits}, {"cache_bypass_misses", &c.BypassMisses},
	} {
		n, found := r.readUint(dir + "/stats_total/" + f.file)
		ok = ok && found
		*f.dst = n
	}
	if s, found := r.readString(dir + "/dirty_data"); found {
		if n, err := parseBcacheSize(s); err == nil {
			c.DirtyBytes = n
		}
	}
	if haveAvail && availPct <= 100 {
		c.UsedBytes = cv.CacheBytes / 100 * (100 - availPct)
	}
	if ok {
		cv.Counters = c
	}
	return cv
}

// Cache returns the cached volume of that kernel name (dm-3, bcache0), or nil.
func (h *Host) Cache(dev string) *CachedVolume {
	dev = strings.TrimPrefix(dev, "/dev/")
	for i := range h.Caches {
		if h.Caches[i].Device == dev {
			return &h.Caches[i]
		}
	}
	return nil
}

// ReadCache reads the cached volume dev (kernel name) of the machine at
// roots again, for its counters now: what bench asks before and after each
// workload. It reads sysfs and one device-mapper table and status, not the
// whole inventory. roots is the live machine when zero, else a tree laid
// out as RootsUnder makes it; dm nil is the kernel's ioctl on the live
// machine. nil with no error means dev is not a cached volume.
func ReadCache(roots Roots, dm DeviceMapper, dev string) (*CachedVolume, error) {
	root := roots.Root
	if root == "" {
		root = "/"
	}
	r := &reader{root: root, live: root == "/", dmSource: dm}
	dev = strings.TrimPrefix(dev, "/dev/")
	var cv *CachedVolume
	switch {
	case r.exists("/sys/block/" + dev + "/dm/name"):
		cv = r.readDMCache(dev, r.blockNamesByDev())
	case isBcache(dev) && r.exists("/sys/block/"+dev+"/bcache"):
		cv = r.readBcache(dev)
	}
	if len(r.warnings) > 0 && (cv == nil || cv.Counters == nil) {
		return cv, errors.New(r.warnings[0])
	}
	return cv, nil
}

// Sub is the counters' change from before to c: what one workload did.
// Used and dirty bytes are c's own (a level, not a count).
func (c CacheCounters) Sub(before CacheCounters) CacheCounters {
	d := c
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0 // counters reset (bcache's clear_stats, a reload)
		}
		return a - b
	}
	d.ReadHits, d.ReadMisses = sub(c.ReadHits, before.ReadHits), sub(c.ReadMisses, before.ReadMisses)
	d.WriteHits, d.WriteMisses = sub(c.WriteHits, before.WriteHits), sub(c.WriteMisses, before.WriteMisses)
	d.BypassHits, d.BypassMisses = sub(c.BypassHits, before.BypassHits), sub(c.BypassMisses, before.BypassMisses)
	d.Promotions, d.Demotions = sub(c.Promotions, before.Promotions), sub(c.Demotions, before.Demotions)
	return d
}

// HitRatio is hits over hits and misses, of reads and of writes where the
// kernel counts them (bcache's bypassed reads count too: a bypass hit was
// still read from the cache, a bypass miss from the backing device);
// false when nothing was counted.
func (c CacheCounters) HitRatio() (float64, bool) {
	hits := c.ReadHits + c.BypassHits + c.WriteHits
	all := hits + c.ReadMisses + c.BypassMisses + c.WriteMisses
	if all == 0 {
		return 0, false
	}
	return float64(hits) / float64(all), true
}

// ReadHitRatio is the hit ratio of reads alone; false when no read was
// counted.
func (c CacheCounters) ReadHitRatio() (float64, bool) {
	all := c.ReadHits + c.ReadMisses + c.BypassHits + c.BypassMisses
	if all == 0 {
		return 0, false
	}
	return float64(c.ReadHits+c.BypassHits) / float64(all), true
}
