package disk

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/suggest"
	"github.com/diskprep/diskprep/internal/units"
)

const (
	mib = uint64(1) << 20

	// The GPT partition entry array go-diskfs writes: 128 entries of 128 bytes.
	gptEntryCount = 128
	gptEntryBytes = 128

	// An optimal I/O size that would push alignment beyond this is a device
	// reporting nonsense (0xffff sectors from some USB bridges), not a stripe.
	maxAlignBytes = 256 * mib
)

// Filesystems diskprep makes, with what each needs.
var filesystems = map[string]struct {
	mkfs     string
	pkg      string
	maxLabel int    // bytes; mkfs rejects longer labels
	minBytes uint64 // mkfs refuses smaller devices
}{
	"xfs":  {mkfs: "mkfs.xfs", pkg: "xfsprogs", maxLabel: 12, minBytes: 300 * mib},
	"ext4": {mkfs: "mkfs.ext4", pkg: "e2fsprogs", maxLabel: 16, minBytes: 16 * mib},
	// A swap area: mkswap wants ten pages; a 1 MiB floor keeps it useful.
	"swap": {mkfs: "mkswap", pkg: "util-linux", maxLabel: 15, minBytes: 1 * mib},
}

// memberMinBytes is the least a stack member partition may have: an md
// superblock and bitmap, or LVM's metadata area and one 4 MiB extent.
const memberMinBytes = 16 * mib

// MinFSBytes is the least room mkfs makes the file system fs in (0 for
// one not known here).
func MinFSBytes(fs string) uint64 { return filesystems[fs].minBytes }

// minBytes is the least room the partition asked for needs.
func (ps PartSpec) minBytes() uint64 {
	if ps.Use != "" {
		return memberMinBytes
	}
	return filesystems[ps.FS].minBytes
}

// PlanDisk decides everything Apply will do for req, from the host's facts.
// It writes nothing. For an image request it reads the image file (if any)
// to learn what is on it. Errors wrap ErrUsage (bad request) or ErrRefused
// (unsafe; the error names the reason and the evidence).
func PlanDisk(req Request, host *hwinfo.Host) (*Plan, error) { return Planner{}.PlanDisk(req, host) }

// PlanDisk is the package's PlanDisk on pl's machine.
func (pl Planner) PlanDisk(req Request, host *hwinfo.Host) (*Plan, error) {
	if err := validate(&req); err != nil {
		return nil, err
	}
	if host == nil {
		return nil, fmt.Errorf("plan %s: no host facts", req.Device)
	}
	if req.Image != "" {
		img, err := pl.InspectImage(req.Image)
		if err != nil {
			return nil, err
		}
		return pl.PlanImage(req, host, img)
	}
	d, err := pl.resolveDisk(req.Device, host)
	if err != nil {
		return nil, err
	}
	d, dmg := pl.liveFacts(d)
	return pl.planOnDisk(req, d, nil, dmg)
}

// PlanImage is PlanDisk for an image request, with the image file's state
// given (InspectImage reads it), so that planning itself stays pure.
func PlanImage(req Request, host *hwinfo.Host, img ImageState) (*Plan, error) {
	return Planner{}.PlanImage(req, host, img)
}

