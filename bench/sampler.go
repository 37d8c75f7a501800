package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
)

// DefaultSampleInterval is how often the host and the device are sampled
// while a workload runs.
const DefaultSampleInterval = time.Second

// sampler reads the host's CPU and memory counters and the target
// device's block counters every interval while the engine runs, and turns
// each pair of readings into a record sample. Reading fails quietly: a
// host without /proc/stat (a container's odd procfs) gives no host
// samples, a target without a block device no device samples.
type sampler struct {
	roots    hwinfo.Roots
	majmin   string // "" when the target has no block device
	interval time.Duration

	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	host []record.HostSample
	dev  []record.DeviceSample
	// first and last are the readings at the start and at the stop.
	first, last snapshot
}

// snapshot is one reading of every counter.
type snapshot struct {
	at    time.Time
	cpu   hwinfo.CPUTimes
	cpuOK bool
	mem   hwinfo.MemInfo
	memOK bool
	blk   hwinfo.BlockStat
	blkOK bool
}

func (s *sampler) read() snapshot {
	sn := snapshot{at: time.Now()}
	var err error
	sn.cpu, err = s.roots.CPUTimes()
	sn.cpuOK = err == nil
	sn.mem, err = s.roots.MemInfo()
	sn.memOK = err == nil
	if s.majmin != "" {
		sn.blk, err = s.roots.BlockStat(s.majmin)
		sn.blkOK = err == nil
	}
	return sn
}

// startSampler begins sampling at once; finish stops it and returns the
// samples, the last one covering the part second since the previous.
func startSampler(roots hwinfo.Roots, t *target, interval time.Duration) *sampler {
	s := &sampler{roots: roots, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	if s.interval <= 0 {
		s.interval = DefaultSampleInterval
	}
	if t.haveDev {
		s.majmin = fmt.Sprintf("%d:%d", t.major, t.minor)
	}
	first := s.read()
	s.first = first
	go func() {
		defer close(s.done)
		tick := time.NewTicker(s.interval)
		defer tick.Stop()
		prev := first
		for {
			select {
			case <-s.stop:
				// The part second after the last tick, unless it is a
				// sliver whose rates would be noise.
				cur := s.read()
				if cur.at.Sub(prev.at) >= s.interval/5 {
					s.add(first, prev, cur)
				}
				s.mu.Lock()
				s.last = cur
				s.mu.Unlock()
				return
			case <-tick.C:
				cur := s.read()
				s.add(first, prev, cur)
				prev = cur
			}
		}
	}()
	return s
}

func (s *sampler) add(first, prev, cur snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := cur.at.Sub(first.at)
	if prev.cpuOK && cur.cpuOK && cur.memOK {
		s.host = append(s.host, hostSample(prev.cpu, cur.cpu, cur.mem, at))
	}
	if prev.blkOK && cur.blkOK {
		s.dev = append(s.dev, deviceSample(prev.blk, cur.blk, cur.at.Sub(prev.at), at))
	}
}

func (s *sampler) finish() ([]record.HostSample, []record.DeviceSample) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host, s.dev
}

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 a second on
// every architecture Linux runs diskprep on.
const userHZ = 100

// cpuNSPerIO is the host's busy CPU time per I/O the device completed
// between the first and the last reading, in ns; 0 when either counter
// is missing or no I/O completed. Call it after finish.
func (s *sampler) cpuNSPerIO() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, b := s.first, s.last
	if !a.cpuOK || !b.cpuOK || !a.blkOK || !b.blkOK {
		return 0
	}
	busy := func(c hwinfo.CPUTimes) uint64 { return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal }
	ios := b.blk.ReadIOs + b.blk.WriteIOs - a.blk.ReadIOs - a.blk.WriteIOs
	if busy(b.cpu) < busy(a.cpu) || b.blk.ReadIOs+b.blk.WriteIOs <= a.blk.ReadIOs+a.blk.WriteIOs {
		return 0
	}
	return float64(busy(b.cpu)-busy(a.cpu)) * (1e9 / userHZ) / float64(ios)
}

// hostSample is the CPU split between two /proc/stat readings, in percent
// of all CPUs' time, with the memory of the second.
func hostSample(prev, cur hwinfo.CPUTimes, mem hwinfo.MemInfo, at time.Duration) record.HostSample {
	s := record.HostSample{TimeMS: ms(at), MemUsedBytes: mem.UsedBytes(), PageCacheBytes: mem.PageCacheBytes()}
	// A counter can go back (iowait and idle do on tickless kernels, all
	// of them on CPU hot-unplug): it counts as no time, in the parts and
	// in the total alike. Taking the totals' difference instead let the
	// busy share pass 100% whenever iowait went back.
	delta := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	sum := delta(cur.User+cur.Nice, prev.User+prev.Nice) + delta(cur.System+cur.IRQ+cur.SoftIRQ, prev.System+prev.IRQ+prev.SoftIRQ) +
		delta(cur.Idle, prev.Idle) + delta(cur.IOWait, prev.IOWait) + delta(cur.Steal, prev.Steal)
	if sum == 0 {
		return s
	}
	total := float64(sum)
	pct := func(a, b uint64) float64 { return float64(delta(a, b)) / total * 100 }
	s.CPUUserPct = pct(cur.User+cur.Nice, prev.User+prev.Nice)
	s.CPUSystemPct = pct(cur.System+cur.IRQ+cur.SoftIRQ, prev.System+prev.IRQ+prev.SoftIRQ)
	s.CPUIOWaitPct = pct(cur.IOWait, prev.IOWait)
	s.CPUStealPct = pct(cur.Steal, prev.Steal)
	return s
}

// deviceSample is what the device did between two stat readings dt apart:
// iostat's r/s, w/s, rkB/s, wkB/s, aqu-sz, %util and await.
func deviceSample(prev, cur hwinfo.BlockStat, dt, at time.Duration) record.DeviceSample {
	s := record.DeviceSample{TimeMS: ms(at), InFlightAtEnd: cur.InFlight}
	sec := dt.Seconds()
	if sec <= 0 {
		return s
	}
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	rIOs, wIOs := d(cur.ReadIOs, prev.ReadIOs), d(cur.WriteIOs, prev.WriteIOs)
	rB, wB := d(cur.ReadSectors, prev.ReadSectors)*512, d(cur.WriteSectors, prev.WriteSectors)*512
	s.IOs, s.Bytes = rIOs+wIOs, rB+wB
	s.ReadIOPS, s.WriteIOPS = float64(rIOs)/sec, float64(wIOs)/sec
	s.ReadBytesPerS, s.WriteBytesPerS = float64(rB)/sec, float64(wB)/sec
	s.QueueDepth = float64(d(cur.QueueTicksMs, prev.QueueTicksMs)) / 1000 / sec
	s.UtilPercent = min(100, float64(d(cur.IOTicksMs, prev.IOTicksMs))/1000/sec*100)
	if n := rIOs + wIOs; n > 0 {
		s.AvgWaitMS = float64(d(cur.ReadTicksMs+cur.WriteTicksMs, prev.ReadTicksMs+prev.WriteTicksMs)) / float64(n)
	}
	return s
}
