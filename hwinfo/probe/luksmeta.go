package probe

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"strconv"
)

// The LUKS on-disk formats (cryptsetup's docs/on-disk-format*.pdf).
//
// LUKS1: one 592-byte header at 0: the cipher's name and mode, the volume
// key's length in bytes and where the data starts, in 512-byte sectors.
//
// LUKS2: a 4 KiB binary header at 0 and a copy at the secondary offset
// (its size, 16 KiB by default), each followed by a JSON area; the binary
// header's checksum covers both. The JSON says the data segments (cipher,
// sector size, offset) and the keyslots (the volume key's length).

// LUKS is what a LUKS header says of the encrypted volume.
type LUKS struct {
	Version int    // 1 or 2
	UUID    string // as cryptsetup prints it
	Label   string // LUKS2 only
	// Cipher is cipher-mode as cryptsetup prints it: aes-xts-plain64.
	Cipher string
	// KeyBits is the volume key's length (512 for AES-256 in XTS).
	KeyBits int
	// SectorBytes is the encryption sector: 512 for LUKS1, 512 or 4096
	// (cryptsetup's default where the device allows it) for LUKS2.
	SectorBytes int
	// DataOffsetBytes is where the encrypted data starts.
	DataOffsetBytes uint64
	// Tokens are the LUKS2 tokens' types, sorted: systemd-tpm2 when
	// systemd-cryptenroll sealed a key slot's passphrase to a TPM.
	Tokens []string
}

// ErrNoLUKS means the device carries no LUKS header.
var ErrNoLUKS = errors.New("no LUKS header")

const (
	luks1HeaderSize = 592
	luks2BinarySize = 4096
	// luks2MaxHeader bounds the header and JSON area read (cryptsetup
	// allows up to 4 MiB; it writes 16 KiB unless told).
	luks2MaxHeader = 4 << 20
)

// ReadLUKS reads the LUKS header of r, a device of size bytes. A LUKS2
// header whose checksum does not match is passed over for its secondary
// copy, as cryptsetup does; when neither is whole the error says so. A
// device without a LUKS magic is ErrNoLUKS.
func ReadLUKS(r io.ReaderAt, size int64) (*LUKS, error) {
	d := newDevice(r, size)
	h := d.read(0, luks1HeaderSize)
	if d.err != nil {
		return nil, d.err
	}
	if h != nil && string(h[:6]) == "LUKS\xba\xbe" && be16(h[6:]) == 1 {
		return luks1(h), nil
	}
	offsets := []int64{0}
	if h == nil || string(h[:6]) != "LUKS\xba\xbe" {
		offsets = nil
	}
	offsets = append(offsets, luksSecondaryOffsets...)
	var firstErr error
	found := false
	for _, off := range offsets {
		magic := "SKUL\xba\xbe"
		if off == 0 {
			magic = "LUKS\xba\xbe"
		}
		b := d.read(off, luks2BinarySize)
		if d.err != nil {
			return nil, d.err
		}
		if b == nil || string(b[:6]) != magic || be16(b[6:]) != 2 {
			continue
		}
		found = true
		l, err := luks2(d, off, b)
		if err == nil {
			return l, nil
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("LUKS2 header at %d: %w", off, err)
		}
	}
	if !found {
		return nil, ErrNoLUKS
	}
	return nil, firstErr
}

func luks1(h []byte) *LUKS {
	l := &LUKS{Version: 1, UUID: cString(h[168:208]), SectorBytes: 512,
		KeyBits: int(be32(h[108:])) * 8, DataOffsetBytes: uint64(be32(h[104:])) * 512}
	l.Cipher = cString(h[8:40])
	if mode := cString(h[40:72]); mode != "" {
		l.Cipher += "-" + mode
	}
	return l
}

// luks2JSON is the part of the LUKS2 JSON area read here.
type luks2JSON struct {
	Keyslots map[string]struct {
		KeySize int `json:"key_size"`
	} `json:"keyslots"`
	Segments map[string]struct {
		Type       string `json:"type"`
		Offset     string `json:"offset"`
		Encryption string `json:"encryption"`
		SectorSize int    `json:"sector_size"`
	} `json:"segments"`
	Digests map[string]struct {
		Keyslots []string `json:"keyslots"`
		Segments []string `json:"segments"`
	} `json:"digests"`
	Tokens map[string]struct {
		Type string `json:"type"`
	} `json:"tokens"`
}

func luks2(d *device, off int64, bin []byte) (*LUKS, error) {
	hdrSize := be64(bin[8:])
	if hdrSize < luks2BinarySize+4096 || hdrSize > luks2MaxHeader || hdrSize%4096 != 0 {
		return nil, fmt.Errorf("header size %d", hdrSize)
	}
	if got := be64(bin[256:]); got != uint64(off) {
		return nil, fmt.Errorf("it says it is at %d", got)
	}
	if off+int64(hdrSize) > d.size {
		return nil, fmt.Errorf("its %d bytes are not all on the device", hdrSize)
	}
	// Read here, not through d.read: a header may be up to 4 MiB.
	all := make([]byte, hdrSize)
	if n, err := d.r.ReadAt(all, off); n < len(all) {
		return nil, fmt.Errorf("read %d bytes at %d: %w", len(all), off, err)
	}
	var hf func() hash.Hash
	switch alg := cString(bin[72:104]); alg {
	case "sha256":
		hf = sha256.New
	case "sha512":
		hf = sha512.New
	case "sha1":
		hf = sha1.New
	default:
		return nil, fmt.Errorf("checksum algorithm %q not known here", alg)
	}
	h := hf()
	sum := bin[448 : 448+h.Size()]
	c := bytes.Clone(all)
	clear(c[448 : 448+64])
	h.Write(c)
	if !bytes.Equal(h.Sum(nil), sum) {
		return nil, errors.New("checksum mismatch")
	}
	area := all[luks2BinarySize:]
	if i := bytes.IndexByte(area, 0); i >= 0 {
		area = area[:i]
	}
	var j luks2JSON
	if err := json.Unmarshal(area, &j); err != nil {
		return nil, fmt.Errorf("JSON area: %w", err)
	}
	l := &LUKS{Version: 2, UUID: cString(bin[168:208]), Label: cString(bin[24:72])}
	for _, t := range j.Tokens {
		l.Tokens = append(l.Tokens, t.Type)
	}
	sort.Strings(l.Tokens)
	seg, ok := j.Segments["0"]
	if !ok {
		// The lowest-numbered segment, when none is "0".
		keys := make([]string, 0, len(j.Segments))
		for k := range j.Segments {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			return nil, errors.New("no data segment")
		}
		seg = j.Segments[keys[0]]
	}
	l.Cipher, l.SectorBytes = seg.Encryption, seg.SectorSize
	if o, err := strconv.ParseUint(seg.Offset, 10, 64); err == nil {
		l.DataOffsetBytes = o
	}
	// The volume key's length: that of a keyslot whose digest covers the
	// segment (all keyslots of one volume key have it).
	for _, dg := range j.Digests {
		for _, ks := range dg.Keyslots {
			if k, ok := j.Keyslots[ks]; ok && k.KeySize > 0 {
				l.KeyBits = k.KeySize * 8
				return l, nil
			}
		}
	}
	for _, k := range j.Keyslots {
		if k.KeySize > 0 {
			l.KeyBits = k.KeySize * 8
			break
		}
	}
	return l, nil
}
