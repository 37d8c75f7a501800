package disk

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// damage is what a disk's bytes say that its facts do not: a partition
// table only half written (a crash between go-diskfs's backup and primary
// GPT writes leaves a valid backup and no primary, which the prober, like
// the kernel, reads from the backup), or a filesystem whose mkfs was
// killed (blkid still reports it; the kernel will not mount it). Such a
// disk is not "already prepared": planning must neither keep the table nor
// reuse the filesystem, but refuse without --wipe, naming the damage, and
// rewrite with it.
type damage struct {
	table string         // why the table cannot be trusted; "" when it can
	parts map[int]string // partition number -> why its filesystem is unfinished
}

func (d damage) none() bool { return d.table == "" && len(d.parts) == 0 }

// mark returns a copy of disk whose table type and filesystem types carry
// the damage, so that the layout comparison sees "something else" and
// refusals and confirmations show what is wrong.
func (d damage) mark(disk *hwinfo.Disk) *hwinfo.Disk {
	if d.none() {
		return disk
	}
	c := *disk
	if d.table != "" {
		t := c.PartitionTable
		if t == "" {
			t = "gpt"
		}
		c.PartitionTable = fmt.Sprintf("%s (damaged: %s)", t, d.table)
	}
	c.Partitions = append([]hwinfo.Partition(nil), disk.Partitions...)
	for i := range c.Partitions {
		if why := d.parts[c.Partitions[i].Number]; why != "" {
			c.Partitions[i].FSType = fmt.Sprintf("%s (%s)", c.Partitions[i].FSType, why)
		}
	}
	return &c
}

// readDamage inspects r (a whole disk of size bytes; sector 0 when unknown)
// and the given partitions of it.
func readDamage(r io.ReaderAt, size int64, sector uint64, parts []hwinfo.Partition) damage {
	var d damage
	t, err := readTable(r, size, sector)
	switch {
	case errors.Is(err, probe.ErrCorruptTable):
		d.table = err.Error()
	case err == nil && t != nil && len(t.Warnings) > 0:
		d.table = strings.Join(t.Warnings, "; ")
	}
	for _, p := range parts {
		if p.FSType != "xfs" || p.SizeBytes < 512 {
			continue
		}
		if unfinishedXFS(io.NewSectionReader(r, int64(p.StartBytes), int64(p.SizeBytes))) {
			if d.parts == nil {
				d.parts = map[int]string{}
			}
			d.parts[p.Number] = "unfinished: mkfs was interrupted"
		}
	}
	return d
}

// unfinishedXFS reads sb_inprogress, which mkfs.xfs sets in the first
// superblock it writes and clears when it is done.
func unfinishedXFS(r io.ReaderAt) bool {
	sb := make([]byte, 128)
	if _, err := r.ReadAt(sb, 0); err != nil {
		return false
	}
	return string(sb[:4]) == "XFSB" && sb[126] != 0
}

// liveFacts adds to the facts of a disk of the live machine what only its
// bytes say: the damage, and the partitions of an intact GPT that the
// kernel has not registered (a kernel without a partition parser, or a run
// killed between writing the table and telling the kernel), so that a
// table diskprep wrote whole is recognised rather than refused. It reads
// through the planner's host, so unit tests of planning read a fake. A
// device that cannot be opened or is not the size the facts say (facts of another
// machine, under --root) adds nothing: the facts stand as they are.
func (pl Planner) liveFacts(d *hwinfo.Disk) (*hwinfo.Disk, damage) {
	f, err := pl.HostOrLive().OpenDevice(diskPath(d), false)
	if err != nil {
		return d, damage{}
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil || size != d.SizeBytes {
		return d, damage{}
	}
	if len(d.Partitions) > 0 {
		d = fillFromBytes(f, d)
	}
	dmg := readDamage(f, int64(size), d.LogicalSectorBytes, d.Partitions)
	if d.PartitionTable != "gpt" || len(d.Partitions) > 0 || dmg.table != "" {
		return d, dmg
	}
	t, err := readTable(f, int64(size), d.LogicalSectorBytes)
	if err != nil || t == nil || t.Type != "gpt" || len(t.Partitions) == 0 {
		return d, dmg
	}
	c := *d
	for _, tp := range t.Partitions {
		name := PartitionName(d.Name, tp.Number)
		p := hwinfo.Partition{
			Name: name, Path: "/dev/" + name, Number: tp.Number,
			StartBytes: tp.StartLBA * d.LogicalSectorBytes,
			SizeBytes:  (tp.EndLBA - tp.StartLBA + 1) * d.LogicalSectorBytes,
			PartLabel:  tp.Name, PartType: tp.TypeGUID, PartUUID: tp.GUID,
		}
		sigs, err := ProbeSignatures(io.NewSectionReader(f, int64(p.StartBytes), int64(p.SizeBytes)), int64(p.SizeBytes))
		if err != nil {
			return d, dmg
		}
		for _, s := range sigs {
			if s.Usage != "partition_table" {
				p.FSType, p.FSLabel, p.FSUUID = s.Type, s.Label, s.UUID
				break
			}
		}
		c.Partitions = append(c.Partitions, p)
	}
	return &c, readDamage(f, int64(size), d.LogicalSectorBytes, c.Partitions)
}

// fillFromBytes gives a registered partition that the facts say holds
// nothing the signature its bytes hold. The facts come from udev's
// database, which misses a signature written while udev was busy with the
// partition's previous event (its inotify watch is off meanwhile): a
// prepare killed right after mkswap, which followed blkdiscard on the same
// partition, left the swap area unknown to udev for good, and the rerun
// planned mkswap again and refused the signature it found. Only what the
// facts lack is filled: a signature they name stays, even one the bytes no
// longer show (udev may know a type the prober does not).
func fillFromBytes(f io.ReaderAt, d *hwinfo.Disk) *hwinfo.Disk {
	var c *hwinfo.Disk
	for i, p := range d.Partitions {
		if p.FSType != "" || p.SizeBytes == 0 {
			continue
		}
		sigs, err := ProbeSignatures(io.NewSectionReader(f, int64(p.StartBytes), int64(p.SizeBytes)), int64(p.SizeBytes))
		if err != nil {
			continue
		}
		for _, s := range sigs {
			if s.Usage == "partition_table" {
				continue
			}
			if c == nil {
				cp := *d
				cp.Partitions = append([]hwinfo.Partition(nil), d.Partitions...)
				c = &cp
			}
			c.Partitions[i].FSType, c.Partitions[i].FSLabel, c.Partitions[i].FSUUID = s.Type, s.Label, s.UUID
			break
		}
	}
	if c == nil {
		return d
	}
	return c
}
