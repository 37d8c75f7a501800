package probe

import (
	"encoding/binary"
	"hash/crc32"
	"unicode/utf16"
)

// Builders of synthetic signatures, written from the on-disk formats. Unit
// tests check Probe against the values they were built with; a privileged
// test checks that blkid and wipefs read the same images the same way, so
// the builders cannot drift into a private dialect.

var (
	le         = binary.LittleEndian
	be         = binary.BigEndian
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

const extROCompatMetaCsum = 0x0400

// lvmLabelCRC is LVM2's CRC: the IEEE polynomial seeded with 0xf597a6cf and
// not inverted at the end.
func lvmLabelCRC(b []byte) uint32 {
	return ^crc32.Update(^uint32(0xf597a6cf), crc32.IEEETable, b)
}

// mdV1Checksum is mdadm's calc_sb_1_csum: a 64-bit sum of little-endian
// words with sb_csum taken as zero, folded to 32 bits.
func mdV1Checksum(b []byte) uint32 {
	var sum uint64
	i := 0
	for ; i+4 <= len(b); i += 4 {
		if i != 216 {
			sum += uint64(le.Uint32(b[i:]))
		}
	}
	if len(b)-i == 2 {
		sum += uint64(le.Uint16(b[i:]))
	}
	return uint32(sum&0xffffffff + sum>>32)
}

func uuidBytes(s string) []byte {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			continue
		}
		var v byte
		for _, c := range s[i : i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c - 'a' + 10)
			}
		}
		b = append(b, v)
		i++
	}
	return b
}

// guidBytes encodes a GUID string the way GPT stores it.
func guidBytes(s string) []byte {
	b := uuidBytes(s)
	b[0], b[1], b[2], b[3] = b[3], b[2], b[1], b[0]
	b[4], b[5] = b[5], b[4]
	b[6], b[7] = b[7], b[6]
	return b
}

type gptPart struct {
	index             int // slot in the entry array, 0-based
	typ, uuid, name   string
	firstLBA, lastLBA uint64
}

// gptImage writes a PMBR, both headers and both entry arrays for a disk of
// size bytes with ssz-byte sectors.
func gptImage(size int64, ssz int, diskGUID string, parts []gptPart) []byte {
	img := make([]byte, size)
	last := uint64(size/int64(ssz)) - 1
	entriesLen := 128 * 128
	entrySectors := uint64(entriesLen / ssz)
	// PMBR
	p := img[446:]
	p[4] = 0xee
	le.PutUint32(p[8:], 1)
	n := last
	if n > 0xffffffff {
		n = 0xffffffff
	}
	le.PutUint32(p[12:], uint32(n))
	img[510], img[511] = 0x55, 0xaa

	entries := make([]byte, entriesLen)
	for _, pt := range parts {
		e := entries[pt.index*128:]
		copy(e, guidBytes(pt.typ))
		copy(e[16:], guidBytes(pt.uuid))
		le.PutUint64(e[32:], pt.firstLBA)
		le.PutUint64(e[40:], pt.lastLBA)
		for i, c := range utf16.Encode([]rune(pt.name)) {
			le.PutUint16(e[56+2*i:], c)
		}
	}
	ecrc := crc32.ChecksumIEEE(entries)
	header := func(my, alt, entLBA uint64) []byte {
		h := make([]byte, 92)
		copy(h, "EFI PART")
		le.PutUint32(h[8:], 0x00010000)
		le.PutUint32(h[12:], 92)
		le.PutUint64(h[24:], my)
		le.PutUint64(h[32:], alt)
		le.PutUint64(h[40:], 2+entrySectors)
		le.PutUint64(h[48:], last-1-entrySectors)
		copy(h[56:], guidBytes(diskGUID))
		le.PutUint64(h[72:], entLBA)
		le.PutUint32(h[80:], 128)
		le.PutUint32(h[84:], 128)
		le.PutUint32(h[88:], ecrc)
		le.PutUint32(h[16:], crc32.ChecksumIEEE(h))
		return h
	}
	copy(img[ssz:], header(1, last, 2))
	copy(img[2*ssz:], entries)
	copy(img[int(last)*ssz:], header(last, 1, last-entrySectors))
	copy(img[int(last-entrySectors)*ssz:], entries)
	return img
}

type mbrPart struct {
	typ            byte
	start, sectors uint32
	boot           bool
}

