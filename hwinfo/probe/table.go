package probe

import (
	"fmt"
	"io"
)

// Entry is one partition of a table. StartLBA and Sectors count sectors of
// the table's SectorSize (blkid's PART_ENTRY_OFFSET/SIZE count 512 bytes).
type Entry struct {
	Number   int    // GPT: entry index + 1; dos: slot 1-4, logical from 5
	StartLBA uint64 // first sector
	Sectors  uint64
	TypeGUID string // GPT type GUID lower case; dos: type byte as "0x83"
	PartUUID string // GPT unique GUID lower case; dos: "<disk id>-<nn>" as blkid
	Name     string // GPT partition name; empty for dos
}

// Table is a partition table read from a whole device.
type Table struct {
	Type       string // "gpt" or "dos"
	ID         string // GPT disk GUID lower case; dos disk signature as 0x%08x
	SectorSize int
	Partitions []Entry
	// Warnings are problems that did not stop the table from being read: a
	// corrupt primary GPT header (the backup was used), an invalid or
	// disagreeing backup, a missing protective MBR, overlapping entries.
	Warnings []string
}

// ReadTable reads the GPT or DOS partition table of a whole device of size
// bytes. sectorSize is the logical sector size; 0 tries 512 and then 4096.
// It returns nil, nil when the device carries no partition table, and an
// error wrapping ErrCorruptTable when a GPT is announced but neither header
// (with its entry array) is valid. A corrupt primary with a valid backup is
// read from the backup and says so in Warnings.
func ReadTable(r io.ReaderAt, size int64, sectorSize int) (*Table, error) {
	sizes := []int64{512, 4096}
	if sectorSize != 0 {
		if sectorSize < 512 || sectorSize > 65536 || !isPowerOf2(uint64(sectorSize)) {
			return nil, fmt.Errorf("read partition table: invalid sector size %d", sectorSize)
		}
		sizes = []int64{int64(sectorSize)}
	}
	d := newDevice(r, size)
	pmbr := isPMBR(d)
	for _, ssz := range sizes {
		t, err := readGPT(d, ssz, pmbr)
		if d.err != nil {
			return nil, fmt.Errorf("read partition table: %w", d.err)
		}
		if t != nil || err != nil {
			return t, err
		}
	}
	if pmbr {
		return nil, fmt.Errorf("protective MBR but no GPT header at sector size %v: %w", sizes, ErrCorruptTable)
	}
	t := readDOS(d, sizes[0])
	if d.err != nil {
		return nil, fmt.Errorf("read partition table: %w", d.err)
	}
	return t, nil
}
