package bloom

import (
	"fmt"
	"io"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/mem"
)

// The file format is described in docs/format.md. In short: an 80-byte
// little-endian header that names the format version, the filter type, the
// hash and every parameter and carries its own CRC-32C; the payload; and a
// CRC-32C of everything before it.

// Magic is the first eight bytes of every bloomkit filter file.
const Magic = format.Magic

// FormatVersion is the version of the file format this package writes. It
// reads every version up to and including it.
const FormatVersion = format.Version

// Filter types, as recorded in the file header.
const (
	TypeClassic = format.TypeClassic // Filter
	TypeBlocked = format.TypeBlocked // Blocked
)

const headerSize = format.HeaderSize

// Errors returned, wrapped with details, by ReadFrom and Read.
// Each kind of bad input has its own, so callers can tell them apart with
// errors.Is. The cuckoo package returns the same values.
var (
	// ErrBadMagic: the data does not start with Magic; it is not a filter.
	ErrBadMagic = format.ErrBadMagic
	// ErrVersion: the file was written by a newer format version.
	ErrVersion = format.ErrVersion
	// ErrType: the file holds another type of filter than the one asked for,
	// or one this version does not know.
	ErrType = format.ErrType
	// ErrHash: the file names a hash function this version does not know.
	ErrHash = format.ErrHash
	// ErrCorrupt: the header checksum matched but its fields contradict each
	// other or the payload (bits set beyond m, trailing data).
	ErrCorrupt = format.ErrCorrupt
	// ErrChecksum: a CRC-32C did not match: the data was damaged.
	ErrChecksum = format.ErrChecksum
	// ErrTruncated: the data ended before the filter did.
	ErrTruncated = format.ErrTruncated
	// ErrTooLarge: the header declares a filter above MaxBits.
	ErrTooLarge = format.ErrTooLarge
	// ErrZero: the filter is a zero value, not made by a constructor or
	// read from a file: it holds nothing, tests every key absent, and
	// cannot be written or encoded.
	ErrZero = format.ErrZero
)

// headerParams returns the Bloom parameters a header records, checking the
// size limit.
func headerParams(h format.Header) (Params, error) {
	p := Params{Seed: h.Seed, M: h.M, K: h.K, N: h.N, P: h.P, Hash: h.Hash}
	if p.M > MaxBits {
		return p, fmt.Errorf("%w: m = %d bits, the limit is %d", ErrTooLarge, p.M, uint64(MaxBits))
	}
	return p, nil
}

func paramsHeader(typ uint8, p Params) format.Header {
	return format.Header{Type: typ, Hash: p.Hash, Seed: p.Seed, M: p.M, K: p.K, N: p.N, P: p.P}
}

func plainAlloc(n uint64) []uint64 { return mem.Words(n) }

func classicWords(h format.Header) (uint64, error) {
	p, err := headerParams(h)
	if err != nil {
		return 0, err
	}
	if _, err := p.validate(false); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return (p.M + 63) / 64, nil
}

func blockedWords(h format.Header) (uint64, error) {
	p, err := headerParams(h)
	if err != nil {
		return 0, err
	}
	if _, err := p.validate(true); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return p.M / BlockBits * 8, nil
}

// WriteTo writes the filter to w in the bloomkit file format, streaming: it
// needs no second copy of the filter in memory. It returns the number of
// bytes written.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	if f.words == nil {
		return 0, ErrZero
	}
	return format.WriteWordsFile(w, paramsHeader(TypeClassic, f.params), f.words)
}

// ReadFrom replaces f with the classic filter read from r, reading exactly
// the filter's bytes. On error f is unchanged and the error wraps one of
// ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum,
// ErrTruncated or ErrTooLarge, or the reader's own error.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := format.ReadWordsFile(r, TypeClassic, classicWords, plainAlloc)
	if err != nil {
		return n, err
	}
	p, _ := headerParams(h)
	if extra := p.M % 64; extra != 0 && words[len(words)-1]>>extra != 0 {
		return n, fmt.Errorf("%w: bits set beyond m = %d", ErrCorrupt, p.M)
	}
	f.words, f.params = words, p
	return n, nil
}

// WriteTo writes the filter to w in the bloomkit file format, streaming.
func (f *Blocked) WriteTo(w io.Writer) (int64, error) {
	if f.words == nil {
		return 0, ErrZero
	}
	return format.WriteWordsFile(w, paramsHeader(TypeBlocked, f.params), f.words)
}

// ReadFrom replaces f with the blocked filter read from r. Errors are as
// for Filter.ReadFrom.
func (f *Blocked) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := format.ReadWordsFile(r, TypeBlocked, blockedWords, alignedWords)
	if err != nil {
		return n, err
	}
	p, _ := headerParams(h)
	f.words, f.blocks, f.params = words, p.M/BlockBits, p
	f.setFast()
	return n, nil
}
