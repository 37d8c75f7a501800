package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/hwinfo/probe"
	"github.com/diskprep/diskprep/internal/units"
)

// StackPlanSchema names the JSON shape of a StackPlan.
const StackPlanSchema = "diskprep/stack-plan/v1"

// mdMetadata is the md superblock version diskprep writes, said
// explicitly: 1.2 sits 4 KiB from the start, away from the GPT and from
// anything a partition scanner or file system would look at.
const mdMetadata = "1.2"

// minStripedXFSBytes is the smallest array whose xfs is given the stripe
// geometry: mkfs.xfs ignores a volume's own geometry under 1 GiB ("the
// performance gains on such a small system are not worth the risk that
// we'll end up with an undersized log"), and given su/sw there it fails
// ("Log size must be at least 64MB" on a 510 MiB RAID10 of 512 KiB chunks).
const minStripedXFSBytes = 1 << 30

// defaultChunkBytes is mdadm's default chunk, used unless the members'
// optimal I/O size asks for a larger one.
const defaultChunkBytes = 512 << 10

// lvmExtentBytes is LVM's default extent; lvmMetadataBytes the room pvcreate
// keeps before the first extent (its default data alignment).
const (
	lvmExtentBytes   = 4 << 20
	lvmMetadataBytes = 1 << 20
)

// StackRequest asks for storage stacks over partitions that disk requests
// give to them (PartSpec.Use): md arrays and LVM volume groups.
type StackRequest struct {
	Arrays []ArraySpec `json:"arrays,omitempty"`
	Groups []GroupSpec `json:"groups,omitempty"`
	// Caches are cached volumes over the partitions whose Use is
	// "origin:"+Name and "cache:"+Name (cache.go).
	Caches []CacheSpec `json:"caches,omitempty"`
	// Encrypted are file systems on LUKS2 right on a partition, the one
	// whose Use is "crypt:"+Key (crypt.go).
	Encrypted []EncryptedSpec `json:"encrypted,omitempty"`
	// Wipe allows replacing a file system found on a new array or volume
	// that is not the one asked for.
	Wipe bool `json:"wipe,omitempty"`
	// NoDiscard: mkfs on the stacks' volumes does not discard.
	NoDiscard bool `json:"no_discard,omitempty"`
	// Shrink allows a logical volume asked smaller than it is to shrink,
	// with its ext2/3/4 file system, when that is unmounted (prepare
	// --shrink). Without it a smaller size is refused.
	Shrink bool `json:"shrink,omitempty"`
}

// Empty says the request asks for no stack.
func (r StackRequest) Empty() bool {
	return len(r.Arrays) == 0 && len(r.Groups) == 0 && len(r.Caches) == 0 && len(r.Encrypted) == 0
}

// ArraySpec is one md array: its members are the partitions whose Use is
// "raid:"+Name.
type ArraySpec struct {
	Name   string     `json:"name"`
	Level  int        `json:"level"` // 0, 1, 5, 6, 10
	Volume VolumeSpec `json:"filesystem"`
	Origin string     `json:"origin,omitempty"`
}

// GroupSpec is one LVM volume group over the partitions whose Use is
// "lvm:"+VG, and its logical volumes in order.
type GroupSpec struct {
	VG      string   `json:"vg"`
	Volumes []LVSpec `json:"volumes"`
	Origin  string   `json:"origin,omitempty"`
	// Encrypt puts LUKS2 on each member partition, its mapping the
	// physical volume (crypt.go).
	Encrypt *crypt.Spec `json:"encrypt,omitempty"`
}

// LVSpec is one logical volume; SizeBytes 0 is the rest of the group (last
// only).
type LVSpec struct {
	Name      string `json:"name"`
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// SizePercent is a share of the group's size ("50%"), whole extents
	// rounded down: the group is what the plan's members make, so the
	// share comes to the same size on every run.
	SizePercent float64    `json:"size_percent,omitempty"`
	Volume      VolumeSpec `json:"filesystem"`
	Origin      string     `json:"origin,omitempty"`
}

// VolumeSpec is the file system made on an array or logical volume.
type VolumeSpec struct {
	FS        string   `json:"fs"`
	Label     string   `json:"label,omitempty"`
	Mount     string   `json:"mount,omitempty"`
	MountOpts string   `json:"mount_opts,omitempty"`
	MkfsOpts  []string `json:"mkfs_opts,omitempty"`
	Persist   bool     `json:"persist,omitempty"`
	// MountOver allows mounting over a non-empty directory (PartSpec's).
	MountOver bool `json:"mount_over,omitempty"`
	// Encrypt puts the file system on LUKS2 (crypt.go).
	Encrypt *crypt.Spec `json:"encrypt,omitempty"`
}

// StackPlan is everything ApplyStacks will do, decided up front, after the
// disks' own plans (their partitions are the members).
type StackPlan struct {
	Schema string      `json:"schema"`
	Arrays []ArrayPlan `json:"arrays,omitempty"`
	Groups []GroupPlan `json:"groups,omitempty"`
	Caches []CachePlan `json:"caches,omitempty"`
	// Encrypted are the file systems on LUKS2 right on a partition.
	Encrypted []EncryptedPlan `json:"encrypted,omitempty"`
	// MdadmConf is the mdadm.conf the arrays' lines go to: Debian's
	// /etc/mdadm/mdadm.conf when /etc/mdadm exists, else /etc/mdadm.conf
	// (RHEL, Fedora, SUSE).
	MdadmConf string   `json:"mdadm_conf,omitempty"`
	Unchanged bool     `json:"unchanged"`
	Notes     []string `json:"notes,omitempty"`
}

// ArrayPlan is one md array.
type ArrayPlan struct {
	Name     string   `json:"name"`
	Device   string   `json:"device"` // /dev/md/NAME
	Level    int      `json:"level"`
	Members  []string `json:"members"`
	Metadata string   `json:"metadata"`
	// ChunkBytes is the stripe unit (levels 0, 5, 6, 10); DataMembers the
	// members a stripe spans with data. Zero for RAID1.
	ChunkBytes  uint64 `json:"chunk_bytes,omitempty"`
	DataMembers int    `json:"data_members,omitempty"`
	UUID        string `json:"uuid"` // mdadm's form, chosen at planning
	SizeBytes   uint64 `json:"size_bytes"`
	// Create is the mdadm argv; nil when the array exists as asked.
	Create []string `json:"create,omitempty"`
	// Wipe is the wipefs argv run on the new array before its mdadm.conf
	// line and file system; nil for an array made by an earlier run.
	Wipe []string `json:"wipe,omitempty"`
	// Existing names the running array ("md127") when there is one.
	Existing string     `json:"existing,omitempty"`
	ConfLine string     `json:"conf_line"`
	Volume   VolumePlan `json:"volume"`
	Origin   string     `json:"origin,omitempty"`
}

