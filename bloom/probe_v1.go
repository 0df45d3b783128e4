package bloom

import (
	"math/bits"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/internal/batch"
)

// The classic layout's probes for hash id HashXXH3, kept so that files
// written by earlier versions answer exactly as they did. They come from
// enhanced double hashing (Dillinger and Manolios): x_0 = lo, y_0 = hi,
// x_{i+1} = x_i + y_i, y_{i+1} = y_i + i in 64-bit arithmetic, each x_i
// mapped to [0, m) as (x_i * m) >> 64. With that mapping the + i never
// reaches the high bits, so the positions fall close to an arithmetic
// progression, and at small m two keys often share most of them: the rate
// is far above FalsePositiveRate there. New filters use HashXXH3Remix.

func (f *Filter) addV1(x, y uint64) {
	m, k, w := f.params.M, f.params.K, f.words
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		w[pos>>6] |= 1 << (pos & 63)
		x += y
		y += uint64(i)
	}
}

// test stops at the first probe that finds a 0 bit: the k probes are k
// cache misses in a large filter, and most absent keys are told apart by
// the first one or two.
func (f *Filter) testV1(x, y uint64) bool {
	m, k, w := f.params.M, f.params.K, f.words
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		if w[pos>>6]&(1<<(pos&63)) == 0 {
			return false
		}
		x += y
		y += uint64(i)
	}
	return true
}

// testAll is test without early exit, so that the loads of many keys can be
// in flight at once.
func (f *Filter) testAllV1(x, y uint64) bool {
	m, k, w := f.params.M, f.params.K, f.words
	acc := uint64(1)
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		acc &= w[pos>>6] >> (pos & 63)
		x += y
		y += uint64(i)
	}
	return acc != 0
}

func (f *Filter) testAndAddV1(x, y uint64) bool {
	m, k, w := f.params.M, f.params.K, f.words
	var miss uint64
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		mask := uint64(1) << (pos & 63)
		miss |= mask &^ w[pos>>6]
		w[pos>>6] |= mask
		x += y
		y += uint64(i)
	}
	return miss == 0
}

// The Sync view's operations: atomic loads, and atomic ORs of the bits
// not already set (most of them, once a filter fills up).

func (f *Filter) testSyncV1(x, y uint64) bool {
	m, k, w := f.params.M, f.params.K, f.words
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		if atomic.LoadUint64(&w[pos>>6])&(1<<(pos&63)) == 0 {
			return false
		}
		x += y
		y += uint64(i)
	}
	return true
}

func (f *Filter) testAndAddSyncV1(x, y uint64) bool {
	m, k, w := f.params.M, f.params.K, f.words
	present := true
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		p, mask := &w[pos>>6], uint64(1)<<(pos&63)
		if atomic.LoadUint64(p)&mask == 0 && atomic.OrUint64(p, mask)&mask == 0 {
			present = false
		}
		x += y
		y += uint64(i)
	}
	return present
}

// The counting filter's probes for hash id HashXXH3.

func (c *Counting) addV1(x, y uint64) {
	m, k, w := c.params.M, c.params.K, c.words
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		shift := (pos & 15) * 4
		if (w[pos>>4]>>shift)&SaturatedCount != SaturatedCount {
			w[pos>>4] += 1 << shift
		}
		x += y
		y += uint64(i)
	}
	c.items++
}

func (c *Counting) testV1(x, y uint64) bool {
	m, k, w := c.params.M, c.params.K, c.words
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		if (w[pos>>4]>>((pos&15)*4))&SaturatedCount == 0 {
			return false
		}
		x += y
		y += uint64(i)
	}
	return true
}

func (c *Counting) countV1(x, y uint64) int {
	m, k, w := c.params.M, c.params.K, c.words
	least := uint64(SaturatedCount)
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		least = min(least, (w[pos>>4]>>((pos&15)*4))&SaturatedCount)
		x += y
		y += uint64(i)
	}
	return int(least)
}

func (c *Counting) removeV1(x, y uint64) bool {
	if !c.testV1(x, y) {
		return false
	}
	m, k, w := c.params.M, c.params.K, c.words
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		shift := (pos & 15) * 4
		// A key whose probes repeat a counter decrements it as often as it
		// incremented it; the test for zero only matters for keys that were
		// never added.
		if v := (w[pos>>4] >> shift) & SaturatedCount; v != SaturatedCount && v != 0 {
			w[pos>>4] -= 1 << shift
		}
		x += y
		y += uint64(i)
	}
	if c.items > 0 {
		c.items--
	}
	return true
}

// locateV1 is Locate for hash id HashXXH3.
func locateV1(p Params, h KeyHash, dst []uint64) []uint64 {
	x, y := h.Lo, h.Hi
	for i := uint32(0); i < min(p.K, MaxK); i++ {
		pos, _ := bits.Mul64(x, p.M)
		dst = append(dst, pos)
		x += y
		y += uint64(i)
	}
	return dst
}

// positionsV1 stores the first len(dst) positions for the batch functions.
func positionsV1(x, y, m uint64, dst []uint64) {
	for t := range dst {
		dst[t], _ = bits.Mul64(x, m)
		x += y
		y += uint64(t)
	}
}

// prefetchV1 prefetches the words of the k positions for the batch
// functions.
func prefetchV1(w []uint64, x, y, m uint64, k uint32) {
	for t := uint32(0); t < k; t++ {
		pos, _ := bits.Mul64(x, m)
		batch.Prefetch(&w[pos>>6])
		x += y
		y += uint64(t)
	}
}
