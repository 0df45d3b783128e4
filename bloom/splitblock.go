package bloom

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/cespare/xxhash/v2"
)

// SplitBlock is Parquet's split-block Bloom filter (SBBF), bit for bit as
// the Parquet format specifies it (BloomFilter.md in apache/parquet-format),
// so that its bits are the bitset a Parquet column chunk holds and any
// Parquet engine reads it, and a bitset any engine wrote reads here and
// answers identically.
//
// The filter is z blocks of 256 bits, each eight 32-bit words. A key is
// hashed with XXH64, seed 0, over its bytes (for a Parquet column, the
// value's plain encoding: a BYTE_ARRAY's bytes without their length, an
// INT64's eight little-endian bytes). The hash's high 32 bits choose the
// block, ((h >> 32) · z) >> 32; its low 32 bits x set one bit in each word
// i, bit (x · salt_i mod 2^32) >> 27, with the spec's eight odd salts. So k
// is always 8 and the seed always 0. The bitset's bytes are the words in
// order, each little-endian.
//
// Its size is a whole number of blocks, from 32 bytes to 128 MiB (the
// largest Parquet's reference writers make). NewSplitBlock and
// EstimateSplitBlock choose a power of two of bytes, as those writers do,
// large enough for the rate asked for; ParquetSplitBlockBytes is the
// writers' own choice, which can be half that. For the same rate it needs
// more bits than Blocked (eight bits in 256 crowd more than Blocked's k
// chosen for the rate in 512): use it to read and write Parquet's filters,
// or where a Parquet engine will read the filter, and Blocked otherwise.
//
// Code that holds a Parquet value's 64-bit XXH64 hash, as Parquet engines
// do, passes it to AddHash and TestHash (SplitBlockHash computes it).
// AppendBitset and SplitBlockFromBitset convert to and from the raw bitset;
// WriteParquet and ReadParquet add the Thrift BloomFilterHeader that
// precedes it in a Parquet file; WriteTo and Read use the bloomkit file
// format like every other type.
//
// Concurrency is as for Filter: the Test methods may run in any number of
// goroutines at once, everything else alone, and the view f.Sync() lets
// many goroutines add and test at once.
type SplitBlock struct {
	// words holds 4 a block, the first word 64-byte aligned: word 4b + j
	// holds the block's 32-bit words 2j (its low half) and 2j + 1 (its high
	// half), so that the words written little-endian are the Parquet
	// bitset's bytes.
	words  []uint64
	blocks uint64
	params Params
}

// Split-block sizes.
const (
	// SplitBlockBits is the size of a split block: eight 32-bit words.
	SplitBlockBits = 256
	// SplitBlockMinBytes and SplitBlockMaxBytes bound a split-block
	// filter's bitset: one block, and the 128 MiB that Parquet's reference
	// writers (parquet-java, Arrow) never exceed.
	SplitBlockMinBytes = SplitBlockBits / 8
	SplitBlockMaxBytes = 128 << 20
	// SplitBlockK is the number of bits a key sets in a split-block
	// filter, one in each of the block's words.
	SplitBlockK = 8
)

// HashXXH64 is the split-block filter's hash id, its only one: XXH64 with
// seed 0, and Parquet's block and bit choice.
const HashXXH64 = format.HashXXH64

// TypeSplitBlock is SplitBlock's type in the file header.
const TypeSplitBlock = format.TypeSplitBlock

// The salts of Parquet's split-block filter: bit (x · salt_i) >> 27 of word
// i, in 32-bit arithmetic.
const (
	sbSalt0 = 0x47b6137b
	sbSalt1 = 0x44974d91
	sbSalt2 = 0x8824ad5b
	sbSalt3 = 0xa2b7289d
	sbSalt4 = 0x705495c7
	sbSalt5 = 0x2df1424b
	sbSalt6 = 0x9efc4947
	sbSalt7 = 0x5c6bfb31
)

// SplitBlockHash returns the hash a split-block filter computes for key:
// XXH64 with seed 0.
func SplitBlockHash(key []byte) uint64 { return xxhash.Sum64(key) }

// SplitBlockHashString is SplitBlockHash for a string key.
func SplitBlockHashString(key string) uint64 { return xxhash.Sum64String(key) }

