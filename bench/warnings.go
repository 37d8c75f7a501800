package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// MinRandomBlocks is the fewest distinct block offsets a random workload
// should have: below it the "random" pattern revisits a handful of places.
const MinRandomBlocks = 1000

// MinRuntime is the shortest time-based run whose mean means something.
const MinRuntime = 3 * time.Second

// environment is what the warnings need to know about the host and target,
// gathered once before the run so the checks stay pure.
type environment struct {
	RAMBytes     uint64
	FSType       string
	MountOptions string
	// DedupDevice names why the device may deduplicate/compress below the
	// filesystem (a VDO volume), "" when not.
	DedupDevice string
	Governors   map[string]int // scaling_governor -> number of CPUs
	VirtualDisk bool
	VirtualBy   string
	Disk        string
	// Cache is the cached volume under the target, nil when there is none.
	Cache *hwinfo.CachedVolume
}

// workloadWarnings are the problems of one workload that are known before it runs.
func workloadWarnings(w workload.Workload, env environment) []string {
	var out []string
	if !w.Direct && env.RAMBytes > 0 && w.SizeBytes < env.RAMBytes {
		out = append(out, fmt.Sprintf("%s: data set %s is smaller than RAM (%s) and O_DIRECT is off: reads may come from the page cache, not the disk",
			w.Name, units.FormatSize(w.SizeBytes), units.FormatSize(env.RAMBytes)))
	}
	if w.Engine == "sync" && w.IODepth > 1 {
		out = append(out, fmt.Sprintf("%s: iodepth %d with the sync engine: each job has one I/O in flight, the depth has no effect", w.Name, w.IODepth))
	}
	if w.Random() && w.BlockBytes > 0 && w.SizeBytes/w.BlockBytes < MinRandomBlocks {
		n := w.SizeBytes / w.BlockBytes
		out = append(out, fmt.Sprintf("%s: bs=%s size=%s gives %d offsets: not random I/O (fewer than %d distinct blocks)",
			w.Name, units.FormatSizeShort(w.BlockBytes), units.FormatSizeShort(w.SizeBytes), n, MinRandomBlocks))
	}
	if w.Runtime > 0 && w.Runtime < MinRuntime {
		out = append(out, fmt.Sprintf("%s: runtime %s is under %s: figures are noisy", w.Name, w.Runtime, MinRuntime))
	}
	if c := env.Cache; c != nil && c.Kind == hwinfo.CacheKindBcache && c.SequentialCutoffBytes != nil {
		// bcache sends a task's sequential stream past the cutoff to the
		// backing device (check_should_bypass), reads and writes alike.
		if cut := *c.SequentialCutoffBytes; cut > 0 && !w.Random() && w.SizeBytes > cut {
			out = append(out, fmt.Sprintf("%s: %s's sequential_cutoff is %s: sequential I/O past it bypasses the cache, so this measures the backing disk "+
				"(echo 0 > /sys/block/%s/bcache/sequential_cutoff caches it)", w.Name, c.Device, units.FormatSize(cut), c.Device))
		}
	}
	return out
}

// repetitionWarnings are what only the run itself reveals.
func repetitionWarnings(w workload.Workload, r record.Repetition, env environment) []string {
	var out []string
	if r.Engine == "sync" && w.IODepth > 1 && w.Engine != "sync" {
		out = append(out, fmt.Sprintf("%s: iodepth %d but the sync engine ran (io_uring unavailable): each job has one I/O in flight", w.Name, w.IODepth))
	}
	if w.Direct && !r.Direct && env.RAMBytes > 0 && w.SizeBytes < env.RAMBytes {
		out = append(out, fmt.Sprintf("%s: O_DIRECT was refused and the data set %s is smaller than RAM: reads may come from the page cache",
			w.Name, units.FormatSize(w.SizeBytes)))
	}
	if why := cacheFillWarning(w, r, env.Cache); why != "" {
		out = append(out, why)
	}
	return out
}

// cacheFillWarning says when a time-based run on a cached volume moved
// less than the cache could take of its working set: the cache was still
// filling when it ended (a warm phase shorter than the fill time measures
// a cache half cold), with how long filling takes at the run's own rate.
func cacheFillWarning(w workload.Workload, r record.Repetition, c *hwinfo.CachedVolume) string {
	if c == nil || w.Runtime == 0 || r.ElapsedMS <= 0 {
		return ""
	}
	var moved uint64
	for _, d := range []*record.DirResult{r.Read, r.Write} {
		if d != nil {
			moved += d.IOBytes
		}
	}
	fill := w.SizeBytes
	if c.CacheBytes > 0 {
		fill = min(fill, c.CacheBytes)
	}
	if moved == 0 || moved >= fill {
		return ""
	}
	rate := float64(moved) / (r.ElapsedMS / 1000)
	need := time.Duration(float64(fill) / rate * float64(time.Second)).Round(100 * time.Millisecond)
	return fmt.Sprintf("%s: moved %s in %s, less than the %s of its working set the cache (%s, %s) can hold: the cache was still filling; "+
		"at this rate filling it takes %s, so run or warm it at least that long", w.Name, units.FormatSize(moved),
		time.Duration(r.ElapsedMS*float64(time.Millisecond)).Round(100*time.Millisecond), units.FormatSize(fill), c.Device, c.Kind, need)
}

