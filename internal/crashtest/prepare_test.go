//go:build crashtest

package crashtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// killPoint is one place a prepare run is killed, and what a rerun of the
// same command must do without --wipe.
type killPoint struct {
	at string // disk.CrashEnv value
	// before: "" an empty disk; "fs" a disk carrying a filesystem (the
	// command has --wipe); "prepared" prepared (and released) by the same
	// command with another label, so that this one, with --wipe, rewrites
	// the table.
	before string
	// refuse: the rerun without --wipe must be refused, naming this.
	// Where it is empty the rerun may converge or be refused, but a
	// refusal must always point at --wipe.
	refuse string
	// converge: the rerun without --wipe must succeed.
	converge bool
}

const (
	diskSize = 320 << 20 // mkfs.xfs wants 300 MiB; sparse, so cheap
	label    = "crash"
)

// devicePoints are the kill points of `prepare DEVICE`, in step order.
var devicePoints = []killPoint{
	{at: "wiped", before: "fs", converge: true},
	{at: "gpt-backup", refuse: "damaged"},
	// The case go-diskfs's write order is about: a disk prepared before,
	// prepared again with --wipe, killed when only the new backup GPT is
	// on disk. The old primary still names the old layout, which the
	// kernel and the old filesystem agree with: the old command, rerun,
	// must not take the disk as prepared.
	{at: "gpt-backup", before: "prepared", refuse: "damaged"},
	// The kernel has not been told of the partitions: the table, intact
	// and as planned, is recognised all the same.
	{at: "gpt-written", converge: true},
	{at: "partitions-registered", converge: true},
	{at: "mkfs+1ms"},
	{at: "mkfs+5ms"},
	{at: "mkfs+10ms"},
	{at: "formatted", converge: true},
	{at: "mounted", converge: true},
	{at: "fstab-parsed", converge: true},
	// Inside the writes of the backup and of the new file.
	{at: "fstab-parsed+200us", converge: true},
	{at: "fstab-backed-up", converge: true},
	{at: "fstab-backed-up+200us", converge: true},
	{at: "fstab-replaced", converge: true},
}

// imagePoints are the kill points of `prepare --image`, each followed by
// `release IMAGE`, which must leave no loop device or mount behind.
var imagePoints = []killPoint{
	{at: "image-created", converge: true},
	{at: "loop-attaching", converge: true},
	{at: "loop-attached", converge: true},
	{at: "gpt-backup", refuse: "damaged"},
	{at: "gpt-written", converge: true},
	{at: "partitions-registered", converge: true},
	{at: "mkfs+5ms"},
	{at: "formatted", converge: true},
	{at: "mounted", converge: true},
	{at: "fstab-backed-up", converge: true},
	{at: "fstab-replaced", converge: true},
}

// tally counts kills and convergences for the log line the closing note
// quotes.
type tally struct{ points, kills, converged, neededWipe int }

func (c *tally) log(t *testing.T, what string) {
	t.Logf("%s: %d kill points, %d kills, %d converged (%d needed --wipe)", what, c.points, c.kills, c.converged, c.neededWipe)
}

// rerun repeats args after a kill: first without --wipe (refused only with
// a reason that points at --wipe), then with it when refused.
func rerun(t *testing.T, kp killPoint, args []string, c *tally) bool {
	t.Helper()
	plain := make([]string, 0, len(args))
	for _, a := range args {
		if a != "--wipe" {
			plain = append(plain, a)
		}
	}
	o := diskprep(t, "", plain...)
	switch {
	case o.code == 0:
		if kp.refuse != "" {
			t.Errorf("rerun without --wipe succeeded; want a refusal naming %q\n%s", kp.refuse, o)
		}
		return true
	case o.code == 3:
		if kp.converge {
			t.Errorf("rerun without --wipe refused; want it to converge\n%s", o)
		}
		if !strings.Contains(o.stderr, "--wipe") || kp.refuse != "" && !strings.Contains(o.stderr, kp.refuse) {
			t.Errorf("refusal does not name %q and --wipe:\n%s", kp.refuse, o)
		}
		if strings.Count(strings.TrimSpace(o.stderr), "\n") != 0 {
			t.Errorf("refusal is not one line:\n%s", o.stderr)
		}
	default:
		t.Errorf("rerun without --wipe: %s", o)
		return false
	}
	c.neededWipe++
	if o = diskprep(t, "", append(plain, "--wipe")...); o.code != 0 {
		t.Errorf("rerun with --wipe: %s", o)
		return false
	}
	return true
}

