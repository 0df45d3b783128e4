package bloom

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkClassicLookup measures one Test of the classic layout at p = 1%
// (k = 7) for filters in L1/L2 (10k items), in the last-level cache (1M)
// and in memory (10M), hits and misses, with the bench's 63-byte keys. It
// is the benchmark behind the per-lookup cost of the probe derivation in
// bench/SPEED.md: build it at two commits and compare the binaries with
// benchstat (interleaved runs) and cachegrind.
func BenchmarkClassicLookup(b *testing.B) {
	for _, n := range []uint64{10_000, 1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchClassicLookup(b, n) })
	}
}

func benchClassicLookup(b *testing.B, n uint64) {
	f, err := New(n, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	// Fill to capacity: half of the bench keys (the hits) and random
	// hashes for the rest, so the miss path sees a normally full filter.
	half := min(uint64(benchN/2), n)
	for _, k := range benchKeys[:half] {
		f.AddString(k)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := half; i < n; i++ {
		f.AddHash(KeyHash{Lo: rng.Uint64(), Hi: rng.Uint64()})
	}
	// The small filter is looked up with 4096 keys of each kind, which
	// stay in cache with it; the others with half a million, whose bits
	// (and keys) do not.
	l := 4096
	if n > 10_000 {
		l = benchN / 2
	}
	hits, misses := benchKeys[:l], benchKeys[benchN/2:benchN/2+l]
	b.Run("hit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if !f.TestString(hits[i%l]) {
				b.Fatal("false negative")
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			f.TestString(misses[i%l])
		}
	})
}
