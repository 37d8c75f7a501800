package hwinfo

import (
	"io"
	"os"
	"syscall"
)

// sigFound is one on-disk signature, as hwinfo/probe reports it.
type sigFound struct {
	Type, Usage, Label, UUID string
}

// tableFound is a partition table, as hwinfo/probe reports it.
type tableFound struct {
	Type, ID string
	Entries  []tableEntry
}

type tableEntry struct {
	Number                   int
	TypeGUID, PartUUID, Name string
}

// sigBackend reads signatures from a device; probe_backend.go binds it to
// hwinfo/probe. Kept behind this seam so the disk code does not care which
// prober it gets, and tests can hand it a fake.
type sigBackend interface {
	signatures(r io.ReaderAt, size int64) ([]sigFound, error)
	table(r io.ReaderAt, size int64, sectorSize int) (*tableFound, error)
}

// backend is nil until a prober is linked in.
var backend sigBackend

// prober fills filesystem and partition facts that udev would have given,
// by reading the device itself. Only on the live root: a fixture tree's
// /dev holds no device contents.
type prober struct {
	backend    sigBackend
	openFailed bool
}

func (r *reader) newProber() *prober {
	if !r.live || backend == nil {
		return nil
	}
	return &prober{backend: backend}
}

// fill opens the disk read-only (never O_EXCL, never for writing) and reads
// its table and the signatures at the start of each partition.
func (p *prober) fill(r *reader, d *Disk) {
	if p == nil || d.SizeBytes == 0 {
		return
	}
	f, err := os.OpenFile(r.path(d.Path), os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		if !p.openFailed {
			p.openFailed = true
			r.warn("no udev database and %s not readable (%v): filesystem labels and UUIDs unknown; run as root with access to the devices", d.Path, unwrapPath(err))
		}
		return
	}
	defer f.Close()
	size := int64(d.SizeBytes)
	sector := int(d.LogicalSectorBytes)
	if sector == 0 {
		sector = 512
	}
	if t, err := p.backend.table(f, size, sector); err == nil && t != nil {
		if d.PartitionTable == "" {
			d.PartitionTable, d.PartitionTableID = t.Type, t.ID
		}
		for i := range d.Partitions {
			part := &d.Partitions[i]
			for _, e := range t.Entries {
				if e.Number != part.Number {
					continue
				}
				setIfEmpty(&part.PartUUID, e.PartUUID)
				setIfEmpty(&part.PartLabel, e.Name)
				setIfEmpty(&part.PartType, e.TypeGUID)
			}
		}
	} else if err != nil {
		r.log.Debug("partition table", "dev", d.Path, "err", err)
	}
	for i := range d.Partitions {
		part := &d.Partitions[i]
		if part.FSType != "" || part.SizeBytes == 0 {
			continue
		}
		sec := io.NewSectionReader(f, int64(part.StartBytes), int64(part.SizeBytes))
		if s, ok := p.first(r, sec, int64(part.SizeBytes), part.Path); ok {
			part.FSType, part.FSLabel, part.FSUUID = s.Type, s.Label, s.UUID
		}
	}
	if d.FSType == "" && d.PartitionTable == "" {
		if s, ok := p.first(r, f, size, d.Path); ok {
			d.FSType, d.FSLabel, d.FSUUID = s.Type, s.Label, s.UUID
		}
	}
}

// first returns the signature udev would have reported as ID_FS_TYPE.
func (p *prober) first(r *reader, ra io.ReaderAt, size int64, dev string) (sigFound, bool) {
	sigs, err := p.backend.signatures(ra, size)
	if err != nil {
		r.log.Debug("probe", "dev", dev, "err", err)
	}
	for _, s := range sigs {
		if s.Usage != "partition_table" {
			return s, true
		}
	}
	return sigFound{}, false
}

func setIfEmpty(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}
