package disk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/diskprep/diskprep/disk/fstab"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// DiffSchema names the JSON shape of `prepare --diff`.
const DiffSchema = "diskprep/plan-diff/v1"

// WriteChanges prints one aligned line per change and a count.
func WriteChanges(w io.Writer, cs []Change) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	n := map[string]int{}
	for _, c := range cs {
		n[c.Act]++
		what := c.What
		if c.Act == ActChange && c.From != "" {
			what = c.From + " -> " + c.What
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Act, c.Layer, c.Device, what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !Changed(cs) {
		_, err := fmt.Fprintf(w, "no change: %d layers already as planned\n", n[ActKeep])
		return err
	}
	_, err := fmt.Fprintf(w, "%d to create, %d to change, %d to destroy, %d kept\n", n[ActCreate], n[ActChange], n[ActDestroy], n[ActKeep])
	return err
}

// DiffPlan lists, layer by layer, what Apply would do with p: d is the disk
// as the facts read it (nil for an image not attached yet) and fstabLines
// the host's fstab as it is. It reads nothing itself.
func DiffPlan(p *Plan, d *hwinfo.Disk, fstabLines []fstab.Line) []Change {
	var cs []Change
	add := func(act, layer, dev, what string) {
		cs = append(cs, Change{Act: act, Layer: layer, Device: dev, What: what})
	}
	if im := p.Image; im != nil {
		switch {
		case im.Create:
			add(ActCreate, "image", im.Path, "sparse file of "+units.FormatSize(im.SizeBytes))
		case im.Recreate:
			cs = append(cs, Change{Act: ActChange, Layer: "image", Device: im.Path, What: "emptied, " + units.FormatSize(im.SizeBytes), From: "its contents"})
		default:
			add(ActKeep, "image", im.Path, units.FormatSize(im.SizeBytes))
		}
		if im.Attach {
			add(ActCreate, "loop", p.Device, fmt.Sprintf("attached to %s, %d-byte sectors", im.Path, im.SectorBytes))
		} else {
			add(ActKeep, "loop", p.Device, "attached to "+im.Path)
		}
	}
	on := diskName(p)
	if p.Table != nil && d != nil {
		if d.FSType != "" {
			add(ActDestroy, "signature", d.Path, fmt.Sprintf("%s on the whole disk%s%s, %s", d.FSType, LabelSuffix(d.FSLabel), uuidSuffix(d.FSUUID), on))
		}
		for _, ex := range d.Partitions {
			add(ActDestroy, "partition", ex.Path, describePartition(ex)+", "+on)
		}
	}
	newTable := ""
	if p.Table != nil {
		newTable = fmt.Sprintf("gpt %s, %d partition", p.Table.DiskGUID, len(p.Partitions))
		if len(p.Partitions) != 1 {
			newTable += "s"
		}
	}
	old := p.Fingerprint.TableType + " " + p.Fingerprint.TableID
	if p.Fingerprint.TableType == "gpt" {
		old = "gpt " + strings.ToUpper(p.Fingerprint.TableID) // as planned GUIDs are written
	}
	switch {
	case p.Table == nil:
		add(ActKeep, "table", p.Device, strings.TrimSpace(old))
	case p.Fingerprint.TableType != "":
		cs = append(cs, Change{Act: ActChange, Layer: "table", Device: p.Device, What: newTable, From: strings.TrimSpace(old)})
	default:
		add(ActCreate, "table", p.Device, newTable)
	}
	for _, pp := range p.Partitions {
		act := ActKeep
		if p.Table != nil {
			act = ActCreate
		}
		what := fmt.Sprintf("%d: %s", pp.Number, units.FormatSize(pp.SizeBytes))
		if pp.Label != "" {
			what += fmt.Sprintf(" %q", pp.Label)
		}
		if pp.Use != "" {
			what += ", member of " + pp.Use
		}
		add(act, "partition", pp.Path, what)
		if pp.Use == "" {
			cs = append(cs, FileSystemChanges(pp, fstabLines)...)
		}
	}
	return cs
}

// FileSystemChanges are the filesystem, mount and fstab lines of pp (a
// partition, or a stack's volume given as one): created where its argv is
// set, kept where nil.
func FileSystemChanges(pp PartPlan, fstabLines []fstab.Line) []Change {
	var cs []Change
	add := func(act, layer, what string) {
		cs = append(cs, Change{Act: act, Layer: layer, Device: pp.Path, What: what})
	}
	act := func(argv []string) string {
		if argv != nil {
			return ActCreate
		}
		return ActKeep
	}
	if pp.FS == "swap" {
		add(act(pp.Mkfs), "swap", "swap area"+uuidSuffix(pp.FSUUID))
		if pp.MountArgv != nil || pp.Persist {
			add(act(pp.MountArgv), "swapon", "active")
		}
	} else if pp.FS != "" {
		add(act(pp.Mkfs), "filesystem", pp.FS+LabelSuffix(pp.FSLabel)+uuidSuffix(pp.FSUUID))
		if pp.MountPoint != "" {
			what := "at " + pp.MountPoint
			if pp.MountOpts != "" {
				what += " (" + pp.MountOpts + ")"
			}
			add(act(pp.MountArgv), "mount", what)
		}
	}
	if pp.Persist {
		e := FstabEntry(pp)
		a := ActCreate
		if fstab.Has(fstabLines, e) {
			a = ActKeep
		}
		add(a, "fstab", fstab.EntryLine(e))
	}
	return cs
}

func diskName(p *Plan) string {
	s := "on " + p.Device
	if p.Disk.Model != "" {
		s += " (" + p.Disk.Model
		if p.Disk.Serial != "" {
			s += " serial " + p.Disk.Serial
		}
		s += ")"
	} else if p.Disk.Serial != "" {
		s += " (serial " + p.Disk.Serial + ")"
	}
	return s
}

func describePartition(ex hwinfo.Partition) string {
	s := units.FormatSize(ex.SizeBytes)
	if ex.FSType != "" {
		s += ", " + ex.FSType + LabelSuffix(ex.FSLabel) + uuidSuffix(ex.FSUUID)
	} else {
		s += ", no signature"
	}
	return s
}

func uuidSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " UUID " + u
}