func TestPrepareDeviceKilled(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "sgdisk", "blkid", "findmnt")
	binary(t)
	c := tally{points: len(devicePoints)}
	for _, kp := range devicePoints {
		name := kp.at
		if kp.before != "" {
			name = kp.before + "-disk-" + kp.at
		}
		t.Run(name, func(t *testing.T) {
			l := testenv.NewLoop(t, diskSize, testenv.LoopOptions{})
			dir := t.TempDir()
			fstabPath, old := newFstab(t, dir)
			mnt := filepath.Join(dir, "mnt")
			cmdline := func(label string) []string {
				return []string{"prepare", l.Dev, "--fs", "xfs", "--label", label, "--mount", mnt, "--persist", "--fstab", fstabPath, "--yes"}
			}
			args := cmdline(label)
			switch kp.before {
			case "fs":
				testenv.MustRun(t, "mkfs.xfs", "-q", l.Dev)
				args = append(args, "--wipe")
			case "prepared":
				if o := diskprep(t, "", cmdline("old")...); o.code != 0 {
					t.Fatalf("first prepare: %s", o)
				}
				if o := diskprep(t, "", "release", mnt, "--fstab", fstabPath); o.code != 0 {
					t.Fatalf("release: %s", o)
				}
				args = append(args, "--wipe")
			}
			t.Cleanup(func() { diskprep(t, "", "release", mnt, "--fstab", fstabPath) })

			o := diskprep(t, kp.at, args...)
			if !o.killed {
				t.Fatalf("not killed at %s: %s", kp.at, o)
			}
			c.kills++
			checkFstabWhole(t, fstabPath, old, mnt)
			// The killed run's pid stays in the lock file; the lock itself
			// went with the process and must not stop the rerun.
			if h := lockHolder(t, l.Dev); h != strconv.Itoa(o.pid) {
				t.Errorf("lock file names %q, want the killed pid %d", h, o.pid)
			}
			afterKill, _ := os.ReadFile(fstabPath)
			if kp.before == "prepared" {
				o := diskprep(t, "", cmdline("old")...)
				if o.code != 3 || !strings.Contains(o.stderr, "damaged") {
					t.Errorf("the old command on the half-rewritten table: want a refusal naming the damage, got %s", o)
				}
			}

			if !rerun(t, kp, args, &c) {
				return
			}
			checkPrepared(t, l.Dev, "xfs", label, mnt, fstabPath, old)
			// The fstab after the kill was the old or exactly this one.
			if final, _ := os.ReadFile(fstabPath); string(afterKill) != string(old) && string(afterKill) != string(final) {
				t.Errorf("fstab after the kill:\n%s\nis neither the old nor the final file:\n%s", afterKill, final)
			}
			// And once more: nothing left to do.
			if o := diskprep(t, "", args[:len(args)-boolInt(kp.before != "")]...); o.code != 0 || !strings.Contains(o.stdout, "already prepared") {
				t.Errorf("third run: %s", o)
			}
			if !t.Failed() {
				c.converged++
			}
		})
	}
	c.log(t, "prepare DEVICE")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// loopOf is the loop device backed by image, "" when none.
func loopOf(t *testing.T, image string) string {
	t.Helper()
	out, err := testenv.Run("losetup", "-n", "-O", "NAME", "-j", image)
	if err != nil {
		t.Fatalf("losetup -j: %v", err)
	}
	return strings.TrimSpace(out)
}

