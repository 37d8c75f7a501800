package cachebench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// fake is a machine with a 4 GiB HDD sdb and a 256 MiB SSD nvme0n1 whose
// benchmarks give figures by phase, as a cache does: the HDD slow, the
// SSD fast, the cached volume slow cold and fast warm, with the hit ratio
// rising.
type fake struct {
	calls    []string
	reqs     []workload.Request
	built    bool
	released []bool // cleanup flag of each release
	failAt   string // the label of the bench call that fails
	n        int
	saved    [][]string // the record ids of each Save
	volume   uint64     // the cached volume's size
}

var figures = map[string][2]float64{ // IOPS, hit ratio (-1: none)
	"hdd": {150, -1}, "ssd": {20000, -1}, "ssd fill": {0, -1},
	"lvmcache cold": {180, 0.05}, "lvmcache warm-up": {0, -1}, "lvmcache warm": {4000, 0.85}, "lvmcache steady": {5000, 0.9},
}

func (f *fake) deps() Deps {
	return Deps{
		Facts: func(ctx context.Context) (*hwinfo.Host, error) {
			h := &hwinfo.Host{Disks: []hwinfo.Disk{{Name: "sdb", Path: "/dev/sdb", SizeBytes: 4 << 30}, {Name: "nvme0n1", Path: "/dev/nvme0n1", SizeBytes: 256 << 20}}}
			if f.built {
				h.Caches = []hwinfo.CachedVolume{{Device: "dm-3", Kind: "lvmcache", Mode: "writethrough", CacheBytes: 240 << 20, SizeBytes: f.volume,
					Counters: &hwinfo.CacheCounters{DirtyBytes: 8 << 20}}}
			}
			return h, nil
		},
		Check: func(ctx context.Context, host *hwinfo.Host) error { f.calls = append(f.calls, "check"); return nil },
		Build: func(ctx context.Context, host *hwinfo.Host) (string, error) {
			f.calls = append(f.calls, "build")
			f.built = true
			return "/dev/cachebench/cachebench", nil
		},
		Release: func(ctx context.Context, cleanup bool) error {
			f.calls = append(f.calls, "release")
			f.released = append(f.released, cleanup)
			f.built = false
			return nil
		},
		Bench: func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error) {
			f.calls = append(f.calls, req.Label+" "+req.Target)
			f.reqs = append(f.reqs, req)
			if req.Label == f.failAt {
				return nil, errors.New("engine failed")
			}
			f.n++
			rec := &record.Record{ID: fmt.Sprintf("r%02d", f.n), Label: req.Label}
			fig := figures[req.Label]
			for _, spec := range req.Specs {
				w, _, err := workload.ParseSpec(spec, workload.DefaultWorkload())
				if err != nil {
					return nil, err
				}
				wr := record.WorkloadResult{Params: w, Summary: map[string]record.DirSummary{}}
				if w.Reads() {
					wr.Summary["read"] = record.DirSummary{IOPS: record.Stat{Median: fig[0]}, BWBytesPerS: record.Stat{Median: fig[0] * 4096}}
				}
				for i := 0; i < max(req.Repeat, 1); i++ {
					run := record.Repetition{Index: i + 1}
					if fig[1] >= 0 {
						r := fig[1]
						run.Cache = &record.CacheIO{HitRatio: &r}
					}
					wr.Runs = append(wr.Runs, run)
				}
				rec.Workloads = append(rec.Workloads, wr)
			}
			return rec, nil
		},
		Save: func(recs []*record.Record) error {
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			f.saved = append(f.saved, ids)
			return nil
		},
		Resolve: func(path string) (string, error) {
			if path == "/dev/cachebench/cachebench" {
				return "dm-3", nil
			}
			return strings.TrimPrefix(path, "/dev/"), nil
		},
	}
}

func opts() Options {
	return Options{Origin: "/dev/sdb", CacheDevice: "/dev/nvme0n1", Kind: "lvmcache", Mode: "writethrough", Runtime: 5 * time.Second,
		Repeat: 3, BlockBytes: 4096, IODepth: 4}
}

