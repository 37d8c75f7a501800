package hwinfo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
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
	backend sigBackend
}

func (r *reader) newProber() *prober {
	if !r.live || backend == nil {
		return nil
	}
	return &prober{backend: backend}
}

// fillAll probes the disks udev said nothing about, all at once: on a host
// full of spinning disks each probe waits for a few seeks, and those overlap.
// Only the first open failure becomes a warning (an unprivileged run
// would otherwise warn once per disk).
func (p *prober) fillAll(ctx context.Context, r *reader, disks []Disk, pend []pending) {
	if p == nil {
		return
	}
	errs := make([]error, len(disks))
	var wg sync.WaitGroup
	for i := range disks {
		d := &disks[i]
		// Opening an optical drive can spin it up or wait for media.
		if !pend[i].noUdev || d.SizeBytes == 0 || strings.HasPrefix(d.Name, "sr") {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ctx.Err() == nil {
				errs[i] = p.fill(r, d)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			r.warn("%v: filesystem labels and UUIDs unknown where there is no udev database; %s", err, openAdvice(err, os.Geteuid()))
			return
		}
	}
}

// fill opens the disk read-only (never O_EXCL, never for writing) and reads
// its table and the signatures at the start of each partition. It runs
// concurrently with other disks, so it logs but does not warn.
func (p *prober) fill(r *reader, d *Disk) error {
	f, err := os.OpenFile(r.path(d.Path), os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", d.Path, unwrapPath(err))
	}
	defer f.Close()
	disk := freshReader{f}
	size := int64(d.SizeBytes)
	sector := int(d.LogicalSectorBytes)
	if sector == 0 {
		sector = 512
	}
	if t, err := p.backend.table(disk, size, sector); err == nil && t != nil {
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
		if s, ok := p.partition(r, disk, part); ok {
			part.FSType, part.FSLabel, part.FSUUID = s.Type, s.Label, s.UUID
		}
	}
	if d.FSType == "" && d.PartitionTable == "" {
		if s, ok := p.first(r, disk, size, d.Path); ok {
			d.FSType, d.FSLabel, d.FSUUID = s.Type, s.Label, s.UUID
		}
	}
	return nil
}

// partition probes part through its own device node, as udev does, and
// through the disk only where the node cannot be opened. The two are
// block devices of their own, each with its own page cache: a filesystem
// on the partition writes through the partition's, so what it has not yet
// written back is seen there only; through the disk, the start of a
// partition mkfs had just written was read as zeros (/dev/loop4 against
// XFSB through /dev/loop4p1).
func (p *prober) partition(r *reader, disk io.ReaderAt, part *Partition) (sigFound, bool) {
	if pf, err := os.OpenFile(r.path(part.Path), os.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
		defer pf.Close()
		return p.first(r, freshReader{pf}, int64(part.SizeBytes), part.Path)
	}
	return p.first(r, io.NewSectionReader(disk, int64(part.StartBytes), int64(part.SizeBytes)), int64(part.SizeBytes), part.Path)
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

// openAdvice says what would let a device be opened, from why it could not:
// only an unprivileged user is told to become root. Root refused (EPERM, or
// EACCES despite root) is a policy of this place, a container's device
// cgroup, seccomp or an LSM, which running as root does not lift.
func openAdvice(err error, euid int) string {
	denied := errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
	switch {
	case denied && euid == 0:
		return "the device cannot be opened here even as root: a container or a device policy (device cgroup, seccomp, SELinux/AppArmor) forbids it"
	case denied:
		return "run as root with access to the devices"
	}
	return "the device could not be read"
}

// freshReader reads a device as it is now (ReadFresh).
type freshReader struct{ f *os.File }

func (r freshReader) ReadAt(b []byte, off int64) (int, error) { return ReadFresh(r.f, b, off) }
