package hwinfo

import (
	"os"

	"golang.org/x/sys/unix"
)

// ReadFresh reads len(b) bytes at off of the block device open as f as
// they are on the device now: it first drops the clean pages of that range
// from the device's page cache (a dirty page, newer than the device,
// stays and is read). Every reader that judges what is on a disk (the
// facts, the guard) reads so.
//
// A disk and each of its partitions are block devices of their own, each
// with its own page cache, and a mounted partition keeps its disk open,
// so what the disk's cache holds of the partition's range outlives writes
// made through the partition. Seen, with other processes probing the same
// disks: a superblock mkfs.xfs had finished read through the disk as
// still in progress, and the start of a partition mkfs had just written
// read as zeros; a prepare rerun right after a kill took its own
// filesystem for an unfinished one, and a blank disk would be taken for
// one holding nothing.
func ReadFresh(f *os.File, b []byte, off int64) (int, error) {
	// Whole pages: the kernel keeps a page the range only touches.
	page := int64(os.Getpagesize())
	start, end := off&^(page-1), (off+int64(len(b))+page-1)&^(page-1)
	unix.Fadvise(int(f.Fd()), start, end-start, unix.FADV_DONTNEED)
	return f.ReadAt(b, off)
}
