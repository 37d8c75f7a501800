package md

import (
	"slices"
	"testing"

	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/hwinfo"
)

func TestArrayGeometry(t *testing.T) {
	disk := func(opt uint64) layer.Member { return layer.Member{Disk: &hwinfo.Disk{OptimalIOBytes: opt}} }
	for _, c := range []struct {
		level, n int
		ms       []layer.Member
		chunk    uint64
		data     int
		why      string
	}{
		{1, 2, nil, 0, 0, "a mirror has no stripe"},
		{0, 3, nil, 512 << 10, 3, "raid0 stripes over every member"},
		{5, 4, nil, 512 << 10, 3, "raid5 gives one member to parity"},
		{6, 5, nil, 512 << 10, 3, "raid6 gives two"},
		{10, 4, nil, 512 << 10, 2, "raid10 over an even number: half"},
		{10, 5, nil, 512 << 10, 0, "raid10 over an odd number: no whole stripe"},
		{0, 2, []layer.Member{disk(1 << 20), disk(0)}, 1 << 20, 2, "a member's larger optimal I/O sets the chunk"},
		{0, 2, []layer.Member{disk(8 << 20)}, 512 << 10, 2, "over 4 MiB is not a chunk"},
		{0, 2, []layer.Member{disk(768 << 10)}, 512 << 10, 2, "not a power of two"},
	} {
		chunk, data := arrayGeometry(c.level, c.n, c.ms)
		if chunk != c.chunk || data != c.data {
			t.Errorf("%s: level %d over %d: chunk %d, data %d; want %d, %d", c.why, c.level, c.n, chunk, data, c.chunk, c.data)
		}
	}
}

func TestStripeGeometry(t *testing.T) {
	for _, c := range []struct {
		fs    string
		chunk uint64
		data  int
		want  string
	}{
		{"xfs", 512 << 10, 2, "su=512k,sw=2"},
		{"ext4", 512 << 10, 3, "stride=128,stripe_width=384"},
		{"xfs", 0, 0, ""},
		{"btrfs", 512 << 10, 2, ""},
	} {
		if got := stripeGeometry(c.fs, c.chunk, c.data); got != c.want {
			t.Errorf("%s %d×%d: %q, want %q", c.fs, c.chunk, c.data, got, c.want)
		}
	}
}

func TestUUIDFormAndManagedLines(t *testing.T) {
	// sysfs prints the UUID with dashes, mdadm.conf with colons.
	u := mdUUIDForm("0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9")
	if u != "0a1b2c3d:4e5f6071:8293a4b5:c6d7e8f9" {
		t.Fatalf("mdUUIDForm: %q", u)
	}
	if got := mdUUIDForm("not a uuid"); got != "not a uuid" {
		t.Errorf("a string that is no UUID is kept: %q", got)
	}
	conf := "DEVICE partitions\n" +
		"ARRAY /dev/md/hand metadata=1.2 UUID=" + u + "\n" + // written by hand: not ours
		mdadmConfMarker + "data (\"diskprep release\" removes this entry)\n" +
		"ARRAY /dev/md/data metadata=1.2 UUID=" + u + "\n" +
		mdadmConfMarker + "other\nARRAY /dev/md/other metadata=1.2 UUID=11111111:22222222:33333333:44444444\n"
	got := managedConfLines(conf, u)
	if want := []string{"ARRAY /dev/md/data metadata=1.2 UUID=" + u}; !slices.Equal(got, want) {
		t.Errorf("managedConfLines: %q, want %q", got, want)
	}
}

func TestMinMembers(t *testing.T) {
	for level, want := range map[int]int{0: 2, 1: 2, 5: 3, 6: 4, 10: 4} {
		if n, ok := MinMembers(level); !ok || n != want {
			t.Errorf("level %d: %d %v, want %d", level, n, ok, want)
		}
	}
	if _, ok := MinMembers(4); ok {
		t.Error("level 4 is not one diskprep makes")
	}
}
