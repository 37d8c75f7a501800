// Package testenv gates the privileged test tier and makes the only devices
// such tests may touch: loop devices over sparse files they created.
//
// Tests call RequirePrivileged first. It skips when not root, except when
// DISKPREP_REQUIRE_PRIVILEGED=1 (CI), where a skip would hide a broken tier and
// so fails instead.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diskprep/diskprep/internal/mountinfo"
)

// Required reports whether privileged tests must run (CI sets it).
func Required() bool { return os.Getenv("DISKPREP_REQUIRE_PRIVILEGED") == "1" }

// SkipOrFail skips the test, or fails it when privileged tests are required.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("DISKPREP_REQUIRE_PRIVILEGED=1 but: %s", msg)
	}
	t.Skip(msg)
}

// Lacks skips t because this machine does not have facility at all (a
// kernel built without io_uring): nothing its owner could allow would make
// the test run, so it skips even when privileged tests are required, and
// the skip message says that this is why.
func Lacks(t testing.TB, facility, why string) {
	t.Helper()
	t.Skipf("this machine lacks %s (%s): skipped, also under DISKPREP_REQUIRE_PRIVILEGED=1", facility, why)
}

// Unavailable skips t for a facility it needs that err says is not usable:
// when absent, the machine truly lacks it (Lacks); otherwise it is blocked
// or not installed (a seccomp policy, a sysctl, a missing package), which a
// CI must not pass over silently (SkipOrFail).
func Unavailable(t testing.TB, facility string, absent bool, err error) {
	t.Helper()
	if absent {
		Lacks(t, facility, err.Error())
	}
	SkipOrFail(t, "%s present but not usable here (blocked or not installed): %v", facility, err)
}

// RequirePrivileged needs root, loop devices and the named programs on PATH.
func RequirePrivileged(t testing.TB, programs ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "privileged test: needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		SkipOrFail(t, "privileged test: no /dev/loop-control: %v", err)
	}
	for _, p := range append([]string{"losetup"}, programs...) {
		if _, err := exec.LookPath(p); err != nil {
			SkipOrFail(t, "privileged test: %s not installed (scripts/test.sh installs it)", p)
		}
	}
}

// BinaryEnv names a prebuilt diskprep binary for the tests that run the
// real program (crash, signal and privilege tests), instead of building
// it with go build: the QEMU guest runs test binaries but has no Go tool.
// The binary must be built as the test needs it (-tags crashtest for the
// crash suite).
const BinaryEnv = "DISKPREP_TEST_BINARY"

// BuildDiskprep puts a diskprep binary at dst, executable by anyone: a
// copy of the one BinaryEnv names, else what `go build [-tags TAGS] pkg`
// makes, run in dir ("" is the working directory).
func BuildDiskprep(dst, dir, pkg string, tags ...string) error {
	if p := os.Getenv(BinaryEnv); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("%s: %w", BinaryEnv, err)
		}
		return os.WriteFile(dst, b, 0o755)
	}
	args := []string{"build"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, "-o", dst, pkg)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	return nil
}

var (
	parserOnce sync.Once
	parser     bool
	parserErr  error
)

// KernelParsesPartitions reports whether the running kernel registers a
// GPT's partitions by itself, through its own parser, when asked to re-read
// the table (sgdisk asks, on a --partscan loop device): a real host's or
// the QEMU guest's kernel does; the kernel of these dev machines, built
// without a GPT parser, does not, and diskprep adds the partitions with
// BLKPG. Tests use it to assert which path diskprep took.
func KernelParsesPartitions(t testing.TB) bool {
	t.Helper()
	RequirePrivileged(t, "sgdisk")
	parserOnce.Do(func() { parser, parserErr = probePartitionParser() })
	if parserErr != nil {
		t.Fatalf("probe the kernel's partition parser: %v", parserErr)
	}
	return parser
}