// DiffResult is what Diff found.
type DiffResult struct {
	Changes []Change
	// Fstab is the host's fstab as read, for the stacks' diff.
	Fstab []fstab.Line
	// Notes say what could not be read (a device without the right to
	// open it), so the diff may be incomplete.
	Notes []string
	// Refusal is the guard's refusal of a plan for what the diff found
	// on its disk (stale signatures, and no Wipe); nil when none.
	Refusal error
}

// Diff is DiffPlan of every plan against the facts, with the fstab read
// through deps' host, and the stale signatures Apply would meet inside the
// new partitions (staleSignatures). It reads only.
func Diff(plans []*Plan, facts *hwinfo.Host, deps Deps) (*DiffResult, error) {
	a := newApplier(deps)
	lines, err := a.readFstab()
	if err != nil {
		return nil, err
	}
	r := &DiffResult{Fstab: lines}
	for _, p := range plans {
		var d *hwinfo.Disk
		if facts != nil && p.Device != LoopPlaceholder {
			if dd, part := facts.Device(p.Device); part == nil {
				d = dd
			}
		}
		pc := DiffPlan(p, d, lines)
		for i, c := range pc {
			if c.Act == ActDestroy && c.Layer == "partition" {
				pc[i].What = a.withUsed(c.Device, c.What)
			}
		}
		stale, err := a.staleSignatures(p, d)
		if err != nil {
			r.Notes = append(r.Notes, err.Error())
		}
		if len(stale) > 0 {
			// Wiped before the table is written: after the destroyed
			// partitions, before the table line.
			i := 0
			for i < len(pc) && pc[i].Layer != "table" {
				i++
			}
			pc = append(pc[:i], append(stale, pc[i:]...)...)
			if !p.Wipe && r.Refusal == nil {
				var what []string
				for _, c := range stale {
					what = append(what, c.What)
				}
				r.Refusal = notEmpty(p.Device, p.Device, what)
			}
		}
		r.Changes = append(r.Changes, pc...)
	}
	return r, nil
}

// staleSignatures are the signatures inside the regions of the partitions
// p would make that no partition of the disk starts with today: an old md
// superblock at a region's end, an LVM label or a bcache superblock near
// its start, left by an earlier layout. Apply finds them with the same
// probe (signaturesToWipe) and wipes them, with Wipe, before the table
// is written; without Wipe it refuses. Read-only.
func (a *applier) staleSignatures(p *Plan, d *hwinfo.Disk) ([]Change, error) {
	if p.Table == nil || p.Device == LoopPlaceholder || (p.Image != nil && (p.Image.Create || p.Image.Recreate)) {
		return nil, nil
	}
	f, err := a.host.OpenDevice(p.Device, false)
	if err != nil {
		return nil, fmt.Errorf("not looked for old signatures inside the new partitions of %s: %v", p.Device, err)
	}
	defer f.Close()
	var cs []Change
	for _, pp := range p.Partitions {
		sigs, err := ProbeSignatures(io.NewSectionReader(f, int64(pp.StartBytes), int64(pp.SizeBytes)), int64(pp.SizeBytes))
		if err != nil {
			return cs, fmt.Errorf("not looked for old signatures inside %s: %v", pp.Path, err)
		}
		for _, s := range sigs {
			if d != nil && startsWith(d.Partitions, pp.StartBytes, s.Type) {
				continue // its partition's destroy line says so
			}
			what := fmt.Sprintf("%s signature, its magic at byte %d of the new partition %d%s", s.Type, s.Offset, pp.Number, LabelSuffix(s.Label))
			cs = append(cs, Change{Act: ActDestroy, Layer: "signature", Device: pp.Path, What: what + uuidSuffix(s.UUID)})
		}
	}
	return cs, nil
}

// readFstab parses the host's fstab; a missing one has no lines.
func (a *applier) readFstab() ([]fstab.Line, error) {
	b, err := a.host.ReadFile(a.fstabPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", a.fstabPath, err)
	}
	lines, err := fstab.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.fstabPath, err)
	}
	return lines, nil
}

// startsWith says whether one of parts starts at start holding fsType.
func startsWith(parts []hwinfo.Partition, start uint64, fsType string) bool {
	for _, ex := range parts {
		if ex.StartBytes == start && ex.FSType == fsType {
			return true
		}
	}
	return false
}

// withUsed adds to a destroyed partition's description how much its file
// system says it holds, read from its superblock (read-only); what as it
// is when that cannot be read or the file system does not say.
func (a *applier) withUsed(path, what string) string {
	sigs, err := a.probeDevice(path)
	if err != nil {
		return what
	}
	for _, s := range sigs {
		if s.UsedBytes > 0 {
			// Before ", on DISK", which ends the line.
			i := strings.LastIndex(what, ", on ")
			if i < 0 {
				i = len(what)
			}
			return what[:i] + ", " + units.FormatSize(s.UsedBytes) + " used" + what[i:]
		}
	}
	return what
}