// ParquetSplitBlockBytes returns the size in bytes that Parquet's
// reference writers (parquet-java's BlockSplitBloomFilter, Arrow's) give
// the bitset of a split-block filter for n distinct values at
// false-positive rate p: −8n / ln(1 − p^(1/8)) bits, truncated, rounded up
// to a whole block and to at least 32 bytes, then up to a power of two of
// bytes, at most 128 MiB. The formula is the rate of a split filter whose
// bits were spread evenly; blocks fill unevenly, so a filter of that many
// bits holds n values at 1.1·p at p = 10%, 1.5·p at 1%, 2·p at 0.1% and
// 3·p at 0.01% (SplitBlockFalsePositiveRate), and only the rounding up to
// a power of two, when there is some, makes up for it. Use it to size a
// filter exactly as other Parquet writers would; EstimateSplitBlock sizes
// for the rate. It returns 0 when p is not in [MinRate, 1).
func ParquetSplitBlockBytes(n uint64, p float64) uint64 {
	if !validRate(p) {
		return 0
	}
	const maxBits = SplitBlockMaxBytes * 8
	m := -8 * float64(n) / math.Log(1-math.Pow(p, 1.0/8))
	var nbits uint64
	if !(m >= 0 && m <= maxBits) { // NaN too
		nbits = maxBits
	} else {
		nbits = uint64(m)
	}
	nbits = (nbits + SplitBlockBits - 1) / SplitBlockBits * SplitBlockBits
	nbytes := max(nbits/8, SplitBlockMinBytes)
	if nbytes&(nbytes-1) != 0 {
		nbytes = 1 << bits.Len64(nbytes)
	}
	return min(nbytes, SplitBlockMaxBytes)
}

// EstimateSplitBlock returns the parameters of a split-block filter for n
// distinct keys at false-positive rate p: the smallest bitset that is a
// power of two of bytes, as Parquet's reference writers make them, and at
// least ParquetSplitBlockBytes(n, p), whose SplitBlockFalsePositiveRate at
// n keys is at most p. That is the writers' size where its rounding leaves
// room enough, and twice or four times it where not (the formula reads low
// by up to 1.5 times at p = 1%). M and K are 0 when p is not in
// [MinRate, 1) or no filter of up to 128 MiB holds n keys at rate p.
func EstimateSplitBlock(n uint64, p float64) Params {
	e := Params{N: n, P: p, Hash: HashXXH64}
	if !validRate(p) {
		return e
	}
	for b := ParquetSplitBlockBytes(n, p); b <= SplitBlockMaxBytes; b *= 2 {
		if SplitBlockFalsePositiveRate(b*8, n) <= p {
			e.M, e.K = b*8, SplitBlockK
			break
		}
	}
	return e
}

// SplitBlockFalsePositiveRate returns the expected false-positive rate of a
// split-block filter of m bits after n distinct keys were added. A block
// holding j keys has had j bits thrown at each of its 32-bit words, so a
// new key finds its bit set in a word with probability 1 − (31/32)^j and
// in all eight with that to the 8th; the keys in a block are
// Binomial(n, 1/blocks). It returns 1 when m < 256.
func SplitBlockFalsePositiveRate(m, n uint64) float64 {
	blocks := m / SplitBlockBits
	if blocks == 0 {
		return 1
	}
	if n == 0 {
		return 0
	}
	rate := func(j uint64) float64 {
		return math.Pow(-math.Expm1(float64(j)*math.Log1p(-1.0/32)), SplitBlockK)
	}
	if blocks == 1 {
		return rate(n)
	}
	q := 1 / float64(blocks)
	nf := float64(n)
	mode := min(uint64(math.Floor((nf+1)*q)), n)
	logMode := logBinomialPMF(n, mode, q)
	ratio := q / (1 - q)
	sum := 0.0
	t := math.Exp(logMode)
	for j := mode; ; j-- {
		sum += t * rate(j)
		if j == 0 || (t < 1e-18*sum && j+20 < mode) {
			break
		}
		t *= float64(j) / (float64(n-j+1) * ratio)
	}
	t = math.Exp(logMode)
	for j := mode + 1; j <= n; j++ {
		t *= float64(n-j+1) / float64(j) * ratio
		sum += t * rate(j)
		if t < 1e-18*sum && j > mode+20 {
			break
		}
	}
	return min(sum, 1)
}

// NewSplitBlock returns an empty split-block filter sized for n distinct
// keys at false-positive rate p (see EstimateSplitBlock).
func NewSplitBlock(n uint64, p float64) (*SplitBlock, error) {
	if err := checkRate(p); err != nil {
		return nil, err
	}
	e := EstimateSplitBlock(n, p)
	if e.M == 0 {
		return nil, fmt.Errorf("%w: no split-block filter of up to %d bytes holds %d keys at rate %g", ErrInvalidParams, SplitBlockMaxBytes, n, p)
	}
	return NewSplitBlockFromParams(e)
}

