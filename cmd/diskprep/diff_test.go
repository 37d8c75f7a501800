package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
)

// prepare --diff on the recording fake: before the first apply every layer
// is created (exit 1), after it every layer is kept (exit 0), and the diff
// itself writes nothing.
func TestPrepareDiffBeforeAndAfter(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		layers []string
	}{
		{"disk", []string{"/dev/sdb", "--fs", "xfs", "--label", "data", "--mount", "/data", "--persist"},
			[]string{"table", "partition", "filesystem", "mount", "fstab"}},
		{"raid1", []string{"/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--mount", "/data", "--persist"},
			[]string{"table", "partition", "md", "mdadm.conf", "filesystem", "mount", "fstab"}},
		{"lvm", []string{"/dev/sdb", "/dev/sdc", "--lvm", "fast/scratch:1G", "--fs", "ext4", "--mount", "/scratch"},
			[]string{"table", "partition", "pv", "vg", "lv", "filesystem", "mount"}},
		{"lvmcache", []string{"--cache", "/dev/sdb", "--cache-device", "/dev/sdd", "--fs", "xfs", "--mount", "/srv", "--persist"},
			[]string{"table", "partition", "cache", "filesystem", "mount", "fstab"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, h := cacheMachine(t)
			args := append([]string{"prepare"}, c.args...)
			code, out, errOut := runArgsOn(m, append(args, "--diff")...)
			if code != exitFailure {
				t.Fatalf("diff before: exit %d, want 1: %s%s", code, out, errOut)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Fatalf("the diff wrote: %v", w)
			}
			before := diffLines(t, out)
			for _, l := range c.layers {
				if before[l] != disk.ActCreate {
					t.Errorf("before the first apply, layer %s is %q, want create:\n%s", l, before[l], out)
				}
			}
			if !strings.Contains(out, " to create, 0 to change, 0 to destroy, 0 kept\n") {
				t.Errorf("no count line:\n%s", out)
			}

			if code, _, errOut := runArgsOn(m, append(args, "--yes")...); code != 0 {
				t.Fatalf("prepare: exit %d: %s", code, errOut)
			}
			n := len(h.Writes())
			code, out, errOut = runArgsOn(m, append(args, "--diff")...)
			if code != 0 {
				t.Fatalf("diff after: exit %d, want 0: %s%s", code, out, errOut)
			}
			after := diffLines(t, out)
			for _, l := range c.layers {
				if after[l] != disk.ActKeep {
					t.Errorf("after apply, layer %s is %q, want keep:\n%s", l, after[l], out)
				}
			}
			if !strings.Contains(out, "no change: ") {
				t.Errorf("no 'no change' line:\n%s", out)
			}
			code, out, _ = runArgsOn(m, append(args, "--diff", "-o", "json")...)
			var doc planDiffDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.Schema != disk.DiffSchema || doc.Changed || len(doc.Changes) < len(c.layers) {
				t.Errorf("json: exit %d, err %v, doc %+v:\n%s", code, err, doc, out)
			}
			if len(h.Writes()) != n {
				t.Errorf("the diff after apply wrote: %v", h.Writes()[n:])
			}
		})
	}
}

// A disk prepared otherwise is refused as planned (exit 3, the guard's
// line on stderr); the diff shows what --wipe would destroy, naming what
// the old partition holds and the disk it is on.
func TestPrepareDiffRefusedShowsWhatWipeDestroys(t *testing.T) {
	m, h := cacheMachine(t)
	if code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "xfs", "--label", "old", "--yes"); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, errOut)
	}
	n := len(h.Writes())
	code, out, errOut := runArgsOn(m, "prepare", "/dev/sdb", "--fs", "ext4", "--label", "new", "--diff")
	if code != exitRefused || !strings.Contains(errOut, "refusing") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, want 3 and one line on stderr:\n%s%s", code, out, errOut)
	}
	for _, w := range []string{
		"refused as planned; with --wipe it would do:",
		"destroy  partition   /dev/sdb1",
		`xfs label "old" UUID `,
		"on /dev/sdb (FAKE serial Ssdb)",
		"change   table       /dev/sdb",
		"create   filesystem  /dev/sdb1",
		`ext4 label "new"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the diff does not say %q:\n%s", w, out)
		}
	}
	if len(h.Writes()) != n {
		t.Errorf("the diff wrote: %v", h.Writes()[n:])
	}
	code, out, _ = runArgsOn(m, "prepare", "/dev/sdb", "--fs", "ext4", "--label", "new", "--diff", "-o", "json")
	var doc planDiffDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitRefused || doc.Refused == "" || !doc.Changed {
		t.Errorf("json: exit %d, err %v, doc %+v", code, err, doc)
	}
}

// diffLines maps each layer to its action, from the diff's text (the first
// line of a layer wins).
func diffLines(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		switch f[0] {
		case disk.ActKeep, disk.ActCreate, disk.ActChange, disk.ActDestroy:
			if _, ok := got[f[1]]; !ok {
				got[f[1]] = f[0]
			}
		}
	}
	return got
}