// GroupPlan is one LVM volume group.
type GroupPlan struct {
	VG  string   `json:"vg"`
	PVs []string `json:"pvs"`
	// PVCreate are the pvcreate argvs of the members not yet physical
	// volumes; VGCreate is nil when the group exists.
	PVCreate [][]string `json:"pvcreate,omitempty"`
	VGCreate []string   `json:"vgcreate,omitempty"`
	// VGExtend adds to an existing group the members the plan gives it
	// that are not in it yet; nil when none.
	VGExtend    []string `json:"vgextend,omitempty"`
	ExtentBytes uint64   `json:"extent_bytes"`
	SizeBytes   uint64   `json:"size_bytes"` // the extents the group will have
	Volumes     []LVPlan `json:"volumes"`
	Origin      string   `json:"origin,omitempty"`
	// Crypts are the LUKS2 layers of encrypted members, in PVs' order:
	// each member's mapping is its physical volume.
	Crypts []*crypt.Plan `json:"crypts,omitempty"`
	// Replan: a member's mapping was closed, so the group is planned
	// again once it is open (from spec, members and req).
	Replan  bool `json:"replan,omitempty"`
	spec    GroupSpec
	members []member
	req     StackRequest
	mounts  []disk.MountEntry
}

// LVPlan is one logical volume.
type LVPlan struct {
	Name      string `json:"name"`
	Path      string `json:"path"` // /dev/VG/LV
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// Create is the lvcreate argv; nil when the volume exists as asked.
	Create []string `json:"create,omitempty"`
	// Grow is the lvextend argv that grows an existing volume and its
	// file system to the size asked (SizeBytes, from FromBytes); nil when
	// it has that size.
	Grow []string `json:"grow,omitempty"`
	// Shrink are the commands that shrink an existing, unmounted volume
	// and its ext file system to SizeBytes, from FromBytes, in order
	// (e2fsck -f -p, resize2fs, lvreduce; StackRequest.Shrink); nil
	// otherwise.
	Shrink    [][]string `json:"shrink,omitempty"`
	FromBytes uint64     `json:"from_bytes,omitempty"`
	// FSGrow grows a file system smaller than its volume (of FSBytes) to
	// fill it, once the volume is mounted: the volume was extended
	// without it (lvextend without --resizefs, or a run that died in
	// between). xfs_growfs MOUNTPOINT or resize2fs DEVICE, both online.
	FSGrow  []string `json:"fs_grow,omitempty"`
	FSBytes uint64   `json:"fs_bytes,omitempty"`
	// CryptResize grows an encrypted volume's LUKS2 mapping to fill the
	// grown volume (cryptsetup resize), before FSGrow grows the file
	// system on it.
	CryptResize []string   `json:"crypt_resize,omitempty"`
	Volume      VolumePlan `json:"volume"`
}

// VolumePlan is the file system on an array or logical volume, with every
// command that touches it, as PartPlan has for a partition.
type VolumePlan struct {
	Device  string `json:"device"`
	FS      string `json:"fs"`
	Label   string `json:"label,omitempty"`
	FSUUID  string `json:"fs_uuid"`
	Persist bool   `json:"persist,omitempty"`
	// Geometry is the stripe geometry given to mkfs: xfs's -d
	// "su=512k,sw=2", ext4's -E "stride=128,stripe_width=256".
	Geometry string   `json:"geometry,omitempty"`
	MkfsOpts []string `json:"mkfs_opts,omitempty"`
	Mkfs     []string `json:"mkfs,omitempty"` // nil: the file system exists as asked
	// MkfsIfBlank is the mkfs of a closed LUKS2 volume's mapping, run
	// when it holds nothing once opened (FSUUID its UUID then).
	MkfsIfBlank []string `json:"mkfs_if_blank,omitempty"`
	MountPoint  string   `json:"mount_point,omitempty"`
	MountOpts   string   `json:"mount_opts,omitempty"`
	MountArgv   []string `json:"mount_argv,omitempty"` // nil: not mounting, or mounted there
	MountOver   bool     `json:"mount_over,omitempty"`
	FstabLine   string   `json:"fstab_line,omitempty"`
	// Crypt is the LUKS2 layer the file system sits on (Device is then
	// its mapping); nil for none.
	Crypt *crypt.Plan `json:"crypt,omitempty"`
	// fsBytes and fsUsed are the size the existing file system's
	// superblock gives and the space it counts as used (0: none, or not
	// known).
	fsBytes, fsUsed uint64
}

// partPlan is the volume as PartPlan, for the helpers partitions and
// volumes share (fstab entry, marker).
func (v VolumePlan) partPlan() disk.PartPlan {
	return disk.PartPlan{Path: v.Device, FS: v.FS, FSLabel: v.Label, FSUUID: v.FSUUID, MountPoint: v.MountPoint, MountOpts: v.MountOpts, Persist: v.Persist}
}

// minMembers is the least an md level takes.
var minMembers = map[int]int{0: 2, 1: 2, 5: 3, 6: 4, 10: 4}

