package stack

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/hwinfo/probe"
	"github.com/diskprep/diskprep/internal/units"
)

// Cached volumes (issue 15): a slow origin (an HDD partition) with a fast
// cache in front of it (an SSD or NVMe partition), built by one of the
// kernel's three caches. The origin partition says use: origin:NAME, the
// cache partition use: cache:NAME (or the cache is an existing partition
// given as it is, CacheSpec.CacheDevice), and the cache: entry NAME says
// which kind, which mode and which file system goes on the cached volume.
//
//   - lvmcache: one volume group NAME over both partitions, the logical
//     volume NAME on the origin's extents, a cache volume NAME_cache on the
//     cache's, joined by lvconvert --type cache --cachevol (dm-cache);
//     the volume is /dev/NAME/NAME.
//   - writecache: the same group and volumes, joined by lvconvert --type
//     writecache (dm-writecache, which caches writes only: writeback).
//   - bcache: make-bcache -B on the origin, -C on the cache, both
//     registered with the kernel (sysfs), the backing device attached to
//     the cache set and its cache_mode set; the volume is /dev/bcacheN.
const (
	CacheKindLVM        = "lvmcache"
	CacheKindWritecache = "writecache"
	CacheKindBcache     = "bcache"

	CacheModeWritethrough = "writethrough"
	CacheModeWriteback    = "writeback"
)

// CacheKinds and CacheModes are the kinds and modes, defaults first.
var (
	CacheKinds = []string{CacheKindLVM, CacheKindWritecache, CacheKindBcache}
	CacheModes = []string{CacheModeWritethrough, CacheModeWriteback}
)

// BcachePlaceholder stands for the bcache device a backing device becomes
// once registered: the kernel numbers it then, so plans of a new bcache
// carry this in the volume's argv and apply binds it, as LoopPlaceholder.
const BcachePlaceholder = "/dev/bcacheN"

// WritebackRisk is what the output says, in one line, of a writeback
// cache.
const WritebackRisk = "writeback: writes are acknowledged once on the cache device; if it fails before they reach the origin, they are lost and the file system on the origin is left inconsistent"

// CacheSpec is one cached volume.
type CacheSpec struct {
	Name string `json:"name"`
	// Kind is lvmcache (default), writecache or bcache; Mode writethrough
	// (default) or writeback.
	Kind   string     `json:"kind,omitempty"`
	Mode   string     `json:"mode,omitempty"`
	Volume VolumeSpec `json:"filesystem"`
	// CacheDevice is an existing partition that is the cache as it is
	// (prepare --cache-device PARTITION); empty: the partition whose Use
	// is "cache:"+Name.
	CacheDevice string `json:"cache_device,omitempty"`
	Origin      string `json:"origin,omitempty"`
}

func (c CacheSpec) kind() string {
	if c.Kind == "" {
		return CacheKindLVM
	}
	return c.Kind
}

func (c CacheSpec) mode() string {
	if c.Mode == "" {
		return CacheModeWritethrough
	}
	return c.Mode
}

// lvmKind says whether the kind is built with LVM.
func lvmKind(kind string) bool { return kind == CacheKindLVM || kind == CacheKindWritecache }

// cacheLVName is the cache volume of the lvm kinds before lvconvert hides
// it (as [NAME_cache_cvol]).
func cacheLVName(name string) string { return name + "_cache" }

