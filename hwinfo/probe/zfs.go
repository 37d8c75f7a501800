package probe

import "strconv"

const (
	zfsLabelSize      = 256 << 10
	zfsUberblockStart = 128 << 10
	zfsUberblockSize  = 1 << 10
	zfsUberblocks     = 128
	zfsNVListStart    = 16 << 10
	zfsUberMagic      = 0x00bab10c
	zfsWant           = 4 // libblkid wants four uberblocks before it believes
	zfsMinSize        = 64 << 20
)

type zfsUber struct {
	off     int64
	label   int64 // offset of the vdev label holding it
	swapped bool
}

// probeZFS finds uberblocks in the four vdev labels (two at the start, two
// at the 256 KiB-aligned end). libblkid reports one uberblock per probe and
// wipefs keeps erasing until fewer than four remain, so Probe replays that
// loop and reports every uberblock wipefs -a would zero.
func probeZFS(d *device) []Signature {
	if d.size < zfsMinSize { // libblkid's minsz: smaller devices are never ZFS
		return nil
	}
	align := d.size % zfsLabelSize
	labels := []int64{0, zfsLabelSize, d.size - 2*zfsLabelSize - align, d.size - zfsLabelSize - align}
	var ubs [4][]zfsUber
	for i, l := range labels {
		if l < 0 || (i >= 2 && l < 2*zfsLabelSize) {
			continue
		}
		area := d.read(l+zfsUberblockStart, zfsUberblocks*zfsUberblockSize)
		if area == nil {
			continue
		}
		for j := 0; j < zfsUberblocks; j++ {
			m := le64(area[j*zfsUberblockSize:])
			if m == zfsUberMagic || be64(area[j*zfsUberblockSize:]) == zfsUberMagic {
				ubs[i] = append(ubs[i], zfsUber{off: l + zfsUberblockStart + int64(j)*zfsUberblockSize, label: l, swapped: m != zfsUberMagic})
			}
		}
	}
	erased := map[int64]bool{}
	var sigs []Signature
	for {
		found, last := 0, zfsUber{}
		for i := range ubs {
			n := 0
			for _, u := range ubs[i] {
				if !erased[u.off] {
					n, last = n+1, u
				}
			}
			found += n
			if found >= zfsWant {
				break
			}
		}
		if found < zfsWant {
			break
		}
		erased[last.off] = true
		magic := d.read(last.off, 8)
		s := Signature{Type: "zfs_member", Usage: UsageFilesystem, Offset: last.off, Magic: clone(magic)}
		s.Label, s.UUID = zfsPoolName(d, last.label)
		sigs = append(sigs, s)
	}
	return sigs
}

// zfsPoolName reads "name" and "pool_guid" from the XDR-encoded nvlist of a
// vdev label: the pool name is blkid's LABEL and the decimal pool GUID its
// UUID.
func zfsPoolName(d *device, label int64) (name, guid string) {
	b := d.read(label+zfsNVListStart, 16<<10)
	if b == nil || b[0] != 1 { // encoding 1 is XDR
		return "", ""
	}
	p := 12 // encoding/endian/reserved, version, flags
	for p+12 <= len(b) {
		size := int(be32(b[p:]))
		if size <= 0 || p+size > len(b) {
			break
		}
		pair := b[p : p+size]
		p += size
		nl := int(be32(pair[8:]))
		if nl < 0 || nl > size {
			break
		}
		n := string(pair[12 : 12+min(nl, size-12)])
		v := 12 + (nl+3)&^3
		if v+8 > size {
			continue
		}
		typ := be32(pair[v:])
		val := pair[v+8:]
		switch {
		case n == "name" && typ == 9 && len(val) >= 4: // DATA_TYPE_STRING
			if l := int(be32(val)); l >= 0 && 4+l <= len(val) {
				name = string(val[4 : 4+l])
			}
		case n == "pool_guid" && typ == 8 && len(val) >= 8: // DATA_TYPE_UINT64
			guid = strconv.FormatUint(be64(val), 10)
		}
		if name != "" && guid != "" {
			break
		}
	}
	return name, guid
}