// Validate checks the stack request on its own and against the disk
// requests that give it members: bad input (ErrUsage) whatever the machine.
func (r StackRequest) Validate(reqs []disk.Request) error {
	members := map[string][]string{} // use -> where
	disks := map[string][]string{}   // use -> the disks
	for _, q := range reqs {
		for i, ps := range q.Partitions {
			if ps.Use != "" {
				members[ps.Use] = append(members[ps.Use], fmt.Sprintf("%s partition %d", orNone(q.Device+q.Image), i+1))
				disks[ps.Use] = append(disks[ps.Use], orNone(q.Device+q.Image))
			}
		}
	}
	at := func(origin, format string, args ...any) error {
		if origin != "" {
			return disk.Usagef("%s: %s", origin, fmt.Sprintf(format, args...))
		}
		return disk.Usagef(format, args...)
	}
	known := map[string]bool{}
	mounts := map[string]string{}
	checkVolume := func(origin, what string, v VolumeSpec) error {
		ps := disk.PartSpec{FS: v.FS, Label: v.Label, Mount: v.Mount, MountOpts: v.MountOpts, MkfsOpts: v.MkfsOpts, Persist: v.Persist, MountOver: v.MountOver, SizeBytes: 1}
		if v.FS == "swap" {
			return at(origin, "%s: swap belongs on a partition (fs: swap), not on a stack", what)
		}
		probe := disk.Request{Device: "x", Partitions: []disk.PartSpec{ps}}
		if err := probe.Validate(); err != nil {
			if r := disk.Reasons(err); len(r) > 0 {
				return withOrigin(origin, disk.Refuse(what, strings.TrimPrefix(r[0], "partition 1: ")))
			}
			return at(origin, "%s: %s", what, strings.TrimPrefix(err.Error(), "partition 1: "))
		}
		if err := checkEncrypt(v.Encrypt, what); err != nil {
			return withOrigin(origin, err)
		}
		if v.Encrypt != nil && v.Encrypt.Name != "" {
			if prev, dup := mounts["crypt:"+v.Encrypt.Name]; dup {
				return at(origin, "%s: encrypt name %s is already %s's", what, v.Encrypt.Name, prev)
			}
			mounts["crypt:"+v.Encrypt.Name] = what
		}
		if m := probe.Partitions[0].Mount; m != "" {
			if prev, dup := mounts[m]; dup {
				return at(origin, "%s: mount point %s is already %s's", what, m, prev)
			}
			mounts[m] = what
		}
		return nil
	}
	for _, a := range r.Arrays {
		use := "raid:" + a.Name
		if !disk.StackName.MatchString(a.Name) {
			return at(a.Origin, "raid %q: use letters, digits, '_', '.', '+' or '-'", a.Name)
		}
		if known[use] {
			return at(a.Origin, "raid %s is declared twice", a.Name)
		}
		known[use] = true
		min, ok := minMembers[a.Level]
		if !ok {
			return at(a.Origin, "raid %s: unknown level %d: use 0, 1, 5, 6 or 10", a.Name, a.Level)
		}
		if n := len(members[use]); n < min {
			return at(a.Origin, "raid %s: level %d needs at least %d members, %d partitions say use: %s", a.Name, a.Level, min, n, use)
		}
		if err := checkVolume(a.Origin, "raid "+a.Name, a.Volume); err != nil {
			return err
		}
	}
	for _, g := range r.Groups {
		if err := checkEncrypt(g.Encrypt, "lvm vg "+g.VG); err != nil {
			return withOrigin(g.Origin, err)
		}
		if g.Encrypt != nil && g.Encrypt.Name != "" {
			return at(g.Origin, "lvm vg %s: encrypt takes no name for a group's members: each is NAME_crypt after its partition", g.VG)
		}
	}
	for _, g := range r.Groups {
		use := "lvm:" + g.VG
		if !disk.StackName.MatchString(g.VG) || g.VG == "." || g.VG == ".." {
			return at(g.Origin, "lvm vg %q: use letters, digits, '_', '.', '+' or '-'", g.VG)
		}
		if known[use] {
			return at(g.Origin, "lvm vg %s is declared twice", g.VG)
		}
		known[use] = true
		if len(members[use]) == 0 {
			return at(g.Origin, "lvm vg %s: no partition says use: %s", g.VG, use)
		}
		if len(g.Volumes) == 0 {
			return at(g.Origin, "lvm vg %s: no volumes", g.VG)
		}
		names := map[string]bool{}
		for i, lv := range g.Volumes {
			if !disk.StackName.MatchString(lv.Name) || strings.HasPrefix(lv.Name, "snapshot") || strings.HasPrefix(lv.Name, "pvmove") {
				return at(lv.Origin, "lvm vg %s: volume name %q: use letters, digits, '_', '.', '+' or '-'", g.VG, lv.Name)
			}
			if names[lv.Name] {
				return at(lv.Origin, "lvm vg %s: volume %s is declared twice", g.VG, lv.Name)
			}
			names[lv.Name] = true
			if lv.SizeBytes == 0 && lv.SizePercent == 0 && i != len(g.Volumes)-1 {
				return at(lv.Origin, "lvm vg %s: only the last volume may take the rest", g.VG)
			}
			if err := checkVolume(lv.Origin, "lvm "+g.VG+"/"+lv.Name, lv.Volume); err != nil {
				return err
			}
		}
	}
	for _, c := range r.Caches {
		if known["cache:"+c.Name] {
			return at(c.Origin, "cache %s is declared twice", c.Name)
		}
		if err := validateCache(c, disks, r.Groups, at); err != nil {
			return err
		}
		known["cache:"+c.Name], known["origin:"+c.Name] = true, true
		if c.Volume.Encrypt != nil && !lvmKind(c.kind()) {
			return at(c.Origin, "cache %s: a bcache device cannot be encrypted yet; use kind lvmcache or writecache", c.Name)
		}
		if err := checkVolume(c.Origin, "cache "+c.Name, c.Volume); err != nil {
			return err
		}
	}
	for _, e := range r.Encrypted {
		use := "crypt:" + e.Key
		switch {
		case known[use]:
			return at(e.Origin, "encrypted partition %s is declared twice", e.Key)
		case len(members[use]) != 1:
			return at(e.Origin, "encrypted partition %s: %d partitions say use: %s, want one", e.Key, len(members[use]), use)
		case e.Volume.Encrypt == nil:
			return at(e.Origin, "encrypted partition %s: no encrypt (key_file)", e.Key)
		}
		known[use] = true
		if err := checkVolume(e.Origin, "encrypted partition "+e.Key, e.Volume); err != nil {
			return err
		}
	}
	for use, where := range members {
		if !known[use] {
			kind, name, _ := strings.Cut(use, ":")
			section := map[string]string{"raid": "raid: (name: " + name + ")", "lvm": "lvm: (vg: " + name + ")",
				"origin": "cache: (name: " + name + ")", "cache": "cache: (name: " + name + ")", "crypt": "encrypt: on the partition"}[kind]
			return disk.Usagef("%s says use: %s, but no %s declares it", where[0], use, section)
		}
	}
	return nil
}

// member is one stack member partition as planned, with its disk.
type member struct {
	path string
	part disk.PartPlan
	plan *disk.Plan
	disk *hwinfo.Disk
	ex   *hwinfo.Partition // in the facts; nil when the partition is new
}

