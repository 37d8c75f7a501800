package cachebench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// writecacheSim is a dm-writecache as the guest showed it (Debian 6.1,
// lvconvert --type writecache with no settings, throttled HDD): the build's
// mkfs.xfs fills it (16517 blocks written through 11220: free 0), a write
// that finds no free block goes around it to the origin (writes_around,
// and write-back paused while they come), a read hits only a block it
// holds, and a flush message writes everything back and frees it.
// Write-back by the watermarks is left out: the guest showed none while
// writes went around.
type writecacheSim struct {
	blocks uint64            // the cache's size in 4 KiB blocks
	held   map[string]uint64 // blocks of each working set in the cache
	c      hwinfo.CacheCounters
}

func (s *writecacheSim) used() uint64 {
	var n uint64
	for _, b := range s.held {
		n += b
	}
	return n
}

func (s *writecacheSim) sync() { s.c.UsedBytes, s.c.DirtyBytes = s.used()*4096, s.used()*4096 }

// io is one run of w on the cached volume: the counters before and after.
func (s *writecacheSim) io(w workload.Workload) (before, after hwinfo.CacheCounters, ratio float64) {
	before = s.c
	n := w.SizeBytes / 4096
	switch {
	case w.Writes():
		took := min(n-min(s.held[w.Name], n), s.blocks-s.used())
		s.held[w.Name] += took
		s.c.WriteHits += took
		s.c.WriteMisses += n - took
	default:
		const ios = 1000
		hits := ios * s.held[w.Name] / n
		s.c.ReadHits += hits
		s.c.ReadMisses += ios - hits
		ratio = float64(hits) / ios
	}
	s.sync()
	return before, s.c, ratio
}

func (f *fake) writecacheDeps(s *writecacheSim) Deps {
	d := f.deps()
	facts := d.Facts
	d.Facts = func(ctx context.Context) (*hwinfo.Host, error) {
		h, err := facts(ctx)
		if err == nil && f.built {
			c := s.c
			h.Caches = []hwinfo.CachedVolume{{Device: "dm-3", Path: "/dev/mapper/cachebench-cachebench", Kind: "writecache", Mode: "writeback",
				CacheBytes: s.blocks * 4096, SizeBytes: f.volume, Counters: &c}}
		}
		return h, err
	}
	build := d.Build
	d.Build = func(ctx context.Context, host *hwinfo.Host) (string, error) {
		s.held = map[string]uint64{"mkfs.xfs": s.blocks}
		s.sync()
		return build(ctx, host)
	}
	bench := d.Bench
	d.Bench = func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error) {
		rec, err := bench(ctx, req, host)
		if err != nil || req.Target != "/dev/cachebench/cachebench" {
			return rec, err
		}
		for i := range rec.Workloads {
			w := &rec.Workloads[i]
			for r := range w.Runs {
				before, after, ratio := s.io(w.Params)
				w.Runs[r].Cache = record.NewCacheIO("dm-3", before, after)
				if w.Params.Reads() {
					w.Summary["read"] = record.DirSummary{IOPS: record.Stat{Median: 150 + ratio*20000}}
				}
			}
		}
		return rec, nil
	}
	d.FlushWriteCache = func(ctx context.Context, device string) error {
		f.calls = append(f.calls, "flush "+device)
		s.held = map[string]uint64{}
		s.sync()
		return nil
	}
	return d
}

// TestRunWritecacheEmptiedFirst: a writecache is emptied (flushed) before
// each working set, so its warm-up writes go into it, not around it: in the
// guest, without that, the "below" warm-up found the cache full of the
// build's mkfs and every read of it missed (0%). The sentence says what
// bounds a writecache's hit ratio, with what it held after the warm-up.
func TestRunWritecacheEmptiedFirst(t *testing.T) {
	f := &fake{volume: 3 << 30}
	s := &writecacheSim{blocks: 240 << 20 / 4096}
	o := opts()
	o.Kind, o.Mode = "writecache", "writeback"
	var progress bytes.Buffer
	o.Progress = &progress
	res, err := Run(context.Background(), o, f.writecacheDeps(s))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "flush ") || strings.HasPrefix(c, "writecache cold") {
			order = append(order, c)
		}
	}
	if want := strings.Repeat("flush /dev/mapper/cachebench-cachebench,writecache cold /dev/cachebench/cachebench,", 4); strings.Join(order, ",")+"," != want {
		t.Errorf("flushes and cold runs %q", order)
	}
	for i, ws := range res.WorkingSets {
		wantHit := []float64{1, 1, 0.5, 0.5}[i]
		if ws.Warm == nil || ws.Warm.HitRatio == nil || *ws.Warm.HitRatio != wantHit || *ws.Cold.HitRatio != 0 {
			t.Errorf("%s: cold %+v warm %+v, want a warm hit ratio of %.1f", ws.Name, ws.Cold, ws.Warm, wantHit)
		}
		if ws.WarmUp == nil || ws.WarmUp.UsedBytesBefore != 0 || ws.WarmUp.UsedBytesAfter != min(ws.SizeBytes, 240<<20) {
			t.Errorf("%s: warm-up %+v", ws.Name, ws.WarmUp)
		}
		if !strings.Contains(ws.Sentence, "dm-writecache caches only writes not yet written back") {
			t.Errorf("%s: sentence %q", ws.Name, ws.Sentence)
		}
	}
	for i, part := range []string{"120 MiB of the working set (100%) was in it right after the warm-up.", "", "240 MiB of the working set (50%) was in it right after the warm-up."} {
		if !strings.HasSuffix(res.WorkingSets[i].Sentence, part) {
			t.Errorf("sentence %q does not end with %q", res.WorkingSets[i].Sentence, part)
		}
	}
	if !strings.Contains(progress.String(), "cachebench: working set below: the write cache emptied first (240 MiB dirty written back in ") {
		t.Errorf("progress %q", progress.String())
	}

	// No way to flush it: refused before anything is done.
	f = &fake{volume: 3 << 30}
	d := f.writecacheDeps(&writecacheSim{blocks: 240 << 20 / 4096})
	d.FlushWriteCache = nil
	if _, err := Run(context.Background(), o, d); err == nil || !strings.Contains(err.Error(), "without a way to flush it") {
		t.Errorf("no flush: %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("no flush: calls %q", f.calls)
	}
	// A flush that fails stops the run before the working set, and releases.
	f = &fake{volume: 3 << 30}
	d = f.writecacheDeps(&writecacheSim{blocks: 240 << 20 / 4096})
	d.FlushWriteCache = func(ctx context.Context, device string) error { return errors.New("dmsetup: exit status 1") }
	if _, err := Run(context.Background(), o, d); err == nil || !strings.Contains(err.Error(), "empty the write cache before working set below: dmsetup") ||
		strings.Contains(strings.Join(f.calls, ","), "cold") || len(f.released) != 1 || !f.released[0] {
		t.Errorf("failed flush: %v, calls %q, releases %v", err, f.calls, f.released)
	}
}

