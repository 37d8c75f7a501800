package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

func TestWorkloadWarnings(t *testing.T) {
	base := func() workload.Workload {
		w := workload.DefaultWorkload()
		w.Name = "w"
		return w
	}
	env := environment{RAMBytes: 24 << 30}
	tests := []struct {
		name string
		edit func(w *workload.Workload)
		env  environment
		want []string // substrings, one per expected warning; none means no warning
	}{
		{"clean", func(w *workload.Workload) {}, env, nil},
		{"buffered small", func(w *workload.Workload) { w.Direct = false }, env, []string{"smaller than RAM (24 GiB) and O_DIRECT is off"}},
		{"buffered large", func(w *workload.Workload) { w.Direct = false; w.SizeBytes = 32 << 30 }, env, nil},
		{"buffered, RAM unknown", func(w *workload.Workload) { w.Direct = false }, environment{}, nil},
		{"sync deep", func(w *workload.Workload) { w.Engine = "sync"; w.IODepth = 8 }, env, []string{"iodepth 8 with the sync engine"}},
		{"auto deep", func(w *workload.Workload) { w.IODepth = 8 }, env, nil},
		{"few offsets", func(w *workload.Workload) { w.RW = "randrw"; w.BlockBytes = 32 << 20; w.SizeBytes = 2 << 30 }, env,
			[]string{"bs=32M size=2G gives 64 offsets: not random I/O"}},
		{"sequential big blocks", func(w *workload.Workload) { w.BlockBytes = 32 << 20; w.SizeBytes = 2 << 30 }, env, nil},
		{"just enough offsets", func(w *workload.Workload) { w.RW = "randread"; w.SizeBytes = 1000 * 4096 }, env, nil},
		{"short", func(w *workload.Workload) { w.Runtime = 2 * time.Second }, env, []string{"runtime 2s is under 3s"}},
		{"size-based", func(w *workload.Workload) { w.Runtime = 0 }, env, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := base()
			tc.edit(&w)
			got := workloadWarnings(w, tc.env)
			checkWarnings(t, got, tc.want)
		})
	}
}

func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d matching %q", got, len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %q does not say %q", got[i], want[i])
		}
	}
}

func TestTargetWarnings(t *testing.T) {
	tests := []struct {
		name string
		env  environment
		want []string
	}{
		{"plain xfs", environment{FSType: "xfs", MountOptions: "rw,relatime,attr2"}, nil},
		{"btrfs plain", environment{FSType: "btrfs", MountOptions: "rw,relatime,ssd,space_cache=v2"}, nil},
		{"btrfs compress", environment{FSType: "btrfs", MountOptions: "rw,compress=zstd:3,ssd"}, []string{"btrfs mounted with compress=zstd:3"}},
		{"btrfs compress-force", environment{FSType: "btrfs", MountOptions: "rw,compress-force=lzo"}, []string{"compress-force=lzo"}},
		{"zfs", environment{FSType: "zfs"}, []string{"zfs filesystem"}},
		{"vdo", environment{FSType: "xfs", DedupDevice: "target is on device-mapper volume dm-3 (vg-vpool0-vpool), a VDO volume"}, []string{"VDO volume"}},
		{"governor performance", environment{Governors: map[string]int{"performance": 4}}, nil},
		{"governor mixed", environment{Governors: map[string]int{"performance": 2, "powersave": 2}}, []string{"governor is powersave on 2 of 4 CPUs"}},
		{"virtual disk", environment{VirtualDisk: true, VirtualBy: "vmware", Disk: "sdb"}, []string{"sdb is a virtual disk emulated by vmware"}},
		{"physical disk", environment{Disk: "sdb"}, nil},
		{"tmpfs", environment{FSType: "tmpfs"}, []string{"data lives in RAM"}},
		{"nfs", environment{FSType: "nfs4"}, []string{"network or host-shared"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkWarnings(t, targetWarnings(tc.env), tc.want)
		})
	}
}

func TestRepetitionWarnings(t *testing.T) {
	w := workload.DefaultWorkload()
	w.Name, w.IODepth = "deep", 32
	env := environment{RAMBytes: 24 << 30}
	checkWarnings(t, repetitionWarnings(w, record.Repetition{Engine: "sync", Direct: true}, env), []string{"sync engine ran (io_uring unavailable)"})
	checkWarnings(t, repetitionWarnings(w, record.Repetition{Engine: "io_uring", Direct: true}, env), nil)
	checkWarnings(t, repetitionWarnings(w, record.Repetition{Engine: "io_uring", Direct: false}, env), []string{"O_DIRECT was refused"})
}

func TestReadGovernors(t *testing.T) {
	root := t.TempDir()
	for cpu, g := range map[string]string{"cpu0": "powersave\n", "cpu1": "performance\n", "cpu2": "powersave\n"} {
		d := filepath.Join(root, "sys/devices/system/cpu", cpu, "cpufreq")
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "scaling_governor"), []byte(g), 0o644)
	}
	// cpufreq without a governor file, and a non-CPU directory, count for nothing.
	os.MkdirAll(filepath.Join(root, "sys/devices/system/cpu/cpu3/cpufreq"), 0o755)
	os.MkdirAll(filepath.Join(root, "sys/devices/system/cpu/cpufreq/policy0"), 0o755)
	got := readGovernors(hwinfo.RootsUnder(root))
	if len(got) != 2 || got["powersave"] != 2 || got["performance"] != 1 {
		t.Errorf("governors %v", got)
	}
	if g := readGovernors(hwinfo.RootsUnder(t.TempDir())); len(g) != 0 {
		t.Errorf("no cpufreq: %v", g)
	}
}