// PlanImage is the package's PlanImage on pl's machine.
func (pl Planner) PlanImage(req Request, host *hwinfo.Host, img ImageState) (*Plan, error) {
	if err := validate(&req); err != nil {
		return nil, err
	}
	if req.Image == "" {
		return nil, Usagef("no image file given")
	}
	subject := img.Path
	switch {
	case img.DeviceNode:
		return nil, Refuse(subject, fmt.Sprintf("%s is a device node, not an image file (use prepare %s)", req.Image, img.Path))
	case img.Exists && !img.Regular:
		return nil, Usagef("image %s exists and is not a regular file", img.Path)
	case !img.Exists && req.ImageSizeBytes == 0:
		return nil, Usagef("image %s does not exist: give its size with --size", img.Path)
	}
	size := req.ImageSizeBytes
	if size == 0 {
		size = img.SizeBytes
	}
	req.Partitions = append([]PartSpec(nil), req.Partitions...)
	for i := range req.Partitions {
		if req.Partitions[i].Mount != "" {
			req.Partitions[i].MountOpts = imageMountOpts(req.Partitions[i].MountOpts)
		}
	}
	ip := &ImagePlan{Path: img.Path, SizeBytes: size, SectorBytes: req.imageSector()}

	// Attached already: plan against the loop device's live facts.
	if host != nil && img.Exists {
		for i := range host.Disks {
			d := &host.Disks[i]
			if d.LoopBackingFile != img.Path {
				continue
			}
			if size != img.SizeBytes {
				return nil, Refuse(subject, fmt.Sprintf("%s is attached to %s with %s, not the %s asked", img.Path, d.Name, units.FormatSize(img.SizeBytes), units.FormatSize(size)))
			}
			d, dmg := pl.liveFacts(d)
			return pl.planOnDisk(req, d, ip, dmg)
		}
	}
	ip.Attach = true
	switch {
	case !img.Exists:
		ip.Create = true
		d := placeholderDisk(size, ip.SectorBytes)
		return pl.planOnDisk(req, &d, ip, damage{})
	case img.SizeBytes != size:
		if !req.Wipe {
			return nil, Refuse(subject, fmt.Sprintf("%s exists with %s, not the %s asked (pass --wipe to recreate it)", img.Path, units.FormatSize(img.SizeBytes), units.FormatSize(size)))
		}
		ip.Recreate = true
		d := placeholderDisk(size, ip.SectorBytes)
		p, err := pl.planOnDisk(req, &d, ip, damage{})
		if err != nil {
			return nil, err
		}
		p.Destroys = append([]string{fmt.Sprintf("image %s (%s) is recreated empty", img.Path, units.FormatSize(img.SizeBytes))}, p.Destroys...)
		return p, nil
	default:
		if img.Disk == nil {
			return nil, fmt.Errorf("plan %s: image contents not inspected", img.Path)
		}
		d := *img.Disk
		d.Name, d.Path = strings.TrimPrefix(LoopPlaceholder, "/dev/"), LoopPlaceholder
		d.Partitions = append([]hwinfo.Partition(nil), d.Partitions...)
		for i := range d.Partitions {
			d.Partitions[i].Name = PartitionName(d.Name, d.Partitions[i].Number)
			d.Partitions[i].Path = "/dev/" + d.Partitions[i].Name
		}
		if ip.SectorBytes != d.LogicalSectorBytes && d.PartitionTable != "" {
			// A table made for the other sector size cannot be the layout
			// asked for.
			d.PartitionTable = fmt.Sprintf("%s (for %d-byte sectors)", d.PartitionTable, d.LogicalSectorBytes)
		}
		d.LogicalSectorBytes, d.PhysicalSectorBytes = ip.SectorBytes, ip.SectorBytes
		return pl.planOnDisk(req, &d, ip, img.damage)
	}
}

func (r *Request) imageSector() uint64 {
	if r.ImageSectorBytes == 0 {
		return 512
	}
	return r.ImageSectorBytes
}

// placeholderDisk stands for the loop device a new image will get.
func placeholderDisk(size, sector uint64) hwinfo.Disk {
	return hwinfo.Disk{
		Name:                strings.TrimPrefix(LoopPlaceholder, "/dev/"),
		Path:                LoopPlaceholder,
		SizeBytes:           size,
		LogicalSectorBytes:  sector,
		PhysicalSectorBytes: sector,
		Transport:           "loop",
	}
}

// Validate checks the request on its own, without host facts: what is
// wrong with it is a usage error (ErrUsage) whatever the machine, but for
// a mount point that is one of the system's own directories, a refusal
// (ErrRefused) whatever the machine.
func (r Request) Validate() error { return validate(&r) }

