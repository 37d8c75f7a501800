package disk

import (
	"fmt"
	"io"
	"strings"

	"github.com/diskprep/diskprep/internal/units"
)

// Steps lists, in order, what Apply will do, one line each as a person
// would type it. WriteText prints them; Apply carries out exactly these.
func (p *Plan) Steps() []string {
	var s []string
	if im := p.Image; im != nil {
		switch {
		case im.Create:
			s = append(s, fmt.Sprintf("create sparse image %s (%s)", im.Path, units.FormatSizeBoth(im.SizeBytes)))
		case im.Recreate:
			s = append(s, fmt.Sprintf("recreate image %s empty and sparse (%s)", im.Path, units.FormatSizeBoth(im.SizeBytes)))
		}
		if im.Attach {
			s = append(s, fmt.Sprintf("attach %s to a free loop device (%d-byte sectors, partition scan) as %s", im.Path, im.SectorBytes, LoopPlaceholder))
		}
	}
	if t := p.Table; t != nil {
		if p.Wipe {
			s = append(s, fmt.Sprintf("wipe every signature on %s (as wipefs -a)", p.Device))
		}
		s = append(s, fmt.Sprintf("write GPT on %s: disk GUID %s, %d-byte sectors, partitions aligned to %s, usable LBA %d-%d, protective MBR",
			p.Device, t.DiskGUID, t.SectorBytes, units.FormatSize(t.AlignBytes), t.FirstUsableLBA, t.LastUsableLBA))
		for _, pp := range p.Partitions {
			s = append(s, fmt.Sprintf("  partition %d: LBA %d-%d (%s at %s), name %q, type %s, GUID %s",
				pp.Number, pp.StartLBA, pp.EndLBA, units.FormatSize(pp.SizeBytes), units.FormatSize(pp.StartBytes), pp.Label, pp.TypeGUID, pp.PartGUID))
		}
	}
	s = append(s, fmt.Sprintf("make the kernel see %s (re-read the table, else BLKPG) and check start/size in /sys/class/block", partNames(p)))
	for _, pp := range p.Partitions {
		if pp.Discard != nil {
			s = append(s, QuoteArgv(pp.Discard)+" (TRIM the new space; --no-discard skips it)")
		}
		if pp.Use != "" {
			s = append(s, fmt.Sprintf("%s is a member of %s (see the stack steps)", pp.Path, pp.Use))
			continue
		}
		if pp.Mkfs != nil {
			s = append(s, QuoteArgv(pp.Mkfs))
		}
		if pp.MountArgv != nil && pp.FS == "swap" {
			s = append(s, QuoteArgv(pp.MountArgv)+" (unless active)")
		} else if pp.MountArgv != nil {
			s = append(s, "mkdir -p "+quote(pp.MountPoint))
			s = append(s, QuoteArgv(pp.MountArgv))
		}
		if pp.MountPoint != "" && (pp.Mkfs != nil || pp.MountArgv != nil) {
			s = append(s, fmt.Sprintf("write %s/%s", strings.TrimSuffix(pp.MountPoint, "/"), MarkerFile))
		}
		if pp.Persist {
			s = append(s, fmt.Sprintf("ensure in fstab: %s", pp.FstabLine))
		}
	}
	if p.persists() {
		s = append(s, "systemctl daemon-reload (only when systemd is PID 1 and fstab changed)")
	}
	return s
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

// QuoteArgv renders argv as a shell would need it typed.
func QuoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
