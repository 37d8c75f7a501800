package fscompare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
)

// machine is a recording stand-in for disk and bench: every call in order,
// and a failure where a test wants one.
type machine struct {
	calls       []string
	failPlan    string // fs whose plan fails
	failApply   string
	failBench   string
	cancelOn    string // fs whose bench is interrupted (cancel, then ctx.Err())
	cancel      context.CancelFunc
	failRelease error
	cleanupCtx  []error // ctx.Err() seen by each cleanup release
	mounts      []string
	prepared    bool // between apply and release: the facts show loop9p1
	failSave    string
	ids         int
	benches     int
	cancelAt    int // the bench call (1-based) that is interrupted
}

func (m *machine) deps() Deps {
	return Deps{
		Facts: func(ctx context.Context) (*hwinfo.Host, error) {
			m.calls = append(m.calls, "facts")
			h := &hwinfo.Host{Hostname: "box", Disks: []hwinfo.Disk{{Name: "loop9"}}}
			if m.prepared {
				h.Disks[0].Partitions = []hwinfo.Partition{{Name: "loop9p1"}}
			}
			return h, nil
		},
		Plan: func(ctx context.Context, fs, mount string, first bool, host *hwinfo.Host) (func(context.Context) (string, error), error) {
			m.calls = append(m.calls, "plan "+fs+map[bool]string{true: " first", false: ""}[first])
			m.mounts = append(m.mounts, mount)
			if fs == m.failPlan {
				return nil, errors.New("plan refused")
			}
			return func(ctx context.Context) (string, error) {
				m.calls = append(m.calls, "apply "+fs)
				if fs == m.failApply {
					return "", errors.New("mkfs failed")
				}
				m.prepared = true
				return "/dev/loop9p1", nil
			}, nil
		},
		Release: func(ctx context.Context, cleanup bool) error {
			if cleanup {
				m.calls = append(m.calls, "release (cleanup)")
				m.cleanupCtx = append(m.cleanupCtx, ctx.Err())
			} else {
				m.calls = append(m.calls, "release")
			}
			m.prepared = false
			return m.failRelease
		},
		Settled: func(ctx context.Context) error {
			m.calls = append(m.calls, "settled")
			return nil
		},
		Bench: func(ctx context.Context, req workload.Request, host *hwinfo.Host) (*record.Record, error) {
			m.calls = append(m.calls, "bench "+req.Label+" at "+filepath.Base(req.Target))
			if host == nil || host.Hostname != "box" {
				return nil, errors.New("bench without the facts")
			}
			// The record's disk identity comes from these facts: they
			// must show the partition this round made.
			if d, _ := host.Device("loop9p1"); d == nil {
				return nil, errors.New("bench with facts from before the prepare")
			}
			if m.benches++; m.benches == m.cancelAt {
				m.cancel()
				return nil, ctx.Err()
			}
			switch req.Label {
			case m.failBench:
				return nil, errors.New("engine failed")
			case m.cancelOn:
				m.cancel()
				return nil, ctx.Err()
			}
			m.ids++
			return &record.Record{ID: fmt.Sprintf("id-%s-%d", req.Label, m.ids), Label: req.Label, Repeat: req.Repeat,
				Start: t0.Add(time.Duration(m.ids) * time.Minute), Target: record.Target{Path: req.Target}}, nil
		},
		Save: func(rec *record.Record) (*record.Record, error) {
			m.calls = append(m.calls, fmt.Sprintf("save %s %s (%d runs)", rec.Label, rec.Order, rec.Repeat))
			if rec.Label == m.failSave {
				return nil, errors.New("store full")
			}
			return rec, nil
		},
		NewID: func(time.Time) string {
			m.ids++
			return fmt.Sprintf("merged-%d", m.ids)
		},
	}
}

var t0 = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

func opts(t *testing.T, fss ...string) Options {
	return Options{FS: fss, Target: "/var/tmp/x.img", Mount: filepath.Join(t.TempDir(), "mnt"),
		Bench: workload.Request{Set: "quick", Repeat: 5}}
}

// --order blocked: every repetition of one filesystem, then of the next.
func TestRunBlocked(t *testing.T) {
	m := &machine{}
	var progress bytes.Buffer
	o := opts(t, "xfs", "ext4")
	o.Order = record.OrderBlocked
	o.Progress = &progress
	recs, err := Run(context.Background(), o, m.deps())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"facts", "plan xfs first", "apply xfs", "facts", "bench xfs at mnt", "save xfs blocked (5 runs)", "release", "settled",
		"facts", "plan ext4", "apply ext4", "facts", "bench ext4 at mnt", "save ext4 blocked (5 runs)", "release", "settled",
	}
	if !slices.Equal(m.calls, want) {
		t.Errorf("calls\n%q\nwant\n%q", m.calls, want)
	}
	if len(recs) != 2 || recs[0].Label != "xfs" || recs[1].Label != "ext4" {
		t.Errorf("records %+v, want xfs then ext4", recs)
	}
	if m.mounts[0] != o.Mount || m.mounts[1] != o.Mount {
		t.Errorf("mounted at %q, want %s for both", m.mounts, o.Mount)
	}
	for _, line := range []string{
		"fscompare: 1/2: preparing xfs on /var/tmp/x.img\n",
		"fscompare: 1/2: xfs on /dev/loop9p1 mounted at " + o.Mount + "; running set quick, 5 repetition(s)\n",
		"fscompare: 2/2: ext4 done: record id-ext4-2\n",
	} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, progress.String())
		}
	}
}

