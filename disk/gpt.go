package disk

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/partition/gpt"
)

// writeGPT writes the planned table with go-diskfs on the open (O_EXCL)
// disk: backup entries and header first, then the primary, then the
// protective MBR. The table is built from the plan alone: GUIDs and LBAs
// were decided there.
func writeGPT(f Device, p *Plan) error {
	t := p.Table
	lss := int(t.SectorBytes)
	pss := int(p.Disk.PhysicalSectorBytes)
	if pss < lss {
		pss = lss
	}
	tbl := &gpt.Table{
		LogicalSectorSize:  lss,
		PhysicalSectorSize: pss,
		GUID:               t.DiskGUID,
		ProtectiveMBR:      true,
	}
	for _, pp := range p.Partitions {
		tbl.Partitions = append(tbl.Partitions, &gpt.Partition{
			Index: pp.Number,
			Start: pp.StartLBA,
			End:   pp.EndLBA,
			Size:  pp.SizeBytes,
			Type:  gpt.Type(pp.TypeGUID),
			Name:  pp.Label,
			GUID:  pp.PartGUID,
		})
	}
	w, err := file.New(f, false).Writable()
	if err != nil {
		return fmt.Errorf("write GPT on %s: %w", p.Device, err)
	}
	size := int64(t.TotalSectors) * int64(lss)
	if err := tbl.Write(w, size); err != nil {
		return fmt.Errorf("write GPT on %s: %w", p.Device, err)
	}
	if err := writeProtectiveMBR(f, t.TotalSectors); err != nil {
		return fmt.Errorf("write protective MBR on %s: %w", p.Device, err)
	}
	return f.Sync()
}

// writeProtectiveMBR rewrites the single 0xEE entry as the UEFI spec wants
// it: go-diskfs leaves the CHS fields zero and truncates the sector count
// of disks beyond 2^32 sectors instead of saturating it at 0xFFFFFFFF.
func writeProtectiveMBR(f Device, totalSectors uint64) error {
	e := make([]byte, 16)
	e[0] = 0x00                         // not bootable
	e[1], e[2], e[3] = 0x00, 0x02, 0x00 // CHS of LBA 1
	e[4] = 0xee                         // GPT protective
	e[5], e[6], e[7] = 0xff, 0xff, 0xff // CHS beyond addressing
	binary.LittleEndian.PutUint32(e[8:], 1)
	n := totalSectors - 1
	if n > 0xffffffff {
		n = 0xffffffff
	}
	binary.LittleEndian.PutUint32(e[12:], uint32(n))
	_, err := f.WriteAt(e, 446)
	return err
}

// verifyGPT reads the table back with the independent prober and checks it
// is exactly the plan, with both headers and entry arrays intact.
func verifyGPT(f Device, p *Plan) error {
	t := p.Table
	g, err := readTable(f, int64(t.TotalSectors*t.SectorBytes), t.SectorBytes)
	if err != nil {
		return fmt.Errorf("verify GPT on %s: %w", p.Device, err)
	}
	if g == nil || g.Type != "gpt" {
		return fmt.Errorf("verify GPT on %s: no GPT found after writing", p.Device)
	}
	if len(g.Warnings) > 0 {
		return fmt.Errorf("verify GPT on %s: %s", p.Device, strings.Join(g.Warnings, "; "))
	}
	if !strings.EqualFold(g.ID, t.DiskGUID) {
		return fmt.Errorf("verify GPT on %s: disk GUID %s, planned %s", p.Device, g.ID, t.DiskGUID)
	}
	if len(g.Partitions) != len(p.Partitions) {
		return fmt.Errorf("verify GPT on %s: %d partitions, planned %d", p.Device, len(g.Partitions), len(p.Partitions))
	}
	for i, pp := range p.Partitions {
		e := g.Partitions[i]
		if e.Number != pp.Number || e.StartLBA != pp.StartLBA || e.EndLBA != pp.EndLBA || e.Name != pp.Label ||
			!strings.EqualFold(e.TypeGUID, pp.TypeGUID) || !strings.EqualFold(e.GUID, pp.PartGUID) {
			return fmt.Errorf("verify GPT on %s: partition %d reads back as %+v", p.Device, pp.Number, e)
		}
	}
	return nil
}
