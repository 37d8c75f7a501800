package disk

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

type layoutKind int

const (
	layoutEmpty   layoutKind = iota // no table, no signature known
	layoutMatches                   // GPT with exactly the planned partitions; filesystems as asked or none yet
	layoutDiffers                   // anything else
)

type existingState struct {
	kind  layoutKind
	parts []*hwinfo.Partition // layoutMatches: the existing partition for each planned one
	why   string              // layoutDiffers: the first difference found
}

// compareExisting tells an empty disk, one already prepared as planned (or
// half way: table written, some filesystem not made yet) and anything else.
func compareExisting(d *hwinfo.Disk, planned []PartPlan) existingState {
	if d.PartitionTable == "" && d.FSType == "" && len(d.Partitions) == 0 {
		return existingState{kind: layoutEmpty}
	}
	differs := func(format string, args ...any) existingState {
		return existingState{kind: layoutDiffers, why: fmt.Sprintf(format, args...)}
	}
	switch {
	case d.PartitionTable != "gpt":
		return differs("its partition table is %s, not gpt", orNone(d.PartitionTable))
	case d.FSType != "":
		return differs("it holds %s on the whole disk", d.FSType)
	case len(d.Partitions) != len(planned):
		return differs("it has %d partitions, the plan %d", len(d.Partitions), len(planned))
	}
	st := existingState{kind: layoutMatches, parts: make([]*hwinfo.Partition, len(planned))}
	for i, pp := range planned {
		var ex *hwinfo.Partition
		for j := range d.Partitions {
			if d.Partitions[j].Number == pp.Number {
				ex = &d.Partitions[j]
			}
		}
		switch {
		case ex == nil:
			return differs("it has no partition %d", pp.Number)
		case ex.StartBytes != pp.StartBytes || ex.SizeBytes != pp.SizeBytes:
			return differs("%s is %d bytes at %d, the plan's %d at %d", ex.Name, ex.SizeBytes, ex.StartBytes, pp.SizeBytes, pp.StartBytes)
		case ex.PartLabel != "" && ex.PartLabel != pp.Label || ex.PartLabel == "" && pp.Label != "" && ex.PartUUID != "":
			return differs("%s is named %q, the plan's %q", ex.Name, ex.PartLabel, pp.Label)
		case ex.PartType != "" && !strings.EqualFold(ex.PartType, pp.TypeGUID):
			return differs("%s has type %s, the plan's %s", ex.Name, ex.PartType, pp.TypeGUID)
		case pp.Use == "" && ex.FSType != "" && (ex.FSType != pp.FS || ex.FSLabel != pp.FSLabel):
			return differs("%s holds %s%s, the plan's %s%s", ex.Name, ex.FSType, LabelSuffix(ex.FSLabel), pp.FS, LabelSuffix(pp.FSLabel))
		case pp.Use != "" && ex.FSType != "" && !MemberOf(pp.Use, ex.FSType, ex.FSLabel):
			return differs("%s holds %s%s, not a member of %s", ex.Name, ex.FSType, LabelSuffix(ex.FSLabel), pp.Use)
		}
		st.parts[i] = ex
	}
	return st
}

// describeContents lists what is on a disk, for refusals and confirmations.
func describeContents(d *hwinfo.Disk) []string {
	var out []string
	if d.PartitionTable != "" {
		s := d.PartitionTable + " partition table"
		if d.PartitionTableID != "" {
			s += " " + d.PartitionTableID
		}
		out = append(out, s)
	}
	if d.FSType != "" {
		out = append(out, fmt.Sprintf("%s signature on the whole disk%s", d.FSType, LabelSuffix(d.FSLabel)))
	}
	for _, p := range d.Partitions {
		s := fmt.Sprintf("%s (%s", p.Name, units.FormatSize(p.SizeBytes))
		if p.FSType != "" {
			s += ", " + p.FSType + LabelSuffix(p.FSLabel)
		}
		out = append(out, s+")")
	}
	return out
}

// LabelSuffix is a label as a refusal names it (' label "L"'), or "".
func LabelSuffix(l string) string {
	if l == "" {
		return ""
	}
	return fmt.Sprintf(" label %q", l)
}

func cleanPoint(p string) string { return filepath.Clean(p) }
