package probe

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The LVM2 on-disk format (lvm2 lib/format_text/layout.h): a label in one
// of the first four sectors ("LABELONE", type "LVM2 001") points at the PV
// header (the PV's UUID, its size, a list of data areas and a list of
// metadata areas). A metadata area starts with a 512-byte header (magic
// " LVM2 x[5A%r0N*>") whose first raw location is the newest VG metadata,
// a text document kept in the rest of the area as a ring buffer.

const (
	lvmMDAHeaderSize = 512
	lvmInitialCRC    = 0xf597a6cf
	lvmRawLocnIgnore = 1
	// lvmMaxText bounds the metadata text read: lvm2 itself refuses a VG
	// whose text does not fit in the area (default 1020 KiB).
	lvmMaxText = 16 << 20
)

var lvmMDAMagic = []byte(" LVM2 x[5A%r0N*>")

// PV is what an LVM physical volume says about itself on disk.
type PV struct {
	// UUID is as pvs prints it: 6-4-4-4-4-4-6 characters.
	UUID string
	// DeviceBytes is the device size pvcreate recorded.
	DeviceBytes uint64
	// Metadata is the newest VG metadata text in the PV's metadata areas,
	// nil when it has none (pvcreate --metadatacopies 0, or an area lvm2
	// marked ignored) or belongs to no VG yet.
	Metadata []byte
}

// ErrNoPV means the device carries no LVM2 label.
var ErrNoPV = errors.New("no lvm2 label")

// ReadPV reads the label, the PV header and the newest metadata text of the
// LVM2 physical volume on r, a device of size bytes. Only read errors and
// metadata whose checksum does not match are errors; a device without a
// label is ErrNoPV.
func ReadPV(r io.ReaderAt, size int64) (*PV, error) {
	d := newDevice(r, size)
	var label []byte
	for i := int64(0); i < 4; i++ {
		l := d.read(i*512, 512)
		if l != nil && string(l[:8]) == "LABELONE" && string(l[24:32]) == "LVM2 001" && le64(l[8:]) == uint64(i) {
			label = l
			break
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if label == nil {
		return nil, ErrNoPV
	}
	off := int(le32(label[20:]))
	if off < 32 || off+40 > len(label) {
		return nil, fmt.Errorf("lvm2 label: pv header at %d: %w", off, ErrNoPV)
	}
	h := label[off:]
	u := h[:32]
	pv := &PV{
		UUID: string(u[0:6]) + "-" + string(u[6:10]) + "-" + string(u[10:14]) + "-" + string(u[14:18]) +
			"-" + string(u[18:22]) + "-" + string(u[22:26]) + "-" + string(u[26:32]),
		DeviceBytes: le64(h[32:]),
	}
	// Two lists of (offset, size), each ending with a zero entry: data
	// areas, then metadata areas.
	var mdas [][2]uint64
	list := 0
	for p := 40; p+16 <= len(h); p += 16 {
		o, s := le64(h[p:]), le64(h[p+8:])
		if o == 0 && s == 0 {
			list++
			if list == 2 {
				break
			}
			continue
		}
		if list == 1 {
			mdas = append(mdas, [2]uint64{o, s})
		}
	}
	var best []byte
	var bestSeq uint64
	for _, m := range mdas {
		text, err := readMDA(d, m[0], m[1])
		if err != nil {
			return nil, err
		}
		if text == nil {
			continue
		}
		seq := seqnoOf(text)
		if best == nil || seq > bestSeq {
			best, bestSeq = text, seq
		}
	}
	pv.Metadata = best
	return pv, d.err
}

// readMDA returns the newest metadata text of the area at start (absolute)
// of size bytes, or nil when it holds none.
func readMDA(d *device, start, size uint64) ([]byte, error) {
	if size < lvmMDAHeaderSize || start > uint64(d.size) {
		return nil, nil
	}
	hdr := d.read(int64(start), lvmMDAHeaderSize)
	if hdr == nil {
		return nil, d.err
	}
	if string(hdr[4:20]) != string(lvmMDAMagic) || le64(hdr[24:]) != start {
		return nil, fmt.Errorf("lvm2 metadata area at %d: bad header", start)
	}
	if lvmCRC(hdr[4:]) != le32(hdr) {
		return nil, fmt.Errorf("lvm2 metadata area at %d: header checksum mismatch", start)
	}
	areaSize := le64(hdr[32:])
	loc := hdr[40:]
	off, n, sum, flags := le64(loc), le64(loc[8:]), le32(loc[16:]), le32(loc[20:])
	if off == 0 && n == 0 || flags&lvmRawLocnIgnore != 0 {
		return nil, nil
	}
	if n > lvmMaxText || off < lvmMDAHeaderSize || off >= areaSize || n > areaSize-lvmMDAHeaderSize {
		return nil, fmt.Errorf("lvm2 metadata area at %d: text of %d bytes at %d does not fit", start, n, off)
	}
	// The text is a ring buffer after the header: what does not fit before
	// the end of the area continues right after the header.
	first := min(n, areaSize-off)
	text := make([]byte, 0, n)
	for _, part := range [][2]uint64{{start + off, first}, {start + lvmMDAHeaderSize, n - first}} {
		if part[1] == 0 {
			continue
		}
		b := make([]byte, part[1])
		if m, err := d.r.ReadAt(b, int64(part[0])); m < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("lvm2 metadata at %d: %w", part[0], err)
		}
		text = append(text, b...)
	}
	if got := lvmCRC(text); got != sum {
		return nil, fmt.Errorf("lvm2 metadata at %d: checksum mismatch", start+off)
	}
	// lvm2 writes the text NUL-terminated and counts the NUL.
	if k := indexByte(text, 0); k >= 0 {
		text = text[:k]
	}
	return text, nil
}

// lvmCRC is lvm2's calc_crc from INITIAL_CRC: the reflected CRC-32 (IEEE)
// without the final inversion, which crc32.Update applies on both ends.
func lvmCRC(b []byte) uint32 {
	return ^crc32.Update(^uint32(lvmInitialCRC), crc32.IEEETable, b)
}

// seqnoOf finds the VG's seqno in a metadata text without a full parse.
func seqnoOf(text []byte) uint64 {
	md, err := ParseVGMetadata(text)
	if err != nil {
		return 0
	}
	return md.SeqNo
}
