package fscompare

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
			switch req.Label {
			case m.failBench:
				return nil, errors.New("engine failed")
			case m.cancelOn:
				m.cancel()
				return nil, ctx.Err()
			}
			return &record.Record{ID: "id-" + req.Label, Label: req.Label}, nil
		},
	}
}

func opts(t *testing.T, fss ...string) Options {
	return Options{FS: fss, Target: "/var/tmp/x.img", Mount: filepath.Join(t.TempDir(), "mnt"),
		Bench: workload.Request{Set: "quick", Repeat: 5}}
}

func TestRunRoundByRound(t *testing.T) {
	m := &machine{}
	var progress bytes.Buffer
	o := opts(t, "xfs", "ext4")
	o.Progress = &progress
	recs, err := Run(context.Background(), o, m.deps())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"facts", "plan xfs first", "apply xfs", "facts", "bench xfs at mnt", "release", "settled",
		"facts", "plan ext4", "apply ext4", "facts", "bench ext4 at mnt", "release", "settled",
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
		"fscompare: 2/2: ext4 done: record id-ext4\n",
	} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, progress.String())
		}
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
	if got := m.calls[len(m.calls)-1]; got != "bench ext4 at mnt" {
		t.Errorf("last call %q, want the last bench with no release after it (calls %q)", got, m.calls)
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
