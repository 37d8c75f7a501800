package hosttest

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// sb is a superblock to write at off of a device.
type sb struct {
	off  int64
	data []byte
}

// superblock is the part of an xfs or ext4 superblock that the prober
// checks: enough for disk to read the file system, its label and UUID back.
func superblock(mkfs string, size uint64, label, uuid string) (sb, error) {
	u, err := hex.DecodeString(strings.ReplaceAll(uuid, "-", ""))
	if err != nil || len(u) != 16 {
		return sb{}, fmt.Errorf("bad uuid %q", uuid)
	}
	switch mkfs {
	case "mkfs.xfs":
		b := make([]byte, 512)
		copy(b, "XFSB")
		be := binary.BigEndian
		const blocksize, agcount = 4096, 4
		dblocks := size / blocksize
		be.PutUint32(b[4:], blocksize)
		be.PutUint64(b[8:], dblocks)
		copy(b[32:48], u)
		be.PutUint32(b[80:], 1)                           // rextsize
		be.PutUint32(b[84:], uint32((dblocks+3)/agcount)) // agblocks
		be.PutUint32(b[88:], agcount)
		be.PutUint16(b[102:], 512) // sectsize
		be.PutUint16(b[104:], 512) // inodesize
		copy(b[108:120], label)
		b[120], b[121], b[122], b[123] = 12, 9, 9, 3 // blocklog, sectlog, inodelog, inopblog
		b[127] = 25                                  // imax_pct
		return sb{off: 0, data: b}, nil
	case "mkfs.ext4":
		b := make([]byte, 1024)
		le := binary.LittleEndian
		le.PutUint16(b[56:], 0xef53)
		// 4 KiB blocks filling the device, all free (no "used" to show).
		le.PutUint32(b[4:], uint32(size/4096))
		le.PutUint32(b[12:], uint32(size/4096))
		le.PutUint32(b[24:], 2)
		le.PutUint32(b[92:], 0x0004)        // has_journal
		le.PutUint32(b[96:], 0x0002|0x0040) // filetype, extents: ext4
		copy(b[104:120], u)
		copy(b[120:136], label)
		return sb{off: 1024, data: b}, nil
	}
	return sb{}, fmt.Errorf("no superblock for %s", mkfs)
}

// Facts is what hwinfo.Read would say about the fake machine now: its
// disks (loop devices included) with their tables, partitions, file
// systems, mounts and holders. Use it as Deps.Refresh and to plan.
func (h *Host) Facts(context.Context) (*hwinfo.Host, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(false, "facts")
	return h.facts(), nil
}

// FactsNow is Facts without logging, for a test's own planning.
func (h *Host) FactsNow() *hwinfo.Host {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.facts()
}

func (h *Host) facts() *hwinfo.Host {
	out := &hwinfo.Host{Schema: hwinfo.Schema, Hostname: "fake"}
	var names []string
	for n, b := range h.devs {
		if st := h.stacks[n]; b.disk == nil && (st == nil || st.kind == "bcache") {
			// Arrays and logical volumes are listed under what they
			// stack on, as hwinfo does; a bcache device is used as a
			// disk is, and hwinfo lists it as one too.
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		b := h.devs[n]
		d := hwinfo.Disk{
			Name: b.name, Path: "/dev/" + b.name, SizeBytes: b.size, LogicalSectorBytes: b.sector, PhysicalSectorBytes: b.sector,
			Model: b.model, Serial: b.serial, WWN: b.wwn, LoopBackingFile: b.image, Holders: append(append([]hwinfo.Holder(nil), b.holders...), h.stackHolders(b)...),
			Mounts: h.mountsOf(b), Rotational: b.rotational, Swap: h.swaps[b.name],
		}
		if b.image != "" {
			d.Transport, d.Virtual = "loop", true
		}
		r := &reader{d: b}
		if t, err := probe.ReadTable(r, int64(b.size), int(b.sector)); err == nil && t != nil {
			d.PartitionTable, d.PartitionTableID = t.Type, t.ID
			var nums []int
			for num := range b.parts {
				nums = append(nums, num)
			}
			sort.Ints(nums)
			for _, num := range nums {
				p := b.parts[num]
				part := hwinfo.Partition{Name: p.name, Path: "/dev/" + p.name, Number: num, StartBytes: uint64(p.offset - b.offset), SizeBytes: p.size,
					Mounts: h.mountsOf(p), Holders: append(append([]hwinfo.Holder(nil), p.holders...), h.stackHolders(p)...), Swap: h.swaps[p.name]}
				for _, e := range t.Partitions {
					if e.Number == num {
						part.PartLabel, part.PartUUID, part.PartType = e.Name, e.PartUUID, e.TypeGUID
					}
				}
				part.FSType, part.FSLabel, part.FSUUID = fsOf(&reader{d: p}, p.size)
				if part.FSType == "crypto_LUKS" {
					part.Crypt = cryptOf(&reader{d: p}, p.size, part.Holders)
				}
				for _, m := range part.Mounts {
					if hwinfo.IsSystemMount(m.Point) {
						d.System = true
						d.SystemReasons = append(d.SystemReasons, m.Point+" on "+p.name)
					}
				}
				if h.swaps[p.name] {
					// hwinfo counts active swap as the running system.
					d.System = true
					d.SystemReasons = append(d.SystemReasons, "swap on "+p.name)
				}
				d.Partitions = append(d.Partitions, part)
			}
		} else {
			d.FSType, d.FSLabel, _ = fsOf(r, b.size)
		}
		for _, m := range d.Mounts {
			if hwinfo.IsSystemMount(m.Point) {
				d.System = true
				d.SystemReasons = append(d.SystemReasons, m.Point+" on "+b.name)
			}
		}
		out.Disks = append(out.Disks, d)
	}
	return out
}

func (h *Host) mountsOf(b *blockDev) []hwinfo.Mount {
	var out []hwinfo.Mount
	for _, m := range h.mounts {
		if m.dev == b {
			out = append(out, hwinfo.Mount{Point: m.point, FSType: m.fstype, Options: m.opts, Source: "/dev/" + b.name})
		}
	}
	return out
}

func fsOf(r io.ReaderAt, size uint64) (typ, label, uuid string) {
	sigs, _ := probe.Probe(r, int64(size))
	for _, s := range sigs {
		// What udev's ID_FS_TYPE says: file systems, swap areas and
		// stack members (bcache's too).
		if s.Usage == probe.UsageFilesystem || s.Usage == probe.UsageRAID || s.Type == "swap" || s.Type == "bcache" || s.Type == "crypto_LUKS" {
			return s.Type, s.Label, s.UUID
		}
	}
	return "", "", ""
}

// probeAll names every signature the prober finds on r.
func probeAll(r io.ReaderAt, size uint64) []string {
	sigs, _ := probe.Probe(r, int64(size))
	var out []string
	for _, s := range sigs {
		out = append(out, s.Type)
	}
	return out
}

// cryptOf is what hwinfo reads of a LUKS header.
func cryptOf(r io.ReaderAt, size uint64, holders []hwinfo.Holder) *hwinfo.Crypt {
	l, err := probe.ReadLUKS(r, int64(size))
	if err != nil {
		return nil
	}
	return hwinfo.CryptOf(l, holders)
}
