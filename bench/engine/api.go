package engine

import (
	"context"
	"errors"
	"time"
)

var errNotYet = errors.New("engine: not implemented yet")

// Run executes the workload p. It returns ctx.Err() when ctx is cancelled
// (workers stop within a second), an error wrapping ErrParams for bad
// parameters, and other errors for I/O failures.
func Run(ctx context.Context, p Params) (*Result, error) { return nil, errNotYet }

// Layout makes path a regular file of at least size bytes whose contents are
// real data (incompressible random unless data says otherwise), written with
// large sequential O_DIRECT writes where possible and synced, so reads that
// follow hit allocated, non-zero blocks. Existing bytes are overwritten.
func Layout(ctx context.Context, path string, size int64, data DataPattern) error { return errNotYet }

// DeviceOf maps a file or directory to the block device holding it
// (st_dev), or a block device node to itself.
func DeviceOf(path string) (major, minor uint32, err error) { return 0, 0, errNotYet }

// DiskStats is one /proc/diskstats line; sectors are 512-byte units always.
type DiskStats struct {
	ReadIOs, ReadSectors, ReadTicksMs    uint64
	WriteIOs, WriteSectors, WriteTicksMs uint64
	InFlight, IOTicksMs, WeightedMs      uint64
}

// ReadDiskStats reads the counters of device major:minor from
// procRoot/diskstats (procRoot "" means /proc).
func ReadDiskStats(procRoot string, major, minor uint32) (DiskStats, error) {
	return DiskStats{}, errNotYet
}

// DiskDelta is what a device did between two DiskStats readings.
type DiskDelta struct {
	ReadIOs, WriteIOs     uint64
	ReadBytes, WriteBytes uint64
	IOTicks               time.Duration // time the device had I/O in flight
	Weighted              time.Duration // sum of in-flight time over all I/Os
}

// Sub returns after - before.
func (after DiskStats) Sub(before DiskStats) DiskDelta { return DiskDelta{} }

// Utilization is the percent of elapsed during which the device was busy.
func (d DiskDelta) Utilization(elapsed time.Duration) float64 { return 0 }

// AvgQueue is the average number of I/Os in flight over elapsed.
func (d DiskDelta) AvgQueue(elapsed time.Duration) float64 { return 0 }