// PlanStacks decides the stacks of req over the disks' plans (planned
// first, by PlanAll). It reads, never writes: sysfs and /dev for running
// arrays, pvs and lvs for LVM, the file systems on existing volumes, the
// mount table and mdadm.conf.
func (pl Planner) PlanStacks(ctx context.Context, req StackRequest, plans []*disk.Plan, reqs []disk.Request, host *hwinfo.Host) (*StackPlan, error) {
	if err := req.Validate(reqs); err != nil {
		return nil, err
	}
	sp := &StackPlan{Schema: StackPlanSchema, Unchanged: true}
	byUse := map[string][]member{}
	for _, p := range plans {
		var d *hwinfo.Disk
		if host != nil {
			d, _ = host.Device(p.Device)
		}
		for _, pp := range p.Partitions {
			if pp.Use == "" {
				continue
			}
			m := member{path: pp.Path, part: pp, plan: p, disk: d}
			if d != nil && p.Table == nil {
				for i := range d.Partitions {
					if d.Partitions[i].Number == pp.Number {
						m.ex = &d.Partitions[i]
					}
				}
			}
			byUse[pp.Use] = append(byUse[pp.Use], m)
		}
	}
	h := pl.HostOrLive()
	mounts, err := disk.ReadMounts(h, pl.Roots)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	if len(req.Arrays) > 0 {
		sp.MdadmConf = pl.Roots.HostPath("etc/mdadm.conf")
		if fi, err := h.Stat(pl.Roots.HostPath("etc/mdadm")); err == nil && fi.IsDir() {
			sp.MdadmConf = pl.Roots.HostPath("etc/mdadm/mdadm.conf")
		}
	}
	for _, a := range req.Arrays {
		ap, err := pl.planArray(a, byUse["raid:"+a.Name], req, mounts, sp.MdadmConf)
		if err != nil {
			return nil, withOrigin(a.Origin, err)
		}
		if ap.Create != nil || ap.Volume.changes() {
			sp.Unchanged = false
		}
		if ap.ChunkBytes > 0 && ap.Volume.FS == "xfs" && ap.Volume.Geometry == "" {
			sp.Notes = append(sp.Notes, fmt.Sprintf("md array %s is under %s: its xfs is made without the stripe geometry, as mkfs.xfs does for a small volume (with it, mkfs.xfs cannot make the log large enough)",
				ap.Name, units.FormatSize(minStripedXFSBytes)))
		}
		sp.Arrays = append(sp.Arrays, ap)
	}
	if len(req.Groups) > 0 {
		lvm, err := pl.readLVM(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range req.Groups {
			ms, crypts, err := pl.planMemberCrypts(g, byUse["lvm:"+g.VG], req)
			if err != nil {
				return nil, withOrigin(g.Origin, err)
			}
			gp, err := pl.planGroup(ctx, g, ms, req, lvm, mounts)
			if err != nil {
				return nil, withOrigin(g.Origin, err)
			}
			gp.Crypts = crypts
			for _, c := range crypts {
				if c.FSAfterOpen {
					gp.Replan, gp.spec, gp.members, gp.req, gp.mounts = true, g, ms, req, mounts
				}
			}
			if gp.VGCreate != nil || len(gp.PVCreate) > 0 || gp.VGExtend != nil {
				sp.Unchanged = false
			}
			for _, c := range crypts {
				if c.Changes() {
					sp.Unchanged = false
				}
			}
			for _, lv := range gp.Volumes {
				if lv.Create != nil || lv.Grow != nil || lv.Shrink != nil || lv.FSGrow != nil || lv.CryptResize != nil || lv.Volume.changes() {
					sp.Unchanged = false
				}
			}
			sp.Groups = append(sp.Groups, gp)
		}
	}
	if len(req.Caches) > 0 {
		if err := pl.planCaches(ctx, req, byUse, host, mounts, sp); err != nil {
			return nil, err
		}
	}
	for _, e := range req.Encrypted {
		ep, err := pl.planEncrypted(e, byUse["crypt:"+e.Key][0], req, mounts)
		if err != nil {
			return nil, withOrigin(e.Origin, err)
		}
		if ep.Volume.changes() {
			sp.Unchanged = false
		}
		sp.Encrypted = append(sp.Encrypted, ep)
	}
	if err := pl.checkMdadmConf(sp); err != nil {
		return nil, err
	}
	if err := pl.checkVolumePoints(sp, mounts); err != nil {
		return nil, err
	}
	if err := pl.checkKernel(ctx, sp); err != nil {
		return nil, err
	}
	return sp, nil
}

// checkVolumePoints refuses, before anything is made, a volume's mount
// point that another file system holds, or that an fstab line gives to
// something else: either would only fail after the array or group exists.
func (pl Planner) checkVolumePoints(sp *StackPlan, mounts []disk.MountEntry) error {
	var lines []fstab.Line
	fstabPath := pl.Roots.HostPath("etc/fstab")
	if b, err := pl.HostOrLive().ReadFile(fstabPath); err == nil {
		if lines, err = fstab.Parse(b); err != nil {
			return fmt.Errorf("%s: %w", fstabPath, err)
		}
	}
	for _, v := range sp.volumes() {
		if v.MountPoint == "" {
			continue
		}
		note, err := pl.CheckMountPoint(v.Device, v.MountPoint, v.MountArgv == nil, v.MountOver, mounts)
		if err != nil {
			return err
		}
		if note != "" {
			sp.Notes = append(sp.Notes, note)
		}
		if !v.Persist || v.Crypt != nil && v.Crypt.FSAfterOpen {
			// A closed LUKS2 volume's file system UUID is read once it
			// is open; its fstab line is checked then.
			continue
		}
		want := disk.FstabEntry(v.partPlan())
		for i, l := range lines {
			if l.Entry == nil {
				continue
			}
			samePoint := filepath.Clean(l.Entry.File) == v.MountPoint
			sameSpec := strings.EqualFold(l.Entry.Spec, want.Spec)
			if samePoint != sameSpec {
				return disk.Refuse(v.Device, fmt.Sprintf("%s line %d already says %q", fstabPath, i+1, l.Raw))
			}
		}
	}
	return nil
}

func withOrigin(origin string, err error) error {
	if origin == "" {
		return err
	}
	return fmt.Errorf("%s: %w", origin, err)
}

func (v VolumePlan) changes() bool { return v.Mkfs != nil || v.MountArgv != nil || v.Crypt.Changes() }

// arrayGeometry is the chunk and data members of a level over n members.
func arrayGeometry(level, n int, ms []member) (chunk uint64, data int) {
	switch level {
	case 0:
		data = n
	case 5:
		data = n - 1
	case 6:
		data = n - 2
	case 10:
		if n%2 == 0 {
			data = n / 2
		}
	default:
		return 0, 0
	}
	chunk = defaultChunkBytes
	for _, m := range ms {
		// A device that says its optimal I/O is a larger power-of-two
		// multiple of 4 KiB (a hardware RAID or SMR stripe under it)
		// gets chunks of that size.
		if m.disk != nil {
			if o := m.disk.OptimalIOBytes; o > chunk && o <= 4<<20 && o%4096 == 0 && o&(o-1) == 0 {
				chunk = o
			}
		}
	}
	return chunk, data
}

func (pl Planner) planArray(a ArraySpec, ms []member, req StackRequest, mounts []disk.MountEntry, conf string) (ArrayPlan, error) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].path < ms[j].path })
	ap := ArrayPlan{Name: a.Name, Device: pl.Roots.DevPath("md", a.Name), Level: a.Level, Metadata: mdMetadata, Origin: a.Origin}
	var smallest uint64
	for i, m := range ms {
		ap.Members = append(ap.Members, m.path)
		if i == 0 || m.part.SizeBytes < smallest {
			smallest = m.part.SizeBytes
		}
	}
	n := len(ms)
	ap.ChunkBytes, ap.DataMembers = arrayGeometry(a.Level, n, ms)
	switch a.Level {
	case 1:
		ap.SizeBytes = smallest
	case 10:
		ap.SizeBytes = smallest * uint64(n) / 2
	default:
		ap.SizeBytes = smallest * uint64(ap.DataMembers)
	}

	// What is running: an array holding the members, or one by this name.
	h := pl.HostOrLive()
	running := ""
	for _, m := range ms {
		if m.ex == nil {
			continue
		}
		for _, hd := range m.ex.Holders {
			if hd.Kind != "md" {
				continue
			}
			if !disk.MDNameIs(hd.DMName, a.Name) {
				return ap, disk.Refuse(m.path, fmt.Sprintf("%s is already a member of md array %s (%s), not of %s", m.path, hd.Name, orNone(hd.DMName), a.Name))
			}
			if running != "" && running != hd.Name {
				return ap, disk.Refuse(m.path, fmt.Sprintf("the members of %s are in two arrays, %s and %s", a.Name, running, hd.Name))
			}
			running = hd.Name
		}
	}
	if real, err := h.EvalSymlinks(ap.Device); err == nil {
		name := filepath.Base(real)
		slaves := pl.mdSlaves(name)
		switch {
		case running == "" && len(slaves) == 0:
			// The node of an array just stopped, which udev has not
			// removed yet: nothing runs there, mdadm --create takes it.
		case running == "":
			return ap, disk.Refuse(ap.Device, fmt.Sprintf("md array %s already exists as %s over %s, not the partitions planned", a.Name, name, strings.Join(slaves, ", ")))
		case name != running:
			return ap, disk.Refuse(ap.Device, fmt.Sprintf("%s is %s, but the members are in %s", ap.Device, name, running))
		}
	}
	vol := VolumePlan{Device: ap.Device, FS: a.Volume.FS, Label: a.Volume.Label, MkfsOpts: a.Volume.MkfsOpts,
		MountPoint: pl.ResolveMountPoint(a.Volume.Mount), MountOpts: a.Volume.MountOpts, MountOver: a.Volume.MountOver, Persist: a.Volume.Persist}
	geometry := stripeGeometry(vol.FS, ap.ChunkBytes, ap.DataMembers)
	if vol.FS == "xfs" && ap.SizeBytes < minStripedXFSBytes {
		geometry = ""
	}
	vol.Geometry = geometry
	if running != "" {
		ap.Existing = running
		if err := pl.checkArray(ap, running); err != nil {
			return ap, err
		}
		uuid, err := pl.mdUUID(running)
		if err != nil {
			return ap, err
		}
		ap.UUID = uuid
		ap.ConfLine = fmt.Sprintf("ARRAY %s metadata=%s UUID=%s", ap.Device, mdMetadata, ap.UUID)
		if !pl.confHas(conf, ap.ConfLine) {
			// A run killed between mdadm --create and the mdadm.conf
			// line, which comes before mkfs: whatever the new array
			// shows is what its members held before, not ours.
			ap.Wipe = []string{"wipefs", "--all", ap.Device}
			if err := pl.planVolumeOn(&vol, a.Volume.Encrypt, pl.Roots.DevPath(running), true, true, ap.SizeBytes, req, mounts, geometry); err != nil {
				return ap, err
			}
		} else if err := pl.planVolumeOn(&vol, a.Volume.Encrypt, pl.Roots.DevPath(running), false, false, ap.SizeBytes, req, mounts, geometry); err != nil {
			return ap, err
		}
	} else {
		ap.UUID = mdUUIDForm(pl.MakeUUID())
		ap.Create = []string{"mdadm", "--create", ap.Device, "--run", "--metadata=" + mdMetadata, "--name=" + a.Name,
			"--level=" + fmt.Sprint(a.Level), fmt.Sprintf("--raid-devices=%d", n), "--uuid=" + ap.UUID}
		if ap.ChunkBytes > 0 {
			ap.Create = append(ap.Create, fmt.Sprintf("--chunk=%dK", ap.ChunkBytes>>10))
		}
		ap.Create = append(ap.Create, ap.Members...)
		// A new array shows at its start what its members held there
		// before (an earlier array of the same layout, its file system):
		// it is wiped before anything else, and mkfs may overwrite.
		ap.Wipe = []string{"wipefs", "--all", ap.Device}
		if err := pl.planVolumeOn(&vol, a.Volume.Encrypt, "", true, true, ap.SizeBytes, req, mounts, geometry); err != nil {
			return ap, err
		}
	}
	ap.ConfLine = fmt.Sprintf("ARRAY %s metadata=%s UUID=%s", ap.Device, mdMetadata, ap.UUID)
	if vol.Persist {
		vol.FstabLine = disk.FstabEntryLine(vol.partPlan())
	}
	ap.Volume = vol
	return ap, nil
}

