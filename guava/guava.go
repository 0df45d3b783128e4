// Package guava reads, writes, tests and adds to Bloom filters in the byte
// format of Google Guava's BloomFilter.writeTo (Java), so that a filter
// built in Go can be shipped to a JVM service and the other way round.
//
// Only the strategy Guava has used by default since release 12,
// MURMUR128_MITZ_64 (ordinal 1), is supported, with keys funnelled as bytes:
// Funnels.byteArrayFunnel() for raw bytes and Funnels.stringFunnel(UTF_8)
// for strings, which hash the same bytes, so AddString(s) and Add([]byte(s))
// agree with both Java funnels. (Funnels.unencodedCharsFunnel hashes UTF-16
// code units and is not supported.)
//
// The format, all big-endian as Java's DataOutputStream writes it:
//
//	byte    strategy ordinal (1 = MURMUR128_MITZ_64)
//	byte    number of hash functions k (unsigned, 1..255)
//	int32   number of 64-bit words n
//	int64×n the bit array; bit i is bit i%64 of word i/64
//
// A key sets bits (h1 + i·h2 mod 2^64, made positive) mod 64n for i in
// [0, k), where h1 and h2 are the two halves of MurmurHash3_x64_128 of the
// key with seed 0. There is no checksum and no magic number: Guava's files
// carry neither, so a damaged file is caught only by its length and fields.
package guava

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/twmb/murmur3"

	"github.com/bloomkit/bloomkit/internal/format"
)

// StrategyMurmur128Mitz64 is the ordinal of Guava's
// BloomFilterStrategies.MURMUR128_MITZ_64, the only strategy read or written.
const StrategyMurmur128Mitz64 = 1

// HeaderSize is the size of the fields before the bit array.
const HeaderSize = 6

// MaxWords is the most 64-bit words a Guava filter can have: Java arrays
// are indexed by int.
const MaxWords = math.MaxInt32

// Errors for bad input.
var (
	ErrStrategy  = errors.New("guava: unsupported strategy (only MURMUR128_MITZ_64, ordinal 1, is read)")
	ErrCorrupt   = errors.New("guava: corrupt filter data")
	ErrTruncated = errors.New("guava: truncated filter data")
	ErrParams    = errors.New("guava: invalid parameters")
)

// Filter is a Bloom filter with Guava's layout and hashing. It is not safe
// for concurrent use with Add.
type Filter struct {
	words []uint64
	k     uint8
}

// New returns an empty filter for n keys at false-positive rate p, sized
// as Guava's BloomFilter.create(funnel, n, p) sizes it, so the two produce
// the same bit count and probe count for the same arguments.
func New(n uint64, p float64) (*Filter, error) {
	if !(p > 0 && p < 1) {
		return nil, fmt.Errorf("%w: rate %v must be between 0 and 1", ErrParams, p)
	}
	if n == 0 {
		n = 1
	}
	m, k := Estimate(n, p)
	return NewWithBits(m, k)
}

