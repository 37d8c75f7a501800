package hwinfo

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/diskprep/diskprep/hwinfo/probe"
)

// Crypt is what a LUKS header on a disk or partition says, and whether the
// volume is open.
type Crypt struct {
	Version int    `json:"version"` // LUKS1 or LUKS2
	Cipher  string `json:"cipher"`  // aes-xts-plain64
	KeyBits int    `json:"key_bits"`
	// SectorBytes is the encryption sector (512, or 4096 for LUKS2 where
	// the device allows it).
	SectorBytes int `json:"sector_bytes"`
	// Open: the kernel maps the decrypted volume, at Mapper
	// (/dev/mapper/NAME); what is on it is the holder's (Holders).
	Open   bool   `json:"open"`
	Mapper string `json:"mapper,omitempty"`
	// UUID is the header's, as crypttab's UUID= names it.
	UUID string `json:"uuid,omitempty"`
	// Tokens are the header's LUKS2 token types (systemd-tpm2: a key
	// slot sealed to the TPM).
	Tokens []string `json:"tokens,omitempty"`
}

// readCrypt fills Crypt for each disk and partition whose signature is
// LUKS, from its header, where the root has the device's contents.
func (r *reader) readCrypt(disks []Disk) {
	for i := range disks {
		d := &disks[i]
		if d.FSType == "crypto_LUKS" {
			d.Crypt = r.cryptOf(d.Path, d.SizeBytes, d.Holders)
		}
		for j := range d.Partitions {
			p := &d.Partitions[j]
			if p.FSType == "crypto_LUKS" {
				p.Crypt = r.cryptOf(p.Path, p.SizeBytes, p.Holders)
			}
		}
	}
}

func (r *reader) cryptOf(path string, size uint64, holders []Holder) *Crypt {
	f, size, ok := r.openHeader(path, size, &r.cryptOpenFailed, "LUKS ciphers and key sizes")
	if !ok {
		return nil
	}
	defer f.Close()
	l, err := probe.ReadLUKS(freshReader{f}, int64(size))
	if err != nil {
		if !errors.Is(err, probe.ErrNoLUKS) {
			r.warn("%s: %v", path, err)
		}
		return nil
	}
	return CryptOf(l, holders)
}

// CryptOf is what a LUKS header says, open when a holder maps it.
func CryptOf(l *probe.LUKS, holders []Holder) *Crypt {
	c := &Crypt{Version: l.Version, Cipher: l.Cipher, KeyBits: l.KeyBits, SectorBytes: l.SectorBytes, UUID: l.UUID, Tokens: l.Tokens}
	for _, h := range holders {
		if h.Kind == "crypt" {
			c.Open, c.Mapper = true, "/dev/mapper/"+h.DMName
			break
		}
	}
	return c
}

// checkCrypttab says, one line each, why a LUKS volume that crypttab asks
// to unlock is not open: its key file is missing, or it did not open it.
// (A boot goes on without it when the entry says nofail; this is where an
// admin hears of it.)
func (r *reader) checkCrypttab(h *Host) {
	b, err := r.readFile("/etc/crypttab")
	if err != nil {
		return
	}
	byUUID := map[string]*Crypt{}
	add := func(c *Crypt) {
		if c != nil && c.UUID != "" {
			byUUID[strings.ToLower(c.UUID)] = c
		}
	}
	for i := range h.Disks {
		add(h.Disks[i].Crypt)
		for j := range h.Disks[i].Partitions {
			add(h.Disks[i].Partitions[j].Crypt)
		}
	}
	for i := range h.Arrays {
		add(h.Arrays[i].Crypt)
	}
	for i := range h.VolumeGroups {
		for j := range h.VolumeGroups[i].LVs {
			add(h.VolumeGroups[i].LVs[j].Crypt)
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		uuid, ok := strings.CutPrefix(f[1], "UUID=")
		if !ok {
			continue
		}
		c := byUUID[strings.ToLower(uuid)]
		if c == nil || c.Open {
			continue
		}
		why := "nothing opened it"
		if len(f) == 2 || f[2] == "none" || f[2] == "-" {
			why = "its passphrase was not given at boot (systemctl start asks it again)"
		}
		if len(f) > 2 && f[2] != "none" && f[2] != "-" && strings.HasPrefix(f[2], "/") {
			if _, err := os.Stat(r.path(f[2])); errors.Is(err, os.ErrNotExist) {
				why = "its key file " + f[2] + " is missing"
			} else {
				why = "its key file " + f[2] + " did not open it, or nothing tried"
			}
		}
		r.warn("LUKS volume %s (crypttab) is not open: %s (systemctl status %s)", f[0], why, cryptsetupUnit(f[0]))
	}
}

// cryptsetupUnit is the systemd unit that opens the crypttab entry name,
// its name escaped as systemd-escape does.
func cryptsetupUnit(name string) string {
	var b strings.Builder
	for i, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == ':', c == '.' && i > 0:
			b.WriteByte(c)
		case c == '/':
			b.WriteByte('-')
		default:
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	return "systemd-cryptsetup@" + b.String() + ".service"
}

// CryptMapped is the LUKS header whose open mapping is /dev/mapper/name,
// wherever it sits (a disk, a partition, an array, a logical volume); nil
// when none is open under that name.
func (h *Host) CryptMapped(name string) *Crypt {
	want := "/dev/mapper/" + name
	match := func(c *Crypt) bool { return c != nil && c.Open && c.Mapper == want }
	for i := range h.Disks {
		d := &h.Disks[i]
		if match(d.Crypt) {
			return d.Crypt
		}
		for j := range d.Partitions {
			if match(d.Partitions[j].Crypt) {
				return d.Partitions[j].Crypt
			}
		}
	}
	for i := range h.Arrays {
		if match(h.Arrays[i].Crypt) {
			return h.Arrays[i].Crypt
		}
	}
	for i := range h.VolumeGroups {
		for j := range h.VolumeGroups[i].LVs {
			if match(h.VolumeGroups[i].LVs[j].Crypt) {
				return h.VolumeGroups[i].LVs[j].Crypt
			}
		}
	}
	return nil
}