// checkArray refuses a running array that is not the one asked for: other
// level or other members.
func (pl Planner) checkArray(ap ArrayPlan, name string) error {
	h := pl.HostOrLive()
	b, err := h.ReadFile(pl.Roots.SysPath("block", name, "md", "level"))
	if err != nil {
		return fmt.Errorf("level of %s: %w", name, err)
	}
	if lvl := strings.TrimSpace(string(b)); lvl != fmt.Sprintf("raid%d", ap.Level) {
		return disk.Refuse(ap.Device, fmt.Sprintf("md array %s (%s) is %s, not raid%d asked (release it with --wipe first)", ap.Name, name, lvl, ap.Level))
	}
	have := pl.mdSlaves(name)
	var want []string
	for _, m := range ap.Members {
		want = append(want, filepath.Base(m))
	}
	sort.Strings(want)
	if strings.Join(have, ",") != strings.Join(want, ",") {
		return disk.Refuse(ap.Device, fmt.Sprintf("md array %s (%s) is built over %s, not %s (release it with --wipe first)", ap.Name, name, orNone(strings.Join(have, ", ")), strings.Join(want, ", ")))
	}
	return nil
}

// confHas says whether mdadm.conf holds line.
func (pl Planner) confHas(conf, line string) bool {
	b, err := pl.HostOrLive().ReadFile(conf)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// mdSlaves lists the member devices of a running md array, sorted.
func (pl Planner) mdSlaves(name string) []string {
	des, _ := pl.HostOrLive().ReadDir(pl.Roots.SysPath("block", name, "slaves"))
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	sort.Strings(out)
	return out
}

// mdUUID is a running array's UUID in mdadm's form, from sysfs.
func (pl Planner) mdUUID(name string) (string, error) {
	b, err := pl.HostOrLive().ReadFile(pl.Roots.SysPath("block", name, "md", "uuid"))
	if err != nil {
		return "", fmt.Errorf("uuid of %s: %w", name, err)
	}
	return mdUUIDForm(strings.TrimSpace(string(b))), nil
}

// mdUUIDForm writes a UUID as mdadm does: four groups of eight hex digits.
func mdUUIDForm(u string) string {
	hex := strings.ToLower(strings.NewReplacer("-", "", ":", "").Replace(u))
	if len(hex) != 32 {
		return u
	}
	return hex[0:8] + ":" + hex[8:16] + ":" + hex[16:24] + ":" + hex[24:32]
}

// stripeGeometry is the stripe geometry mkfs is given for chunk and data
// members: xfs's su=..,sw=.. (-d), ext4's stride=..,stripe_width=.. (-E,
// in 4 KiB blocks); "" for none.
func stripeGeometry(fs string, chunk uint64, data int) string {
	if chunk == 0 || data == 0 {
		return ""
	}
	switch fs {
	case "xfs":
		return fmt.Sprintf("su=%dk,sw=%d", chunk>>10, data)
	case "ext4":
		stride := chunk / 4096
		return fmt.Sprintf("stride=%d,stripe_width=%d", stride, stride*uint64(data))
	}
	return ""
}

// planFormat probes dev, from offset on, for a volume's signature and
// decides what the file system needs: none means mkfs (with geometry);
// the one asked for (type and label) means keeping it; another is refused
// for subject unless wipe, the refusal naming the volume as what.
func (pl Planner) planFormat(v *VolumePlan, dev string, offset int64, req StackRequest, geometry, subject, what string) error {
	f, err := pl.HostOrLive().OpenDevice(dev, false)
	if err != nil {
		return fmt.Errorf("probe %s: %w", dev, err)
	}
	size, err := f.Size()
	var sigs []probe.Signature
	if err == nil && size > uint64(offset) {
		sigs, err = disk.ProbeSignatures(io.NewSectionReader(f, offset, int64(size)-offset), int64(size)-offset)
	}
	f.Close()
	if err != nil {
		return fmt.Errorf("probe %s: %w", dev, err)
	}
	var found *probe.Signature
	if i := slices.IndexFunc(sigs, volumeSignature); i >= 0 {
		found = &sigs[i]
	}
	switch {
	case found == nil:
		v.FSUUID = pl.MakeUUID()
		v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, false, req.NoDiscard, geometry)
	case found.Type == v.FS && found.Label == v.Label:
		v.FSUUID, v.fsBytes, v.fsUsed = found.UUID, found.SizeBytes, found.UsedBytes
	case !req.Wipe:
		return disk.Refuse(subject, fmt.Sprintf("%s holds %s%s, not the %s asked (pass --wipe to replace it)", what, found.Type, disk.LabelSuffix(found.Label), v.FS))
	default:
		v.FSUUID = pl.MakeUUID()
		v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, true, req.NoDiscard, geometry)
	}
	return nil
}

