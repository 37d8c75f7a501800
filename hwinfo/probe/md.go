package probe

const (
	mdMagic         = 0xa92b4efc
	mdReservedBytes = 64 << 10 // v0.90 keeps its superblock in the last 64 KiB-aligned 64 KiB
)

// probeMD looks where mdadm puts each superblock version: 0.90 and 1.0 near
// the end, 1.1 at 0, 1.2 at 4 KiB.
func probeMD(d *device) []Signature {
	var sigs []Signature
	if d.size > mdReservedBytes {
		if s, ok := mdV090(d, (d.size&^(mdReservedBytes-1))-mdReservedBytes); ok {
			sigs = append(sigs, s)
		}
	}
	if end := (d.size/512 - 16) &^ 7; end > 0 {
		if s, ok := mdV1(d, end*512); ok {
			sigs = append(sigs, s)
		}
	}
	for _, off := range []int64{0, 4096} {
		if s, ok := mdV1(d, off); ok {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

// mdV090 reads a 0.90 superblock, written in the host's byte order. Its
// UUID is four words (the first at word 5, the rest at 13-15) that blkid
// prints big endian.
func mdV090(d *device, off int64) (Signature, bool) {
	sb := d.read(off, 128)
	if sb == nil {
		return Signature{}, false
	}
	word := le32
	switch {
	case le32(sb) == mdMagic:
	case be32(sb) == mdMagic:
		word = be32
	default:
		return Signature{}, false
	}
	var uuid [16]byte
	put := func(i int, w uint32) {
		uuid[4*i], uuid[4*i+1], uuid[4*i+2], uuid[4*i+3] = byte(w>>24), byte(w>>16), byte(w>>8), byte(w)
	}
	put(0, word(sb[5*4:]))
	if word(sb[2*4:]) >= 90 {
		put(1, word(sb[13*4:]))
		put(2, word(sb[14*4:]))
		put(3, word(sb[15*4:]))
	}
	return Signature{Type: "linux_raid_member", Usage: UsageRAID, UUID: formatUUID(uuid[:]), Offset: off, Magic: clone(sb[:4])}, true
}

// mdV1 reads a 1.x superblock, which must name its own position; set_name
// is the label ("host:0"). Like blkid -p and wipefs, a bad checksum does not
// hide it.
func mdV1(d *device, off int64) (Signature, bool) {
	sb := d.read(off, 256)
	if sb == nil || le32(sb) != mdMagic || le32(sb[4:]) != 1 || le64(sb[144:]) != uint64(off)>>9 {
		return Signature{}, false
	}
	return Signature{Type: "linux_raid_member", Usage: UsageRAID, Label: cString(sb[32:64]),
		UUID: formatUUID(sb[16:32]), Offset: off, Magic: clone(sb[:4])}, true
}