func probePartitionParser() (bool, error) {
	dir, err := os.MkdirTemp("", "diskprep-parser-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "probe.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return false, err
	}
	if err := os.Truncate(img, 8<<20); err != nil {
		return false, err
	}
	out, err := Run("losetup", "--find", "--show", "--partscan", img)
	if err != nil {
		return false, err
	}
	dev := strings.TrimSpace(out)
	defer func() {
		for i := 0; i < 50 && stillAttached(dev, img); i++ {
			Run("partx", "-d", dev)
			Run("losetup", "-d", dev)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if _, err := Run("sgdisk", "-n", "1:2048:+2M", dev); err != nil {
		return false, err
	}
	name := filepath.Base(dev)
	_, err = os.Stat(filepath.Join("/sys/block", name, name+"p1"))
	return err == nil, nil
}

// Loop is a loop device over a sparse image file that the test owns.
type Loop struct {
	Dev   string // /dev/loopN
	Image string
}

// LoopOptions tune NewLoop.
type LoopOptions struct {
	SectorSize int    // logical sector size; 0 means 512
	Dir        string // where the image goes; default t.TempDir()
}

// NewLoop creates a sparse image of size bytes and attaches it. Cleanup
// unmounts anything mounted from the device or its partitions, detaches it
// and removes the image, also when the test fails.
func NewLoop(t testing.TB, size int64, opt LoopOptions) *Loop {
	t.Helper()
	dir := opt.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	img := filepath.Join(dir, fmt.Sprintf("disk-%d.img", time.Now().UnixNano()))
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		t.Fatal(err)
	}
	f.Close()
	// --partscan, as diskprep attaches its own images: where the kernel
	// has a partition parser (a real host, the QEMU guest), it registers
	// a table written to the device itself, as for a disk; where it has
	// none (these dev machines), nothing changes and BLKPG steps in.
	args := []string{"--find", "--show", "--partscan"}
	if opt.SectorSize != 0 {
		args = append(args, "--sector-size", strconv.Itoa(opt.SectorSize))
	}
	args = append(args, img)
	out, err := Run("losetup", args...)
	if err != nil {
		os.Remove(img)
		t.Fatalf("losetup: %v", err)
	}
	l := &Loop{Dev: strings.TrimSpace(out), Image: img}
	t.Cleanup(func() { l.destroy(t) })
	// losetup closes the device it opened for writing, and udev, watching
	// every disk, answers that close by re-reading its partition table: a
	// partition a test registers next (BLKPG) would vanish under it when
	// udev is slow (a loaded QEMU guest). Let udev finish first.
	SettleUdev()
	return l
}

// SettleUdev waits for udev's event queue to drain, where udev runs (a real
// host, the QEMU guest); elsewhere it does nothing.
func SettleUdev() {
	if _, err := os.Stat("/run/udev/control"); err != nil {
		return
	}
	if _, err := exec.LookPath("udevadm"); err != nil {
		return
	}
	Run("udevadm", "settle", "--timeout=30")
}

func (l *Loop) destroy(t testing.TB) {
	UnmountAll(t, l.Dev)
	// Partitions registered with BLKPG (partx -a, or diskprep itself on a
	// kernel without a partition parser) outlive LOOP_CLR_FD: drop them first.
	DropPartitions(t, l.Dev)
	// LOOP_CLR_FD returns before the kernel lets go of the backing file
	// (autoclear completes on last close), so poll rather than check once.
	deadline := time.Now().Add(5 * time.Second)
	for stillAttached(l.Dev, l.Image) && time.Now().Before(deadline) {
		Run("losetup", "-d", l.Dev)
		time.Sleep(100 * time.Millisecond)
	}
	if stillAttached(l.Dev, l.Image) {
		t.Errorf("loop device %s still attached to %s", l.Dev, l.Image)
	}
	os.Remove(l.Image)
}

// DropPartitions removes the kernel's partition entries of dev (partx -d),
// so a loop device goes back to the pool clean.
func DropPartitions(t testing.TB, dev string) {
	t.Helper()
	name := filepath.Base(dev)
	parts, _ := filepath.Glob(filepath.Join("/sys/block", name, name+"p*"))
	if len(parts) == 0 {
		return
	}
	if _, err := Run("partx", "-d", dev); err != nil {
		t.Logf("partx -d %s: %v", dev, err)
	}
	if parts, _ := filepath.Glob(filepath.Join("/sys/block", name, name+"p*")); len(parts) > 0 {
		t.Errorf("partitions of %s still registered: %v", dev, parts)
	}
}

func stillAttached(dev, img string) bool {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop/backing_file"))
	return err == nil && strings.TrimSpace(string(b)) == img
}

// UnmountAll unmounts every mount whose source is dev or one of its partitions.
func UnmountAll(t testing.TB, dev string) {
	t.Helper()
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, e := range entries {
		if e.Source == dev || strings.HasPrefix(e.Source, dev+"p") {
			points = append(points, e.Point)
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if _, err := Run("umount", points[i]); err != nil {
			Run("umount", "-l", points[i])
		}
	}
}

// Run runs a program and returns its stdout; the error carries stderr.
func Run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// MustRun is Run that fails the test on error.
func MustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := Run(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Mount mounts dev at a fresh temporary directory and unmounts it in Cleanup.
func Mount(t testing.TB, dev string, opts ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{dev, dir}
	if len(opts) > 0 {
		args = append([]string{"-o", strings.Join(opts, ",")}, args...)
	}
	MustRun(t, "mount", args...)
	t.Cleanup(func() {
		if _, err := Run("umount", dir); err != nil {
			Run("umount", "-l", dir)
		}
	})
	return dir
}

// AnsibleTaskStatus is what ansible-playbook's default output said of
// task (its name, with or without the role's prefix) on host: ok,
// changed, skipping, failed or fatal; "" when it did not run there.
func AnsibleTaskStatus(out, task, host string) string {
	_, after, found := strings.Cut(out, "TASK [diskprep : "+task+"]")
	if !found {
		_, after, found = strings.Cut(out, "TASK ["+task+"]")
	}
	if !found {
		return ""
	}
	if i := strings.Index(after, "\nTASK ["); i >= 0 {
		after = after[:i]
	}
	for _, l := range strings.Split(after, "\n") {
		st, rest, ok := strings.Cut(l, ": [")
		if ok && (strings.HasPrefix(rest, host+"]") || strings.HasPrefix(rest, host+" ")) {
			return st
		}
	}
	return ""
}

// TempRoot is a host root for Apply's and release's own files (etc/fstab,
// run/diskprep) in a temporary directory: an fstab with the system's root
// line, which an edit must keep, and, where udev runs, run/udev/control
// linked to the live one, so that diskprep waits for udev as it does on the
// host's own root (without it a rerun right after a write read udev's
// facts of before the write, in the guest).
func TempRoot(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/fstab"), []byte("/dev/vda1\t/\txfs\tdefaults\t0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/udev/control"); err == nil {
		if err := os.MkdirAll(filepath.Join(root, "run/udev"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/run/udev/control", filepath.Join(root, "run/udev/control")); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