// planVolume fills what the file system on an existing array or logical
// volume (node dev) still needs: none yet means mkfs; the one asked for
// means only mounting what is not mounted; another is refused unless wipe.
func (pl Planner) planVolume(v *VolumePlan, dev string, req StackRequest, mounts []disk.MountEntry, geometry string) error {
	h := pl.HostOrLive()
	if err := pl.planFormat(v, dev, 0, req, geometry, v.Device, v.Device); err != nil {
		return err
	}
	major, minor, err := h.DeviceNumber(dev)
	if err != nil {
		return err
	}
	devnum := fmt.Sprintf("%d:%d", major, minor)
	mountedThere := false
	for _, m := range mounts {
		if m.Devnum != devnum {
			continue
		}
		if v.MountPoint == "" || filepath.Clean(m.Point) != v.MountPoint {
			return disk.Refuse(v.Device, fmt.Sprintf("%s is mounted at %s", v.Device, m.Point))
		}
		if v.Mkfs != nil {
			return disk.Refuse(v.Device, fmt.Sprintf("%s is mounted at %s", v.Device, m.Point))
		}
		mountedThere = true
	}
	if v.MountPoint != "" && !mountedThere {
		v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
	}
	return nil
}

// mounted says whether v, planned by planVolume, is mounted now: at its
// mount point, since planVolume refuses one mounted anywhere else.
func (v *VolumePlan) mounted() bool {
	return v.MountPoint != "" && v.MountArgv == nil
}

// lvmState is what pvs and lvs say.
type lvmState struct {
	pvVG map[string]string            // PV node -> its VG ("" for none)
	lvs  map[string]map[string]uint64 // VG -> LV -> size in bytes
	// pvList is pvs's rows (node, VG) in its order: a group's missing
	// PVs are rows named "[unknown]", which pvVG keeps only one of.
	pvList [][2]string
	// pvUsed and pvFree are a PV's allocated and free bytes.
	pvUsed, pvFree map[string]uint64
}

// unusedMember says whether one of ms is a physical volume of vg that no
// volume uses.
func (st *lvmState) unusedMember(vg string, ms []member) bool {
	for _, m := range ms {
		if st.pvVG[m.path] == vg && st.pvUsed[m.path] == 0 && st.pvFree[m.path] > 0 {
			return true
		}
	}
	return false
}

