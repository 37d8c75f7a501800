package probe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

const (
	uuidA = "3f2a9c1e-5b7d-4e8f-a1b2-c3d4e5f60718"
	uuidB = "0fc63daf-8483-4772-8e79-3d69d8477de4"
)

type sigWant struct {
	typ, usage, label, uuid string
	offset                  int64
}

type syntheticCase struct {
	name string
	img  []byte
	want []sigWant
}

func syntheticCases() []syntheticCase {
	const mb = 1 << 20
	luks2 := luksImage(8*mb, 2, "cryptlab", uuidA)
	corrupt := func(img []byte, off int, b ...byte) []byte { copy(img[off:], b); return img }
	return []syntheticCase{
		{"xfs", xfsImage(32*mb, "xfslabel", uuidA), []sigWant{{"xfs", "filesystem", "xfslabel", uuidA, 0}}},
		{"xfs-12-char-label", xfsImage(32*mb, "twelve_chars", uuidA), []sigWant{{"xfs", "filesystem", "twelve_chars", uuidA, 0}}},
		{"ext2", extImage(8*mb, "e2", uuidA, 0x38, 0x2, 0x3), []sigWant{{"ext2", "filesystem", "e2", uuidA, 0x438}}},
		{"ext3", extImage(8*mb, "e3", uuidA, 0x3c, 0x2, 0x3), []sigWant{{"ext3", "filesystem", "e3", uuidA, 0x438}}},
		{"ext4", extImage(8*mb, "e4 label", uuidA, 0x3c, 0x2c2, 0x46b), []sigWant{{"ext4", "filesystem", "e4 label", uuidA, 0x438}}},
		{"ext4-nojournal", extImage(8*mb, "", uuidA, 0x38, 0x2c2, 0x46b), []sigWant{{"ext4", "filesystem", "", uuidA, 0x438}}},
		{"jbd", extImage(8*mb, "log", uuidA, 0, 0x8, 0), []sigWant{{"jbd", "other", "log", uuidA, 0x438}}},
		{"swap", swapImage(8*mb, 4096, "swaplab", uuidA), []sigWant{{"swap", "other", "swaplab", uuidA, 4086}}},
		{"swap-64k", swapImage(8*mb, 65536, "", uuidA), []sigWant{{"swap", "other", "", uuidA, 65526}}},
		{"swap-v0", func() []byte { b := make([]byte, 1*mb); copy(b[4086:], "SWAP-SPACE"); return b }(), []sigWant{{"swap", "other", "", "", 4086}}},
		{"lvm2", lvmImage(8*mb, "AbCdEf0123456789ghIJklMNopQRstUV"), []sigWant{{"LVM2_member", "raid", "", "AbCdEf-0123-4567-89gh-IJkl-MNop-QRstUV", 0x218}}},
		{"luks1", luksImage(4*mb, 1, "", uuidA), []sigWant{{"crypto_LUKS", "crypto", "", uuidA, 0}}},
		{"luks2", luks2, []sigWant{{"crypto_LUKS", "crypto", "cryptlab", uuidA, 0}, {"crypto_LUKS", "crypto", "cryptlab", uuidA, 0x4000}}},
		{"luks2-secondary-only", func() []byte { b := bytes.Clone(luks2); copy(b, "\x00\x00"); return b }(),
			[]sigWant{{"crypto_LUKS", "crypto", "cryptlab", uuidA, 0x4000}}},
		{"md-1.2", mdImage(8*mb, "host:0", uuidA), []sigWant{{"linux_raid_member", "raid", "host:0", uuidA, 4096}}},
		{"md-0.90", mdV090Image(8*mb+12345, uuidA), []sigWant{{"linux_raid_member", "raid", "", uuidA, 8*mb - 64<<10}}},
		{"btrfs", btrfsImage(8*mb, "btr", uuidA), []sigWant{{"btrfs", "filesystem", "btr", uuidA, 0x10040}}},
		{"ntfs", ntfsImage(8*mb, "Wïn data", 0x1122334455667788), // libblkid also takes the boot sector for an empty DOS table.
			[]sigWant{{"ntfs", "filesystem", "Wïn data", "1122334455667788", 3}, {"dos", "partition_table", "", "", 510}}},
		{"vfat-fat16", fat16Image(32*mb, "FATLAB", 0xa1b2c3d4), []sigWant{
			{"vfat", "filesystem", "FATLAB", "A1B2-C3D4", 0}, {"vfat", "filesystem", "FATLAB", "A1B2-C3D4", 0x36},
			{"vfat", "filesystem", "FATLAB", "A1B2-C3D4", 0x1fe}}},
		{"iso9660", isoImage(1*mb, "MY_DISC", "2024010203040506\x00"), []sigWant{{"iso9660", "filesystem", "MY_DISC", "2024-01-02-03-04-05-06", 0x8001}}},
		// blkid 2.38 does not print a bcache label (later ones do), so the
		// label is left empty where blkid is the referee.
		{"bcache", bcacheImage(8*mb, "", uuidA), []sigWant{{"bcache", "other", "", uuidA, 0x1018}}},
		{"gpt-512", gptImage(8*mb, 512, uuidB, []gptPart{{0, uuidB, uuidA, "data", 2048, 4095}}), []sigWant{
			{"PMBR", "partition_table", "", "", 510}, {"gpt", "partition_table", "", uuidB, 512},
			{"gpt", "partition_table", "", uuidB, 8*mb - 512}}},
		{"gpt-4096", gptImage(8*mb, 4096, uuidB, nil), []sigWant{
			{"PMBR", "partition_table", "", "", 510}, {"gpt", "partition_table", "", uuidB, 4096},
			{"gpt", "partition_table", "", uuidB, 8*mb - 4096}}},
		{"dos", mbrImage(8*mb, 0x1234abcd, [4]mbrPart{{typ: 0x83, start: 2048, sectors: 4096, boot: true}}, nil),
			[]sigWant{{"dos", "partition_table", "", "1234abcd", 510}}},
		{"zfs", zfsImage(64*mb, 3, "tank", 1234567890123456789), zfsExpected()},
		{"zeros", make([]byte, 4*mb), nil},

		// Damaged but present: blkid -p and wipefs still report these
		// (checksums are BLKID_SUBLKS_BADCSUM-tolerated, GPT is forced),
		// and a disk carrying them is not blank.
		{"xfs-bad-crc", corrupt(xfsImage(32*mb, "x", uuidA), 200, 1), []sigWant{{"xfs", "filesystem", "x", uuidA, 0}}},
		{"ext4-bad-csum", corrupt(extImage(8*mb, "e", uuidA, 0x3c, 0x2c2, 0x46b), 1024+200, 1), []sigWant{{"ext4", "filesystem", "e", uuidA, 0x438}}},
		{"lvm-bad-crc", corrupt(lvmImage(8*mb, "AbCdEf0123456789ghIJklMNopQRstUV"), 512+40, 'x'),
			[]sigWant{{"LVM2_member", "raid", "", "AbCdEf-01x3-4567-89gh-IJkl-MNop-QRstUV", 0x218}}},
		{"md-bad-csum", corrupt(mdImage(8*mb, "h:0", uuidA), 4096+100, 7), []sigWant{{"linux_raid_member", "raid", "h:0", uuidA, 4096}}},
		{"luks2-misplaced", corrupt(corrupt(luksImage(8*mb, 2, "", uuidA), 256+7, 1), 0x4000+256+7, 1),
			[]sigWant{{"crypto_LUKS", "crypto", "", uuidA, 0}, {"crypto_LUKS", "crypto", "", uuidA, 0x4000}}},
		{"btrfs-elsewhere", corrupt(btrfsImage(8*mb, "b", uuidA), 64<<10+49, 1), []sigWant{{"btrfs", "filesystem", "b", uuidA, 0x10040}}},
		{"gpt-without-pmbr", corrupt(gptImage(8*mb, 512, uuidB, nil), 446+4, 0x83), []sigWant{
			{"dos", "partition_table", "", "", 510}, {"gpt", "partition_table", "", uuidB, 512}, {"gpt", "partition_table", "", uuidB, 8*mb - 512}}},
	}
}

