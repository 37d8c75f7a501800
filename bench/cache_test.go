package bench

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// TestRepetitionCacheCounters: a target on a cached volume records the
// volume under Target.Cache and, around each repetition, the kernel's
// counters before and after with the hit ratio between; counters that
// cannot be read are said in a warning, not left out silently. The
// volume is a bcache device in a sysfs tree whose counters the fake
// engine moves as the kernel would.
func TestRepetitionCacheCounters(t *testing.T) {
	roots, sys, _ := fakeRoots(t)
	bc := filepath.Join(sys, "block/bcache0/bcache")
	stats := map[string]string{"cache_hits": "100", "cache_misses": "50", "cache_bypass_hits": "0", "cache_bypass_misses": "10"}
	for f, v := range stats {
		writeFile(t, filepath.Join(bc, "stats_total", f), v+"\n")
	}
	writeFile(t, filepath.Join(bc, "cache_mode"), "writethrough [writeback] writearound none\n")
	writeFile(t, filepath.Join(bc, "dirty_data"), "1.0M\n")
	writeFile(t, filepath.Join(bc, "sequential_cutoff"), "0.0k\n")
	host := &hwinfo.Host{Caches: []hwinfo.CachedVolume{{Device: "bcache0", Path: "/dev/bcache0", Kind: "bcache", Mode: "writeback",
		OriginDevices: []string{"sdb"}, CacheDevices: []string{"nvme0n1p2"}}}}

	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := &target{ident: record.Target{Path: file, Kind: record.KindFile, Device: "bcache0", FSType: "xfs"}, path: file, size: 1 << 20, roots: roots}
	tg.identify(host)
	if tg.ident.Cache == nil || tg.ident.Cache.Kind != "bcache" || tg.cacheDev != "bcache0" ||
		tg.ident.StackText != "xfs on bcache0 bcache writeback of sdb cached by nvme0n1p2" {
		t.Fatalf("target %+v", tg.ident)
	}
	eng := &fakeEngine{onRun: func(ctx context.Context, n int, p engine.Params) (*engine.Result, error) {
		// What the kernel counted while the workload ran.
		writeFile(t, filepath.Join(bc, "stats_total/cache_hits"), "400\n")
		writeFile(t, filepath.Join(bc, "stats_total/cache_misses"), "60\n")
		return syntheticResult(100, 0, uint64(p.BlockSize), 1), nil
	}}
	r := runner{eng: eng, log: slog.New(slog.DiscardHandler), t: tg, now: time.Now, laidOut: 1 << 20, extent: 1 << 20, count: 1}
	w := workload.DefaultWorkload()
	w.Name, w.RW, w.SizeBytes, w.Runtime, w.Distribution = "zipf-read", "randread", 1<<20, time.Second, "zipf:1.2"
	one, err := r.runOne(context.Background(), w, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := one.Cache
	if c == nil || c.Device != "bcache0" || c.Before.ReadHits != 100 || c.After.ReadHits != 400 || c.After.ReadMisses != 60 ||
		c.Before.DirtyBytes != 1<<20 || c.HitRatio == nil || *c.HitRatio != 300.0/310 || c.ReadHitRatio == nil || *c.ReadHitRatio != 300.0/310 {
		t.Fatalf("cache io %+v", c)
	}
	// The runner of a real run waits out bcache's accounting before the
	// second reading (this one, built by hand, does not).
	if d := cacheSettleOf(tg.ident.Cache); d < BcacheAccountingInterval || cacheSettleOf(&hwinfo.CachedVolume{Kind: "lvmcache"}) != 0 {
		t.Errorf("settle %s for bcache", d)
	}
	if got := eng.calls[0].Distribution; got.Kind != engine.DistZipf || got.Theta != 1.2 {
		t.Errorf("engine distribution %+v", got)
	}

	// The counters gone (the cache set detached mid-run): a warning.
	os.RemoveAll(filepath.Join(bc, "stats_total"))
	one, err = r.runOne(context.Background(), w, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if one.Cache != nil || len(one.Warnings) != 1 || !strings.Contains(one.Warnings[0], "cache counters not recorded") {
		t.Errorf("without counters: cache %+v, warnings %q", one.Cache, one.Warnings)
	}
}
