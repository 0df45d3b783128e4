package bloom

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkit/bloomkit/internal/bitcount"
	"github.com/bloomkit/bloomkit/internal/mem"
	"github.com/zeebo/xxh3"
)

// Blocked is a blocked Bloom filter: the bits are cut into 512-bit blocks,
// one 64-byte cache line each, and all k bits of a key fall in one block, so
// a lookup costs one cache miss instead of k. Keys crowd some blocks more
// than others, so for the same false-positive rate the blocked layout needs
// somewhat more bits than the classic one; EstimateBlocked computes how many.
//
// The high half of the key's 128-bit XXH3 hash picks the block; probe i sets
// bit (lo * s_i) >> 55 of it, where lo is the low half and s_i a fixed odd
// constant.
//
// Concurrency is as for Filter: the Test methods may run in any number of
// goroutines at once, everything else alone, and the view f.Sync() lets
// many goroutines add and test at once.
type Blocked struct {
	words  []uint64 // 8 words a block, the first word 64-byte aligned
	blocks uint64
	params Params
	// fast: hash id HashXXH3x64 with seed 0, whose lookups call the
	// unseeded 64-bit hash directly (see TestString); false takes the
	// general path, which is right for every filter.
	fast bool
}

// setFast sets f.fast from f's params.
func (f *Blocked) setFast() { f.fast = f.params.Hash == HashXXH3x64 && f.params.Seed == 0 }

// NewBlocked returns an empty blocked filter sized for n items at
// false-positive rate p (see EstimateBlocked).
func NewBlocked(n uint64, p float64) (*Blocked, error) {
	if err := checkRate(p); err != nil {
		return nil, err
	}
	e := EstimateBlocked(n, p)
	if e.M == 0 {
		return nil, fmt.Errorf("%w: no blocked filter of up to 2^62 bits holds %d keys at rate %g", ErrInvalidParams, n, p)
	}
	return NewBlockedFromParams(e)
}

// NewBlockedFromParams returns an empty blocked filter with the size, probe
// count and seed of p (from EstimateBlocked, another filter, or by hand).
// p.M must be a multiple of BlockBits: round a size of your own up with
// (m + BlockBits − 1) / BlockBits · BlockBits.
func NewBlockedFromParams(p Params) (*Blocked, error) {
	p, err := p.validate(true)
	if err != nil {
		return nil, err
	}
	blocks := p.M / BlockBits
	f := &Blocked{words: alignedWords(blocks * 8), blocks: blocks, params: p}
	f.setFast()
	return f, nil
}

// alignedWords returns n zero words whose first word starts a cache line.
func alignedWords(n uint64) []uint64 {
	w := mem.Words(n + 7)
	off := (64 - uintptr(unsafe.Pointer(&w[0]))%64) % 64 / 8
	return w[off : off+uintptr(n) : off+uintptr(n)]
}

// Params returns the filter's size, probe count, seed and plan.
func (f *Blocked) Params() Params { return f.params }

// block returns the block the key hashed to (_, hi) falls in; f is not
// the zero Blocked. Writers check with mustBlock.
func (f *Blocked) block(hi uint64) *[8]uint64 {
	b, _ := bits.Mul64(hi, f.blocks)
	return (*[8]uint64)(f.words[b*8 : b*8+8])
}

// mustBlock is block for the methods that write: an add to the zero
// Blocked, which has no bits to set, panics with ErrZero.
func (f *Blocked) mustBlock(hi uint64) *[8]uint64 {
	if f.blocks == 0 {
		panicZero("Blocked")
	}
	return f.block(hi)
}

// sum hashes key as f's hash id says (see KeyHash): for HashXXH3x64 the
// 64-bit XXH3 as both halves, else the 128-bit XXH3.
func (f *Blocked) sum(key []byte) (lo, hi uint64) {
	if f.params.Hash == HashXXH3x64 {
		if f.params.Seed == 0 {
			lo = xxh3.Hash(key)
		} else {
			lo = xxh3.HashSeed(key, f.params.Seed)
		}
		return lo, lo
	}
	return hashBytes(key, f.params.Seed)
}

