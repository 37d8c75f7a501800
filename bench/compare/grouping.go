package compare

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/bench/record"
)

// Facts that split an automatic grouping further, besides the --by values:
// the path measured and the workload set.
const (
	SplitTarget = "target"
	SplitSet    = "set"
)

// splitDims are the facts that make two records different measurements,
// not repetitions of one: an automatic grouping never pools records that
// differ in one of them into a column. Their order is the order their
// values appear in a column's name.
var splitDims = []string{ByHost, ByFS, ByDevice, SplitTarget, SplitSet}

// NameSep joins the parts of a column's name: "xfs · box1 · set quick".
const NameSep = " · "

// splitKey is the value of a split dimension for one record.
func splitKey(r *record.Record, dim string) string {
	switch dim {
	case SplitTarget:
		if p := targetPath(r); p != "" {
			return p
		}
		return "(unknown target)"
	case SplitSet:
		if r.Set != "" {
			return "set " + r.Set
		}
		return "(no set)"
	}
	return GroupKey(r, dim)
}

// FscompareMount is the target of a record fscompare measured at a
// directory of its own making: before it mounted at a stable path per
// target, each run's random temporary directory made its own column, so
// three identical runs were six columns instead of two.
const FscompareMount = "fscompare's mount"

// targetPath is the record's target as a column knows it: fscompare's
// own mount points, random or not, are one place.
func targetPath(r *record.Record) string {
	p := r.Target.Path
	if strings.HasPrefix(path.Base(p), "diskprep-fscompare-") {
		return FscompareMount
	}
	return p
}

// draft is a column while records are being grouped.
type draft struct {
	parts []string
	recs  []*record.Record
}

// groupRecords puts recs into columns by by, in order of first
// appearance. When auto, a column whose records differ in a split
// dimension (a raw device and a mounted directory, two hosts, two sets,
// all without labels) is split into one column per value, each named
// with it; the dimensions used are returned.
func groupRecords(recs []*record.Record, by string, auto bool) ([]Group, []string) {
	var drafts []draft
	for _, r := range recs {
		key := GroupKey(r, by)
		i := slices.IndexFunc(drafts, func(d draft) bool { return d.parts[0] == key })
		if i < 0 {
			drafts = append(drafts, draft{parts: []string{key}})
			i = len(drafts) - 1
		}
		drafts[i].recs = append(drafts[i].recs, r)
	}
	var split []string
	if auto && by != ByRecord {
		for _, dim := range splitDims {
			if dim == by {
				continue
			}
			var next []draft
			used := false
			for _, d := range drafts {
				var subs []draft
				for _, r := range d.recs {
					key := splitKey(r, dim)
					i := slices.IndexFunc(subs, func(s draft) bool { return s.parts[len(s.parts)-1] == key })
					if i < 0 {
						subs = append(subs, draft{parts: append(slices.Clone(d.parts), key)})
						i = len(subs) - 1
					}
					subs[i].recs = append(subs[i].recs, r)
				}
				if len(subs) == 1 {
					next = append(next, d)
					continue
				}
				used = true
				next = append(next, subs...)
			}
			if used {
				split = append(split, dim)
			}
			drafts = next
		}
	}
	groups := make([]Group, len(drafts))
	for i, d := range drafts {
		groups[i] = Group{Name: strings.Join(d.parts, NameSep), parts: d.parts, Records: d.recs}
		for _, r := range d.recs {
			groups[i].RecordIDs = append(groups[i].RecordIDs, r.ID)
		}
	}
	return groups, split
}

// pickBaseline moves the group named name to the front. A name matches a
// column's full name, or else the one column that has it as a part
// ("esx-guest" for "xfs · esx-guest" when no other column has it).
func pickBaseline(groups []Group, name string) ([]Group, bool) {
	i := slices.IndexFunc(groups, func(g Group) bool { return g.Name == name })
	if i < 0 {
		for j, g := range groups {
			if slices.Contains(g.parts, name) {
				if i >= 0 {
					return groups, false // ambiguous
				}
				i = j
			}
		}
	}
	if i < 0 {
		return groups, false
	}
	g := groups[i]
	return append([]Group{g}, slices.Delete(groups, i, i+1)...), true
}

// hasPart reports whether v is one of the group's name parts: a difference
// the column's own name states is no caveat.
func (g Group) hasPart(v string) bool {
	return v == g.Name || slices.Contains(g.parts, v)
}

// joinCapped lists items, the first max of them by name and the rest
// counted: "a, b, c and 9 more".
func joinCapped(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:max], ", ") + " and " + strconv.Itoa(len(items)-max) + " more"
}