// TestRunSmqFullSaysSo: dm-cache's warm-up promotions are said, and a
// warm-up that promoted nothing into a full cache says why (smq makes
// room only from the less used half of its blocks, re-ranked once a
// minute): the guest's counters, in 64 KiB blocks of a 576-block cache.
func TestRunSmqFullSaysSo(t *testing.T) {
	const block = 64 << 10
	f := &fake{volume: 3 << 30}
	d := f.deps()
	// before and after of each warm-up pass, per working set, as the guest
	// counted them (cachebench lvmcache, --runtime 2s, 14:22-14:24 UTC).
	passes := map[string][][2]hwinfo.CacheCounters{
		"ws-below": {{{UsedBytes: 168 * block, Promotions: 168}, {UsedBytes: 199 * block, Promotions: 199}},
			{{UsedBytes: 199 * block, Promotions: 199}, {UsedBytes: 300 * block, Promotions: 300}}},
		"ws-above": {{{UsedBytes: 576 * block, Promotions: 576, ReadMisses: 1000}, {UsedBytes: 576 * block, Promotions: 576, ReadMisses: 2152}},
			{{UsedBytes: 576 * block, Promotions: 576, ReadMisses: 2152}, {UsedBytes: 576 * block, Promotions: 576, ReadMisses: 3304}}},
		"ws-above-zipf": {{{UsedBytes: 575 * block, Promotions: 760, Demotions: 185}, {UsedBytes: 576 * block, Promotions: 864, Demotions: 288}},
			{{UsedBytes: 576 * block, Promotions: 864, Demotions: 288}, {UsedBytes: 576 * block, Promotions: 864, Demotions: 288}}},
	}
	seen := map[string]int{}
	bench := d.Bench
	d.Bench = func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error) {
		rec, err := bench(ctx, req, host)
		if err != nil || req.Label != "lvmcache warm-up" {
			return rec, err
		}
		w := &rec.Workloads[0]
		if p := passes[w.Params.Name]; p != nil {
			c := p[seen[w.Params.Name]]
			seen[w.Params.Name]++
			w.Runs[0].Cache = record.NewCacheIO("dm-3", c[0], c[1])
		}
		return rec, nil
	}
	facts := d.Facts
	d.Facts = func(ctx context.Context) (*hwinfo.Host, error) {
		h, err := facts(ctx)
		if err == nil && len(h.Caches) == 1 {
			h.Caches[0].CacheBytes = 576 * block
		}
		return h, err
	}
	o := opts()
	o.NearBytes = 576 * block
	res, err := Run(context.Background(), o, d)
	if err != nil {
		t.Fatal(err)
	}
	said := map[string]string{}
	for _, ws := range res.WorkingSets {
		said[ws.Name] = ws.Sentence
	}
	for name, part := range map[string]string{
		"below":      "; the warm-up promoted 132 blocks and demoted 0.",
		"above":      "; the warm-up promoted nothing: the cache was full, and dm-cache's smq policy makes room only from the less used half of its blocks, re-ranked once a minute",
		"above-zipf": "; the warm-up promoted 104 blocks and demoted 103.",
	} {
		if !strings.Contains(said[name], part) {
			t.Errorf("%s: sentence %q does not say %q", name, said[name], part)
		}
	}
	if strings.Contains(said["near"], "warm-up") {
		t.Errorf("near: counters unknown, yet the sentence says %q", said["near"])
	}
	if u := res.WorkingSets[2].WarmUp; u == nil || u.Promotions != 0 || u.UsedBytesBefore != 576*block {
		t.Errorf("above: warm-up %+v", u)
	}
}
