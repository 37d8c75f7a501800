package disk

import (
	"github.com/diskprep/diskprep/hwinfo"
)

// MountEntry is one mount: the device number and the mount point are
// what the layers read.
type MountEntry struct {
	Devnum string // major:minor
	Point  string
	fstype string
	source string
	// opts and superOpts are the per-mount and the superblock options.
	opts, superOpts string
}

// mounts reads the live mount table (release and the pre-mount check need
// the truth, not a fixture), with hwinfo's mountinfo parser.
func (a *applier) mounts() ([]MountEntry, error) { return ReadMounts(a.host, a.roots) }

// ReadMounts reads the mount table through h.
func ReadMounts(h Host, roots hwinfo.Roots) ([]MountEntry, error) {
	b, err := h.ReadFile(roots.ProcPath("self/mountinfo"))
	if err != nil {
		return nil, err
	}
	entries, _ := hwinfo.ParseMountinfo(string(b))
	out := make([]MountEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, MountEntry{Devnum: e.MajMin, Point: e.Point, fstype: e.FSType, source: e.Source, opts: e.MountOptions, superOpts: e.SuperOptions})
	}
	return out, nil
}
