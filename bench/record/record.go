// Package record is the result record, the one JSON document a bench run
// leaves (schema diskprep/result/v1: record.go is the schema), its summary
// statistics over repetitions (stats.go), its warnings said once
// (warnings.go), and the results store of such records on disk (store.go).
// It measures nothing: bench makes records, bench/fio imports them, and
// bench/compare and bench/report read them.
package record

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// Schema names the JSON shape of a result record.
const Schema = "diskprep/result/v1"

// Record is one `diskprep bench` invocation: what ran, where, on what, and
// every measurement. Units are in the field names.
type Record struct {
	Schema      string    `json:"schema"`
	ID          string    `json:"id"`
	Label       string    `json:"label,omitempty"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	ToolVersion string    `json:"tool_version"`
	Set         string    `json:"set"`
	Repeat      int       `json:"repeat"`
	// RepeatAuto: --repeat auto, Repeat is then the most runs allowed and
	// each workload's RepeatStop says when and why it stopped.
	RepeatAuto bool `json:"repeat_auto,omitempty"`
	Partial    bool `json:"partial,omitempty"` // interrupted, kept with --keep-partial
	// Order is how the repetitions were taken beside other conditions':
	// OrderInterleaved for rounds merged by MergeRounds; empty is blocked.
	Order     string           `json:"order,omitempty"`
	Host      Host             `json:"host"`
	Target    Target           `json:"target"`
	Workloads []WorkloadResult `json:"workloads"`
	Warnings  []string         `json:"warnings,omitempty"`
	// Precondition is the device fill --precondition did before the
	// workloads (observe.go); nil when none was asked.
	Precondition *Precondition `json:"precondition,omitempty"`
	// Health is the target disk's SMART state before and after the run,
	// or a note saying why there is none (observe.go).
	Health *Health `json:"device_health,omitempty"`
	// StartAt is the start asked for (bench --start-at), on the clock of
	// whoever asked (the fleet's controller); nil when none was. The
	// run waited until StartAt plus Clock's offset by its own clock.
	StartAt *time.Time `json:"start_at,omitempty"`
	// ActualStart is when the measured run began (setup, preconditioning
	// and the wait for StartAt done), by this host's clock, to the
	// nanosecond: Start is the command's start, to the second. A fleet's
	// start skew is ActualStart less Clock's offset, host against host.
	ActualStart *time.Time `json:"actual_start,omitempty"`
	// Clock is this host's clock against the controller's when the run
	// began; nil in records from before it was recorded, and in imports.
	Clock *Clock `json:"clock,omitempty"`
}

// Clock sources: where a record's clock offset comes from.
const (
	// ClockController: measured by whoever ran bench (bench
	// --clock-offset, --clock-rtt), against its own clock: the fleet
	// playbook's timestamp round trips over SSH.
	ClockController = "controller"
	// ClockChrony: chronyd's estimate of this host's clock against NTP
	// time (chronyc tracking), which is the controller's when it is
	// synchronised to the same servers.
	ClockChrony = "chrony"
	// ClockUnknown: neither; Note says why.
	ClockUnknown = "unknown"
)

// Clock is a host's clock offset: the host's clock less the reference
// clock (positive: the host's clock is ahead), how well it is known, and
// where it comes from.
type Clock struct {
	Source string `json:"source"`
	// OffsetMS is the host's clock less the reference's, in ms; omitted
	// when unknown (0 is a measured offset).
	OffsetMS *float64 `json:"offset_ms,omitempty"`
	// RTTMS is the round trip of the sample the offset was taken from;
	// omitted when not given.
	RTTMS *float64 `json:"rtt_ms,omitempty"`
	// UncertaintyMS bounds the offset's error either way: half the round
	// trip for a controller's sample, chrony's root dispersion plus half
	// its root delay; omitted when not known.
	UncertaintyMS *float64 `json:"uncertainty_ms,omitempty"`
	// Reference is what the offset is against: "controller", or chrony's
	// reference (its NTP server's name or address).
	Reference string `json:"reference,omitempty"`
	// Note says why an offset is unknown, or what qualifies it.
	Note string `json:"note,omitempty"`
}

// Offset is the clock's offset as a duration; ok is false when unknown.
func (c *Clock) Offset() (d time.Duration, ok bool) {
	if c == nil || c.OffsetMS == nil {
		return 0, false
	}
	return time.Duration(*c.OffsetMS * float64(time.Millisecond)), true
}

// MS is d in milliseconds, for a Clock's fields.
func MS(d time.Duration) *float64 {
	v := float64(d) / float64(time.Millisecond)
	return &v
}

// Host is the hwinfo host identity without the disk list (the target's disk
// is in Target; the others say nothing about this run).
type Host struct {
	Hostname string                `json:"hostname"`
	OS       hwinfo.OS             `json:"os"`
	Kernel   string                `json:"kernel"`
	CPU      hwinfo.CPU            `json:"cpu"`
	Memory   hwinfo.Memory         `json:"memory"`
	Board    hwinfo.Board          `json:"board"`
	System   hwinfo.SystemProduct  `json:"system"`
	BIOS     hwinfo.BIOS           `json:"bios"`
	Virt     hwinfo.Virtualization `json:"virtualization"`
	// Warnings are the inventory's facts that could not be read.
	Warnings []string `json:"warnings,omitempty"`
}

// HostOf trims an inventory to the identity a record keeps.
func HostOf(h *hwinfo.Host) Host {
	if h == nil {
		return Host{}
	}
	return Host{
		Hostname: h.Hostname, OS: h.OS, Kernel: h.Kernel, CPU: h.CPU, Memory: h.Memory,
		Board: h.Board, System: h.System, BIOS: h.BIOS, Virt: h.Virt,
		Warnings: append([]string(nil), h.Warnings...),
	}
}

// Target identifies what was measured: the path, the block device under it,
// that device's disk, and the filesystem.
type Target struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"` // dir, file, device
	TestFile string `json:"test_file,omitempty"`
	// Device is the block device holding the data (sdb1, dm-0, loop3); Disk
	// the whole disk it belongs to (sdb), whose identity follows.
	Device              string `json:"device,omitempty"`
	Disk                string `json:"disk,omitempty"`
	Vendor              string `json:"vendor,omitempty"`
	Model               string `json:"model,omitempty"`
	Serial              string `json:"serial,omitempty"`
	Firmware            string `json:"firmware,omitempty"`
	WWN                 string `json:"wwn,omitempty"`
	Transport           string `json:"transport,omitempty"`
	Media               string `json:"media,omitempty"` // hdd, ssd, nvme
	Rotational          bool   `json:"rotational"`
	Virtual             bool   `json:"virtual"`
	VirtualBy           string `json:"virtual_by,omitempty"`
	SizeBytes           uint64 `json:"size_bytes,omitempty"` // of the disk
	LogicalSectorBytes  uint64 `json:"logical_sector_bytes,omitempty"`
	PhysicalSectorBytes uint64 `json:"physical_sector_bytes,omitempty"`
	FSType              string `json:"fs_type,omitempty"`
	MountPoint          string `json:"mount_point,omitempty"`
	MountOptions        string `json:"mount_options,omitempty"`
	MountSource         string `json:"mount_source,omitempty"`
	// Stack is what Device is built from, top first, down to the disks:
	// md arrays (kind md, type raid1 ...), LVM logical volumes (kind lvm,
	// name VG/LV, type linear ...), dm-crypt and other holders, each with
	// the devices it is on (hwinfo.Host.Stack); empty for a plain disk or
	// partition. StackText says it in one line: "xfs on md0 raid1 of
	// sdb+sdc", "ext4 on fast/scratch (dm-0) linear on nvme0n1p2",
	// "xfs on sdb1". It is set whenever the device is known, so a record
	// with StackText and no Stack was measured on a single disk, and one
	// without either predates these fields (or its device is unknown).
	Stack     []hwinfo.Layer `json:"stack,omitempty"`
	StackText string         `json:"stack_text,omitempty"`
	// Cache is the cached volume (lvmcache, writecache, bcache) Device is
	// or is built on, as the run began: kind, mode, origin and cache
	// devices, cache size, bcache's sequential cutoff and the kernel's
	// counters then. Each repetition's Cache has the counters around it.
	Cache *hwinfo.CachedVolume `json:"cache,omitempty"`
	// Encryption is the LUKS layer Device is or is built on, with what
	// the CPU does for it; nil when there is none.
	Encryption *Encryption `json:"encryption,omitempty"`
	// Prepared is the mkfs and mount recipe when diskprep prepared the
	// filesystem (read from its marker file or filled in by the command).
	Prepared *Prepared `json:"prepared,omitempty"`
}