// NewSplitBlockFromParams returns an empty split-block filter of p.M bits:
// a multiple of SplitBlockBits from 256 to 2^30 (32 bytes to 128 MiB; the
// Parquet format allows any whole number of blocks, and some writers make
// sizes that are not powers of two). p.K is 8 or 0, p.Seed 0, and p.Hash
// HashXXH64 or 0; N and P are kept as the plan.
func NewSplitBlockFromParams(p Params) (*SplitBlock, error) {
	p, err := p.validateSplitBlock()
	if err != nil {
		return nil, err
	}
	blocks := p.M / SplitBlockBits
	return &SplitBlock{words: alignedWords(blocks * 4), blocks: blocks, params: p}, nil
}

// validateSplitBlock is validate for the split-block layout.
func (p Params) validateSplitBlock() (Params, error) {
	if p.Hash == 0 {
		p.Hash = HashXXH64
	}
	if p.K == 0 {
		p.K = SplitBlockK
	}
	switch {
	case p.Hash != HashXXH64:
		return p, fmt.Errorf("%w: hash id %d, the split-block layout has only %d", ErrInvalidParams, p.Hash, HashXXH64)
	case p.K != SplitBlockK:
		return p, fmt.Errorf("%w: k = %d, a split-block filter sets %d bits a key", ErrInvalidParams, p.K, SplitBlockK)
	case p.Seed != 0:
		return p, fmt.Errorf("%w: seed %#x, a split-block filter hashes with seed 0", ErrInvalidParams, p.Seed)
	case p.M == 0 || p.M%SplitBlockBits != 0 || p.M > SplitBlockMaxBytes*8:
		return p, fmt.Errorf("%w: m = %d bits, want a multiple of %d from %d to %d", ErrInvalidParams, p.M, SplitBlockBits, SplitBlockBits, SplitBlockMaxBytes*8)
	case p.P < 0 || p.P >= 1 || math.IsNaN(p.P):
		return p, fmt.Errorf("%w: planned rate %v is not in [0, 1)", ErrInvalidParams, p.P)
	}
	return p, nil
}

// Params returns the filter's size, probe count (8), seed (0), plan and
// hash id.
func (f *SplitBlock) Params() Params { return f.params }

// Len returns the size of the filter's bitset in bytes.
func (f *SplitBlock) Len() int { return len(f.words) * 8 }

// block returns the 4 words of the block the hash h chooses; f is not the
// zero SplitBlock.
func (f *SplitBlock) block(h uint64) *[4]uint64 {
	b := (h >> 32) * f.blocks >> 32
	return (*[4]uint64)(f.words[b*4 : b*4+4])
}

func (f *SplitBlock) mustBlock(h uint64) *[4]uint64 {
	if f.blocks == 0 {
		panicZero("SplitBlock")
	}
	return f.block(h)
}

// splitMask returns the bits a key whose hash's low half is x sets in its
// block's four 64-bit words: the spec's mask, word 2j in the low half of
// m_j and word 2j + 1 in the high half.
func splitMask(x uint32) (m0, m1, m2, m3 uint64) {
	m0 = 1<<(x*sbSalt0>>27) | 1<<(32+x*sbSalt1>>27)
	m1 = 1<<(x*sbSalt2>>27) | 1<<(32+x*sbSalt3>>27)
	m2 = 1<<(x*sbSalt4>>27) | 1<<(32+x*sbSalt5>>27)
	m3 = 1<<(x*sbSalt6>>27) | 1<<(32+x*sbSalt7>>27)
	return
}

func addIn(blk *[4]uint64, x uint32) {
	m0, m1, m2, m3 := splitMask(x)
	blk[0] |= m0
	blk[1] |= m1
	blk[2] |= m2
	blk[3] |= m3
}

// testIn has no early exit: the eight bits are in four words of one cache
// line, and four ANDs cost less than the branches.
func testIn(blk *[4]uint64, x uint32) bool {
	m0, m1, m2, m3 := splitMask(x)
	return (blk[0]&m0^m0)|(blk[1]&m1^m1)|(blk[2]&m2^m2)|(blk[3]&m3^m3) == 0
}

// Add inserts key.
func (f *SplitBlock) Add(key []byte) { f.AddHash(xxhash.Sum64(key)) }

