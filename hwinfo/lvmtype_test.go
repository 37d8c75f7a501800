package hwinfo

import (
	"testing"

	"github.com/diskprep/diskprep/hwinfo/probe"
)

// A cache over a cache volume (lvconvert --cachevol, as prepare --cache
// makes it) is written "cache+CACHE_USES_CACHEVOL" in LVM's metadata; the
// inventory says "cache", as lvs does.
func TestLVTypeWithoutMetadataFlags(t *testing.T) {
	md := &probe.VGMetadata{Name: "cached", ExtentSectors: 8192, LVs: []probe.VGLV{
		{Name: "cached", Status: []string{"READ", "WRITE", "VISIBLE"}, Segments: []probe.VGSegment{{Type: "cache+CACHE_USES_CACHEVOL", ExtentCount: 63}}},
		{Name: "wc", Status: []string{"READ", "WRITE", "VISIBLE"}, Segments: []probe.VGSegment{{Type: "writecache", ExtentCount: 10}}},
	}}
	vg := (&reader{}).vgFromMetadata(md, nil, nil, &blockState{}, nil)
	if len(vg.LVs) != 2 || vg.LVs[0].Type != "cache" || vg.LVs[1].Type != "writecache" {
		t.Errorf("LVs %+v", vg.LVs)
	}
}