// Target kinds.
const (
	KindDir    = "dir"
	KindFile   = "file"
	KindDevice = "device"
)

// PreparedMarker is the file `diskprep prepare` leaves in a filesystem's root.
const PreparedMarker = hwinfo.MarkerFile

// Prepared is how diskprep made the target's filesystem.
type Prepared struct {
	FSType       string   `json:"fs_type"`
	UUID         string   `json:"uuid,omitempty"`
	MkfsArgv     []string `json:"mkfs_argv,omitempty"`
	MkfsVersion  string   `json:"mkfs_version,omitempty"`
	MountOptions string   `json:"mount_options,omitempty"`
	PreparedAt   string   `json:"prepared_at,omitempty"`
}

// WorkloadResult is one workload: its parameters, every repetition and the
// summary over them.
type WorkloadResult struct {
	Params   workload.Workload     `json:"params"`
	Runs     []Repetition          `json:"runs"`
	Summary  map[string]DirSummary `json:"summary"` // "read", "write"
	Warnings []string              `json:"warnings,omitempty"`
	// RepeatStop says why a workload of --repeat auto stopped repeating:
	// its median's 95% interval was narrow enough, or it reached the most
	// runs allowed.
	RepeatStop string `json:"repeat_stop,omitempty"`
	// SteadyState is the verdict of --steady-state (SNIA PTS rounds,
	// observe.go); nil when it was not asked, which a comparison takes as
	// a fresh (not preconditioned) result.
	SteadyState *SteadyState `json:"steady_state,omitempty"`
	// EngineCPUNSPerIO is the engine's own cost, CPU time (user+sys) per
	// I/O, over the measured repetitions: what bounds the IOPS it can
	// measure, and its run-to-run spread what a difference must exceed to
	// be the device's. Nil when no repetition has both.
	EngineCPUNSPerIO *Stat `json:"engine_cpu_ns_per_io,omitempty"`
}