func validate(req *Request) error {
	switch {
	case req.Device == "" && req.Image == "":
		return Usagef("no device or image given")
	case req.Device != "" && req.Image != "":
		return Usagef("give a device or an image, not both")
	case req.Device == "" && req.ImageSizeBytes > 0 && req.Image == "":
		return Usagef("--size is for --image")
	case len(req.Partitions) == 0:
		return Usagef("no partition asked for")
	case len(req.Partitions) > gptEntryCount:
		return Usagef("%d partitions asked for, GPT holds %d", len(req.Partitions), gptEntryCount)
	}
	if s := req.ImageSectorBytes; s != 0 && s != 512 && s != 4096 {
		return Usagef("image sector size %d: use 512 or 4096", s)
	}
	if req.Image != "" {
		abs, err := filepath.Abs(req.Image)
		if err != nil {
			return Usagef("image %s: %v", req.Image, err)
		}
		req.Image = abs
	}
	mounts := map[string]int{}
	for i := range req.Partitions {
		ps := &req.Partitions[i]
		n := i + 1
		if ps.Use != "" {
			if err := validateUse(n, *ps); err != nil {
				return err
			}
			continue
		}
		_, ok := filesystems[ps.FS]
		if !ok {
			return Usagef("partition %d: unknown filesystem %q%s: use xfs, ext4 or swap", n, ps.FS, suggest.Hint(ps.FS, []string{"xfs", "ext4", "swap"}, ""))
		}
		if ps.FS == "swap" && ps.Mount != "" {
			return Usagef("partition %d: a swap partition has no mount point (%s)", n, ps.Mount)
		}
		if ps.SizeBytes == 0 && ps.SizePercent == 0 && i != len(req.Partitions)-1 {
			return Usagef("partition %d: only the last partition may take the rest of the disk", n)
		}
		if err := CheckLabel(ps.FS, ps.Label); err != nil {
			return Usagef("partition %d: %v", n, err)
		}
		if ps.Mount != "" {
			if !filepath.IsAbs(ps.Mount) {
				return Usagef("partition %d: mount point %q is not an absolute path", n, ps.Mount)
			}
			given := ps.Mount
			ps.Mount = filepath.Clean(ps.Mount)
			if strings.ContainsAny(ps.Mount, "\n\t ") {
				return Usagef("partition %d: mount point %q is not usable for a data disk", n, ps.Mount)
			}
			// Checked here already, without the host, so that even a
			// bad request is told the reason that matters most.
			if why := systemMountPoint(ps.Mount, nil); why != "" {
				if given != ps.Mount {
					why += fmt.Sprintf(" (%s, cleaned)", given)
				}
				return Refuse(orNone(req.Device+req.Image), fmt.Sprintf("partition %d: %s", n, why))
			}
			if j, dup := mounts[ps.Mount]; dup {
				return Usagef("partitions %d and %d both mount at %s", j, n, ps.Mount)
			}
			mounts[ps.Mount] = n
		}
		if ps.Persist && ps.Mount == "" && ps.FS != "swap" {
			return Usagef("partition %d: --persist needs a mount point (--mount)", n)
		}
		if ps.MountOpts != "" && ps.Mount == "" {
			return Usagef("partition %d: mount options given but no mount point", n)
		}
		if ps.MountOver && ps.Mount == "" {
			return Usagef("partition %d: --mount-over given but no mount point", n)
		}
		if err := CheckMountOptions(ps.FS, ps.MountOpts); err != nil {
			return Usagef("partition %d: %v", n, err)
		}
		for _, o := range ps.MkfsOpts {
			if o == "" {
				return Usagef("partition %d: empty mkfs option", n)
			}
		}
	}
	return nil
}

// CheckLabel checks a file system label (also the GPT partition name):
// at most the bytes mkfs takes for fs, and only ASCII letters, digits,
// '-', '_' and '.', which every tool, /dev/disk/by-label and an fstab
// LABEL= take as they are.
func CheckLabel(fs, label string) error {
	if max := filesystems[fs].maxLabel; len(label) > max {
		return fmt.Errorf("label %q is %d bytes, longer than the %d %s allows", label, len(label), max, fs)
	}
	for _, r := range label {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("label %q: %q is not allowed: use letters, digits, '-', '_' or '.'", label, r)
		}
	}
	return nil
}

