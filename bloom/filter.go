package bloom

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Filter is a classic Bloom filter: an array of m bits, of which each key
// sets k, derived from the key's 128-bit XXH3 hash by re-mixing it for each
// probe (see HashXXH3Remix).
//
// # Concurrency
//
// The Test methods only read and may run in any number of goroutines at
// once. Every other method must run alone: Add and the methods that change
// or read the filter as a whole (Union, Reset, ReadFrom, WriteTo, the
// statistics, ...) use plain loads and stores, the fastest there are. To
// add from many goroutines while others test, use the view f.Sync(): its
// methods set bits with atomic ORs and test with atomic loads, take no
// mutex, and may all run at once — as long as every goroutine that touches
// the filter meanwhile goes through it.
type Filter struct {
	words  []uint64
	params Params
}

// New returns an empty classic filter sized for n items at false-positive
// rate p (see Estimate). It fails when p is not in [MinRate, 1) or the
// filter would exceed MaxBits.
func New(n uint64, p float64) (*Filter, error) {
	if err := checkRate(p); err != nil {
		return nil, err
	}
	return NewFromParams(Estimate(n, p))
}

// NewFromParams returns an empty classic filter with the size, probe count
// and seed of p: Params from Estimate (with a Seed of your choice), from
// another filter's Params, or by hand, Params{M: m, K: k}. N and P are kept
// as the filter's plan and only reported.
func NewFromParams(p Params) (*Filter, error) {
	p, err := p.validate(false)
	if err != nil {
		return nil, err
	}
	return &Filter{words: plainAlloc((p.M + 63) / 64), params: p}, nil
}

// Params returns the filter's size, probe count, seed and plan.
func (f *Filter) Params() Params { return f.params }

// The k bit positions of a key come from its hash as probePos and nextProbe
// say (hash id HashXXH3Remix); a filter read from a file with hash id
// HashXXH3 uses the derivation of earlier versions (probe_v1.go). This
// derivation is part of the file format.

// Add inserts key.
func (f *Filter) Add(key []byte) {
	x, y := hashBytes(key, f.params.Seed)
	if f.params.Hash == HashXXH3 {
		f.addV1(x, y)
		return
	}
	f.addRemix(x, y)
}

// AddString inserts key without copying it.
func (f *Filter) AddString(key string) {
	x, y := hashString(key, f.params.Seed)
	if f.params.Hash == HashXXH3 {
		f.addV1(x, y)
		return
	}
	f.addRemix(x, y)
}

// AddHash inserts the key whose hash is h (see Params.HashKey). It panics
// with a value wrapping ErrHashMismatch if h was made with another hash
// function or seed (see KeyHash).
func (f *Filter) AddHash(h KeyHash) {
	if h.kind != hashKindNone {
		mustMatch(f.params, h)
	}
	f.add(h.Lo, h.Hi)
}

// Test reports whether key may have been added. False means it certainly
// was not; true means it probably was.
//
// Test and TestString call xxh3 themselves rather than through a helper
// the compiler does not inline, which cost 16 instructions a lookup.
func (f *Filter) Test(key []byte) bool {
	var h xxh3.Uint128
	if f.params.Seed == 0 {
		h = xxh3.Hash128(key)
	} else {
		h = xxh3.Hash128Seed(key, f.params.Seed)
	}
	x, y := h.Lo, h.Hi
	if f.params.Hash == HashXXH3 {
		return f.testV1(x, y)
	}
	return f.testRemix(x, y)
}

// TestString is Test for a string key, without copying it.
func (f *Filter) TestString(key string) bool {
	var h xxh3.Uint128
	if f.params.Seed == 0 {
		h = xxh3.HashString128(key)
	} else {
		h = xxh3.HashString128Seed(key, f.params.Seed)
	}
	x, y := h.Lo, h.Hi
	if f.params.Hash == HashXXH3 {
		return f.testV1(x, y)
	}
	return f.testRemix(x, y)
}

// TestHash is Test for the key whose hash is h (see Params.HashKey). It
// panics with a value wrapping ErrHashMismatch if h was made with another
// hash function or seed (see KeyHash).
func (f *Filter) TestHash(h KeyHash) bool {
	if h.kind != hashKindNone {
		mustMatch(f.params, h)
	}
	return f.test(h.Lo, h.Hi)
}

// TestAndAdd inserts key and reports whether it tested present before.
func (f *Filter) TestAndAdd(key []byte) bool { return f.testAndAdd(hashBytes(key, f.params.Seed)) }

// TestAndAddString is TestAndAdd for a string key.
func (f *Filter) TestAndAddString(key string) bool {
	return f.testAndAdd(hashString(key, f.params.Seed))
}

// Sync returns a view of f whose methods may all run concurrently (see
// Sync). It shares f's bits.
func (f *Filter) Sync() Sync { return Sync{f} }

func (f *Filter) add(x, y uint64) {
	if f.params.Hash == HashXXH3 {
		f.addV1(x, y)
		return
	}
	f.addRemix(x, y)
}

func (f *Filter) addRemix(x, y uint64) {
	m, k, w, c := f.params.M, f.params.K, f.words, probeMulVar
	if k == 0 {
		panicZero("Filter")
	}
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		w[pos>>6] |= 1 << (pos & 63)
		x = x*c + y
	}
}

// test stops at the first probe that finds a 0 bit: the k probes are k
// cache misses in a large filter, and most absent keys are told apart by
// the first one or two.
func (f *Filter) test(x, y uint64) bool {
	if f.params.Hash == HashXXH3 {
		return f.testV1(x, y)
	}
	return f.testRemix(x, y)
}