// validateCache checks one cache entry against the partitions that use
// it (uses: use -> the disks of the partitions saying it).
func validateCache(c CacheSpec, uses map[string][]string, groups []GroupSpec, at func(origin, format string, args ...any) error) error {
	if !disk.StackName.MatchString(c.Name) || strings.HasPrefix(c.Name, "snapshot") || strings.HasPrefix(c.Name, "pvmove") {
		return at(c.Origin, "cache %q: use letters, digits, '_', '.', '+' or '-'", c.Name)
	}
	if !contains(CacheKinds, c.kind()) {
		return at(c.Origin, "cache %s: unknown kind %q: use lvmcache, writecache or bcache", c.Name, c.Kind)
	}
	if !contains(CacheModes, c.mode()) {
		return at(c.Origin, "cache %s: unknown mode %q: use writethrough or writeback", c.Name, c.Mode)
	}
	if c.kind() == CacheKindWritecache && c.mode() != CacheModeWriteback {
		return at(c.Origin, "cache %s: writecache caches writes only, always in writeback: say mode writeback (--cache-mode writeback) to accept that", c.Name)
	}
	if lvmKind(c.kind()) {
		for _, g := range groups {
			if g.VG == c.Name {
				return at(c.Origin, "cache %s: its volume group %s is also an lvm entry", c.Name, c.Name)
			}
		}
	}
	origins := uses["origin:"+c.Name]
	switch len(origins) {
	case 0:
		return at(c.Origin, "cache %s: no partition says use: origin:%s (the slow disk's)", c.Name, c.Name)
	case 1:
	default:
		return at(c.Origin, "cache %s: %d partitions say use: origin:%s, one is the origin", c.Name, len(origins), c.Name)
	}
	caches := uses["cache:"+c.Name]
	switch {
	case c.CacheDevice != "" && len(caches) > 0:
		return at(c.Origin, "cache %s: the cache device is %s, and a partition says use: cache:%s too", c.Name, c.CacheDevice, c.Name)
	case c.CacheDevice == "" && len(caches) == 0:
		return at(c.Origin, "cache %s: no partition says use: cache:%s (the fast disk's)", c.Name, c.Name)
	case len(caches) > 1:
		return at(c.Origin, "cache %s: %d partitions say use: cache:%s, one is the cache", c.Name, len(caches), c.Name)
	case len(caches) == 1 && caches[0] == origins[0]:
		return at(c.Origin, "cache %s: the cache and the origin are both on %s: the cache goes on another, faster disk", c.Name, origins[0])
	case c.CacheDevice != "" && sameDiskName(c.CacheDevice, origins[0]):
		return at(c.Origin, "cache %s: the cache device %s is on %s, the origin's disk: the cache goes on another, faster disk", c.Name, c.CacheDevice, origins[0])
	}
	return nil
}

// sameDiskName says whether the partition path part names a partition of
// the disk path disk, by the kernel's naming (sdb1 of sdb, nvme0n1p2 of
// nvme0n1).
func sameDiskName(part, disk string) bool {
	p, d := filepath.Base(part), filepath.Base(disk)
	if !strings.HasPrefix(p, d) || p == d {
		return p == d
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(p, d), "p")
	return rest != "" && strings.Trim(rest, "0123456789") == ""
}

// CachePlan is one cached volume, decided up front.
type CachePlan struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Mode string `json:"mode"`
	// OriginDevice and CacheDevice are the partitions it is built over.
	OriginDevice string `json:"origin_device"`
	CacheDevice  string `json:"cache_device"`
	OriginBytes  uint64 `json:"origin_bytes"`
	CacheBytes   uint64 `json:"cache_bytes"`
	// Device is the cached volume: /dev/NAME/NAME for the lvm kinds,
	// /dev/bcacheN for bcache (BcachePlaceholder until registered).
	Device string `json:"device"`
	// SetUUID is the bcache cache set (chosen at planning for a new one).
	SetUUID string `json:"set_uuid,omitempty"`
	// Steps are the commands and kernel writes still to do, in order;
	// none when the cache exists as asked.
	Steps []CacheStep `json:"steps,omitempty"`
	// Existing says what of the cache was found built ("cached volume
	// data/data", "bcache0 attached to set ...").
	Existing string `json:"existing,omitempty"`
	// Risk is the one line of what a writeback cache loses when the cache
	// device fails; empty for writethrough.
	Risk   string     `json:"risk,omitempty"`
	Volume VolumePlan `json:"volume"`
	Origin string     `json:"origin,omitempty"`
}

// CacheStep is one step of building a cache: a program (Argv) or a write
// of Value into the kernel attribute Path (sysfs).
type CacheStep struct {
	What  string   `json:"what"`
	Argv  []string `json:"argv,omitempty"`
	Path  string   `json:"path,omitempty"`
	Value string   `json:"value,omitempty"`
	// Member is the device checked, right before the step writes to it,
	// to hold nothing but what this cache put there.
	Member string `json:"member,omitempty"`
	// Wait is a path that must exist before the step (the kernel makes
	// it when it has registered a device).
	Wait string `json:"wait,omitempty"`
}

// String is the step as the dry run shows it.
func (s CacheStep) String() string {
	if s.Argv != nil {
		return disk.QuoteArgv(s.Argv)
	}
	return fmt.Sprintf("echo %s > %s", disk.Quote(s.Value), s.Path)
}

