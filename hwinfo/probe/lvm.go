package probe

// probeLVM finds a physical-volume label in one of the first four sectors
// (pvcreate puts it in the second). The magic wipefs erases is the type
// "LVM2 001" at offset 24 of that sector. The label CRC is not checked,
// as blkid -p and wipefs do not let a bad one hide the label.
func probeLVM(d *device) []Signature {
	for i := int64(0); i < 4; i++ {
		l := d.read(i*512, 512)
		if l == nil || string(l[:8]) != "LABELONE" || string(l[24:32]) != "LVM2 001" {
			continue
		}
		if le64(l[8:]) != uint64(i) {
			continue
		}
		s := Signature{Type: "LVM2_member", Usage: UsageRAID, Offset: i*512 + 24, Magic: clone(l[24:32])}
		if off := int(le32(l[20:])); off >= 32 && off+32 <= len(l) {
			u := l[off : off+32]
			// blkid prints the 32-character PV UUID as 6-4-4-4-4-4-6.
			s.UUID = string(u[0:6]) + "-" + string(u[6:10]) + "-" + string(u[10:14]) + "-" + string(u[14:18]) +
				"-" + string(u[18:22]) + "-" + string(u[22:26]) + "-" + string(u[26:32])
		}
		return []Signature{s}
	}
	return nil
}
