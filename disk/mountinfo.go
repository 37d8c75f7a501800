package disk

import "github.com/diskprep/diskprep/hwinfo"

type mountEntry struct {
	devnum string // major:minor
	point  string
	fstype string
	source string
	// opts and superOpts are the per-mount and the superblock options.
	opts, superOpts string
}

// mounts reads the live mount table (release and the pre-mount check need
// the truth, not a fixture), with hwinfo's mountinfo parser.
func (a *applier) mounts() ([]mountEntry, error) { return readMounts(a.host, a.roots) }

func readMounts(h Host, roots hwinfo.Roots) ([]mountEntry, error) {
	b, err := h.ReadFile(roots.ProcPath("self/mountinfo"))
	if err != nil {
		return nil, err
	}
	entries, _ := hwinfo.ParseMountinfo(string(b))
	out := make([]mountEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, mountEntry{devnum: e.MajMin, point: e.Point, fstype: e.FSType, source: e.Source, opts: e.MountOptions, superOpts: e.SuperOptions})
	}
	return out, nil
}