func TestRunPhases(t *testing.T) {
	f := &fake{volume: 3 << 30}
	var progress bytes.Buffer
	o := opts()
	o.Progress = &progress
	res, err := Run(context.Background(), o, f.deps())
	if err != nil {
		t.Fatal(err)
	}
	// The SSD alone before the build (written once first); the cache per
	// working set cold, the warm-up (dm-cache: two read passes), warm,
	// steady; the release, not as a cleanup; then the HDD alone.
	want := []string{"check", "ssd fill /dev/nvme0n1", "ssd /dev/nvme0n1", "build"}
	for range 4 {
		want = append(want, "lvmcache cold /dev/cachebench/cachebench", "lvmcache warm-up /dev/cachebench/cachebench",
			"lvmcache warm-up /dev/cachebench/cachebench", "lvmcache warm /dev/cachebench/cachebench", "lvmcache steady /dev/cachebench/cachebench")
	}
	want = append(want, "release", "hdd /dev/sdb")
	if strings.Join(f.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
	if len(f.released) != 1 || f.released[0] {
		t.Errorf("releases %v", f.released)
	}
	// Working sets of the built cache's size (240 MiB): half, near, twice,
	// twice with zipf, each in its own region of the cached volume.
	if len(res.WorkingSets) != 4 {
		t.Fatalf("working sets %+v", res.WorkingSets)
	}
	var off uint64
	for i, ws := range res.WorkingSets {
		wantSize := []uint64{120 << 20, 240 << 20, 480 << 20, 480 << 20}[i]
		if ws.SizeBytes != wantSize || ws.OffsetBytes != off {
			t.Errorf("%s: %d bytes at %d, want %d at %d", ws.Name, ws.SizeBytes, ws.OffsetBytes, wantSize, off)
		}
		off += ws.SizeBytes
		if ws.HDD == nil || ws.HDD.IOPS != 150 || ws.SSD == nil || ws.SSD.IOPS != 20000 || ws.Cold == nil || *ws.Cold.HitRatio != 0.05 ||
			ws.Warm == nil || *ws.Warm.HitRatio != 0.85 || ws.Steady == nil || ws.Steady.IOPS != 5000 {
			t.Errorf("%s phases %+v %+v %+v %+v %+v", ws.Name, ws.HDD, ws.SSD, ws.Cold, ws.Warm, ws.Steady)
		}
	}
	// The SSD alone is read with working sets of the cache device's size
	// (256 MiB), at most all of it.
	if res.WorkingSets[3].Distribution != "zipf:1.2" || res.WorkingSets[0].SSDSizeBytes != 128<<20 || res.WorkingSets[1].SSDSizeBytes != 256<<20 ||
		res.WorkingSets[2].SSDSizeBytes != 256<<20 || res.CacheBytes != 240<<20 {
		t.Errorf("result %+v", res)
	}
	// The cold run is one run; warm and steady --repeat; the warm-up a
	// size-based pass that writes nothing on a dm-cache; the SSD's fill
	// writes; the specs carry the regions and the skew.
	for _, r := range f.reqs {
		switch {
		case r.Label == "lvmcache cold" && r.Repeat != 1, r.Label == "lvmcache warm" && r.Repeat != 3:
			t.Errorf("%s: repeat %d", r.Label, r.Repeat)
		case r.Label == "lvmcache warm-up" && (r.AllowDeviceWrite || !strings.Contains(r.Specs[0], "rw=randread") || !strings.Contains(r.Specs[0], "runtime=0")):
			t.Errorf("warm-up %+v", r)
		case r.Label == "ssd fill" && (!r.AllowDeviceWrite || !strings.Contains(r.Specs[0], "rw=write")):
			t.Errorf("ssd fill %+v", r)
		case r.Label == "hdd" && (len(r.Specs) != 4 || !strings.Contains(r.Specs[3], "offset=880803840") || !strings.Contains(r.Specs[3], "distribution=zipf:1.2")):
			t.Errorf("hdd specs %q", r.Specs)
		case r.Label == "ssd" && strings.Contains(strings.Join(r.Specs, " "), "offset=1"):
			t.Errorf("the SSD alone reads at its start: %q", r.Specs)
		}
	}
	s := res.WorkingSets[0].Sentence
	for _, part := range []string{"below (120 MiB, 50% of the cache)", "5000 IOPS, 33.3 times the HDD alone (150)", "25% of the SSD alone (20000)", "90% hit ratio (cold 5%)"} {
		if !strings.Contains(s, part) {
			t.Errorf("sentence %q does not say %q", s, part)
		}
	}
	if !strings.Contains(res.WorkingSets[2].Sentence, "2.0 times the cache") || !strings.Contains(res.WorkingSets[3].Sentence, "zipf:1.2") {
		t.Errorf("sentences %q / %q", res.WorkingSets[2].Sentence, res.WorkingSets[3].Sentence)
	}
	if res.Flush != nil {
		t.Errorf("a writethrough cache has a flush: %+v", res.Flush)
	}
	if n := len(res.Measured()); n != 2+4*3 {
		t.Errorf("%d measured records, want the disks alone and 3 phases per working set", n)
	}
	var out bytes.Buffer
	if err := report.WriteCache(&out, "table", res.Report(nil), report.Layout{}); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"lvmcache (writethrough) over /dev/sdb, cached by /dev/nvme0n1", "below 120 MiB", "HDD alone", "SSD alone (256 MiB)", "steady", "90.0%", s} {
		if !strings.Contains(out.String(), part) {
			t.Errorf("text does not say %q:\n%s", part, out.String())
		}
	}
	if !strings.Contains(progress.String(), "cachebench: working set above-zipf (480 MiB): cold") {
		t.Errorf("progress %q", progress.String())
	}
}

