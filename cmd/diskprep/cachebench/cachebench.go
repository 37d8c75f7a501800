// Package cachebench is the orchestration of `diskprep cachebench`: what an
// SSD cache in front of an HDD buys, measured on the same disks in one go.
// It builds the cached volume and measures it per working set cold (right
// after it was built), warm (after a warm-up pass over the working set: by writes where
// the cache kind only takes writes in, by reads where reads promote) and
// steady (the runs after), with working sets below, near and above the
// cache's size and a skewed (zipf) one, reads the kernel's hit counters
// around every run, times the flush of a writeback cache, releases it,
// and benchmarks the SSD alone (before the build) and the HDD alone (after
// the release) on their raw devices. What it built is released whatever
// happens. Like fscompare it composes disk and bench
// through the functions of Deps and imports neither.
//
// Every working set has a region of its own on the cached volume, so each
// one's cold phase reads blocks the cache never saw. The HDD alone is read
// at the same offsets, the SSD alone from its start, written once first
// (an SSD reads never-written blocks without touching flash).
package cachebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/redact"
	"github.com/diskprep/diskprep/internal/units"
)

// Schema names the JSON shape of a cachebench result.
const Schema = "diskprep/cachebench/v1"

// Options are one cache benchmark, already checked by the command.
type Options struct {
	Origin      string // the slow disk (path)
	CacheDevice string // the fast disk or partition (path)
	Kind, Mode  string // as built: lvmcache|writecache|bcache, writethrough|writeback
	// NearBytes is the "near" working set: about the cache's size (0: the
	// built cache's own size). Below is half of it, above twice.
	NearBytes uint64
	// Runtime of each measured run; Repeat runs of the warm and steady
	// phases and of the HDD and SSD alone (cold is one run: only the first
	// is cold).
	Runtime time.Duration
	Repeat  int
	// BlockBytes and IODepth of the random reads measured (4k, 4).
	BlockBytes uint64
	IODepth    int
	Progress   io.Writer // "cachebench: ..." lines; nil for none
}

// Deps are the ties to the machine.
type Deps struct {
	Facts func(ctx context.Context) (*hwinfo.Host, error)
	// Check plans the cache against host and refuses what prepare would
	// refuse (a disk in use, the system disk), before anything is touched.
	Check func(ctx context.Context, host *hwinfo.Host) error
	// Build builds the cached volume and returns its device path.
	Build func(ctx context.Context, host *hwinfo.Host) (device string, err error)
	// Release takes the cache apart (flushing it first) and wipes both
	// disks; cleanup is true after a failure or an interruption.
	Release func(ctx context.Context, cleanup bool) error
	// Bench runs one benchmark and returns its record, unsaved.
	Bench func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error)
	// Save stores the records of the whole run, once it has succeeded:
	// a run that fails or is interrupted at any step stores none of its
	// records, as it leaves nothing of its cache on the disks.
	Save func(recs []*record.Record) error
	// Resolve names the kernel device of a path (/dev/slow/data -> dm-3).
	Resolve func(path string) (string, error)
	// FlushWriteCache writes a dm-writecache's dirty blocks back and frees
	// them (device is its /dev/mapper path); needed for the writecache
	// kind only.
	FlushWriteCache func(ctx context.Context, device string) error
	Now             func() time.Time
}

// Result is what cachebench found.
type Result struct {
	Schema       string       `json:"schema"`
	Kind         string       `json:"kind"`
	Mode         string       `json:"mode"`
	Origin       string       `json:"origin"`
	CacheDevice  string       `json:"cache_device"`
	CachedVolume string       `json:"cached_volume"`
	CacheBytes   uint64       `json:"cache_bytes"`
	WorkingSets  []WorkingSet `json:"working_sets"`
	// Flush is the writeback cache's flush at release: dirty bytes then
	// and how long the release took with it. Nil for writethrough.
	Flush    *Flush   `json:"flush,omitempty"`
	Records  []string `json:"records"`
	Warnings []string `json:"warnings,omitempty"`
	// records are the records themselves, for the comparison.
	records []*record.Record
}

// AllRecords are the records of every run, in the order they ran.
func (r *Result) AllRecords() []*record.Record { return r.records }

