package disk

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/diskprep/diskprep/internal/units"
)

// Steps lists, in order, what Apply will do, one line each as a person
// would type it. WriteText prints them; Apply carries out exactly these.
func (p *Plan) Steps() []string { return Steps(p.Actions()) }

// Actions lists, in order, what Apply will do: the steps the dry run
// prints, each with the effect that carries it out.
func (p *Plan) Actions() []Action {
	var s []Action
	if im := p.Image; im != nil {
		switch {
		case im.Create:
			s = append(s, Action{Text: fmt.Sprintf("create sparse image %s (%s)", im.Path, units.FormatSizeBoth(im.SizeBytes)), Op: OpCreateImage, Path: im.Path})
		case im.Recreate:
			s = append(s, Action{Text: fmt.Sprintf("recreate image %s empty and sparse (%s)", im.Path, units.FormatSizeBoth(im.SizeBytes)), Op: OpEmptyImage, Path: im.Path})
		}
		if im.Attach {
			s = append(s, Action{Text: fmt.Sprintf("attach %s to a free loop device (%d-byte sectors, partition scan) as %s", im.Path, im.SectorBytes, LoopPlaceholder), Op: OpAttachLoop, Path: im.Path})
		}
	}
	if t := p.Table; t != nil {
		if p.Wipe {
			// Apply zeroes the signatures it finds when it looks, right
			// before the table: those Destroys lists, or none left.
			s = append(s, Action{Text: fmt.Sprintf("wipe every signature on %s (as wipefs -a)", p.Device), Op: OpWriteDevice, Path: p.Device, Maybe: true})
		}
		s = append(s, Action{Text: fmt.Sprintf("write GPT on %s: disk GUID %s, %d-byte sectors, partitions aligned to %s, usable LBA %d-%d, protective MBR",
			p.Device, t.DiskGUID, t.SectorBytes, units.FormatSize(t.AlignBytes), t.FirstUsableLBA, t.LastUsableLBA),
			Op: OpWriteDevice, Path: p.Device, Regions: t.regions()})
		for _, pp := range p.Partitions {
			s = append(s, Action{Text: fmt.Sprintf("  partition %d: LBA %d-%d (%s at %s), name %q, type %s, GUID %s",
				pp.Number, pp.StartLBA, pp.EndLBA, units.FormatSize(pp.SizeBytes), units.FormatSize(pp.StartBytes), pp.Label, pp.TypeGUID, pp.PartGUID)})
		}
	}
	how := "re-read the table, else BLKPG"
	if p.Table == nil {
		// Without a new table the kernel is told only what it lacks.
		how += "; nothing when it sees them"
	}
	s = append(s, Action{Text: fmt.Sprintf("make the kernel see %s (%s) and check start/size in /sys/class/block", partNames(p), how),
		Op: OpPartitions, Path: p.Device, Maybe: p.Table == nil})
	for _, pp := range p.Partitions {
		if pp.Discard != nil {
			s = append(s, Action{Text: QuoteArgv(pp.Discard) + " (TRIM the new space; --no-discard skips it)", Op: OpRun, Argv: pp.Discard})
		}
		if pp.Use != "" {
			s = append(s, Action{Text: fmt.Sprintf("%s is a member of %s (see the stack steps)", pp.Path, pp.Use)})
			continue
		}
		if pp.FS == "swap" {
			if pp.Mkfs != nil {
				s = append(s, Action{Text: QuoteArgv(pp.Mkfs), Op: OpRun, Argv: pp.Mkfs})
			}
			if pp.MountArgv != nil {
				s = append(s, Action{Text: QuoteArgv(pp.MountArgv) + " (unless active)", Op: OpRun, Argv: pp.MountArgv, Maybe: true})
			}
			if pp.Persist {
				s = append(s, ensureFstab(pp.FstabLine, pp.Mkfs == nil))
			}
			continue
		}
		s = append(s, FileSystemActions(pp.Mkfs, pp.MountPoint, pp.MountArgv, pp.Persist, pp.FstabLine)...)
	}
	if p.persists() {
		s = append(s, DaemonReload("only when systemd is PID 1 and fstab changed"))
	}
	return s
}