func TestDedupDevice(t *testing.T) {
	root := t.TempDir()
	mk := func(dev, name, uuid string, slaves ...string) {
		d := filepath.Join(root, "sys/block", dev)
		os.MkdirAll(filepath.Join(d, "dm"), 0o755)
		os.MkdirAll(filepath.Join(d, "slaves"), 0o755)
		os.WriteFile(filepath.Join(d, "dm/name"), []byte(name+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "dm/uuid"), []byte(uuid+"\n"), 0o644)
		for _, s := range slaves {
			os.MkdirAll(filepath.Join(d, "slaves", s), 0o755)
		}
	}
	mk("dm-0", "vg-root", "LVM-abc")
	mk("dm-1", "vg-vpool0-vpool", "LVM-def")
	mk("dm-2", "vg-vdolv", "LVM-ghi", "dm-1")
	mk("dm-3", "vdo0", "VDO-1234")
	if got := dedupDevice(hwinfo.RootsUnder(root), "dm-0"); got != "" {
		t.Errorf("plain LV flagged: %s", got)
	}
	if got := dedupDevice(hwinfo.RootsUnder(root), "dm-2"); !strings.Contains(got, "dm-1 (vg-vpool0-vpool)") {
		t.Errorf("LV on a VDO pool: %q", got)
	}
	if got := dedupDevice(hwinfo.RootsUnder(root), "dm-3"); !strings.Contains(got, "VDO") {
		t.Errorf("stand-alone VDO: %q", got)
	}
	if got := dedupDevice(hwinfo.RootsUnder(root), "sdb1"); got != "" {
		t.Errorf("partition flagged: %s", got)
	}
}

func TestAgreementWarning(t *testing.T) {
	w := workload.DefaultWorkload()
	w.Name, w.BlockBytes, w.Jobs, w.IODepth = "w", 1<<20, 2, 4 // 16 MiB may be in flight at the edges
	run := func(engineRead, devRead uint64) record.Repetition {
		a := float64(devRead) / float64(engineRead) * 100
		return record.Repetition{ElapsedMS: 1000, Read: &record.DirResult{IOBytes: engineRead}, Device: &record.DeviceIO{ReadBytes: devRead, AgreementPercent: &a}}
	}
	if got := agreementWarning(w, run(1<<30, 1<<30+30<<20)); got != "" {
		t.Errorf("edge I/O flagged: %s", got)
	}
	if got := agreementWarning(w, run(1<<30, 1<<30+100<<20)); !strings.Contains(got, "the device moved 110%") {
		t.Errorf("excess device traffic: %q", got)
	}
	if got := agreementWarning(w, run(1<<30, 100<<20)); !strings.Contains(got, "moved 10%") || !strings.Contains(got, "cache") {
		t.Errorf("reads served from a cache: %q", got)
	}
	w.Ramp = time.Second // a second of ramp explains another window's worth
	if got := agreementWarning(w, run(1<<30, 2<<30)); got != "" {
		t.Errorf("ramp traffic flagged: %s", got)
	}
	if got := agreementWarning(w, record.Repetition{}); got != "" {
		t.Errorf("no device: %s", got)
	}
}

// TestCacheWarnings: what would fool a cache benchmark (issue 15 item 4):
// bcache's sequential cutoff left on under a sequential workload, and a
// timed run that ended before it moved what the cache can hold of its
// working set.
func TestCacheWarnings(t *testing.T) {
	cut := uint64(4 << 20)
	zero := uint64(0)
	bc := &hwinfo.CachedVolume{Device: "bcache0", Kind: "bcache", CacheBytes: 1 << 30, SequentialCutoffBytes: &cut}
	seq := workload.DefaultWorkload()
	seq.Name, seq.RW, seq.BlockBytes, seq.SizeBytes = "seqread", "read", 1<<20, 256<<20
	checkWarnings(t, workloadWarnings(seq, environment{Cache: bc}), []string{"bcache0's sequential_cutoff is 4 MiB: sequential I/O past it bypasses the cache"})
	rnd := seq
	rnd.Name, rnd.RW, rnd.BlockBytes = "rnd", "randread", 4096
	checkWarnings(t, workloadWarnings(rnd, environment{Cache: bc}), nil)
	off := *bc
	off.SequentialCutoffBytes = &zero
	checkWarnings(t, workloadWarnings(seq, environment{Cache: &off}), nil)
	lvm := &hwinfo.CachedVolume{Device: "dm-3", Kind: "lvmcache", CacheBytes: 64 << 20}
	checkWarnings(t, workloadWarnings(seq, environment{Cache: lvm}), nil)

	// 10 s moved 100 MiB of a 256 MiB working set on a 1 GiB cache: 25.6 s to fill.
	rep := record.Repetition{ElapsedMS: 10000, Read: &record.DirResult{IOBytes: 100 << 20}}
	rnd.Runtime = 10 * time.Second
	got := repetitionWarnings(rnd, rep, environment{Cache: bc})
	checkWarnings(t, got, []string{"moved 100 MiB in 10s, less than the 256 MiB of its working set the cache (bcache0, bcache) can hold"})
	if len(got) == 1 && !strings.Contains(got[0], "filling it takes 25.6s") {
		t.Errorf("fill time not said: %q", got[0])
	}
	// The cache smaller than the working set: filling it is what counts.
	checkWarnings(t, repetitionWarnings(rnd, rep, environment{Cache: lvm}), nil)
	checkWarnings(t, repetitionWarnings(rnd, rep, environment{}), nil)
	rnd.Runtime = 0 // one pass over the working set: filled by construction
	checkWarnings(t, repetitionWarnings(rnd, rep, environment{Cache: bc}), nil)
}