// cacheMember is one side of a cache: a partition planned on a disk, or
// an existing partition given as it is.
type cacheMember struct {
	path string
	size uint64
	ex   *hwinfo.Partition // in the facts; nil when the partition is new
	disk *hwinfo.Disk
}

// planCaches plans every cache entry of req.
func (pl Planner) planCaches(ctx context.Context, req StackRequest, byUse map[string][]member, host *hwinfo.Host, mounts []disk.MountEntry, sp *StackPlan) error {
	var lvm *lvmState
	var segs map[string]map[string]lvSeg
	for _, c := range req.Caches {
		om := byUse["origin:"+c.Name][0]
		origin := cacheMember{path: om.path, size: om.part.SizeBytes, ex: om.ex, disk: om.disk}
		var cache cacheMember
		if c.CacheDevice != "" {
			cm, err := pl.existingCacheDevice(c, host, req.Wipe, om)
			if err != nil {
				return withOrigin(c.Origin, err)
			}
			cache = cm
		} else {
			m := byUse["cache:"+c.Name][0]
			cache = cacheMember{path: m.path, size: m.part.SizeBytes, ex: m.ex, disk: m.disk}
		}
		cp := CachePlan{Name: c.Name, Kind: c.kind(), Mode: c.mode(), OriginDevice: origin.path, CacheDevice: cache.path,
			OriginBytes: origin.size, CacheBytes: cache.size, Origin: c.Origin}
		if cp.Mode == CacheModeWriteback {
			cp.Risk = WritebackRisk
		}
		if c.CacheDevice != "" && req.Wipe && cache.ex != nil && cache.ex.FSType != "" && !disk.MemberOf("cache:"+c.Name, cache.ex.FSType, cache.ex.FSLabel) {
			cp.Steps = append(cp.Steps, CacheStep{What: "wipe the cache device", Argv: []string{"wipefs", "--all", cache.path}})
		}
		var err error
		if lvmKind(cp.Kind) {
			if lvm == nil {
				if lvm, err = pl.readLVM(ctx); err != nil {
					return err
				}
				if segs, err = pl.readLVSegs(ctx); err != nil {
					return err
				}
			}
			err = pl.planLVMCache(&cp, c, origin, cache, lvm, segs, req, mounts)
		} else {
			err = pl.planBcache(&cp, c, origin, cache, req, mounts)
		}
		if err != nil {
			return withOrigin(c.Origin, err)
		}
		if len(cp.Steps) > 0 || cp.Volume.changes() {
			sp.Unchanged = false
		}
		sp.Caches = append(sp.Caches, cp)
	}
	return nil
}

// existingCacheDevice checks an existing partition given as the cache:
// the same refusals as a disk (in use, held by another stack, a signature
// unless wipe), and not on the origin's disk.
func (pl Planner) existingCacheDevice(c CacheSpec, host *hwinfo.Host, wipe bool, origin member) (cacheMember, error) {
	if host == nil {
		return cacheMember{}, fmt.Errorf("cache device %s: no facts to check it against", c.CacheDevice)
	}
	d, p := host.Device(c.CacheDevice)
	if d == nil {
		real, err := disk.FollowUserPath(pl.HostOrLive(), "", c.CacheDevice, c.CacheDevice)
		if disk.IsRefusal(err) {
			return cacheMember{}, err
		}
		if err == nil {
			d, p = host.Device(real)
		}
	}
	switch {
	case d == nil:
		return cacheMember{}, disk.Usagef("cache device %s: not a disk or partition the inventory lists", c.CacheDevice)
	case p == nil:
		return cacheMember{}, disk.Usagef("cache device %s is a whole disk: give it as the disk to partition, or one of its partitions", c.CacheDevice)
	case origin.plan != nil && d.Name == filepath.Base(origin.plan.Device):
		return cacheMember{}, disk.Usagef("cache device %s is on %s, the origin's disk: the cache goes on another, faster disk", c.CacheDevice, d.Name)
	}
	if err := disk.AdmitMember(d, p, "cache:"+c.Name, wipe); err != nil {
		return cacheMember{}, err
	}
	return cacheMember{path: p.Path, size: p.SizeBytes, ex: p, disk: d}, nil
}

