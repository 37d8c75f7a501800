package main

import (
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
)

// prepare --cache on the recording fake: the dry run's steps, the build,
// the rerun as a no-op, release --wipe (flushing first), and bad input.

func cacheMachine(t *testing.T) (*machine, *hosttest.Host) {
	m, h := stackMachine(t)
	h.AddDisk(hosttest.Disk{Name: "sdd", Minor: 48, SizeBytes: 1 << 30, Model: "FAKE SSD", Serial: "Ssdd"})
	m.apply = disk.Apply
	return m, h
}

func TestPrepareCache(t *testing.T) {
	for _, c := range []struct {
		kind, mode string
		dry        []string
	}{
		{"", "", []string{"lvmcache cache data: /dev/sdd1", "writethrough", "vgcreate --physicalextentsize 4096k data /dev/sdb1 /dev/sdd1",
			"lvconvert --yes --type cache --cachevol data_cache --cachemode writethrough data/data", "mkfs.xfs -m uuid=", "/dev/data/data"}},
		{"writecache", "writeback", []string{"lvconvert --yes --type writecache --cachevol data_cache data/data", stack.WritebackRisk}},
		{"bcache", "", []string{"make-bcache -B /dev/sdb1", "make-bcache -C --cset-uuid", "echo /dev/sdb1 > /sys/fs/bcache/register_quiet",
			"echo writethrough > /sys/class/block/sdb1/bcache/cache_mode", "mkfs.xfs -f -m uuid=", "/dev/bcacheN /srv"}},
	} {
		t.Run(c.kind+c.mode, func(t *testing.T) {
			m, h := cacheMachine(t)
			args := []string{"prepare", "--cache", "/dev/sdb", "--cache-device", "/dev/sdd", "--fs", "xfs", "--mount", "/srv", "--persist"}
			if c.kind != "" {
				args = append(args, "--cache-kind", c.kind)
			}
			if c.mode != "" {
				args = append(args, "--cache-mode", c.mode)
			}
			code, out, errOut := runArgsOn(m, append(args, "--dry-run")...)
			if code != 0 {
				t.Fatalf("dry run: exit %d: %s", code, errOut)
			}
			for _, w := range c.dry {
				if !strings.Contains(out, w) {
					t.Errorf("the dry run does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "writeback:") != (c.mode == "writeback") {
				t.Errorf("the writeback line is wrong for mode %q:\n%s", c.mode, out)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Fatalf("the dry run wrote: %v", w)
			}
			code, out, errOut = runArgsOn(m, append(args, "--yes")...)
			if code != 0 {
				t.Fatalf("prepare: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "cache data (") || !strings.Contains(out, ": built") || !strings.Contains(strings.Join(h.Mounted(), " "), "/srv") {
				t.Errorf("prepare output:\n%s\nmounts %q", out, h.Mounted())
			}
			h.ResetLog()
			code, out, errOut = runArgsOn(m, append(args, "--yes")...)
			if code != 0 || !strings.Contains(out, "already prepared as asked") {
				t.Errorf("rerun: exit %d:\n%s%s", code, out, errOut)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Errorf("rerun wrote: %v", w)
			}
			code, out, errOut = runArgsOn(m, "release", "/dev/sdb", "--wipe")
			if code != 0 {
				t.Fatalf("release: exit %d: %s%s", code, out, errOut)
			}
			if !strings.Contains(errOut, "flush") && !strings.Contains(errOut, "dirty") && c.mode == "writeback" {
				t.Errorf("release says nothing of the flush:\n%s", errOut)
			}
			for _, d := range []string{"sdb", "sdd"} {
				if sigs := h.Signatures(d); len(sigs) != 0 {
					t.Errorf("%s not signature-free after release --wipe: %v", d, sigs)
				}
			}
		})
	}
}

func TestPrepareCacheBadInput(t *testing.T) {
	base := []string{"prepare", "--cache", "/dev/sdb", "--fs", "xfs", "--dry-run"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(base, "--cache-device", "/dev/sdb"), "both /dev/sdb"},
		{append(base, "--cache-device", "/dev/sdb2"), "is on /dev/sdb, the origin's disk"},
		{base, "--cache needs --cache-device"},
		{append(base, "--cache-device", "/dev/sdd", "--cache-kind", "flashcache"), `unknown kind "flashcache"`},
		{append(base, "--cache-device", "/dev/sdd", "--cache-mode", "writearound"), `unknown mode "writearound"`},
		{append(base, "--cache-device", "/dev/sdd", "--cache-kind", "writecache"), "writecache caches writes only"},
		{append(base, "--cache-device", "/dev/sdd", "--cache-kind", "writecache", "--cache-mode", "writethrough"), "writecache caches writes only"},
		{append(base, "--cache-device", "/dev/sdd", "--raid", "1"), "not two"},
		{[]string{"prepare", "/dev/sdc", "--cache-device", "/dev/sdd", "--fs", "xfs"}, "go with --cache ORIGIN_DISK"},
		{[]string{"prepare", "--cache", "/dev/sdb", "--cache-device", "/dev/sdd"}, "--fs is required"},
		{[]string{"prepare", "--plan", "x.yaml", "--cache", "/dev/sdb"}, "--plan takes the disks"},
	} {
		m, h := cacheMachine(t)
		code, out, errOut := runArgsOn(m, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%q: exit %d %q%s, want exit 2 saying %q in one line", c.args, code, errOut, out, c.want)
		}
		if w := h.Writes(); len(w) > 0 {
			t.Errorf("%q: bad input wrote: %v", c.args, w)
		}
	}
}
