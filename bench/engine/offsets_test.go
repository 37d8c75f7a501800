package engine

import "testing"

// TestPermIsBijection: every n, including non-powers of two, gives each
// block exactly once per pass, and passes differ in order.
func TestPermIsBijection(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 5, 64, 1000, 1023, 1024, 1025, 65537} {
		g := newOffsetGen(4096, 512, n, true, 42)
		first := make([]int64, 0, n)
		seen := make(map[int64]bool, n)
		for {
			off, ok := g.next()
			if !ok {
				break
			}
			if off < 4096 || off >= 4096+int64(n)*512 || (off-4096)%512 != 0 {
				t.Fatalf("n=%d: offset %d outside the region or unaligned", n, off)
			}
			if seen[off] {
				t.Fatalf("n=%d: offset %d twice in one pass", n, off)
			}
			seen[off] = true
			first = append(first, off)
		}
		if uint64(len(seen)) != n {
			t.Fatalf("n=%d: pass visited %d blocks", n, len(seen))
		}
		if n < 64 {
			continue
		}
		inOrder := 0
		for i := range first {
			if first[i] == 4096+int64(i)*512 {
				inOrder++
			}
		}
		if inOrder > int(n/8) {
			t.Fatalf("n=%d: %d blocks at their sequential position: not shuffled", n, inOrder)
		}
		g.newPass()
		same := 0
		for i := range first {
			off, ok := g.next()
			if !ok {
				t.Fatalf("n=%d: second pass ended early", n)
			}
			if off == first[i] {
				same++
			}
		}
		if same > int(n/8) {
			t.Fatalf("n=%d: second pass repeats the first's order (%d same)", n, same)
		}
	}
}

// TestPermUniformFirstHalf: the first half of a pass is spread over the
// whole region, not clustered (each quarter gets a fair share).
func TestPermUniformFirstHalf(t *testing.T) {
	const n = 1 << 16
	g := newOffsetGen(0, 1, n, true, 7)
	var quarter [4]int
	for i := 0; i < n/2; i++ {
		off, _ := g.next()
		quarter[off*4/n]++
	}
	for q, c := range quarter {
		if c < n/8*9/10 || c > n/8*11/10 {
			t.Fatalf("quarter %d got %d of %d offsets in the first half pass", q, c, n/2)
		}
	}
}

func TestSeedRepeats(t *testing.T) {
	a, b := newOffsetGen(0, 1, 1000, true, 9), newOffsetGen(0, 1, 1000, true, 9)
	c := newOffsetGen(0, 1, 1000, true, 10)
	diff := 0
	for i := 0; i < 1000; i++ {
		x, _ := a.next()
		y, _ := b.next()
		z, _ := c.next()
		if x != y {
			t.Fatal("same seed, different order")
		}
		if x != z {
			diff++
		}
	}
	if diff < 900 {
		t.Fatalf("different seeds share %d positions", 1000-diff)
	}
}
