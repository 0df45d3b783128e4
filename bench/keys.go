package main

import (
	"math/rand/v2"
	"strconv"
	"time"
	"unsafe"
)

// Keys are URL-like strings, unique per index i:
//
//	https://www.site<i mod 99991>.example.com/path/to/article-<i>.html
//
// 55 to 64 bytes for the indices used here. Added keys have indices [0, n);
// absent keys have indices [n, n+absent), so they are certainly never added.
const (
	keyPrefix = "https://www.site"
	keyMiddle = ".example.com/path/to/article-"
	keySuffix = ".html"
	siteMod   = 99991
)

func digits(x uint64) int {
	d := 1
	for x >= 10 {
		x /= 10
		d++
	}
	return d
}

func keyLen(i uint64) int {
	return len(keyPrefix) + len(keyMiddle) + len(keySuffix) + digits(i%siteMod) + digits(i)
}

// appendKey appends the key of index i to dst.
func appendKey(dst []byte, i uint64) []byte {
	dst = append(dst, keyPrefix...)
	dst = strconv.AppendUint(dst, i%siteMod, 10)
	dst = append(dst, keyMiddle...)
	dst = strconv.AppendUint(dst, i, 10)
	return append(dst, keySuffix...)
}

// keyString returns the key of index i as a new string (for tests).
func keyString(i uint64) string { return string(appendKey(nil, i)) }

// A keySet holds keys as strings that point into one pointer-free byte
// arena, so that millions of keys cost the garbage collector one object
// (plus the string headers) and can be regenerated in place.
type keySet struct {
	arena []byte
	keys  []string
	bytes int // total key bytes
}

// fill makes ks hold count keys, key j having index index(j), reusing ks's
// memory when it is large enough. Strings from an earlier fill of the same
// keySet are overwritten. It returns how long the generation took.
func (ks *keySet) fill(count int, index func(j int) uint64) time.Duration {
	start := time.Now()
	total := 0
	for j := 0; j < count; j++ {
		total += keyLen(index(j))
	}
	if cap(ks.arena) < total {
		ks.arena = make([]byte, 0, total+total/16)
	}
	if cap(ks.keys) < count {
		ks.keys = make([]string, 0, count)
	}
	arena, keys := ks.arena[:0], ks.keys[:0]
	for j := 0; j < count; j++ {
		off := len(arena)
		arena = appendKey(arena, index(j)) // never reallocates: cap >= total
		keys = append(keys, unsafe.String(&arena[off], len(arena)-off))
	}
	ks.arena, ks.keys, ks.bytes = arena, keys, total
	return time.Since(start)
}

// sample returns h distinct indices drawn uniformly from [0, n), in random
// order (a partial Fisher-Yates shuffle). h is capped at n.
func sample(rng *rand.Rand, n uint64, h int) []uint32 {
	if uint64(h) > n {
		h = int(n)
	}
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i)
	}
	for i := 0; i < h; i++ {
		j := i + rng.IntN(len(perm)-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	if uint64(h) == n {
		return perm
	}
	return append([]uint32(nil), perm[:h]...)
}

// insertSource yields the n keys to add, indices 0..n-1 in order, in chunks.
// Small sets are generated once and kept; large ones (streamed) are
// regenerated chunk by chunk into one reused buffer on every pass, so that
// no more than a chunk of keys is in memory at once.
type insertSource struct {
	n        uint64
	chunk    int
	cached   []*keySet
	buf      *keySet
	genTime  time.Duration // total generation time, all passes
	genKeys  uint64        // keys generated, all passes
	keyBytes uint64        // bytes of one pass
}

func newInsertSource(n uint64, chunk int, stream bool) *insertSource {
	s := &insertSource{n: n, chunk: chunk}
	if stream {
		// Allocate the reused buffer for the longest possible chunk now, so
		// that it exists before any filter's memory is measured.
		maxLen := len(keyPrefix) + len(keyMiddle) + len(keySuffix) + digits(siteMod-1) + digits(n-1)
		s.buf = &keySet{arena: make([]byte, 0, chunk*maxLen), keys: make([]string, 0, chunk)}
		return s
	}
	for lo := uint64(0); lo < n; lo += uint64(chunk) {
		ks := &keySet{}
		s.gen(ks, lo, int(min(uint64(chunk), n-lo)))
		s.cached = append(s.cached, ks)
		s.keyBytes += uint64(ks.bytes)
	}
	return s
}

func (s *insertSource) gen(ks *keySet, lo uint64, cnt int) {
	s.genTime += ks.fill(cnt, func(j int) uint64 { return lo + uint64(j) })
	s.genKeys += uint64(cnt)
}

func (s *insertSource) streamed() bool { return s.buf != nil }

// each calls fn with every chunk of keys in order.
func (s *insertSource) each(fn func(keys []string)) {
	if !s.streamed() {
		for _, ks := range s.cached {
			fn(ks.keys)
		}
		return
	}
	var bytes uint64
	for lo := uint64(0); lo < s.n; lo += uint64(s.chunk) {
		s.gen(s.buf, lo, int(min(uint64(s.chunk), s.n-lo)))
		bytes += uint64(s.buf.bytes)
		fn(s.buf.keys)
	}
	s.keyBytes = bytes
}

// genNsPerKey is the measured cost of generating one key.
func (s *insertSource) genNsPerKey() float64 {
	if s.genKeys == 0 {
		return 0
	}
	return float64(s.genTime.Nanoseconds()) / float64(s.genKeys)
}
