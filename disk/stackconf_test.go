package disk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/golden"
	"github.com/diskprep/diskprep/internal/testenv"
	"golang.org/x/sys/unix"
)

// The conformance suite of the storage stacks and caches (STYLE.md rule
// 10): md, LVM, lvmcache, dm-writecache and bcache, driven through the
// disk.Host seam with the argv and sysfs writes disk's stack and cache
// code issues, against the recording fake (TestStackConformanceFake, no
// root) and against the real kernel (TestPrivilegedStackConformance, which
// needs md, device-mapper and bcache: the guest tier runs it). Both runs
// render one text per scenario: every program run and sysfs write with
// its outcome, and at each checkpoint the facts inventory reads (hwinfo's
// holders and file system types of the members, the stacks sysfs shows
// above them, pvs and lvs -a), and both must equal
// testdata/stackconf/<scenario>.log. The fake writes it under -update; the
// real kernel only reads it, so a fake that drifts fails in the guest.
//
// What differs by machine is normalized, and only that: the member
// devices are A and B (sdb and sdc on the fake, loop devices on the real
// machine), md and bcache kernel numbers become mdN and bcacheN, a
// device-mapper device is named by its dm name (dm-N numbers follow the
// order of creation), and no size is compared (LVM and md round them to
// their extents and superblocks). The UUIDs are the scenarios' own.

// confRig is one machine the stack scenarios run on.
type confRig interface {
	host() disk.Host
	// members are the two member devices' nodes, A then B.
	members() [2]string
	facts(t *testing.T) *hwinfo.Host
	// settle waits for udev to handle what the last step started (the
	// links it makes, the database hwinfo reads).
	settle()
}

// confScenario is one conformance case.
type confScenario struct {
	name string
	run  func(c *confCase)
}

const (
	confMDUUID  = "5a1e0c0f:0b4d4c2e:8e550f6a:3c7d1b29"
	confSetUUID = "6b2f1d10-1c5e-4d3f-9f66-1a7b4d8e2c3a"
	confVG      = "sconfvg"
	// confSize is each member's: small, for the time LVM and md take to
	// zero and resync under emulation, and room for 7 extents.
	confSize = 32 << 20
)