// mbrImage writes a DOS table with primaries in slots 0-3 (nil-typed slots
// stay empty) and, when logicals are given, an EBR chain inside the
// primary of type 0x05.
func mbrImage(size int64, id uint32, prim [4]mbrPart, logicals []mbrPart) []byte {
	img := make([]byte, size)
	put := func(sec []byte, slot int, p mbrPart) {
		e := sec[446+16*slot:]
		if p.boot {
			e[0] = 0x80
		}
		e[4] = p.typ
		le.PutUint32(e[8:], p.start)
		le.PutUint32(e[12:], p.sectors)
	}
	le.PutUint32(img[440:], id)
	var ext mbrPart
	for i, p := range prim {
		if p.sectors != 0 {
			put(img, i, p)
		}
		if p.typ == 0x05 {
			ext = p
		}
	}
	img[510], img[511] = 0x55, 0xaa
	// Each logical gets an EBR one MiB before it.
	for i, l := range logicals {
		ebr := l.start - 2048
		sec := img[int64(ebr)*512:]
		put(sec, 0, mbrPart{typ: l.typ, start: l.start - ebr, sectors: l.sectors})
		if i+1 < len(logicals) {
			next := logicals[i+1].start - 2048
			put(sec, 1, mbrPart{typ: 0x05, start: next - ext.start, sectors: logicals[i+1].sectors + 2048})
		}
		sec[510], sec[511] = 0x55, 0xaa
	}
	return img
}

// xfsImage is a v5 superblock with a good CRC and sane geometry.
func xfsImage(size int64, label, uuid string) []byte {
	img := make([]byte, size)
	sb := img[:512]
	copy(sb, "XFSB")
	be.PutUint32(sb[4:], 4096)
	agblocks, agcount := uint32(size/4096/4), uint32(4)
	be.PutUint64(sb[8:], uint64(agblocks)*uint64(agcount))
	copy(sb[32:], uuidBytes(uuid))
	be.PutUint64(sb[56:], 128)
	be.PutUint32(sb[80:], 1)
	be.PutUint32(sb[84:], agblocks)
	be.PutUint32(sb[88:], agcount)
	be.PutUint16(sb[100:], 0xb4a5)
	be.PutUint16(sb[102:], 512)
	be.PutUint16(sb[104:], 512)
	be.PutUint16(sb[106:], 8)
	copy(sb[108:120], label)
	sb[120], sb[121], sb[122], sb[123] = 12, 9, 9, 3
	sb[124], sb[127] = 10, 25
	le.PutUint32(sb[224:], crc32.Checksum(sb, castagnoli))
	return img
}

// extImage writes an ext superblock with the given feature words.
func extImage(size int64, label, uuid string, compat, incompat, rocompat uint32) []byte {
	img := make([]byte, size)
	sb := img[1024:2048]
	le.PutUint32(sb[0:], 1024)
	le.PutUint32(sb[4:], uint32(size/1024))
	le.PutUint32(sb[24:], 0)
	le.PutUint16(sb[56:], 0xef53)
	le.PutUint16(sb[58:], 1)
	le.PutUint32(sb[76:], 1)
	le.PutUint32(sb[92:], compat)
	le.PutUint32(sb[96:], incompat)
	le.PutUint32(sb[100:], rocompat)
	copy(sb[104:], uuidBytes(uuid))
	copy(sb[120:136], label)
	if rocompat&extROCompatMetaCsum != 0 {
		le.PutUint32(sb[0x3fc:], ^crc32.Checksum(sb[:0x3fc], castagnoli))
	}
	return img
}

func swapImage(size int64, pageSize int, label, uuid string) []byte {
	img := make([]byte, size)
	h := img[1024:]
	le.PutUint32(h[0:], 1)
	le.PutUint32(h[4:], uint32(size/int64(pageSize))-1)
	copy(h[12:], uuidBytes(uuid))
	copy(h[28:44], label)
	copy(img[pageSize-10:], "SWAPSPACE2")
	return img
}

// lvmImage is a PV label in sector 1, as pvcreate writes it.
func lvmImage(size int64, pvUUID string) []byte {
	img := make([]byte, size)
	l := img[512:1024]
	copy(l, "LABELONE")
	le.PutUint64(l[8:], 1)
	le.PutUint32(l[20:], 32)
	copy(l[24:], "LVM2 001")
	copy(l[32:], pvUUID)
	le.PutUint64(l[64:], uint64(size))
	le.PutUint32(l[16:], lvmLabelCRC(l[20:]))
	return img
}

func luksImage(size int64, version int, label, uuid string) []byte {
	img := make([]byte, size)
	h := img[:4096]
	copy(h, "LUKS\xba\xbe")
	be.PutUint16(h[6:], uint16(version))
	copy(h[168:208], uuid)
	if version == 1 {
		copy(h[8:], "aes")
		copy(h[40:], "xts-plain64")
		copy(h[72:], "sha256")
		be.PutUint32(h[104:], 4096)
		be.PutUint32(h[108:], 64)
		return img
	}
	be.PutUint64(h[8:], 0x4000)
	be.PutUint64(h[16:], 1)
	copy(h[24:72], label)
	copy(h[72:], "sha256")
	// The secondary header is a copy with its own magic and offset.
	s := img[0x4000:]
	copy(s, h[:512])
	copy(s, "SKUL\xba\xbe")
	be.PutUint64(s[256:], 0x4000)
	return img
}

