package uring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/internal/testenv"
)

func newRing(t *testing.T, n uint32) *Ring {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := New(n)
	if errors.Is(err, ErrUnsupported) {
		// ENOSYS: a kernel without io_uring truly lacks it; EPERM (seccomp,
		// kernel.io_uring_disabled) is a block that CI must not pass over.
		testenv.Unavailable(t, "io_uring", errors.Is(err, unix.ENOSYS), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestLayoutSizes(t *testing.T) {
	if s := unsafe.Sizeof(SQE{}); s != 64 {
		t.Fatalf("sizeof SQE = %d, want 64", s)
	}
	if s := unsafe.Sizeof(CQE{}); s != 16 {
		t.Fatalf("sizeof CQE = %d, want 16", s)
	}
	if s := unsafe.Sizeof(params{}); s != 120 {
		t.Fatalf("sizeof params = %d, want 120", s)
	}
}

// TestReadWrite writes distinct blocks through the ring, reads them back
// through the ring into registered buffers, and compares with the file.
func TestReadWrite(t *testing.T) {
	r := newRing(t, 8)
	if r.Entries() < 8 {
		t.Fatalf("entries %d", r.Entries())
	}
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const bs, n = 4096, 8
	want := make([]byte, bs*n)
	for i := range want {
		want[i] = byte(i*7 + i/bs)
	}
	for i := 0; i < n; i++ {
		e := r.GetSQE()
		e.Opcode, e.Fd = OpWrite, int32(f.Fd())
		e.Addr = uint64(uintptr(unsafe.Pointer(&want[i*bs])))
		e.Len, e.Off, e.UserData = bs, uint64(i*bs), uint64(i)
	}
	if e := r.GetSQE(); e != nil && r.Entries() == 8 {
		t.Fatal("GetSQE on a full SQ returned an entry")
	}
	reap(t, r, n, bs)
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, want) {
		t.Fatal("file content differs from what the ring wrote")
	}

	bufs := make([][]byte, n)
	mem, err := unix.Mmap(-1, 0, bs*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for i := range bufs {
		bufs[i] = mem[i*bs : (i+1)*bs]
	}
	op := uint8(OpRead)
	if err := r.RegisterBuffers(bufs); err == nil {
		op = OpReadFixed
	} else {
		t.Logf("no fixed buffers: %v", err)
	}
	for i := 0; i < n; i++ {
		e := r.GetSQE()
		e.Opcode, e.Fd = op, int32(f.Fd())
		e.Addr = uint64(uintptr(unsafe.Pointer(&bufs[i][0])))
		e.Len, e.Off, e.UserData, e.BufIndex = bs, uint64(i*bs), uint64(i), uint16(i)
	}
	reap(t, r, n, bs)
	if !bytes.Equal(mem, want) {
		t.Fatal("ring read back different bytes")
	}
}

func reap(t *testing.T, r *Ring, n int, bs int32) {
	t.Helper()
	seen := map[uint64]bool{}
	for len(seen) < n {
		if err := r.SubmitAndWait(1); err != nil {
			t.Fatal(err)
		}
		head, k := r.Ready()
		for i := uint32(0); i < k; i++ {
			c := r.CQE(head + i)
			if c.Res != bs {
				t.Fatalf("cqe %d res %d", c.UserData, c.Res)
			}
			seen[c.UserData] = true
		}
		r.Advance(k)
	}
}