var confScenarios = []confScenario{
	{"md-raid1", func(c *confCase) {
		a, b := c.a, c.b
		c.must("mdadm", "--create", "/dev/md/sconf", "--run", "--metadata=1.2", "--name=sconf", "--level=1", "--raid-devices=2",
			"--uuid="+confMDUUID, a, b)
		c.waitPresent("/dev/md/sconf")
		c.must("wipefs", "--all", "/dev/md/sconf")
		c.snapshot("created")
		c.run("mdadm", "--zero-superblock", a) // refused: the array holds it
		md := c.node("/dev/md/sconf")
		c.must("mdadm", "--stop", md)
		c.waitGone("/sys/class/block/" + filepath.Base(md))
		c.snapshot("stopped")
		c.must("mdadm", "--zero-superblock", a)
		c.must("mdadm", "--zero-superblock", b)
		c.snapshot("zeroed")
	}},
	{"lvm", func(c *confCase) {
		c.pvs = true
		c.pvcreate()
		c.must("vgcreate", "--physicalextentsize", "4096k", confVG, c.a, c.b)
		c.must("lvcreate", "--yes", "--wipesignatures", "y", "--name", "one", "--size", "16777216b", confVG)
		c.must("lvcreate", "--yes", "--wipesignatures", "y", "--name", "two", "--extents", "100%FREE", confVG)
		c.waitPresent("/dev/" + confVG + "/two")
		c.snapshot("created")
		c.must("lvremove", "--yes", confVG+"/one")
		c.snapshot("one removed")
		c.must("vgchange", "--activate", "n", confVG)
		c.snapshot("deactivated")
		c.must("lvremove", "--yes", confVG+"/two")
		c.must("vgremove", confVG)
		c.must("pvremove", c.a)
		c.must("pvremove", c.b)
		c.snapshot("removed")
	}},
	// Day two: a volume grown on its disk, then onto a second one the
	// group is extended with (prepare's lvextend and vgextend), then
	// shrunk back (prepare --shrink's lvreduce).
	{"lvm-grow", func(c *confCase) {
		c.pvs = true
		c.pvcreate()
		c.must("vgcreate", "--physicalextentsize", "4096k", confVG, c.a)
		c.must("lvcreate", "--yes", "--wipesignatures", "y", "--name", "one", "--size", "8388608b", confVG)
		c.waitPresent("/dev/" + confVG + "/one")
		c.snapshot("created on A")
		c.must("lvextend", "--size", "16777216b", confVG+"/one")
		c.snapshot("grown on A")
		c.must("vgextend", confVG, c.b)
		c.must("lvextend", "--extents", "+100%FREE", confVG+"/one")
		c.snapshot("grown onto B")
		// prepare --shrink's last step: the volume gives back B's extents.
		c.must("lvreduce", "--yes", "--size", "8388608b", confVG+"/one")
		c.snapshot("shrunk back onto A")
		c.must("vgchange", "--activate", "n", confVG)
		c.must("lvremove", "--yes", confVG+"/one")
		c.must("vgremove", confVG)
		c.must("pvremove", c.a)
		c.must("pvremove", c.b)
		c.snapshot("removed")
	}},
	{"lvmcache", func(c *confCase) {
		c.originAndCacheLVs()
		attach := []string{"lvconvert", "--yes", "--type", "cache", "--cachevol", "fast", "--cachemode", "writethrough", confVG + "/data"}
		c.must(attach...)
		c.snapshot("cached")
		c.run(attach...) // refused: cached already
		c.must("lvconvert", "--yes", "--splitcache", confVG+"/data")
		c.snapshot("split")
		c.must(attach...)
		c.must("lvconvert", "--yes", "--uncache", confVG+"/data")
		c.snapshot("uncached")
	}},
	{"writecache", func(c *confCase) {
		c.originAndCacheLVs()
		attach := []string{"lvconvert", "--yes", "--type", "writecache", "--cachevol", "fast", confVG + "/data"}
		c.run(attach...) // refused: the cache volume is active
		// LVM's commands open the PVs for writing, and udev answers
		// each close with a change event whose pvscan may activate the
		// group's volumes: handled after lvchange, it undoes it.
		c.settle()
		c.must("lvchange", "--yes", "--activate", "n", confVG+"/fast")
		c.snapshot("cache volume inactive")
		c.must(attach...)
		c.snapshot("cached")
		c.must("lvconvert", "--yes", "--splitcache", confVG+"/data")
		c.snapshot("split")
		c.settle()
		c.must("lvchange", "--yes", "--activate", "n", confVG+"/fast")
		c.must(attach...)
		c.must("lvconvert", "--yes", "--uncache", confVG+"/data")
		c.snapshot("uncached")
	}},
	{"bcache", func(c *confCase) {
		a, b := c.a, c.b
		ab, bb := "/sys/class/block/"+filepath.Base(a)+"/bcache/", "/sys/class/block/"+filepath.Base(b)+"/bcache/"
		c.must("modprobe", "bcache")
		c.must("make-bcache", "-B", a)
		c.must("make-bcache", "-C", "--cset-uuid", confSetUUID, "--bucket", "32k", b)
		c.write("/sys/fs/bcache/register_quiet", a)
		c.write("/sys/fs/bcache/register_quiet", b)
		c.waitPresent(ab + "attach")
		c.waitPresent("/sys/fs/bcache/" + confSetUUID)
		c.write("/sys/fs/bcache/register_quiet", a) // registered already: quietly nothing
		c.write(ab+"attach", confSetUUID)
		c.write(ab+"cache_mode", "writeback")
		c.settle()
		c.snapshot("attached")
		c.write(ab+"attach", confSetUUID) // refused: attached already
		c.write(ab+"writeback_percent", "0")
		c.write(ab+"writeback_delay", "0")
		c.write(ab+"detach", "1")
		c.waitGone(ab + "cache")
		c.snapshot("detached")
		bc := c.bcacheNode(ab)
		c.write(ab+"stop", "1")
		c.waitGone("/sys/class/block/" + bc)
		c.write("/sys/fs/bcache/"+confSetUUID+"/unregister", "1")
		c.waitGone("/sys/fs/bcache/" + confSetUUID)
		c.waitGone(bb + "set")
		c.snapshot("stopped")
		c.must("wipefs", "--all", a)
		c.must("wipefs", "--all", b)
		c.snapshot("wiped")
	}},
}