// mdImage writes a 1.2 superblock at 4 KiB with a good checksum.
func mdImage(size int64, name, uuid string) []byte {
	img := make([]byte, size)
	sb := img[4096 : 4096+1024]
	le.PutUint32(sb[0:], mdMagic)
	le.PutUint32(sb[4:], 1)
	copy(sb[16:], uuidBytes(uuid))
	copy(sb[32:64], name)
	le.PutUint32(sb[72:], 1)
	le.PutUint64(sb[80:], uint64(size/512-2048))
	le.PutUint32(sb[92:], 2)
	le.PutUint64(sb[128:], 2048)
	le.PutUint64(sb[136:], uint64(size/512-2048))
	le.PutUint64(sb[144:], 8)
	copy(sb[168:], uuidBytes("0102030405060708090a0b0c0d0e0f10"))
	le.PutUint32(sb[220:], 384)
	le.PutUint32(sb[216:], mdV1Checksum(sb[:256+384*2]))
	return img
}

// mdV090Image writes a little-endian 0.90 superblock at the end.
func mdV090Image(size int64, uuid string) []byte {
	img := make([]byte, size)
	off := (size &^ (64<<10 - 1)) - 64<<10
	sb := img[off:]
	u := uuidBytes(uuid)
	le.PutUint32(sb[0:], mdMagic)
	le.PutUint32(sb[4:], 0)
	le.PutUint32(sb[8:], 90)
	le.PutUint32(sb[5*4:], be.Uint32(u[0:]))
	le.PutUint32(sb[13*4:], be.Uint32(u[4:]))
	le.PutUint32(sb[14*4:], be.Uint32(u[8:]))
	le.PutUint32(sb[15*4:], be.Uint32(u[12:]))
	le.PutUint32(sb[7*4:], 1)
	le.PutUint32(sb[9*4:], 2)
	le.PutUint32(sb[10*4:], 2)
	return img
}

func btrfsImage(size int64, label, uuid string) []byte {
	img := make([]byte, size)
	sb := img[64<<10 : 64<<10+4096]
	copy(sb[32:], uuidBytes(uuid))
	le.PutUint64(sb[48:], 64<<10)
	copy(sb[64:], "_BHRfS_M")
	le.PutUint64(sb[72:], 1)
	le.PutUint64(sb[112:], uint64(size))
	le.PutUint64(sb[136:], 1)
	le.PutUint32(sb[144:], 4096)
	le.PutUint32(sb[148:], 16384)
	le.PutUint32(sb[152:], 4096)
	le.PutUint32(sb[156:], 4096)
	le.PutUint64(sb[201:], 1)
	le.PutUint64(sb[209:], uint64(size))
	copy(sb[201+66:], uuidBytes("99999999-8888-7777-6666-555555555555"))
	copy(sb[201+82:], uuidBytes(uuid))
	copy(sb[299:299+256], label)
	le.PutUint32(sb[0:], crc32.Checksum(sb[32:], castagnoli))
	return img
}

// ntfsImage writes a boot sector and MFT records 0 and 3 ($Volume with a
// VOLUME_NAME attribute).
func ntfsImage(size int64, label string, serial uint64) []byte {
	img := make([]byte, size)
	bs := img[:512]
	copy(bs, "\xeb\x52\x90NTFS    ")
	le.PutUint16(bs[0x0b:], 512)
	bs[0x0d] = 8
	bs[0x15] = 0xf8
	le.PutUint16(bs[0x18:], 63)
	le.PutUint16(bs[0x1a:], 255)
	le.PutUint64(bs[0x28:], uint64(size/512-1))
	le.PutUint64(bs[0x30:], 4) // MFT at cluster 4 = 16 KiB
	le.PutUint64(bs[0x38:], 8) // mirror
	bs[0x40] = 0xf6            // 2^10 = 1 KiB records
	bs[0x44] = 1
	le.PutUint64(bs[0x48:], serial)
	bs[510], bs[511] = 0x55, 0xaa
	mft := int64(4 * 8 * 512)
	rec := func(n int64) []byte {
		r := img[mft+n*1024 : mft+(n+1)*1024]
		copy(r, "FILE")
		le.PutUint16(r[20:], 56)
		le.PutUint32(r[24:], 1024)
		le.PutUint32(r[28:], 1024)
		return r
	}
	rec(0)
	r := rec(3)
	name := utf16.Encode([]rune(label))
	a := r[56:]
	le.PutUint32(a[0:], 0x60)
	alen := (24 + 2*len(name) + 7) &^ 7
	le.PutUint32(a[4:], uint32(alen))
	le.PutUint32(a[16:], uint32(2*len(name)))
	le.PutUint16(a[20:], 24)
	for i, c := range name {
		le.PutUint16(a[24+2*i:], c)
	}
	le.PutUint32(r[56+alen:], 0xffffffff)
	return img
}