// TestRunWriteback: bcache and writecache warm by writes; a writeback
// cache's dirty bytes at release and the release's time are reported.
func TestRunWriteback(t *testing.T) {
	f := &fake{volume: 3 << 30}
	for k, v := range figures {
		if rest, ok := strings.CutPrefix(k, "lvmcache "); ok {
			figures["bcache "+rest] = v
		}
	}
	o := opts()
	o.Kind, o.Mode = "bcache", "writeback"
	tick := time.Unix(0, 0)
	d := f.deps()
	d.Now = func() time.Time { tick = tick.Add(1500 * time.Millisecond); return tick }
	res, err := Run(context.Background(), o, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.reqs {
		if r.Label == "bcache warm-up" && (!r.AllowDeviceWrite || !strings.Contains(r.Specs[0], "rw=randwrite")) {
			t.Errorf("bcache warm-up %+v", r)
		}
	}
	if res.Flush == nil || res.Flush.DirtyBytes != 8<<20 || res.Flush.ReleaseMS != 1500 {
		t.Errorf("flush %+v", res.Flush)
	}
}

// TestRunFailureReleases: a failure while the cache is built releases it
// (as a cleanup), also when the cached volume is too small for the working
// sets; one before the build or after the release releases nothing more.
func TestRunFailureReleases(t *testing.T) {
	f := &fake{failAt: "lvmcache warm", volume: 3 << 30}
	if _, err := Run(context.Background(), opts(), f.deps()); err == nil || !strings.Contains(err.Error(), "engine failed") {
		t.Fatalf("err %v", err)
	}
	if len(f.released) != 1 || !f.released[0] {
		t.Errorf("releases %v, want one cleanup", f.released)
	}
	f = &fake{volume: 1 << 30}
	if _, err := Run(context.Background(), opts(), f.deps()); err == nil || !strings.Contains(err.Error(), "need 1.3 GiB of the cached volume") {
		t.Fatalf("a small volume: %v", err)
	}
	if len(f.released) != 1 || !f.released[0] || slices.ContainsFunc(f.calls, func(c string) bool { return strings.Contains(c, "cold") }) {
		t.Errorf("a small volume: releases %v, calls %q", f.released, f.calls)
	}
	f = &fake{failAt: "ssd", volume: 3 << 30}
	if _, err := Run(context.Background(), opts(), f.deps()); err == nil {
		t.Fatal("no error")
	}
	if len(f.released) != 0 || slices.Contains(f.calls, "build") {
		t.Errorf("the SSD alone failed: released %v, calls %q", f.released, f.calls)
	}
	f = &fake{failAt: "hdd", volume: 3 << 30}
	if _, err := Run(context.Background(), opts(), f.deps()); err == nil {
		t.Fatal("no error")
	}
	if len(f.released) != 1 || f.released[0] {
		t.Errorf("released %v: want the one release after the phases", f.released)
	}
}

func TestPlanRefusesSmallOrigin(t *testing.T) {
	if _, err := Plan(1<<30, 4<<30, 4096); err == nil || !strings.Contains(err.Error(), "need 5.5 GiB of the cached volume") {
		t.Errorf("err %v", err)
	}
	if _, err := Plan(0, 4<<30, 4096); err == nil {
		t.Error("no size: no error")
	}
	if _, err := Plan(4<<20, 4<<30, 4096); err == nil || !strings.Contains(err.Error(), "under 1000 blocks") {
		t.Errorf("tiny working sets: %v", err)
	}
}

// stepper fails (or interrupts) a run at its at-th call of a dep.
type stepper struct {
	n, at  int
	cancel context.CancelFunc // nil: fail with an error instead
	failed string             // the dep that failed
}

func (s *stepper) hit(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err // as the real deps do, once interrupted
	}
	s.n++
	if s.n != s.at {
		return nil
	}
	s.failed = name
	if s.cancel != nil {
		s.cancel()
		return context.Canceled
	}
	return errors.New("step failed: " + name)
}