// AddString inserts key without copying it.
func (f *SplitBlock) AddString(key string) { f.AddHash(xxhash.Sum64String(key)) }

// AddHash inserts the key whose XXH64 hash is h (see SplitBlockHash): what
// Parquet's filter_insert does.
//
// AddHash and TestHash are written out, with no call but the panic for the
// zero value: through block and addIn they were three calls deep, and
// measured up to twice as slow as parquet-go's assembly (bench/SPEED.md).
func (f *SplitBlock) AddHash(h uint64) {
	if f.blocks == 0 {
		panicZero("SplitBlock")
	}
	b := (h >> 32) * f.blocks >> 32
	blk := (*[4]uint64)(f.words[b*4 : b*4+4])
	m0, m1, m2, m3 := splitMask(uint32(h))
	blk[0] |= m0
	blk[1] |= m1
	blk[2] |= m2
	blk[3] |= m3
}

// Test reports whether key may have been added. False means it certainly
// was not; true means it probably was.
//
// Test and TestString have TestHash's body written out (the compiler does
// not inline it), so that a lookup calls only the hash.
func (f *SplitBlock) Test(key []byte) bool {
	h := xxhash.Sum64(key)
	if f.blocks == 0 {
		return false // the zero SplitBlock holds nothing
	}
	b := (h >> 32) * f.blocks >> 32
	blk := (*[4]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.words)), b*32))
	m0, m1, m2, m3 := splitMask(uint32(h))
	return (blk[0]&m0^m0)|(blk[1]&m1^m1)|(blk[2]&m2^m2)|(blk[3]&m3^m3) == 0
}

// TestString is Test for a string key, without copying it.
func (f *SplitBlock) TestString(key string) bool {
	h := xxhash.Sum64String(key)
	if f.blocks == 0 {
		return false // the zero SplitBlock holds nothing
	}
	b := (h >> 32) * f.blocks >> 32
	blk := (*[4]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.words)), b*32))
	m0, m1, m2, m3 := splitMask(uint32(h))
	return (blk[0]&m0^m0)|(blk[1]&m1^m1)|(blk[2]&m2^m2)|(blk[3]&m3^m3) == 0
}

// TestHash is Test for the key whose XXH64 hash is h: what Parquet's
// filter_check does. Like testIn it has no early exit. Its one check is
// for the zero value: the block index is below the block count (a product
// of two numbers below 2^32, shifted by 32), so the block is read by
// pointer.
func (f *SplitBlock) TestHash(h uint64) bool {
	if f.blocks == 0 {
		return false // the zero SplitBlock holds nothing
	}
	b := (h >> 32) * f.blocks >> 32
	blk := (*[4]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.words)), b*32))
	m0, m1, m2, m3 := splitMask(uint32(h))
	return (blk[0]&m0^m0)|(blk[1]&m1^m1)|(blk[2]&m2^m2)|(blk[3]&m3^m3) == 0
}

// TestAndAdd inserts key and reports whether it tested present before.
func (f *SplitBlock) TestAndAdd(key []byte) bool { return f.testAndAdd(xxhash.Sum64(key)) }

// TestAndAddString is TestAndAdd for a string key.
func (f *SplitBlock) TestAndAddString(key string) bool {
	return f.testAndAdd(xxhash.Sum64String(key))
}

func (f *SplitBlock) testAndAdd(h uint64) bool {
	blk := f.mustBlock(h)
	m0, m1, m2, m3 := splitMask(uint32(h))
	miss := m0&^blk[0] | m1&^blk[1] | m2&^blk[2] | m3&^blk[3]
	blk[0] |= m0
	blk[1] |= m1
	blk[2] |= m2
	blk[3] |= m3
	return miss == 0
}

// SplitBlockSync is a view of a SplitBlock whose methods may all run at
// once, in any number of goroutines, as Sync is for Filter and Blocked:
// atomic loads, and atomic ORs of the bits not already set. Get one with
// SplitBlock.Sync; while goroutines add through it, every goroutine that
// touches the filter must go through it too.
type SplitBlockSync struct{ f *SplitBlock }

// Sync returns a view of f whose methods may all run concurrently (see
// SplitBlockSync). It shares f's bits.
func (f *SplitBlock) Sync() SplitBlockSync { return SplitBlockSync{f} }

// Add inserts key.
func (s SplitBlockSync) Add(key []byte) { s.testAndAdd(xxhash.Sum64(key)) }

// AddString inserts key without copying it.
func (s SplitBlockSync) AddString(key string) { s.testAndAdd(xxhash.Sum64String(key)) }