func (f *Blocked) sumString(key string) (lo, hi uint64) {
	if f.params.Hash == HashXXH3x64 {
		if f.params.Seed == 0 {
			lo = xxh3.HashString(key)
		} else {
			lo = xxh3.HashStringSeed(key, f.params.Seed)
		}
		return lo, lo
	}
	return hashString(key, f.params.Seed)
}

// Add inserts key.
func (f *Blocked) Add(key []byte) { f.add(f.sum(key)) }

// AddString inserts key without copying it.
func (f *Blocked) AddString(key string) { f.add(f.sumString(key)) }

// AddHash inserts the key whose hash is h (see Params.HashKey). It panics
// with a value wrapping ErrHashMismatch if h was made with another hash
// function or seed (see KeyHash).
func (f *Blocked) AddHash(h KeyHash) {
	if h.kind != hashKindNone {
		mustMatch(f.params, h)
	}
	f.add(h.Lo, h.Hi)
}

// Test reports whether key may have been added. False means it certainly
// was not; true means it probably was.
//
// Test and TestString call the hash themselves and inline the rest, so that
// a lookup is two calls deep: in a loop over keys the next key's hash then
// starts while this key's cache line is still loading (bench/SPEED.md).
// A filter of NewBlocked (hash id HashXXH3x64, seed 0) takes the first
// branch, one test of one field, and skips the zero value's check: the
// zero Blocked is never fast.
func (f *Blocked) Test(key []byte) bool {
	var lo, hi uint64
	if f.fast {
		lo = xxh3.Hash(key)
		hi = lo
	} else {
		if len(f.words) == 0 {
			return false // the zero Blocked, which is never fast
		}
		switch {
		case f.params.Hash == HashXXH3x64:
			lo = xxh3.HashSeed(key, f.params.Seed)
			hi = lo
		case f.params.Seed == 0:
			h := xxh3.Hash128(key)
			lo, hi = h.Lo, h.Hi
		default:
			h := xxh3.Hash128Seed(key, f.params.Seed)
			lo, hi = h.Lo, h.Hi
		}
	}
	// f.test(lo, hi), written out, the zero check above:
	b, _ := bits.Mul64(hi, f.blocks)
	blk := (*[8]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.words)), b*64))
	pos := (lo * blockSalts[0]) >> 55
	if blk[pos>>6]&(1<<(pos&63)) == 0 {
		return false
	}
	salt, end := unsafe.Pointer(&blockSalts), uintptr(f.params.K)*8
	for i := uintptr(8); i != end; i += 8 {
		pos := (lo * *(*uint64)(unsafe.Add(salt, i))) >> 55
		if blk[pos>>6]&(1<<(pos&63)) == 0 {
			return false
		}
	}
	return true
}

// TestString is Test for a string key, without copying it.
func (f *Blocked) TestString(key string) bool {
	var lo, hi uint64
	if f.fast {
		lo = xxh3.HashString(key)
		hi = lo
	} else {
		if len(f.words) == 0 {
			return false // the zero Blocked, which is never fast
		}
		switch {
		case f.params.Hash == HashXXH3x64:
			lo = xxh3.HashStringSeed(key, f.params.Seed)
			hi = lo
		case f.params.Seed == 0:
			h := xxh3.HashString128(key)
			lo, hi = h.Lo, h.Hi
		default:
			h := xxh3.HashString128Seed(key, f.params.Seed)
			lo, hi = h.Lo, h.Hi
		}
	}
	// f.test(lo, hi), written out, the zero check above:
	b, _ := bits.Mul64(hi, f.blocks)
	blk := (*[8]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.words)), b*64))
	pos := (lo * blockSalts[0]) >> 55
	if blk[pos>>6]&(1<<(pos&63)) == 0 {
		return false
	}
	salt, end := unsafe.Pointer(&blockSalts), uintptr(f.params.K)*8
	for i := uintptr(8); i != end; i += 8 {
		pos := (lo * *(*uint64)(unsafe.Add(salt, i))) >> 55
		if blk[pos>>6]&(1<<(pos&63)) == 0 {
			return false
		}
	}
	return true
}

