// Package frozen holds sets that never change once built — a blacklist
// rebuilt nightly, the words of a dictionary — as binary fuse filters:
// about 9.0 bits a key for a 0.39% false-positive rate (8-bit
// fingerprints) or 18.1 bits for 0.0015% (16-bit), where a classic Bloom
// filter needs 11.5 and 23.2, and a lookup reads three fixed places. The
// price: every key must be known at build time, and nothing can be added
// afterwards.
//
// Ribbon is the other frozen set: a standard ribbon filter (Dillinger and
// Walzer, 2021) at any rate p from 1/2 down to 2^-32, for about
// 1.05 × log2(1/p) bits a key from a million keys on (7.0 bits at 1%,
// 10.4 at 0.1%; the bound is log2(1/p): 6.6 and 10.0), within 10% of the
// bound from 1e-1 to 1e-7. Its lookups cost about twice the fuse filter's
// (bench/RIBBON.md). Build it with NewRibbonBuilder or BuildRibbon.
//
// The fuse construction is github.com/FastFilter/xorfilter's; the ribbon
// is this package's own. Both hash keys with XXH3-64 and the filter's seed
// and are saved in bloomkit's file envelope (versioned, checksummed;
// docs/format.md, types 7 and 12), so bloom.Read, `bloom info` and `bloom
// test` read them like any other bloomkit filter.
package frozen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/FastFilter/xorfilter"
	"github.com/zeebo/xxh3"

	"github.com/bloomkit/bloomkit/internal/format"
)

// Errors: the envelope's, shared with the bloom package, and ErrParams.
var (
	ErrCorrupt   = format.ErrCorrupt
	ErrTruncated = format.ErrTruncated
	ErrParams    = errors.New("frozen: invalid parameters")
	// ErrZero: the Filter is a zero value, not built or read; it tests
	// every key absent and cannot be written.
	ErrZero = format.ErrZero
)

// MaxKeys is the most keys a filter holds: the fuse construction indexes
// them with 32 bits.
const MaxKeys = math.MaxUint32 / 2

// paramsSize is the payload's fixed part: fuse seed, segment length, mask,
// count and count×length.
const paramsSize = 24

// Filter is an immutable set of keys with a false-positive rate of
// 2^-Bits. It is safe for concurrent use.
type Filter struct {
	seed  uint64 // key hash seed
	bits  int    // fingerprint bits: 8 or 16
	count uint64 // keys given to Build (duplicates included)
	f8    *xorfilter.BinaryFuse[uint8]
	f16   *xorfilter.BinaryFuse[uint16]
}

// Hash64 is the 64-bit hash of key that a filter with this seed stores a
// fingerprint of (XXH3-64 with the seed), for TestHash. Its arguments are
// in the order of bloom.Hash's.
func Hash64(seed uint64, key []byte) uint64 { return xxh3.HashSeed(key, seed) }

// Hash64String is Hash64 for a string key, without copying it.
func Hash64String(seed uint64, key string) uint64 { return xxh3.HashStringSeed(key, seed) }

// Hash is Hash64 with its arguments the other way round.
//
// Deprecated: use Hash64(seed, key), whose arguments are in the order of
// bloom.Hash's; Hash(key, seed) and bloom.Hash(seed, key) were easy to
// confuse.
func Hash(key []byte, seed uint64) uint64 { return Hash64(seed, key) }

// Builder collects the keys of a filter: 8 bytes a key (their hashes).
// It keeps them across Build: more keys may be added and Build called
// again for a filter of all of them. The zero value builds 8-bit
// fingerprints with seed 0; NewBuilder chooses.
type Builder struct {
	seed   uint64
	bits   int
	hashes []uint64
}

// NewBuilder starts a filter with fingerprints of bits bits (8 or 16) and
// the key hash seed seed (bloom.RandomSeed gives a secret one).
func NewBuilder(bits int, seed uint64) (*Builder, error) {
	if bits != 8 && bits != 16 {
		return nil, fmt.Errorf("%w: %d-bit fingerprints, want 8 or 16", ErrParams, bits)
	}
	return &Builder{seed: seed, bits: bits}, nil
}

// Add adds key to the set being built.
func (b *Builder) Add(key []byte) { b.hashes = append(b.hashes, Hash64(b.seed, key)) }

// AddString adds s.
func (b *Builder) AddString(s string) { b.hashes = append(b.hashes, Hash64String(b.seed, s)) }

// Len is the number of keys added so far (duplicates included).
func (b *Builder) Len() int { return len(b.hashes) }

