package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const (
	// layoutChunk is the write size of Layout: large enough to stream at the
	// device's sequential speed, small enough to cancel promptly.
	layoutChunk = 4 << 20
	// layoutWriters keeps several chunks in flight, which fast SSDs need to
	// reach their sequential write speed (one 4 MiB write at a time does
	// not on NVMe); a disk that streams one at a time loses nothing.
	layoutWriters = 4
)

// Layout makes path a regular file of at least size bytes whose first size
// bytes are real data (incompressible random unless data says otherwise),
// written with large O_DIRECT writes where the filesystem allows (buffered
// otherwise), then fdatasync'ed, so reads that follow hit allocated blocks
// rather than holes the filesystem answers with zeros. Every 4 KiB block
// gets a distinct stamp so deduplication finds nothing.
func Layout(ctx context.Context, path string, size int64, data DataPattern) error {
	if size <= 0 {
		return fmt.Errorf("%w: layout size %d must be positive", ErrParams, size)
	}
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_DIRECT, 0o644)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()

	// Whole 4 KiB blocks go through the workers; an unaligned tail is
	// written buffered at the end.
	body := size / 4096 * 4096
	chunks := (body + layoutChunk - 1) / layoutChunk
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, layoutWriters)
	for w := 0; w < layoutWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = layoutWorker(ctx, fd, path, body, chunks, &next, data, uint64(w))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if body < size {
		tail := make([]byte, size-body)
		r := newRNG(uint64(size))
		fillData(tail, data, &r)
		if err := unix.Fdatasync(fd); err != nil {
			return fmt.Errorf("fdatasync %s: %w", path, err)
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
			return fmt.Errorf("clear O_DIRECT on %s: %w", path, err)
		}
		if _, err := unix.Pwrite(fd, tail, body); err != nil {
			return fmt.Errorf("write %s at %d: %w", path, body, err)
		}
	}
	if err := unix.Fdatasync(fd); err != nil {
		return fmt.Errorf("fdatasync %s: %w", path, err)
	}
	return f.Close()
}

// layoutWorker writes the chunks it claims from next until none are left.
func layoutWorker(ctx context.Context, fd int, path string, body, chunks int64, next *atomic.Int64, data DataPattern, id uint64) error {
	mem, err := unix.Mmap(-1, 0, layoutChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("layout buffer: %w", err)
	}
	defer unix.Munmap(mem)
	r := newRNG(uint64(body) ^ 0x1a7047 ^ id<<32)
	fillData(mem, data, &r)
	for {
		c := next.Add(1) - 1
		if c >= chunks {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		off := c * layoutChunk
		n := min(int64(layoutChunk), body-off)
		if data.Kind != DataZeros {
			// The stamp is the block's own number: distinct per block,
			// whichever worker writes it.
			for b := int64(0); b < n; b += 4096 {
				v := splitmix(uint64(off+b) / 4096)
				for k := 0; k < 8; k++ {
					mem[b+int64(k)] = byte(v >> (8 * k))
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
}