// WorkingSet is one working set's figures per phase.
type WorkingSet struct {
	Name         string `json:"name"` // below, near, above, above-zipf
	Workload     string `json:"workload"`
	SizeBytes    uint64 `json:"size_bytes"`
	OffsetBytes  uint64 `json:"offset_bytes"`
	Distribution string `json:"distribution,omitempty"`
	HDD          *Phase `json:"hdd"`
	SSD          *Phase `json:"ssd"`
	// SSDSizeBytes is the working set the SSD alone was read over when it
	// differs: it is read before the cache is built, with working sets of
	// the cache device's size, at most all of it.
	SSDSizeBytes uint64 `json:"ssd_size_bytes,omitempty"`
	Cold         *Phase `json:"cold"`
	Warm         *Phase `json:"warm"`
	Steady       *Phase `json:"steady"`
	// WarmUp is what the warm-up did to the cache (nil when its counters
	// were not read).
	WarmUp   *WarmUp `json:"warm_up,omitempty"`
	Sentence string  `json:"sentence"`
}

// WarmUp is what the warm-up pass(es) did to the cache, by the kernel's
// counters before and after them.
type WarmUp struct {
	// UsedBytesBefore and UsedBytesAfter are what the cache held when it
	// began and when it ended. A writecache holds only dirty blocks and
	// was emptied before the working set: what it held after is all its
	// reads can hit.
	UsedBytesBefore uint64 `json:"used_bytes_before"`
	UsedBytesAfter  uint64 `json:"used_bytes_after"`
	// Promotions and Demotions are dm-cache's blocks moved into and out
	// of the cache during it.
	Promotions uint64 `json:"promotions"`
	Demotions  uint64 `json:"demotions"`
}

// Phase is one measurement: medians over its repetitions, and the hit
// ratio the kernel counted during them (nil off the cache or unknown).
type Phase struct {
	Record      string   `json:"record"`
	IOPS        float64  `json:"iops"`
	BWBytesPerS float64  `json:"bw_bytes_per_s"`
	LatP50NS    float64  `json:"lat_p50_ns"`
	LatP99NS    float64  `json:"lat_p99_ns"`
	HitRatio    *float64 `json:"hit_ratio,omitempty"`
}

// Flush is a writeback cache's flush at release.
type Flush struct {
	DirtyBytes uint64  `json:"dirty_bytes"`
	ReleaseMS  float64 `json:"release_ms"`
}

// workingSet is one planned working set.
type workingSet struct {
	name, dist   string
	size, offset uint64
}

// Plan lays the working sets out on the origin: below (half of near),
// near, above (twice), above-zipf (twice, zipf:1.2), each its own region,
// in that order. It fails when the origin cannot hold them all.
func Plan(near, originBytes uint64, bs uint64) ([]workingSet, error) {
	if near == 0 {
		return nil, errors.New("no working-set size: the cache device's size is not known (give --size)")
	}
	align := func(n uint64) uint64 { return max(n/(1<<20), 1) * (1 << 20) }
	sets := []workingSet{{name: "below", size: align(near / 2)}, {name: "near", size: align(near)},
		{name: "above", size: align(2 * near)}, {name: "above-zipf", size: align(2 * near), dist: "zipf:1.2"}}
	var off uint64
	for i := range sets {
		sets[i].offset = off
		off += sets[i].size
		if sets[i].size < bs*workloadMinBlocks {
			return nil, fmt.Errorf("working set %s of %s holds under %d blocks of %s: give a larger --size",
				sets[i].name, units.FormatSize(sets[i].size), workloadMinBlocks, units.FormatSize(bs))
		}
	}
	if off > originBytes {
		return nil, fmt.Errorf("the working sets need %s of the cached volume (5.5 times %s), it has %s: give a smaller --size",
			units.FormatSize(off), units.FormatSize(near), units.FormatSize(originBytes))
	}
	return sets, nil
}

// workloadMinBlocks keeps a working set random: bench warns below 1000.
const workloadMinBlocks = 1000

