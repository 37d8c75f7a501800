//go:build crashtest

package disk

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/disk/fstab"
)

// CrashEnv exists only in a build with the crashtest tag (the crash-safety
// tests in internal/crashtest build diskprep so): it makes a prepare run
// kill itself with SIGKILL at one named step, to prove that a crash
// anywhere leaves the host in a state a rerun repairs. Its value is a step
// name ("gpt-written"), or a step name and a delay ("mkfs+15ms"), in which
// case the step goes on and the kill lands that long after it began:
// inside mkfs, for instance, or at the latest at the next step, which
// waits for it.
//
// The steps are boundaries of the Host's effects, in the order Apply
// reaches them: image-created (CreateImage done), loop-attaching
// (AttachLoop done, not yet recorded), loop-attached (its record written),
// wiped (the sync after zeroing signatures), gpt-backup (go-diskfs has
// written the backup GPT, not yet the primary array), gpt-written (the
// sync after the protective MBR), partitions-registered (the disk's
// handle closed after telling the kernel), mkfs (before mkfs runs),
// formatted (after), mounted (after mount), fstab-parsed,
// fstab-backed-up, fstab-replaced (the steps of the fstab edit); and of
// the storage stacks: discarded (after blkdiscard), swap-made (after
// mkswap), swapon (after it), md-created (after mdadm --create),
// mdadm-conf (mdadm.conf replaced), pv-created, vg-created, lv-created
// (after pvcreate, vgcreate, lvcreate); of day two: vg-extended,
// lv-grown (after vgextend, lvextend), fs-checked, fs-shrunk, lv-shrunk
// (after prepare --shrink's e2fsck, resize2fs, lvreduce), md-removed,
// md-added (after replace's mdadm --remove, --add); of encryption:
// luks-formatted, tpm2-enrolled, luks-opened (after cryptsetup
// luksFormat, systemd-cryptenroll, cryptsetup open), crypttab (crypttab
// replaced); and of the caches:
// cache-converted (after lvconvert), bcache-made (after make-bcache),
// bcache-registered, bcache-attached, bcache-mode (after the sysfs writes).
// mkfs and formatted are also the steps of a file system on an array,
// logical volume or cached volume.
const CrashEnv = "DISKPREP_TEST_CRASH_AT"

// defaultHost is the live machine, wrapped in the crash points when
// CrashEnv asks for one.
func defaultHost(r Runner) Host {
	live := &LiveHost{Runner: r}
	if step, _ := crashSpec(); step == "" {
		return live
	}
	return &crashHost{Host: live}
}

var crashSpec = sync.OnceValues(func() (step string, delay time.Duration) {
	v := os.Getenv(CrashEnv)
	if v == "" {
		return "", 0
	}
	step, d, ok := strings.Cut(v, "+")
	if ok {
		delay, _ = time.ParseDuration(d)
	}
	return step, delay
})

// killPending is set once a delayed kill is on its way.
var killPending atomic.Bool

// crashPoint kills the process at step when the crash test asks for it.
func crashPoint(step string) {
	if killPending.Load() {
		// A delayed kill must land within its step, however fast the
		// step was: the next step waits for it.
		select {}
	}
	at, delay := crashSpec()
	if at != step {
		return
	}
	if delay <= 0 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	killPending.Store(true)
	time.AfterFunc(delay, func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
}

// crashHost calls the crash points at the boundaries of the live host's
// effects.
type crashHost struct {
	Host
	opened atomic.Bool // the first device opened is the disk Apply writes
}

func (h *crashHost) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return h.run(name, args, func() ([]byte, error) { return h.Host.Run(ctx, name, args...) })
}

func (h *crashHost) RunInput(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	in, ok := h.Host.(InputRunner)
	if !ok {
		return nil, noInput(name)
	}
	return h.run(name, args, func() ([]byte, error) { return in.RunInput(ctx, stdin, name, args...) })
}