// readLVM runs pvs and lvs (read-only) under ctx.
func (pl Planner) readLVM(ctx context.Context) (*lvmState, error) {
	st := &lvmState{pvVG: map[string]string{}, lvs: map[string]map[string]uint64{}, pvUsed: map[string]uint64{}, pvFree: map[string]uint64{}}
	h := pl.HostOrLive()
	out, err := h.Run(ctx, "pvs", "--noheadings", "--separator", "|", "-o", "pv_name,vg_name")
	if err != nil {
		return nil, lvmError("pvs", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) == 2 && f[0] != "" {
			st.pvVG[f[0]] = f[1]
			st.pvList = append(st.pvList, [2]string{f[0], f[1]})
		}
	}
	out, err = h.Run(ctx, "lvs", "--noheadings", "--separator", "|", "--units", "b", "--nosuffix", "-o", "vg_name,lv_name,lv_size")
	if err != nil {
		return nil, lvmError("lvs", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 || f[0] == "" {
			continue
		}
		var size uint64
		fmt.Sscanf(f[2], "%d", &size)
		if st.lvs[f[0]] == nil {
			st.lvs[f[0]] = map[string]uint64{}
		}
		st.lvs[f[0]][f[1]] = size
	}
	out, err = h.Run(ctx, "pvs", "--noheadings", "--separator", "|", "--units", "b", "--nosuffix", "-o", "pv_name,pv_used,pv_free")
	if err != nil {
		return nil, lvmError("pvs", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		var used, free uint64
		if len(f) == 3 && f[0] != "" {
			fmt.Sscanf(f[1], "%d", &used)
			fmt.Sscanf(f[2], "%d", &free)
			st.pvUsed[f[0]], st.pvFree[f[0]] = used, free
		}
	}
	return st, nil
}

func lvmError(prog string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%s is not installed: install the lvm2 package: %w", prog, disk.ErrMissingProgram)
	}
	return fmt.Errorf("%s: %w", prog, err)
}

func (pl Planner) planGroup(ctx context.Context, g GroupSpec, ms []member, req StackRequest, lvm *lvmState, mounts []disk.MountEntry) (GroupPlan, error) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].path < ms[j].path })
	gp := GroupPlan{VG: g.VG, ExtentBytes: lvmExtentBytes, Origin: g.Origin}
	var extents uint64
	for _, m := range ms {
		gp.PVs = append(gp.PVs, m.path)
		if m.part.SizeBytes > lvmMetadataBytes {
			extents += (m.part.SizeBytes - lvmMetadataBytes) / lvmExtentBytes
		}
	}
	gp.SizeBytes = extents * lvmExtentBytes
	g.Volumes = append([]LVSpec(nil), g.Volumes...)
	for i, lv := range g.Volumes {
		if lv.SizePercent > 0 {
			lv.SizeBytes = uint64(float64(extents)*lv.SizePercent/100) * lvmExtentBytes
			if lv.SizeBytes == 0 {
				return gp, disk.Usagef("lvm vg %s: %g%% of the group (%s) is less than one extent", g.VG, lv.SizePercent, units.FormatSize(gp.SizeBytes))
			}
			g.Volumes[i] = lv
		}
	}
	// The group's members as pvs sees them now.
	var others []string
	for pv, vg := range lvm.pvVG {
		if vg == g.VG && !contains(gp.PVs, pv) {
			others = append(others, pv)
		}
	}
	sort.Strings(others)
	if len(others) > 0 {
		return gp, disk.Usagef("lvm vg %s already exists on %s, not on the partitions planned", g.VG, strings.Join(others, ", "))
	}
	vgExists := false
	for _, m := range ms {
		vg, isPV := lvm.pvVG[m.path]
		switch {
		case !isPV:
			argv := []string{"pvcreate", "--metadatatype", "2", "--dataalignment", fmt.Sprintf("%dk", pvAlignment(m)>>10), m.path}
			gp.PVCreate = append(gp.PVCreate, argv)
		case vg == g.VG:
			vgExists = true
		case vg != "":
			return gp, disk.Refuse(m.path, fmt.Sprintf("%s is already a physical volume of vg %s", m.path, vg))
		}
	}
	if vgExists {
		// A member the plan adds to the group: a new physical volume,
		// or one in no group, extends it.
		var add []string
		for _, m := range ms {
			if vg, isPV := lvm.pvVG[m.path]; !isPV || vg == "" {
				add = append(add, m.path)
			}
		}
		if len(add) > 0 {
			gp.VGExtend = append([]string{"vgextend", g.VG}, add...)
		}
	} else {
		gp.VGCreate = append([]string{"vgcreate", "--physicalextentsize", fmt.Sprintf("%dk", lvmExtentBytes>>10), g.VG}, gp.PVs...)
	}
	var fixed uint64
	for _, lv := range g.Volumes {
		fixed += roundUp(lv.SizeBytes, lvmExtentBytes)
	}
	last := g.Volumes[len(g.Volumes)-1]
	need := fixed
	if last.SizeBytes == 0 {
		need += lvmExtentBytes
	}
	if need > gp.SizeBytes {
		return gp, disk.Usagef("lvm vg %s: the volumes need %s, the group has %s", g.VG, units.FormatSize(need), units.FormatSize(gp.SizeBytes))
	}
	have := lvm.lvs[g.VG]
	for name := range have {
		found := false
		for _, lv := range g.Volumes {
			found = found || lv.Name == name
		}
		if !found {
			return gp, disk.Refuse(g.VG, fmt.Sprintf("vg %s has volume %s, which the plan does not declare (release it with --wipe first)", g.VG, name))
		}
	}
	h := pl.HostOrLive()
	for _, lv := range g.Volumes {
		lp := LVPlan{Name: lv.Name, Path: pl.Roots.DevPath(g.VG, lv.Name), SizeBytes: roundUp(lv.SizeBytes, lvmExtentBytes)}
		vol := VolumePlan{Device: lp.Path, FS: lv.Volume.FS, Label: lv.Volume.Label, MkfsOpts: lv.Volume.MkfsOpts,
			MountPoint: pl.ResolveMountPoint(lv.Volume.Mount), MountOpts: lv.Volume.MountOpts, MountOver: lv.Volume.MountOver, Persist: lv.Volume.Persist}
		if size, ok := have[lv.Name]; ok {
			shrink := false
			switch {
			case lv.SizeBytes != 0 && size > lp.SizeBytes:
				more := fmt.Sprintf("%s has %s, more than the %s asked", lp.Path, units.FormatSize(size), units.FormatSize(lp.SizeBytes))
				switch {
				case !strings.HasPrefix(lv.Volume.FS, "ext"):
					return gp, withOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s: %s cannot shrink", more, lv.Volume.FS)))
				case !req.Shrink:
					return gp, withOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s: give --shrink to shrink it and its %s (unmounted)", more, lv.Volume.FS)))
				}
				shrink = true
				// Three steps, not lvreduce --resizefs: resize2fs wants a
				// file system checked since it was last mounted, which
				// LVM's fsadm checks only when it did the unmounting, and
				// the steps are then the same on every LVM. Each step run
				// again is harmless (resize2fs to the size it has does
				// nothing), so a run killed between them converges.
				lp.Shrink = [][]string{{"e2fsck", "-f", "-p", lp.Path},
					{"resize2fs", lp.Path, fmt.Sprintf("%dK", lp.SizeBytes>>10)},
					{"lvreduce", "--yes", "--size", fmt.Sprintf("%db", lp.SizeBytes), g.VG + "/" + lv.Name}}
				lp.FromBytes = size
			case lv.SizeBytes != 0 && size < lp.SizeBytes:
				lp.Grow = []string{"lvextend", "--resizefs", "--size", fmt.Sprintf("%db", lp.SizeBytes), g.VG + "/" + lv.Name}
				lp.FromBytes = size
			case lv.SizeBytes == 0 && gp.VGExtend != nil:
				// The rest of a group that grows: what the others leave.
				rest := gp.SizeBytes
				for _, o := range g.Volumes {
					if o.Name != lv.Name {
						rest -= max(have[o.Name], roundUp(o.SizeBytes, lvmExtentBytes))
					}
				}
				if rest > size {
					lp.Grow = []string{"lvextend", "--resizefs", "--extents", "+100%FREE", g.VG + "/" + lv.Name}
					lp.FromBytes, lp.SizeBytes = size, rest
				} else {
					lp.SizeBytes = size
				}
			case lv.SizeBytes == 0 && lvm.unusedMember(g.VG, ms):
				// The rest of a group one of whose (planned) members no
				// volume uses: added by a run that stopped after its
				// vgextend, before the lvextend. Free space on members
				// in use is not taken: "rest" was resolved when made.
				lp.Grow = []string{"lvextend", "--resizefs", "--extents", "+100%FREE", g.VG + "/" + lv.Name}
				lp.FromBytes, lp.SizeBytes = size, size
				for pv, vg := range lvm.pvVG {
					if vg == g.VG {
						lp.SizeBytes += lvm.pvFree[pv]
					}
				}
			default:
				lp.SizeBytes = size
			}
			node := lp.Path
			if real, err := h.EvalSymlinks(lp.Path); err == nil {
				node = real
			}
			if lv.Volume.Encrypt != nil && lp.Shrink != nil {
				return gp, withOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s is encrypted: diskprep does not shrink an encrypted volume (asked %s, it has %s)",
					lp.Path, units.FormatSize(lp.SizeBytes), units.FormatSize(size))))
			}
			if lv.Volume.Encrypt != nil && lp.Grow != nil {
				// The mapping and the file system on it grow after the
				// volume, in steps of their own: --resizefs knows no LUKS.
				lp.Grow = slices.DeleteFunc(lp.Grow, func(a string) bool { return a == "--resizefs" })
			}
			if err := pl.planVolumeOn(&vol, lv.Volume.Encrypt, node, false, false, size, req, mounts, ""); err != nil {
				return gp, withOrigin(lv.Origin, err)
			}
			// resize2fs shrinks only an unmounted file system, and only
			// the one asked for: a volume without it (mkfs planned) is
			// not shrunk blind.
			grow := pl.planFSGrow
			if vol.Crypt != nil {
				grow = pl.planCryptGrow
			}
			if err := grow(ctx, &lp, &vol, size); err != nil {
				return gp, withOrigin(lv.Origin, err)
			}
			switch {
			case shrink && vol.Mkfs != nil:
				return gp, withOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s holds no %s to shrink with it", lp.Path, vol.FS)))
			case shrink && vol.fsUsed >= lp.SizeBytes:
				// resize2fs would fail on it anyway; said before any step.
				return gp, withOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("its %s uses %s (files and metadata), more than the %s asked: resize2fs cannot shrink it that far",
					vol.FS, units.FormatSize(vol.fsUsed), units.FormatSize(lp.SizeBytes))))
			case shrink && vol.mounted():
				return gp, withOrigin(lv.Origin, disk.Refuse(lp.Path, fmt.Sprintf("%s is mounted at %s: %s shrinks only unmounted (umount %s, then prepare --shrink again)",
					lp.Path, vol.MountPoint, vol.FS, vol.MountPoint)))
			}
		} else {
			lp.Create = []string{"lvcreate", "--yes", "--wipesignatures", "y", "--name", lv.Name}
			if lv.SizeBytes == 0 {
				lp.Create = append(lp.Create, "--extents", "100%FREE")
			} else {
				lp.Create = append(lp.Create, "--size", fmt.Sprintf("%db", lp.SizeBytes))
			}
			lp.Create = append(lp.Create, g.VG)
			if err := pl.planVolumeOn(&vol, lv.Volume.Encrypt, "", true, false, lp.SizeBytes, req, mounts, ""); err != nil {
				return gp, withOrigin(lv.Origin, err)
			}
		}
		if vol.Persist {
			vol.FstabLine = disk.FstabEntryLine(vol.partPlan())
		}
		lp.Volume = vol
		gp.Volumes = append(gp.Volumes, lp)
	}
	return gp, nil
}

