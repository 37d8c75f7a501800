package crypt

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/diskprep/diskprep/disk"
)

// Result is one LUKS2 layer after apply.
type Result struct {
	Name        string   `json:"name"`
	Backing     string   `json:"backing"`
	Mapper      string   `json:"mapper"`
	UUID        string   `json:"uuid"`
	KeyFile     string   `json:"key_file,omitempty"`
	Passphrase  bool     `json:"passphrase,omitempty"`
	TPM2        bool     `json:"tpm2,omitempty"`
	KeyMade     bool     `json:"key_made,omitempty"`
	SectorBytes uint64   `json:"sector_bytes"`
	Formatted   bool     `json:"formatted"`
	FormatArgv  []string `json:"format_argv,omitempty"`
	// TPM2Enrolled: a key slot sealed to the TPM was added, by
	// EnrollArgv.
	TPM2Enrolled bool     `json:"tpm2_enrolled,omitempty"`
	EnrollArgv   []string `json:"enroll_argv,omitempty"`
	Opened       bool     `json:"opened,omitempty"`
	OpenArgv     []string `json:"open_argv,omitempty"`
	// CryptsetupVersion is cryptsetup --version's line.
	CryptsetupVersion string `json:"cryptsetup_version,omitempty"`
	Crypttab          string `json:"crypttab,omitempty"`
	CrypttabLine      string `json:"crypttab_line,omitempty"`
	CrypttabAdded     bool   `json:"crypttab_added,omitempty"`
}

// Changed says whether applying the layer changed anything.
func (cr *Result) Changed() bool {
	return cr != nil && (cr.KeyMade || cr.Formatted || cr.TPM2Enrolled || cr.Opened || cr.CrypttabAdded)
}

// Actions are the dry run's steps of the layer, before what sits on it.
func Actions(c *Plan) []disk.Action {
	var s []disk.Action
	if c.Passphrase && (c.Format != nil || c.Open != nil) {
		how := "once"
		if c.Format != nil {
			how = "twice"
		}
		s = append(s, disk.Action{Text: fmt.Sprintf("ask the passphrase of %s on the terminal, not echoed (%s), before any step", c.Name, how)})
	}
	if c.MakeKey {
		s = append(s, disk.Action{Text: fmt.Sprintf("make key file %s (64 random bytes, mode 0400, root's)", c.KeyFile), Op: disk.OpWriteFile, Path: c.KeyFile})
	}
	if c.Format != nil {
		s = append(s, disk.Action{Text: disk.QuoteArgv(keyShown(c.Format)), Op: disk.OpRun, Argv: c.Format})
	}
	if c.Enroll != nil {
		s = append(s, disk.Action{Text: disk.QuoteArgv(keyShown(c.Enroll)), Op: disk.OpRun, Argv: c.Enroll})
	}
	if c.Open != nil {
		s = append(s, disk.Action{Text: disk.QuoteArgv(keyShown(c.Open)), Op: disk.OpRun, Argv: c.Open})
	} else {
		s = append(s, disk.Action{Text: fmt.Sprintf("LUKS2 volume %s is open at %s", c.Backing, c.Mapper)})
	}
	if c.FSAfterOpen {
		s = append(s, disk.Action{Text: fmt.Sprintf("once open, what %s holds decides: mkfs when nothing, kept when the file system asked", c.Mapper)})
	}
	if c.CrypttabLine != "" {
		s = append(s, disk.Action{Text: fmt.Sprintf("ensure in %s: %s", c.Crypttab, c.CrypttabLine), Op: disk.OpWriteFile, Path: c.Crypttab, Maybe: c.Format == nil})
	}
	return s
}

// ArgvText is argv as the dry run shows it: the key file's path marked as
// one, a passphrase as read from standard input.
func ArgvText(argv []string) string { return disk.QuoteArgv(keyShown(argv)) }

// keyShown is argv as shown to people: the key file's path marked as one.
func keyShown(argv []string) []string {
	out := append([]string(nil), argv...)
	for i := range out {
		switch {
		case i > 0 && out[i-1] == "--key-file" && out[i] == "-":
			out[i] = "<passphrase on standard input>"
		case i > 0 && (out[i-1] == "--key-file" || out[i-1] == "--unlock-key-file"):
			out[i] = "<key file " + out[i] + ">"
		}
	}
	return out
}

// Diff is the layer and its crypttab line as a plan's diff shows them,
// against the crypttab data; none for nil.
func Diff(c *Plan, crypttab string) []disk.Change {
	if c == nil {
		return nil
	}
	a := disk.ActKeep
	if c.Format != nil {
		a = disk.ActCreate
	}
	what := fmt.Sprintf("LUKS2 on %s, %d-byte sectors, %s", c.Backing, c.SectorBytes, unlockText(c.Passphrase, c.KeyFile, c.TPM2))
	if c.MakeKey {
		what += " (made)"
	}
	if c.Enroll != nil && c.Format == nil {
		what += ", TPM2 enrolled"
	}
	if c.Open != nil && c.Format == nil {
		what += ", opened"
	}
	cs := []disk.Change{{Act: a, Layer: "luks", Device: c.Mapper, What: what}}
	if c.CrypttabLine != "" {
		a := disk.ActCreate
		if have, _, ok := crypttabEntry(crypttab, c.Name); ok && sameCrypttabLine(have, c.CrypttabLine) {
			a = disk.ActKeep
		}
		cs = append(cs, disk.Change{Act: a, Layer: "crypttab", Device: c.Crypttab, What: c.CrypttabLine})
	}
	return cs
}

