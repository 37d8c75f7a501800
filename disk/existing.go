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
}

// compareExisting tells an empty disk, one already prepared as planned (or
// half way: table written, some filesystem not made yet) and anything else.
func compareExisting(d *hwinfo.Disk, planned []PartPlan) existingState {
	if d.PartitionTable == "" && d.FSType == "" && len(d.Partitions) == 0 {
		return existingState{kind: layoutEmpty}
	}
	differs := existingState{kind: layoutDiffers}
	if d.PartitionTable != "gpt" || d.FSType != "" || len(d.Partitions) != len(planned) {
		return differs
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
		case ex == nil,
			ex.StartBytes != pp.StartBytes || ex.SizeBytes != pp.SizeBytes,
			ex.PartLabel != "" && ex.PartLabel != pp.Label || ex.PartLabel == "" && pp.Label != "" && ex.PartUUID != "",
			ex.PartType != "" && !strings.EqualFold(ex.PartType, pp.TypeGUID),
			pp.Use == "" && ex.FSType != "" && (ex.FSType != pp.FS || ex.FSLabel != pp.FSLabel),
			pp.Use != "" && ex.FSType != "" && !memberOf(pp.Use, ex.FSType, ex.FSLabel):
			return differs
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
		out = append(out, fmt.Sprintf("%s signature on the whole disk%s", d.FSType, labelSuffix(d.FSLabel)))
	}
	for _, p := range d.Partitions {
		s := fmt.Sprintf("%s (%s", p.Name, units.FormatSize(p.SizeBytes))
		if p.FSType != "" {
			s += ", " + p.FSType + labelSuffix(p.FSLabel)
		}
		out = append(out, s+")")
	}
	return out
}

func labelSuffix(l string) string {
	if l == "" {
		return ""
	}
	return fmt.Sprintf(" label %q", l)
}

func cleanPoint(p string) string { return filepath.Clean(p) }