// Repetition is one run of a workload.
type Repetition struct {
	Index      int        `json:"repetition"` // 1-based
	Start      time.Time  `json:"start"`
	Engine     string     `json:"engine"` // the engine that ran: sync or io_uring
	Direct     bool       `json:"direct"` // O_DIRECT actually in effect
	AlignBytes int64      `json:"align_bytes,omitempty"`
	ElapsedMS  float64    `json:"elapsed_ms"` // measured window, ramp excluded
	Read       *DirResult `json:"read,omitempty"`
	Write      *DirResult `json:"write,omitempty"`
	CPUUserS   float64    `json:"cpu_user_s"`
	CPUSysS    float64    `json:"cpu_sys_s"`
	Device     *DeviceIO  `json:"device,omitempty"`
	Warnings   []string   `json:"warnings,omitempty"`
	// EngineCPUNSPerIO is (CPUUserS+CPUSysS) per I/O of this run, in ns.
	EngineCPUNSPerIO float64 `json:"engine_cpu_ns_per_io,omitempty"`
	// HostCPUNSPerIO is the whole host's busy CPU time (user, system,
	// interrupts, steal: every process and kernel thread, dm-crypt's
	// workers too, which the engine's own time leaves out) per I/O the
	// target device completed, over the engine call, in ns. 0 when the
	// host's or the device's counters were not read.
	HostCPUNSPerIO float64 `json:"host_cpu_ns_per_io,omitempty"`
	// HostSamples and DeviceSamples are the host's CPU and memory and the
	// target device's diskstats once per second over the whole engine
	// call (ramp included: TimeMS says where each falls), next to the
	// engine's own samples_per_s of the measured window (observe.go).
	HostSamples   []HostSample   `json:"host_samples_per_s,omitempty"`
	DeviceSamples []DeviceSample `json:"device_samples_per_s,omitempty"`
	// Cache is what the kernel's counters of the target's cached volume
	// (Target.Cache) said just before and just after this repetition's
	// engine call (ramp, layout excluded, included as the call is).
	Cache *CacheIO `json:"cache,omitempty"`
}