// TestHash is Test for the key whose hash is h (see Params.HashKey). It
// panics with a value wrapping ErrHashMismatch if h was made with another
// hash function or seed (see KeyHash).
func (f *Blocked) TestHash(h KeyHash) bool {
	if h.kind != hashKindNone {
		mustMatch(f.params, h)
	}
	return f.test(h.Lo, h.Hi)
}

// TestAndAdd inserts key and reports whether it tested present before.
func (f *Blocked) TestAndAdd(key []byte) bool { return f.testAndAdd(f.sum(key)) }

// TestAndAddString is TestAndAdd for a string key.
func (f *Blocked) TestAndAddString(key string) bool { return f.testAndAdd(f.sumString(key)) }

// Sync returns a view of f whose methods may all run concurrently (see
// Sync). It shares f's bits.
func (f *Blocked) Sync() Sync { return Sync{f} }

// The probes of a key are in one cache line. test, for one key at a time,
// stops at the first probe that finds a 0 bit: an absent key is told apart
// by its first or second probe in a filter that is not overfull, so a miss
// is about a quarter fewer instructions (195 against 268 at n = 10M,
// p = 1%, cachegrind; bench/SPEED.md), and fewer instructions between one
// key's load and the next is what lets the CPU overlap them. The batch
// loop keeps a probe without branches (testInUnrolled): there the loads
// are prefetched and a mispredicted branch would discard the keys hashed
// ahead. Plain
// loads, not atomic ones: on amd64 both are one MOV, but the compiler
// orders atomic loads with each other, and that measured 1.5 times slower
// at 10 million keys.

func (f *Blocked) add(lo, hi uint64) { f.addIn(f.mustBlock(hi), lo) }

// test is Test for the key hashed to (lo, hi). Test and TestString have
// its body written out (the compiler does not inline a loop this large),
// so that a lookup calls only the hash. It has one check: the zero Blocked
// has no words and holds nothing; any other has the key's block (the block
// index is below the block count) and at least one probe, and its probe
// count was checked to be at most MaxK when it was made or read, so the
// block and the salts are read by pointer, without bounds checks, and the
// first probe, which tells most absent keys, is before the loop.
func (f *Blocked) test(lo, hi uint64) bool {
	w := f.words
	if len(w) == 0 {
		return false // the zero Blocked
	}
	b, _ := bits.Mul64(hi, f.blocks)
	blk := (*[8]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(w)), b*64))
	pos := (lo * blockSalts[0]) >> 55
	if blk[pos>>6]&(1<<(pos&63)) == 0 {
		return false
	}
	salt, end := unsafe.Pointer(&blockSalts), uintptr(f.params.K)*8
	for i := uintptr(8); i != end; i += 8 {
		pos := (lo * *(*uint64)(unsafe.Add(salt, i))) >> 55
		if blk[pos>>6]&(1<<(pos&63)) == 0 {
			return false
		}
	}
	return true
}

// addIn and testIn are add and test in the key's block blk.
func (f *Blocked) addIn(blk *[8]uint64, lo uint64) {
	for _, s := range blockSalts[:f.params.K] {
		pos := (lo * s) >> 55
		blk[pos>>6] |= 1 << (pos & 63)
	}
}

