package main

import (
	"math/bits"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
)

// memFloor measures a reference cost of memory at a filter's size: the time
// per independent random 8-byte load from an array of that many bytes, with
// the index computed by a xorshift generator and nothing else in the loop.
// It is not a lower bound for a lookup: code that prefetches can keep more
// misses in flight than these demand loads. It returns the median over
// reps, in ns per load.
func memFloor(bytes uint64, loads, reps int) float64 {
	w := make([]uint64, max(bytes/8, 1))
	for i := range w {
		w[i] = uint64(i) // fault every page in before timing
	}
	n := uint64(len(w))
	var vals []float64
	for r := 0; r < reps; r++ {
		x := uint64(0x9e3779b97f4a7c15) + uint64(r)
		var acc uint64
		t := time.Now()
		for i := 0; i < loads; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			j, _ := bits.Mul64(x, n)
			acc += w[j]
		}
		vals = append(vals, nsPer(time.Since(t), uint64(loads)))
		floorSink += acc
	}
	return median(vals)
}

var floorSink uint64

// filterBytes is the size of a bloomkit classic filter for n keys at rate p.
func filterBytes(n uint64, p float64) uint64 { return (bloom.OptimalM(n, p) + 63) / 64 * 8 }
