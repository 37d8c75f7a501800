package hwinfo

import (
	"errors"

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
	c := &Crypt{Version: l.Version, Cipher: l.Cipher, KeyBits: l.KeyBits, SectorBytes: l.SectorBytes}
	for _, h := range holders {
		if h.Kind == "crypt" {
			c.Open, c.Mapper = true, "/dev/mapper/"+h.DMName
			break
		}
	}
	return c
}
