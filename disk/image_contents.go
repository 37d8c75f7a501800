package disk

import (
	"io"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
)

// inspectImageContents describes an image file as hwinfo would describe the
// disk it becomes once attached: table, partitions and their filesystems.
func inspectImageContents(h Host, path string, size uint64) (*hwinfo.Disk, damage, error) {
	f, err := h.OpenDevice(path, false)
	if err != nil {
		return nil, damage{}, err
	}
	defer f.Close()
	d := &hwinfo.Disk{SizeBytes: size, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, Transport: "loop"}
	if err := describeDevice(d, f, size); err != nil {
		return nil, damage{}, err
	}
	return d, readDamage(f, int64(size), 0, d.Partitions), nil
}

// describeDevice fills the table and signature facts of d from the device's
// bytes, and the sector size when the table reveals it.
func describeDevice(d *hwinfo.Disk, r io.ReaderAt, size uint64) error {
	sigs, err := ProbeSignatures(r, int64(size))
	if err != nil {
		return err
	}
	for _, s := range sigs {
		if s.Usage == "partition_table" {
			continue
		}
		if d.FSType == "" {
			d.FSType, d.FSLabel, d.FSUUID = s.Type, s.Label, s.UUID
		}
	}
	t, err := readTable(r, int64(size), 0)
	if err != nil {
		// An announced but broken table still counts as content.
		for _, s := range sigs {
			if s.Usage == "partition_table" {
				d.PartitionTable = strings.ToLower(s.Type)
				break
			}
		}
		return nil
	}
	if t == nil {
		return nil
	}
	d.PartitionTable, d.PartitionTableID = t.Type, t.ID
	if t.SectorBytes != 0 {
		// An image made for a 4K loop device reads as one.
		d.LogicalSectorBytes, d.PhysicalSectorBytes = t.SectorBytes, t.SectorBytes
	}
	for _, tp := range t.Partitions {
		p := hwinfo.Partition{
			Number:     tp.Number,
			Name:       PartitionName(d.Name, tp.Number),
			StartBytes: tp.StartLBA * d.LogicalSectorBytes,
			SizeBytes:  (tp.EndLBA - tp.StartLBA + 1) * d.LogicalSectorBytes,
			PartLabel:  tp.Name,
			PartType:   tp.TypeGUID,
			PartUUID:   tp.GUID,
		}
		ps, err := ProbeSignatures(io.NewSectionReader(r, int64(p.StartBytes), int64(p.SizeBytes)), int64(p.SizeBytes))
		if err != nil {
			return err
		}
		for _, s := range ps {
			if s.Usage != "partition_table" {
				p.FSType, p.FSLabel, p.FSUUID = s.Type, s.Label, s.UUID
				break
			}
		}
		d.Partitions = append(d.Partitions, p)
	}
	return nil
}