// CacheIO is a cached volume's counters around one repetition.
type CacheIO struct {
	Device string               `json:"device"`
	Before hwinfo.CacheCounters `json:"before"`
	After  hwinfo.CacheCounters `json:"after"`
	// HitRatio is hits over hits and misses between Before and After,
	// reads and (where the kernel counts them) writes; ReadHitRatio of
	// reads alone. Omitted when nothing was counted.
	HitRatio     *float64 `json:"hit_ratio,omitempty"`
	ReadHitRatio *float64 `json:"read_hit_ratio,omitempty"`
}

// NewCacheIO is the record of counters before and after.
func NewCacheIO(device string, before, after hwinfo.CacheCounters) *CacheIO {
	c := &CacheIO{Device: device, Before: before, After: after}
	d := after.Sub(before)
	if r, ok := d.HitRatio(); ok {
		c.HitRatio = &r
	}
	if r, ok := d.ReadHitRatio(); ok {
		c.ReadHitRatio = &r
	}
	return c
}

// DirResult is one direction of one repetition.
type DirResult struct {
	IOBytes     uint64   `json:"io_bytes"`
	IOs         uint64   `json:"ios"`
	IOPS        float64  `json:"iops"`
	BWBytesPerS float64  `json:"bw_bytes_per_s"`
	RuntimeMS   float64  `json:"runtime_ms"`
	LatNS       Latency  `json:"lat_ns"`
	Samples     []Sample `json:"samples_per_s"`
}

// Latency is the completion latency distribution in nanoseconds.
type Latency struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// Sample is one second of the measured window.
type Sample struct {
	IOs   uint64 `json:"ios"`
	Bytes uint64 `json:"bytes"`
}

// DeviceIO is what /proc/diskstats says the device did during the run, and
// how well that agrees with what the engine counted.
type DeviceIO struct {
	Name        string  `json:"name"`
	ReadBytes   uint64  `json:"read_bytes"`
	WriteBytes  uint64  `json:"write_bytes"`
	ReadIOs     uint64  `json:"read_ios"`
	WriteIOs    uint64  `json:"write_ios"`
	UtilPercent float64 `json:"util_percent"` // over the whole engine call, ramp included
	AvgQueue    float64 `json:"avg_queue"`
	// AgreementPercent is device bytes as a percentage of engine bytes
	// (read+write): about 100 with O_DIRECT on a plain device; far off when
	// a cache, the page cache or another process was involved. Omitted when
	// the engine moved nothing.
	AgreementPercent *float64 `json:"agreement_percent,omitempty"`
}

// DirSummary is the median, min and max over repetitions of one direction.
type DirSummary struct {
	Name        string `json:"name"` // row name: randread for fileserver's randrw read side
	IOPS        Stat   `json:"iops"`
	BWBytesPerS Stat   `json:"bw_bytes_per_s"`
	RuntimeMS   Stat   `json:"runtime_ms"`
	LatP50NS    Stat   `json:"lat_p50_ns"`
	LatP99NS    Stat   `json:"lat_p99_ns"`
	LatMeanNS   Stat   `json:"lat_mean_ns"`
}

// Stat is a summary over repetitions.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// NewID returns a record id that sorts by time: 20261130T061500Z-3fa9.
func NewID(t time.Time) string {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a clash is caught by WriteNew.
		b = [2]byte{byte(t.Nanosecond() >> 8), byte(t.Nanosecond())}
	}
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Encryption is a target's dm-crypt layer: its LUKS header, the CPU's AES
// instructions, and the cipher's speed in memory, which the disk's speed
// through the layer can be held against.
type Encryption struct {
	Mapper      string `json:"mapper"` // the dm name: sdb1_crypt
	LUKSVersion int    `json:"luks_version"`
	Cipher      string `json:"cipher"` // aes-xts-plain64
	KeyBits     int    `json:"key_bits"`
	SectorBytes int    `json:"sector_bytes"`
	// AES: the CPU has AES instructions (AES-NI); nil when not known.
	AES *bool `json:"aes,omitempty"`
	// CipherEncryptMiBps and CipherDecryptMiBps are `cryptsetup
	// benchmark`'s figures for this cipher and key size: the CPU alone,
	// in memory, no disk. 0 when not measured (CipherNote says why).
	CipherEncryptMiBps float64 `json:"cipher_encrypt_mib_per_s,omitempty"`
	CipherDecryptMiBps float64 `json:"cipher_decrypt_mib_per_s,omitempty"`
	CipherNote         string  `json:"cipher_note,omitempty"`
}
