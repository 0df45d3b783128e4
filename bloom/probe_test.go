package bloom

import (
	"math/rand/v2"
	"testing"
)

// TestBlockedTestInMatchesLoop checks the written-out probe of the blocked
// layout (testInUnrolled, straight-line code for k <= 16, and test's loop, on a
// filter of one block) against the plain loop
// over the salts that defines the format, for every k, on blocks from empty
// to full, so that a wrong salt index or a missing case shows.
func TestBlockedTestInMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	reference := func(blk *[8]uint64, lo uint64, k uint32) bool {
		for _, s := range blockSalts[:k] {
			p := (lo * s) >> 55
			if blk[p>>6]&(1<<(p&63)) == 0 {
				return false
			}
		}
		return true
	}
	for k := uint32(1); k <= MaxK; k++ {
		f := &Blocked{params: Params{K: k}, words: make([]uint64, 8), blocks: 1}
		blk := (*[8]uint64)(f.words)
		var present, absent int
		for i := 0; i < 20_000; i++ {
			clear(blk[:])
			lo := rng.Uint64()
			switch i % 4 {
			case 0: // exactly the key's own bits: present
				for _, s := range blockSalts[:k] {
					p := (lo * s) >> 55
					blk[p>>6] |= 1 << (p & 63)
				}
			case 1: // the key's bits but one: absent
				for _, s := range blockSalts[:k] {
					p := (lo * s) >> 55
					blk[p>>6] |= 1 << (p & 63)
				}
				p := (lo * blockSalts[rng.IntN(int(k))]) >> 55
				blk[p>>6] &^= 1 << (p & 63)
			default: // random density
				for w := range blk {
					blk[w] = rng.Uint64() | rng.Uint64() | rng.Uint64()
				}
			}
			want := reference(blk, lo, k)
			if got, got2 := f.testInUnrolled(blk, lo), f.test(lo, rng.Uint64()); got != want || got2 != want {
				t.Fatalf("k=%d lo=%#x block %x: testInUnrolled = %v, test = %v, the format's loop says %v", k, lo, blk, got, got2, want)
			}
			if want {
				present++
			} else {
				absent++
			}
		}
		if present == 0 || absent == 0 {
			t.Fatalf("k=%d: %d present, %d absent: the test did not cover both answers", k, present, absent)
		}
	}
}