// run calls the crash points around the program name run by do.
func (h *crashHost) run(name string, args []string, do func() ([]byte, error)) ([]byte, error) {
	mkfs := strings.HasPrefix(name, "mkfs.") && !(len(args) == 1 && args[0] == "-V")
	if mkfs {
		crashPoint("mkfs")
	}
	out, err := do()
	if err == nil && mkfs {
		crashPoint("formatted")
	}
	if err == nil && name == "mount" {
		crashPoint("mounted")
	}
	if err == nil {
		switch {
		case name == "blkdiscard":
			crashPoint("discarded")
		case name == "mkswap" && !(len(args) == 1 && args[0] == "-V"):
			crashPoint("swap-made")
		case name == "swapon":
			crashPoint("swapon")
		case name == "mdadm" && len(args) > 0 && args[0] == "--create":
			crashPoint("md-created")
		case name == "mdadm" && slices.Contains(args, "--remove"):
			crashPoint("md-removed")
		case name == "mdadm" && slices.Contains(args, "--add"):
			crashPoint("md-added")
		case name == "cryptsetup" && len(args) > 0 && args[0] == "luksFormat":
			crashPoint("luks-formatted")
		case name == "systemd-cryptenroll" && !(len(args) == 1 && args[0] == "--version"):
			crashPoint("tpm2-enrolled")
		case name == "cryptsetup" && len(args) > 0 && args[0] == "open":
			crashPoint("luks-opened")
		case name == "pvcreate":
			crashPoint("pv-created")
		case name == "vgcreate":
			crashPoint("vg-created")
		case name == "lvcreate":
			crashPoint("lv-created")
		case name == "lvconvert":
			crashPoint("cache-converted")
		case name == "vgextend":
			crashPoint("vg-extended")
		case name == "lvextend":
			crashPoint("lv-grown")
		case name == "e2fsck":
			crashPoint("fs-checked")
		case name == "resize2fs":
			crashPoint("fs-shrunk")
		case name == "lvreduce":
			crashPoint("lv-shrunk")
		case name == "make-bcache":
			crashPoint("bcache-made")
		}
	}
	return out, err
}

func (h *crashHost) CreateImage(path string, size uint64) error {
	err := h.Host.CreateImage(path, size)
	if err == nil {
		crashPoint("image-created")
	}
	return err
}

func (h *crashHost) AttachLoop(image string, sector uint64) (string, error) {
	dev, err := h.Host.AttachLoop(image, sector)
	if err == nil {
		crashPoint("loop-attaching")
	}
	return dev, err
}

func (h *crashHost) WriteFile(path string, data []byte, perm os.FileMode) error {
	err := h.Host.WriteFile(path, data, perm)
	if dir, name := filepath.Split(path); err == nil && filepath.Base(dir) == "loops" && strings.HasPrefix(name, "loop") {
		crashPoint("loop-attached")
	}
	if err == nil && filepath.Base(path) == "mdadm.conf" {
		crashPoint("mdadm-conf")
	}
	if err == nil && filepath.Base(path) == "crypttab" {
		crashPoint("crypttab")
	}
	return err
}

// WriteSys is a cache's kernel step: bcache-registered, bcache-attached,
// bcache-mode after the write into register_quiet, attach, cache_mode.
func (h *crashHost) WriteSys(path, value string) error {
	err := h.Host.WriteSys(path, value)
	if err == nil {
		switch filepath.Base(path) {
		case "register_quiet", "register":
			crashPoint("bcache-registered")
		case "attach":
			crashPoint("bcache-attached")
		case "cache_mode":
			crashPoint("bcache-mode")
		}
	}
	return err
}

func (h *crashHost) EditFstab(path string, change fstab.Change) error {
	return fstab.EditSteps(path, change, func(s string) { crashPoint("fstab-" + s) })
}

func (h *crashHost) OpenDevice(path string, write bool) (Device, error) {
	d, err := h.Host.OpenDevice(path, write)
	if err != nil {
		return nil, err
	}
	return &crashDevice{Device: d, first: h.opened.CompareAndSwap(false, true)}, nil
}

// crashDevice finds the wipe, the GPT's halves and the end of the kernel's
// registration in the writes to the disk.
type crashDevice struct {
	Device
	first          bool // the disk's own handle (Apply opens it first)
	wiping, pmbr   bool
	primaryChecked bool
}

func (d *crashDevice) WriteAt(b []byte, off int64) (int, error) {
	zero := len(bytes.Trim(b, "\x00")) == 0
	if !zero && !d.primaryChecked {
		// go-diskfs writes the backup array and header first; the primary
		// array (right after the primary header at LBA 1) comes next.
		if lss, err := d.LogicalSector(); err == nil && off == 2*int64(lss) {
			d.primaryChecked = true
			crashPoint("gpt-backup")
		}
	}
	n, err := d.Device.WriteAt(b, off)
	d.wiping = d.wiping || zero
	d.pmbr = d.pmbr || !zero && off == 446 && len(b) == 16
	return n, err
}

func (d *crashDevice) Sync() error {
	err := d.Device.Sync()
	switch {
	case err != nil:
	case d.wiping:
		d.wiping = false
		crashPoint("wiped")
	case d.pmbr:
		d.pmbr = false
		crashPoint("gpt-written")
	}
	return err
}

func (d *crashDevice) Close() error {
	err := d.Device.Close()
	if d.first {
		d.first = false
		crashPoint("partitions-registered")
	}
	return err
}
