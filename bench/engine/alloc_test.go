package engine

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
)

// TestNoAllocationPerIO: a run of 16x the I/Os allocates no more than a
// handful of objects more than a short one, for both engines (the hot
// loops must not allocate per I/O).
func TestNoAllocationPerIO(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := Layout(context.Background(), file, 16<<20, DataPattern{}); err != nil {
		t.Fatal(err)
	}
	mallocs := func(p Params) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		if _, err := Run(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.Mallocs - a.Mallocs
	}
	for _, eng := range []string{EngineSync, EngineIOUring} {
		t.Run(eng, func(t *testing.T) {
			if eng == EngineIOUring {
				requireURing(t)
			}
			for _, rw := range []RW{RandRead, RandRW} {
				p := Params{Path: file, RW: rw, BlockSize: 4096, Size: 1 << 20, Jobs: 2, IODepth: 8, Direct: true, Engine: eng}
				mallocs(p) // warm up one-time runtime allocations
				small := mallocs(p)
				p.Size = 16 << 20
				large := mallocs(p)
				ios := uint64(2 * p.Size / p.BlockSize)
				if large > small+64 {
					t.Errorf("%s %s: %d allocations for %d I/Os, %d for 1/16 of them", eng, rw, large, ios, small)
				}
			}
		})
	}
}
