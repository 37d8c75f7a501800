package hwinfo

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Unaligned reads through O_DIRECT give what a buffered read gives, the
// end of the file included.
func TestUncachedReaderMatchesBuffered(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "uncached-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "img")
	data := make([]byte, 3*directAlign+123)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r, c, err := openUncached(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := r.(uncachedReader); !ok {
		t.Skipf("%s takes no O_DIRECT", dir)
	}
	for range 300 {
		off := rng.Int64N(int64(len(data)))
		n := 1 + rng.IntN(2*directAlign)
		got := make([]byte, n)
		m, err := r.ReadAt(got, off)
		want := data[off:min(int(off)+n, len(data))]
		if m != len(want) || !bytes.Equal(got[:m], want) {
			t.Fatalf("ReadAt(%d, %d): %d bytes, want %d", n, off, m, len(want))
		}
		if (m < n) != (err == io.EOF) || m == n && err != nil {
			t.Fatalf("ReadAt(%d, %d): %d bytes, err %v", n, off, m, err)
		}
	}
}
