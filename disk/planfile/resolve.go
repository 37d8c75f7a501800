package planfile

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// Resolved is one plan entry bound to the host disk its selector matched.
type Resolved struct {
	Disk hwinfo.Disk
	// Fingerprint is the disk as seen now; Request.Expect points to a copy,
	// so apply aborts when the disk changed between planning and writing.
	Fingerprint disk.Fingerprint
	Request     disk.Request
}

// Resolve binds every disks[] entry to exactly one of host's disks. A
// selector matching no disk or several, or two entries choosing the same
// disk, is an error (wrapping ErrPlan) that names the candidates.
func (p *Plan) Resolve(host *hwinfo.Host) ([]Resolved, error) {
	var out []Resolved
	chosen := map[string]int{} // disk name -> index of the entry that chose it
	for i, d := range p.Disks {
		var matches []*hwinfo.Disk
		for j := range host.Disks {
			if d.Select.Matches(&host.Disks[j]) {
				matches = append(matches, &host.Disks[j])
			}
		}
		switch len(matches) {
		case 0:
			var all []string
			for j := range host.Disks {
				all = append(all, Describe(&host.Disks[j]))
			}
			if len(all) == 0 {
				all = []string{"none"}
			}
			return nil, at(p.Path, d.Select.Line, "disks[%d].select (%s) matches no disk; this host has: %s",
				i, d.Select, strings.Join(all, ", "))
		case 1:
		default:
			var names []string
			for _, m := range matches {
				names = append(names, Describe(m))
			}
			return nil, at(p.Path, d.Select.Line, "disks[%d].select (%s) matches %d disks: %s; add keys (serial, wwn, by_id) to pick one",
				i, d.Select, len(matches), strings.Join(names, ", "))
		}
		m := matches[0]
		if prev, dup := chosen[m.Name]; dup {
			return nil, at(p.Path, d.Select.Line, "disks[%d].select chooses %s, already chosen by disks[%d] (line %d)",
				i, m.Name, prev, p.Disks[prev].Line)
		}
		chosen[m.Name] = i
		fp := disk.Fingerprint{
			Serial:    m.Serial,
			WWN:       m.WWN,
			SizeBytes: m.SizeBytes,
			TableType: m.PartitionTable,
			TableID:   m.PartitionTableID,
		}
		expect := fp
		dev := m.Path
		if dev == "" {
			dev = "/dev/" + m.Name
		}
		parts := make([]disk.PartSpec, len(d.Partitions))
		for k, ps := range d.Partitions {
			ps.MkfsOpts = append([]string(nil), ps.MkfsOpts...)
			parts[k] = ps
		}
		out = append(out, Resolved{
			Disk:        *m,
			Fingerprint: fp,
			Request: disk.Request{
				Device:     dev,
				Partitions: parts,
				Wipe:       d.Wipe,
				Expect:     &expect,
				Origin:     p.Path + ":" + strconv.Itoa(d.Line),
			},
		})
	}
	return out, nil
}

// Matches reports whether every key set in s matches d.
func (s Selector) Matches(d *hwinfo.Disk) bool {
	if s.Path != "" && !matchPath(s.Path, d) {
		return false
	}
	if s.ByID != "" && !hasLink(d.ByID, s.ByID) {
		return false
	}
	if s.ByPath != "" && !hasLink(d.ByPath, s.ByPath) {
		return false
	}
	if s.Serial != "" && !strings.EqualFold(strings.TrimSpace(d.Serial), s.Serial) {
		return false
	}
	if s.WWN != "" && (d.WWN == "" || normWWN(d.WWN) != normWWN(s.WWN)) {
		return false
	}
	if s.Model != "" && !matchModel(s.Model, d) {
		return false
	}
	if s.Size != "" && (d.SizeBytes < s.SizeMin || d.SizeBytes > s.SizeMax) {
		return false
	}
	if s.Transport != "" && !strings.EqualFold(d.Transport, s.Transport) {
		return false
	}
	return true
}

// String lists the selector's keys as written, for messages.
func (s Selector) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("path", s.Path)
	add("by_id", s.ByID)
	add("by_path", s.ByPath)
	add("serial", s.Serial)
	add("wwn", s.WWN)
	add("model", s.Model)
	add("size", s.Size)
	add("transport", s.Transport)
	return strings.Join(parts, " ")
}

// Describe names a disk the way a person recognises it in an error:
// "sdb (TOSHIBA DT01ACA300, 3.0 TB, serial X3G7ABCDE)".
func Describe(d *hwinfo.Disk) string {
	var what []string
	if m := strings.TrimSpace(d.Model); m != "" {
		what = append(what, m)
	}
	what = append(what, units.FormatDecimalSize(d.SizeBytes))
	if d.Serial != "" {
		what = append(what, "serial "+d.Serial)
	}
	return d.Name + " (" + strings.Join(what, ", ") + ")"
}

// matchPath accepts the node (/dev/sdb) and also its /dev/disk/by-id or
// by-path alias, since people copy whichever ls showed them.
func matchPath(p string, d *hwinfo.Disk) bool {
	switch {
	case strings.HasPrefix(p, "/dev/disk/by-id/"):
		return hasLink(d.ByID, filepath.Base(p))
	case strings.HasPrefix(p, "/dev/disk/by-path/"):
		return hasLink(d.ByPath, filepath.Base(p))
	}
	p = filepath.Clean(p)
	return p == d.Path || (d.Name != "" && p == "/dev/"+d.Name)
}

func hasLink(links []string, name string) bool {
	for _, l := range links {
		if filepath.Base(l) == name {
			return true
		}
	}
	return false
}

// normWWN reduces the spellings of one WWN (sysfs "naa.5000...", udev
// "0x5000...", by-id "wwn-0x5000...") to bare lower-case hex.
func normWWN(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, p := range []string{"wwn-", "naa.", "eui.", "t10.", "0x"} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// matchModel compares models ignoring case and the "_" that udev puts for
// blanks; the model may be written with the vendor in front.
func matchModel(want string, d *hwinfo.Disk) bool {
	w := normModel(want)
	m := normModel(d.Model)
	if m == "" {
		return false
	}
	return w == m || (d.Vendor != "" && w == normModel(d.Vendor+" "+d.Model))
}

func normModel(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.ReplaceAll(s, "_", " ")), " "))
}
