package hwinfo

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/units"
)

// Captured lines: what a 6.1 guest's dmsetup status printed for an
// lvmcache (writethrough, metadata2, smq) and a dm-writecache on SSD
// (testdata/guest-cache.tools), and hand-made variants for what the guest
// did not show.
func TestParseDMCacheStatus(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       dmCacheStatus
		err        bool
	}{
		{name: "guest lvmcache", line: "8 13/2048 128 185/2048 505 239 4 252 0 185 0 2 metadata2 writethrough 2 migration_threshold 2048 smq 0 rw - ",
			want: dmCacheStatus{blockSectors: 128, usedBlocks: 185, totalBlocks: 2048, readHits: 505, readMisses: 239, writeHits: 4, writeMisses: 252,
				promotions: 185, mode: "writethrough", metadataMode: "rw", needsCheck: "-"}},
		{name: "writeback dirty", line: "8 100/4096 512 900/1000 10 20 30 40 5 6 77 1 writeback 2 migration_threshold 2048 smq 0 rw needs_check",
			want: dmCacheStatus{blockSectors: 512, usedBlocks: 900, totalBlocks: 1000, readHits: 10, readMisses: 20, writeHits: 30, writeMisses: 40,
				demotions: 5, promotions: 6, dirty: 77, mode: "writeback", metadataMode: "rw", needsCheck: "needs_check"}},
		{name: "no feature words", line: "8 1/10 64 0/100 0 0 0 0 0 0 0 0 2 migration_threshold 2048 smq 0 rw -",
			want: dmCacheStatus{blockSectors: 64, totalBlocks: 100, mode: "writethrough", metadataMode: "rw", needsCheck: "-"}},
		{name: "failed", line: "Fail", err: true},
		{name: "short", line: "8 13/2048 128 185/2048 505", err: true},
		{name: "not a fraction", line: "8 13/2048 128 185 505 239 4 252 0 185 0 0 rw -", err: true},
		{name: "feature count past the end", line: "8 1/10 64 0/100 0 0 0 0 0 0 0 9 writeback", err: true},
	} {
		got, err := parseDMCacheStatus(c.line)
		if (err != nil) != c.err {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if !c.err && got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestParseDMWritecacheStatus(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       dmWritecacheStatus
		err        bool
	}{
		{name: "guest 6.1", line: "0 16320 10135 0 2601 1430 8238 3 2 0 8233 0 6 32769",
			want: dmWritecacheStatus{blocks: 16320, free: 10135, haveStats: true, reads: 2601, readHits: 1430, writes: 8238,
				hitsUncommitted: 3, hitsCommitted: 2, allocated: 8233}},
		// cachebench's build (lvconvert --type writecache, 44 MiB cache)
		// right after mkfs.xfs: 16517 blocks written, the cache full (0
		// free), 3696 sent around it; the whole volume discarded first.
		{name: "guest 6.1 full after mkfs", line: "0 11220 0 0 586 0 16517 1 0 3696 12820 0 2 261120",
			want: dmWritecacheStatus{blocks: 11220, haveStats: true, reads: 586, writes: 16517, hitsUncommitted: 1, around: 3696, allocated: 12820}},
		{name: "before 5.15: occupancy only", line: "0 1000 600 12", want: dmWritecacheStatus{blocks: 1000, free: 600, writeback: 12}},
		{name: "error", line: "-5 1000 600 0", want: dmWritecacheStatus{errno: -5, blocks: 1000, free: 600}},
		{name: "short", line: "0 1000", err: true},
		{name: "garbage", line: "0 x 1 2", err: true},
	} {
		got, err := parseDMWritecacheStatus(c.line)
		if (err != nil) != c.err {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if !c.err && got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestParseDMTables(t *testing.T) {
	ct, err := parseDMCacheTable("253:2 253:1 253:3 128 2 metadata2 writethrough smq 0")
	if err != nil || ct != (dmCacheTable{metadata: "253:2", cache: "253:1", origin: "253:3", blockSectors: 128, mode: "writethrough"}) {
		t.Errorf("cache table %+v %v", ct, err)
	}
	ct, err = parseDMCacheTable("253:2 253:1 253:3 128 1 writeback smq 0")
	if err != nil || ct.mode != "writeback" {
		t.Errorf("writeback cache table %+v %v", ct, err)
	}
	wt, err := parseDMWritecacheTable("s 253:6 253:5 4096 0")
	if err != nil || wt != (dmWritecacheTable{persistent: "s", origin: "253:6", cache: "253:5", blockBytes: 4096}) {
		t.Errorf("writecache table %+v %v", wt, err)
	}
	for _, bad := range []string{"253:2 253:1", "253:2 253:1 253:3 x 0"} {
		if _, err := parseDMCacheTable(bad); err == nil {
			t.Errorf("cache table %q: no error", bad)
		}
	}
	if _, err := parseDMWritecacheTable("s 253:6 253:5 0 0"); err == nil {
		t.Error("writecache table with block size 0: no error")
	}
	all, err := ParseDMSetup(readTool(t, "dmsetup.table"))
	if err != nil || len(all) != 7 || all["slow-logs"][0].Type != "writecache" || all["slow-data_corig"][0].Args != "8:0 2048" {
		t.Errorf("dmsetup table: %v %+v", err, all)
	}
	if _, err := ParseDMSetup("slow-data 0 1 linear"); err == nil {
		t.Error("a line without a name: no error")
	}
}

func TestParseBcacheSize(t *testing.T) {
	for s, want := range map[string]uint64{"0.0k": 0, "150.0k": 150 << 10, "512.0k": 512 << 10, "4.0M": 4 << 20, "1.5G": 3 << 29, "37k": 37 << 10, "512": 512} {
		if got, err := parseBcacheSize(s); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "k", "x.5M"} {
		if _, err := parseBcacheSize(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
	if m := bcacheMode("writethrough [writeback] writearound none"); m != "writeback" {
		t.Errorf("mode %q", m)
	}
}

// TestParseDMIoctl: a DM_TABLE_STATUS reply laid out as the kernel's
// retrieve_status writes it (specs aligned to 8 bytes, next relative to
// the data's start).
func TestParseDMIoctl(t *testing.T) {
	le := binary.LittleEndian
	buf := make([]byte, 1024)
	start := dmIoctlSize
	le.PutUint32(buf[16:], uint32(start))
	le.PutUint32(buf[20:], 2)
	off := 0
	for _, tg := range []DMTarget{{0, 524288, "cache", "8 13/2048 128 185/2048"}, {524288, 2048, "linear", "8:0 2048"}} {
		spec := buf[start+off:]
		le.PutUint64(spec[0:], tg.Start)
		le.PutUint64(spec[8:], tg.Length)
		copy(spec[24:40], tg.Type)
		copy(spec[40:], tg.Args+"\x00")
		next := off + 40 + len(tg.Args) + 1
		next = (next + 7) &^ 7
		le.PutUint32(spec[20:], uint32(next))
		off = next
	}
	got, err := parseDMIoctl(buf, le)
	if err != nil || len(got) != 2 || got[0] != (DMTarget{0, 524288, "cache", "8 13/2048 128 185/2048"}) || got[1] != (DMTarget{524288, 2048, "linear", "8:0 2048"}) {
		t.Fatalf("%+v %v", got, err)
	}
	le.PutUint32(buf[20:], 3) // more targets than the reply holds
	if _, err := parseDMIoctl(buf[:start+off], le); err == nil {
		t.Error("a target count past the reply: no error")
	}
	le.PutUint32(buf[20:], 2)
	le.PutUint32(buf[start+20:], 2000) // next past the buffer
	if _, err := parseDMIoctl(buf, le); err == nil {
		t.Error("a next offset past the buffer: no error")
	}
}

func readTool(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/guest-cache.tools/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The guest-cache tree is what a 6.1 guest showed (testdata/guest-cache.tools/capture.sh)
// with three cached volumes: slow/data, an lvmcache (writethrough, origin on
// sda, cache pool on nvme0n1p1), slow/logs, a dm-writecache (origin on sda,
// cachevol on nvme0n1p1, ext4 at /mnt/logs) and bcache0 (backing sdb,
// cache nvme0n1p2, writeback, sequential cutoff left at 4 MiB, xfs at
// /mnt/bcache), after some I/O through each. The tools directory has what
// dmsetup, lvs and bcache's sysfs said then: hwinfo must agree with them.
func readGuestCache(t *testing.T) *Host {
	t.Helper()
	h, err := Read(context.Background(), Options{Root: "testdata/guest-cache",
		DeviceMapper: DMSetupText{TableText: readTool(t, "dmsetup.table"), StatusText: readTool(t, "dmsetup.status")}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestCachesAgreeWithTools(t *testing.T) {
	h := readGuestCache(t)
	if len(h.Caches) != 3 {
		t.Fatalf("caches: %+v", h.Caches)
	}
	bc, data, logs := h.Caches[0], h.Caches[1], h.Caches[2]

	// lvmcache: lvs -o cache_*.
	lv := lvsRow(t, "lvs-cache.json")
	chunk := lvsNum(t, lv["chunk_size"])
	if data.Device != "dm-0" || data.Name != "slow/data" || data.Kind != CacheKindLVM || data.Mode != lv["cache_mode"] ||
		data.BlockBytes != chunk || data.CacheBytes != lvsNum(t, lv["cache_total_blocks"])*chunk || data.SizeBytes != 256<<20 {
		t.Errorf("lvmcache %+v; lvs %v", data, lv)
	}
	c := data.Counters
	if c == nil || c.UsedBytes != lvsNum(t, lv["cache_used_blocks"])*chunk || c.DirtyBytes != lvsNum(t, lv["cache_dirty_blocks"])*chunk ||
		c.ReadHits != lvsNum(t, lv["cache_read_hits"]) || c.ReadMisses != lvsNum(t, lv["cache_read_misses"]) ||
		c.WriteHits != lvsNum(t, lv["cache_write_hits"]) || c.WriteMisses != lvsNum(t, lv["cache_write_misses"]) || !c.CountsWrites || c.Unit != "ios" {
		t.Errorf("lvmcache counters %+v; lvs %v", c, lv)
	}
	if strings.Join(data.OriginDevices, ",") != "sda" || strings.Join(data.CacheDevices, ",") != "nvme0n1p1" {
		t.Errorf("lvmcache on %v cached by %v, want sda and nvme0n1p1", data.OriginDevices, data.CacheDevices)
	}

	// dm-writecache: lvs -o writecache_*.
	wc := lvsRow(t, "lvs-writecache.json")
	bs := lvsNum(t, wc["writecache_block_size"])
	used := (lvsNum(t, wc["writecache_total_blocks"]) - lvsNum(t, wc["writecache_free_blocks"])) * bs
	if logs.Device != "dm-4" || logs.Name != "slow/logs" || logs.Kind != CacheKindWritecache || logs.Mode != "writeback" || logs.BlockBytes != bs ||
		logs.CacheBytes != lvsNum(t, wc["writecache_total_blocks"])*bs || logs.FSType != "ext4" || len(logs.Mounts) != 1 || logs.Mounts[0].Point != "/mnt/logs" {
		t.Errorf("writecache %+v; lvs %v", logs, wc)
	}
	// lvs has no writecache read and write counts: dmsetup status's
	// fields 5 to 10 (reads, read hits, writes, hits on uncommitted and
	// committed blocks, writes around the cache).
	var st []uint64
	for _, line := range strings.Split(readTool(t, "dmsetup.status"), "\n") {
		if rest, ok := strings.CutPrefix(line, "slow-logs: 0 262144 writecache "); ok {
			for _, f := range strings.Fields(rest) {
				st = append(st, lvsNum(t, f))
			}
		}
	}
	if len(st) != 14 {
		t.Fatalf("writecache status fields %v", st)
	}
	if k := logs.Counters; k == nil || k.UsedBytes != used || k.DirtyBytes != used || k.Unit != "blocks" ||
		k.ReadHits != st[5] || k.ReadMisses != st[4]-st[5] || k.WriteHits != st[6]-st[9] || k.WriteMisses != st[9] || k.ReadHits == 0 {
		t.Errorf("writecache counters %+v; used %d, status %v", logs.Counters, used, st)
	}
	if strings.Join(logs.OriginDevices, ",") != "sda" || strings.Join(logs.CacheDevices, ",") != "nvme0n1p1" {
		t.Errorf("writecache on %v cached by %v", logs.OriginDevices, logs.CacheDevices)
	}

	// bcache: its own sysfs, as the capture printed it.
	said := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(readTool(t, "bcache0")), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		said[k] = v
	}
	n := func(k string) uint64 {
		v, err := strconv.ParseUint(said[k], 10, 64)
		if err != nil {
			t.Fatalf("bcache0 %s: %q", k, said[k])
		}
		return v
	}
	if bc.Device != "bcache0" || bc.Kind != CacheKindBcache || bc.Mode != bcacheMode(said["cache_mode"]) || bc.SequentialCutoffBytes == nil ||
		*bc.SequentialCutoffBytes != 4<<20 || strings.Join(bc.OriginDevices, ",") != "sdb" || strings.Join(bc.CacheDevices, ",") != "nvme0n1p2" ||
		bc.FSType != "xfs" || bc.State != "" {
		t.Errorf("bcache %+v; sysfs %v", bc, said)
	}
	// bcache-super-show: the cache's data area; sysfs counts one more
	// bucket (the first, which holds the superblock).
	super := map[string]string{}
	for _, line := range strings.Split(readTool(t, "bcache-super-cache"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			super[f[0]] = f[1]
		}
	}
	area := lvsNum(t, super["dev.cache.cache_sectors"]) * 512
	bucket := lvsNum(t, super["dev.sectors_per_bucket"]) * 512
	if bc.CacheBytes < area || bc.CacheBytes > area+bucket || bc.BlockBytes != lvsNum(t, super["dev.sectors_per_block"])*512 {
		t.Errorf("bcache cache %d bytes, block %d; bcache-super-show %v", bc.CacheBytes, bc.BlockBytes, super)
	}
	// dirty_data: the tree's, 12 KiB; the 3.3M the capture printed just
	// before was being written back while the tree was copied.
	if k := bc.Counters; k == nil || k.ReadHits != n("stats_total/cache_hits") || k.ReadMisses != n("stats_total/cache_misses") ||
		k.BypassHits != n("stats_total/cache_bypass_hits") || k.BypassMisses != n("stats_total/cache_bypass_misses") || k.CountsWrites ||
		k.DirtyBytes != 12<<10 || k.UsedBytes == 0 || k.ReadHits == 0 {
		t.Errorf("bcache counters %+v; sysfs %v", bc.Counters, said)
	}

	// The stacks bench records under targets on them.
	for dev, want := range map[string]string{
		"dm-0":    "xfs on slow/data (dm-0) lvmcache writethrough of sda cached by nvme0n1p1",
		"dm-4":    "xfs on slow/logs (dm-4) writecache writeback [" + units.FormatSize(used) + " dirty] of sda cached by nvme0n1p1",
		"bcache0": "xfs on bcache0 bcache writeback [12 KiB dirty] of sdb cached by nvme0n1p2",
	} {
		if got := DescribeStack("xfs", dev, h.Stack(dev)); got != want {
			t.Errorf("%s: %q, want %q", dev, got, want)
		}
	}
	if got := Topology(h.Stack("dm-0")); got != "lvmcache" {
		t.Errorf("topology %q", got)
	}
	// The LV keeps its place among the volume groups, with its segment type.
	vg, l := h.LogicalVolume("dm-0")
	if vg == nil || l.Type != "cache" {
		t.Errorf("slow/data as an LV: %+v %+v", vg, l)
	}
}

func lvsRow(t *testing.T, file string) map[string]string {
	t.Helper()
	var r struct {
		Report []struct{ LV []map[string]string }
	}
	if err := json.Unmarshal([]byte(readTool(t, file)), &r); err != nil || len(r.Report) != 1 || len(r.Report[0].LV) != 1 {
		t.Fatalf("%s: %v %+v", file, err, r)
	}
	return r.Report[0].LV[0]
}

func lvsNum(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "B"), 10, 64)
	if err != nil {
		t.Fatalf("lvs number %q: %v", s, err)
	}
	return n
}

// TestCachesWithoutDeviceMapper: a fixture read without its dmsetup output
// (and a live run that may not ask) knows bcache from sysfs alone and no dm
// caches; the LVs still show their segment types.
func TestCachesWithoutDeviceMapper(t *testing.T) {
	h, err := Read(context.Background(), Options{Root: "testdata/guest-cache"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Caches) != 1 || h.Caches[0].Device != "bcache0" || h.Caches[0].Counters == nil {
		t.Fatalf("caches %+v", h.Caches)
	}
	if _, l := h.LogicalVolume("dm-4"); l == nil || l.Type != "writecache" {
		t.Errorf("slow/logs %+v", l)
	}
}

// TestReadCacheCounters: ReadCache reads one volume again, and the
// difference of two readings gives the hit ratio of what ran between.
func TestReadCacheCounters(t *testing.T) {
	dm := DMSetupText{TableText: readTool(t, "dmsetup.table"), StatusText: readTool(t, "dmsetup.status")}
	cv, err := ReadCache(RootsUnder("testdata/guest-cache"), dm, "dm-0")
	if err != nil || cv == nil || cv.Counters == nil || cv.Counters.ReadHits != 306 {
		t.Fatalf("%+v %v", cv, err)
	}
	later := strings.Replace(dm.StatusText, "306 438 4 252", "406 458 4 352", 1)
	cv2, err := ReadCache(RootsUnder("testdata/guest-cache"), DMSetupText{TableText: dm.TableText, StatusText: later}, "dm-0")
	if err != nil {
		t.Fatal(err)
	}
	d := cv2.Counters.Sub(*cv.Counters)
	if d.ReadHits != 100 || d.ReadMisses != 20 || d.WriteMisses != 100 || d.WriteHits != 0 {
		t.Errorf("difference %+v", d)
	}
	if r, ok := d.ReadHitRatio(); !ok || r != 100.0/120 {
		t.Errorf("read hit ratio %v %v", r, ok)
	}
	if r, ok := d.HitRatio(); !ok || r != 100.0/220 {
		t.Errorf("hit ratio %v %v", r, ok)
	}
	if _, ok := (CacheCounters{}).HitRatio(); ok {
		t.Error("no I/O has a hit ratio")
	}
	if cv, err := ReadCache(RootsUnder("testdata/guest-cache"), dm, "sda"); cv != nil || err != nil {
		t.Errorf("a plain disk: %+v %v", cv, err)
	}
	bc, err := ReadCache(RootsUnder("testdata/guest-cache"), nil, "bcache0")
	if err != nil || bc == nil || bc.Counters == nil || bc.Counters.ReadHits != 200 {
		t.Errorf("bcache0 %+v %v", bc, err)
	}
}
