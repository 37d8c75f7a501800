package stack

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/diskprep/diskprep/disk"
)

// CryptResult is the LUKS2 layer of a volume after ApplyStacks.
type CryptResult struct {
	Name        string   `json:"name"`
	Backing     string   `json:"backing"`
	Mapper      string   `json:"mapper"`
	UUID        string   `json:"uuid"`
	KeyFile     string   `json:"key_file"`
	KeyMade     bool     `json:"key_made,omitempty"`
	SectorBytes uint64   `json:"sector_bytes"`
	Formatted   bool     `json:"formatted"`
	FormatArgv  []string `json:"format_argv,omitempty"`
	Opened      bool     `json:"opened,omitempty"`
	OpenArgv    []string `json:"open_argv,omitempty"`
	// CryptsetupVersion is cryptsetup --version's line.
	CryptsetupVersion string `json:"cryptsetup_version,omitempty"`
	Crypttab          string `json:"crypttab,omitempty"`
	CrypttabLine      string `json:"crypttab_line,omitempty"`
	CrypttabAdded     bool   `json:"crypttab_added,omitempty"`
}

func (cr *CryptResult) changed() bool {
	return cr != nil && (cr.KeyMade || cr.Formatted || cr.Opened || cr.CrypttabAdded)
}

// cryptActions are the dry run's steps of a LUKS2 layer, before its file
// system's.
func cryptActions(c *CryptPlan) []disk.Action {
	var s []disk.Action
	if c.MakeKey {
		s = append(s, disk.Action{Text: fmt.Sprintf("make key file %s (64 random bytes, mode 0400, root's)", c.KeyFile), Op: disk.OpWriteFile, Path: c.KeyFile})
	}
	if c.Format != nil {
		s = append(s, disk.Action{Text: disk.QuoteArgv(keyShown(c.Format)), Op: disk.OpRun, Argv: c.Format})
	}
	if c.Open != nil {
		s = append(s, disk.Action{Text: disk.QuoteArgv(keyShown(c.Open)), Op: disk.OpRun, Argv: c.Open})
	} else {
		s = append(s, disk.Action{Text: fmt.Sprintf("LUKS2 volume %s is open at %s", c.Backing, c.Mapper)})
	}
	if c.FSAfterOpen {
		s = append(s, disk.Action{Text: fmt.Sprintf("once open, what %s holds decides: mkfs when nothing, kept when the file system asked", c.Mapper)})
	}
	return s
}

// keyShown is argv as shown to people: the key file's path marked as one.
func keyShown(argv []string) []string {
	out := append([]string(nil), argv...)
	for i := range out {
		if i > 0 && out[i-1] == "--key-file" {
			out[i] = "<key file " + out[i] + ">"
		}
	}
	return out
}

// makeKey writes a new key file: random bytes, root's alone, its directory
// made root's alone when missing.
func (a *applier) makeKey(path string) error {
	host := a.roots.HostPath(strings.TrimPrefix(path, "/"))
	if err := a.host.MkdirAll(filepath.Dir(host), 0o700); err != nil {
		return fmt.Errorf("make key file %s: %w", path, err)
	}
	key := make([]byte, keyFileBytes)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("make key file %s: %w", path, err)
	}
	if err := a.host.WriteFile(host, key, 0o400); err != nil {
		return fmt.Errorf("make key file %s: %w", path, err)
	}
	return nil
}

// applyCrypt makes and opens the LUKS2 layer of v before its file system,
// and returns the volume as its file system is then made: for a volume
// found closed, planned with what the opened mapping holds.
func (a *applier) applyCrypt(ctx context.Context, v VolumePlan, version string, undo *[]func()) (VolumePlan, *CryptResult, error) {
	c := v.Crypt
	cr, err := a.luksUp(ctx, c, version, undo)
	if err != nil {
		return v, cr, err
	}
	if c.FSAfterOpen {
		pl := Planner{disk.Planner{Host: a.host, Roots: a.roots}}
		mounts, err := disk.ReadMounts(a.host, a.roots)
		if err != nil {
			return v, cr, err
		}
		real, err := a.host.EvalSymlinks(c.Mapper)
		if err != nil {
			return v, cr, fmt.Errorf("%s: %w", c.Mapper, err)
		}
		v.MountArgv = nil
		if err := pl.planVolume(&v, real, StackRequest{Wipe: c.Wipe, NoDiscard: c.NoDiscard}, mounts, v.Geometry); err != nil {
			return v, cr, err
		}
		if v.Persist {
			v.FstabLine = disk.FstabEntryLine(v.partPlan())
		}
	}
	return v, cr, nil
}

// luksUp makes the key file when asked, formats and opens the LUKS2
// volume of c as planned (each step skipped when done), and adds its
// crypttab line.
func (a *applier) luksUp(ctx context.Context, c *CryptPlan, version string, undo *[]func()) (*CryptResult, error) {
	cr := &CryptResult{Name: c.Name, Backing: c.Backing, Mapper: c.Mapper, UUID: c.UUID, KeyFile: c.KeyFile, SectorBytes: c.SectorBytes,
		CryptsetupVersion: version, Crypttab: c.Crypttab, CrypttabLine: c.CrypttabLine}
	if c.MakeKey {
		if err := a.makeKey(c.KeyFile); err != nil {
			return cr, err
		}
		cr.KeyMade = true
	}
	if c.Format != nil {
		if err := a.Do(ctx, "format the LUKS2 volume", c.Format); err != nil {
			return cr, fmt.Errorf("luksFormat %s: %w", c.Backing, err)
		}
		cr.Formatted, cr.FormatArgv = true, c.Format
	}
	if c.Open != nil {
		if err := a.Do(ctx, "open the LUKS2 volume", c.Open); err != nil {
			return cr, fmt.Errorf("open %s: %w", c.Backing, err)
		}
		cr.Opened, cr.OpenArgv = true, c.Open
		*undo = append(*undo, func() {
			if _, err := a.host.Run(context.WithoutCancel(ctx), "cryptsetup", "close", c.Name); err != nil {
				a.Log().Error("close after failure", "mapping", c.Name, "err", err)
			}
		})
	}
	if c.CrypttabLine != "" {
		added, err := a.ensureCrypttab(c)
		cr.CrypttabAdded = added
		if err != nil {
			return cr, err
		}
	}
	return cr, nil
}

// ensureCrypttab adds the volume's crypttab line, marked as diskprep's,
// unless it is there.
func (a *applier) ensureCrypttab(c *CryptPlan) (bool, error) {
	data, err := a.host.ReadFile(c.Crypttab)
	if err != nil && !isNotExist(err) {
		return false, fmt.Errorf("read %s: %w", c.Crypttab, err)
	}
	out, changed, err := addCrypttab(string(data), c.CrypttabLine, a.Now().UTC().Format("2006-01-02"))
	if err != nil || !changed {
		return false, err
	}
	if err := a.host.WriteFile(c.Crypttab, []byte(out), 0o600); err != nil {
		return false, fmt.Errorf("write %s: %w", c.Crypttab, err)
	}
	return true, nil
}
