package probe

import "testing"

// The one reading of a bcache superblock, for the probe and for disk's
// cache planning: both UUIDs in blkid's form, backing or cache, and where
// a backing device's data starts (the default, or the superblock's own).
func TestParseBcacheSuper(t *testing.T) {
	sb := bcacheImage(1<<20, "slow", uuidA)[BcacheSuperOffset:][:BcacheSuperSize]
	want := BcacheSuper{UUID: uuidA, SetUUID: "11112222-3333-4444-5555-666677778888", Label: "slow", Backing: true, DataOffset: BcacheDataOffset}
	if got, ok := ParseBcacheSuper(sb); !ok || got != want {
		t.Errorf("backing: %+v %v, want %+v", got, ok, want)
	}
	le.PutUint64(sb[16:], 4) // a backing device with its data offset
	le.PutUint64(sb[184:], 2048)
	if got, ok := ParseBcacheSuper(sb); !ok || !got.Backing || got.DataOffset != 1<<20 {
		t.Errorf("backing with offset: %+v %v", got, ok)
	}
	le.PutUint64(sb[16:], 3) // a cache
	if got, ok := ParseBcacheSuper(sb); !ok || got.Backing || got.DataOffset != 0 || got.SetUUID != want.SetUUID {
		t.Errorf("cache: %+v %v", got, ok)
	}
	if _, ok := ParseBcacheSuper(sb[:100]); ok {
		t.Error("a short read parsed")
	}
	sb[30] ^= 1
	if _, ok := ParseBcacheSuper(sb); ok {
		t.Error("a bad magic parsed")
	}
}
