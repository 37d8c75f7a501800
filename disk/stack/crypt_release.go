package stack

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk"
)

// isCrypt says whether the device-mapper device dm is a LUKS mapping
// (cryptsetup names its uuid CRYPT-LUKS1- or CRYPT-LUKS2-).
func (a *applier) isCrypt(dm string) bool {
	b, err := a.host.ReadFile(a.roots.SysPath("class/block", dm, "dm", "uuid"))
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "CRYPT-")
}

// cryptBacking are the kernel names of the device under a mapping.
func (a *applier) cryptBacking(dm string) []string {
	des, _ := a.host.ReadDir(a.roots.SysPath("class/block", dm, "slaves"))
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// addCrypts plans the release of the LUKS mappings crypts: each closed,
// its mount and fstab line going with it (devs), its crypttab entry
// removed when diskprep wrote it, and with Wipe its key slots destroyed
// and its header cleared.
func (a *applier) addCrypts(plan *disk.ReleasePlan, devs map[string]string, crypts map[string]bool, opt disk.ReleaseOptions) {
	if len(crypts) == 0 {
		return
	}
	ct := a.roots.HostPath("etc/crypttab")
	data, _ := a.host.ReadFile(ct)
	for _, dm := range sortedKeys(crypts) {
		b, err := a.host.ReadFile(a.roots.SysPath("class/block", dm, "dm", "name"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(b))
		if n, err := a.ReadDevnum(a.roots.SysPath("class/block", dm, "dev")); err == nil {
			devs[n] = dm
		}
		if hs, _ := a.host.ReadDir(a.roots.SysPath("class/block", dm, "holders")); len(hs) > 0 || plan.Group(dm) != "" {
			// Under a volume group (an encrypted member): closed after
			// it, its partition a member of the group.
			plan.Stacks.CryptCloseLower = append(plan.Stacks.CryptCloseLower, name)
			if opt.Wipe {
				for _, m := range a.cryptBacking(dm) {
					plan.Stacks.CryptEraseLower = append(plan.Stacks.CryptEraseLower, a.roots.DevPath(m))
				}
			}
		} else {
			// One stack with what it encrypts: diskprep's marker on the
			// mapping's file system vouches for the array or group
			// under it.
			group := "luks " + name
			for _, m := range a.cryptBacking(dm) {
				if g := plan.Group(m); g != "" {
					group = g
				}
				if opt.Wipe {
					plan.Stacks.CryptErase = append(plan.Stacks.CryptErase, a.roots.DevPath(m))
				}
			}
			plan.SetGroup(dm, group)
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

// releaseCrypt closes the mappings, erases the key slots and header under
// them with Wipe, and takes diskprep's crypttab entries out.
func (a *applier) releaseCrypt(_ context.Context, s disk.StackRelease, res *disk.ReleaseResult, step func(string, ...string) error) error {
	for _, n := range s.CryptClose {
		if err := step("close LUKS mapping "+n, "cryptsetup", "close", n); err != nil {
			return err
		}
	}
	for _, d := range s.CryptErase {
		if err := step("destroy the key slots of "+d, "cryptsetup", "erase", "--batch-mode", d); err != nil {
			return err
		}
		if err := step("wipe the LUKS header of "+d, "wipefs", "--all", d); err != nil {
			return err
		}
	}
	if len(s.CrypttabRemove) > 0 {
		b, err := a.host.ReadFile(s.Crypttab)
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
			if err := a.host.WriteFile(s.Crypttab, []byte(data), 0o600); err != nil {
				return fmt.Errorf("write %s: %w", s.Crypttab, err)
			}
		}
	}
	return nil
}
