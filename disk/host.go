package disk

import (
	"context"
	"io/fs"
	"time"

	"github.com/diskfs/go-diskfs/backend"
	"github.com/diskprep/diskprep/disk/fstab"
)

// Host is every tie Apply and release have to the machine: each program run,
// each file read or replaced, each kernel call. Nothing in disk touches the
// kernel or the file system but through it, so the same Apply runs against
// the live machine (LiveHost) and against a recording fake (disk/hosttest)
// that keeps the ordered log of every effect.
//
// Paths are absolute host paths, already joined to the roots (hwinfo.Roots)
// by the caller; a Host does not reinterpret them.
//
// Storage stacks (LVM, md, bcache) fit as they are: their tools go through
// Run, their sysfs through ReadFile, ReadDir and WriteSys, "udevadm settle" and
// "systemctl daemon-reload" are programs, and WaitNode waits for the device
// node a new array or volume gets.
type Host interface {
	// Run runs one external program (STYLE.md rule 3).
	Runner

	// ReadFile, ReadDir, Readlink, EvalSymlinks, Stat and Lstat read files,
	// sysfs and procfs as the os package does.
	ReadFile(path string) ([]byte, error)
	ReadDir(path string) ([]fs.DirEntry, error)
	Readlink(path string) (string, error)
	EvalSymlinks(path string) (string, error)
	Stat(path string) (fs.FileInfo, error)
	Lstat(path string) (fs.FileInfo, error)
	// DeviceNumber is the major and minor number of the block device node
	// at path (symlinks followed); an error when it is not one.
	DeviceNumber(path string) (major, minor uint32, err error)

	// WriteFile replaces path atomically (a reader sees the old content or
	// the new, never a mix); perm applies to a new file.
	WriteFile(path string, data []byte, perm fs.FileMode) error
	Remove(path string) error
	MkdirAll(path string, perm fs.FileMode) error
	// WriteSys writes value into the existing kernel attribute at path
	// (sysfs: /sys/fs/bcache/register, a bcache device's cache_mode), in
	// place and in one write, as echo VALUE > PATH does; the kernel's
	// refusal is the error.
	WriteSys(path, value string) error
	// EditFstab runs change over the parsed fstab at path and, when it
	// returns lines, backs the old file up and replaces it atomically
	// (disk/fstab's Edit on the live machine).
	EditFstab(path string, change fstab.Change) error

	// CreateImage makes a new sparse file of size bytes, root's alone
	// (0600), never through a link, and marks it as diskprep's (a trusted
	// extended attribute, which only root can set); fs.ErrExist when path
	// exists.
	CreateImage(path string, size uint64) error
	// ImageMade says whether the file at path (not a link to it) carries
	// CreateImage's mark: release --remove-image deletes nothing else.
	ImageMade(path string) bool
	// EmptyImage drops every byte of the file at path and gives it size
	// bytes, sparse.
	EmptyImage(path string, size uint64) error

	// Lock takes diskprep's exclusive lock file at path for what (a device
	// or image, for the refusal), held until unlock; one process may take a
	// lock it holds again. Another holder is a refusal (ErrRefused) naming
	// its pid.
	Lock(path, what string) (unlock func(), err error)

	// AttachLoop attaches image to a free loop device with partition
	// scanning, without autoclear, with the logical sector size given, and
	// returns the device node.
	AttachLoop(image string, sectorBytes uint64) (dev string, err error)
	// DetachLoop drops the partitions the kernel has for dev and detaches it.
	DetachLoop(dev string) error

	// OpenDevice opens a block device: read-only, or for writing with
	// O_EXCL, which fails with unix.EBUSY while anything has it claimed
	// (a mount, a holder, another tool). An image file opens read-only
	// the same way, to be probed.
	OpenDevice(path string, write bool) (Device, error)
	// MakeNode creates the block device node path for major:minor.
	MakeNode(path string, major, minor uint32) error
	// WaitNode waits up to patience for path to be the block device
	// major:minor and says whether it is.
	WaitNode(ctx context.Context, path string, major, minor uint32, patience time.Duration) (bool, error)

	// Unmount unmounts the file system mounted at point.
	Unmount(point string) error
}

// Device is an open block device. Reads and writes are at byte offsets;
// go-diskfs writes the GPT through it.
type Device interface {
	backend.WritableFile
	Name() string
	Sync() error
	// Size is the device's size in bytes (BLKGETSIZE64).
	Size() (uint64, error)
	// LogicalSector is its logical sector size (BLKSSZGET).
	LogicalSector() (uint64, error)
	// LockAgainstUdev takes a BSD lock on the device, which udev (systemd
	// >= 250) honours by leaving it alone, waiting up to patience for
	// udev's own short lock while it probes.
	LockAgainstUdev(patience time.Duration) error
	// RereadPartitions asks the kernel to re-read the partition table
	// (BLKRRPART); a kernel without a GPT parser registers nothing.
	RereadPartitions() error
	// AddPartition and DeletePartition register and drop one partition
	// with the kernel (BLKPG), as partx does.
	AddPartition(number int, start, length uint64) error
	DeletePartition(number int) error
}

// Change is one line of a plan's diff: what apply would do to one layer of
// one device, in the order apply would do it.
type Change struct {
	Act string `json:"action"` // keep, create, change or destroy
	// Layer is image, loop, signature, table, partition, filesystem, swap,
	// mount, fstab (and, from disk/stack, md, mdadm.conf, pv, vg, lv, cache).
	Layer  string `json:"layer"`
	Device string `json:"device"`
	// What is the layer as planned (keep, create, change) or as found
	// (destroy).
	What string `json:"what"`
	// From is what a change replaces, as found.
	From string `json:"from,omitempty"`
}

// Changed says whether apply would do anything at all.
func Changed(cs []Change) bool {
	for _, c := range cs {
		if c.Act != ActKeep {
			return true
		}
	}
	return false
}

// Runner runs one external program and returns its output. Every program
// diskprep runs (mkfs, mount, udevadm, systemctl) goes through it, so tests
// script the exact argv sequence.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// What a change does to its layer.
const (
	ActKeep    = "keep"
	ActCreate  = "create"
	ActChange  = "change"
	ActDestroy = "destroy"
)