// fat16Image writes a FAT16 boot sector and a root directory whose first
// entry is the volume label.
func fat16Image(size int64, label string, serial uint32) []byte {
	img := make([]byte, size)
	bs := img[:512]
	copy(bs, "\xeb\x3c\x90mkfs.fat")
	le.PutUint16(bs[0x0b:], 512)
	bs[0x0d] = 4
	le.PutUint16(bs[0x0e:], 4)
	bs[0x10] = 2
	le.PutUint16(bs[0x11:], 512)
	sectors := uint32(size / 512)
	if sectors < 65536 {
		le.PutUint16(bs[0x13:], uint16(sectors))
	} else {
		le.PutUint32(bs[0x20:], sectors)
	}
	bs[0x15] = 0xf8
	le.PutUint16(bs[0x16:], 64)
	bs[0x26] = 0x29
	le.PutUint32(bs[0x27:], serial)
	copy(bs[0x2b:], "NO NAME    ")
	copy(bs[0x36:], "FAT16   ")
	bs[510], bs[511] = 0x55, 0xaa
	root := int64(4+2*64) * 512
	e := img[root : root+32]
	copy(e, label+"           "[:11-len(label)])
	e[11] = 0x08
	return img
}

// isoImage writes a primary volume descriptor and the set terminator.
func isoImage(size int64, volID, created string) []byte {
	img := make([]byte, size)
	pvd := img[32768 : 32768+2048]
	pvd[0] = 1
	copy(pvd[1:], "CD001")
	pvd[6] = 1
	copy(pvd[8:40], "LINUX                           ")
	copy(pvd[40:72], volID+"                                "[:32-len(volID)])
	le.PutUint32(pvd[80:], uint32(size/2048))
	be.PutUint32(pvd[84:], uint32(size/2048))
	le.PutUint16(pvd[128:], 2048)
	be.PutUint16(pvd[130:], 2048)
	copy(pvd[813:], created)
	copy(pvd[830:], "0000000000000000")
	pvd[881] = 1
	term := img[34816 : 34816+2048]
	term[0] = 255
	copy(term[1:], "CD001")
	term[6] = 1
	return img
}

// zfsImage writes n uberblocks in each of the four labels and an nvlist
// with the pool name and GUID in each label.
func zfsImage(size int64, n int, pool string, guid uint64) []byte {
	img := make([]byte, size)
	align := size % (256 << 10)
	for _, l := range []int64{0, 256 << 10, size - 512<<10 - align, size - 256<<10 - align} {
		nv := img[l+16<<10:]
		nv[0], nv[1] = 1, 1 // XDR, little-endian host
		be.PutUint32(nv[4:], 0)
		be.PutUint32(nv[8:], 1)
		p := 12
		pair := func(name string, typ uint32, val []byte) {
			nl := (len(name) + 3) &^ 3
			size := 12 + nl + 8 + len(val)
			be.PutUint32(nv[p:], uint32(size))
			be.PutUint32(nv[p+4:], uint32(size))
			be.PutUint32(nv[p+8:], uint32(len(name)))
			copy(nv[p+12:], name)
			v := p + 12 + nl
			be.PutUint32(nv[v:], typ)
			be.PutUint32(nv[v+4:], 1)
			copy(nv[v+8:], val)
			p += size
		}
		v := make([]byte, 8)
		be.PutUint64(v, 5000)
		pair("version", 8, v)
		s := make([]byte, 4+(len(pool)+3)&^3)
		be.PutUint32(s, uint32(len(pool)))
		copy(s[4:], pool)
		pair("name", 9, s)
		g := make([]byte, 8)
		be.PutUint64(g, guid)
		pair("pool_guid", 8, g)
		for i := 0; i < n; i++ {
			ub := img[l+128<<10+int64(i)*1024:]
			le.PutUint64(ub, zfsUberMagic)
			le.PutUint64(ub[8:], 5000)
			le.PutUint64(ub[16:], uint64(i+1))
		}
	}
	return img
}

func bcacheImage(size int64, label, uuid string) []byte {
	img := make([]byte, size)
	sb := img[4096:8192]
	le.PutUint64(sb[8:], 8)
	le.PutUint64(sb[16:], 1) // backing device
	copy(sb[24:], bcacheMagic)
	copy(sb[40:], uuidBytes(uuid))
	copy(sb[56:], uuidBytes("11112222-3333-4444-5555-666677778888"))
	copy(sb[72:104], label)
	le.PutUint16(sb[200:], 1)
	return img
}