// Interleaved (the default): round after round, each filesystem made
// again on the same disk and mount point for one repetition, the first
// rotating; each filesystem's rounds merged into one record, saved after
// its last round, with its repetitions' start times in run order.
func TestRunInterleaved(t *testing.T) {
	m := &machine{}
	var progress bytes.Buffer
	o := opts(t, "xfs", "ext4")
	o.Bench.Repeat = 3
	o.Progress = &progress
	recs, err := Run(context.Background(), o, m.deps())
	if err != nil {
		t.Fatal(err)
	}
	step := func(fs string, first bool) []string {
		plan := "plan " + fs
		if first {
			plan += " first"
		}
		return []string{"facts", plan, "apply " + fs, "facts", "bench " + fs + " at mnt"}
	}
	var want []string
	for _, s := range [][]string{
		step("xfs", true), {"release", "settled"}, step("ext4", false), {"release", "settled"}, // round 1
		step("ext4", false), {"release", "settled"}, step("xfs", false), {"release", "settled"}, // round 2
		step("xfs", false), {"save xfs interleaved (3 runs)", "release", "settled"}, // round 3
		step("ext4", false), {"save ext4 interleaved (3 runs)", "release", "settled"},
	} {
		want = append(want, s...)
	}
	if !slices.Equal(m.calls, want) {
		t.Errorf("calls\n%q\nwant\n%q", m.calls, want)
	}
	if len(recs) != 2 || recs[0].Label != "xfs" || recs[1].Label != "ext4" {
		t.Fatalf("records %+v, want xfs then ext4", recs)
	}
	for _, r := range recs {
		if r.Order != record.OrderInterleaved || r.Repeat != 3 || !strings.HasPrefix(r.ID, "merged-") {
			t.Errorf("%s: order %q repeat %d id %s, want a merged interleaved record of 3", r.Label, r.Order, r.Repeat, r.ID)
		}
	}
	for _, mt := range m.mounts {
		if mt != o.Mount {
			t.Errorf("mounted at %q, want %s every round", m.mounts, o.Mount)
		}
	}
	for _, line := range []string{
		"fscompare: 1/6: preparing xfs on /var/tmp/x.img\n",
		"fscompare: 1/6: xfs on /dev/loop9p1 mounted at " + o.Mount + "; running set quick, round 1/3\n",
		"fscompare: 3/6: ext4 on /dev/loop9p1 mounted at " + o.Mount + "; running set quick, round 2/3\n",
		"fscompare: 5/6: xfs done: record " + recs[0].ID + "\n",
		"fscompare: 6/6: ext4 done: record " + recs[1].ID + "\n",
	} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, progress.String())
		}
	}
	if strings.Contains(progress.String(), "done: record id-") {
		t.Errorf("a round's own record was named:\n%s", progress.String())
	}
}

func TestRunKeepsTheLast(t *testing.T) {
	m := &machine{}
	o := opts(t, "xfs", "ext4")
	o.Keep = true
	var progress bytes.Buffer
	o.Progress = &progress
	if _, err := Run(context.Background(), o, m.deps()); err != nil {
		t.Fatal(err)
	}
	if got := m.calls[len(m.calls)-2:]; !slices.Equal(got, []string{"bench ext4 at mnt", "save ext4 interleaved (5 runs)"}) {
		t.Errorf("last calls %q, want the last bench and its save with no release after it (calls %q)", got, m.calls)
	}
	if !strings.Contains(progress.String(), "--keep: ext4 stays mounted at "+o.Mount+" (diskprep release /var/tmp/x.img undoes it)") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// Every way a round can fail after the disk was prepared releases it once,
// with a live context; a failure before anything was prepared releases
// nothing.
func TestRunFailureReleases(t *testing.T) {
	for _, c := range []struct {
		name        string
		m           *machine
		want        string
		wantRelease int
	}{
		{"plan of the first", &machine{failPlan: "xfs"}, "plan refused", 0},
		{"apply of the first", &machine{failApply: "xfs"}, "prepare xfs: mkfs failed", 0},
		{"bench of the first", &machine{failBench: "xfs"}, "bench xfs: engine failed", 1},
		{"plan of the second", &machine{failPlan: "ext4"}, "plan refused", 0},
		{"bench of the second", &machine{failBench: "ext4"}, "bench ext4: engine failed", 1},
		{"save of the first", &machine{failSave: "xfs"}, "record xfs: store full", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(context.Background(), opts(t, "xfs", "ext4"), c.m.deps())
			if err == nil || err.Error() != c.want {
				t.Errorf("err %v, want %q", err, c.want)
			}
			if n := strings.Count(strings.Join(c.m.calls, ","), "release (cleanup)"); n != c.wantRelease {
				t.Errorf("%d cleanup releases, want %d (calls %q)", n, c.wantRelease, c.m.calls)
			}
		})
	}
}

