package probe

// ext feature bits that decide between ext2, ext3, ext4 and a journal
// device, exactly as libblkid's ext.c.
const (
	extCompatHasJournal   = 0x0004
	extIncompatFiletype   = 0x0002
	extIncompatRecover    = 0x0004
	extIncompatJournalDev = 0x0008
	extIncompatMetaBG     = 0x0010
	extROCompatSupp       = 0x0001 | 0x0002 | 0x0004 // sparse_super, large_file, btree_dir
	ext2IncompatSupp      = extIncompatFiletype | extIncompatMetaBG
	ext3IncompatSupp      = extIncompatFiletype | extIncompatRecover | extIncompatMetaBG
	extFlagsTestFilesys   = 0x0004
	extIncompat64Bit      = 0x0080
)

const extSuperOffset = 1024

// probeExt names the superblock by its features. A metadata_csum mismatch
// is not checked: blkid -p and wipefs report such a superblock anyway.

func probeExt(d *device) []Signature {
	sb := d.read(extSuperOffset, 1024)
	if sb == nil || le16(sb[56:]) != 0xef53 {
		return nil
	}
	compat, incompat, rocompat := le32(sb[92:]), le32(sb[96:]), le32(sb[100:])
	typ, usage := "", UsageFilesystem
	ext3Compatible := rocompat&^extROCompatSupp == 0 && incompat&^ext3IncompatSupp == 0
	switch {
	case incompat&extIncompatJournalDev != 0:
		typ, usage = "jbd", UsageOther
	case le32(sb[0x160:])&extFlagsTestFilesys != 0:
		typ = "ext4dev"
	case !ext3Compatible:
		typ = "ext4"
	case compat&extCompatHasJournal != 0:
		typ = "ext3"
	case incompat&^ext2IncompatSupp == 0:
		typ = "ext2"
	default:
		// No journal but needs recovery: libblkid calls this nothing.
		return nil
	}
	s := Signature{Type: typ, Usage: usage, Label: cString(sb[120:136]), UUID: formatUUID(sb[104:120]),
		Offset: extSuperOffset + 56, Magic: clone(sb[56:58])}
	if logBS := le32(sb[24:]); usage == UsageFilesystem && logBS <= 6 {
		// s_blocks_count and s_free_blocks_count, with their high halves
		// when the file system is 64bit.
		blocks, free := uint64(le32(sb[4:])), uint64(le32(sb[12:]))
		if incompat&extIncompat64Bit != 0 {
			blocks |= uint64(le32(sb[0x150:])) << 32
			free |= uint64(le32(sb[0x158:])) << 32
		}
		s.UsedBytes = (blocks - min(free, blocks)) * (1024 << logBS)
		s.SizeBytes = blocks * (1024 << logBS)
	}
	return []Signature{s}
}