// FileSystemActions are the steps of a file system on a partition or a
// stack's volume: mkfs, the mount, diskprep's marker and the fstab line.
func FileSystemActions(mkfs []string, point string, mount []string, persist bool, fstabLine string) []Action {
	var s []Action
	if mkfs != nil {
		s = append(s, Action{Text: QuoteArgv(mkfs), Op: OpRun, Argv: mkfs})
	}
	if mount != nil {
		s = append(s, Action{Text: "mkdir -p " + Quote(point), Op: OpMkdir, Path: point, Maybe: true})
		s = append(s, Action{Text: QuoteArgv(mount), Op: OpRun, Argv: mount})
	}
	if point != "" {
		// A new file system gets a new marker; one found mounted keeps
		// the marker it has, and gets one when a run stopped before it.
		marker := filepath.Join(point, MarkerFile)
		a := Action{Text: "write " + marker, Op: OpWriteFile, Path: marker}
		if mkfs == nil {
			a.Text, a.Maybe = "write "+marker+" (unless it is there)", true
		}
		s = append(s, a)
	}
	if persist {
		s = append(s, ensureFstab(fstabLine, mkfs == nil))
	}
	return s
}

// ensureFstab adds line unless it is there, which a line naming a new file
// system's UUID cannot be.
func ensureFstab(line string, mayBeThere bool) Action {
	return Action{Text: "ensure in fstab: " + line, Op: OpEditFstab, Maybe: mayBeThere}
}

// DaemonReload is the systemctl daemon-reload step, a Maybe one: when
// says when it runs.
func DaemonReload(when string) Action {
	return Action{Text: "systemctl daemon-reload (" + when + ")", Op: OpRun, Argv: []string{"systemctl", "daemon-reload"}, Maybe: true}
}

// regions are the bytes a GPT occupies: the protective MBR, the primary
// header and entries before the first usable LBA, the backup entries and
// header after the last.
func (t *TablePlan) regions() [][2]uint64 {
	return [][2]uint64{{0, t.FirstUsableLBA * t.SectorBytes}, {(t.LastUsableLBA + 1) * t.SectorBytes, t.TotalSectors * t.SectorBytes}}
}

func (p *Plan) persists() bool {
	for _, pp := range p.Partitions {
		if pp.Persist {
			return true
		}
	}
	return false
}

func partNames(p *Plan) string {
	var n []string
	for _, pp := range p.Partitions {
		n = append(n, pp.Name)
	}
	return strings.Join(n, ", ")
}

// WriteText renders the plan for people.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan for %s: %s\n", p.Device, describeDisk(p.Disk))
	if p.Origin != "" {
		fmt.Fprintf(&b, "  from %s\n", p.Origin)
	}
	if p.Unchanged {
		fmt.Fprintf(&b, "  already prepared as asked: nothing to change\n")
	}
	if len(p.Destroys) > 0 {
		fmt.Fprintf(&b, "  DESTROYS: %s\n", strings.Join(p.Destroys, "; "))
	}
	for i, s := range p.Steps() {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, s)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func describeDisk(d DiskSummary) string {
	var parts []string
	if d.Model != "" {
		parts = append(parts, d.Model)
	}
	if d.Serial != "" {
		parts = append(parts, "serial "+d.Serial)
	}
	if d.WWN != "" {
		parts = append(parts, "wwn "+d.WWN)
	}
	parts = append(parts, units.FormatSize(d.SizeBytes))
	sec := fmt.Sprintf("%d-byte logical sectors", d.LogicalSectorBytes)
	if d.PhysicalSectorBytes != d.LogicalSectorBytes && d.PhysicalSectorBytes != 0 {
		sec += fmt.Sprintf(" (%d physical)", d.PhysicalSectorBytes)
	}
	return strings.Join(append(parts, sec), ", ")
}
