package probe

import (
	"fmt"
	"hash/crc32"
	"unicode/utf16"
)

const (
	gptSignature  = "EFI PART"
	gptHeaderMin  = 92
	gptEntrySize  = 128
	mbrTypeGPT    = 0xee
	mbrTableStart = 446
)

// gptHeader is a GPT header that passed every check blkid makes, including
// the CRC of its entry array.
type gptHeader struct {
	lba, altLBA             uint64
	firstUsable, lastUsable uint64
	entriesLBA              uint64
	numEntries              uint32
	entriesCRC              uint32
	diskGUID                string
	entries                 []byte
}

// hasGPTSignature says whether "EFI PART" is at the start of sector lba,
// valid or not: a header that is there but broken is corruption, not
// absence.
func hasGPTSignature(d *device, ssz int64, lba uint64) bool {
	b := d.read(int64(lba)*ssz, 8)
	return b != nil && string(b) == gptSignature
}

func lastLBA(d *device, ssz int64) (uint64, bool) {
	n := d.size / ssz
	if n < 3 {
		return 0, false
	}
	return uint64(n - 1), true
}

// readGPTHeader checks the header at lba as libblkid's get_gpt_header does
// and says why it is rejected.
func readGPTHeader(d *device, ssz int64, lba uint64) (*gptHeader, string) {
	last, ok := lastLBA(d, ssz)
	if !ok || lba > last {
		return nil, "device too small"
	}
	sec := d.read(int64(lba)*ssz, ssz)
	if sec == nil {
		return nil, "unreadable"
	}
	if string(sec[:8]) != gptSignature {
		return nil, "no signature"
	}
	hsz := le32(sec[12:])
	if hsz < gptHeaderMin || int64(hsz) > ssz {
		return nil, fmt.Sprintf("header size %d", hsz)
	}
	hdr := clone(sec[:hsz])
	want := le32(hdr[16:])
	copy(hdr[16:20], []byte{0, 0, 0, 0})
	if crc32.ChecksumIEEE(hdr) != want {
		return nil, "header CRC mismatch"
	}
	h := &gptHeader{
		lba:         le64(hdr[24:]),
		altLBA:      le64(hdr[32:]),
		firstUsable: le64(hdr[40:]),
		lastUsable:  le64(hdr[48:]),
		diskGUID:    formatGUID(hdr[56:72]),
		entriesLBA:  le64(hdr[72:]),
		numEntries:  le32(hdr[80:]),
		entriesCRC:  le32(hdr[88:]),
	}
	if h.lba != lba {
		return nil, fmt.Sprintf("header claims LBA %d", h.lba)
	}
	fu, lu := h.firstUsable, h.lastUsable
	if lu < fu || fu > last || lu > last {
		return nil, fmt.Sprintf("usable LBAs %d-%d outside the device", fu, lu)
	}
	if fu < lba && lba < lu {
		return nil, "header inside the usable area"
	}
	esz := uint64(h.numEntries) * uint64(le32(hdr[84:]))
	if le32(hdr[84:]) != gptEntrySize || esz == 0 || esz > maxRead {
		return nil, fmt.Sprintf("entry array of %d entries of %d bytes", h.numEntries, le32(hdr[84:]))
	}
	if h.entriesLBA > uint64(d.size/ssz) {
		return nil, "entry array outside the device"
	}
	h.entries = d.read(int64(h.entriesLBA)*ssz, int64(esz))
	if h.entries == nil {
		return nil, "entry array outside the device"
	}
	if crc32.ChecksumIEEE(h.entries) != h.entriesCRC {
		return nil, "entry array CRC mismatch"
	}
	return h, ""
}

// probeGPT reports each valid GPT header and the protective MBR. Like
// wipefs (BLKID_PARTS_FORCE_GPT) it does not need a PMBR to believe in a
// GPT; unlike blkid it tries both common sector sizes, since it cannot ask
// the device.
func probeGPT(d *device) []Signature {
	var sigs []Signature
	for _, ssz := range []int64{512, 4096} {
		last, ok := lastLBA(d, ssz)
		if !ok {
			continue
		}
		for _, lba := range []uint64{1, last} {
			if h, _ := readGPTHeader(d, ssz, lba); h != nil {
				sigs = append(sigs, Signature{Type: "gpt", Usage: UsagePartitionTable, UUID: h.diskGUID,
					Offset: int64(lba) * ssz, Magic: []byte(gptSignature)})
			}
		}
	}
	if isPMBR(d) {
		sigs = append(sigs, Signature{Type: "PMBR", Usage: UsagePartitionTable, Offset: 510, Magic: []byte{0x55, 0xaa}})
	}
	return sigs
}

