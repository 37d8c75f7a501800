package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/disk"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/diskprep/diskprep/internal/testenv"
)

// These tests make real signatures with the real tools on loop devices and
// hold Probe and ReadTable to what blkid, wipefs, sgdisk and sfdisk say about
// the same device.

// newLoop is testenv.NewLoop plus a detach that waits: the kernel finishes
// an auto-clear detach asynchronously, and testenv's cleanup checks too soon
// after a successful `losetup -d`, failing tests that did nothing wrong.
func newLoop(t *testing.T, size int64, opt testenv.LoopOptions) *testenv.Loop {
	t.Helper()
	l := testenv.NewLoop(t, size, opt)
	t.Cleanup(func() {
		testenv.UnmountAll(t, l.Dev)
		testenv.Run("losetup", "-d", l.Dev)
		sys := "/sys/block/" + filepath.Base(l.Dev) + "/loop/backing_file"
		for i := 0; i < 50; i++ {
			if b, err := os.ReadFile(sys); err != nil || strings.TrimSpace(string(b)) != l.Image {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return l
}

func probePath(t *testing.T, path string) []Signature {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := Probe(f, size)
	if err != nil {
		t.Fatalf("Probe %s: %v", path, err)
	}
	return sigs
}

func readTablePath(t *testing.T, path string, sectorSize int) (*Table, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	return ReadTable(f, size, sectorSize)
}

// blkidExport runs blkid -p -o export; an empty map means blkid found nothing.
func blkidExport(t *testing.T, path string) map[string]string {
	t.Helper()
	out, err := testenv.Run("blkid", "-p", "-o", "export", path)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 {
			return map[string]string{}
		}
		t.Fatal(err)
	}
	return parseExport(out)
}

// parseExport reads blkid -o export's KEY=value lines. Only a label is
// unescaped: blkid's cat -v style for bytes it does not print (M-x, ^x)
// cannot be told from the same characters printed as they are, and a
// UUID, type or usage is plain ASCII (an LVM UUID with "M-i" in it read
// as byte 0xe9 failed TestRealFilesystems/lvm2 now and then).
func parseExport(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			if strings.Contains(k, "LABEL") {
				v = unescapeExport(v)
			}
			m[k] = v
		}
	}
	return m
}

// unescapeExport undoes blkid -o export's quoting: a backslash before
// shell-special bytes, and cat -v style M-x / ^x for the rest.
func unescapeExport(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case strings.HasPrefix(v[i:], "M-^") && i+3 < len(v):
			b.WriteByte((v[i+3] ^ 0x40) | 0x80)
			i += 3
		case strings.HasPrefix(v[i:], "M-") && i+2 < len(v):
			b.WriteByte(v[i+2] | 0x80)
			i += 2
		case v[i] == '^' && i+1 < len(v):
			b.WriteByte(v[i+1] ^ 0x40)
			i++
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

type wipefsSig struct {
	Offset int64
	Type   string
	UUID   string
	Label  string
}

// wipefsList runs wipefs -n -J, which lists every magic wipefs -a would zero.
func wipefsList(t *testing.T, path string) []wipefsSig {
	t.Helper()
	out := testenv.MustRun(t, "wipefs", "-n", "-J", path)
	var doc struct {
		Signatures []struct {
			Offset string  `json:"offset"`
			Type   string  `json:"type"`
			UUID   *string `json:"uuid"`
			Label  *string `json:"label"`
		} `json:"signatures"`
	}
	if strings.TrimSpace(out) == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("wipefs -J output %q: %v", out, err)
	}
	var sigs []wipefsSig
	for _, s := range doc.Signatures {
		off, err := strconv.ParseInt(s.Offset, 0, 64)
		if err != nil {
			t.Fatalf("wipefs offset %q: %v", s.Offset, err)
		}
		w := wipefsSig{Offset: off, Type: s.Type}
		if s.UUID != nil {
			w.UUID = *s.UUID
		}
		if s.Label != nil {
			w.Label = *s.Label
		}
		sigs = append(sigs, w)
	}
	sort.SliceStable(sigs, func(i, j int) bool { return sigs[i].Offset < sigs[j].Offset })
	return sigs
}

// compareWithTools checks Probe against wipefs (every magic, offset by
// offset) and blkid (the TYPE, LABEL and UUID it prints).
func compareWithTools(t *testing.T, path string) []Signature {
	t.Helper()
	sigs := probePath(t, path)
	want := wipefsList(t, path)
	if len(sigs) != len(want) {
		t.Errorf("Probe found %d signatures, wipefs -n %d:\n probe  %+v\n wipefs %+v", len(sigs), len(want), sigs, want)
	} else {
		for i, w := range want {
			s := sigs[i]
			if s.Offset != w.Offset || s.Type != w.Type {
				t.Errorf("signature %d: probe %s at %#x, wipefs %s at %#x", i, s.Type, s.Offset, w.Type, w.Offset)
			}
			if w.UUID != "" && s.UUID != w.UUID {
				t.Errorf("signature %d (%s): UUID %q, wipefs %q", i, s.Type, s.UUID, w.UUID)
			}
			if w.Label != "" && s.Label != w.Label {
				t.Errorf("signature %d (%s): label %q, wipefs %q", i, s.Type, s.Label, w.Label)
			}
			if len(s.Magic) == 0 {
				t.Errorf("signature %d (%s): no magic bytes", i, s.Type)
			}
		}
	}
	bl := blkidExport(t, path)
	if typ := bl["TYPE"]; typ != "" {
		var fs *Signature
		for i := range sigs {
			if sigs[i].Usage != UsagePartitionTable {
				fs = &sigs[i]
				break
			}
		}
		if fs == nil {
			t.Fatalf("blkid says TYPE=%s; Probe found no such signature: %+v", typ, sigs)
		}
		if fs.Type != typ || fs.Label != bl["LABEL"] || fs.UUID != bl["UUID"] || fs.Usage != bl["USAGE"] {
			t.Errorf("Probe %s label %q uuid %q usage %q; blkid %s label %q uuid %q usage %q",
				fs.Type, fs.Label, fs.UUID, fs.Usage, typ, bl["LABEL"], bl["UUID"], bl["USAGE"])
		}
	}
	if pt := bl["PTTYPE"]; pt != "" {
		found := false
		for _, s := range sigs {
			if s.Type == pt {
				found = true
				if s.UUID != bl["PTUUID"] {
					t.Errorf("%s UUID %q, blkid PTUUID %q", pt, s.UUID, bl["PTUUID"])
				}
			}
		}
		if !found {
			t.Errorf("blkid PTTYPE=%s not among %+v", pt, sigs)
		}
	}
	if bl["TYPE"] == "" && bl["PTTYPE"] == "" && len(want) == 0 && len(sigs) != 0 {
		t.Errorf("blkid and wipefs see nothing, Probe sees %+v", sigs)
	}
	return sigs
}

func TestRealFilesystems(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "mkswap", "sgdisk", "blkid", "wipefs")
	cases := []struct {
		name       string
		sectorSize int
		size       int64
		want       string
		label      string
		argv       []string // device appended
		optional   bool     // skip when the program is missing
	}{
		{"xfs", 0, 320 << 20, "xfs", "xfs-lab", []string{"mkfs.xfs", "-q", "-f", "-L", "xfs-lab"}, false},
		{"xfs-4k", 4096, 320 << 20, "xfs", "x4k", []string{"mkfs.xfs", "-q", "-f", "-L", "x4k"}, false},
		{"ext4", 0, 64 << 20, "ext4", "ext4 lab", []string{"mkfs.ext4", "-q", "-F", "-L", "ext4 lab"}, false},
		{"ext4-4k", 4096, 64 << 20, "ext4", "e4k", []string{"mkfs.ext4", "-q", "-F", "-L", "e4k"}, false},
		{"ext4-nojournal", 0, 64 << 20, "ext4", "", []string{"mkfs.ext4", "-q", "-F", "-O", "^has_journal"}, false},
		{"ext4-nocsum", 0, 64 << 20, "ext4", "nc", []string{"mkfs.ext4", "-q", "-F", "-O", "^metadata_csum", "-L", "nc"}, false},
		{"ext3", 0, 64 << 20, "ext3", "e3", []string{"mkfs.ext3", "-q", "-F", "-L", "e3"}, false},
		{"ext2", 0, 64 << 20, "ext2", "e2", []string{"mkfs.ext2", "-q", "-F", "-L", "e2"}, false},
		{"swap", 0, 64 << 20, "swap", "swp", []string{"mkswap", "-L", "swp"}, false},
		{"swap-64k-page", 0, 64 << 20, "swap", "big", []string{"mkswap", "-p", "65536", "-L", "big"}, false},
		{"vfat", 0, 64 << 20, "vfat", "VF", []string{"mkfs.vfat", "-n", "VF"}, true},
		{"vfat-fat32", 0, 300 << 20, "vfat", "V32", []string{"mkfs.vfat", "-F", "32", "-n", "V32"}, true},
		{"lvm2", 0, 64 << 20, "LVM2_member", "", []string{"pvcreate", "-ff", "-y"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				if c.optional {
					t.Skipf("%s not installed (optional case)", c.argv[0])
				}
				t.Fatal(err)
			}
			l := newLoop(t, c.size, testenv.LoopOptions{SectorSize: c.sectorSize})
			testenv.MustRun(t, c.argv[0], append(c.argv[1:], l.Dev)...)
			sigs := compareWithTools(t, l.Dev)
			var got *Signature
			for i := range sigs {
				if sigs[i].Type == c.want {
					got = &sigs[i]
				}
			}
			if got == nil {
				t.Fatalf("no %s signature in %+v", c.want, sigs)
			}
			if got.Label != c.label {
				t.Errorf("label %q, want %q", got.Label, c.label)
			}
			if tbl, err := readTablePath(t, l.Dev, 0); err != nil || tbl != nil {
				t.Errorf("ReadTable on a bare %s: %+v, %v", c.name, tbl, err)
			}
		})
	}
}

