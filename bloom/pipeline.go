package bloom

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/bloomkit/bloomkit/internal/batch"
	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// The batch functions (AddMany and TestMany, for both key types) of both
// layouts are software pipelines, one key at a time: key i is hashed and
// the cache lines it will probe are prefetched, then key i − ahead, whose
// lines were prefetched ahead keys earlier and have arrived meanwhile, is
// probed. Each key's memory latency is thus hidden behind the hashing of
// the keys after it, and the hashing of one key and the probing of another
// are independent instructions the CPU runs side by side.
//
// What a key needs from its hash until it is probed (its block, or its k
// bit positions) waits in a ring on the stack. Measured at 100 million keys
// (bench/SPEED.md), this loop beats internal/batch.Each — hash a batch of
// 64 keys, prefetch it, probe it after the next batch was hashed, the shape
// used before — by 20–40 %: there, hashing and probing never overlap.
//
// The loop is written out per layout, not shared through function values
// or a generic interface: calling through either costs a call per key that
// the compiler does not inline, measured at 5–15 % here.

const (
	// blockedAhead is how many keys the blocked layout hashes ahead of the
	// one it probes: one cache line each, and 16, 32 or 64 lines in flight
	// measured alike; 8 was slower.
	blockedAhead = 32
	blockedRing  = 64 // a power of two > blockedAhead
	// filterAhead is the same for the classic layout, k lines a key: 16
	// keys ahead measured faster than 8, 24 or 32.
	filterAhead = 16
	filterRing  = 32
	// filterRingK is the largest k whose positions the ring keeps; for a
	// larger k it keeps the hash and recomputes them.
	filterRingK = 16
)

// A batchLayout is a layout with batch methods.
type batchLayout interface {
	*Filter | *Blocked | *SplitBlock
}

// addMany and testMany are the batch methods of every layout.
func addMany[K batch.Key, L batchLayout](f L, keys []K) {
	switch f := any(f).(type) {
	case *Filter:
		if f.params.K == 0 && len(keys) > 0 {
			panicZero("Filter")
		}
		filterMany(f, keys, nil)
	case *Blocked:
		if f.blocks == 0 && len(keys) > 0 {
			panicZero("Blocked")
		}
		blockedMany(f, keys, nil)
	case *SplitBlock:
		if f.blocks == 0 && len(keys) > 0 {
			panicZero("SplitBlock")
		}
		splitBlockMany(f, keys, nil)
	}
}

// testMany appends to dst whether each key tests present.
func testMany[K batch.Key, L batchLayout](f L, keys []K, dst []bool) []bool {
	n := len(dst)
	dst = slices.Grow(dst, len(keys))[:n+len(keys)]
	switch f := any(f).(type) {
	case *Filter:
		if f.params.K == 0 {
			clear(dst[n:]) // the zero Filter holds nothing
			break
		}
		filterMany(f, keys, dst[n:])
	case *Blocked:
		if f.blocks == 0 {
			clear(dst[n:])
			break
		}
		blockedMany(f, keys, dst[n:])
	case *SplitBlock:
		if f.blocks == 0 {
			clear(dst[n:])
			break
		}
		splitBlockMany(f, keys, dst[n:])
	}
	return dst
}

// keyString returns key's bytes as a string, without a copy (a []byte
// starts with the same pointer and length as a string). Written out here
// rather than calling the generic batch.Sum, which the compiler does not
// inline into these generic loops.
func keyString[K batch.Key](key *K) string { return *(*string)(unsafe.Pointer(key)) }

// blockedEntry is what a key in the ring needs for its probe.
type blockedEntry struct {
	blk *[8]uint64
	lo  uint64
}

// blockedMany adds the keys (out == nil) or stores in out[i] whether key i
// tests present (len(out) == len(keys)).
func blockedMany[K batch.Key](f *Blocked, keys []K, out []bool) {
	if out != nil {
		blockedTestMany(f, keys, out)
		return
	}
	var ring [blockedRing]blockedEntry
	// h64: hash id HashXXH3x64, the 64-bit hash as both halves. The
	// hashes are called here, not through a helper the compiler does not
	// inline into this generic loop.
	seed, h64 := f.params.Seed, f.params.Hash == HashXXH3x64
	for i := range keys {
		var lo, hi uint64
		if key := keyString(&keys[i]); h64 {
			if seed == 0 {
				lo = xxh3.HashString(key)
			} else {
				lo = xxh3.HashStringSeed(key, seed)
			}
			hi = lo
		} else {
			var h xxh3.Uint128
			if seed == 0 {
				h = xxh3.HashString128(key)
			} else {
				h = xxh3.HashString128Seed(key, seed)
			}
			lo, hi = h.Lo, h.Hi
		}
		blk := f.block(hi)
		batch.Prefetch(&blk[0])
		ring[i%blockedRing] = blockedEntry{blk, lo}
		if j := i - blockedAhead; j >= 0 {
			e := &ring[j%blockedRing]
			f.addIn(e.blk, e.lo)
		}
	}
	for j := max(len(keys)-blockedAhead, 0); j < len(keys); j++ {
		e := &ring[j%blockedRing]
		f.addIn(e.blk, e.lo)
	}
}