// steps wraps f's deps so that each call of one counts as a step.
func (s *stepper) steps(d Deps) Deps {
	facts, check, build, release, bench, save := d.Facts, d.Check, d.Build, d.Release, d.Bench, d.Save
	d.Facts = func(ctx context.Context) (*hwinfo.Host, error) {
		if err := s.hit(ctx, "facts"); err != nil {
			return nil, err
		}
		return facts(ctx)
	}
	d.Check = func(ctx context.Context, h *hwinfo.Host) error {
		if err := s.hit(ctx, "check"); err != nil {
			return err
		}
		return check(ctx, h)
	}
	d.Build = func(ctx context.Context, h *hwinfo.Host) (string, error) {
		dev, err := build(ctx, h)
		if herr := s.hit(ctx, "build"); herr != nil {
			// As the real one: what is half built is named by the
			// origin, for the release to take apart.
			return "/dev/sdb", herr
		}
		return dev, err
	}
	d.Release = func(ctx context.Context, cleanup bool) error {
		if err := s.hit(ctx, "release"); err != nil {
			return err
		}
		return release(ctx, cleanup)
	}
	d.Bench = func(ctx context.Context, req workload.Request, h *hwinfo.Host) (*record.Record, error) {
		if err := s.hit(ctx, "bench "+req.Label); err != nil {
			return nil, err
		}
		return bench(ctx, req, h)
	}
	d.Save = func(recs []*record.Record) error {
		if err := s.hit(context.Background(), "save"); err != nil {
			return err
		}
		return save(recs)
	}
	return d
}

// Issue 25 item 1: a cachebench that fails or is interrupted at any step
// stores no record of its runs and leaves no cache built: every build is
// released (as a cleanup) before Run returns. Each step of a whole run is
// made to fail, then to be interrupted, in turn.
func TestRunFailOrInterruptAtEveryStepLeavesNothing(t *testing.T) {
	whole := &stepper{}
	f := &fake{volume: 3 << 30}
	if _, err := Run(context.Background(), opts(), whole.steps(f.deps())); err != nil {
		t.Fatal(err)
	}
	if len(f.saved) != 1 || len(f.saved[0]) == 0 {
		t.Fatalf("a whole run saved %v", f.saved)
	}
	if whole.n < 20 {
		t.Fatalf("a whole run took %d steps: the wrapper lost some", whole.n)
	}
	for _, interrupt := range []bool{false, true} {
		for at := 1; at <= whole.n; at++ {
			ctx, cancel := context.WithCancel(context.Background())
			s := &stepper{at: at}
			if interrupt {
				s.cancel = cancel
			}
			f := &fake{volume: 3 << 30}
			_, err := Run(ctx, opts(), s.steps(f.deps()))
			cancel()
			name := fmt.Sprintf("step %d (%s), interrupted %v", at, s.failed, interrupt)
			if err == nil {
				// Only the read of the writeback flush's dirty bytes may
				// fail without failing the run (a figure, not a step).
				if s.failed != "facts" || len(f.saved) != 1 {
					t.Errorf("%s: no error", name)
				}
				continue
			}
			if interrupt && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v, not an interruption", name, err)
			}
			if len(f.saved) != 0 {
				t.Errorf("%s: records saved %v", name, f.saved)
			}
			builds, releases := 0, 0
			for _, c := range f.calls {
				switch c {
				case "build":
					builds++
				case "release":
					releases++
				}
			}
			if s.failed == "release" {
				// The release itself failed: the error says so.
				if !strings.Contains(err.Error(), "release the cache") {
					t.Errorf("%s: %v does not say the release failed", name, err)
				}
			}
			if builds != releases {
				t.Errorf("%s: %d builds, %d releases (calls %q)", name, builds, releases, f.calls)
			}
		}
	}
}
