// Package probe finds on-disk signatures (filesystem superblocks, RAID, LVM
// and LUKS headers, partition tables) by reading a few KiB at well-known
// offsets, the way `blkid -p` and `wipefs -n` do, without libblkid, udev or
// root-only ioctls. It only ever reads.
//
// It serves two masters: hwinfo, which needs TYPE/LABEL/UUID/PARTUUID on hosts
// without a udev database, and disk, which refuses a disk carrying any
// signature and, with --wipe, zeroes exactly the Magic bytes of every
// Signature, as `wipefs -a` does. So Probe reports every copy of a magic
// that wipefs would erase (both GPT headers and the PMBR, the three FAT
// magics), not just the one blkid prints.
package probe

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Signature is one magic found on a device.
type Signature struct {
	// Type is the blkid TYPE or PTTYPE: "xfs", "ext4", "ext3", "ext2",
	// "jbd", "swap", "LVM2_member", "crypto_LUKS", "linux_raid_member",
	// "vfat", "btrfs", "ntfs", "iso9660", "zfs_member", "bcache", and the
	// partition tables "gpt", "PMBR", "dos".
	Type string
	// Usage is "filesystem", "raid", "crypto", "partition_table" or "other".
	Usage string
	Label string
	// UUID is formatted as blkid prints it: 8-4-4-4-12 lower hex for most,
	// XXXX-XXXX for vfat, 16 upper hex digits for ntfs, a decimal pool GUID
	// for zfs, a date for iso9660, 8 hex digits for a dos disk signature.
	UUID string
	// Offset is the byte offset of Magic on the device.
	Offset int64
	// Magic is the bytes at Offset that identify the signature; zeroing them
	// is what `wipefs -a` does.
	Magic []byte
	// UsedBytes is the space an xfs or ext2/3/4 file system counts as in
	// use in its superblock (data and metadata; xfs's internal log left
	// out, as df leaves it out): exact once it was unmounted cleanly, a
	// mounted one updates its counts lazily. 0 for other kinds.
	UsedBytes uint64
	// SizeBytes is the size an xfs or ext2/3/4 file system says it has
	// (its block count): less than its device's when the device grew and
	// the file system has not yet. 0 for other kinds.
	SizeBytes uint64
}

// Usage values.
const (
	UsageFilesystem     = "filesystem"
	UsageRAID           = "raid"
	UsageCrypto         = "crypto"
	UsagePartitionTable = "partition_table"
	UsageOther          = "other"
)

// ErrCorruptTable means a partition table is announced (a protective MBR or a
// GPT header signature) but neither GPT header with its entry array is valid.
var ErrCorruptTable = errors.New("corrupt partition table")

// prober looks for one kind of signature and appends what it finds.
type prober func(d *device) []Signature

var probers = []prober{
	probeGPT, // GPT headers and PMBR
	probeDOS,
	probeLUKS,
	probeMD,
	probeLVM,
	probeBcache,
	probeXFS,
	probeExt,
	probeSwap,
	probeVFAT,
	probeNTFS,
	probeBtrfs,
	probeISO9660,
	probeZFS,
}

// Probe returns every signature found on a device of size bytes, in offset
// order. GPT is looked for with both 512- and 4096-byte sectors, since a
// reader carries no sector size. Only read errors are returned; garbage is
// simply not a signature.
func Probe(r io.ReaderAt, size int64) ([]Signature, error) {
	d := newDevice(r, size)
	var sigs []Signature
	for _, p := range probers {
		sigs = append(sigs, p(d)...)
		if d.err != nil {
			return nil, d.err
		}
	}
	sort.SliceStable(sigs, func(i, j int) bool { return sigs[i].Offset < sigs[j].Offset })
	return sigs, nil
}

// device reads small pieces of a device, remembering them, because most
// probers look at the same first sectors.
type device struct {
	r     io.ReaderAt
	size  int64
	cache map[[2]int64][]byte
	// head and tail are the first and last window bytes of the device,
	// each read whole at the first probe that looks there: nearly every
	// signature lies in one of them, and one read of 512 KiB costs a
	// disk one seek where the thirty small ones it replaces cost thirty
	// (a spinning disk's 8 ms each). A window that cannot be read whole
	// is not used.
	head, tail   []byte
	headT, tailT bool  // tried
	err          error // first real read error; probing stops at the next prober
}

// window is the size of the head and tail windows.
const window = 512 << 10

func newDevice(r io.ReaderAt, size int64) *device {
	return &device{r: r, size: size, cache: map[[2]int64][]byte{}}
}

// windowed returns n bytes at off from the head or tail window when they
// lie inside one, reading it at the first call; nil otherwise.
func (d *device) windowed(off, n int64) []byte {
	w := min(int64(window), d.size)
	switch {
	case off+n <= w:
		if !d.headT {
			d.headT, d.head = true, d.readWindow(0, w)
		}
		if d.head != nil {
			return d.head[off : off+n : off+n]
		}
	case off >= d.size-w:
		start := d.size - w
		if !d.tailT {
			d.tailT, d.tail = true, d.readWindow(start, w)
		}
		if d.tail != nil {
			return d.tail[off-start : off-start+n : off-start+n]
		}
	}
	return nil
}

func (d *device) readWindow(off, n int64) []byte {
	b := make([]byte, n)
	if m, _ := d.r.ReadAt(b, off); int64(m) < n {
		return nil
	}
	return b
}

// maxRead bounds any single read: no signature needs more, and a corrupt
// length field must not make us allocate gigabytes.
const maxRead = 1 << 20

// read returns n bytes at off, or nil when they lie (partly) outside the
// device or cannot be read. A read error other than a short read at the end
// is kept in d.err.
func (d *device) read(off, n int64) []byte {
	if d.err != nil || off < 0 || n <= 0 || n > maxRead || off > d.size-n {
		return nil
	}
	if b := d.windowed(off, n); b != nil {
		return b
	}
	key := [2]int64{off, n}
	if b, ok := d.cache[key]; ok {
		return b
	}
	b := make([]byte, n)
	m, err := d.r.ReadAt(b, off)
	if m < len(b) {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			d.err = fmt.Errorf("read %d bytes at %d: %w", n, off, err)
		}
		return nil
	}
	d.cache[key] = b
	return b
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }
func be16(b []byte) uint16 { return uint16(b[1]) | uint16(b[0])<<8 }
func be32(b []byte) uint32 {
	return uint32(b[3]) | uint32(b[2])<<8 | uint32(b[1])<<16 | uint32(b[0])<<24
}
func be64(b []byte) uint64 { return uint64(be32(b))<<32 | uint64(be32(b[4:])) }

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// formatUUID prints 16 bytes as blkid does, or "" for an all-zero UUID,
// which blkid treats as unset.
func formatUUID(b []byte) string {
	if isZero(b) {
		return ""
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// formatGUID prints a GPT GUID, whose first three fields are little endian.
func formatGUID(b []byte) string {
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x", le32(b), le16(b[4:]), le16(b[6:]), b[8:10], b[10:16])
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cString returns the bytes up to the first NUL with trailing ASCII white
// space removed, as blkid_probe_set_label stores labels. Bytes that are not valid
// UTF-8 are kept as they are, as blkid keeps them.
func cString(b []byte) string {
	if i := indexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimRight(string(b), " \t\n\v\f\r")
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func isPowerOf2(n uint64) bool { return n != 0 && n&(n-1) == 0 }