// blockedTestMany is blockedMany's test loop, on its own so that it has
// one thing to do: every call in the loop (the hash, the prefetch) makes
// the compiler save and reload what lives in registers, and each branch
// and reload is an instruction between this key's load and the next key's
// (bench/SPEED.md counts them with cachegrind).
func blockedTestMany[K batch.Key](f *Blocked, keys []K, out []bool) {
	var ring [blockedRing]blockedEntry
	seed, h64 := f.params.Seed, f.params.Hash == HashXXH3x64
	out = out[:len(keys)]
	// Unsigned ring indices: i%blockedRing is then one AND, and j needs
	// no sign test.
	for i := uint(0); i < uint(len(keys)); i++ {
		var lo, hi uint64
		if key := keyString(&keys[i]); h64 {
			if seed == 0 {
				lo = xxh3.HashString(key)
			} else {
				lo = xxh3.HashStringSeed(key, seed)
			}
			hi = lo
		} else {
			var h xxh3.Uint128
			if seed == 0 {
				h = xxh3.HashString128(key)
			} else {
				h = xxh3.HashString128Seed(key, seed)
			}
			lo, hi = h.Lo, h.Hi
		}
		blk := f.block(hi)
		batch.Prefetch(&blk[0])
		ring[i%blockedRing] = blockedEntry{blk, lo}
		if i >= blockedAhead {
			j := i - blockedAhead
			e := &ring[j%blockedRing]
			out[j] = f.testInUnrolled(e.blk, e.lo)
		}
	}
	for j := uint(max(len(keys)-blockedAhead, 0)); j < uint(len(keys)); j++ {
		e := &ring[j%blockedRing]
		out[j] = f.testInUnrolled(e.blk, e.lo)
	}
}

// filterMany is blockedMany for the classic layout. For k up to filterRingK
// the ring keeps each key's bit positions, computed once when they are
// prefetched; beyond it, the hash.
func filterMany[K batch.Key](f *Filter, keys []K, out []bool) {
	if f.params.K > filterRingK {
		filterManyLargeK(f, keys, out)
		return
	}
	var ring [filterRing][filterRingK]uint64
	seed, m, k, w, c := f.params.Seed, f.params.M, f.params.K, f.words, probeMulVar
	v1 := f.params.Hash == HashXXH3
	for i := range keys {
		var h xxh3.Uint128
		if seed == 0 {
			h = xxh3.HashString128(keyString(&keys[i]))
		} else {
			h = xxh3.HashString128Seed(keyString(&keys[i]), seed)
		}
		x, y := h.Lo, h.Hi
		e := &ring[i%filterRing]
		if v1 {
			positionsV1(x, y, m, e[:k])
		} else {
			for t := range e[:k] {
				e[t], _ = bits.Mul64(x, m)
				x = x*c + y
			}
		}
		batch.PrefetchBits(w, e[:k])
		if j := i - filterAhead; j >= 0 {
			e := &ring[j%filterRing]
			if out == nil {
				for _, pos := range e[:k] {
					w[pos>>6] |= 1 << (pos & 63)
				}
			} else {
				acc := uint64(1)
				for _, pos := range e[:k] {
					acc &= w[pos>>6] >> (pos & 63)
				}
				out[j] = acc != 0
			}
		}
	}
	for j := max(len(keys)-filterAhead, 0); j < len(keys); j++ {
		e := &ring[j%filterRing]
		if out == nil {
			for _, pos := range e[:k] {
				w[pos>>6] |= 1 << (pos & 63)
			}
		} else {
			acc := uint64(1)
			for _, pos := range e[:k] {
				acc &= w[pos>>6] >> (pos & 63)
			}
			out[j] = acc != 0
		}
	}
}

// filterManyLargeK is filterMany for k > filterRingK (rates below about
// 1e-5), keeping hashes in the ring and computing the positions twice.
func filterManyLargeK[K batch.Key](f *Filter, keys []K, out []bool) {
	var ring [filterRing][2]uint64
	seed, m, k, w, c := f.params.Seed, f.params.M, f.params.K, f.words, probeMulVar
	v1 := f.params.Hash == HashXXH3
	for i := range keys {
		x, y := hashString(keyString(&keys[i]), seed)
		ring[i%filterRing] = [2]uint64{x, y}
		if v1 {
			prefetchV1(w, x, y, m, k)
		} else {
			for range k {
				pos, _ := bits.Mul64(x, m)
				batch.Prefetch(&w[pos>>6])
				x = x*c + y
			}
		}
		if j := i - filterAhead; j >= 0 {
			f.finish(ring[j%filterRing], out, j)
		}
	}
	for j := max(len(keys)-filterAhead, 0); j < len(keys); j++ {
		f.finish(ring[j%filterRing], out, j)
	}
}

func (f *Filter) finish(h [2]uint64, out []bool, j int) {
	if out == nil {
		f.add(h[0], h[1])
	} else {
		out[j] = f.testAll(h[0], h[1])
	}
}

// splitBlockEntry is what a key in the ring needs for its probe.
type splitBlockEntry struct {
	blk *[4]uint64
	x   uint32
}

// splitBlockMany is blockedMany for the split-block layout, whose hash is
// XXH64.
func splitBlockMany[K batch.Key](f *SplitBlock, keys []K, out []bool) {
	var ring [blockedRing]splitBlockEntry
	out = out[:min(len(out), len(keys))]
	for i := uint(0); i < uint(len(keys)); i++ {
		h := xxhash.Sum64String(keyString(&keys[i]))
		blk := f.block(h)
		batch.Prefetch(&blk[0])
		ring[i%blockedRing] = splitBlockEntry{blk, uint32(h)}
		if i >= blockedAhead {
			j := i - blockedAhead
			e := &ring[j%blockedRing]
			if out == nil {
				addIn(e.blk, e.x)
			} else {
				out[j] = testIn(e.blk, e.x)
			}
		}
	}
	for j := uint(max(len(keys)-blockedAhead, 0)); j < uint(len(keys)); j++ {
		e := &ring[j%blockedRing]
		if out == nil {
			addIn(e.blk, e.x)
		} else {
			out[j] = testIn(e.blk, e.x)
		}
	}
}
