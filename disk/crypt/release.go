package crypt

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk"
)

// IsMapping says whether the device-mapper device dm is a LUKS mapping
// (cryptsetup names its uuid CRYPT-LUKS1- or CRYPT-LUKS2-).
func (a Applier) IsMapping(dm string) bool {
	b, err := a.Host().ReadFile(a.Roots().SysPath("class/block", dm, "dm", "uuid"))
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "CRYPT-")
}

// Backing are the kernel names of the device under a mapping.
func (a Applier) Backing(dm string) []string {
	des, _ := a.Host().ReadDir(a.Roots().SysPath("class/block", dm, "slaves"))
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// PlanRelease plans the release of the LUKS mappings crypts (kernel
// names): each closed, its mount and fstab line going with it (devs), its
// crypttab entry removed when diskprep wrote it, and with wipe its key
// slots destroyed and its header cleared.
func (a Applier) PlanRelease(plan *disk.ReleasePlan, devs map[string]string, crypts map[string]bool, wipe bool) {
	if len(crypts) == 0 {
		return
	}
	roots := a.Roots()
	ct := roots.HostPath("etc/crypttab")
	data, _ := a.Host().ReadFile(ct)
	for _, dm := range slices.Sorted(maps.Keys(crypts)) {
		b, err := a.Host().ReadFile(roots.SysPath("class/block", dm, "dm", "name"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(b))
		if n, err := a.ReadDevnum(roots.SysPath("class/block", dm, "dev")); err == nil {
			devs[n] = dm
		}
		if hs, _ := a.Host().ReadDir(roots.SysPath("class/block", dm, "holders")); len(hs) > 0 || plan.Group(dm) != "" {
			// Under a volume group (an encrypted member): closed after
			// it, its partition a member of the group.
			plan.Stacks.CryptCloseLower = append(plan.Stacks.CryptCloseLower, name)
			if wipe {
				for _, m := range a.Backing(dm) {
					plan.Stacks.CryptEraseLower = append(plan.Stacks.CryptEraseLower, roots.DevPath(m))
				}
			}
		} else {
			// One stack with what it encrypts: diskprep's marker on the
			// mapping's file system vouches for the array or group
			// under it.
			group := "luks " + name
			for _, m := range a.Backing(dm) {
				if g := plan.Group(m); g != "" {
					group = g
				}
				if wipe {
					plan.Stacks.CryptErase = append(plan.Stacks.CryptErase, roots.DevPath(m))
				}
			}
			plan.SetGroup(dm, group)
			for _, m := range a.Backing(dm) {
				if plan.Group(m) == "" {
					plan.SetGroup(m, group)
				}
			}
			plan.Stacks.CryptClose = append(plan.Stacks.CryptClose, name)
		}
		if _, managed, ok := crypttabEntry(string(data), name); ok && managed {
			plan.Stacks.Crypttab = ct
			plan.Stacks.CrypttabRemove = append(plan.Stacks.CrypttabRemove, name)
		}
	}
	sort.Strings(plan.Stacks.CryptErase)
	sort.Strings(plan.Stacks.CryptEraseLower)
}

// Release closes the mappings above the stacks, erases the key slots and
// header under them as planned, and takes diskprep's crypttab entries out.
func (a Applier) Release(_ context.Context, s disk.StackRelease, res *disk.ReleaseResult, step func(string, ...string) error) error {
	if err := closeAll(s.CryptClose, s.CryptErase, s.HeaderWipedWithErase, step); err != nil {
		return err
	}
	if len(s.CrypttabRemove) == 0 {
		return nil
	}
	b, err := a.Host().ReadFile(s.Crypttab)
	if err != nil && !isNotExist(err) {
		return fmt.Errorf("read %s: %w", s.Crypttab, err)
	}
	data, changed := string(b), false
	for _, n := range s.CrypttabRemove {
		var removed bool
		if data, removed = removeCrypttab(data, n); removed {
			changed = true
			res.StackSteps = append(res.StackSteps, "removed from "+s.Crypttab+": the entry of "+n)
		}
	}
	if changed {
		if err := a.Host().WriteFile(s.Crypttab, []byte(data), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", s.Crypttab, err)
		}
	}
	return nil
}

// ReleaseMembers closes the mappings of a volume group's encrypted
// members, after the group is gone, and destroys their key slots as
// planned (their partitions are wiped with the group's other members).
func ReleaseMembers(s disk.StackRelease, step func(string, ...string) error) error {
	return closeAll(s.CryptCloseLower, s.CryptEraseLower, func(string) bool { return false }, step)
}

// closeAll closes the mappings names, then destroys the key slots of the
// devices erase, and wipes the LUKS headers of those header says.
func closeAll(names, erase []string, header func(string) bool, step func(string, ...string) error) error {
	for _, n := range names {
		if err := step("close LUKS mapping "+n, "cryptsetup", "close", n); err != nil {
			return err
		}
	}
	for _, d := range erase {
		if err := step("destroy the key slots of "+d, "cryptsetup", "erase", "--batch-mode", d); err != nil {
			return err
		}
		if !header(d) {
			continue
		}
		if err := step("wipe the LUKS header of "+d, "wipefs", "--all", d); err != nil {
			return err
		}
	}
	return nil
}
