package workload

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// wl is a compact expected workload: name rw bs size jobs iodepth runtime.
type wl struct {
	name    string
	rw      string
	bs      uint64
	size    uint64
	jobs    int
	iodepth int
	runtime time.Duration
}

func (e wl) String() string {
	return fmt.Sprintf("%s %s bs=%d size=%d jobs=%d qd=%d rt=%s", e.name, e.rw, e.bs, e.size, e.jobs, e.iodepth, e.runtime)
}

func compact(w Workload) wl {
	return wl{w.Name, w.RW, w.BlockBytes, w.SizeBytes, w.Jobs, w.IODepth, w.Runtime}
}

const (
	kib = uint64(1) << 10
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

func TestSets(t *testing.T) {
	s5, s10, s2 := 5*time.Second, 10*time.Second, 2*time.Second
	want := map[string][]wl{
		"fileserver": {
			{"seqread", "read", 32 * mib, 2 * gib, 16, 1, s10},
			{"seqwrite", "write", 32 * mib, 2 * gib, 16, 1, s10},
			{"randrw", "randrw", 32 * mib, 2 * gib, 16, 1, s10},
		},
		"cdm": {
			{"seq1m-q8t1-read", "read", mib, gib, 1, 8, s5},
			{"seq1m-q1t1-read", "read", mib, gib, 1, 1, s5},
			{"rnd4k-q32t1-read", "randread", 4 * kib, gib, 1, 32, s5},
			{"rnd4k-q1t1-read", "randread", 4 * kib, gib, 1, 1, s5},
			{"seq1m-q8t1-write", "write", mib, gib, 1, 8, s5},
			{"seq1m-q1t1-write", "write", mib, gib, 1, 1, s5},
			{"rnd4k-q32t1-write", "randwrite", 4 * kib, gib, 1, 32, s5},
			{"rnd4k-q1t1-write", "randwrite", 4 * kib, gib, 1, 1, s5},
		},
		"nvme": {
			{"seq1m-q8t1-read", "read", mib, gib, 1, 8, s5},
			{"seq128k-q32t1-read", "read", 128 * kib, gib, 1, 32, s5},
			{"rnd4k-q32t16-read", "randread", 4 * kib, gib, 16, 32, s5},
			{"rnd4k-q1t1-read", "randread", 4 * kib, gib, 1, 1, s5},
			{"seq1m-q8t1-write", "write", mib, gib, 1, 8, s5},
			{"seq128k-q32t1-write", "write", 128 * kib, gib, 1, 32, s5},
			{"rnd4k-q32t16-write", "randwrite", 4 * kib, gib, 16, 32, s5},
			{"rnd4k-q1t1-write", "randwrite", 4 * kib, gib, 1, 1, s5},
		},
		"video": {
			{"video-first-write", "write", mib, 8 * gib, 1, 1, 0},
			{"video-read", "read", mib, 8 * gib, 1, 1, 0},
			{"video-rewrite", "write", mib, 8 * gib, 1, 1, 0},
			{"video-reread", "read", mib, 8 * gib, 1, 1, 0},
		},
		"quick": {
			{"seq1m-read", "read", mib, 256 * mib, 1, 1, s2},
			{"seq1m-write", "write", mib, 256 * mib, 1, 1, s2},
			{"rnd4k-read", "randread", 4 * kib, 256 * mib, 1, 1, s2},
			{"rnd4k-write", "randwrite", 4 * kib, 256 * mib, 1, 1, s2},
		},
	}
	if got := strings.Join(SetNames(), ","); got != "cdm,fileserver,nvme,quick,video" {
		t.Errorf("SetNames = %s", got)
	}
	for name, exp := range want {
		t.Run(name, func(t *testing.T) {
			ws, err := Plan(Request{Set: name})
			if err != nil {
				t.Fatal(err)
			}
			if len(ws) != len(exp) {
				t.Fatalf("%d workloads, want %d", len(ws), len(exp))
			}
			for i, w := range ws {
				if got := compact(w); got != exp[i] {
					t.Errorf("workload %d:\n got %v\nwant %v", i, got, exp[i])
				}
				if !w.Direct {
					t.Errorf("%s: O_DIRECT off", w.Name)
				}
				if w.Engine != "auto" || w.Data != "random" {
					t.Errorf("%s: engine %q data %q", w.Name, w.Engine, w.Data)
				}
			}
		})
	}
}

func TestSetDetails(t *testing.T) {
	fs, _ := Plan(Request{Set: "fileserver"})
	rr := fs[2]
	if rr.RWMixRead != 50 || rr.RowName("read") != "randread" || rr.RowName("write") != "randwrite" {
		t.Errorf("fileserver randrw: mix %d rows %s/%s", rr.RWMixRead, rr.RowName("read"), rr.RowName("write"))
	}
	video, _ := Plan(Request{Set: "video"})
	if !video[0].Fresh || !video[0].Fsync || !video[2].Fsync {
		t.Errorf("video: first write must be fresh and synced, rewrite synced: %+v", video)
	}
	for _, w := range video[1:] {
		if w.Fresh {
			t.Errorf("video %s recreates the file", w.Name)
		}
	}
	// A set handed out twice is two copies: editing one must not leak.
	a, _ := LookupSet("quick")
	a.Workloads[0].Name = "changed"
	b, _ := LookupSet("quick")
	if b.Workloads[0].Name != "seq1m-read" {
		t.Error("LookupSet shares state between calls")
	}
}

func TestPlanOverrides(t *testing.T) {
	ws, err := Plan(Request{Set: "cdm", Overrides: Overrides{
		Runtime: time.Second, Size: 64 * mib, Jobs: 2, IODepth: 4, Engine: "sync", NoDirect: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Runtime != time.Second || w.SizeBytes != 64*mib || w.Jobs != 2 || w.IODepth != 4 || w.Engine != "sync" || w.Direct {
			t.Errorf("override not applied: %+v", w)
		}
	}
	// cdm names follow the parameters they describe, and tests the
	// overrides made identical run once.
	var names []string
	for _, w := range ws {
		names = append(names, w.Name)
	}
	if got := strings.Join(names, " "); got != "seq1m-q4t2-read rnd4k-q4t2-read seq1m-q4t2-write rnd4k-q4t2-write" {
		t.Errorf("names %s", got)
	}

	ws, err = Plan(Request{Set: "cdm", Overrides: Overrides{BS: 64 * kib}})
	if err != nil {
		t.Fatal(err)
	}
	if ws[0].Name != "seq64k-q8t1-read" || ws[2].Name != "rnd64k-q32t1-read" {
		t.Errorf("bs override names: %s, %s", ws[0].Name, ws[2].Name)
	}

	// Video stays size-based whatever --runtime says; --size still applies.
	ws, err = Plan(Request{Set: "video", Overrides: Overrides{Runtime: time.Second, Size: gib}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Runtime != 0 || w.SizeBytes != gib {
			t.Errorf("video %s: runtime %s size %d", w.Name, w.Runtime, w.SizeBytes)
		}
	}

	// Flags fill what a spec leaves out, never what it says.
	ws, err = Plan(Request{
		Specs:     []string{"name=a,rw=randread,bs=8k", "name=b,rw=write,jobs=3,runtime=4s"},
		Overrides: Overrides{BS: mib, Jobs: 2, Runtime: 7 * time.Second, Size: 128 * mib},
	})
	if err != nil {
		t.Fatal(err)
	}
	exp := []wl{
		{"a", "randread", 8 * kib, 128 * mib, 2, 1, 7 * time.Second},
		{"b", "write", mib, 128 * mib, 3, 1, 4 * time.Second},
	}
	for i, w := range ws {
		if compact(w) != exp[i] {
			t.Errorf("spec %d:\n got %v\nwant %v", i, compact(w), exp[i])
		}
	}

	// An unnamed spec is named after its parameters, overrides included.
	ws, err = Plan(Request{Specs: []string{"rw=randread"}, Overrides: Overrides{IODepth: 16}})
	if err != nil {
		t.Fatal(err)
	}
	if ws[0].Name != "randread-4k-q16t1" {
		t.Errorf("default name %s", ws[0].Name)
	}
}

func TestPlanDefaultsAndErrors(t *testing.T) {
	ws, err := Plan(Request{})
	if err != nil || len(ws) != 4 || ws[0].Name != "seq1m-read" {
		t.Fatalf("default set: %v %v", ws, err)
	}
	if (Request{}).SetName() != "quick" || (Request{Specs: []string{"rw=read"}}).SetName() != "custom" {
		t.Error("SetName")
	}
	bad := []struct {
		name string
		req  Request
		msg  string
	}{
		{"unknown set", Request{Set: "turbo"}, `unknown workload set "turbo"`},
		{"set and spec", Request{Set: "quick", Specs: []string{"rw=read"}}, "not both"},
		{"dup names", Request{Specs: []string{"rw=read", "rw=read"}}, "used twice"},
		{"bs override too big", Request{Set: "quick", Overrides: Overrides{BS: 512 * mib}}, "smaller than bs"},
		{"bs override unaligned", Request{Set: "quick", Overrides: Overrides{BS: 1000}}, "multiple of 512"},
		{"repeat", Request{Set: "quick", Repeat: MaxRepeat + 1}, "repeat"},
		{"negative jobs", Request{Set: "quick", Overrides: Overrides{Jobs: -1}}, "at least 1"},
		{"jobs too many", Request{Set: "quick", Overrides: Overrides{Jobs: 5000}}, "out of range"},
		{"engine", Request{Set: "quick", Overrides: Overrides{Engine: "aio"}}, "engine"},
		{"bad spec", Request{Specs: []string{"rw=read,bs=x"}}, "bs=x"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(tc.req)
			if err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Plan = %v, want usage error mentioning %q", err, tc.msg)
			}
		})
	}
}
