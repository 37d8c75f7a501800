package probe

import (
	"fmt"
	"unicode/utf16"
)

const isoDescriptors = 32768 // 16 sectors of 2048 bytes of system area

// probeISO9660 reads the volume descriptors: the primary gives the label,
// a Joliet supplementary one (if any) the label in UCS-2, and blkid makes
// the UUID from the modification or else the creation date.
func probeISO9660(d *device) []Signature {
	pvd := d.read(isoDescriptors, 2048)
	if pvd == nil || string(pvd[1:6]) != "CD001" || pvd[0] != 1 {
		return nil
	}
	s := Signature{Type: "iso9660", Usage: UsageFilesystem, Offset: isoDescriptors + 1, Magic: clone(pvd[1:6])}
	s.Label = cString(pvd[40:72])
	// Walk the set for a Joliet descriptor, up to the terminator.
	for i := int64(1); i < 32; i++ {
		vd := d.read(isoDescriptors+i*2048, 2048)
		if vd == nil || string(vd[1:6]) != "CD001" || vd[0] == 255 {
			break
		}
		if esc := string(vd[88:91]); vd[0] == 2 && (esc == "%/@" || esc == "%/C" || esc == "%/E") {
			if l := ucs2be(vd[40:72]); l != "" {
				s.Label = l
			}
			break
		}
	}
	if s.UUID = isoDate(pvd[830:847]); s.UUID == "" {
		s.UUID = isoDate(pvd[813:830])
	}
	return []Signature{s}
}

// isoDate formats a 17-byte volume date as blkid's UUID, or "" when unset.
func isoDate(b []byte) string {
	d := b[:16]
	allZero := true
	for _, c := range d {
		if c != '0' {
			allZero = false
		}
	}
	if allZero && b[16] == 0 {
		return ""
	}
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s-%s", d[0:4], d[4:6], d[6:8], d[8:10], d[10:12], d[12:14], d[14:16])
}

func ucs2be(b []byte) string {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u = append(u, be16(b[i:]))
	}
	return cString([]byte(string(utf16.Decode(u))))
}