// With Check, every column is planned on the disk as it is before the
// first is made: one the machine cannot build is refused before any
// other has been prepared or measured, and the check's facts serve the
// first plan.
func TestRunChecksEveryColumnFirst(t *testing.T) {
	for _, c := range []struct {
		refuse string
		want   []string
		err    string
	}{
		{"xfs+luks2", []string{"facts", "check xfs", "check xfs+luks2"}, "prepare xfs+luks2: no dm-crypt"},
		{"", []string{"facts", "check xfs", "check xfs+luks2", "plan xfs first", "apply xfs", "facts", "bench xfs at mnt"}, ""},
	} {
		m := &machine{}
		d := m.deps()
		d.Check = func(ctx context.Context, fs, mount string, host *hwinfo.Host) error {
			m.calls = append(m.calls, "check "+fs)
			if host == nil || mount == "" {
				return errors.New("checked without the facts or the mount point")
			}
			if fs == c.refuse {
				return errors.New("prepare " + fs + ": no dm-crypt")
			}
			return nil
		}
		o := opts(t, "xfs", "xfs+luks2")
		o.Order = record.OrderBlocked
		_, err := Run(context.Background(), o, d)
		if c.err != "" && (err == nil || err.Error() != c.err) || c.err == "" && err != nil {
			t.Errorf("refusing %q: err %v, want %q", c.refuse, err, c.err)
		}
		if got := m.calls[:min(len(c.want), len(m.calls))]; !slices.Equal(got, c.want) || c.err != "" && len(m.calls) != len(c.want) {
			t.Errorf("refusing %q: calls\n%q\nwant them to begin\n%q", c.refuse, m.calls, c.want)
		}
	}
}

// Ctrl-C during a bench: the error is the interruption, and the cleanup
// release gets a context that is not cancelled.
func TestRunInterruptReleases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &machine{cancelOn: "xfs", cancel: cancel}
	recs, err := Run(ctx, opts(t, "xfs", "ext4"), m.deps())
	if !errors.Is(err, context.Canceled) || recs != nil {
		t.Errorf("records %v, err %v, want an interruption", recs, err)
	}
	if len(m.cleanupCtx) != 1 || m.cleanupCtx[0] != nil {
		t.Errorf("cleanup releases saw %v, want one with a live context", m.cleanupCtx)
	}
}

// Ctrl-C in round 2 of 3: no filesystem has had its last round, so no
// record is saved; what was prepared is released once.
func TestRunInterruptMidRoundSavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &machine{cancelAt: 4, cancel: cancel} // round 2: ext4, then xfs
	o := opts(t, "xfs", "ext4")
	o.Bench.Repeat = 3
	recs, err := Run(ctx, o, m.deps())
	if !errors.Is(err, context.Canceled) || recs != nil {
		t.Errorf("records %v, err %v, want an interruption", recs, err)
	}
	calls := strings.Join(m.calls, ",")
	if strings.Contains(calls, "save") || strings.Count(calls, "release (cleanup)") != 1 || !strings.HasSuffix(calls, "bench xfs at mnt,release (cleanup)") {
		t.Errorf("calls %q, want no save and one cleanup release after round 2's xfs", m.calls)
	}
}

// A cleanup release that fails too: both errors are returned.
func TestRunCleanupFailureJoined(t *testing.T) {
	m := &machine{failBench: "xfs", failRelease: errors.New("umount: target is busy")}
	var progress bytes.Buffer
	o := opts(t, "xfs")
	o.Progress = &progress
	_, err := Run(context.Background(), o, m.deps())
	if err == nil || !strings.Contains(err.Error(), "bench xfs: engine failed") || !strings.Contains(err.Error(), "release /var/tmp/x.img: umount: target is busy") {
		t.Errorf("err %v, want the bench failure and the release failure", err)
	}
	if strings.Contains(progress.String(), "released") {
		t.Errorf("a failed release said released:\n%s", progress.String())
	}
}

// Without --mount a temporary directory is made for the mounts and
// removed at the end; with --keep it stays, holding the kept filesystem.
func TestRunTemporaryMount(t *testing.T) {
	for _, keep := range []bool{false, true} {
		m := &machine{}
		o := opts(t, "xfs")
		o.Mount, o.Keep = "", keep
		if _, err := Run(context.Background(), o, m.deps()); err != nil {
			t.Fatal(err)
		}
		dir := m.mounts[0]
		if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), "diskprep-fscompare-") {
			t.Fatalf("mounted at %q, want a fresh temporary directory", dir)
		}
		_, err := os.Stat(dir)
		if keep != (err == nil) {
			t.Errorf("keep=%v: temporary mount %s: %v", keep, dir, err)
		}
		os.Remove(dir)
	}
}
