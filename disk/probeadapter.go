package disk

import (
	"io"

	"github.com/diskprep/diskprep/hwinfo/probe"
)

// signature is one on-disk magic, as hwinfo/probe reports it.
type signature = probe.Signature

// gptInfo is a partition table read back from a device.
type gptInfo struct {
	Type        string // "gpt", "dos"
	ID          string
	SectorBytes uint64      // the sector size the table was found with
	Partitions  []tablePart // LBAs in logical sectors
	Warnings    []string
}

type tablePart struct {
	Number           int
	StartLBA, EndLBA uint64
	Name, TypeGUID   string
	GUID             string
}

// ProbeSignatures reads the signatures in r, size bytes long.
func ProbeSignatures(r io.ReaderAt, size int64) ([]signature, error) {
	return probe.Probe(r, size)
}

// readTable returns nil, nil when there is no table; sector 0 tries 512
// and then 4096 (for image files, which carry no sector size).
func readTable(r io.ReaderAt, size int64, sector uint64) (*gptInfo, error) {
	t, err := probe.ReadTable(r, size, int(sector))
	if err != nil || t == nil {
		return nil, err
	}
	g := &gptInfo{Type: t.Type, ID: t.ID, SectorBytes: uint64(t.SectorSize), Warnings: t.Warnings}
	for _, e := range t.Partitions {
		g.Partitions = append(g.Partitions, tablePart{
			Number: e.Number, StartLBA: e.StartLBA, EndLBA: e.StartLBA + e.Sectors - 1,
			Name: e.Name, TypeGUID: e.TypeGUID, GUID: e.PartUUID,
		})
	}
	return g, nil
}
