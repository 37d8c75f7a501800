package probe

import "fmt"

const (
	fat12Max = 0xff4
	fat16Max = 0xfff4
	fat32Max = 0x0ffffff6
)

// fatStringMagics are libblkid's vfat magics that are strings, with their
// offsets; the one-byte jump opcodes and 0x55AA also count, but only with a
// boot sector signature.
var fatStringMagics = []struct {
	off   int
	magic string
}{
	{0x52, "MSWIN"}, {0x52, "FAT32   "},
	{0x36, "MSDOS"}, {0x36, "FAT16   "}, {0x36, "FAT12   "}, {0x36, "FAT     "},
}

// fatGeometry is what fat_valid_superblock derives from the boot sector.
type fatGeometry struct {
	sectorSize, reserved, fatSize, clusterCount uint32
}

// fatBoot is libblkid's blkid_probe_is_vfat: a FAT boot sector whose BPB is
// self-consistent. DOS table probing uses it to tell a FAT boot sector,
// which also ends in 0x55AA, from an MBR.
func fatBoot(d *device) (fatGeometry, bool) {
	bs := d.read(0, 512)
	if bs == nil {
		return fatGeometry{}, false
	}
	if fatStringMagic(bs) < 0 {
		// Without a FAT type string only the jump opcode or 0x55AA is
		// left, and libblkid then insists on the boot signature.
		if bs[510] != 0x55 || bs[511] != 0xaa {
			return fatGeometry{}, false
		}
		// OS/2 puts a FAT-like pseudo BPB in front of JFS and HPFS.
		if s := string(bs[0x36:0x3e]); s == "JFS     " || s == "HPFS    " {
			return fatGeometry{}, false
		}
	}
	return fatValidSuperblock(bs)
}

func fatStringMagic(bs []byte) int {
	for i, m := range fatStringMagics {
		if string(bs[m.off:m.off+len(m.magic)]) == m.magic {
			return i
		}
	}
	return -1
}

// fatValidSuperblock mirrors libblkid's fat_valid_superblock, including its
// 32-bit arithmetic, so the same boot sectors pass.
func fatValidSuperblock(bs []byte) (fatGeometry, bool) {
	clusterSize := uint32(bs[0x0d])
	reserved := uint32(le16(bs[0x0e:]))
	fats := uint32(bs[0x10])
	media := bs[0x15]
	sectorSize := uint32(le16(bs[0x0b:]))
	if fats == 0 || reserved == 0 || !(media >= 0xf8 || media == 0xf0) || !isPowerOf2(uint64(clusterSize)) ||
		!isPowerOf2(uint64(sectorSize)) || sectorSize < 512 || sectorSize > 4096 {
		return fatGeometry{}, false
	}
	dirEntries := uint32(le16(bs[0x11:]))
	sectCount := uint32(le16(bs[0x13:]))
	if sectCount == 0 {
		sectCount = le32(bs[0x20:])
	}
	fatLength := uint32(le16(bs[0x16:]))
	fat32Length := le32(bs[0x24:])
	if fatLength == 0 {
		fatLength = fat32Length
	}
	fatSize := fatLength * fats
	dirSize := (dirEntries*32 + sectorSize - 1) / sectorSize
	clusterCount := (sectCount - (reserved + fatSize + dirSize)) / clusterSize
	var maxCount uint32
	switch {
	case le16(bs[0x16:]) == 0 && fat32Length != 0:
		maxCount = fat32Max
	case clusterCount > fat12Max:
		maxCount = fat16Max
	default:
		maxCount = fat12Max
	}
	if clusterCount > maxCount || string(bs[3:11]) == "-FVE-FS-" { // BitLocker
		return fatGeometry{}, false
	}
	return fatGeometry{sectorSize: sectorSize, reserved: reserved, fatSize: fatSize, clusterCount: clusterCount}, true
}

