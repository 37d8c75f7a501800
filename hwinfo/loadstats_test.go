package hwinfo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Captured on this project's build machine (Linux 6.1, 2 CPUs, a virtio
// disk): /proc/stat's first lines, /proc/meminfo's head, and
// /sys/block/vda/stat with discard and flush columns (17 fields).
const (
	procStat = `cpu  1203719 0 550979 633304 90861 0 43501 4968 7 0
cpu0 595647 0 270634 333362 42826 0 18764 2467 2 0
cpu1 608072 0 280345 299942 48035 0 24737 2501 5 0
intr 1 2 3
`
	procMeminfo = `MemTotal:       24582288 kB
MemFree:        10143208 kB
MemAvailable:   21101444 kB
Buffers:          215396 kB
Cached:         10584120 kB
SwapCached:            0 kB
Active:          6262828 kB
`
	vdaStat = "11926346   280680 140300202  2315827  3710027   483375 690012032  5328826        0   681556  7822492   731559      198 721173160   109703   371761    68134\n"
)

func TestParseCPUStat(t *testing.T) {
	c, err := ParseCPUStat(procStat)
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{User: 1203719, System: 550979, Idle: 633304, IOWait: 90861, SoftIRQ: 43501, Steal: 4968}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if c.Total() != 1203719+550979+633304+90861+43501+4968 {
		t.Errorf("total %d", c.Total())
	}
	// A 2.6.9 kernel's line has no irq, softirq or steal.
	if c, err := ParseCPUStat("cpu 10 1 5 100 3\n"); err != nil || c.Steal != 0 || c.IOWait != 3 {
		t.Errorf("short line: %+v %v", c, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5\n", "cpu 1 2\n", "cpu 1 x 3 4 5\n"} {
		if _, err := ParseCPUStat(bad); err == nil {
			t.Errorf("ParseCPUStat(%q) accepted", bad)
		}
	}
	if _, err := ParseCPUStat("intr 1\n"); !errors.Is(err, ErrNoCPULine) {
		t.Errorf("no cpu line: %v", err)
	}
}

func TestParseMemInfo(t *testing.T) {
	m, err := ParseMemInfo(procMeminfo)
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalBytes != 24582288*1024 || !m.HasAvailable || m.UsedBytes() != (24582288-21101444)*1024 {
		t.Errorf("got %+v used %d", m, m.UsedBytes())
	}
	if m.PageCacheBytes() != (10584120+215396)*1024 {
		t.Errorf("page cache %d", m.PageCacheBytes())
	}
	// Before MemAvailable (Linux < 3.14): free, buffers and cache are free.
	old, err := ParseMemInfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 250 kB\n")
	if err != nil || old.HasAvailable || old.UsedBytes() != 600*1024 {
		t.Errorf("old kernel: %+v used %d, %v", old, old.UsedBytes(), err)
	}
	if _, err := ParseMemInfo("MemFree: 1 kB\n"); !errors.Is(err, ErrNoMemTotal) {
		t.Errorf("no MemTotal: %v", err)
	}
	if _, err := ParseMemInfo("MemTotal: 1000 kB\nCached: lots\n"); err == nil || !strings.Contains(err.Error(), "Cached") {
		t.Errorf("malformed Cached: %v", err)
	}
}

func TestParseBlockStat(t *testing.T) {
	s, err := ParseBlockStat(vdaStat)
	if err != nil {
		t.Fatal(err)
	}
	want := BlockStat{ReadIOs: 11926346, ReadMerges: 280680, ReadSectors: 140300202, ReadTicksMs: 2315827,
		WriteIOs: 3710027, WriteMerges: 483375, WriteSectors: 690012032, WriteTicksMs: 5328826,
		IOTicksMs: 681556, QueueTicksMs: 7822492}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if _, err := ParseBlockStat("1 2 3 4 5 6 7 8 9 10 11"); err != nil {
		t.Errorf("11 fields (Linux 4.18): %v", err)
	}
	for _, bad := range []string{"", "1 2 3", "1 2 3 4 5 6 7 8 9 10 -1"} {
		if _, err := ParseBlockStat(bad); err == nil {
			t.Errorf("ParseBlockStat(%q) accepted", bad)
		}
	}
}

func TestLoadStatsUnderRoots(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/stat", procStat)
	write("proc/meminfo", procMeminfo)
	write("sys/dev/block/253:0/stat", vdaStat)
	r := RootsUnder(dir)
	if c, err := r.CPUTimes(); err != nil || c.User != 1203719 {
		t.Errorf("CPUTimes %+v %v", c, err)
	}
	if m, err := r.MemInfo(); err != nil || m.CachedBytes != 10584120*1024 {
		t.Errorf("MemInfo %+v %v", m, err)
	}
	if s, err := r.BlockStat("253:0"); err != nil || s.WriteIOs != 3710027 {
		t.Errorf("BlockStat %+v %v", s, err)
	}
	if _, err := r.BlockStat("8:0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent device: %v", err)
	}
}

func FuzzParseLoadStats(f *testing.F) {
	f.Add(procStat)
	f.Add(procMeminfo)
	f.Add(vdaStat)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseCPUStat(s)
		if m, err := ParseMemInfo(s); err == nil && m.UsedBytes() > m.TotalBytes {
			t.Errorf("used %d over total %d", m.UsedBytes(), m.TotalBytes)
		}
		_, _ = ParseBlockStat(s)
	})
}