// lvSeg is one logical volume as lvs -a tells it.
type lvSeg struct {
	segtype, pool, mode, devices string
}

// readLVSegs runs lvs -a for every logical volume's segment type, the
// cache volume it uses and its cache mode (read-only), under ctx.
func (pl Planner) readLVSegs(ctx context.Context) (map[string]map[string]lvSeg, error) {
	out, err := pl.HostOrLive().Run(ctx, "lvs", "-a", "--noheadings", "--separator", "|", "-o", "vg_name,lv_name,segtype,pool_lv,cache_mode,devices")
	if err != nil {
		return nil, lvmError("lvs", err)
	}
	st := map[string]map[string]lvSeg{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 6 || f[0] == "" {
			continue
		}
		if st[f[0]] == nil {
			st[f[0]] = map[string]lvSeg{}
		}
		st[f[0]][f[1]] = lvSeg{segtype: f[2], pool: f[3], mode: f[4], devices: f[5]}
	}
	return st, nil
}

func (pl Planner) planLVMCache(cp *CachePlan, c CacheSpec, origin, cache cacheMember, lvm *lvmState, segs map[string]map[string]lvSeg, req StackRequest, mounts []disk.MountEntry) error {
	vg, lv, clv := c.Name, c.Name, cacheLVName(c.Name)
	cp.Device = pl.Roots.DevPath(vg, lv)
	var others []string
	for pv, g := range lvm.pvVG {
		if g == vg && pv != origin.path && pv != cache.path {
			others = append(others, pv)
		}
	}
	sort.Strings(others)
	if len(others) > 0 {
		return disk.Usagef("lvm vg %s already exists on %s, not on the partitions planned", vg, strings.Join(others, ", "))
	}
	vgExists := false
	for _, m := range []cacheMember{origin, cache} {
		g, isPV := lvm.pvVG[m.path]
		switch {
		case !isPV:
			cp.Steps = append(cp.Steps, CacheStep{What: "create physical volume", Member: m.path,
				Argv: []string{"pvcreate", "--metadatatype", "2", "--dataalignment", fmt.Sprintf("%dk", pvAlignment(member{disk: m.disk})>>10), m.path}})
		case g == vg:
			vgExists = true
		case g != "":
			return disk.Refuse(m.path, fmt.Sprintf("%s is already a physical volume of vg %s", m.path, g))
		}
	}
	if vgExists {
		for _, m := range []cacheMember{origin, cache} {
			if lvm.pvVG[m.path] != vg {
				return disk.Refuse(m.path, fmt.Sprintf("vg %s exists without %s (release it with --wipe first)", vg, m.path))
			}
		}
	} else {
		cp.Steps = append(cp.Steps, CacheStep{What: "create volume group",
			Argv: []string{"vgcreate", "--physicalextentsize", fmt.Sprintf("%dk", lvmExtentBytes>>10), vg, origin.path, cache.path}})
	}
	have := segs[vg]
	for name := range lvm.lvs[vg] {
		if name != lv && name != clv {
			return disk.Refuse(vg, fmt.Sprintf("vg %s has volume %s, which the cache does not make (release it with --wipe first)", vg, name))
		}
	}
	vol := VolumePlan{Device: cp.Device, FS: c.Volume.FS, Label: c.Volume.Label, MkfsOpts: c.Volume.MkfsOpts,
		MountPoint: pl.ResolveMountPoint(c.Volume.Mount), MountOpts: c.Volume.MountOpts, MountOver: c.Volume.MountOver, Persist: c.Volume.Persist}
	convert := []string{"lvconvert", "--yes", "--type", "cache", "--cachevol", clv, "--cachemode", cp.Mode, vg + "/" + lv}
	if cp.Kind == CacheKindWritecache {
		convert = []string{"lvconvert", "--yes", "--type", "writecache", "--cachevol", clv, vg + "/" + lv}
	}
	seg, exists := have[lv]
	if _, visible := lvm.lvs[vg][lv]; !visible {
		exists = false
	}
	switch {
	case !exists:
		cp.Steps = append(cp.Steps, CacheStep{What: "create the origin volume", Argv: []string{"lvcreate", "--yes", "--wipesignatures", "y", "--name", lv, "--extents", "100%PVS", vg, origin.path}})
	case seg.segtype == "linear" || seg.segtype == "striped":
		cp.Existing = fmt.Sprintf("origin volume %s/%s, not cached yet", vg, lv)
	case seg.segtype == "cache" && cp.Kind == CacheKindLVM, seg.segtype == "writecache" && cp.Kind == CacheKindWritecache:
		if seg.segtype == "cache" && seg.mode != cp.Mode {
			return disk.Refuse(cp.Device, fmt.Sprintf("%s is cached in %s mode, not %s as asked (release it with --wipe first)", cp.Device, orNone(seg.mode), cp.Mode))
		}
		cp.Existing = fmt.Sprintf("cached volume %s/%s (%s, cache %s)", vg, lv, seg.segtype, strings.Trim(seg.pool, "[]"))
	case seg.segtype == "cache" || seg.segtype == "writecache":
		return disk.Refuse(cp.Device, fmt.Sprintf("%s is cached by %s, not %s as asked (release it with --wipe first)", cp.Device, map[string]string{"cache": CacheKindLVM, "writecache": CacheKindWritecache}[seg.segtype], cp.Kind))
	default:
		return disk.Refuse(cp.Device, fmt.Sprintf("%s is a %s volume, not the origin of a cache (release it with --wipe first)", cp.Device, seg.segtype))
	}
	if seg.segtype != "cache" && seg.segtype != "writecache" || !exists {
		if _, ok := have[clv]; !ok || !visibleLV(lvm, vg, clv) {
			cp.Steps = append(cp.Steps, CacheStep{What: "create the cache volume", Argv: []string{"lvcreate", "--yes", "--wipesignatures", "y", "--name", clv, "--extents", "100%PVS", vg, cache.path}})
		}
		if cp.Kind == CacheKindWritecache {
			// lvconvert --type writecache takes only an inactive cache
			// volume ("must be inactive to attach", lvm2 2.03.16);
			// --type cache deactivates it itself.
			cp.Steps = append(cp.Steps, CacheStep{What: "deactivate the cache volume", Argv: []string{"lvchange", "--yes", "--activate", "n", vg + "/" + clv}})
		}
		what := map[string]string{CacheKindLVM: "attach the cache (dm-cache)", CacheKindWritecache: "attach the write cache (dm-writecache)"}[cp.Kind]
		cp.Steps = append(cp.Steps, CacheStep{What: what, Argv: convert})
	}
	node := ""
	if exists {
		node = cp.Device
		if real, err := pl.HostOrLive().EvalSymlinks(cp.Device); err == nil {
			node = real
		}
	}
	var lvBytes uint64 // what lvcreate --extents 100%PVS makes of the origin
	if origin.size > lvmMetadataBytes {
		lvBytes = (origin.size - lvmMetadataBytes) / lvmExtentBytes * lvmExtentBytes
	}
	if err := pl.planVolumeOn(&vol, c.Volume.Encrypt, node, !exists, false, lvBytes, req, mounts, ""); err != nil {
		return err
	}
	if vol.Persist {
		vol.FstabLine = disk.FstabEntryLine(vol.partPlan())
	}
	cp.Volume = vol
	if lvmCacheBytes := cache.size; lvmCacheBytes > lvmMetadataBytes {
		cp.CacheBytes = (lvmCacheBytes - lvmMetadataBytes) / lvmExtentBytes * lvmExtentBytes
	}
	if origin.size > lvmMetadataBytes {
		cp.OriginBytes = (origin.size - lvmMetadataBytes) / lvmExtentBytes * lvmExtentBytes
	}
	return nil
}