// pvcreate makes both members physical volumes, as the stack plan does.
func (c *confCase) pvcreate() {
	c.lvm = true
	for _, m := range []string{c.a, c.b} {
		c.must("pvcreate", "--metadatatype", "2", "--dataalignment", "1024k", m)
	}
}

// originAndCacheLVs is what the cache plan makes before it attaches: a
// group over both members, the origin volume on A and the cache volume on
// B.
func (c *confCase) originAndCacheLVs() {
	c.pvcreate()
	c.must("vgcreate", "--physicalextentsize", "4096k", confVG, c.a, c.b)
	c.must("lvcreate", "--yes", "--wipesignatures", "y", "--name", "data", "--extents", "100%PVS", confVG, c.a)
	c.must("lvcreate", "--yes", "--wipesignatures", "y", "--name", "fast", "--extents", "100%PVS", confVG, c.b)
	c.waitPresent("/dev/" + confVG + "/fast")
}

// confCase is one scenario running on one rig.
type confCase struct {
	t    *testing.T
	r    confRig
	h    disk.Host // the rig's, unrecorded: for the facts
	a, b string
	log  []string
	// lvm: the snapshots show pvs and lvs (not where LVM is not used: they
	// are slow under emulation).
	lvm bool
	// pvs: they show pvs too (the scenario that changes the groups' PVs).
	pvs bool
}

func newConfCase(t *testing.T, r confRig) *confCase {
	m := r.members()
	c := &confCase{t: t, r: r, h: r.host(), a: m[0], b: m[1]}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the log so far:\n%s", c.text())
		}
	})
	return c
}

// text is the case's log, normalized.
func (c *confCase) text() string {
	var b strings.Builder
	for _, l := range c.log {
		b.WriteString(c.norm(l))
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	mdNum     = regexp.MustCompile(`\bmd[0-9]+\b`)
	bcacheNum = regexp.MustCompile(`\bbcache[0-9]+\b`)
)

// norm is s with the machine's own names replaced (see above).
func (c *confCase) norm(s string) string {
	for i, m := range []string{c.a, c.b} {
		s = regexp.MustCompile(`\b`+regexp.QuoteMeta(filepath.Base(m))+`\b`).ReplaceAllString(s, string(rune('A'+i)))
	}
	s = mdNum.ReplaceAllString(s, "mdN")
	return bcacheNum.ReplaceAllString(s, "bcacheN")
}

// outcome is how a step ended, as both machines can say it.
func outcome(err error) string {
	var re *disk.RunError
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &re):
		return fmt.Sprintf("exit %d", re.ExitCode)
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return "error"
}

