package disk

import (
	"strings"
)

// Bind returns a copy of p with LoopPlaceholder replaced by the loop device
// the image was attached to. It changes names only, never a decision.
func (p *Plan) Bind(loopDev string) *Plan {
	c := *p
	if p.Device != LoopPlaceholder {
		return &c
	}
	oldName, newName := strings.TrimPrefix(LoopPlaceholder, "/dev/"), strings.TrimPrefix(loopDev, "/dev/")
	sub := func(s string) string {
		switch {
		case strings.HasPrefix(s, LoopPlaceholder):
			return loopDev + strings.TrimPrefix(s, LoopPlaceholder)
		case strings.HasPrefix(s, oldName):
			return newName + strings.TrimPrefix(s, oldName)
		}
		return s
	}
	subArgv := func(a []string) []string {
		if a == nil {
			return nil
		}
		out := make([]string, len(a))
		for i, s := range a {
			if strings.HasPrefix(s, LoopPlaceholder) {
				s = sub(s)
			}
			out[i] = s
		}
		return out
	}
	c.Device = loopDev
	c.Disk.Name = newName
	c.Notes = make([]string, len(p.Notes))
	for i, n := range p.Notes {
		c.Notes[i] = strings.ReplaceAll(n, oldName, newName)
	}
	c.Partitions = make([]PartPlan, len(p.Partitions))
	for i, pp := range p.Partitions {
		// The partition names were derived from "loopN"; rederive them so
		// the kernel's "p" rule holds for the real name.
		pp.Name = PartitionName(newName, pp.Number)
		pp.Path = "/dev/" + pp.Name
		oldPath := p.Partitions[i].Path
		fix := func(a []string) []string {
			a = subArgv(a)
			for j := range a {
				if a[j] == sub(oldPath) {
					a[j] = pp.Path
				}
			}
			return a
		}
		pp.Mkfs = fix(pp.Mkfs)
		pp.MountArgv = fix(pp.MountArgv)
		c.Partitions[i] = pp
	}
	return &c
}