func visibleLV(lvm *lvmState, vg, lv string) bool {
	_, ok := lvm.lvs[vg][lv]
	return ok
}

// bcache's bucket sizes: make-bcache's default (1024 sectors), the
// smallest the kernel takes (a page), and the fewest buckets a cache set
// may have: the kernel's cache_alloc refuses a cache whose bucket count,
// rounded up to a power of two, is under 1024 ("ca->sb.nbuckets is too
// small"), so 512 buckets of 512 KiB (256 MiB) fail.
const (
	bcacheDefaultBucket = 512 << 10
	bcacheMinBucket     = 4 << 10
	bcacheMinBuckets    = 1024
)

// bcacheBucket is the bucket size to give make-bcache -C for a cache of
// size bytes: 0 (its default) when that makes enough buckets, else the
// largest power of two that does, down to a page (a 48 MiB partition gets
// 32 KiB buckets); an error when even page-sized buckets are too few.
func bcacheBucket(size uint64) (uint64, error) {
	if size == 0 || size/bcacheDefaultBucket >= bcacheMinBuckets {
		return 0, nil
	}
	b := uint64(bcacheDefaultBucket)
	for b > bcacheMinBucket && size/b < bcacheMinBuckets {
		b /= 2
	}
	if size/b < bcacheMinBuckets {
		return 0, fmt.Errorf("%d KiB is too small for a bcache cache: it needs at least %d KiB (%d buckets of %d KiB)",
			size>>10, bcacheMinBuckets*bcacheMinBucket>>10, bcacheMinBuckets, bcacheMinBucket>>10)
	}
	return b, nil
}

