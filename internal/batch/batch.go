// Package batch holds what the filters' batch methods share: the key hash
// every layout uses (XXH3-128), the CPU's prefetch instruction, and Each, a
// batch loop that hashes keys a batch at a time and overlaps each batch's
// memory accesses with the hashing of the next, so that a lookup of many
// keys pays for its cache misses in parallel instead of one after another.
//
// The cuckoo filter's TestMany uses Each. The bloom layouts do not: their
// batch methods are per-key pipelines written out in package bloom
// (bloom/pipeline.go), which hash key i while probing key i − ahead, so that
// hashing and probing overlap too; at 100 million keys that measured 20–40 %
// faster than Each, and passing the per-key steps through function values
// or a generic interface instead of writing the loop out cost 5–15 % again
// (bench/SPEED.md).
package batch

import (
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Key is what a filter takes as a key: bytes or a string, never copied.
type Key interface{ []byte | string }

// Sum returns the two 64-bit halves of key's XXH3-128 with seed. Seed 0
// uses XXH3's unseeded function, which is the same hash (seed 0 is its
// default secret) and noticeably faster.
func Sum[K Key](key K, seed uint64) (lo, hi uint64) {
	// A []byte starts with the same pointer and length as a string: hash
	// either as a string, without a copy.
	s := *(*string)(unsafe.Pointer(&key))
	var h xxh3.Uint128
	if seed == 0 {
		h = xxh3.HashString128(s)
	} else {
		h = xxh3.HashString128Seed(s, seed)
	}
	return h.Lo, h.Hi
}

// Size is how many keys are hashed between two calls of the callbacks of
// Each: enough cache misses in flight to keep the memory system busy, few
// enough that a batch's prefetched lines are still in the cache when it is
// probed.
const Size = 64

// Each hashes keys with seed, Size at a time, and calls prefetch and then
// probe with the hashes ({lo, hi}) of each batch, in order. It is software
// pipelined: a batch is probed only after the next one was hashed, so the
// cache misses that prefetch starts overlap that hashing. prefetch should
// only start loads (Prefetch); probe does the work and must not keep h.
func Each[K Key](keys []K, seed uint64, prefetch, probe func(h [][2]uint64)) {
	var bufs [2][Size][2]uint64
	var prev [][2]uint64
	for i := 0; len(keys) > 0; i ^= 1 {
		n := min(len(keys), Size)
		h := bufs[i][:n]
		for j, key := range keys[:n] {
			h[j][0], h[j][1] = Sum(key, seed)
		}
		prefetch(h)
		if prev != nil {
			probe(prev)
		}
		prev, keys = h, keys[n:]
	}
	if prev != nil {
		probe(prev)
	}
}