func TestProbeSynthetic(t *testing.T) {
	for _, c := range syntheticCases() {
		t.Run(c.name, func(t *testing.T) {
			sigs, err := Probe(bytes.NewReader(c.img), int64(len(c.img)))
			if err != nil {
				t.Fatal(err)
			}
			var got []sigWant
			for _, s := range sigs {
				got = append(got, sigWant{s.Type, s.Usage, s.Label, s.UUID, s.Offset})
				if len(s.Magic) == 0 || !bytes.Equal(s.Magic, c.img[s.Offset:s.Offset+int64(len(s.Magic))]) {
					t.Errorf("%s at %d: magic %q is not what the image holds there", s.Type, s.Offset, s.Magic)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
			// Erasing every magic, as disk --wipe does, leaves nothing.
			wiped := bytes.Clone(c.img)
			for _, s := range sigs {
				copy(wiped[s.Offset:], make([]byte, len(s.Magic)))
			}
			if left, _ := Probe(bytes.NewReader(wiped), int64(len(wiped))); len(left) != 0 {
				t.Errorf("after zeroing every magic, still found %+v", left)
			}
		})
	}
}

// zfsExpected is what wipefs -n lists for zfsImage(64 MiB, 3 uberblocks per
// label): blkid needs four, so the last three found are never reported.
func zfsExpected() []sigWant {
	var w []sigWant
	for _, label := range []int64{256 << 10, 64<<20 - 512<<10, 64<<20 - 256<<10} {
		for i := int64(0); i < 3; i++ {
			w = append(w, sigWant{"zfs_member", "filesystem", "tank", "1234567890123456789", label + 128<<10 + i*1024})
		}
	}
	return w
}

func TestBcacheLabel(t *testing.T) {
	img := bcacheImage(1<<20, "cache0", uuidA)
	sigs, err := Probe(bytes.NewReader(img), int64(len(img)))
	if err != nil || len(sigs) != 1 || sigs[0].Label != "cache0" {
		t.Errorf("%+v %v", sigs, err)
	}
}

func TestZFSUberblocksAsWipefs(t *testing.T) {
	img := zfsImage(64<<20, 3, "tank", 1234567890123456789)
	sigs, err := Probe(bytes.NewReader(img), int64(len(img)))
	if err != nil {
		t.Fatal(err)
	}
	// 12 uberblocks; blkid wants 4, so wipefs -a zeroes 9 and leaves 3.
	if len(sigs) != 9 {
		t.Fatalf("%d signatures, want 9: %+v", len(sigs), sigs)
	}
	for _, s := range sigs {
		if s.Type != "zfs_member" || s.Label != "tank" || s.UUID != "1234567890123456789" {
			t.Errorf("%+v", s)
		}
	}
	img = zfsImage(64<<20, 0, "tank", 1)
	if sigs, _ := Probe(bytes.NewReader(img), int64(len(img))); len(sigs) != 0 {
		t.Errorf("no uberblocks, yet %+v", sigs)
	}
}

func TestProbeRejects(t *testing.T) {
	for name, img := range rejectCases() {
		t.Run(name, func(t *testing.T) {
			sigs, err := Probe(bytes.NewReader(img), int64(len(img)))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range sigs {
				// A broken FAT or NTFS boot sector still ends in 0x55AA,
				// which blkid then takes for an empty DOS table.
				if s.Type != "dos" {
					t.Errorf("found %+v", s)
				}
			}
		})
	}
}

// rejectCases are near misses: a signature with one thing wrong that
// libblkid checks.
func rejectCases() map[string][]byte {
	const mb = 1 << 20
	corrupt := func(img []byte, off int, b ...byte) []byte { copy(img[off:], b); return img }
	cases := map[string][]byte{
		"xfs-bad-geometry":              corrupt(xfsImage(32*mb, "x", uuidA), 121, 10),
		"ext-needs-recovery-no-journal": extImage(8*mb, "e", uuidA, 0, 0x4, 0),
		"swap-version-0":                corrupt(swapImage(8*mb, 4096, "s", uuidA), 1024, 0),
		"lvm-wrong-sector":              corrupt(lvmImage(8*mb, "AbCdEf0123456789ghIJklMNopQRstUV"), 512+8, 2),
		"ntfs-no-mft":                   corrupt(ntfsImage(8*mb, "n", 1), 4*8*512, 'X'),
		"fat-no-fats":                   corrupt(fat16Image(32*mb, "F", 1), 0x10, 0),
		"bcache-offset":                 corrupt(bcacheImage(8*mb, "b", uuidA), 4096+8, 9),
	}
	return cases
}

func TestReadTableGPT(t *testing.T) {
	for _, ss := range []int{512, 4096} {
		t.Run(fmt.Sprint(ss), func(t *testing.T) {
			size := int64(16 << 20)
			last := uint64(size/int64(ss)) - 1
			parts := []gptPart{
				{0, uuidB, uuidA, "root", 256, 1279},
				{2, "c12a7328-f81f-11d2-ba4b-00a0c93ec93b", "11111111-2222-3333-4444-555555555555", "ÉFI 𝄞", 1280, last - 40},
			}
			img := gptImage(size, ss, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", parts)
			want := []Entry{
				{1, 256, 1024, uuidB, uuidA, "root"},
				{3, 1280, last - 40 - 1280 + 1, "c12a7328-f81f-11d2-ba4b-00a0c93ec93b", "11111111-2222-3333-4444-555555555555", "ÉFI 𝄞"},
			}
			check := func(tbl *Table, err error, warn string) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				if tbl.Type != "gpt" || tbl.SectorSize != ss || tbl.ID != "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" {
					t.Errorf("table %+v", tbl)
				}
				if fmt.Sprint(tbl.Partitions) != fmt.Sprint(want) {
					t.Errorf("partitions\n got  %+v\n want %+v", tbl.Partitions, want)
				}
				if warn == "" && len(tbl.Warnings) != 0 || warn != "" && !strings.Contains(strings.Join(tbl.Warnings, "\n"), warn) {
					t.Errorf("warnings %q, want %q", tbl.Warnings, warn)
				}
			}
			tbl, err := ReadTable(bytes.NewReader(img), size, 0)
			check(tbl, err, "")
			tbl, err = ReadTable(bytes.NewReader(img), size, ss)
			check(tbl, err, "")

			// Primary header CRC broken: the backup is used.
			bad := bytes.Clone(img)
			bad[ss+60] ^= 0xff
			tbl, err = ReadTable(bytes.NewReader(bad), size, 0)
			check(tbl, err, "primary GPT header invalid (header CRC mismatch)")

			// Primary entry array broken: same.
			bad = bytes.Clone(img)
			bad[2*ss+100] ^= 0xff
			tbl, err = ReadTable(bytes.NewReader(bad), size, 0)
			check(tbl, err, "primary GPT header invalid (entry array CRC mismatch)")

			// Backup broken: primary used, warning given.
			bad = bytes.Clone(img)
			bad[int64(last)*int64(ss)+30] ^= 0xff
			tbl, err = ReadTable(bytes.NewReader(bad), size, 0)
			check(tbl, err, "backup GPT header")

			// Both broken.
			bad[ss+60] ^= 0xff
			if tbl, err := ReadTable(bytes.NewReader(bad), size, 0); !errors.Is(err, ErrCorruptTable) {
				t.Errorf("both headers broken: %+v, %v", tbl, err)
			}
			// A PMBR with no GPT header anywhere is corrupt too.
			bad = bytes.Clone(img)
			copy(bad[ss:], make([]byte, 8))
			copy(bad[int64(last)*int64(ss):], make([]byte, 8))
			if tbl, err := ReadTable(bytes.NewReader(bad), size, 0); !errors.Is(err, ErrCorruptTable) {
				t.Errorf("PMBR only: %+v, %v", tbl, err)
			}
			// The image truncated: the backup is no longer at the last LBA.
			grown := append(bytes.Clone(img), make([]byte, 1<<20)...)
			tbl, err = ReadTable(bytes.NewReader(grown), int64(len(grown)), ss)
			check(tbl, err, "places the backup at LBA")
		})
	}
}

func TestReadTableGPTOverlap(t *testing.T) {
	img := gptImage(8<<20, 512, uuidB, []gptPart{{0, uuidB, uuidA, "a", 10, 2000}, {1, uuidB, uuidB, "b", 2000, 3000}})
	tbl, err := ReadTable(bytes.NewReader(img), int64(len(img)), 512)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(tbl.Warnings, "\n"); !strings.Contains(w, "partitions 1 and 2 overlap") || !strings.Contains(w, "outside the usable area") {
		t.Errorf("warnings %q", tbl.Warnings)
	}
}

func TestReadTableDOS(t *testing.T) {
	img := mbrImage(64<<20, 0xdeadbeef, [4]mbrPart{
		{typ: 0x83, start: 2048, sectors: 20480, boot: true},
		{},
		{typ: 0x05, start: 40960, sectors: 40960},
	}, []mbrPart{{typ: 0x83, start: 43008, sectors: 10240}, {typ: 0x82, start: 55296, sectors: 4096}})
	tbl, err := ReadTable(bytes.NewReader(img), int64(len(img)), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{1, 2048, 20480, "0x83", "deadbeef-01", ""},
		{3, 40960, 40960, "0x5", "deadbeef-03", ""},
		{5, 43008, 10240, "0x83", "deadbeef-05", ""},
		{6, 55296, 4096, "0x82", "deadbeef-06", ""},
	}
	if tbl.Type != "dos" || tbl.ID != "0xdeadbeef" || tbl.SectorSize != 512 || fmt.Sprint(tbl.Partitions) != fmt.Sprint(want) || len(tbl.Warnings) != 0 {
		t.Errorf("got %+v\nwant partitions %+v", tbl, want)
	}
	// An EBR chain that points back to itself ends with a warning, not a hang.
	ebr := int64(43008-2048) * 512
	le.PutUint32(img[ebr+446+16+8:], 0)
	img[ebr+446+16+4] = 0x05
	le.PutUint32(img[ebr+446+16+12:], 100)
	tbl, err = ReadTable(bytes.NewReader(img), int64(len(img)), 0)
	if err != nil || len(tbl.Partitions) != 3 || len(tbl.Warnings) != 1 {
		t.Errorf("looping chain: %+v %v", tbl, err)
	}
}

func TestReadTableNone(t *testing.T) {
	for name, img := range map[string][]byte{
		"zeros": make([]byte, 1<<20),
		"xfs":   xfsImage(32<<20, "x", uuidA),
		"fat16": fat16Image(32<<20, "F", 1),
		"tiny":  {1, 2, 3},
	} {
		tbl, err := ReadTable(bytes.NewReader(img), int64(len(img)), 0)
		if tbl != nil || err != nil {
			t.Errorf("%s: %+v, %v", name, tbl, err)
		}
	}
	if _, err := ReadTable(bytes.NewReader(nil), 0, 1000); err == nil {
		t.Error("sector size 1000 accepted")
	}
}

// failingReader fails every read past 4 KiB, as a dying disk would.
type failingReader struct{ r io.ReaderAt }

var errMedium = errors.New("medium error")

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > 4096 {
		return 0, errMedium
	}
	return f.r.ReadAt(p, off)
}

func TestReadErrors(t *testing.T) {
	img := gptImage(8<<20, 512, uuidB, nil)
	if _, err := Probe(failingReader{bytes.NewReader(img)}, int64(len(img))); !errors.Is(err, errMedium) {
		t.Errorf("Probe: %v, want the read error", err)
	}
	if _, err := ReadTable(failingReader{bytes.NewReader(img)}, int64(len(img)), 512); !errors.Is(err, errMedium) {
		t.Errorf("ReadTable: %v, want the read error", err)
	}
}

// countingReader records how much a probe reads.
type countingReader struct {
	r     io.ReaderAt
	bytes int64
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.bytes += int64(len(p))
	c.reads++
	return c.r.ReadAt(p, off)
}

func TestProbeReadsLittle(t *testing.T) {
	img := xfsImage(64<<20, "x", uuidA)
	c := &countingReader{r: bytes.NewReader(img)}
	if _, err := Probe(c, int64(len(img))); err != nil {
		t.Fatal(err)
	}
	// The first and the last 512 KiB in one read each (ZFS alone wants
	// 128 KiB of uberblocks from each of four labels, two at each end),
	// and the LUKS2 secondary header's places beyond them (512 KiB, 1, 2,
	// 4 MiB): a spinning disk seeks six times, not once per signature
	// (32 reads before).
	if c.reads > 6 || c.bytes > 1<<20+4<<10 {
		t.Errorf("Probe read %d bytes in %d reads", c.bytes, c.reads)
	}
	t.Logf("Probe of a 64 MiB device read %d bytes in %d reads", c.bytes, c.reads)
}