// Build makes the filter of every key added so far. Duplicate keys are
// allowed.
func (b *Builder) Build() (*Filter, error) {
	if uint64(len(b.hashes)) > MaxKeys {
		return nil, fmt.Errorf("%w: %d keys, at most %d", ErrParams, len(b.hashes), uint64(MaxKeys))
	}
	if b.bits == 0 {
		b.bits = 8 // the zero Builder
	}
	f := &Filter{seed: b.seed, bits: b.bits, count: uint64(len(b.hashes))}
	hashes := b.hashes
	// The construction sizes the filter by the number of hashes it is
	// given, duplicates included: removing them first (by sorting, which
	// also makes the result independent of the keys' order) keeps a list
	// with repeated lines at the size of its distinct keys. It costs about
	// as much CPU as the construction itself (bench/RESULTS.md's insert
	// column, bloomkit frozen against FastFilter BinaryFuse8).
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	b.hashes = hashes // kept, sorted and distinct, for a later Build
	if len(hashes) == 0 {
		return f, nil
	}
	var err error
	if f.bits == 8 {
		f.f8, err = xorfilter.NewBinaryFuse[uint8](hashes)
	} else {
		f.f16, err = xorfilter.NewBinaryFuse[uint16](hashes)
	}
	if err != nil {
		return nil, fmt.Errorf("frozen: building the fuse filter of %d keys: %w", len(hashes), err)
	}
	return f, nil
}

// Build makes a filter of keys with bits-bit fingerprints and seed.
func Build(keys [][]byte, bits int, seed uint64) (*Filter, error) {
	b, err := NewBuilder(bits, seed)
	if err != nil {
		return nil, err
	}
	b.hashes = make([]uint64, 0, len(keys))
	for _, k := range keys {
		b.Add(k)
	}
	return b.Build()
}

// Test reports whether key is (probably) in the set: always true for a key
// it was built with, true for another key with probability 2^-Bits.
func (f *Filter) Test(key []byte) bool { return f.TestHash(Hash64(f.seed, key)) }

// TestString reports whether s is (probably) in the set.
func (f *Filter) TestString(s string) bool { return f.TestHash(Hash64String(f.seed, s)) }

// TestHash tests a key by its Hash64.
func (f *Filter) TestHash(h uint64) bool {
	switch {
	case f.f8 != nil:
		return f.f8.Contains(h)
	case f.f16 != nil:
		return f.f16.Contains(h)
	}
	return false
}

// Bits is the fingerprint size, 8 or 16.
func (f *Filter) Bits() int { return f.bits }

// Seed is the key hash seed.
func (f *Filter) Seed() uint64 { return f.seed }

// Len is the number of keys the filter was built from (duplicates
// included).
func (f *Filter) Len() uint64 { return f.count }

// ApproxCount is the number of keys the filter was built from: exact, for
// a frozen set.
func (f *Filter) ApproxCount() uint64 { return f.count }

// EstimatedFPR is the false-positive rate, 2^-Bits (0 when empty).
func (f *Filter) EstimatedFPR() float64 {
	if f.slots() == 0 {
		return 0
	}
	return math.Ldexp(1, -f.bits)
}

// slots is the number of fingerprints.
func (f *Filter) slots() uint64 {
	switch {
	case f.f8 != nil:
		return uint64(len(f.f8.Fingerprints))
	case f.f16 != nil:
		return uint64(len(f.f16.Fingerprints))
	}
	return 0
}

// SizeBits is the memory of the fingerprints in bits; SizeBits/Len is the
// cost a key.
func (f *Filter) SizeBits() uint64 { return f.slots() * uint64(f.bits) }

// header is the envelope header: M the fingerprints, K their bits, N the
// keys, P the rate.
func (f *Filter) header() format.Header {
	return format.Header{Type: format.TypeFrozen, Seed: f.seed, M: f.slots(), K: uint32(f.bits),
		N: f.count, P: f.EstimatedFPR(), Count: f.count, PayloadLen: f.payloadLen()}
}

func (f *Filter) payloadLen() uint64 {
	if f.slots() == 0 {
		return 0
	}
	return paramsSize + f.slots()*uint64(f.bits/8)
}

// WriteTo writes the filter as a bloomkit file of type frozen.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	if f.bits == 0 {
		return 0, ErrZero
	}
	cw := &format.CRCWriter{W: w}
	h := f.header()
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("frozen: writing header: %w", err)
	}
	if f.slots() > 0 {
		var p [paramsSize]byte
		seed, sl, mask, sc, scl := f.params()
		binary.LittleEndian.PutUint64(p[0:], seed)
		binary.LittleEndian.PutUint32(p[8:], sl)
		binary.LittleEndian.PutUint32(p[12:], mask)
		binary.LittleEndian.PutUint32(p[16:], sc)
		binary.LittleEndian.PutUint32(p[20:], scl)
		if _, err := cw.Write(p[:]); err != nil {
			return cw.N, fmt.Errorf("frozen: writing payload: %w", err)
		}
		buf := make([]byte, 0, 64<<10)
		flush := func() error {
			_, err := cw.Write(buf)
			buf = buf[:0]
			if err != nil {
				return fmt.Errorf("frozen: writing payload: %w", err)
			}
			return nil
		}
		if f.f8 != nil {
			for fp := range slices.Chunk(f.f8.Fingerprints, cap(buf)) {
				buf = append(buf, fp...)
				if err := flush(); err != nil {
					return cw.N, err
				}
			}
		} else {
			for _, fp := range f.f16.Fingerprints {
				if len(buf)+2 > cap(buf) {
					if err := flush(); err != nil {
						return cw.N, err
					}
				}
				buf = binary.LittleEndian.AppendUint16(buf, fp)
			}
			if err := flush(); err != nil {
				return cw.N, err
			}
		}
	}
	return cw.N, cw.WriteTrailer()
}

func (f *Filter) params() (seed uint64, sl, mask, sc, scl uint32) {
	if f.f8 != nil {
		return f.f8.Seed, f.f8.SegmentLength, f.f8.SegmentLengthMask, f.f8.SegmentCount, f.f8.SegmentCountLength
	}
	return f.f16.Seed, f.f16.SegmentLength, f.f16.SegmentLengthMask, f.f16.SegmentCount, f.f16.SegmentCountLength
}

// ReadFrom replaces f with the frozen filter file read from r. Errors are
// the envelope's (bloom.ErrBadMagic, ErrChecksum, ErrTruncated, ...), and
// ErrCorrupt for fuse parameters that do not fit the fingerprints (which
// could make a lookup read out of bounds).
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	avail, known := format.Remaining(r)
	cr := &format.CRCReader{R: r}
	h, err := format.ReadHeader(cr, format.TypeFrozen)
	if err != nil {
		return cr.N, err
	}
	if h.K != 8 && h.K != 16 {
		return cr.N, fmt.Errorf("%w: %d-bit fingerprints", ErrCorrupt, h.K)
	}
	if h.M > math.MaxUint32 || (h.M == 0) != (h.PayloadLen == 0) ||
		(h.M != 0 && h.PayloadLen != paramsSize+h.M*uint64(h.K/8)) || h.Count > MaxKeys {
		return cr.N, fmt.Errorf("%w: %d fingerprints in a payload of %d bytes", ErrCorrupt, h.M, h.PayloadLen)
	}
	if err := format.CheckAvailable(h, avail-format.HeaderSize, known); err != nil {
		return cr.N, err
	}
	g := Filter{seed: h.Seed, bits: int(h.K), count: h.Count}
	if h.M > 0 {
		var p [paramsSize]byte
		if _, err := io.ReadFull(cr, p[:]); err != nil {
			return cr.N, format.Truncated(err, "payload")
		}
		seed := binary.LittleEndian.Uint64(p[0:])
		sl, mask := binary.LittleEndian.Uint32(p[8:]), binary.LittleEndian.Uint32(p[12:])
		sc, scl := binary.LittleEndian.Uint32(p[16:]), binary.LittleEndian.Uint32(p[20:])
		// Contains reads index h0 < scl, h1 < h0+2sl and h2 < h0+3sl:
		// the fingerprints must be exactly (sc+2)·sl long.
		if sl == 0 || sl&(sl-1) != 0 || mask != sl-1 || sc == 0 ||
			uint64(scl) != uint64(sc)*uint64(sl) || h.M != (uint64(sc)+2)*uint64(sl) {
			return cr.N, fmt.Errorf("%w: fuse segments (length %d, mask %d, count %d, %d) do not fit %d fingerprints",
				ErrCorrupt, sl, mask, sc, scl, h.M)
		}
		buf, err := readBytes(cr, h.M*uint64(h.K/8), known)
		if err != nil {
			return cr.N, err
		}
		if h.K == 8 {
			g.f8 = &xorfilter.BinaryFuse[uint8]{Seed: seed, SegmentLength: sl, SegmentLengthMask: mask,
				SegmentCount: sc, SegmentCountLength: scl, Fingerprints: buf}
		} else {
			fps := make([]uint16, h.M)
			for i := range fps {
				fps[i] = binary.LittleEndian.Uint16(buf[2*i:])
			}
			g.f16 = &xorfilter.BinaryFuse[uint16]{Seed: seed, SegmentLength: sl, SegmentLengthMask: mask,
				SegmentCount: sc, SegmentCountLength: scl, Fingerprints: fps}
		}
	}
	if err := cr.ReadTrailer(); err != nil {
		return cr.N, err
	}
	*f = g
	return cr.N, nil
}

// readBytes reads n bytes; unless known says the input holds them, memory
// grows with what arrives (from format.EagerBytes), so a forged header on
// a short stream cannot make it allocate much.
func readBytes(r io.Reader, n uint64, known bool) ([]byte, error) {
	if known || n <= format.EagerBytes {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, format.Truncated(err, "payload")
		}
		return buf, nil
	}
	buf := make([]byte, 0, format.EagerBytes)
	for uint64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(int(n)-len(buf), cap(buf)))
		}
		c := min(uint64(cap(buf)), n) - uint64(len(buf))
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+int(c)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, format.Truncated(err, "payload")
		}
	}
	return buf, nil
}

// Read reads a frozen filter file.
func Read(r io.Reader) (*Filter, error) {
	f := new(Filter)
	if _, err := f.ReadFrom(r); err != nil {
		return nil, err
	}
	return f, nil
}
