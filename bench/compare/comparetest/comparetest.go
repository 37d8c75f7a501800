// Package comparetest builds synthetic result records for the tests of the
// comparison, the reports and the results commands, so none of them needs
// the I/O engine. Every figure follows from the inputs: a test knows the
// answer it expects.
package comparetest

import (
	"fmt"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// Opts describe one synthetic record.
type Opts struct {
	ID, Label string
	Start     time.Time // zero: 2026-11-30 06:00 UTC
	Host      string    // hostname, default "box1"
	Kernel    string    // default "5.14.0-427.el9.x86_64"
	CPU       string    // default "AMD EPYC 7302P 16-Core Processor"
	FS        string    // default "xfs"
	Disk      string    // disk model, default "Samsung SSD 870 EVO 1TB"
	Engine    string    // default "io_uring"
	Buffered  bool      // O_DIRECT not in effect
	Set       string    // default "quick"
	Workloads []Workload
}

// Workload is one synthetic workload: its shape and the MB/s (10^6 B/s) of
// each repetition. A randrw workload gets the same figures for both
// directions, reported as <name>-read and <name>-write.
type Workload struct {
	Name string
	RW   string // default read
	BS   uint64 // default 1 MiB
	MBps []float64
	// SlowFirstSecond makes the first per-second sample a quarter of the
	// rest: the first-write penalty a time-series chart must show.
	SlowFirstSecond bool
}

// Seconds is the measured window of every synthetic repetition.
const Seconds = 4

func def(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Record builds the record o describes, with summaries filled as bench does.
func Record(o Opts) *record.Record {
	start := o.Start
	if start.IsZero() {
		start = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	}
	id := def(o.ID, start.Format("20060102T150405Z")+"-0000")
	rec := &record.Record{
		Schema: record.Schema, ID: id, Label: o.Label, Start: start, End: start.Add(time.Minute),
		ToolVersion: "test", Set: def(o.Set, "quick"), Repeat: 1,
		Host: record.Host{
			Hostname: def(o.Host, "box1"),
			OS:       hwinfo.OS{ID: "rocky", Name: "Rocky Linux", Version: "9.4", PrettyName: "Rocky Linux 9.4 (Blue Onyx)"},
			Kernel:   def(o.Kernel, "5.14.0-427.el9.x86_64"),
			CPU:      hwinfo.CPU{Model: def(o.CPU, "AMD EPYC 7302P 16-Core Processor"), Cores: 16, Threads: 32, Sockets: 1},
			Memory:   hwinfo.Memory{TotalBytes: 64 << 30},
			Virt:     hwinfo.Virtualization{Hypervisor: "none", Container: "none"},
		},
		Target: record.Target{
			Path: "/mnt/data", Kind: "dir", Device: "sdb1", Disk: "sdb", Model: def(o.Disk, "Samsung SSD 870 EVO 1TB"),
			Transport: "sata", Media: "ssd", SizeBytes: 1000204886016, LogicalSectorBytes: 512, PhysicalSectorBytes: 512,
			FSType: def(o.FS, "xfs"), MountPoint: "/mnt/data", MountOptions: "rw,relatime",
		},
	}
	for _, w := range o.Workloads {
		if len(w.MBps) > rec.Repeat {
			rec.Repeat = len(w.MBps)
		}
		rec.Workloads = append(rec.Workloads, synthWorkload(o, w, start))
	}
	return rec
}

func synthWorkload(o Opts, w Workload, start time.Time) record.WorkloadResult {
	rw := def(w.RW, "read")
	bs := w.BS
	if bs == 0 {
		bs = 1 << 20
	}
	p := workload.Workload{
		Name: w.Name, RW: rw, BlockBytes: bs, SizeBytes: 256 << 20, Jobs: 1, IODepth: 1,
		Runtime: Seconds * time.Second, RWMixRead: 50, Direct: true, Engine: "auto", Data: "random",
	}
	wr := record.WorkloadResult{Params: p}
	for i, mbps := range w.MBps {
		rep := record.Repetition{
			Index: i + 1, Start: start.Add(time.Duration(i) * 10 * time.Second),
			Engine: def(o.Engine, "io_uring"), Direct: !o.Buffered, ElapsedMS: Seconds * 1000,
		}
		if p.Reads() {
			rep.Read = dir(mbps, bs, w.SlowFirstSecond)
		}
		if p.Writes() {
			rep.Write = dir(mbps, bs, w.SlowFirstSecond)
		}
		wr.Runs = append(wr.Runs, rep)
	}
	wr.Summary = map[string]record.DirSummary{}
	for _, d := range []string{"read", "write"} {
		var iops, bw, p50, p99, mean, rt []float64
		for _, r := range wr.Runs {
			x := r.Read
			if d == "write" {
				x = r.Write
			}
			if x == nil {
				continue
			}
			iops, bw, rt = append(iops, x.IOPS), append(bw, x.BWBytesPerS), append(rt, x.RuntimeMS)
			p50, p99, mean = append(p50, x.LatNS.P50), append(p99, x.LatNS.P99), append(mean, x.LatNS.Mean)
		}
		if len(iops) == 0 {
			continue
		}
		wr.Summary[d] = record.DirSummary{
			Name: p.RowName(d), IOPS: record.Summarize(iops), BWBytesPerS: record.Summarize(bw),
			RuntimeMS: record.Summarize(rt), LatP50NS: record.Summarize(p50), LatP99NS: record.Summarize(p99),
			LatMeanNS: record.Summarize(mean),
		}
	}
	return wr
}

// dir is one direction at mbps MB/s with queue depth 1: latency is the time
// one block takes at that rate, percentiles fixed multiples of it.
func dir(mbps float64, bs uint64, slowFirst bool) *record.DirResult {
	bw := mbps * 1e6
	lat := float64(bs) / bw * 1e9
	d := &record.DirResult{
		IOBytes: uint64(bw * Seconds), IOPS: bw / float64(bs), BWBytesPerS: bw, RuntimeMS: Seconds * 1000,
		LatNS: record.Latency{Min: lat / 2, Mean: lat * 1.1, P50: lat, P90: lat * 1.5, P99: lat * 3, P999: lat * 6, Max: lat * 20},
	}
	d.IOs = d.IOBytes / bs
	for s := range Seconds {
		b := bw
		if slowFirst && s == 0 {
			b = bw / 4
		}
		d.Samples = append(d.Samples, record.Sample{Bytes: uint64(b), IOs: uint64(b / float64(bs))})
	}
	return d
}

// Quick is a four-workload record of the quick set's shape with per
// repetition MB/s scaled by factor, and a small wobble so repetitions
// differ as real ones do.
func Quick(id, label, fs string, factor float64, repeats int, start time.Time) *record.Record {
	wobble := []float64{1.00, 1.01, 0.99, 1.015, 0.985, 1.005, 0.995}
	mk := func(name, rw string, bs uint64, base float64) Workload {
		w := Workload{Name: name, RW: rw, BS: bs, SlowFirstSecond: rw == "write"}
		for i := range repeats {
			w.MBps = append(w.MBps, base*factor*wobble[i%len(wobble)])
		}
		return w
	}
	return Record(Opts{ID: id, Label: label, FS: fs, Start: start, Workloads: []Workload{
		mk("seq1m-read", "read", 1<<20, 520),
		mk("seq1m-write", "write", 1<<20, 480),
		mk("rnd4k-read", "randread", 4<<10, 40),
		mk("rnd4k-write", "randwrite", 4<<10, 90),
	}})
}

// ID formats a synthetic record id for minute m of the test day.
func ID(m int) string { return fmt.Sprintf("20261130T06%02d00Z-%04x", m, m) }

// Identifying is a Quick record carrying every kind of identifying value
// (hostname, serial, WWN, UUIDs, a MAC, the real hostname behind
// --hostname), in the places they turn up: the input of the redaction
// tests.
func Identifying(id, host, serial string, start time.Time) *record.Record {
	rec := Quick(id, "on-"+host, "xfs", 1, 3, start)
	rec.Host.Hostname = host
	rec.Host.Warnings = []string{`host recorded as "` + host + `" (--hostname); it calls itself "realbox-77.corp.example"`}
	rec.Target.Path = "/dev/disk/by-id/ata-TOSHIBA_DT01ACA300_" + serial + "-part1"
	rec.Target.Serial = serial
	rec.Target.WWN = "0x5000039fe6d0a1b2"
	rec.Target.MountSource = "/dev/disk/by-uuid/1a2b3c4d-0000-4111-8222-333344445555"
	rec.Target.Prepared = &record.Prepared{
		FSType: "xfs", UUID: "9e8d7c6b-5a49-4838-a727-16051f4e3d2c",
		MkfsArgv: []string{"mkfs.xfs", "-f", "-m", "crc=1,uuid=9e8d7c6b-5a49-4838-a727-16051f4e3d2c", "-L", "data", "/var/tmp/" + host + "-disk.img"},
	}
	rec.Warnings = []string{"nic 52:54:00:ab:cd:ef seen", "image /srv/images/" + host + ".raw on " + host}
	return rec
}

// FleetHost is one host of a synthetic fleet run (Fleet): its disk, how
// fast it is against the fleet's typical host, and its clock.
type FleetHost struct {
	Name      string
	Disk      string // model, default "Samsung SSD 870 EVO 1TB"
	Transport string // default "sata"
	Factor    float64
	// OffsetMS is the host's clock offset as bench recorded it (source
	// controller); nil records an unknown clock.
	OffsetMS *float64
	// Late is how long after the synchronized start (by the controller's
	// clock) the host began measuring.
	Late time.Duration
}

// FleetStart is the synchronized start of Fleet's records.
var FleetStart = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// Fleet makes one quick-set record of 3 repetitions per host, all asked
// to start at FleetStart: each host began at FleetStart plus its Late by
// the controller's clock, so plus its offset by its own, as bench
// records it.
func Fleet(hosts []FleetHost) []*record.Record {
	var out []*record.Record
	for i, h := range hosts {
		start := FleetStart.Add(-time.Minute)
		rec := Quick(fmt.Sprintf("20261203T095900Z-%04x", i), "", "xfs", h.Factor, 3, start)
		rec.Host.Hostname = h.Name
		rec.Target.Model = def(h.Disk, rec.Target.Model)
		rec.Target.Transport = def(h.Transport, rec.Target.Transport)
		at := FleetStart
		began := FleetStart.Add(h.Late)
		rec.StartAt = &at
		if h.OffsetMS != nil {
			off := *h.OffsetMS
			began = began.Add(time.Duration(off * float64(time.Millisecond)))
			rtt := 2.0
			unc := rtt / 2
			rec.Clock = &record.Clock{Source: record.ClockController, OffsetMS: &off, RTTMS: &rtt, UncertaintyMS: &unc, Reference: "controller"}
		} else {
			rec.Clock = &record.Clock{Source: record.ClockUnknown, Note: "chronyc not found, and no --clock-offset given"}
		}
		rec.ActualStart = &began
		out = append(out, rec)
	}
	return out
}

// FleetOf is a fleet of n hosts, node-01 to node-NN, their speeds spread
// ±4% and their clocks up to ±40 ms off (measured), but for the hosts
// numbered in throttled (1-based), whose disks run at a tenth of the
// speed, as a throttled or spinning disk does.
func FleetOf(n int, throttled ...int) []FleetHost {
	var hs []FleetHost
	for i := 1; i <= n; i++ {
		off := float64((i*53)%81-40) + 0.25
		h := FleetHost{Name: fmt.Sprintf("node-%02d", i), Factor: 1 + float64((i*37)%9-4)/100, OffsetMS: &off,
			Late: time.Duration((i*17)%9) * time.Millisecond}
		for _, t := range throttled {
			if t == i {
				h.Factor, h.Disk, h.Transport = 0.1, "ST4000DM004-2CV104", "sata"
			}
		}
		hs = append(hs, h)
	}
	return hs
}