// Estimate returns the bits and probes Guava 31 chooses for n keys at rate
// p: m = ⌊-n·ln p / ln²2⌋ and k = max(1, round(m/n · ln 2)).
func Estimate(n uint64, p float64) (m uint64, k int) {
	m = uint64(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	k = max(1, int(math.Round(float64(m)/float64(n)*math.Ln2)))
	return m, k
}

// NewWithBits returns an empty filter of at least m bits (rounded up to
// whole 64-bit words, as Guava does) and k probes.
func NewWithBits(m uint64, k int) (*Filter, error) {
	if k < 1 || k > 255 {
		return nil, fmt.Errorf("%w: %d hash functions, Guava stores 1 to 255", ErrParams, k)
	}
	words := (m + 63) / 64
	if words == 0 || words > MaxWords {
		return nil, fmt.Errorf("%w: %d bits, Guava holds 64 to %d", ErrParams, m, uint64(MaxWords)*64)
	}
	return &Filter{words: make([]uint64, words), k: uint8(k)}, nil
}

// M is the number of bits, a multiple of 64.
func (f *Filter) M() uint64 { return uint64(len(f.words)) * 64 }

// K is the number of probes (Guava's numHashFunctions).
func (f *Filter) K() int { return int(f.k) }

// Add inserts key; it matches Java's put(key) with byteArrayFunnel().
func (f *Filter) Add(key []byte) { f.add(murmur3.Sum128(key)) }

// AddString inserts s; it matches Java's put(s) with stringFunnel(UTF_8).
func (f *Filter) AddString(s string) { f.add(murmur3.StringSum128(s)) }

// Test reports whether key may have been added (mightContain).
func (f *Filter) Test(key []byte) bool { return f.test(murmur3.Sum128(key)) }

// TestString reports whether s may have been added.
func (f *Filter) TestString(s string) bool { return f.test(murmur3.StringSum128(s)) }

func (f *Filter) add(h1, h2 uint64) {
	m := f.M()
	c := h1
	for range f.k {
		i := (c & math.MaxInt64) % m
		f.words[i/64] |= 1 << (i % 64)
		c += h2
	}
}

func (f *Filter) test(h1, h2 uint64) bool {
	m := f.M()
	c := h1
	for range f.k {
		i := (c & math.MaxInt64) % m
		if f.words[i/64]&(1<<(i%64)) == 0 {
			return false
		}
		c += h2
	}
	return true
}

// bitCount is the number of bits set.
func (f *Filter) bitCount() uint64 {
	var n uint64
	for _, w := range f.words {
		n += uint64(bits.OnesCount64(w))
	}
	return n
}

// FillRatio is the fraction of bits set.
func (f *Filter) FillRatio() float64 { return float64(f.bitCount()) / float64(f.M()) }

// ApproxCount estimates the number of distinct keys added, with Guava's
// approximateElementCount formula: -m/k · ln(1 - x/m). A full filter
// gives math.MaxUint64.
func (f *Filter) ApproxCount() uint64 {
	x, m := float64(f.bitCount()), float64(f.M())
	if x >= m {
		return math.MaxUint64
	}
	return uint64(math.Round(-m / float64(f.k) * math.Log1p(-x/m)))
}

// EstimatedFPR is the false-positive rate the filter has now, (x/m)^k, as
// Guava's expectedFpp.
func (f *Filter) EstimatedFPR() float64 { return math.Pow(f.FillRatio(), float64(f.k)) }

// Union adds every key of g to f; both must have the same size and k (as
// Guava's putAll requires).
func (f *Filter) Union(g *Filter) error {
	if len(f.words) != len(g.words) || f.k != g.k {
		return fmt.Errorf("%w: union of %d bits/%d probes with %d bits/%d probes", ErrParams, f.M(), f.k, g.M(), g.k)
	}
	for i, w := range g.words {
		f.words[i] |= w
	}
	return nil
}

// Size is the number of bytes WriteTo writes.
func (f *Filter) Size() int64 { return HeaderSize + 8*int64(len(f.words)) }

// WriteTo writes the filter as Guava's writeTo does; Java's
// BloomFilter.readFrom(in, funnel) reads it.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, StrategyMurmur128Mitz64, f.k)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(f.words)))
	var n int64
	for _, x := range f.words {
		if len(buf)+8 > cap(buf) {
			c, err := w.Write(buf)
			n += int64(c)
			if err != nil {
				return n, fmt.Errorf("guava: writing filter: %w", err)
			}
			buf = buf[:0]
		}
		buf = binary.BigEndian.AppendUint64(buf, x)
	}
	c, err := w.Write(buf)
	n += int64(c)
	if err != nil {
		return n, fmt.Errorf("guava: writing filter: %w", err)
	}
	return n, nil
}

// Read reads a filter written by Guava's writeTo (or by WriteTo). It reads
// exactly the filter's bytes. When r can tell its length (a bytes.Reader,
// a regular file), a header announcing more than r holds fails before
// anything is allocated; otherwise memory grows with the data read.
func Read(r io.Reader) (*Filter, error) {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, truncated(err, "header")
	}
	if hdr[0] != StrategyMurmur128Mitz64 {
		return nil, fmt.Errorf("%w: strategy ordinal %d", ErrStrategy, hdr[0])
	}
	k := hdr[1]
	n := binary.BigEndian.Uint32(hdr[2:])
	if k == 0 || n == 0 || n > MaxWords {
		return nil, fmt.Errorf("%w: %d hash functions, %d words", ErrCorrupt, k, n)
	}
	if avail, known := format.Remaining(r); known && avail < 8*int64(n) {
		return nil, fmt.Errorf("%w: %d bytes left, the header announces %d", ErrTruncated, avail, 8*int64(n))
	}
	const chunk = 8192
	words := make([]uint64, 0, min(int(n), 1<<17))
	buf := make([]byte, 8*chunk)
	for left := int(n); left > 0; {
		c := min(left, chunk)
		if _, err := io.ReadFull(r, buf[:8*c]); err != nil {
			return nil, truncated(err, "bit array")
		}
		for i := range c {
			words = append(words, binary.BigEndian.Uint64(buf[8*i:]))
		}
		left -= c
	}
	return &Filter{words: words, k: k}, nil
}

// Sniff reports whether b, the start of a file of size bytes, looks like a
// Guava filter: strategy 1, k ≥ 1 and a word count that matches the size.
func Sniff(b []byte, size int64) bool {
	if len(b) < HeaderSize || b[0] != StrategyMurmur128Mitz64 || b[1] == 0 {
		return false
	}
	n := int64(binary.BigEndian.Uint32(b[2:]))
	return n > 0 && size == HeaderSize+8*n
}

func truncated(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: in the %s", ErrTruncated, what)
	}
	return fmt.Errorf("guava: reading the %s: %w", what, err)
}
