package probe

// swapPageSizes are where mkswap on some architecture puts the magic: the
// last ten bytes of the first page.
var swapPageSizes = []int64{4096, 8192, 16384, 65536}

// probeSwap reads the v1 swap header (version, last page, UUID, label at
// 1024) as libblkid's swap.c, and the older "SWAP-SPACE" v0 magic which
// carries neither UUID nor label. Hibernation images are left alone.
func probeSwap(d *device) []Signature {
	for _, ps := range swapPageSizes {
		m := d.read(ps-10, 10)
		if m == nil {
			continue
		}
		switch string(m) {
		case "SWAP-SPACE":
			return []Signature{{Type: "swap", Usage: UsageOther, Offset: ps - 10, Magic: clone(m)}}
		case "SWAPSPACE2":
			h := d.read(1024, 44+4*117+4)
			if h == nil {
				continue
			}
			version, lastPage := le32(h[0:]), le32(h[4:])
			if (version != 1 && be32(h[0:]) != 1) || lastPage == 0 {
				continue
			}
			s := Signature{Type: "swap", Usage: UsageOther, Offset: ps - 10, Magic: clone(m)}
			// libblkid's "is there any garbage down there" check: the
			// padding must be clear before UUID and label are trusted.
			pad := h[44:]
			if le32(pad[32*4:]) == 0 && le32(pad[33*4:]) == 0 {
				s.UUID = formatUUID(h[12:28])
				s.Label = cString(h[28:44])
			}
			return []Signature{s}
		}
	}
	return nil
}
