package probe

var luksSecondaryOffsets = []int64{0x4000, 0x8000, 0x10000, 0x20000, 0x40000, 0x80000, 0x100000, 0x200000, 0x400000}

// probeLUKS reports the LUKS header at 0 and every valid LUKS2 secondary
// header: wipefs -a erases both, and a LUKS2 device whose primary is gone
// still opens from the secondary.
func probeLUKS(d *device) []Signature {
	var sigs []Signature
	if s, ok := luksHeader(d, 0, "LUKS\xba\xbe"); ok {
		sigs = append(sigs, s)
	}
	for _, off := range luksSecondaryOffsets {
		if s, ok := luksHeader(d, off, "SKUL\xba\xbe"); ok {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

func luksHeader(d *device, off int64, magic string) (Signature, bool) {
	h := d.read(off, 512)
	if h == nil || string(h[:6]) != magic {
		return Signature{}, false
	}
	s := Signature{Type: "crypto_LUKS", Usage: UsageCrypto, Offset: off, Magic: clone(h[:6])}
	switch be16(h[6:]) {
	case 1:
		s.UUID = cString(h[168:208])
	case 2:
		s.UUID = cString(h[168:208])
		s.Label = cString(h[24:72])
	}
	return s, true
}