// planFSGrow plans growing the file system v of an existing volume of size
// bytes that is smaller than the volume by an extent or more,
// when nothing else resizes it and it is or will be mounted (both tools
// grow online). A mounted file system's size is asked of it (xfs_growfs
// -n, dumpe2fs -h: xfs keeps its superblock in its own cache, so the
// disk's copy may lag); an unmounted one's is its superblock's.
func (pl Planner) planFSGrow(ctx context.Context, lp *LVPlan, v *VolumePlan, size uint64) error {
	if lp.Grow != nil || lp.Shrink != nil || v.Crypt != nil {
		return nil
	}
	argv, fsBytes, err := pl.fsGrowTo(ctx, v, lp.Path, size)
	if argv != nil {
		lp.FSGrow, lp.FSBytes, lp.SizeBytes = argv, fsBytes, size
	}
	return err
}

// fsGrowTo is the command that grows the existing file system v on dev
// to fill room bytes, and the bytes it has now; nil when it is within an
// extent of that, unmounted for good, or not one diskprep grows.
func (pl Planner) fsGrowTo(ctx context.Context, v *VolumePlan, dev string, room uint64) ([]string, uint64, error) {
	if v.Mkfs != nil || v.MountPoint == "" || v.fsBytes == 0 {
		return nil, 0, nil
	}
	fsBytes := v.fsBytes
	if v.mounted() {
		var err error
		if fsBytes, err = pl.mountedFSBytes(ctx, v.FS, v.MountPoint, dev); err != nil {
			return nil, 0, err
		}
	}
	if fsBytes == 0 || fsBytes+lvmExtentBytes > room {
		return nil, 0, nil
	}
	switch {
	case v.FS == "xfs":
		return []string{"xfs_growfs", v.MountPoint}, fsBytes, nil
	case strings.HasPrefix(v.FS, "ext"):
		return []string{"resize2fs", dev}, fsBytes, nil
	}
	return nil, 0, nil
}

// The block count and size in xfs_growfs -n's data line and dumpe2fs -h.
var (
	xfsBlocks    = regexp.MustCompile(`(?m)^data\s*=\s*bsize=\d+\s+blocks=(\d+)`)
	xfsBlockSize = regexp.MustCompile(`(?m)^data\s*=\s*bsize=(\d+)`)
	extBlocks    = regexp.MustCompile(`(?m)^Block count:\s*(\d+)`)
	extBlockSize = regexp.MustCompile(`(?m)^Block size:\s*(\d+)`)
)

// mountedFSBytes asks a mounted xfs or ext file system its size: blocks
// times block size, as xfs_growfs -n and dumpe2fs -h print them (0 for
// another file system).
func (pl Planner) mountedFSBytes(ctx context.Context, fs, point, dev string) (uint64, error) {
	var argv []string
	var blocks, bsize *regexp.Regexp
	switch {
	case fs == "xfs":
		argv, blocks, bsize = []string{"xfs_growfs", "-n", point}, xfsBlocks, xfsBlockSize
	case strings.HasPrefix(fs, "ext"):
		argv, blocks, bsize = []string{"dumpe2fs", "-h", dev}, extBlocks, extBlockSize
	default:
		return 0, nil
	}
	out, err := pl.HostOrLive().Run(ctx, argv[0], argv[1:]...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	b, s := blocks.FindSubmatch(out), bsize.FindSubmatch(out)
	if b == nil || s == nil {
		return 0, fmt.Errorf("%s: no block count and size in %q", strings.Join(argv, " "), out)
	}
	n, _ := strconv.ParseUint(string(b[1]), 10, 64)
	m, _ := strconv.ParseUint(string(s[1]), 10, 64)
	return n * m, nil
}

// pvAlignment is where a PV's first extent starts: the partition
// alignment rule (1 MiB, or the physical sector and optimal I/O size).
func pvAlignment(m member) uint64 {
	if m.disk == nil {
		return mib
	}
	a, _ := disk.Alignment(m.disk.LogicalSectorBytes, m.disk.PhysicalSectorBytes, m.disk.OptimalIOBytes)
	return a
}

// checkMdadmConf refuses an mdadm.conf that already names an array's
// device or UUID with another line (written by hand, or for another
// array).
func (pl Planner) checkMdadmConf(sp *StackPlan) error {
	if len(sp.Arrays) == 0 {
		return nil
	}
	b, err := pl.HostOrLive().ReadFile(sp.MdadmConf)
	if err != nil {
		return nil
	}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "ARRAY" {
			continue
		}
		for _, ap := range sp.Arrays {
			if strings.TrimSpace(line) == ap.ConfLine {
				continue
			}
			if f[1] == ap.Device || strings.Contains(strings.ToLower(line), "uuid="+ap.UUID) {
				return disk.Refuse(ap.Device, fmt.Sprintf("%s line %d already says %q", sp.MdadmConf, i+1, strings.TrimSpace(line)))
			}
		}
	}
	return nil
}

func isNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }
