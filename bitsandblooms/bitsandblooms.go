// Package bitsandblooms reads, writes, tests and adds to Bloom filters in
// the byte format of github.com/bits-and-blooms/bloom/v3's
// BloomFilter.WriteTo, the most used Go Bloom filter library, so that its
// users can move filters to and from bloomkit without rebuilding them.
//
// The format (big-endian, bitset's default byte order):
//
//	uint64  m, the number of bits a key's probes range over
//	uint64  k, the number of probes
//	uint64  the bit set's length in bits (m for filters made by New)
//	uint64× the bit set's words, ⌈length/64⌉ of them; bit i is bit i%64 of word i/64
//
// A key's probes are locations (h[i%2] + i·h[2+((i+i%2)%4)/2]) mod m for i
// in [0, k), where h[0], h[1] are MurmurHash3_x64_128 of the key and h[2],
// h[3] that of the key followed by one byte 1 (the library's baseHashes).
// There is no magic number and no checksum. Filters written after the
// program called bitset.LittleEndian() have little-endian fields and are
// not read.
package bitsandblooms

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

// HeaderSize is the size of the three fields before the words.
const HeaderSize = 24

// MaxBits is the largest filter read: 2^43 bits (1 TiB), as bloomkit's own
// files.
const MaxBits = 1 << 43

// Errors for bad input.
var (
	ErrCorrupt   = errors.New("bitsandblooms: corrupt filter data")
	ErrTruncated = errors.New("bitsandblooms: truncated filter data")
	ErrParams    = errors.New("bitsandblooms: invalid parameters")
)

// Filter is a Bloom filter with bits-and-blooms' layout and hashing. It is
// not safe for concurrent use with Add.
type Filter struct {
	m, k   uint64
	length uint64 // the bit set's length, ≥ m
	words  []uint64
}

// New returns an empty filter of m bits and k probes, as bloom.New(m, k)
// (which makes m and k at least 1).
func New(m, k uint64) (*Filter, error) {
	m, k = max(m, 1), max(k, 1)
	if m > MaxBits || k > 1<<16 {
		return nil, fmt.Errorf("%w: m=%d k=%d (at most %d bits and 65536 probes)", ErrParams, m, k, uint64(MaxBits))
	}
	return &Filter{m: m, k: k, length: m, words: make([]uint64, (m+63)/64)}, nil
}

// Estimate returns m and k as bloom.EstimateParameters(n, p) does:
// m = ⌈-n·ln p / ln²2⌉, k = ⌈ln 2 · m/n⌉.
func Estimate(n uint64, p float64) (m, k uint64) {
	m = uint64(math.Ceil(-1 * float64(n) * math.Log(p) / math.Pow(math.Log(2), 2)))
	k = uint64(math.Ceil(math.Log(2) * float64(m) / float64(n)))
	return m, k
}

// NewWithEstimates returns an empty filter for n keys at rate p, sized as
// bloom.NewWithEstimates(n, p).
func NewWithEstimates(n uint64, p float64) (*Filter, error) {
	if !(p > 0 && p < 1) || n == 0 {
		return nil, fmt.Errorf("%w: n=%d p=%v", ErrParams, n, p)
	}
	return New(Estimate(n, p))
}

// M is the number of bits.
func (f *Filter) M() uint64 { return f.m }

// K is the number of probes.
func (f *Filter) K() uint64 { return f.k }

// baseHashes is the library's baseHashes: MurmurHash3_x64_128 of key and
// of key followed by a 1 byte.
func baseHashes(key []byte) [4]uint64 {
	var h [4]uint64
	h[0], h[1] = murmur3.Sum128(key)
	var buf [128]byte
	ext := buf[:0]
	if len(key) >= len(buf) {
		ext = make([]byte, 0, len(key)+1)
	}
	ext = append(append(ext, key...), 1)
	h[2], h[3] = murmur3.Sum128(ext)
	return h
}

func (f *Filter) location(h *[4]uint64, i uint64) uint64 {
	return (h[i%2] + i*h[2+(((i+(i%2))%4)/2)]) % f.m
}

// Add inserts key, as the library's Add.
func (f *Filter) Add(key []byte) {
	h := baseHashes(key)
	for i := range f.k {
		l := f.location(&h, i)
		f.words[l/64] |= 1 << (l % 64)
	}
}

// AddString inserts s, as the library's AddString.
func (f *Filter) AddString(s string) { f.Add([]byte(s)) }

// Test reports whether key may have been added, as the library's Test.
func (f *Filter) Test(key []byte) bool {
	h := baseHashes(key)
	for i := range f.k {
		l := f.location(&h, i)
		if l >= f.length || f.words[l/64]&(1<<(l%64)) == 0 {
			return false
		}
	}
	return true
}

// TestString reports whether s may have been added.
func (f *Filter) TestString(s string) bool { return f.Test([]byte(s)) }

func (f *Filter) bitCount() uint64 {
	var n uint64
	for _, w := range f.words {
		n += uint64(bits.OnesCount64(w))
	}
	return n
}

// FillRatio is the fraction of the m bits that are set.
func (f *Filter) FillRatio() float64 { return float64(f.bitCount()) / float64(f.m) }

// ApproxCount estimates the number of distinct keys added, as the
// library's ApproximatedSize: -m/k · ln(1 - x/m). A full filter gives
// math.MaxUint64.
func (f *Filter) ApproxCount() uint64 {
	x, m := float64(f.bitCount()), float64(f.m)
	if x >= m {
		return math.MaxUint64
	}
	return uint64(math.Floor(-m / float64(f.k) * math.Log1p(-x/m)))
}

// EstimatedFPR is the false-positive rate the filter has now: (x/m)^k.
func (f *Filter) EstimatedFPR() float64 { return math.Pow(f.FillRatio(), float64(f.k)) }

// Size is the number of bytes WriteTo writes.
func (f *Filter) Size() int64 { return HeaderSize + 8*int64(len(f.words)) }

// WriteTo writes the filter as the library's WriteTo does; its ReadFrom
// reads it.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 0, 64<<10)
	buf = binary.BigEndian.AppendUint64(buf, f.m)
	buf = binary.BigEndian.AppendUint64(buf, f.k)
	buf = binary.BigEndian.AppendUint64(buf, f.length)
	var n int64
	flush := func() error {
		c, err := w.Write(buf)
		n += int64(c)
		buf = buf[:0]
		if err != nil {
			return fmt.Errorf("bitsandblooms: writing filter: %w", err)
		}
		return nil
	}
	for _, x := range f.words {
		if len(buf)+8 > cap(buf) {
			if err := flush(); err != nil {
				return n, err
			}
		}
		buf = binary.BigEndian.AppendUint64(buf, x)
	}
	return n, flush()
}

// Read reads a filter written by the library's WriteTo (or by WriteTo). It
// reads exactly the filter's bytes. When r can tell its length, a header
// announcing more than r holds fails before anything is allocated;
// otherwise memory grows with the data read.
func Read(r io.Reader) (*Filter, error) {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, truncated(err, "header")
	}
	m, k, length := binary.BigEndian.Uint64(hdr[0:]), binary.BigEndian.Uint64(hdr[8:]), binary.BigEndian.Uint64(hdr[16:])
	if m == 0 || k == 0 || k > 1<<16 || length < m || length > MaxBits {
		return nil, fmt.Errorf("%w: m=%d k=%d bit set length %d", ErrCorrupt, m, k, length)
	}
	n := (length + 63) / 64
	if avail, known := format.Remaining(r); known && uint64(avail) < 8*n {
		return nil, fmt.Errorf("%w: %d bytes left, the header announces %d", ErrTruncated, avail, 8*n)
	}
	const chunk = 8192
	words := make([]uint64, 0, min(n, 1<<17))
	buf := make([]byte, 8*chunk)
	for left := n; left > 0; {
		c := min(left, chunk)
		if _, err := io.ReadFull(r, buf[:8*c]); err != nil {
			return nil, truncated(err, "bit set")
		}
		for i := range c {
			words = append(words, binary.BigEndian.Uint64(buf[8*i:]))
		}
		left -= c
	}
	return &Filter{m: m, k: k, length: length, words: words}, nil
}

// Sniff reports whether b, the start of a file of size bytes, looks like a
// bits-and-blooms filter: plausible m and k and a length that matches the
// size.
func Sniff(b []byte, size int64) bool {
	if len(b) < HeaderSize {
		return false
	}
	m, k, length := binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:])
	return m > 0 && k > 0 && k <= 1<<16 && length >= m && length <= MaxBits &&
		uint64(size) == HeaderSize+8*((length+63)/64)
}

func truncated(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: in the %s", ErrTruncated, what)
	}
	return fmt.Errorf("bitsandblooms: reading the %s: %w", what, err)
}
