package engine

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// layoutChunk is the write size of Layout: large enough to stream at the
// device's sequential speed, small enough to cancel promptly.
const layoutChunk = 4 << 20

// Layout makes path a regular file of at least size bytes whose first size
// bytes are real data (incompressible random unless data says otherwise),
// written with large sequential O_DIRECT writes where the filesystem allows
// (buffered otherwise), then fdatasync'ed, so reads that follow hit
// allocated blocks rather than holes the filesystem answers with zeros.
// Every 4 KiB block gets a distinct stamp so deduplication finds nothing.
func Layout(ctx context.Context, path string, size int64, data DataPattern) error {
	if size <= 0 {
		return fmt.Errorf("%w: layout size %d must be positive", ErrParams, size)
	}
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_DIRECT, 0o644)
	direct := err == nil
	if err == unix.EINVAL {
		fd, err = unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	mem, err := unix.Mmap(-1, 0, layoutChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("layout buffer: %w", err)
	}
	defer unix.Munmap(mem)
	r := newRNG(uint64(size) ^ 0x1a7047)
	fillData(mem, data, &r)
	var stamp uint64
	for off := int64(0); off < size; off += layoutChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := int64(layoutChunk)
		if off+n > size {
			n = size - off
			if direct && n%4096 != 0 {
				// The unaligned tail goes through the page cache.
				if err := unix.Fdatasync(fd); err != nil {
					return fmt.Errorf("fdatasync %s: %w", path, err)
				}
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
					return fmt.Errorf("clear O_DIRECT on %s: %w", path, err)
				}
			}
		}
		if data.Kind != DataZeros {
			for b := 0; b+8 <= int(n); b += 4096 {
				stamp++
				v := splitmix(stamp)
				for k := 0; k < 8; k++ {
					mem[b+k] = byte(v >> (8 * k))
				}
			}
		}
		w, err := unix.Pwrite(fd, mem[:n], off)
		if err != nil {
			return fmt.Errorf("write %s at %d: %w", path, off, err)
		}
		if int64(w) != n {
			return fmt.Errorf("write %s at %d: short write %d of %d bytes", path, off, w, n)
		}
	}
	if err := unix.Fdatasync(fd); err != nil {
		return fmt.Errorf("fdatasync %s: %w", path, err)
	}
	return f.Close()
}