// resolveDisk finds the whole disk a user's argument names in the facts.
func (pl Planner) resolveDisk(name string, host *hwinfo.Host) (*hwinfo.Disk, error) {
	lookup := func(n string) (*hwinfo.Disk, error) {
		d, p := host.Device(n)
		if p != nil {
			return nil, Refuse(n, fmt.Sprintf("%s is a partition of %s; give the whole disk (%s)", p.Name, d.Name, d.Path))
		}
		if d != nil {
			return d, nil
		}
		for i := range host.Disks {
			for _, id := range host.Disks[i].ByID {
				if id == n || filepath.Base(id) == filepath.Base(n) && strings.HasPrefix(n, "/dev/disk/by-id/") {
					return &host.Disks[i], nil
				}
			}
		}
		return nil, nil
	}
	if d, err := lookup(name); d != nil || err != nil {
		return d, err
	}
	path := name
	if !strings.HasPrefix(path, "/") {
		path = "/dev/" + name
	}
	st, err := statDevicePath(pl.HostOrLive(), path)
	if IsRefusal(err) {
		return nil, err
	}
	if err != nil {
		return nil, Usagef("device %s does not exist", name)
	}
	if !st.Block {
		return nil, Refuse(name, fmt.Sprintf("%s is not a block device", name))
	}
	if st.Resolved != "" && st.Resolved != path {
		if d, err := lookup(st.Resolved); d != nil || err != nil {
			return d, err
		}
	}
	return nil, Refuse(name, fmt.Sprintf("%s is a block device the inventory does not list as a disk", name))
}

// planOnDisk is the heart of planning: layout, safety, idempotency, argv.
// dmg is what the disk's bytes add to its facts (a half-written table, an
// unfinished filesystem): such a disk is never taken as prepared.
func (pl Planner) planOnDisk(req Request, d *hwinfo.Disk, img *ImagePlan, dmg damage) (*Plan, error) {
	subject := d.Name
	if img != nil {
		subject = img.Path
	}
	if err := admitDisk(subject, d, req.Partitions); err != nil {
		return nil, err
	}
	fp := Fingerprint{Serial: d.Serial, WWN: d.WWN, SizeBytes: d.SizeBytes, TableType: d.PartitionTable, TableID: d.PartitionTableID}
	if req.Expect != nil {
		if diff := fp.diff(*req.Expect); diff != "" {
			return nil, Refuse(subject, fmt.Sprintf("%s changed since the plan was made: %s", d.Name, diff))
		}
	}
	// After the fingerprint, which Apply compares with facts read afresh.
	d = dmg.mark(d)
	if d.SizeBytes == 0 || d.LogicalSectorBytes == 0 {
		return nil, Refuse(subject, fmt.Sprintf("size or sector size of %s is unknown", d.Name))
	}
	if d.LogicalSectorBytes&(d.LogicalSectorBytes-1) != 0 || d.LogicalSectorBytes < 512 {
		return nil, Refuse(subject, fmt.Sprintf("%s reports a logical sector of %d bytes", d.Name, d.LogicalSectorBytes))
	}

	table, extents, notes, err := layoutGPT(d, req.Partitions)
	if err != nil {
		// A disk in use is refused for that first: what holds it (an LVM
		// volume group, an array) matters more than a plan that does not
		// fit, which would hide it.
		if err := admitLayout(subject, d, nil, existingState{kind: layoutDiffers}, false); err != nil {
			return nil, err
		}
		return nil, Refuse(subject, err.Error())
	}
	p := &Plan{
		Schema:      PlanSchema,
		Device:      diskPath(d),
		Image:       img,
		Disk:        summarize(d),
		Fingerprint: fp,
		Wipe:        req.Wipe,
		Partitions:  make([]PartPlan, len(req.Partitions)),
		Notes:       notes,
		Origin:      req.Origin,
	}
	for i, ps := range req.Partitions {
		n := i + 1
		name := PartitionName(d.Name, n)
		p.Partitions[i] = PartPlan{
			Number:     n,
			Name:       name,
			Path:       "/dev/" + name,
			Label:      ps.Label,
			TypeGUID:   partType(ps),
			StartLBA:   extents[i].start,
			EndLBA:     extents[i].end,
			StartBytes: extents[i].start * table.SectorBytes,
			SizeBytes:  (extents[i].end - extents[i].start + 1) * table.SectorBytes,
			FS:         ps.FS,
			Use:        ps.Use,
			FSLabel:    ps.Label,
			MkfsOpts:   ps.MkfsOpts,
			MountPoint: pl.ResolveMountPoint(ps.Mount),
			MountOpts:  ps.MountOpts,
			MountOver:  ps.MountOver,
			Persist:    ps.Persist,
		}
	}

	state := compareExisting(d, p.Partitions)
	if state.kind == layoutMatches && req.Fresh && req.Wipe {
		state = existingState{kind: layoutDiffers}
	}
	if err := admitLayout(subject, d, p.Partitions, state, false); err != nil {
		return nil, err
	}
	switch state.kind {
	case layoutMatches:
		p.Notes = append(p.Notes, fmt.Sprintf("%s already has this GPT layout; the table is kept", d.Name))
		for i := range p.Partitions {
			pp := &p.Partitions[i]
			ex := state.parts[i]
			pp.PartGUID = strings.ToUpper(ex.PartUUID)
			switch {
			case pp.Use != "":
				// The stack's own plan (PlanStacks) decides what its
				// member still needs.
				continue
			case ex.FSType != "":
				pp.FSUUID = ex.FSUUID
			default:
				pp.FSUUID = pl.MakeUUID()
				pp.Mkfs = mkfsArgv(*pp, false, req.NoDiscard)
			}
			if pp.FS == "swap" && !ex.Swap {
				pp.MountArgv = swaponArgv(*pp)
			}
			if pp.MountPoint != "" && !mountedAt(ex.Mounts, pp.MountPoint) {
				pp.MountArgv = mountArgv(*pp)
			}
		}
	case layoutDiffers:
		if !req.Wipe {
			return nil, notEmpty(subject, d.Name, describeContents(d))
		}
		fallthrough
	default:
		p.Destroys = describeContents(d)
		table.DiskGUID = strings.ToUpper(pl.MakeUUID())
		p.Table = &table
		for i := range p.Partitions {
			pp := &p.Partitions[i]
			pp.PartGUID = strings.ToUpper(pl.MakeUUID())
			if (pp.Use != "" || pp.FS == "swap") && !req.NoDiscard && d.Transport != "loop" && !d.Rotational {
				// New space on an SSD: tell it the old blocks are free.
				// mkfs does so itself; a stack member or swap area
				// gets blkdiscard.
				pp.Discard = []string{"blkdiscard", pp.Path}
			}
			if pp.Use != "" {
				continue
			}
			pp.FSUUID = pl.MakeUUID()
			pp.Mkfs = mkfsArgv(*pp, req.Wipe, req.NoDiscard)
			switch {
			case pp.FS == "swap":
				pp.MountArgv = swaponArgv(*pp)
			case pp.MountPoint != "":
				pp.MountArgv = mountArgv(*pp)
			}
		}
	}
	var mounts []MountEntry
	for _, pp := range p.Partitions {
		if pp.MountPoint == "" || pp.FS == "swap" {
			continue
		}
		if mounts == nil {
			if mounts, err = ReadMounts(pl.HostOrLive(), pl.Roots); err != nil {
				return nil, fmt.Errorf("read mounts: %w", err)
			}
		}
		note, err := pl.CheckMountPoint(subject, pp.MountPoint, pp.MountArgv == nil, pp.MountOver, mounts)
		if err != nil {
			return nil, err
		}
		if note != "" {
			p.Notes = append(p.Notes, note)
		}
	}
	p.Unchanged = p.Table == nil
	for i := range p.Partitions {
		pp := &p.Partitions[i]
		if pp.Mkfs != nil || pp.MountArgv != nil {
			p.Unchanged = false
		}
		if pp.Persist {
			pp.FstabLine = FstabEntryLine(*pp)
		}
	}
	if img != nil && (img.Attach || img.Create) {
		p.Unchanged = false
	}
	return p, nil
}

