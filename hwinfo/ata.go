package hwinfo

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// ataIdentity is what an ATA disk's IDENTIFY DEVICE data says about it.
type ataIdentity struct {
	Model, Serial, Firmware string
	WWN                     string // as udev's ID_WWN ("0x5000039fe6d0a1b2"), "" when the disk has none
}

// IDENTIFY DEVICE word offsets (ATA8-ACS 7.16.7).
const (
	ataWordSerial   = 10  // 20 characters, words 10-19
	ataWordFirmware = 23  // 8 characters, words 23-26
	ataWordModel    = 27  // 40 characters, words 27-46
	ataWordCSF      = 87  // command set/feature default: bit 8 says words 108-111 hold a WWN
	ataWordWWN      = 108 // words 108-111, most significant word first
	ataWordCheck    = 255 // integrity word: 0xA5 in bits 7:0, checksum in 15:8
)

// vpd89IdentifyOffset is where the ATA Information VPD page (SAT-5 12.4.2)
// carries the 512 bytes of IDENTIFY data, after its header, the SAT layer's
// vendor, product and revision, the device signature and the command code.
const vpd89IdentifyOffset = 60

// parseVPD89 decodes the ATA Information VPD page, which libata (and every
// SAT layer) builds from the disk's IDENTIFY (PACKET) DEVICE data: the full
// 40-character model that the 16-byte INQUIRY product field, sysfs
// device/model, cuts short. ok is false for anything that is not that page.
func parseVPD89(b []byte) (id ataIdentity, words []uint16, ok bool) {
	if len(b) < vpd89IdentifyOffset+512 || b[1] != 0x89 || int(binary.BigEndian.Uint16(b[2:4]))+4 < vpd89IdentifyOffset+512 {
		return ataIdentity{}, nil, false
	}
	switch b[56] {
	case 0xec, 0xa1: // IDENTIFY DEVICE, IDENTIFY PACKET DEVICE
	default:
		return ataIdentity{}, nil, false
	}
	raw := b[vpd89IdentifyOffset : vpd89IdentifyOffset+512]
	// Words are little-endian: byte 60+2n is bits 7:0 of word n.
	words = make([]uint16, 256)
	for i := range words {
		words[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	if words[ataWordCheck]&0xff == 0xa5 {
		var sum byte
		for _, c := range raw {
			sum += c
		}
		if sum != 0 {
			return ataIdentity{}, nil, false // the data was damaged on the way
		}
	}
	id = ataIdentity{
		Serial:   ataString(words[ataWordSerial : ataWordSerial+10]),
		Firmware: ataString(words[ataWordFirmware : ataWordFirmware+4]),
		Model:    ataString(words[ataWordModel : ataWordModel+20]),
	}
	// Bits 15:14 = 01 say the word is valid; bit 8 that a WWN is there
	// (the kernel's ata_id_has_wwn).
	if words[ataWordCSF]&0xc100 == 0x4100 {
		var wwn uint64
		for _, w := range words[ataWordWWN : ataWordWWN+4] {
			wwn = wwn<<16 | uint64(w)
		}
		if wwn != 0 {
			id.WWN = fmt.Sprintf("0x%016x", wwn)
		}
	}
	return id, words, true
}

// ataString reads an IDENTIFY string: each word holds its first character
// in bits 15:8, padded with spaces (some devices pad with NULs).
func ataString(words []uint16) string {
	b := make([]byte, 0, 2*len(words))
	for _, w := range words {
		b = append(b, byte(w>>8), byte(w))
	}
	return strings.Trim(string(b), " \x00")
}

// t10ATAPrefix starts the kernel's wwid of an ATA disk without a WWN: the
// T10 vendor ID designator a SAT layer builds (SAT-5 10.5.4) from vendor
// "ATA", the 40-character model and the 20-character serial.
const t10ATAPrefix = "t10.ATA     "

// ataFromWWID takes the model and serial out of such a wwid.
func ataFromWWID(w string) (model, serial string, ok bool) {
	rest, ok := strings.CutPrefix(w, t10ATAPrefix)
	if !ok || strings.TrimSpace(rest) == "" {
		return "", "", false
	}
	if len(rest) <= 40 {
		return strings.TrimSpace(rest), "", true // serial blank, trailing spaces trimmed
	}
	return strings.TrimSpace(rest[:40]), strings.TrimSpace(rest[40:]), true
}