// targetWarnings concern the whole run: filesystem, device, CPU clock.
func targetWarnings(env environment) []string {
	var out []string
	if why := compressingFS(env.FSType, env.MountOptions); why != "" {
		out = append(out, why+": written data may be compressed or deduplicated, write figures depend on the data")
	}
	switch env.FSType {
	case "tmpfs", "ramfs":
		out = append(out, env.FSType+" target: the data lives in RAM, figures measure memory, not a disk")
	case "nfs", "nfs4", "cifs", "smb3", "9p", "virtiofs", "fuse.sshfs", "ceph", "glusterfs":
		out = append(out, env.FSType+" target: a network or host-shared filesystem, figures include the transport and the server")
	}
	if env.DedupDevice != "" {
		out = append(out, env.DedupDevice+": written data may be compressed or deduplicated below the filesystem")
	}
	var slow []string
	total := 0
	for g, n := range env.Governors {
		total += n
		if g != "performance" {
			slow = append(slow, fmt.Sprintf("%s on %d", g, n))
		}
	}
	if len(slow) > 0 {
		sort.Strings(slow)
		out = append(out, fmt.Sprintf("CPU frequency governor is %s of %d CPUs, not performance: clock scaling adds variance", strings.Join(slow, ", "), total))
	}
	if env.VirtualDisk {
		by := env.VirtualBy
		if by == "" {
			by = "a hypervisor"
		}
		out = append(out, fmt.Sprintf("target disk %s is a virtual disk emulated by %s: figures include the hypervisor's storage stack", env.Disk, by))
	}
	return out
}

// compressingFS says why a filesystem may compress or deduplicate written
// data, "" when it does not.
func compressingFS(fstype, opts string) string {
	hasOpt := func(prefixes ...string) string {
		for _, o := range strings.Split(opts, ",") {
			for _, p := range prefixes {
				if o == p || strings.HasPrefix(o, p+"=") || strings.HasPrefix(o, p+":") {
					return o
				}
			}
		}
		return ""
	}
	switch fstype {
	case "zfs":
		return "zfs filesystem (compression and dedup are dataset properties)"
	case "btrfs":
		if o := hasOpt("compress", "compress-force"); o != "" {
			return "btrfs mounted with " + o
		}
	case "f2fs":
		if o := hasOpt("compress_algorithm"); o != "" {
			return "f2fs mounted with " + o
		}
	case "bcachefs":
		if o := hasOpt("compression", "background_compression"); o != "" {
			return "bcachefs mounted with " + o
		}
	}
	return ""
}

// readGovernors counts CPUs per scaling_governor in roots' sysfs. A host
// without cpufreq (most VMs) has none, and gets no warning.
func readGovernors(roots hwinfo.Roots) map[string]int {
	paths, _ := filepath.Glob(roots.SysPath("devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
	out := map[string]int{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if g := strings.TrimSpace(string(b)); g != "" {
			out[g]++
		}
	}
	return out
}

// dedupDevice reports a VDO volume under dev (a dm device name such as
// dm-3), directly or through the devices it is stacked on: VDO deduplicates
// and compresses every block written to it.
func dedupDevice(roots hwinfo.Roots, dev string) string {
	return dedupDeviceDepth(roots, dev, 0)
}

func dedupDeviceDepth(roots hwinfo.Roots, dev string, depth int) string {
	if !strings.HasPrefix(dev, "dm-") || depth > 8 {
		return ""
	}
	sys := roots.SysPath("block", dev)
	name, _ := os.ReadFile(filepath.Join(sys, "dm/name"))
	uuid, _ := os.ReadFile(filepath.Join(sys, "dm/uuid"))
	n, u := strings.TrimSpace(string(name)), strings.TrimSpace(string(uuid))
	// LVM-VDO pools are named <vg>-<pool>-vpool; stand-alone VDO volumes have
	// a uuid starting with VDO-. The kvdo module being loaded says nothing
	// about this device, so it is not enough.
	if strings.HasPrefix(u, "VDO-") || strings.HasSuffix(n, "-vpool") {
		return fmt.Sprintf("target is on device-mapper volume %s (%s), a VDO volume", dev, n)
	}
	slaves, _ := os.ReadDir(filepath.Join(sys, "slaves"))
	for _, s := range slaves {
		if why := dedupDeviceDepth(roots, s.Name(), depth+1); why != "" {
			return why
		}
	}
	return ""
}

// agreementWarning flags a run whose device traffic does not match what the
// engine counted, beyond what the edges of the measured window explain: the
// diskstats bracket includes the ramp and the I/Os in flight when the
// window opens and closes (up to jobs x iodepth x bs each), the engine's
// count does not. What remains is a cache, compression, or another process.
func agreementWarning(w workload.Workload, r record.Repetition) string {
	d := r.Device
	if d == nil || d.AgreementPercent == nil {
		return ""
	}
	var engineBytes uint64
	if r.Read != nil {
		engineBytes += r.Read.IOBytes
	}
	if r.Write != nil {
		engineBytes += r.Write.IOBytes
	}
	device := float64(d.ReadBytes + d.WriteBytes)
	slack := 2*float64(w.Jobs)*float64(w.IODepth)*float64(w.BlockBytes) + 0.05*float64(engineBytes)
	if w.Ramp > 0 && r.ElapsedMS > 0 {
		// The ramp moves about as much per second as the window does.
		slack += float64(engineBytes) * (float64(w.Ramp.Milliseconds()) / r.ElapsedMS)
	}
	if math.Abs(device-float64(engineBytes)) <= slack {
		return ""
	}
	return fmt.Sprintf("%s: the device moved %.0f%% of the bytes the engine counted (%s vs %s): a cache, compression or other I/O on the device is in play",
		w.Name, *d.AgreementPercent, units.FormatSize(uint64(device)), units.FormatSize(engineBytes))
}