func summarize(d *hwinfo.Disk) DiskSummary {
	pss := d.PhysicalSectorBytes
	if pss == 0 {
		pss = d.LogicalSectorBytes
	}
	return DiskSummary{
		Name: d.Name, Model: strings.TrimSpace(d.Vendor + " " + d.Model), Serial: d.Serial, WWN: d.WWN,
		Transport: d.Transport, SizeBytes: d.SizeBytes,
		LogicalSectorBytes: d.LogicalSectorBytes, PhysicalSectorBytes: pss, OptimalIOBytes: d.OptimalIOBytes,
	}
}

type extent struct{ start, end uint64 } // LBAs, inclusive

// Alignment is the partition alignment for a disk: 1 MiB, or a multiple of
// the physical sector and the optimal I/O size when those do not divide it.
// The note explains an optimal I/O size that was ignored.
func Alignment(lss, pss, optIO uint64) (align uint64, note string) {
	align = lcm(mib, lss)
	if pss > 0 {
		align = lcm(align, pss)
	}
	if optIO > 0 {
		switch l := lcm(align, optIO); {
		case optIO%lss != 0:
			note = fmt.Sprintf("optimal I/O size %d is not a multiple of the %d-byte sector: ignored", optIO, lss)
		case l > maxAlignBytes:
			note = fmt.Sprintf("optimal I/O size %d would align partitions to %s: ignored", optIO, units.FormatSize(l))
		default:
			align = l
		}
	}
	return align, note
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b uint64) uint64 { return a / gcd(a, b) * b }

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// layoutGPT places the partitions: each starts on an alignment boundary, the
// last "rest" partition ends on one too, and both GPT copies keep their room
// (header + 16 KiB entry array at the start, the same mirrored at the end).
func layoutGPT(d *hwinfo.Disk, specs []PartSpec) (TablePlan, []extent, []string, error) {
	lss := d.LogicalSectorBytes
	align, note := Alignment(lss, d.PhysicalSectorBytes, d.OptimalIOBytes)
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	total := d.SizeBytes / lss
	entrySectors := roundUp(gptEntryCount*gptEntryBytes, lss) / lss
	t := TablePlan{
		Type:           "gpt",
		SectorBytes:    lss,
		TotalSectors:   total,
		AlignBytes:     align,
		FirstUsableLBA: 2 + entrySectors,
	}
	if total < 2*(2+entrySectors)+1 {
		return t, nil, nil, fmt.Errorf("%s (%s) is too small for a partition table", d.Name, units.FormatSize(d.SizeBytes))
	}
	t.LastUsableLBA = total - 2 - entrySectors
	alignSec := align / lss
	next := roundUp(t.FirstUsableLBA, alignSec)
	out := make([]extent, len(specs))
	for i, s := range specs {
		start := next
		var end uint64
		if start > t.LastUsableLBA {
			return t, nil, nil, fmt.Errorf("%s (%s) is too small for the plan: no room for partition %d", d.Name, units.FormatSize(d.SizeBytes), i+1)
		}
		if s.SizePercent > 0 {
			// A share of the whole disk, whatever comes before it.
			s.SizeBytes = uint64(float64(d.SizeBytes)*s.SizePercent/100) / align * align
			if s.SizeBytes == 0 {
				return t, nil, nil, fmt.Errorf("%s (%s) is too small for the plan: %g%% of it is less than one %s alignment unit", d.Name, units.FormatSize(d.SizeBytes), s.SizePercent, units.FormatSize(align))
			}
			if start+s.SizeBytes/lss-1 > t.LastUsableLBA {
				s.SizeBytes = 0 // up to the last usable, aligned sector
			}
		}
		if s.SizeBytes == 0 {
			endExcl := (t.LastUsableLBA + 1) / alignSec * alignSec
			if endExcl <= start {
				endExcl = t.LastUsableLBA + 1
			}
			end = endExcl - 1
		} else {
			end = start + roundUp(s.SizeBytes, lss)/lss - 1
			if end > t.LastUsableLBA {
				return t, nil, nil, fmt.Errorf("%s (%s) is too small for the plan: partition %d of %s ends beyond the last usable sector", d.Name, units.FormatSize(d.SizeBytes), i+1, units.FormatSize(s.SizeBytes))
			}
		}
		size := (end - start + 1) * lss
		if min := s.minBytes(); size < min {
			what := s.FS
			if s.Use != "" {
				what = s.Use
			}
			return t, nil, nil, fmt.Errorf("%s (%s) is too small for the plan: partition %d would have %s, %s needs at least %s", d.Name, units.FormatSize(d.SizeBytes), i+1, units.FormatSize(size), what, units.FormatSize(min))
		}
		out[i] = extent{start, end}
		next = roundUp(end+1, alignSec)
	}
	return t, out, notes, nil
}