// readGPT returns nil, nil when no GPT header signature is present at this
// sector size.
func readGPT(d *device, ssz int64, pmbr bool) (*Table, error) {
	last, ok := lastLBA(d, ssz)
	if !ok {
		return nil, nil
	}
	if !hasGPTSignature(d, ssz, 1) && !hasGPTSignature(d, ssz, last) {
		return nil, nil
	}
	t := &Table{Type: "gpt", SectorSize: int(ssz)}
	if !pmbr {
		t.Warnings = append(t.Warnings, "no protective MBR (blkid and the kernel ignore this GPT)")
	}
	primary, why1 := readGPTHeader(d, ssz, 1)
	backup, why2 := readGPTHeader(d, ssz, last)
	if backup == nil && primary != nil && primary.altLBA != last && primary.altLBA > 1 {
		// The disk grew (or the image was truncated) after partitioning:
		// the backup sits where the primary says, not at the end.
		if b, _ := readGPTHeader(d, ssz, primary.altLBA); b != nil {
			backup, why2 = b, ""
		}
	}
	h := primary
	switch {
	case primary == nil && backup == nil:
		return nil, fmt.Errorf("GPT at sector size %d: primary header: %s; backup header: %s: %w", ssz, why1, why2, ErrCorruptTable)
	case primary == nil:
		h = backup
		t.Warnings = append(t.Warnings, fmt.Sprintf("primary GPT header invalid (%s); using the backup header at LBA %d", why1, backup.lba))
	case backup == nil:
		t.Warnings = append(t.Warnings, fmt.Sprintf("backup GPT header at LBA %d invalid (%s)", last, why2))
	default:
		if diff := compareGPT(primary, backup); diff != "" {
			t.Warnings = append(t.Warnings, "backup GPT header disagrees with the primary: "+diff)
		}
	}
	if primary != nil && primary.altLBA != last {
		t.Warnings = append(t.Warnings, fmt.Sprintf("primary GPT header places the backup at LBA %d, but the last LBA is %d", primary.altLBA, last))
	}
	t.ID = h.diskGUID
	t.Partitions, t.Warnings = gptEntries(h, t.Warnings)
	return t, nil
}

func compareGPT(p, b *gptHeader) string {
	switch {
	case p.diskGUID != b.diskGUID:
		return fmt.Sprintf("disk GUID %s vs %s", p.diskGUID, b.diskGUID)
	case p.firstUsable != b.firstUsable || p.lastUsable != b.lastUsable:
		return fmt.Sprintf("usable LBAs %d-%d vs %d-%d", p.firstUsable, p.lastUsable, b.firstUsable, b.lastUsable)
	case p.entriesCRC != b.entriesCRC || p.numEntries != b.numEntries:
		return "partition entries differ"
	case b.altLBA != p.lba:
		return fmt.Sprintf("backup points to primary at LBA %d", b.altLBA)
	}
	return ""
}

func gptEntries(h *gptHeader, warnings []string) ([]Entry, []string) {
	var parts []Entry
	for i := 0; i < int(h.numEntries); i++ {
		e := h.entries[i*gptEntrySize : (i+1)*gptEntrySize]
		if isZero(e[:16]) {
			continue
		}
		first, end := le64(e[32:]), le64(e[40:])
		if end < first {
			warnings = append(warnings, fmt.Sprintf("partition %d ends (LBA %d) before it starts (LBA %d)", i+1, end, first))
			continue
		}
		p := Entry{Number: i + 1, StartLBA: first, Sectors: end - first + 1,
			TypeGUID: formatGUID(e[:16]), PartUUID: formatGUID(e[16:32]), Name: utf16le(e[56:128])}
		if first < h.firstUsable || end > h.lastUsable {
			warnings = append(warnings, fmt.Sprintf("partition %d (LBA %d-%d) outside the usable area %d-%d", p.Number, first, end, h.firstUsable, h.lastUsable))
		}
		for _, q := range parts {
			if first <= q.StartLBA+q.Sectors-1 && q.StartLBA <= end {
				warnings = append(warnings, fmt.Sprintf("partitions %d and %d overlap", q.Number, p.Number))
			}
		}
		parts = append(parts, p)
	}
	return parts, warnings
}

// utf16le decodes a NUL-terminated UTF-16LE name.
func utf16le(b []byte) string {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		c := le16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u))
}
