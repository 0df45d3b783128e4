package bloom

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/bloomkit/bloomkit/internal/mem"
)

// TestLargeFiltersOnRecycledMemory builds filters above mem.HugePageMin from
// memory the runtime recycles (a large slice of non-zero words is freed
// first), where internal/mem hands the runtime's zeroed pages back to the
// kernel: the new filters must be empty, keep what is added, and read back
// from their file bit for bit.
func TestLargeFiltersOnRecycledMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocates about 200 MiB; runs in make test's pass without -race")
	}
	for round := 0; round < 2; round++ {
		junk := make([]uint64, 96<<20/8)
		for i := range junk {
			junk[i] = ^uint64(i)
		}
		junk = nil
		runtime.GC()

		const m = 4 * mem.HugePageMin * 8 // bits: 32 MiB of words
		f, err := NewFromParams(Params{M: m, K: 7})
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBlockedFromParams(Params{M: m, K: 6})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range [][]uint64{f.words, b.words} {
			for i, x := range w {
				if x != 0 {
					t.Fatalf("round %d: a new filter's word %d is %#x", round, i, x)
				}
			}
		}
		ks := keys("recycled", 0, 50_000)
		AddMany(f, ks)
		AddMany(b, ks)
		for i, ok := range TestMany(f, ks, nil) {
			if !ok || !TestMany(b, ks[i:i+1], nil)[0] {
				t.Fatalf("round %d: key %q lost", round, ks[i])
			}
		}
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		g := new(Filter)
		if _, err := g.ReadFrom(&buf); err != nil {
			t.Fatal(err)
		}
		buf.Reset()
		if _, err := b.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		h := new(Blocked)
		if _, err := h.ReadFrom(&buf); err != nil {
			t.Fatal(err)
		}
		if !g.Equal(f) || !h.Equal(b) {
			t.Fatalf("round %d: a large filter read back differs", round)
		}
	}
}