// AddHash inserts the key whose XXH64 hash is h.
func (s SplitBlockSync) AddHash(h uint64) { s.testAndAdd(h) }

// Test reports whether key may have been added.
func (s SplitBlockSync) Test(key []byte) bool { return s.TestHash(xxhash.Sum64(key)) }

// TestString is Test for a string key.
func (s SplitBlockSync) TestString(key string) bool { return s.TestHash(xxhash.Sum64String(key)) }

// TestHash is Test for the key whose XXH64 hash is h.
func (s SplitBlockSync) TestHash(h uint64) bool {
	if s.f == nil || s.f.blocks == 0 {
		return false
	}
	blk := s.f.block(h)
	m0, m1, m2, m3 := splitMask(uint32(h))
	return atomic.LoadUint64(&blk[0])&m0 == m0 && atomic.LoadUint64(&blk[1])&m1 == m1 &&
		atomic.LoadUint64(&blk[2])&m2 == m2 && atomic.LoadUint64(&blk[3])&m3 == m3
}

// TestAndAdd inserts key and reports whether it tested present before.
func (s SplitBlockSync) TestAndAdd(key []byte) bool { return s.testAndAdd(xxhash.Sum64(key)) }

// TestAndAddString is TestAndAdd for a string key.
func (s SplitBlockSync) TestAndAddString(key string) bool {
	return s.testAndAdd(xxhash.Sum64String(key))
}

func (s SplitBlockSync) testAndAdd(h uint64) bool {
	if s.f == nil {
		panicZero("SplitBlockSync")
	}
	blk := s.f.mustBlock(h)
	m0, m1, m2, m3 := splitMask(uint32(h))
	present := true
	for i, m := range [4]uint64{m0, m1, m2, m3} {
		p := &blk[i]
		if atomic.LoadUint64(p)&m != m && atomic.OrUint64(p, m)&m != m {
			present = false
		}
	}
	return present
}

// Union adds every key of g to f. It fails, changing nothing, unless g has
// the same size.
func (f *SplitBlock) Union(g *SplitBlock) error {
	if err := compatible(f.params, g.params); err != nil {
		return err
	}
	for i, w := range g.words {
		f.words[i] |= w
	}
	return nil
}

// Intersect keeps in f only the bits also set in g, as Filter.Intersect
// does. It fails, changing nothing, unless g has the same size.
func (f *SplitBlock) Intersect(g *SplitBlock) error {
	if err := compatible(f.params, g.params); err != nil {
		return err
	}
	for i, w := range g.words {
		f.words[i] &= w
	}
	return nil
}

// Reset removes every key.
func (f *SplitBlock) Reset() { clear(f.words) }

// Clone returns an independent copy of f.
func (f *SplitBlock) Clone() *SplitBlock {
	g := &SplitBlock{words: alignedWords(uint64(len(f.words))), blocks: f.blocks, params: f.params}
	copy(g.words, f.words)
	return g
}

// Equal reports whether f and g have the same size and bits.
func (f *SplitBlock) Equal(g *SplitBlock) bool {
	return compatible(f.params, g.params) == nil && equalWords(f.words, g.words)
}

// Stats returns the filter's size and fill (see Stats). EstimatedFPR is
// the mean over blocks of the product over their eight words of (bits set
// in the word / 32); ApproxCount solves m(1 − (1 − 8/m)^n) = bits set for
// n, the expected fill after n keys.
func (f *SplitBlock) Stats() Stats {
	if f.blocks == 0 {
		return Stats{Capacity: f.params.N} // a zero value
	}
	var set uint64
	var sum float64
	for b := 0; b+4 <= len(f.words); b += 4 {
		w := f.words[b : b+4 : b+4]
		prod := 1.0
		for _, x := range w {
			lo, hi := bits.OnesCount32(uint32(x)), bits.OnesCount32(uint32(x>>32))
			set += uint64(lo + hi)
			prod *= float64(lo) * float64(hi) / (32 * 32)
		}
		sum += prod
	}
	m := float64(f.params.M)
	count := uint64(math.MaxUint64)
	if set < f.params.M {
		count = uint64(math.Round(math.Log1p(-float64(set)/m) / math.Log1p(-SplitBlockK/m)))
	}
	return Stats{
		Bits:         f.params.M,
		BitsSet:      set,
		FillRatio:    float64(set) / m,
		ApproxCount:  count,
		EstimatedFPR: sum / float64(f.blocks),
		Capacity:     f.params.N,
	}
}
