package probe

import (
	"bytes"
	"fmt"
)

// mbrSector returns sector 0 when it ends in 0x55AA.
func mbrSector(d *device) []byte {
	b := d.read(0, 512)
	if b == nil || b[510] != 0x55 || b[511] != 0xaa {
		return nil
	}
	return b
}

// isPMBR is libblkid's is_pmbr_valid: any of the four slots typed 0xEE.
func isPMBR(d *device) bool {
	b := mbrSector(d)
	if b == nil {
		return false
	}
	for i := 0; i < 4; i++ {
		if b[mbrTableStart+16*i+4] == mbrTypeGPT {
			return true
		}
	}
	return false
}

// isDOS decides, as libblkid's probe_dos_pt, whether sector 0 is a DOS
// partition table rather than a FAT or exFAT boot sector or a PMBR.
func isDOS(d *device) []byte {
	b := mbrSector(d)
	if b == nil {
		return nil
	}
	if bytes.Equal(b[:4], []byte{0xc9, 0xc2, 0xd4, 0xc1}) { // AIX
		return nil
	}
	if _, ok := fatBoot(d); ok {
		return nil
	}
	// NTFS is not excluded: libblkid reports an NTFS boot sector that
	// passes these checks as a (usually empty) DOS table too.
	if string(b[3:11]) == "EXFAT   " {
		return nil
	}
	for i := 0; i < 4; i++ {
		e := b[mbrTableStart+16*i:]
		if e[0] != 0 && e[0] != 0x80 {
			return nil
		}
		if e[4] == mbrTypeGPT {
			return nil
		}
	}
	return b
}

func probeDOS(d *device) []Signature {
	b := isDOS(d)
	if b == nil {
		return nil
	}
	s := Signature{Type: "dos", Usage: UsagePartitionTable, Offset: 510, Magic: []byte{0x55, 0xaa}}
	if id := le32(b[440:]); id != 0 {
		s.UUID = fmt.Sprintf("%08x", id)
	}
	return []Signature{s}
}

func isExtended(typ byte) bool { return typ == 0x05 || typ == 0x0f || typ == 0x85 }

// readDOS reads the four primary slots and the chain of extended boot
// records, numbering as blkid and the kernel do: empty primary slots keep
// their number, logical partitions start at 5.
func readDOS(d *device, ssz int64) *Table {
	b := isDOS(d)
	if b == nil {
		return nil
	}
	id := le32(b[440:])
	t := &Table{Type: "dos", ID: fmt.Sprintf("0x%08x", id), SectorSize: int(ssz)}
	add := func(n int, typ byte, start, sectors uint64) {
		t.Partitions = append(t.Partitions, Entry{Number: n, StartLBA: start, Sectors: sectors,
			TypeGUID: fmt.Sprintf("0x%x", typ), PartUUID: fmt.Sprintf("%08x-%02x", id, n)})
	}
	for i := 0; i < 4; i++ {
		e := b[mbrTableStart+16*i:]
		start, n := uint64(le32(e[8:])), uint64(le32(e[12:]))
		if n == 0 {
			continue
		}
		add(i+1, e[4], start, n)
		if isExtended(e[4]) {
			t.Warnings = readLogical(d, ssz, start, n, add, t.Warnings)
		}
	}
	return t
}

// readLogical follows the EBR chain; each EBR's first slot is a logical
// partition relative to that EBR, its second the next EBR relative to the
// extended partition.
func readLogical(d *device, ssz int64, extStart, extSize uint64, add func(int, byte, uint64, uint64), warnings []string) []string {
	seen := map[uint64]bool{}
	ebr, num := extStart, 5
	for len(seen) < 256 {
		if seen[ebr] {
			return append(warnings, fmt.Sprintf("extended boot record chain loops at LBA %d", ebr))
		}
		seen[ebr] = true
		if ebr > uint64(d.size/ssz) {
			return append(warnings, fmt.Sprintf("extended boot record at LBA %d beyond the device", ebr))
		}
		s := d.read(int64(ebr)*ssz, 512)
		if s == nil || s[510] != 0x55 || s[511] != 0xaa {
			return append(warnings, fmt.Sprintf("no extended boot record at LBA %d", ebr))
		}
		var next uint64
		for i := 0; i < 4; i++ {
			e := s[mbrTableStart+16*i:]
			start, n := uint64(le32(e[8:])), uint64(le32(e[12:]))
			if n == 0 || e[4] == 0 {
				continue
			}
			if isExtended(e[4]) {
				if next == 0 {
					next = extStart + start
				}
				continue
			}
			add(num, e[4], ebr+start, n)
			num++
		}
		if next == 0 || next >= extStart+extSize {
			return warnings
		}
		ebr = next
	}
	return warnings
}