func TestPrepareImageKilled(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "sgdisk", "blkid", "findmnt")
	binary(t)
	c := tally{points: len(imagePoints)}
	for _, kp := range imagePoints {
		t.Run(kp.at, func(t *testing.T) {
			dir := t.TempDir()
			fstabPath, old := newFstab(t, dir)
			img, mnt := filepath.Join(dir, "scratch.img"), filepath.Join(dir, "mnt")
			args := []string{"prepare", "--image", img, "--size", "320M", "--fs", "xfs", "--label", label, "--mount", mnt, "--persist", "--fstab", fstabPath, "--yes"}
			t.Cleanup(func() {
				if dev := loopOf(t, img); dev != "" {
					t.Errorf("%s still attached to %s", img, dev)
					diskprep(t, "", "release", img, "--fstab", fstabPath)
					testenv.UnmountAll(t, dev)
					testenv.DropPartitions(t, dev)
					testenv.Run("losetup", "-d", dev)
				}
			})

			o := diskprep(t, kp.at, args...)
			if !o.killed {
				t.Fatalf("not killed at %s: %s", kp.at, o)
			}
			c.kills++
			checkFstabWhole(t, fstabPath, old, mnt)

			// release cleans up whatever the killed run left attached.
			if r := diskprep(t, "", "release", img, "--fstab", fstabPath); r.code != 0 {
				t.Fatalf("release after the kill: %s", r)
			}
			if dev := loopOf(t, img); dev != "" {
				t.Fatalf("release left %s attached", dev)
			}
			if out, _ := testenv.Run("findmnt", "-n", "--mountpoint", mnt); strings.TrimSpace(out) != "" {
				t.Fatalf("release left %s mounted: %s", mnt, out)
			}
			if b, lines := fstabLines(t, fstabPath); len(entriesFor(lines, mnt)) != 0 {
				t.Errorf("release left the fstab line:\n%s", b)
			}

			if !rerun(t, kp, args, &c) {
				return
			}
			dev := loopOf(t, img)
			if dev == "" {
				t.Fatal("rerun left no loop device")
			}
			checkPrepared(t, dev, "xfs", label, mnt, fstabPath, old)
			if r := diskprep(t, "", "release", mnt, "--fstab", fstabPath); r.code != 0 || !strings.Contains(r.stdout, "detached "+dev) {
				t.Errorf("final release: %s", r)
			}
			if b, _ := os.ReadFile(fstabPath); string(b) != string(old) {
				t.Errorf("fstab after release is not the old file:\n%s", b)
			}
			if !t.Failed() {
				c.converged++
			}
		})
	}
	c.log(t, "prepare --image")
}

// TestPrepareImageKilledRerun: prepare --image killed at each step, then
// the same command run again at once, with no release between (what
// someone whose ssh session died does): it converges as after the release
// TestPrepareImageKilled makes first, adopting or detaching what the
// killed run left attached, and one release then leaves nothing attached.
func TestPrepareImageKilledRerun(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "sgdisk", "blkid", "findmnt")
	binary(t)
	c := tally{points: len(imagePoints)}
	for _, kp := range imagePoints {
		t.Run(kp.at, func(t *testing.T) {
			dir := t.TempDir()
			fstabPath, old := newFstab(t, dir)
			img, mnt := filepath.Join(dir, "scratch.img"), filepath.Join(dir, "mnt")
			args := []string{"prepare", "--image", img, "--size", "320M", "--fs", "xfs", "--label", label, "--mount", mnt, "--persist", "--fstab", fstabPath, "--yes"}
			t.Cleanup(func() {
				for _, dev := range strings.Fields(loopOf(t, img)) {
					t.Errorf("%s still attached to %s", img, dev)
					diskprep(t, "", "release", img, "--fstab", fstabPath)
					testenv.UnmountAll(t, dev)
					testenv.DropPartitions(t, dev)
					testenv.Run("losetup", "-d", dev)
				}
			})

			o := diskprep(t, kp.at, args...)
			if !o.killed {
				t.Fatalf("not killed at %s: %s", kp.at, o)
			}
			c.kills++
			checkFstabWhole(t, fstabPath, old, mnt)
			if !rerun(t, kp, args, &c) {
				return
			}
			devs := strings.Fields(loopOf(t, img))
			if len(devs) != 1 {
				t.Fatalf("%s is attached to %v, want exactly one loop device", img, devs)
			}
			checkPrepared(t, devs[0], "xfs", label, mnt, fstabPath, old)
			if r := diskprep(t, "", "release", mnt, "--fstab", fstabPath); r.code != 0 || !strings.Contains(r.stdout, "detached "+devs[0]) {
				t.Errorf("final release: %s", r)
			}
			if b, _ := os.ReadFile(fstabPath); string(b) != string(old) {
				t.Errorf("fstab after release is not the old file:\n%s", b)
			}
			if !t.Failed() {
				c.converged++
			}
		})
	}
	c.log(t, "prepare --image, rerun at once")
}
