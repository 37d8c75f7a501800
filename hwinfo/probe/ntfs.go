package probe

import "fmt"

// ntfsGeometry is what the NTFS boot sector says about cluster and MFT
// record sizes.
type ntfsGeometry struct {
	bs                []byte
	sectorSize        uint64
	sectorsPerCluster uint64
	mftRecordSize     uint64
}

// ntfsBoot checks the boot sector as libblkid's __probe_ntfs does before it
// looks at the MFT.
func ntfsBoot(d *device) *ntfsGeometry {
	bs := d.read(0, 512)
	if bs == nil || string(bs[3:11]) != "NTFS    " {
		return nil
	}
	g := &ntfsGeometry{bs: bs, sectorSize: uint64(le16(bs[0x0b:]))}
	if g.sectorSize < 256 || g.sectorSize > 4096 {
		return nil
	}
	switch spc := bs[0x0d]; {
	case isPowerOf2(uint64(spc)):
		g.sectorsPerCluster = uint64(spc)
	case spc >= 240 && spc <= 249:
		g.sectorsPerCluster = 1 << (256 - uint(spc))
	default:
		return nil
	}
	if g.sectorSize*g.sectorsPerCluster > 2<<20 {
		return nil
	}
	// Fields FAT uses must be zero on NTFS.
	if le16(bs[0x0e:]) != 0 || le16(bs[0x11:]) != 0 || le16(bs[0x13:]) != 0 || le16(bs[0x16:]) != 0 ||
		le32(bs[0x20:]) != 0 || bs[0x10] != 0 {
		return nil
	}
	cpm := int8(bs[0x40])
	switch {
	case cpm < 0 && cpm >= -31 && cpm <= -9: // 0xe1..0xf7: 2^-cpm bytes
		g.mftRecordSize = 1 << uint(-cpm)
	case cpm > 0 && isPowerOf2(uint64(cpm)) && cpm <= 64:
		g.mftRecordSize = uint64(cpm) * g.sectorsPerCluster * g.sectorSize
	default:
		return nil
	}
	nrClusters := le64(bs[0x28:]) / g.sectorsPerCluster
	if le64(bs[0x30:]) > nrClusters || le64(bs[0x38:]) > nrClusters {
		return nil
	}
	return g
}

func probeNTFS(d *device) []Signature {
	g := ntfsBoot(d)
	if g == nil || g.mftRecordSize > maxRead {
		return nil
	}
	mftOff := le64(g.bs[0x30:]) * g.sectorSize * g.sectorsPerCluster
	if mftOff > uint64(d.size) {
		return nil
	}
	first := d.read(int64(mftOff), int64(g.mftRecordSize))
	if first == nil || string(first[:4]) != "FILE" {
		return nil
	}
	// Record 3 is $Volume, whose VOLUME_NAME attribute is the label.
	vol := d.read(int64(mftOff+3*g.mftRecordSize), int64(g.mftRecordSize))
	if vol == nil || string(vol[:4]) != "FILE" {
		return nil
	}
	s := Signature{Type: "ntfs", Usage: UsageFilesystem, Offset: 3, Magic: clone(g.bs[3:11])}
	recSize := uint64(len(vol))
	allocated := uint64(le32(vol[28:]))
	for off := uint64(le16(vol[20:])); off+24 <= recSize && off <= allocated; {
		attr := vol[off:]
		typ, n := le32(attr), uint64(le32(attr[4:]))
		if n == 0 || typ == 0xffffffff {
			break
		}
		if typ == 0x60 {
			vo, vl := uint64(le16(attr[20:])), uint64(le32(attr[16:]))
			if off+vo+vl <= recSize {
				s.Label = utf16le(vol[off+vo : off+vo+vl])
			}
			break
		}
		off += n
	}
	if serial := le64(g.bs[0x48:]); serial != 0 {
		s.UUID = fmt.Sprintf("%016X", serial)
	}
	return []Signature{s}
}
