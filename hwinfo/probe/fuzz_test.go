package probe

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzProbe from the synthetic images")

// sparseDevice is a device of size bytes holding head at 0 and tail at the
// end, zeros between: small fuzz inputs still reach the backup GPT header,
// MD 0.90 and ZFS labels at the end of a large device.
type sparseDevice struct {
	head, tail []byte
	size       int64
}

func (s sparseDevice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	if off >= s.size {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > s.size-off {
		n = int(s.size - off)
	}
	clear(p[:n])
	if off < int64(len(s.head)) {
		copy(p[:n], s.head[off:])
	}
	tailStart := s.size - int64(len(s.tail))
	if end := off + int64(n); end > tailStart {
		from := max(off, tailStart)
		copy(p[from-off:n], s.tail[from-tailStart:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func newSparse(head, tail []byte, size uint64) sparseDevice {
	min := uint64(len(head) + len(tail))
	if size < min {
		size = min
	}
	if size > 1<<40 {
		size = 1 << 40
	}
	return sparseDevice{head: head, tail: tail, size: int64(size)}
}

// seedOf cuts a synthetic image down to its non-zero start and end.
func seedOf(img []byte) (head, tail []byte) {
	n := len(img)
	h := min(n, 160<<10)
	for h > 0 && img[h-1] == 0 {
		h--
	}
	t := n - max(h, n-160<<10)
	for t > 0 && img[n-t] == 0 {
		t--
	}
	return img[:h], img[n-t:]
}

func FuzzProbe(f *testing.F) {
	for _, c := range syntheticCases() {
		if len(c.img) > 64<<20 || c.name == "zfs" {
			continue
		}
		head, tail := seedOf(c.img)
		f.Add(head, tail, uint64(len(c.img)))
	}
	f.Fuzz(func(t *testing.T, head, tail []byte, size uint64) {
		dev := newSparse(head, tail, size)
		sigs, err := Probe(dev, dev.size)
		if err != nil {
			t.Fatalf("Probe of an in-memory device: %v", err)
		}
		last := int64(-1)
		for _, s := range sigs {
			if s.Offset < last {
				t.Fatalf("signatures out of offset order: %+v", sigs)
			}
			last = s.Offset
			got := make([]byte, len(s.Magic))
			if len(s.Magic) == 0 || s.Offset < 0 || s.Offset+int64(len(s.Magic)) > dev.size {
				t.Fatalf("bad magic range: %+v", s)
			}
			dev.ReadAt(got, s.Offset)
			if !bytes.Equal(got, s.Magic) {
				t.Fatalf("%s: magic %q, device holds %q at %d", s.Type, s.Magic, got, s.Offset)
			}
			if s.Type == "" || s.Usage == "" {
				t.Fatalf("incomplete signature %+v", s)
			}
		}
		if l, err := ReadLUKS(dev, dev.size); err == nil && l.Version != 1 && l.Version != 2 {
			t.Fatalf("LUKS version %d", l.Version)
		}
		for _, ss := range []int{0, 512, 4096} {
			tbl, err := ReadTable(dev, dev.size, ss)
			if err != nil || tbl == nil {
				continue
			}
			for _, p := range tbl.Partitions {
				if p.Sectors == 0 || p.Number <= 0 {
					t.Fatalf("bad partition %+v", p)
				}
			}
		}
	})
}

// TestWriteFuzzSeeds keeps testdata/fuzz/FuzzProbe in step with the
// builders: go test -run TestWriteFuzzSeeds -update-seeds.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite the fuzz corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzProbe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range syntheticCases() {
		if c.name == "zfs" {
			continue
		}
		head, tail := seedOf(c.img)
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nuint64(%d)\n", head, tail, len(c.img))
		if err := os.WriteFile(filepath.Join(dir, c.name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSparseDevice(t *testing.T) {
	for _, c := range syntheticCases() {
		if c.name == "zfs" { // its labels lie beyond the 160 KiB head
			continue
		}
		head, tail := seedOf(c.img)
		dev := newSparse(head, tail, uint64(len(c.img)))
		got := make([]byte, len(c.img))
		if n, err := dev.ReadAt(got, 0); n != len(got) || err != nil || !bytes.Equal(got, c.img) {
			t.Errorf("%s: sparse seed does not reproduce the image (%d, %v)", c.name, n, err)
		}
	}
}