// partType is the GPT partition type for what the partition holds.
func partType(ps PartSpec) string {
	switch {
	case strings.HasPrefix(ps.Use, "raid:"):
		return LinuxRAIDGUID
	case strings.HasPrefix(ps.Use, "lvm:"):
		return LinuxLVMGUID
	case strings.HasPrefix(ps.Use, "crypt:"):
		return LinuxLUKSGUID
	case ps.FS == "swap":
		return LinuxSwapGUID
	}
	return LinuxFilesystemGUID
}

func mkfsArgv(pp PartPlan, force, noDiscard bool) []string {
	return MkfsFor(pp.FS, pp.FSLabel, pp.FSUUID, pp.MkfsOpts, pp.Path, force, noDiscard, "")
}

// MkfsFor is the mkfs argv for fs on dev. geometry is the stripe geometry
// an array implies (stripeGeometry: xfs's -d su=..,sw=.., ext4's
// stride=..,stripe_width=.. in 4 KiB blocks, so ext4 gets -b 4096 with it:
// below 512 MiB mke2fs would pick 1 KiB blocks and read the stride in
// those). ext4's extended options go in one -E: mke2fs keeps only the last.
func MkfsFor(fsName, label, uuid string, opts []string, dev string, force, noDiscard bool, geometry string) []string {
	pp := PartPlan{FS: fsName, FSLabel: label, FSUUID: uuid}
	fs := filesystems[pp.FS]
	argv := []string{fs.mkfs}
	switch pp.FS {
	case "swap":
		if force {
			argv = append(argv, "-f")
		}
		if pp.FSLabel != "" {
			argv = append(argv, "-L", pp.FSLabel)
		}
		argv = append(argv, "-U", pp.FSUUID)
	case "xfs":
		// -f only when the user allowed destroying data: without it,
		// mkfs.xfs refuses a partition holding an old filesystem, a last
		// line of defence against a wrong plan.
		if force {
			argv = append(argv, "-f")
		}
		if pp.FSLabel != "" {
			argv = append(argv, "-L", pp.FSLabel)
		}
		argv = append(argv, "-m", "uuid="+pp.FSUUID)
		if noDiscard {
			argv = append(argv, "-K")
		}
	case "ext4":
		if force {
			argv = append(argv, "-F")
		}
		if pp.FSLabel != "" {
			argv = append(argv, "-L", pp.FSLabel)
		}
		argv = append(argv, "-U", pp.FSUUID)
		var ext []string
		if noDiscard {
			ext = append(ext, "nodiscard")
		}
		if geometry != "" {
			argv = append(argv, "-b", "4096")
			ext = append(ext, geometry)
		}
		if len(ext) > 0 {
			argv = append(argv, "-E", strings.Join(ext, ","))
		}
	}
	if pp.FS == "xfs" && geometry != "" {
		argv = append(argv, "-d", geometry)
	}
	argv = append(argv, opts...)
	return append(argv, dev)
}