func (o Options) spec(ws workingSet, size uint64, runtime time.Duration, rw string, bs uint64) string {
	s := fmt.Sprintf("name=%s,rw=%s,bs=%d,size=%d,offset=%d,iodepth=%d,direct=1", "ws-"+ws.name, rw, bs, size, ws.offset, o.IODepth)
	if runtime > 0 {
		s += ",runtime=" + runtime.String()
	} else {
		s += ",runtime=0"
	}
	if ws.dist != "" && strings.HasPrefix(rw, "rand") {
		s += ",distribution=" + ws.dist
	}
	return s
}

// warmBy is how a kind's cache fills: bcache is warmed with writes (the
// issue's advice: reads of a cold bcache may bypass it), dm-writecache
// only ever takes writes in, dm-cache promotes what is read again.
func warmBy(kind string) string {
	if kind == "lvmcache" || kind == "dm-cache" {
		return "randread"
	}
	return "randwrite"
}

// Run measures, per Options, and returns what it found: the SSD alone
// first (a cache partition does not outlive the release), then the cached
// volume (its working sets relative to the cache's real size, which only
// the built cache tells), then, once it is released, the HDD alone over the
// same regions. On any error, also an interruption, what was built is
// released (with a context that is not cancelled) and the release's own
// failure is joined to the error.
func Run(ctx context.Context, opts Options, deps Deps) (res *Result, err error) {
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	say := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "cachebench: "+format+"\n", args...)
		}
	}
	if opts.Kind == hwinfo.CacheKindWritecache && deps.FlushWriteCache == nil {
		return nil, errors.New("a writecache cannot be measured without a way to flush it")
	}
	host, err := deps.Facts(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := deviceSize(host, opts.Origin, deps.Resolve); err != nil {
		return nil, err
	}
	ssdBytes, err := deviceSize(host, opts.CacheDevice, deps.Resolve)
	if err != nil {
		return nil, err
	}
	if err := deps.Check(ctx, host); err != nil {
		return nil, err
	}
	res = &Result{Schema: Schema, Kind: opts.Kind, Mode: opts.Mode, Origin: opts.Origin, CacheDevice: opts.CacheDevice}
	bench := func(label, target string, specs []string, repeat int, allowWrite bool, h *hwinfo.Host) (*record.Record, error) {
		req := workload.Request{Target: target, Specs: specs, Repeat: repeat, Label: label, AllowDeviceWrite: allowWrite}
		rec, err := deps.Bench(ctx, req, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		res.records = append(res.records, rec)
		res.Records = append(res.Records, rec.ID)
		return rec, nil
	}

	// The SSD alone, first: a cache partition is gone after the release.
	// Its working sets are the cache device's size's (the cache's own is
	// known once built), read from its start, written once first (an SSD
	// reads never-written blocks without touching flash).
	ssdRegion := ssdBytes / (1 << 20) * (1 << 20)
	ssdSets, err := Plan(ssdRegion, math.MaxUint64, opts.BlockBytes)
	if err != nil {
		return nil, err
	}
	say("the SSD alone: %s (written once over %s first)", opts.CacheDevice, units.FormatSize(ssdRegion))
	fill := workingSet{name: "ssd-fill"}
	if _, err := bench("ssd fill", opts.CacheDevice, []string{opts.spec(fill, ssdRegion, 0, "write", 1<<20)}, 1, true, host); err != nil {
		return nil, err
	}
	var specs []string
	ssdSizes := map[string]uint64{}
	for _, ws := range ssdSets {
		size := min(ws.size, ssdRegion)
		ws.offset = 0
		specs = append(specs, opts.spec(ws, size, opts.Runtime, "randread", opts.BlockBytes))
		ssdSizes["ws-"+ws.name] = size
	}
	rec, err := bench("ssd", opts.CacheDevice, specs, opts.Repeat, false, host)
	if err != nil {
		return nil, err
	}
	ssdPhases := map[string]*Phase{}
	for name := range ssdSizes {
		ssdPhases[name] = phaseOf(rec, name)
	}

	// The cached volume.
	say("building the %s (%s) over %s, cached by %s", opts.Kind, opts.Mode, opts.Origin, opts.CacheDevice)
	dev, err := deps.Build(ctx, host)
	built := dev != ""
	defer func() {
		if built && err != nil {
			if ctx.Err() != nil {
				say("releasing the cache after the interruption")
			} else {
				say("releasing the cache after the failure")
			}
			if rerr := deps.Release(context.WithoutCancel(ctx), true); rerr != nil {
				err = errors.Join(err, fmt.Errorf("release the cache: %w", rerr))
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	res.CachedVolume = dev
	if host, err = deps.Facts(ctx); err != nil {
		return nil, err
	}
	node, err := deps.Resolve(dev)
	if err != nil {
		return nil, err
	}
	cv := host.Cache(node)
	if cv == nil {
		return nil, fmt.Errorf("%s (%s) was built but the inventory shows no cached volume there", dev, node)
	}
	res.CacheBytes = cv.CacheBytes
	if cv.Counters == nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the kernel's counters of %s are not readable: no hit ratios", dev))
	}
	near := opts.NearBytes
	if near == 0 {
		near = cv.CacheBytes
	}
	sets, err := Plan(near, cv.SizeBytes, opts.BlockBytes)
	if err != nil {
		return nil, err
	}
	for _, ws := range sets {
		res.WorkingSets = append(res.WorkingSets, WorkingSet{Name: ws.name, Workload: "ws-" + ws.name, SizeBytes: ws.size,
			OffsetBytes: ws.offset, Distribution: ws.dist})
	}
	// The cache's counters as last read: the level of dirty blocks.
	counters := cv.Counters
	seen := func(rec *record.Record) {
		if c := lastCounters(rec); c != nil {
			counters = c
		}
	}
	for i, ws := range sets {
		w := &res.WorkingSets[i]
		one := []string{opts.spec(ws, ws.size, opts.Runtime, "randread", opts.BlockBytes)}
		if opts.Kind == hwinfo.CacheKindWritecache {
			// A dm-writecache sends writes around itself once it is
			// full, and pauses its write-back while they come: the
			// build's mkfs fills it (mkfs.xfs wrote 64 MiB through a
			// 44 MiB cache in the guest), so the first warm-up went
			// around it whole and read hits were 0%. Each working set
			// starts from an empty cache instead.
			dirty := "its dirty blocks"
			if counters != nil {
				dirty = units.FormatSize(counters.DirtyBytes) + " dirty"
			}
			t0 := now()
			if err := deps.FlushWriteCache(ctx, cv.Path); err != nil {
				return res, fmt.Errorf("empty the write cache before working set %s: %w", ws.name, err)
			}
			say("working set %s: the write cache emptied first (%s written back in %.1f s)", ws.name, dirty, now().Sub(t0).Seconds())
		}
		say("working set %s (%s): cold", ws.name, units.FormatSize(ws.size))
		if rec, err = bench(opts.Kind+" cold", dev, one, 1, false, host); err != nil {
			return res, err
		}
		seen(rec)
		w.Cold = phaseOf(rec, w.Workload)
		// The warm-up: one pass over the working set, each block once, in
		// 64 KiB blocks (dm-cache's block; a few I/Os per HDD seek);
		// dm-cache promotes on the second touch, so it reads twice.
		passes := 1
		if warmBy(opts.Kind) == "randread" {
			passes = 2
		}
		say("working set %s: warm-up (%d %s pass(es))", ws.name, passes, warmBy(opts.Kind))
		warm := ws
		warm.dist = ""
		before := counters
		for p := 0; p < passes; p++ {
			if rec, err = bench(opts.Kind+" warm-up", dev, []string{opts.spec(warm, ws.size, 0, warmBy(opts.Kind), 64<<10)}, 1,
				warmBy(opts.Kind) == "randwrite", host); err != nil {
				return res, err
			}
			if p == 0 {
				before = firstCounters(rec)
			}
			seen(rec)
		}
		if after := lastCounters(rec); before != nil && after != nil {
			d := after.Sub(*before)
			w.WarmUp = &WarmUp{UsedBytesBefore: before.UsedBytes, UsedBytesAfter: after.UsedBytes, Promotions: d.Promotions, Demotions: d.Demotions}
		}
		say("working set %s: warm", ws.name)
		if rec, err = bench(opts.Kind+" warm", dev, one, opts.Repeat, false, host); err != nil {
			return res, err
		}
		seen(rec)
		w.Warm = phaseOf(rec, w.Workload)
		say("working set %s: steady", ws.name)
		if rec, err = bench(opts.Kind+" steady", dev, one, opts.Repeat, false, host); err != nil {
			return res, err
		}
		seen(rec)
		w.Steady = phaseOf(rec, w.Workload)
	}

	// The flush, for writeback: the release writes the dirty blocks back
	// before it takes the cache apart.
	if h, ferr := deps.Facts(ctx); ferr == nil && opts.Mode == "writeback" {
		if c := h.Cache(node); c != nil && c.Counters != nil {
			res.Flush = &Flush{DirtyBytes: c.Counters.DirtyBytes}
		}
	}
	say("releasing the cache (flushing it first)")
	t0 := now()
	if err = deps.Release(ctx, false); err != nil {
		// The cleanup above releases it again, past an interruption.
		return res, fmt.Errorf("release the cache: %w", err)
	}
	built = false
	if res.Flush != nil {
		res.Flush.ReleaseMS = float64(now().Sub(t0).Microseconds()) / 1000
	}

	// The HDD alone, released and wiped, over the same regions.
	if host, err = deps.Facts(ctx); err != nil {
		return res, err
	}
	specs = nil
	for _, ws := range sets {
		specs = append(specs, opts.spec(ws, ws.size, opts.Runtime, "randread", opts.BlockBytes))
	}
	say("the HDD alone: %s", opts.Origin)
	if rec, err = bench("hdd", opts.Origin, specs, opts.Repeat, false, host); err != nil {
		return res, err
	}
	for i := range res.WorkingSets {
		res.WorkingSets[i].HDD = phaseOf(rec, res.WorkingSets[i].Workload)
	}
	for i := range res.WorkingSets {
		ws := &res.WorkingSets[i]
		ws.SSD = ssdPhases[ws.Workload]
		if n := ssdSizes[ws.Workload]; n != ws.SizeBytes {
			ws.SSDSizeBytes = n
		}
		ws.Sentence = sentence(*ws, res.CacheBytes, res.Kind)
	}
	if err := deps.Save(res.records); err != nil {
		return res, err
	}
	return res, nil
}

// deviceSize is the size of the disk or partition at path.
func deviceSize(host *hwinfo.Host, path string, resolve func(string) (string, error)) (uint64, error) {
	name := path
	if resolve != nil {
		n, err := resolve(path)
		switch {
		case errors.Is(err, hwinfo.ErrUntrustedLink):
			// Another user's link chooses no disk to destroy: refused
			// first, before either disk is read or written.
			return 0, fmt.Errorf("refusing to cachebench %s: %w", path, err)
		case err == nil:
			name = n
		}
	}
	d, p := host.Device(strings.TrimPrefix(name, "/dev/"))
	if d == nil {
		d, p = host.Device(path)
	}
	switch {
	case p != nil:
		return p.SizeBytes, nil
	case d != nil:
		return d.SizeBytes, nil
	}
	return 0, workload.Usagef("%s does not exist: no such disk or partition in the inventory", path)
}

// firstCounters are the cache's counters before the first repetition of
// rec that read them, nil when none did.
func firstCounters(rec *record.Record) *hwinfo.CacheCounters {
	for _, w := range rec.Workloads {
		for _, r := range w.Runs {
			if r.Cache != nil {
				c := r.Cache.Before
				return &c
			}
		}
	}
	return nil
}

// lastCounters are the cache's counters after the last repetition of rec
// that read them, nil when none did.
func lastCounters(rec *record.Record) *hwinfo.CacheCounters {
	var last *hwinfo.CacheCounters
	for _, w := range rec.Workloads {
		for _, r := range w.Runs {
			if r.Cache != nil {
				c := r.Cache.After
				last = &c
			}
		}
	}
	return last
}

// phaseOf sums up a record's workload: medians over its repetitions, and
// the median hit ratio the kernel counted.
func phaseOf(rec *record.Record, name string) *Phase {
	for _, w := range rec.Workloads {
		if w.Params.Name != name {
			continue
		}
		s, ok := w.Summary["read"]
		if !ok {
			return nil
		}
		ph := &Phase{Record: rec.ID, IOPS: s.IOPS.Median, BWBytesPerS: s.BWBytesPerS.Median, LatP50NS: s.LatP50NS.Median, LatP99NS: s.LatP99NS.Median}
		var ratios []float64
		for _, r := range w.Runs {
			if r.Cache != nil && r.Cache.HitRatio != nil {
				ratios = append(ratios, *r.Cache.HitRatio)
			}
		}
		if len(ratios) > 0 {
			sort.Float64s(ratios)
			m := ratios[len(ratios)/2]
			if len(ratios)%2 == 0 {
				m = (ratios[len(ratios)/2-1] + m) / 2
			}
			ph.HitRatio = &m
		}
		return ph
	}
	return nil
}

// sentence says in one line what the cache buys on a working set: the
// steady phase against the HDD alone, and how close it gets to the SSD;
// for a writecache, also what its hit ratio can be at most.
func sentence(w WorkingSet, cacheBytes uint64, kind string) string {
	rel := "near"
	switch {
	case cacheBytes == 0:
		rel = "against a cache of unknown size"
	case w.SizeBytes*10 < cacheBytes*9:
		rel = fmt.Sprintf("%.0f%% of the cache", float64(w.SizeBytes)/float64(cacheBytes)*100)
	case w.SizeBytes*10 > cacheBytes*11:
		rel = fmt.Sprintf("%.1f times the cache", float64(w.SizeBytes)/float64(cacheBytes))
	default:
		rel = "about the cache's size"
	}
	what := units.FormatSize(w.SizeBytes)
	if w.Distribution != "" {
		what += " " + w.Distribution
	}
	s := w.Steady
	if s == nil || w.HDD == nil || w.HDD.IOPS <= 0 {
		return fmt.Sprintf("%s (%s, %s): not measured.", w.Name, what, rel)
	}
	out := fmt.Sprintf("%s (%s, %s): steady, the cache reads %.0f IOPS, %s the HDD alone (%.0f)", w.Name, what, rel, s.IOPS,
		times(s.IOPS/w.HDD.IOPS), w.HDD.IOPS)
	if w.SSD != nil && w.SSD.IOPS > 0 {
		out += fmt.Sprintf(", %.0f%% of the SSD alone (%.0f)", s.IOPS/w.SSD.IOPS*100, w.SSD.IOPS)
	}
	if s.HitRatio != nil {
		out += fmt.Sprintf(", at a %.0f%% hit ratio", *s.HitRatio*100)
		if w.Cold != nil && w.Cold.HitRatio != nil {
			out += fmt.Sprintf(" (cold %.0f%%)", *w.Cold.HitRatio*100)
		}
	}
	return out + warmUpSaid(w, cacheBytes, kind) + "."
}

// warmUpSaid is what the cache's own policy made of the warm-up, where it
// bounds the hit ratio: the kernel does both on purpose.
func warmUpSaid(w WorkingSet, cacheBytes uint64, kind string) string {
	u := w.WarmUp
	switch kind {
	case hwinfo.CacheKindWritecache:
		// writecache.rst: it "doesn't cache reads". A read hits only a
		// block written and not yet written back, which it writes back
		// from half the cache used down to 45% (the default watermarks;
		// cachebench sets none).
		s := "; dm-writecache caches only writes not yet written back (it writes back from 50% of the cache used down to 45%), so its hit ratio is the share of reads that found their block still dirty"
		if u != nil && w.SizeBytes > 0 {
			s += fmt.Sprintf(": %s of the working set (%.0f%%) was in it right after the warm-up", units.FormatSize(u.UsedBytesAfter),
				float64(min(u.UsedBytesAfter, w.SizeBytes))/float64(w.SizeBytes)*100)
		}
		return s
	case hwinfo.CacheKindLVM, hwinfo.CacheKindDMCache:
		if u == nil {
			return ""
		}
		if u.Promotions == 0 && cacheBytes > 0 && u.UsedBytesBefore >= cacheBytes {
			// dm-cache-policy-smq.c: a promoted block enters the top of
			// 64 levels, only a clean block of the lower 32 is demoted
			// to make room, and the levels are spread again once a
			// minute (CACHE_UPDATE_PERIOD): a full cache takes in at
			// most half of itself a minute. Measured in the guest: 0
			// promotions over 2304 warm-up misses, then 288 demotions
			// (half of 576 blocks) right after the minute.
			return "; the warm-up promoted nothing: the cache was full, and dm-cache's smq policy makes room only from the less used half of its blocks, re-ranked once a minute (a block it promotes ranks first), so a full cache takes in at most half of itself a minute and this hit ratio says how fast smq let the working set in, not what a settled cache gives"
		}
		return fmt.Sprintf("; the warm-up promoted %d blocks and demoted %d", u.Promotions, u.Demotions)
	}
	return ""
}

func times(x float64) string {
	switch {
	case x >= 1.1:
		return fmt.Sprintf("%.1f times", x)
	case x <= 0.9:
		return fmt.Sprintf("%.0f%% of", x*100)
	}
	return "about the same as"
}

// Write renders the result in format: json is the result itself
// (diskprep/cachebench/v1); table, markdown and html its report
// (report.WriteCache) with c, the comparison of its measured records
// against the HDD alone (nil: none).
func (r *Result) Write(w io.Writer, format string, c *compare.Comparison) error {
	return r.WriteLayout(w, format, c, report.Layout{})
}

// WriteLayout is Write with the comparison's table laid out by l (the
// width of the terminal it is printed on).
func (r *Result) WriteLayout(w io.Writer, format string, c *compare.Comparison, l report.Layout) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return report.WriteCache(w, format, r.Report(c), l)
}

// Redacted is the result as a report under --redact shows it: its device
// paths and warnings through redact.Text (by-id names by their shape, the
// values its records hold wherever they appear). Its records stay whole:
// the comparison is made of redacted copies.
func (r *Result) Redacted() *Result {
	out := *r
	red := func(s string) string { return redact.Text(s, r.records...) }
	out.Origin, out.CacheDevice, out.CachedVolume = red(r.Origin), red(r.CacheDevice), red(r.CachedVolume)
	out.Warnings = nil
	for _, w := range r.Warnings {
		out.Warnings = append(out.Warnings, red(w))
	}
	return &out
}

// Report is the result as the reports show it (report.WriteCache: table,
// Markdown, HTML), with c the comparison of its measured records against
// the HDD alone (nil: none).
func (r *Result) Report(c *compare.Comparison) *report.CacheReport {
	out := &report.CacheReport{Kind: r.Kind, Mode: r.Mode, Origin: r.Origin, CacheDevice: r.CacheDevice, CachedVolume: r.CachedVolume,
		CacheBytes: r.CacheBytes, Warnings: r.Warnings, Records: r.Records, Comparison: c}
	if r.Flush != nil {
		out.Flush = &report.CacheFlush{DirtyBytes: r.Flush.DirtyBytes, ReleaseMS: r.Flush.ReleaseMS}
	}
	phase := func(name string, p *Phase, size uint64) *report.CachePhase {
		if p == nil {
			return nil
		}
		return &report.CachePhase{Name: name, SizeBytes: size, IOPS: p.IOPS, BWBytesPerS: p.BWBytesPerS, LatP50NS: p.LatP50NS,
			LatP99NS: p.LatP99NS, HitRatio: p.HitRatio}
	}
	for _, ws := range r.WorkingSets {
		s := report.CacheSet{Name: ws.Name, SizeBytes: ws.SizeBytes, HDD: phase("HDD alone", ws.HDD, 0),
			SSD: phase("SSD alone", ws.SSD, ws.SSDSizeBytes), Sentence: ws.Sentence}
		for _, p := range []struct {
			name string
			ph   *Phase
		}{{"cold", ws.Cold}, {"warm", ws.Warm}, {"steady", ws.Steady}} {
			if ph := phase(p.name, p.ph, 0); ph != nil {
				s.Phases = append(s.Phases, *ph)
			}
		}
		out.Sets = append(out.Sets, s)
	}
	return out
}

// Labels are the record labels of the measured phases, in column order,
// for the comparison (the warm-up and the SSD's fill are records too, not
// columns).
func Labels(kind string) []string {
	return []string{"hdd", "ssd", kind + " cold", kind + " warm", kind + " steady"}
}

// Measured is the records of the measured phases.
func (r *Result) Measured() []*record.Record {
	labels := Labels(r.Kind)
	var out []*record.Record
	for _, rec := range r.records {
		if slices.Contains(labels, rec.Label) {
			out = append(out, rec)
		}
	}
	return out
}