// testRemix reads the words by pointer: a position is below m, and the
// filter has ⌈m/64⌉ words (made so, or checked so when read), so a bounds
// check per probe would test what always holds. Its one check is k = 0,
// the zero Filter, which holds nothing.
func (f *Filter) testRemix(x, y uint64) bool {
	m, k, c := f.params.M, f.params.K, probeMulVar
	if k == 0 {
		return false
	}
	w := unsafe.Pointer(unsafe.SliceData(f.words))
	for {
		pos, _ := bits.Mul64(x, m)
		if *(*uint64)(unsafe.Add(w, pos>>6*8))&(1<<(pos&63)) == 0 {
			return false
		}
		if k--; k == 0 {
			return true
		}
		x = x*c + y
	}
}

// testAll is test without early exit, so that the loads of many keys can be
// in flight at once.
func (f *Filter) testAll(x, y uint64) bool {
	if f.params.Hash == HashXXH3 {
		return f.testAllV1(x, y)
	}
	return f.testAllRemix(x, y)
}

func (f *Filter) testAllRemix(x, y uint64) bool {
	m, k, w, c := f.params.M, f.params.K, f.words, probeMulVar
	acc := uint64(1)
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		acc &= w[pos>>6] >> (pos & 63)
		x = x*c + y
	}
	return acc != 0 && k != 0
}

func (f *Filter) testAndAdd(x, y uint64) bool {
	if f.params.Hash == HashXXH3 {
		return f.testAndAddV1(x, y)
	}
	return f.testAndAddRemix(x, y)
}

func (f *Filter) testAndAddRemix(x, y uint64) bool {
	m, k, w, c := f.params.M, f.params.K, f.words, probeMulVar
	if k == 0 {
		panicZero("Filter")
	}
	var miss uint64
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		mask := uint64(1) << (pos & 63)
		miss |= mask &^ w[pos>>6]
		w[pos>>6] |= mask
		x = x*c + y
	}
	return miss == 0
}

// The Sync view's operations: atomic loads, and atomic ORs of the bits
// not already set (most of them, once a filter fills up).

func (f *Filter) testSync(x, y uint64) bool {
	if f.params.Hash == HashXXH3 {
		return f.testSyncV1(x, y)
	}
	m, k, w, c := f.params.M, f.params.K, f.words, probeMulVar
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		if atomic.LoadUint64(&w[pos>>6])&(1<<(pos&63)) == 0 {
			return false
		}
		x = x*c + y
	}
	return k != 0
}

func (f *Filter) testAndAddSync(x, y uint64) bool {
	if f.params.Hash == HashXXH3 {
		return f.testAndAddSyncV1(x, y)
	}
	m, k, w, c := f.params.M, f.params.K, f.words, probeMulVar
	if k == 0 {
		panicZero("Filter")
	}
	present := true
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		p, mask := &w[pos>>6], uint64(1)<<(pos&63)
		if atomic.LoadUint64(p)&mask == 0 && atomic.OrUint64(p, mask)&mask == 0 {
			present = false
		}
		x = x*c + y
	}
	return present
}

func (f *Filter) sum(key []byte) (lo, hi uint64)       { return hashBytes(key, f.params.Seed) }
func (f *Filter) sumString(key string) (lo, hi uint64) { return hashString(key, f.params.Seed) }

// ErrIncompatible is returned (wrapped, with what differs) when two filters
// cannot be combined because their type, size, probe count or seed differ.
var ErrIncompatible = errors.New("bloom: incompatible filters")

func compatible(a, b Params) error {
	switch {
	case a.M != b.M:
		return fmt.Errorf("%w: m = %d and %d bits", ErrIncompatible, a.M, b.M)
	case a.K != b.K:
		return fmt.Errorf("%w: k = %d and %d probes", ErrIncompatible, a.K, b.K)
	case a.Seed != b.Seed:
		return fmt.Errorf("%w: seeds %#x and %#x", ErrIncompatible, a.Seed, b.Seed)
	case a.Hash != b.Hash:
		return fmt.Errorf("%w: hash ids %d and %d", ErrIncompatible, a.Hash, b.Hash)
	}
	return nil
}

// Union adds every key of g to f: afterwards f tests present every key added
// to either. It fails, changing nothing, unless g has the same m, k and seed.
func (f *Filter) Union(g *Filter) error {
	if err := compatible(f.params, g.params); err != nil {
		return err
	}
	for i, w := range g.words {
		f.words[i] |= w
	}
	return nil
}

// Intersect keeps in f only the bits also set in g. Every key added to both
// still tests present. The result can answer "present" more often than a
// filter built from the common keys alone, because bits set by different
// keys in f and g coincide. It fails, changing nothing, unless g has the same
// m, k and seed.
func (f *Filter) Intersect(g *Filter) error {
	if err := compatible(f.params, g.params); err != nil {
		return err
	}
	for i, w := range g.words {
		f.words[i] &= w
	}
	return nil
}

// Reset removes every key.
func (f *Filter) Reset() { clear(f.words) }

// Clone returns an independent copy of f.
func (f *Filter) Clone() *Filter {
	return &Filter{words: append([]uint64(nil), f.words...), params: f.params}
}

// Equal reports whether f and g have the same parameters and bits, so that
// they answer every Test alike.
func (f *Filter) Equal(g *Filter) bool {
	return compatible(f.params, g.params) == nil && equalWords(f.words, g.words)
}

// Stats returns the filter's size and fill (see Stats).
func (f *Filter) Stats() Stats { return classicStats(popcount(f.words), f.params) }

func popcount(w []uint64) uint64 {
	var n int
	for _, x := range w {
		n += bits.OnesCount64(x)
	}
	return uint64(n)
}

func equalWords(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
