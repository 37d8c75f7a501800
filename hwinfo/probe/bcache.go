package probe

const bcacheSuperOffset = 4096

var bcacheMagic = []byte{0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81}

// probeBcache reads the bcache superblock at 4 KiB. Its 16-byte magic and
// self-recorded sector (8) are taken as enough; the CRC64 is not checked.
func probeBcache(d *device) []Signature {
	sb := d.read(bcacheSuperOffset, 512)
	if sb == nil || string(sb[24:40]) != string(bcacheMagic) || le64(sb[8:]) != bcacheSuperOffset/512 {
		return nil
	}
	return []Signature{{Type: "bcache", Usage: UsageOther, Label: cString(sb[72:104]), UUID: formatUUID(sb[40:56]),
		Offset: bcacheSuperOffset + 24, Magic: clone(sb[24:40])}}
}
