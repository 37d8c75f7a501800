package disk

import (
	"encoding/binary"
	"fmt"
	"io"
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

// writeTable checks the disk is still what was planned, wipes (if asked)
// and writes and verifies the GPT.
func (a *applier) writeTable(f Device, p *Plan, res *Result) error {
	t := p.Table
	size, err := f.Size()
	if err != nil {
		return err
	}
	lss, err := f.LogicalSector()
	if err != nil {
		return err
	}
	if size != p.Fingerprint.SizeBytes || lss != t.SectorBytes {
		return Refuse(p.Device, fmt.Sprintf("%s is now %d bytes with %d-byte sectors; planned %d bytes with %d-byte sectors", p.Device, size, lss, p.Fingerprint.SizeBytes, t.SectorBytes))
	}
	cur, terr := readTable(f, int64(size), lss)
	curType, curID := "", ""
	if cur != nil {
		curType, curID = cur.Type, cur.ID
	}
	if terr == nil && (!sameTableID(curID, p.Fingerprint.TableID) || curType != p.Fingerprint.TableType && p.Fingerprint.TableType != "") {
		return Refuse(p.Device, fmt.Sprintf("the partition table of %s changed since planning (now %s %s, planned %s %s)", p.Device, orNone(curType), curID, orNone(p.Fingerprint.TableType), p.Fingerprint.TableID))
	}
	sigs, err := a.signaturesToWipe(f, p, size)
	if err != nil {
		return err
	}
	if len(sigs) > 0 && !p.Wipe {
		var ev []string
		for _, s := range sigs {
			ev = append(ev, fmt.Sprintf("%s signature at offset %d", s.Type, s.Offset))
		}
		return notEmpty(p.Device, p.Device, ev)
	}
	for _, s := range sigs {
		a.log.Info("wipe signature: started", "device", p.Device, "type", s.Type, "offset", s.Offset, "bytes", len(s.Magic))
		if _, err := f.WriteAt(make([]byte, len(s.Magic)), s.Offset); err != nil {
			a.log.Info("wipe signature: failed", "device", p.Device, "err", err)
			return fmt.Errorf("wipe %s signature at %d on %s: %w", s.Type, s.Offset, p.Device, err)
		}
		res.Wiped = append(res.Wiped, fmt.Sprintf("%s at offset %d", s.Type, s.Offset))
	}
	if len(sigs) > 0 {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("wipe %s: %w", p.Device, err)
		}
		a.log.Info("wipe signatures: finished", "device", p.Device, "count", len(sigs))
	}
	a.log.Info("write GPT: started", "device", p.Device, "disk_guid", t.DiskGUID, "partitions", len(p.Partitions))
	if err := writeGPT(f, p); err != nil {
		a.log.Info("write GPT: failed", "device", p.Device, "err", err)
		return err
	}
	res.TableWritten = true
	if err := verifyGPT(f, p); err != nil {
		a.log.Info("write GPT: verify failed", "device", p.Device, "err", err)
		return err
	}
	a.log.Info("write GPT: finished", "device", p.Device)
	return nil
}

// signaturesToWipe finds every signature on the disk, and inside each
// planned partition's region, where a whole-disk probe cannot see an old
// filesystem that mkfs would trip over (or that would resurface).
func (a *applier) signaturesToWipe(f Device, p *Plan, size uint64) ([]signature, error) {
	sigs, err := ProbeSignatures(f, int64(size))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", p.Device, err)
	}
	for _, pp := range p.Partitions {
		in, err := ProbeSignatures(io.NewSectionReader(f, int64(pp.StartBytes), int64(pp.SizeBytes)), int64(pp.SizeBytes))
		if err != nil {
			return nil, fmt.Errorf("probe %s region of %s: %w", pp.Name, p.Device, err)
		}
		for _, s := range in {
			s.Offset += int64(pp.StartBytes)
			sigs = append(sigs, s)
		}
	}
	return sigs, nil
}

func sameTableID(a, b string) bool {
	norm := func(s string) string { return strings.TrimPrefix(strings.ToLower(s), "0x") }
	return norm(a) == norm(b)
}