func swaponArgv(pp PartPlan) []string { return []string{"swapon", pp.Path} }

func mountArgv(pp PartPlan) []string { return MountFor(pp.FS, pp.MountOpts, pp.Path, pp.MountPoint) }

// MountFor is the mount argv of the fs on dev at point, with opts.
func MountFor(fs, opts, dev, point string) []string {
	argv := []string{"mount", "-t", fs}
	if opts != "" {
		argv = append(argv, "-o", opts)
	}
	return append(argv, dev, point)
}

func mountedAt(ms []hwinfo.Mount, point string) bool {
	for _, m := range ms {
		if filepath.Clean(m.Point) == point {
			return true
		}
	}
	return false
}

var StackName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,62}$`)

// validateUse checks a partition's Use on its own.
func validateUse(n int, ps PartSpec) error {
	kind, name, _ := strings.Cut(ps.Use, ":")
	switch {
	case kind != "raid" && kind != "lvm" && kind != "origin" && kind != "cache" && kind != "crypt":
		return Usagef("partition %d: use %q: want raid:NAME, lvm:VG, origin:CACHE or cache:CACHE", n, ps.Use)
	case !StackName.MatchString(name):
		return Usagef("partition %d: use %q: name %q: use letters, digits, '_', '.', '+' or '-'", n, ps.Use, name)
	case ps.FS != "":
		return Usagef("partition %d: use %s takes no fs (%s goes on the %s, not the partition)", n, ps.Use, ps.FS, map[string]string{"raid": "array", "lvm": "logical volume", "origin": "cached volume", "cache": "cached volume", "crypt": "LUKS2 mapping"}[kind])
	case ps.Mount != "" || ps.Persist || ps.MountOpts != "" || len(ps.MkfsOpts) > 0:
		return Usagef("partition %d: use %s: mount, options, mkfs options and persist belong to the stack's file system", n, ps.Use)
	}
	return nil
}

// FSPackage names the package that brings the mkfs of fs.
func FSPackage(fs string) string { return filesystems[fs].pkg }
