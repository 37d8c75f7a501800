// Package crypt is the LUKS2 layer of a stack: a key file, cryptsetup's
// luksFormat and open, the crypttab line that unlocks it at boot, and its
// release. It sits under what it encrypts for (an array's or a logical
// volume's file system, a volume group's member) and above disk, whose
// guard and Host seam it uses: stack plans a volume and asks this package
// for the layer beneath its file system.
package crypt

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Spec asks for a file system (or a group's members) to sit on LUKS2: the
// device is formatted with cryptsetup, opened at /dev/mapper/NAME, and
// what was asked made there.
type Spec struct {
	// KeyFile unlocks the volume: an absolute path on the host, made
	// (0400, root's, 64 random bytes) when missing.
	KeyFile string `json:"key_file,omitempty"`
	// Passphrase unlocks the volume instead: asked on a terminal at
	// prepare (twice for a new volume) and by systemd at boot, never in an
	// argv, a record or a log.
	Passphrase bool `json:"passphrase,omitempty"`
	// Name is the mapping's name; "" is the volume's own name and
	// "_crypt" (data_crypt, vg-lv_crypt).
	Name string `json:"name,omitempty"`
	// Discard lets TRIM through the mapping (open --allow-discards, the
	// crypttab's "discard"). Never by default: it shows which blocks are
	// free to anyone holding the disk.
	Discard bool `json:"discard,omitempty"`
	// SectorBytes is the encryption sector asked for: 512 or 4096; 0
	// lets diskprep choose (4096 where the device allows it).
	SectorBytes uint64 `json:"sector_bytes,omitempty"`
	// TPM2 seals a second key slot to this machine's TPM 2.0
	// (systemd-cryptenroll), which unlocks the volume at boot; the key
	// file stays as the recovery key, kept off the machine by whoever
	// wants the TPM alone to unlock it.
	TPM2 bool `json:"tpm2,omitempty"`
}

// Plan is one LUKS2 layer, decided up front.
type Plan struct {
	Name    string `json:"name"`    // the mapping's name
	Backing string `json:"backing"` // the device it encrypts
	Mapper  string `json:"mapper"`  // /dev/mapper/NAME
	UUID    string `json:"uuid"`    // the LUKS header's
	KeyFile string `json:"key_file,omitempty"`
	// Passphrase: a passphrase unlocks it, given to cryptsetup on its
	// standard input.
	Passphrase bool `json:"passphrase,omitempty"`
	// MakeKey: the key file is missing and is made before luksFormat.
	MakeKey bool `json:"make_key,omitempty"`
	// TPM2: the TPM unlocks it at boot; Enroll is the
	// systemd-cryptenroll argv that seals a key slot to it, nil when
	// the header has the token already.
	TPM2   bool     `json:"tpm2,omitempty"`
	Enroll []string `json:"enroll,omitempty"`
	// SectorBytes is the encryption sector; SectorWhy says why it was
	// chosen.
	SectorBytes uint64 `json:"sector_bytes"`
	SectorWhy   string `json:"sector_why,omitempty"`
	// Format is the luksFormat argv, nil when the header is there; Open
	// the open argv, nil when the mapping is open.
	Format []string `json:"format,omitempty"`
	Open   []string `json:"open,omitempty"`
	// FSAfterOpen: the volume is closed, so what is on it is looked at
	// once it is opened.
	FSAfterOpen  bool   `json:"fs_after_open,omitempty"`
	Crypttab     string `json:"crypttab,omitempty"` // the file, when persisted
	CrypttabLine string `json:"crypttab_line,omitempty"`
	// Wipe and NoDiscard are the request's, for FSAfterOpen.
	Wipe      bool `json:"wipe,omitempty"`
	NoDiscard bool `json:"no_discard,omitempty"`
	// lineMissing: crypttab has no entry for the mapping yet.
	lineMissing bool
}

// Changes says whether the layer needs any step.
func (c *Plan) Changes() bool {
	return c != nil && (c.MakeKey || c.Format != nil || c.Enroll != nil || c.Open != nil || c.lineMissing)
}

// Fresh says the layer is formatted by this plan: what is on the mapping
// is new.
func (c *Plan) Fresh() bool { return c.Format != nil }

// SectorText is the sector size and why, for a plan's summary.
func (c *Plan) SectorText() string {
	s := fmt.Sprintf(", %d-byte sectors", c.SectorBytes)
	if c.SectorWhy != "" {
		s += " (" + c.SectorWhy + ")"
	}
	return s
}

// keyFileBytes is the size of a key file diskprep makes: 512 bits, as
// cryptsetup's own default key file read limit is far above it and a LUKS2
// volume key is at most that.
const keyFileBytes = 64

// HeaderBytes is what a LUKS2 header takes at the start of its device
// (cryptsetup's default for a volume of this size): the mapping is that
// much smaller.
const HeaderBytes = 16 << 20

// formatArgv is the luksFormat of a new volume. A key file of 512 random
// bits needs no key stretching, so PBKDF2 with cryptsetup's least
// iterations (as systemd-cryptenroll does for its high-entropy keys):
// argon2id's default second and up to 1 GiB of memory would be spent at
// every unlock for nothing. A passphrase a person chose needs all of it:
// cryptsetup's own default (argon2id, benchmarked to about 2 s).
func formatArgv(c *Plan) []string {
	argv := []string{"cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2", "--uuid", c.UUID, "--sector-size", fmt.Sprint(c.SectorBytes)}
	if !c.Passphrase {
		argv = append(argv, "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000")
	}
	return append(argv, "--key-file", c.keyArg(), c.Backing)
}

// keyArg is cryptsetup's --key-file: the file, or "-", standard input,
// where the passphrase is given.
func (c *Plan) keyArg() string {
	if c.Passphrase {
		return "-"
	}
	return c.KeyFile
}

// enrollArgv seals a new key slot to the TPM, unlocked with the key file.
// PCR 7 (Secure Boot state), systemd-cryptenroll's default, is left to
// it: the slot opens on this machine while its boot chain's policy holds.
func enrollArgv(c *Plan) []string {
	return []string{"systemd-cryptenroll", "--unlock-key-file", c.KeyFile, "--tpm2-device=auto", c.Backing}
}

// TPM2Token is the LUKS2 token type systemd-cryptenroll writes for a
// TPM-sealed key slot.
const TPM2Token = "systemd-tpm2"

// ResizeArgv grows the open mapping of c to fill its grown backing
// device, online. A passphrase volume's key is the one the kernel keyring
// kept when it was opened (LUKS2): no passphrase is asked again.
func ResizeArgv(c *Plan) []string {
	if c.Passphrase {
		return []string{"cryptsetup", "resize", c.Name}
	}
	return []string{"cryptsetup", "resize", "--key-file", c.KeyFile, c.Name}
}

func openArgv(c *Plan, discard bool) []string {
	argv := []string{"cryptsetup", "open", "--type", "luks2", "--key-file", c.keyArg()}
	if discard {
		argv = append(argv, "--allow-discards")
	}
	return append(argv, c.Backing, c.Name)
}

// DefaultName is the mapping name of an array's or logical volume's
// layer: the array's name or the group's and volume's, and "_crypt", as
// Debian's installer names them.
func DefaultName(dev string) string {
	if strings.HasPrefix(dev, "/dev/md/") {
		return filepath.Base(dev) + "_crypt"
	}
	return filepath.Base(filepath.Dir(dev)) + "-" + filepath.Base(dev) + "_crypt"
}

// validName: a device-mapper name diskprep writes into crypttab and
// /dev/mapper (no slash, no space, short).
func validName(n string) bool {
	if n == "" || len(n) > 100 || n == "." || n == ".." || n == "control" {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.+", r)) {
			return false
		}
	}
	return true
}

