package hwinfo

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The kernel's running counters a bench samples once per second while a
// workload runs: CPU time (/proc/stat), memory (/proc/meminfo) and one
// block device's I/O (/sys/dev/block/MAJ:MIN/stat). One parser each; the
// rates are the caller's, from two readings.

// CPUTimes is the aggregate "cpu" line of /proc/stat, in USER_HZ ticks
// summed over all CPUs.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Total is every tick counted (guest time is already inside user and nice).
func (c CPUTimes) Total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// ErrNoCPULine is a /proc/stat without its aggregate cpu line.
var ErrNoCPULine = errors.New("no aggregate cpu line")

// ParseCPUStat reads the aggregate cpu line of a /proc/stat content. Old
// kernels print fewer columns (no steal before 2.6.11): missing ones are 0.
func ParseCPUStat(data string) (CPUTimes, error) {
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return CPUTimes{}, fmt.Errorf("malformed cpu line %q", clip(line))
		}
		var v [8]uint64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("malformed cpu line %q", clip(line))
			}
			v[i] = n
		}
		return CPUTimes{User: v[0], Nice: v[1], System: v[2], Idle: v[3], IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]}, nil
	}
	return CPUTimes{}, ErrNoCPULine
}

// CPUTimes reads the live machine's aggregate CPU times.
func (r Roots) CPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile(r.ProcPath("stat"))
	if err != nil {
		return CPUTimes{}, err
	}
	return ParseCPUStat(string(b))
}

// MemInfo is the part of /proc/meminfo a run's memory use is told by, in
// bytes.
type MemInfo struct {
	TotalBytes, FreeBytes, AvailableBytes, BuffersBytes, CachedBytes uint64
	// HasAvailable: the kernel prints MemAvailable (3.14 and later).
	HasAvailable bool
}

// UsedBytes is memory in use as free(1) of procps-ng 4 counts it: total
// minus available; without MemAvailable, total minus free, buffers and
// cache.
func (m MemInfo) UsedBytes() uint64 {
	avail := m.AvailableBytes
	if !m.HasAvailable {
		avail = m.FreeBytes + m.BuffersBytes + m.CachedBytes
	}
	if avail > m.TotalBytes {
		return 0
	}
	return m.TotalBytes - avail
}

// PageCacheBytes is the file cache: Cached plus Buffers (block device
// cache), free(1)'s buff/cache without the reclaimable slab.
func (m MemInfo) PageCacheBytes() uint64 { return m.CachedBytes + m.BuffersBytes }

// ParseMemInfo reads a /proc/meminfo content, the one parser of that
// file. MemTotal is required (ErrNoMemTotal without it) and is not zero; a
// malformed line of a field it reads is an error naming it.
func ParseMemInfo(data string) (MemInfo, error) {
	var m MemInfo
	fields := map[string]*uint64{
		"MemTotal": &m.TotalBytes, "MemFree": &m.FreeBytes, "MemAvailable": &m.AvailableBytes,
		"Buffers": &m.BuffersBytes, "Cached": &m.CachedBytes,
	}
	seenTotal := false
	for _, line := range strings.Split(data, "\n") {
		key, rest, ok := strings.Cut(line, ":")
		dst := fields[key]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(rest)
		n, err := uint64(0), error(nil)
		if len(f) == 2 && f[1] == "kB" {
			n, err = strconv.ParseUint(f[0], 10, 64)
		} else {
			err = errors.New("want N kB")
		}
		if err == nil && n == 0 && key == "MemTotal" {
			err = errors.New("no memory")
		}
		if err != nil {
			return MemInfo{}, fmt.Errorf("malformed %s line %q", key, clip(line))
		}
		*dst = n * 1024
		seenTotal = seenTotal || key == "MemTotal"
		m.HasAvailable = m.HasAvailable || key == "MemAvailable"
	}
	if !seenTotal {
		return MemInfo{}, ErrNoMemTotal
	}
	return m, nil
}

// MemInfo reads the live machine's memory counters.
func (r Roots) MemInfo() (MemInfo, error) {
	b, err := os.ReadFile(r.ProcPath("meminfo"))
	if err != nil {
		return MemInfo{}, err
	}
	return ParseMemInfo(string(b))
}

// BlockStat is a block device's stat file (Documentation/block/stat.rst):
// the same counters as its /proc/diskstats line. Sectors are 512 bytes
// whatever the device's sector size; ticks are milliseconds.
type BlockStat struct {
	ReadIOs, ReadMerges, ReadSectors, ReadTicksMs     uint64
	WriteIOs, WriteMerges, WriteSectors, WriteTicksMs uint64
	InFlight, IOTicksMs, QueueTicksMs                 uint64
}

// ParseBlockStat reads a /sys/block/X/stat content: 11 fields up to
// Linux 4.18, 15 with discards, 17 with flushes; the first 11 are these.
func ParseBlockStat(data string) (BlockStat, error) {
	f := strings.Fields(data)
	if len(f) < 11 {
		return BlockStat{}, fmt.Errorf("block stat has %d fields, want at least 11: %q", len(f), clip(data))
	}
	var v [11]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return BlockStat{}, fmt.Errorf("block stat field %d %q is not a count", i+1, clip(f[i]))
		}
		v[i] = n
	}
	return BlockStat{
		ReadIOs: v[0], ReadMerges: v[1], ReadSectors: v[2], ReadTicksMs: v[3],
		WriteIOs: v[4], WriteMerges: v[5], WriteSectors: v[6], WriteTicksMs: v[7],
		InFlight: v[8], IOTicksMs: v[9], QueueTicksMs: v[10],
	}, nil
}

// BlockStat reads the counters of block device majmin ("7:3") from
// sys/dev/block/MAJ:MIN/stat, which partitions and device-mapper devices
// have too.
func (r Roots) BlockStat(majmin string) (BlockStat, error) {
	b, err := os.ReadFile(r.SysPath("dev", "block", majmin, "stat"))
	if err != nil {
		return BlockStat{}, err
	}
	return ParseBlockStat(string(b))
}