// readBcacheSB reads the bcache superblock of dev; nil when there is none.
func (pl Planner) readBcacheSB(dev string) (*probe.BcacheSuper, error) {
	f, err := pl.HostOrLive().OpenDevice(dev, false)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	defer f.Close()
	sb := make([]byte, probe.BcacheSuperSize)
	if _, err := f.ReadAt(sb, probe.BcacheSuperOffset); err != nil {
		return nil, fmt.Errorf("read the bcache superblock of %s: %w", dev, err)
	}
	if s, ok := probe.ParseBcacheSuper(sb); ok {
		return &s, nil
	}
	return nil, nil
}

// bcacheDir is the bcache directory the kernel gives a registered device
// (a backing device's or a cache's), under its own sysfs directory.
func (pl Planner) bcacheDir(dev string) string {
	return pl.Roots.SysPath("class/block", filepath.Base(dev), "bcache")
}

// selectedMode is the bracketed choice of a sysfs list
// ("writethrough [writeback] writearound none").
func selectedMode(s string) string {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "[") {
			return strings.Trim(f, "[]")
		}
	}
	return strings.TrimSpace(s)
}

func (pl Planner) planBcache(cp *CachePlan, c CacheSpec, origin, cache cacheMember, req StackRequest, mounts []disk.MountEntry) error {
	h := pl.HostOrLive()
	cp.Device = BcachePlaceholder
	register := pl.Roots.SysPath("fs/bcache/register_quiet")
	sbOf := func(m cacheMember) (*probe.BcacheSuper, error) {
		if m.ex == nil {
			return nil, nil // a partition this run makes
		}
		return pl.readBcacheSB(m.path)
	}
	osb, err := sbOf(origin)
	if err != nil {
		return err
	}
	csb, err := sbOf(cache)
	if err != nil {
		return err
	}
	switch {
	case osb != nil && !osb.Backing:
		return disk.Refuse(origin.path, fmt.Sprintf("%s holds a bcache cache, not a backing device (release it with --wipe first)", origin.path))
	case csb != nil && csb.Backing:
		return disk.Refuse(cache.path, fmt.Sprintf("%s holds a bcache backing device, not a cache (release it with --wipe first)", cache.path))
	}
	fresh := osb == nil
	if _, err := h.Stat(pl.Roots.SysPath("fs/bcache")); err != nil {
		cp.Steps = append(cp.Steps, CacheStep{What: "load the bcache module", Argv: []string{"modprobe", "bcache"}})
	}
	if osb == nil {
		cp.Steps = append(cp.Steps, CacheStep{What: "make the bcache backing device", Member: origin.path, Argv: []string{"make-bcache", "-B", origin.path}})
	}
	if csb == nil {
		bucket, err := bcacheBucket(cache.size)
		if err != nil {
			return disk.Usagef("cache device %s: %v", cache.path, err)
		}
		cp.SetUUID = pl.MakeUUID()
		argv := []string{"make-bcache", "-C", "--cset-uuid", cp.SetUUID}
		if bucket > 0 {
			argv = append(argv, "--bucket", fmt.Sprintf("%dk", bucket>>10))
		}
		cp.Steps = append(cp.Steps, CacheStep{What: "make the bcache cache device", Member: cache.path, Argv: append(argv, cache.path)})
	} else {
		cp.SetUUID = csb.SetUUID
	}
	odir, cdir := pl.bcacheDir(origin.path), pl.bcacheDir(cache.path)
	registered := func(dir string) bool {
		_, err := h.Stat(dir)
		return err == nil
	}
	if osb == nil || !registered(odir) {
		cp.Steps = append(cp.Steps, CacheStep{What: "register the backing device", Path: register, Value: origin.path})
	}
	if csb == nil || !registered(cdir) {
		cp.Steps = append(cp.Steps, CacheStep{What: "register the cache device", Path: register, Value: cache.path})
	}
	set := pl.Roots.SysPath("fs/bcache", cp.SetUUID)
	attached := ""
	if link, err := h.Readlink(filepath.Join(odir, "cache")); err == nil {
		attached = filepath.Base(link)
	}
	switch {
	case attached == "":
		cp.Steps = append(cp.Steps, CacheStep{What: "attach the backing device to the cache set", Path: filepath.Join(odir, "attach"), Value: cp.SetUUID, Wait: set})
	case attached != cp.SetUUID:
		return disk.Refuse(origin.path, fmt.Sprintf("%s is attached to bcache cache set %s, not to %s's %s (release it with --wipe first)", origin.path, attached, cache.path, cp.SetUUID))
	default:
		cp.Existing = fmt.Sprintf("bcache over %s attached to cache set %s on %s", origin.path, cp.SetUUID, cache.path)
	}
	mode := ""
	if b, err := h.ReadFile(filepath.Join(odir, "cache_mode")); err == nil {
		mode = selectedMode(string(b))
	}
	if fresh || mode != cp.Mode {
		cp.Steps = append(cp.Steps, CacheStep{What: "set the cache mode", Path: filepath.Join(odir, "cache_mode"), Value: cp.Mode})
	}
	vol := VolumePlan{Device: cp.Device, FS: c.Volume.FS, Label: c.Volume.Label, MkfsOpts: c.Volume.MkfsOpts,
		MountPoint: pl.ResolveMountPoint(c.Volume.Mount), MountOpts: c.Volume.MountOpts, MountOver: c.Volume.MountOver, Persist: c.Volume.Persist}
	node := ""
	if link, err := h.Readlink(filepath.Join(odir, "dev")); err == nil {
		node = filepath.Base(link)
	}
	switch {
	case fresh:
		// What the partition held at the bcache data offset shows
		// through the new device: wiped before mkfs.
		cp.Steps = append(cp.Steps, CacheStep{What: "wipe the new bcache device", Argv: []string{"wipefs", "--all", BcachePlaceholder}})
		vol.FSUUID = pl.MakeUUID()
		vol.Mkfs = disk.MkfsFor(vol.FS, vol.Label, vol.FSUUID, vol.MkfsOpts, vol.Device, true, req.NoDiscard, "")
		if vol.MountPoint != "" {
			vol.MountArgv = disk.MountFor(vol.FS, vol.MountOpts, vol.Device, vol.MountPoint)
		}
	case node == "":
		// Not registered (a run killed before, a boot without udev): the
		// file system is read where the bcache device will show it.
		if err := pl.planVolumeAt(&vol, origin.path, osb.DataOffset, req); err != nil {
			return err
		}
	default:
		cp.Device = pl.Roots.DevPath(node)
		vol.Device = cp.Device
		if err := pl.planVolume(&vol, cp.Device, req, mounts, ""); err != nil {
			return err
		}
	}
	if vol.Persist {
		vol.FstabLine = disk.FstabEntryLine(vol.partPlan())
	}
	cp.Volume = vol
	if origin.size > probe.BcacheDataOffset {
		cp.OriginBytes = origin.size - probe.BcacheDataOffset
	}
	return nil
}

// planVolumeAt is planVolume for a file system that starts at offset on
// dev and is not mounted (nothing shows it as a device yet).
func (pl Planner) planVolumeAt(v *VolumePlan, dev string, offset int64, req StackRequest) error {
	if err := pl.planFormat(v, dev, offset, req, "", dev, "the bcache device on "+dev); err != nil {
		return err
	}
	if v.MountPoint != "" {
		v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
	}
	return nil
}

// cacheSummary is the one line of a cache plan for people.
func (cp CachePlan) summary() string {
	mode := cp.Mode
	return fmt.Sprintf("%s cache %s: %s (%s) in front of %s (%s), %s; %s on %s%s", cp.Kind, cp.Name, cp.CacheDevice, units.FormatSize(cp.CacheBytes),
		cp.OriginDevice, units.FormatSize(cp.OriginBytes), mode, cp.Volume.FS, cp.Device, inMount(cp.Volume))
}
