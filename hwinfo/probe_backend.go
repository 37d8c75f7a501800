package hwinfo

import (
	"io"
	"strings"

	"github.com/diskprep/diskprep/hwinfo/probe"
)

func init() { backend = probeBackend{} }

// probeBackend binds the signature seam to hwinfo/probe.
type probeBackend struct{}

func (probeBackend) signatures(r io.ReaderAt, size int64) ([]sigFound, error) {
	sigs, err := probe.Probe(r, size)
	out := make([]sigFound, 0, len(sigs))
	for _, s := range sigs {
		out = append(out, sigFound{Type: s.Type, Usage: s.Usage, Label: s.Label, UUID: s.UUID})
	}
	return out, err
}

func (probeBackend) table(r io.ReaderAt, size int64, sectorSize int) (*tableFound, error) {
	t, err := probe.ReadTable(r, size, sectorSize)
	if err != nil || t == nil {
		return nil, err
	}
	// udev's ID_PART_TABLE_UUID spells a dos disk signature without "0x".
	tf := &tableFound{Type: t.Type, ID: strings.TrimPrefix(t.ID, "0x")}
	for _, e := range t.Partitions {
		tf.Entries = append(tf.Entries, tableEntry{Number: e.Number, TypeGUID: e.TypeGUID, PartUUID: e.PartUUID, Name: e.Name})
	}
	return tf, nil
}
