package engine

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/hwinfo"
)

// DeviceOf maps a file or directory to the block device holding it
// (st_dev: a partition when the filesystem is on one), or a block device
// node to itself. Filesystems without a block device (tmpfs, overlay,
// btrfs subvolumes' anonymous devices) have major 0 and give an error.
func DeviceOf(path string) (major, minor uint32, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	dev := st.Dev
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		dev = st.Rdev
	}
	major, minor = unix.Major(dev), unix.Minor(dev)
	if major == 0 {
		return 0, 0, fmt.Errorf("%s is on no block device (device %d:%d)", path, major, minor)
	}
	return major, minor, nil
}

// DiskStats is one /proc/diskstats line. Sectors are 512-byte units
// whatever the device's sector size.
type DiskStats struct {
	ReadIOs, ReadSectors, ReadTicksMs    uint64
	WriteIOs, WriteSectors, WriteTicksMs uint64
	InFlight, IOTicksMs, WeightedMs      uint64
}

// ReadDiskStats reads the counters of device major:minor from roots'
// proc/diskstats.
func ReadDiskStats(roots hwinfo.Roots, major, minor uint32) (DiskStats, error) {
	path := roots.ProcPath("diskstats")
	f, err := os.Open(path)
	if err != nil {
		return DiskStats{}, fmt.Errorf("read diskstats: %w", err)
	}
	defer f.Close()
	want := [2]string{strconv.FormatUint(uint64(major), 10), strconv.FormatUint(uint64(minor), 10)}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 14 || fields[0] != want[0] || fields[1] != want[1] {
			continue
		}
		var v [11]uint64
		for i := range v {
			v[i], err = strconv.ParseUint(fields[3+i], 10, 64)
			if err != nil {
				return DiskStats{}, fmt.Errorf("parse %s line for %d:%d: %w", path, major, minor, err)
			}
		}
		return DiskStats{
			ReadIOs: v[0], ReadSectors: v[2], ReadTicksMs: v[3],
			WriteIOs: v[4], WriteSectors: v[6], WriteTicksMs: v[7],
			InFlight: v[8], IOTicksMs: v[9], WeightedMs: v[10],
		}, nil
	}
	if err := sc.Err(); err != nil {
		return DiskStats{}, fmt.Errorf("read %s: %w", path, err)
	}
	return DiskStats{}, fmt.Errorf("device %d:%d not in %s", major, minor, path)
}

// DiskDelta is what a device did between two DiskStats readings.
type DiskDelta struct {
	ReadIOs, WriteIOs     uint64
	ReadBytes, WriteBytes uint64
	IOTicks               time.Duration // time the device had I/O in flight
	Weighted              time.Duration // in-flight time summed over all I/Os
}

// Sub returns after - before.
func (after DiskStats) Sub(before DiskStats) DiskDelta {
	return DiskDelta{
		ReadIOs:    after.ReadIOs - before.ReadIOs,
		WriteIOs:   after.WriteIOs - before.WriteIOs,
		ReadBytes:  (after.ReadSectors - before.ReadSectors) * 512,
		WriteBytes: (after.WriteSectors - before.WriteSectors) * 512,
		IOTicks:    time.Duration(after.IOTicksMs-before.IOTicksMs) * time.Millisecond,
		Weighted:   time.Duration(after.WeightedMs-before.WeightedMs) * time.Millisecond,
	}
}

// Utilization is the percent of elapsed during which the device was busy
// (iostat's %util), capped at 100.
func (d DiskDelta) Utilization(elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return min(100, 100*float64(d.IOTicks)/float64(elapsed))
}

// AvgQueue is the average number of I/Os in flight over elapsed (iostat's
// aqu-sz).
func (d DiskDelta) AvgQueue(elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(d.Weighted) / float64(elapsed)
}