// probeVFAT reports each vfat magic that `wipefs -a` erases: the FAT type
// string, the jump opcode at 0 and the 0x55AA boot signature. The label is
// the volume-label entry of the root directory, as blkid's LABEL (the boot
// sector's copy is its LABEL_FATBOOT).
func probeVFAT(d *device) []Signature {
	g, ok := fatBoot(d)
	if !ok {
		return nil
	}
	bs := d.read(0, 512)
	var label []byte
	var serno []byte
	if le16(bs[0x16:]) != 0 {
		rootStart := uint64(g.reserved+g.fatSize) * uint64(g.sectorSize)
		label = fatSearchLabel(d, rootStart, uint32(le16(bs[0x11:])))
		serno = bs[0x27:0x2b]
	} else if le32(bs[0x24:]) != 0 {
		clusterSize := uint32(bs[0x0d])
		bufSize := clusterSize * g.sectorSize
		startDataSect := g.reserved + g.fatSize
		entries := uint32(uint64(le32(bs[0x24:])) * uint64(g.sectorSize) / 4)
		next := le32(bs[0x2c:])
		for maxloop := 99; next != 0 && next < entries && maxloop > 0; maxloop-- {
			off := uint64(startDataSect+(next-2)*clusterSize) * uint64(g.sectorSize)
			if label = fatSearchLabel(d, off, bufSize/32); label != nil {
				break
			}
			fe := d.read(int64(g.reserved)*int64(g.sectorSize)+int64(next)*4, 4)
			if fe == nil {
				break
			}
			next = le32(fe) & 0x0fffffff
		}
		serno = bs[0x43:0x47]
		// FAT32 wants a valid FSInfo signature, or none at all.
		if fsinfo := int64(le16(bs[0x30:])); fsinfo != 0 {
			fi := d.read(fsinfo*int64(g.sectorSize), 512)
			if fi == nil {
				return nil
			}
			s1, s2 := string(fi[0:4]), string(fi[484:488])
			if s1 != "RRaA" && s1 != "RRdA" && s1 != "\x00\x00\x00\x00" {
				return nil
			}
			if s2 != "rrAa" && s2 != "\x00\x00\x00\x00" {
				return nil
			}
		}
	} else {
		return nil
	}
	base := Signature{Type: "vfat", Usage: UsageFilesystem}
	if label != nil {
		base.Label = cString(label)
	}
	if !isZero(serno) {
		base.UUID = fmt.Sprintf("%02X%02X-%02X%02X", serno[3], serno[2], serno[1], serno[0])
	}
	var sigs []Signature
	add := func(off int64, magic []byte) {
		s := base
		s.Offset, s.Magic = off, clone(magic)
		sigs = append(sigs, s)
	}
	if i := fatStringMagic(bs); i >= 0 {
		m := fatStringMagics[i]
		add(int64(m.off), bs[m.off:m.off+len(m.magic)])
	}
	if bs[510] == 0x55 && bs[511] == 0xaa {
		if bs[0] == 0xeb || bs[0] == 0xe9 {
			add(0, bs[:1])
		}
		add(510, bs[510:512])
	}
	return sigs
}

// fatSearchLabel returns the 11-byte name of the first volume-label entry in
// a directory, or nil.
func fatSearchLabel(d *device, off uint64, entries uint32) []byte {
	if off > uint64(d.size) {
		return nil
	}
	if entries > maxRead/32 {
		entries = maxRead / 32
	}
	dir := d.read(int64(off), int64(entries)*32)
	if dir == nil {
		return nil
	}
	for i := uint32(0); i < entries; i++ {
		e := dir[i*32 : i*32+32]
		attr := e[11]
		switch {
		case e[0] == 0:
			return nil
		case e[0] == 0xe5, le16(e[20:]) != 0 || le16(e[26:]) != 0, attr&0x3f == 0x0f:
			continue
		case attr&(0x08|0x10) == 0x08:
			name := clone(e[:11])
			if name[0] == 0x05 {
				name[0] = 0xe5
			}
			return name
		}
	}
	return nil
}