var sgdiskInfo = regexp.MustCompile(`(?m)^(Partition GUID code|Partition unique GUID|First sector|Last sector|Partition name): (.*)$`)

// sgdiskPartitions asks sgdisk -i for each partition number in nums.
func sgdiskPartition(t *testing.T, dev string, n int) Entry {
	t.Helper()
	out := testenv.MustRun(t, "sgdisk", "-i", strconv.Itoa(n), dev)
	e := Entry{Number: n}
	var first, last uint64
	for _, m := range sgdiskInfo.FindAllStringSubmatch(out, -1) {
		v := m[2]
		switch m[1] {
		case "Partition GUID code":
			e.TypeGUID = strings.ToLower(strings.Fields(v)[0])
		case "Partition unique GUID":
			e.PartUUID = strings.ToLower(v)
		case "First sector":
			first, _ = strconv.ParseUint(strings.Fields(v)[0], 10, 64)
		case "Last sector":
			last, _ = strconv.ParseUint(strings.Fields(v)[0], 10, 64)
		case "Partition name":
			e.Name = strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
		}
	}
	e.StartLBA, e.Sectors = first, last-first+1
	return e
}

func sgdiskDiskGUID(t *testing.T, dev string) string {
	t.Helper()
	out := testenv.MustRun(t, "sgdisk", "-p", dev)
	m := regexp.MustCompile(`Disk identifier \(GUID\): (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no disk GUID in sgdisk -p output:\n%s", out)
	}
	return strings.ToLower(m[1])
}

func TestRealGPT(t *testing.T) {
	testenv.RequirePrivileged(t, "sgdisk", "blkid", "wipefs")
	for _, ss := range []int{512, 4096} {
		t.Run(fmt.Sprint(ss), func(t *testing.T) {
			l := newLoop(t, 96<<20, testenv.LoopOptions{SectorSize: ss})
			testenv.MustRun(t, "sgdisk", "-n", "1:0:+8M", "-c", "1:alpha", "-t", "1:8300",
				"-n", "2:0:+16M", "-c", "2:βeta two", "-t", "2:8e00",
				"-n", "4:0:0", "-c", "4:", "-t", "4:ef00", l.Dev)
			sigs := compareWithTools(t, l.Dev)
			var offs []int64
			for _, s := range sigs {
				offs = append(offs, s.Offset)
			}
			size := int64(96 << 20)
			if want := []int64{510, int64(ss), size - int64(ss)}; fmt.Sprint(offs) != fmt.Sprint(want) {
				t.Errorf("signature offsets %v, want %v (PMBR, primary, backup)", offs, want)
			}
			for _, sectorSize := range []int{0, ss} {
				tbl, err := readTablePath(t, l.Dev, sectorSize)
				if err != nil {
					t.Fatal(err)
				}
				checkAgainstSgdisk(t, l.Dev, tbl, ss)
				if len(tbl.Warnings) != 0 {
					t.Errorf("warnings on a fresh table: %q", tbl.Warnings)
				}
			}

			// Corrupt one byte of the primary header's disk GUID: its CRC no
			// longer matches, and the backup must take over.
			f, err := os.OpenFile(l.Dev, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{0x5a}, int64(ss)+60); err != nil {
				t.Fatal(err)
			}
			// On the device before anything reads it, whichever way.
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			tbl, err := readTablePath(t, l.Dev, 0)
			if err != nil {
				t.Fatalf("primary corrupt, backup intact: %v", err)
			}
			checkAgainstSgdisk(t, l.Dev, tbl, ss)
			if len(tbl.Warnings) == 0 || !strings.Contains(tbl.Warnings[0], "primary GPT header invalid") {
				t.Errorf("no warning about the primary header: %q", tbl.Warnings)
			}
			// blkid and wipefs now see the backup and the PMBR only.
			compareWithTools(t, l.Dev)

			if _, err := f.WriteAt([]byte("garbage!"), size-int64(ss)+16); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if tbl, err := readTablePath(t, l.Dev, 0); !errors.Is(err, ErrCorruptTable) {
				t.Errorf("both headers corrupt: table %+v, error %v; want ErrCorruptTable", tbl, err)
			}
			compareWithTools(t, l.Dev) // PMBR only
		})
	}
}

func checkAgainstSgdisk(t *testing.T, dev string, tbl *Table, ss int) {
	t.Helper()
	if tbl == nil || tbl.Type != "gpt" || tbl.SectorSize != ss {
		t.Fatalf("table %+v, want gpt with %d-byte sectors", tbl, ss)
	}
	if want := sgdiskDiskGUID(t, dev); tbl.ID != want {
		t.Errorf("disk GUID %s, sgdisk %s", tbl.ID, want)
	}
	var nums []int
	for _, p := range tbl.Partitions {
		nums = append(nums, p.Number)
		if want := sgdiskPartition(t, dev, p.Number); p != want {
			t.Errorf("partition %d:\n got  %+v\n sgdisk %+v", p.Number, p, want)
		}
	}
	if fmt.Sprint(nums) != "[1 2 4]" {
		t.Errorf("partition numbers %v, want [1 2 4]", nums)
	}
}

// TestSyntheticAgreesWithBlkid holds the hand-built images of the unit tests
// to blkid and wipefs, so that a builder and the prober cannot share a
// misreading of a format.
func TestSyntheticAgreesWithBlkid(t *testing.T) {
	testenv.RequirePrivileged(t, "blkid", "wipefs")
	for _, c := range syntheticCases() {
		t.Run(c.name, func(t *testing.T) {
			if !strings.HasSuffix(c.name, "-4096") {
				img := filepath.Join(t.TempDir(), "img")
				if err := os.WriteFile(img, c.img, 0o600); err != nil {
					t.Fatal(err)
				}
				compareWithTools(t, img)
				return
			}
			// blkid takes the sector size from the device, and a file has
			// 512-byte sectors: a 4Kn image needs a 4Kn loop device.
			l := newLoop(t, int64(len(c.img)), testenv.LoopOptions{SectorSize: 4096})
			if err := os.WriteFile(l.Dev, c.img, 0); err != nil {
				t.Fatal(err)
			}
			compareWithTools(t, l.Dev)
		})
	}
}

// TestRejectsAgreeWithBlkid: what Probe rejects, blkid and wipefs reject.
func TestRejectsAgreeWithBlkid(t *testing.T) {
	testenv.RequirePrivileged(t, "blkid", "wipefs")
	for name, data := range rejectCases() {
		t.Run(name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "img")
			if err := os.WriteFile(img, data, 0o600); err != nil {
				t.Fatal(err)
			}
			compareWithTools(t, img)
		})
	}
}

// TestRealFAT32AndISO makes FAT32 and ISO 9660 with go-diskfs (mkfs.vfat and
// xorriso are not always installed) and holds Probe to blkid and wipefs.
func TestRealFAT32AndISO(t *testing.T) {
	testenv.RequirePrivileged(t, "blkid", "wipefs")
	t.Run("fat32", func(t *testing.T) {
		img := filepath.Join(t.TempDir(), "fat.img")
		d, err := diskfs.Create(img, 300<<20, diskfs.SectorSize512)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if _, err := d.CreateFilesystem(disk.FilesystemSpec{Partition: 0, FSType: filesystem.TypeFat32, VolumeLabel: "GODISKFS"}); err != nil {
			t.Fatal(err)
		}
		sigs := compareWithTools(t, img)
		if len(sigs) == 0 || sigs[0].Type != "vfat" || sigs[0].UUID == "" {
			t.Errorf("signatures %+v", sigs)
		}
	})
	for _, joliet := range []bool{false, true} {
		t.Run(fmt.Sprintf("iso9660-joliet=%v", joliet), func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "cd.iso")
			d, err := diskfs.Create(img, 4<<20, diskfs.SectorSize(2048))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			fs, err := d.CreateFilesystem(disk.FilesystemSpec{Partition: 0, FSType: filesystem.TypeISO9660, WorkDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Mkdir("/docs"); err != nil {
				t.Fatal(err)
			}
			iso, ok := fs.(*iso9660.FileSystem)
			if !ok {
				t.Fatalf("%T is not an ISO 9660 file system", fs)
			}
			if err := iso.Finalize(iso9660.FinalizeOptions{VolumeIdentifier: "MY_CD", Joliet: joliet}); err != nil {
				t.Fatal(err)
			}
			sigs := compareWithTools(t, img)
			if len(sigs) == 0 || sigs[0].Type != "iso9660" || sigs[0].Label != "MY_CD" {
				t.Errorf("signatures %+v", sigs)
			}
		})
	}
}

// TestRealPartitionFilesystems puts file systems inside GPT partitions
// (through a second loop device limited to the partition, since this
// kernel parses no partition tables) and probes them from the whole disk
// through a section reader, as hwinfo does.
func TestRealPartitionFilesystems(t *testing.T) {
	testenv.RequirePrivileged(t, "sgdisk", "blkid", "wipefs", "mkfs.xfs", "mkfs.ext4")
	for _, ss := range []int{512, 4096} {
		t.Run(fmt.Sprint(ss), func(t *testing.T) {
			l := newLoop(t, 512<<20, testenv.LoopOptions{SectorSize: ss})
			testenv.MustRun(t, "sgdisk", "-n", "1:0:+320M", "-c", "1:xfs", "-n", "2:0:0", "-c", "2:ext4", l.Dev)
			tbl, err := readTablePath(t, l.Dev, ss)
			if err != nil || tbl == nil || len(tbl.Partitions) != 2 {
				t.Fatalf("table %+v, %v", tbl, err)
			}
			mkfs := map[int][]string{1: {"mkfs.xfs", "-q", "-f", "-L", "px"}, 2: {"mkfs.ext4", "-q", "-F", "-L", "pe"}}
			f, err := os.Open(l.Dev)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, p := range tbl.Partitions {
				start, size := int64(p.StartLBA)*int64(ss), int64(p.Sectors)*int64(ss)
				part := partitionLoop(t, l.Image, start, size, ss)
				testenv.MustRun(t, mkfs[p.Number][0], append(mkfs[p.Number][1:], part)...)
				want := compareWithTools(t, part)
				got, err := Probe(io.NewSectionReader(f, start, size), size)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("partition %d through the whole disk: %+v, through its own device: %+v", p.Number, got, want)
				}
			}
		})
	}
}

// partitionLoop attaches a loop device over part of an image and detaches
// it (waiting for the kernel) when the test ends.
func partitionLoop(t *testing.T, image string, offset, size int64, ss int) string {
	t.Helper()
	dev := strings.TrimSpace(testenv.MustRun(t, "losetup", "--find", "--show", "--offset", fmt.Sprint(offset),
		"--sizelimit", fmt.Sprint(size), "--sector-size", fmt.Sprint(ss), image))
	t.Cleanup(func() {
		testenv.UnmountAll(t, dev)
		if _, err := testenv.Run("losetup", "-d", dev); err != nil {
			t.Errorf("detach %s: %v", dev, err)
		}
		for i := 0; i < 50; i++ {
			if _, err := os.Stat("/sys/block/" + filepath.Base(dev) + "/loop"); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dev
}

// blkid's export lines as they came in a failing run: the LVM UUID stays
// as printed; a label's cat -v escapes are undone.
func TestParseExport(t *testing.T) {
	m := parseExport("DEVNAME=/dev/loop0\nUUID=nRiGVx-Vooe-CDZt-UDLd-H3h6-KWCM-iTTfUE\nVERSION=LVM2 001\nTYPE=LVM2_member\nUSAGE=raid\nLABEL=caf M-)\n")
	if m["UUID"] != "nRiGVx-Vooe-CDZt-UDLd-H3h6-KWCM-iTTfUE" || m["TYPE"] != "LVM2_member" || m["USAGE"] != "raid" || m["LABEL"] != "caf \xa9" {
		t.Errorf("%q", m)
	}
}