// unlockText says what unlocks a layer, for people.
func unlockText(passphrase bool, keyFile string, tpm2 bool) string {
	switch {
	case passphrase:
		return "a passphrase"
	case tpm2:
		return "the TPM at boot (recovery key file " + keyFile + ")"
	}
	return "key file " + keyFile
}

// Applier applies LUKS2 layers and their release with what disk gives a
// layer.
type Applier struct{ *disk.Applier }

// Up makes the key file when asked, formats and opens the LUKS2 volume of
// c as planned (each step skipped when done), and adds its crypttab line.
// A mapping it opened is closed by undo.
func (a Applier) Up(ctx context.Context, c *Plan, version string, undo *[]func()) (*Result, error) {
	cr := &Result{Name: c.Name, Backing: c.Backing, Mapper: c.Mapper, UUID: c.UUID, KeyFile: c.KeyFile, Passphrase: c.Passphrase, TPM2: c.TPM2, SectorBytes: c.SectorBytes,
		CryptsetupVersion: version, Crypttab: c.Crypttab, CrypttabLine: c.CrypttabLine}
	var secret []byte
	if c.Passphrase && (c.Format != nil || c.Open != nil) {
		var err error
		if secret, err = a.Passphrase(ctx, c.Name, c.Format != nil); err != nil {
			return cr, err
		}
		defer clear(secret)
	}
	if c.MakeKey {
		if err := a.makeKey(c.KeyFile); err != nil {
			return cr, err
		}
		cr.KeyMade = true
	}
	if c.Format != nil {
		if err := a.DoInput(ctx, "format the LUKS2 volume", c.Format, secret); err != nil {
			return cr, fmt.Errorf("luksFormat %s: %w", c.Backing, err)
		}
		cr.Formatted, cr.FormatArgv = true, c.Format
	}
	if c.Enroll != nil {
		if err := a.Do(ctx, "seal a key slot to the TPM", c.Enroll); err != nil {
			return cr, fmt.Errorf("enroll the TPM for %s: %w", c.Backing, err)
		}
		cr.TPM2Enrolled, cr.EnrollArgv = true, c.Enroll
	}
	if c.Open != nil {
		if err := a.DoInput(ctx, "open the LUKS2 volume", c.Open, secret); err != nil {
			return cr, fmt.Errorf("open %s: %w", c.Backing, err)
		}
		cr.Opened, cr.OpenArgv = true, c.Open
		*undo = append(*undo, func() {
			if _, err := a.Host().Run(context.WithoutCancel(ctx), "cryptsetup", "close", c.Name); err != nil {
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

// makeKey writes a new key file: random bytes, root's alone, its directory
// made root's alone when missing.
func (a Applier) makeKey(path string) error {
	host := a.Roots().HostPath(strings.TrimPrefix(path, "/"))
	if err := a.Host().MkdirAll(filepath.Dir(host), 0o700); err != nil {
		return fmt.Errorf("make key file %s: %w", path, err)
	}
	key := make([]byte, keyFileBytes)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("make key file %s: %w", path, err)
	}
	if err := a.Host().WriteFile(host, key, 0o400); err != nil {
		return fmt.Errorf("make key file %s: %w", path, err)
	}
	return nil
}

// ensureCrypttab adds the volume's crypttab line, marked as diskprep's,
// unless it is there.
func (a Applier) ensureCrypttab(c *Plan) (bool, error) {
	data, err := a.Host().ReadFile(c.Crypttab)
	if err != nil && !isNotExist(err) {
		return false, fmt.Errorf("read %s: %w", c.Crypttab, err)
	}
	out, changed, err := addCrypttab(string(data), c.CrypttabLine, a.Now().UTC().Format("2006-01-02"))
	if err != nil || !changed {
		return false, err
	}
	if err := a.Host().WriteFile(c.Crypttab, []byte(out), 0o600); err != nil {
		return false, fmt.Errorf("write %s: %w", c.Crypttab, err)
	}
	return true, nil
}

// Write renders the layer's result, nothing for none.
func (cr *Result) Write(b *strings.Builder, indent string) {
	if cr == nil {
		return
	}
	var did []string
	if cr.KeyMade {
		did = append(did, "key file made")
	}
	if cr.Formatted {
		did = append(did, "formatted")
	}
	if cr.TPM2Enrolled {
		did = append(did, "TPM2 enrolled")
	}
	if cr.Opened {
		did = append(did, "opened")
	}
	if len(did) == 0 {
		did = append(did, "open")
	}
	fmt.Fprintf(b, "%sLUKS2 %s on %s, %d-byte sectors, %s: %s (%s)\n", indent, cr.Mapper, cr.Backing, cr.SectorBytes, unlockText(cr.Passphrase, cr.KeyFile, cr.TPM2), strings.Join(did, ", "), cr.CryptsetupVersion)
	if cr.CrypttabLine != "" {
		state := "already present"
		if cr.CrypttabAdded {
			state = "added"
		}
		fmt.Fprintf(b, "%scrypttab (%s): %s\n", indent, state, cr.CrypttabLine)
	}
}