// run runs argv through the seam and logs it with its outcome.
func (c *confCase) run(argv ...string) error {
	out, err := c.h.Run(context.Background(), argv[0], argv[1:]...)
	c.log = append(c.log, "run "+strings.Join(argv, " ")+" -> "+outcome(err))
	if err != nil {
		c.t.Logf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return err
}

// must is run for a step that has to succeed: the case stops otherwise.
func (c *confCase) must(argv ...string) {
	c.t.Helper()
	if err := c.run(argv...); err != nil {
		c.t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
}

// write writes a kernel attribute through the seam and logs it.
func (c *confCase) write(path, value string) {
	err := c.h.WriteSys(path, value)
	c.log = append(c.log, "write-sys "+path+" "+value+" -> "+outcome(err))
}

func (c *confCase) settle() { c.r.settle() }

// node is the device node a link (/dev/md/NAME) points to.
func (c *confCase) node(link string) string {
	c.t.Helper()
	real, err := c.h.EvalSymlinks(link)
	if err != nil {
		c.t.Fatal(err)
	}
	return real
}

// bcacheNode is the kernel name of the bcache device over the backing
// device whose bcache directory is dir.
func (c *confCase) bcacheNode(dir string) string {
	c.t.Helper()
	link, err := c.h.Readlink(dir + "dev")
	if err != nil {
		c.t.Fatal(err)
	}
	return filepath.Base(link)
}

// waitPresent and waitGone wait, without logging, for the kernel or udev
// to make or drop path, as disk's waitPath and waitGone do: the real
// machine does it after the step returns, the fake at once.
func (c *confCase) waitPresent(path string) { c.wait(path, true) }
func (c *confCase) waitGone(path string)    { c.wait(path, false) }

func (c *confCase) wait(path string, present bool) {
	c.t.Helper()
	c.r.settle()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.h.Lstat(path)
		if (err == nil) == present {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: still present=%v after 30s", path, !present)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// snapshot logs the facts inventory reads now, under a heading.
func (c *confCase) snapshot(when string) {
	c.t.Helper()
	c.r.settle()
	c.log = append(c.log, "# facts: "+when)
	c.log = append(c.log, c.hwinfoFacts()...)
	c.log = append(c.log, c.sysfsFacts()...)
	if c.lvm {
		c.log = append(c.log, c.lvmFacts()...)
	}
}

// hwinfoFacts are hwinfo's members (file system type, holders, stacked
// further) and the bcache devices it lists as disks.
func (c *confCase) hwinfoFacts() []string {
	h := c.r.facts(c.t)
	var out []string
	for i, m := range []string{c.a, c.b} {
		d, _ := h.Device(m)
		if d == nil {
			out = append(out, fmt.Sprintf("hwinfo %c missing", 'A'+i))
			continue
		}
		out = append(out, fmt.Sprintf("hwinfo %c fs=%s holders=%s", 'A'+i, d.FSType, confHolders(d.Holders)))
	}
	var bc []string
	for _, d := range h.Disks {
		if strings.HasPrefix(d.Name, "bcache") {
			bc = append(bc, fmt.Sprintf("hwinfo disk %s fs=%s holders=%s", d.Name, d.FSType, confHolders(d.Holders)))
		}
	}
	sort.Strings(bc)
	return append(out, bc...)
}

// confHolders is a holder tree as "[kind:name[...] ...]", a dm device by
// its dm name.
func confHolders(hs []hwinfo.Holder) string {
	var parts []string
	for _, h := range hs {
		name := h.Name
		if h.DMName != "" {
			name = h.DMName
		}
		parts = append(parts, h.Kind+":"+name+confHolders(h.Holders))
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// sysfsFacts walk sysfs from the members up through their holders, as
// release and inventory do: each device's holders and slaves, an array's
// level, and bcache's registration, attachment and cache mode.
func (c *confCase) sysfsFacts() []string {
	var out []string
	seen := map[string]bool{}
	queue := []string{filepath.Base(c.a), filepath.Base(c.b)}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		dir := "/sys/class/block/" + n + "/"
		if _, err := c.h.Lstat(dir); err != nil {
			out = append(out, "sys "+c.ident(n)+" gone")
			continue
		}
		holders, slaves := c.list(dir+"holders"), c.list(dir+"slaves")
		line := "sys " + c.ident(n) + " holders=" + c.idents(holders) + " slaves=" + c.idents(slaves)
		if b, err := c.h.ReadFile(dir + "md/level"); err == nil {
			line += " level=" + strings.TrimSpace(string(b))
		}
		if _, err := c.h.Lstat(dir + "bcache"); err == nil {
			line += " bcache"
			if b, err := c.h.ReadFile(dir + "bcache/cache_mode"); err == nil {
				line += " mode=" + confSelectedMode(string(b))
			}
			if b, err := c.h.ReadFile(dir + "bcache/state"); err == nil {
				line += " state=" + strings.TrimSpace(string(b))
			}
			for _, l := range []string{"cache", "set", "dev"} {
				if t, err := c.h.Readlink(dir + "bcache/" + l); err == nil {
					line += " " + l + "=" + strings.ReplaceAll(filepath.Base(t), confSetUUID, "SET")
				}
			}
		}
		out = append(out, line)
		queue = append(queue, holders...)
	}
	if _, err := c.h.Lstat("/sys/fs/bcache/" + confSetUUID); err == nil {
		out = append(out, "sys cache set SET registered: "+strings.Join(c.list("/sys/fs/bcache/"+confSetUUID+"/"), " "))
	}
	return out
}

// list names the entries of a sysfs directory, sorted; bcache's set
// directory only by its links to devices (cacheN, bdevN).
func (c *confCase) list(dir string) []string {
	des, err := c.h.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range des {
		n := de.Name()
		if strings.HasSuffix(dir, "/") && !regexp.MustCompile(`^(cache|bdev)[0-9]+$`).MatchString(n) {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ident is a device as the facts name it: a dm device by its dm name.
func (c *confCase) ident(n string) string {
	if strings.HasPrefix(n, "dm-") {
		if b, err := c.h.ReadFile("/sys/class/block/" + n + "/dm/name"); err == nil {
			return "dm:" + strings.TrimSpace(string(b))
		}
	}
	return n
}

func (c *confCase) idents(ns []string) string {
	var out []string
	for _, n := range ns {
		out = append(out, c.ident(n))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

// lvmFacts are pvs's rows of the members and the group, and lvs -a's rows
// of the group, as disk's planning reads them.
func (c *confCase) lvmFacts() []string {
	var out []string
	ctx := context.Background()
	if c.pvs {
		pvs, err := c.h.Run(ctx, "pvs", "--noheadings", "--separator", "|", "-o", "pv_name,vg_name")
		if err != nil {
			return []string{"pvs -> " + outcome(err)}
		}
		for _, l := range strings.Split(string(pvs), "\n") {
			f := strings.Split(strings.TrimSpace(l), "|")
			if len(f) == 2 && (f[0] == c.a || f[0] == c.b || f[1] == confVG) {
				out = append(out, "pvs "+f[0]+" vg="+f[1])
			}
		}
	}
	lvs, err := c.h.Run(ctx, "lvs", "-a", "--noheadings", "--separator", "|", "-o", "vg_name,lv_name,segtype,pool_lv,cache_mode,devices")
	if err != nil {
		return append(out, "lvs -> "+outcome(err))
	}
	var rows []string
	for _, l := range strings.Split(string(lvs), "\n") {
		f := strings.Split(strings.TrimSpace(l), "|")
		if len(f) == 6 && f[0] == confVG {
			rows = append(rows, "lvs "+strings.Join(f[1:], "|"))
		}
	}
	sort.Strings(rows)
	return append(out, rows...)
}

// confSelectedMode is the bracketed choice of a sysfs list.
func confSelectedMode(s string) string {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "[") {
			return strings.Trim(f, "[]")
		}
	}
	return strings.TrimSpace(s)
}

func TestStackConformanceFake(t *testing.T) {
	for _, sc := range confScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			c := newConfCase(t, newFakeConfRig())
			sc.run(c)
			golden.Check(t, filepath.Join("testdata", "stackconf", sc.name+".log"), []byte(c.text()))
		})
	}
}

func TestPrivilegedStackConformance(t *testing.T) {
	requireStackKernel(t)
	if golden.Updating() {
		t.Skip("the real kernel is compared with the golden files, never writes them")
	}
	for _, sc := range confScenarios {
		t.Run(sc.name, func(t *testing.T) {
			c := newConfCase(t, newLoopConfRig(t))
			sc.run(c)
			want, err := os.ReadFile(filepath.Join("testdata", "stackconf", sc.name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.text(); got != string(want) {
				t.Errorf("the real kernel differs from the fake (testdata/stackconf/%s.log): fix the fake\n--- real\n%s\n--- fake\n%s", sc.name, got, want)
			}
		})
	}
}

// requireStackKernel needs root, the stack tools and a kernel with md,
// device-mapper's cache targets and bcache, loaded or loadable. A kernel
// without them (the dev machines' own) lacks them for good: the test
// skips there, even under DISKPREP_REQUIRE_PRIVILEGED=1, and the guest
// tier (internal/guesttest, scenario_suites_test.go) runs it.
func requireStackKernel(t *testing.T) {
	testenv.RequirePrivileged(t, "mdadm", "pvcreate", "vgcreate", "lvcreate", "lvconvert", "lvchange", "lvremove", "vgremove", "pvremove",
		"vgchange", "pvs", "lvs", "make-bcache", "wipefs", "modprobe")
	for _, m := range []string{"md_mod", "raid1", "dm_mod", "dm_cache", "dm_writecache", "bcache"} {
		if _, err := os.Stat("/sys/module/" + m); err == nil {
			continue
		}
		if _, err := testenv.Run("modprobe", m); err != nil {
			testenv.Lacks(t, "the "+m+" kernel module", fmt.Sprintf("%v; the guest tier runs this test", err))
		}
	}
}

// --- the fake rig ---

type fakeConfRig struct{ h *hosttest.Host }

func newFakeConfRig() *fakeConfRig {
	h := hosttest.New()
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: confSize, Model: "FAKE DISK", Serial: "FAKEA"})
	h.AddDisk(hosttest.Disk{Name: "sdc", Minor: 32, SizeBytes: confSize, Model: "FAKE DISK", Serial: "FAKEB"})
	return &fakeConfRig{h: h}
}

func (r *fakeConfRig) host() disk.Host               { return r.h }
func (r *fakeConfRig) members() [2]string            { return [2]string{"/dev/sdb", "/dev/sdc"} }
func (r *fakeConfRig) facts(*testing.T) *hwinfo.Host { return r.h.FactsNow() }
func (r *fakeConfRig) settle()                       {}

// --- the real kernel's rig: two loop devices ---

type loopConfRig struct {
	a, b *testenv.Loop
	live *disk.LiveHost
}

func newLoopConfRig(t *testing.T) *loopConfRig {
	r := &loopConfRig{a: testenv.NewLoop(t, confSize, testenv.LoopOptions{}), b: testenv.NewLoop(t, confSize, testenv.LoopOptions{}), live: &disk.LiveHost{}}
	// Before the loop devices go (cleanups run last first): whatever a
	// failed case left on them.
	t.Cleanup(func() {
		for _, m := range []*testenv.Loop{r.a, r.b} {
			n := filepath.Base(m.Dev)
			os.WriteFile("/sys/class/block/"+n+"/bcache/stop", []byte("1\n"), 0)
		}
		os.WriteFile("/sys/fs/bcache/"+confSetUUID+"/unregister", []byte("1\n"), 0)
		testenv.Run("vgremove", "--force", "--yes", confVG)
		if real, err := filepath.EvalSymlinks("/dev/md/sconf"); err == nil {
			testenv.Run("mdadm", "--stop", real)
		}
		testenv.SettleUdev()
		// bcache lets go of its devices after the writes return.
		for i := 0; i < 100 && (confExists("/sys/class/block/"+filepath.Base(r.a.Dev)+"/bcache") || confExists("/sys/class/block/"+filepath.Base(r.b.Dev)+"/bcache")); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		for _, m := range []*testenv.Loop{r.a, r.b} {
			testenv.Run("mdadm", "--zero-superblock", m.Dev)
			testenv.Run("pvremove", "--force", "--force", "--yes", m.Dev)
			testenv.Run("wipefs", "--all", m.Dev)
		}
		testenv.SettleUdev()
	})
	return r
}

func (r *loopConfRig) host() disk.Host    { return r.live }
func (r *loopConfRig) members() [2]string { return [2]string{r.a.Dev, r.b.Dev} }
func (r *loopConfRig) facts(t *testing.T) *hwinfo.Host {
	h, err := hwinfo.Read(context.Background(), hwinfo.Options{All: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// settle waits for udev twice, a moment apart: its watch turns the close
// of a device written to (pvremove's wipe of a label) into a change event
// a little after the close, and a settle before that event is queued
// returns at once (the guest once read A's old LVM2_member after its
// pvremove, B's already gone).
func (r *loopConfRig) settle() {
	testenv.SettleUdev()
	if _, err := os.Stat("/run/udev/control"); err != nil {
		return
	}
	// udev re-probes a device when a writer closes it (its inotify
	// watch), some time after the program that wrote has exited: settle
	// can return before that event is even queued, and inventory then
	// reads the old type (LVM2_member after pvremove). Where the
	// database and the disk disagree, udev is asked to probe again.
	for _, dev := range r.members() {
		onDisk, _ := testenv.Run("blkid", "-p", "-s", "TYPE", "-o", "value", dev)
		props, _ := testenv.Run("udevadm", "info", "--query=property", "--name", dev)
		inDB := ""
		for _, l := range strings.Split(props, "\n") {
			if v, ok := strings.CutPrefix(l, "ID_FS_TYPE="); ok {
				inDB = v
			}
		}
		if strings.TrimSpace(onDisk) != inDB {
			testenv.Run("udevadm", "trigger", "--action=change", "--settle", dev)
			testenv.SettleUdev()
		}
	}
}

func confExists(p string) bool { _, err := os.Lstat(p); return err == nil }