// testInUnrolled is testIn written out for k up to 16 (a jump into
// straight-line code, the salts indexed by constants): without the loop's
// counter, bounds checks and branch a probe is fewer instructions, and
// TestMany at 100 million keys measured about 1 ns a key (5 %) faster at
// k = 6. It is too large to inline, and single-key Test, whose speed depends
// on the next key's load starting early, measured up to 1.7 times slower
// calling it at 10 million keys, so Test keeps the inlined loop
// (bench/SPEED.md).
func (f *Blocked) testInUnrolled(blk *[8]uint64, lo uint64) bool {
	s := &blockSalts
	acc := ^uint64(0)
	switch k := f.params.K; k {
	case 16:
		p := (lo * s[15]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 15:
		p := (lo * s[14]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 14:
		p := (lo * s[13]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 13:
		p := (lo * s[12]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 12:
		p := (lo * s[11]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 11:
		p := (lo * s[10]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 10:
		p := (lo * s[9]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 9:
		p := (lo * s[8]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 8:
		p := (lo * s[7]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 7:
		p := (lo * s[6]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 6:
		p := (lo * s[5]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 5:
		p := (lo * s[4]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 4:
		p := (lo * s[3]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 3:
		p := (lo * s[2]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 2:
		p := (lo * s[1]) >> 55
		acc &= blk[p>>6] >> (p & 63)
		fallthrough
	case 1:
		p := (lo * s[0]) >> 55
		acc &= blk[p>>6] >> (p & 63)
	default:
		for _, s := range s[:k] {
			p := (lo * s) >> 55
			acc &= blk[p>>6] >> (p & 63)
		}
	}
	return acc&1 != 0
}

func (f *Blocked) testAndAdd(lo, hi uint64) bool {
	blk := f.mustBlock(hi)
	var miss uint64
	for _, s := range blockSalts[:f.params.K] {
		pos := (lo * s) >> 55
		bit := uint64(1) << (pos & 63)
		miss |= bit &^ blk[pos>>6]
		blk[pos>>6] |= bit
	}
	return miss == 0
}

// The Sync view's operations: atomic loads, and atomic ORs of the bits
// not already set.

func (f *Blocked) testSync(lo, hi uint64) bool {
	if f.blocks == 0 {
		return false
	}
	blk := f.block(hi)
	acc := uint64(1)
	for _, s := range blockSalts[:f.params.K] {
		pos := (lo * s) >> 55
		acc &= atomic.LoadUint64(&blk[pos>>6]) >> (pos & 63)
	}
	return acc != 0
}

func (f *Blocked) testAndAddSync(lo, hi uint64) bool {
	blk := f.mustBlock(hi)
	present := true
	for _, s := range blockSalts[:f.params.K] {
		pos := (lo * s) >> 55
		p, bit := &blk[pos>>6], uint64(1)<<(pos&63)
		if atomic.LoadUint64(p)&bit == 0 && atomic.OrUint64(p, bit)&bit == 0 {
			present = false
		}
	}
	return present
}

// Union adds every key of g to f. It fails, changing nothing, unless g has
// the same m, k and seed.
func (f *Blocked) Union(g *Blocked) error {
	if err := compatible(f.params, g.params); err != nil {
		return err
	}
	for i, w := range g.words {
		f.words[i] |= w
	}
	return nil
}

// Intersect keeps in f only the bits also set in g, as Filter.Intersect
// does. It fails, changing nothing, unless g has the same m, k and seed.
func (f *Blocked) Intersect(g *Blocked) error {
	if err := compatible(f.params, g.params); err != nil {
		return err
	}
	for i, w := range g.words {
		f.words[i] &= w
	}
	return nil
}

// Reset removes every key.
func (f *Blocked) Reset() { clear(f.words) }

// Clone returns an independent copy of f.
func (f *Blocked) Clone() *Blocked {
	g := &Blocked{words: alignedWords(uint64(len(f.words))), blocks: f.blocks, params: f.params, fast: f.fast}
	copy(g.words, f.words)
	return g
}

// Equal reports whether f and g have the same parameters and bits.
func (f *Blocked) Equal(g *Blocked) bool {
	return compatible(f.params, g.params) == nil && equalWords(f.words, g.words)
}

// Stats returns the filter's size and fill (see Stats).
func (f *Blocked) Stats() Stats {
	if f.blocks == 0 {
		return Stats{Capacity: f.params.N} // a zero value
	}
	set, fpr := f.fill()
	return Stats{
		Bits:         f.params.M,
		BitsSet:      set,
		FillRatio:    float64(set) / float64(f.params.M),
		ApproxCount:  f.approxCount(set),
		EstimatedFPR: fpr,
		Capacity:     f.params.N,
	}
}

// approxCount estimates how many distinct keys were added from the number x
// of bits set (bitcount.Blocked).
func (f *Blocked) approxCount(x uint64) uint64 { return bitcount.Blocked(x, f.params.M, f.params.K) }

// fill returns the number of bits set and the false-positive rate the
// filter has now: the mean over blocks of (bits set in the block / 512)^k,
// the probability that a new key's k probes all hit set bits.
func (f *Blocked) fill() (set uint64, fpr float64) {
	k := float64(f.params.K)
	// Blocks with the same popcount contribute alike: count them first.
	var hist [BlockBits + 1]uint64
	for b := 0; b+8 <= len(f.words); b += 8 {
		w := f.words[b : b+8 : b+8]
		n := bits.OnesCount64(w[0]) + bits.OnesCount64(w[1]) + bits.OnesCount64(w[2]) + bits.OnesCount64(w[3]) +
			bits.OnesCount64(w[4]) + bits.OnesCount64(w[5]) + bits.OnesCount64(w[6]) + bits.OnesCount64(w[7])
		hist[n]++
	}
	sum := 0.0
	for n, c := range hist {
		if c != 0 {
			set += uint64(n) * c
			sum += float64(c) * math.Pow(float64(n)/BlockBits, k)
		}
	}
	return set, sum / float64(f.blocks)
}

// LocateBlock returns where the bits of the key hashed to h (see Hash) lie
// in a blocked filter with parameters p: the index of its 512-bit block and,
// appended to dst, the offset (0 to 511) of each of its p.K probes within
// the block, in probe order (offsets may repeat). Bit j of block b is bit
// j%64 of the filter's 64-bit word 8b + j/64 (docs/format.md). It lets code
// that keeps a blocked filter's bits elsewhere, such as in Redis, set and
// test exactly the bits a Blocked would. h must come from p.HashKey (see
// KeyHash): it panics with a value wrapping ErrHashMismatch for a hash
// made with another hash function or seed. p.Hash 0 is the blocked
// layout's newest id, HashXXH3x64.
func LocateBlock(p Params, h KeyHash, dst []uint16) (block uint64, offsets []uint16) {
	if h.kind != hashKindNone {
		if p.Hash == 0 {
			p.Hash = HashXXH3x64
		}
		mustMatch(p, h)
	}
	block, _ = bits.Mul64(h.Hi, p.M/BlockBits)
	for _, s := range blockSalts[:min(p.K, MaxK)] {
		dst = append(dst, uint16((h.Lo*s)>>55))
	}
	return block, dst
}

// Locate returns, appended to dst, the p.K bit positions (0 to p.M−1) of
// the key hashed to h in a classic filter with parameters p, in probe order
// (positions may repeat), by p's hash id (0 is HashXXH3Remix). Bit i is bit
// i%64 of the filter's 64-bit word i/64 (docs/format.md). h must come from
// p.HashKey (see KeyHash): it panics with a value wrapping ErrHashMismatch
// for a hash made with another hash function or seed.
func Locate(p Params, h KeyHash, dst []uint64) []uint64 {
	if h.kind != hashKindNone {
		mustMatch(p, h)
	}
	if p.Hash == HashXXH3 {
		return locateV1(p, h, dst)
	}
	x := h.Lo
	for range min(p.K, MaxK) {
		dst = append(dst, probePos(x, p.M))
		x = nextProbe(x, h.Hi)
	}
	return dst
}