// Validate checks a Spec on its own: bad input whatever the machine (the
// error says what, without where).
func (e Spec) Validate() error {
	switch {
	case e.SectorBytes != 0 && e.SectorBytes != 512 && e.SectorBytes != 4096:
		return fmt.Errorf("encrypt sector size %d: 512 or 4096", e.SectorBytes)
	case e.KeyFile != "" && e.Passphrase:
		return errors.New("encrypt takes a key file or a passphrase, not both")
	case e.TPM2 && e.KeyFile == "":
		return errors.New("tpm2 needs a key file (--key-file PATH): it enrolls the TPM and stays as the recovery key")
	case e.Passphrase:
		if e.Name != "" && !validName(e.Name) {
			return fmt.Errorf("encrypt name %q: use letters, digits and - _ . +", e.Name)
		}
		return nil
	case e.KeyFile == "":
		return errors.New("encrypt needs a key file (--key-file PATH) or a passphrase (--passphrase)")
	case !filepath.IsAbs(e.KeyFile) || filepath.Clean(e.KeyFile) != e.KeyFile:
		return fmt.Errorf("key file %q: give a clean absolute path", e.KeyFile)
	case strings.ContainsAny(e.KeyFile, " \t\n\\#"):
		return fmt.Errorf("key file %q: a crypttab path cannot hold spaces, tabs, backslashes or #", e.KeyFile)
	case e.Name != "" && !validName(e.Name):
		return fmt.Errorf("encrypt name %q: use letters, digits and - _ . +", e.Name)
	}
	return nil
}

// sectorFor chooses the encryption sector: 4096 where the device allows it
// (its size a whole number of 4 KiB, its logical sector at most that): the
// kernel's 512 costs several times the CPU on 4 KiB I/O.
// A size asked for (Spec.SectorBytes) is taken where the device allows
// it, and refused where it does not.
func sectorFor(size, logical, asked uint64) (uint64, string, error) {
	switch {
	case asked != 0 && asked < logical:
		return 0, "", fmt.Errorf("%d-byte encryption sectors were asked for, but the device's logical sector is %d bytes", asked, logical)
	case asked != 0 && size%asked != 0:
		return 0, "", fmt.Errorf("%d-byte encryption sectors were asked for, but the device's size is not a whole number of them", asked)
	case asked != 0:
		return asked, "asked for", nil
	}
	n, why := sectorChoice(size, logical)
	return n, why, nil
}

func sectorChoice(size, logical uint64) (uint64, string) {
	switch {
	case logical > 4096:
		return logical, fmt.Sprintf("the device's logical sector is %d bytes", logical)
	case size%4096 != 0:
		return 512, "the device's size is not a whole number of 4 KiB"
	case logical == 4096:
		return 4096, "the device's logical sector is 4096 bytes (4Kn)"
	}
	return 4096, "4 KiB I/O encrypts in one piece instead of eight, and the device's size allows it"
}
