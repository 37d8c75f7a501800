package probe

// Where a bcache superblock lies on its device, and how much of it
// ParseBcacheSuper reads.
const (
	BcacheSuperOffset = 4096
	BcacheSuperSize   = 512
)

var bcacheMagic = []byte{0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81}

// bcache superblock versions (include/uapi/linux/bcache.h) of a backing
// device; the others are a cache's.
const (
	bcacheSBBacking         = 1
	bcacheSBBackingOffset   = 4
	bcacheSBBackingFeatures = 6
)

// BcacheDataOffset is where a backing device's data starts when its
// superblock does not say: the kernel's BDEV_DATA_START_DEFAULT (16
// sectors), make-bcache -B's default.
const BcacheDataOffset = 8192

// BcacheSuper is what a bcache superblock says.
type BcacheSuper struct {
	UUID    string // the device's own, as blkid prints it
	SetUUID string // its cache set's, as /sys/fs/bcache names it
	Label   string
	Backing bool // a backing device, not a cache
	// DataOffset is where a backing device's data starts, in bytes; 0 on
	// a cache.
	DataOffset int64
}

// ParseBcacheSuper parses the BcacheSuperSize bytes at BcacheSuperOffset
// of a device; ok is false when they are no bcache superblock. Its 16-byte
// magic and self-recorded sector (8) are taken as enough; the CRC64 is not
// checked.
func ParseBcacheSuper(sb []byte) (s BcacheSuper, ok bool) {
	if len(sb) < BcacheSuperSize || string(sb[24:40]) != string(bcacheMagic) || le64(sb[8:]) != BcacheSuperOffset/512 {
		return BcacheSuper{}, false
	}
	s = BcacheSuper{UUID: formatUUID(sb[40:56]), SetUUID: formatUUID(sb[56:72]), Label: cString(sb[72:104])}
	switch le64(sb[16:]) {
	case bcacheSBBacking:
		s.Backing, s.DataOffset = true, BcacheDataOffset
	case bcacheSBBackingOffset, bcacheSBBackingFeatures:
		s.Backing, s.DataOffset = true, int64(le64(sb[184:]))*512
	}
	return s, true
}

// probeBcache reads the bcache superblock at 4 KiB.
func probeBcache(d *device) []Signature {
	s, ok := ParseBcacheSuper(d.read(BcacheSuperOffset, BcacheSuperSize))
	if !ok {
		return nil
	}
	return []Signature{{Type: "bcache", Usage: UsageOther, Label: s.Label, UUID: s.UUID,
		Offset: BcacheSuperOffset + 24, Magic: clone(bcacheMagic)}}
}
