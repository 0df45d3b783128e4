// Package format is the bloomkit file format shared by every filter type:
// an 80-byte header that names the format version, the filter type, the hash
// and the parameters and carries its own CRC-32C; a payload; and a CRC-32C
// trailer over everything before it. docs/format.md describes it for users;
// the filter packages re-export the error values.
package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// Magic is the first eight bytes of every bloomkit filter file.
const Magic = "bloomkit"

// Version is the format version written; every version up to it is read.
const Version = 1

// Hash ids: how keys are hashed and probe positions derived from the hash.
// Ids 1 and 2 hash keys with XXH3-128 and the header's seed; they differ in
// how the classic layout (Filter, Counting) derives its k positions. Id 4
// hashes keys with XXH3-64 and is the blocked layout's alone. Every other
// type but the split-block one has only id 1; that one has only id 3.
const (
	// HashXXH3 is hash id 1: for the classic layout, enhanced double
	// hashing of the two 64-bit halves, which is not independent enough at
	// small m (docs/format.md). Read and answered as before, never written
	// for a new classic filter.
	HashXXH3 = 1
	// HashXXH3Remix is hash id 2, the classic layout's: every probe
	// re-mixes the hash (docs/format.md).
	HashXXH3Remix = 2
	// HashXXH64 is hash id 3, Parquet's split-block Bloom filter's: XXH64
	// of the key with seed 0, the block from its high 32 bits, one bit in
	// each of the block's eight 32-bit words from its low 32 bits
	// (docs/format.md).
	HashXXH64 = 3
	// HashXXH3x64 is hash id 4, the blocked layout's for new filters:
	// XXH3-64 of the key with the seed, the block from the high bits of
	// its product with the block count and the probes from the hash as id
	// 1 takes them from the low half of XXH3-128 (docs/format.md).
	HashXXH3x64 = 4
	// HashMurmur2 is hash id 5, RedisBloom's Count-Min Sketch's and
	// Top-K's: the 32-bit MurmurHash2 of the item with the row number as
	// seed picks its counter in each row (Top-K's fingerprint is the same
	// hash with seed 1919).
	HashMurmur2 = 5
)

// HashKnown reports whether a file of type typ may carry hash id id.
func HashKnown(typ, id uint8) bool {
	if typ == TypeCMS || typ == TypeTopK || id == HashMurmur2 {
		return (typ == TypeCMS || typ == TypeTopK) && id == HashMurmur2
	}
	if typ == TypeSplitBlock || id == HashXXH64 {
		return typ == TypeSplitBlock && id == HashXXH64
	}
	if id == HashXXH3x64 {
		return typ == TypeBlocked
	}
	return id == HashXXH3 || id == HashXXH3Remix && (typ == TypeClassic || typ == TypeCounting)
}

// HeaderSize is the size of the fixed header in bytes.
const HeaderSize = 80

// MaxPayload is the largest payload a reader believes a header about:
// 1 TiB plus room for per-type metadata.
const MaxPayload = 1<<40 + 1<<20

// Filter types recorded in the header. Numbers are never reused.
const (
	TypeClassic  = 1 // bloom.Filter
	TypeBlocked  = 2 // bloom.Blocked
	TypeCounting = 3 // bloom.Counting
	TypeScalable = 4 // bloom.Scalable
	TypeWindow   = 5 // bloom.Window
	TypeCuckoo   = 6 // cuckoo.Filter
	TypeFrozen   = 7 // frozen.Filter (a binary fuse filter)
	// TypeSplitBlock is bloom.SplitBlock, Parquet's split-block Bloom
	// filter.
	TypeSplitBlock = 8
	TypeCMS        = 9  // cms.Sketch, a Count-Min Sketch
	TypeTopK       = 10 // topk.TopK, a HeavyKeeper Top-K
	// TypeTDigest is tdigest.Digest, a merging t-digest (not a filter:
	// it carries no hash; its header names hash id 1).
	TypeTDigest = 11
	// TypeRibbon is frozen.Ribbon, a standard ribbon filter (a static
	// set at any rate, like type 7 built once from every key).
	TypeRibbon = 12
)

// TypeName returns a short lower-case name for a filter type.
func TypeName(t uint8) string {
	switch t {
	case TypeClassic:
		return "classic"
	case TypeBlocked:
		return "blocked"
	case TypeCounting:
		return "counting"
	case TypeScalable:
		return "scalable"
	case TypeWindow:
		return "window"
	case TypeCuckoo:
		return "cuckoo"
	case TypeFrozen:
		return "frozen"
	case TypeSplitBlock:
		return "split-block"
	case TypeTDigest:
		return "t-digest"
	case TypeCMS:
		return "count-min sketch"
	case TypeTopK:
		return "top-k"
	case TypeRibbon:
		return "ribbon"
	}
	return fmt.Sprintf("unknown type %d", t)
}

// Errors for bad input; each kind of damage has its own.
var (
	ErrBadMagic  = errors.New("bloomkit: not a bloomkit filter (bad magic)")
	ErrVersion   = errors.New("bloomkit: unsupported format version")
	ErrType      = errors.New("bloomkit: wrong filter type")
	ErrHash      = errors.New("bloomkit: unknown hash function")
	ErrCorrupt   = errors.New("bloomkit: corrupt filter data")
	ErrChecksum  = errors.New("bloomkit: checksum mismatch")
	ErrTruncated = errors.New("bloomkit: truncated filter data")
	ErrTooLarge  = errors.New("bloomkit: filter too large")
	// ErrZero is what encoding, or adding to, the zero value of a filter
	// type returns: it holds no array and no parameters.
	ErrZero = errors.New("bloomkit: the zero value of a filter type holds nothing; make filters with a constructor or Read")
)

// Castagnoli is the CRC-32C table used for every checksum.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the decoded fixed header. The meaning of M, K, N and P is the
// filter type's: for Bloom filters bits, probes, planned items and rate.
type Header struct {
	Type       uint8
	Hash       uint8 // hash id; 0 is written as HashXXH3
	Seed       uint64
	M          uint64
	K          uint32
	N          uint64
	P          float64
	Count      uint64 // items added, for types that count them
	PayloadLen uint64 // bytes between header and trailer
}

// Marshal returns the 80 header bytes, header CRC included.
func (h *Header) Marshal() []byte {
	b := make([]byte, HeaderSize)
	copy(b, Magic)
	binary.LittleEndian.PutUint16(b[8:], Version)
	b[10] = h.Type
	b[11] = h.Hash
	if h.Hash == 0 {
		b[11] = HashXXH3
	}
	// b[12:16] flags, b[36:40] and b[76:80] reserved: zero in version 1.
	binary.LittleEndian.PutUint64(b[16:], h.Seed)
	binary.LittleEndian.PutUint64(b[24:], h.M)
	binary.LittleEndian.PutUint32(b[32:], h.K)
	binary.LittleEndian.PutUint64(b[40:], h.N)
	binary.LittleEndian.PutUint64(b[48:], math.Float64bits(h.P))
	binary.LittleEndian.PutUint64(b[56:], h.Count)
	binary.LittleEndian.PutUint64(b[64:], h.PayloadLen)
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], Castagnoli))
	return b
}

// ParseHeader decodes and checks 80 header bytes: magic, version, header
// CRC, hash id (one the type may carry, for the types it knows), flags,
// reserved bytes, the payload limit and the count (0 for the types that
// count no items).
func ParseHeader(b []byte) (Header, error) {
	h, err := parseHeader(b)
	if err != nil {
		return h, err
	}
	return h, h.checkFields()
}

// checkFields checks the fields whose meaning depends on the type: the
// hash id and the count.
func (h Header) checkFields() error {
	if err := h.checkHash(); err != nil {
		return err
	}
	return h.checkCount()
}

// checkCount fails with ErrCorrupt when a classic, blocked, window or
// split-block filter has a count. These types count no items, so no reader
// keeps the field: it would be lost when the filter is written back (and
// wrong after the first add if it were kept). The other types' counts are
// checked by their readers, which know what they mean.
func (h Header) checkCount() error {
	switch h.Type {
	case TypeClassic, TypeBlocked, TypeWindow, TypeSplitBlock:
		if h.Count != 0 {
			return fmt.Errorf("%w: a %s filter with count %d (it counts no keys: the field is 0)", ErrCorrupt, TypeName(h.Type), h.Count)
		}
	}
	return nil
}

// checkHash fails when a filter of a known type carries a hash id that type
// does not have.
func (h Header) checkHash() error {
	known := h.Type >= TypeClassic && h.Type <= TypeTopK || h.Type == TypeRibbon
	if known && !HashKnown(h.Type, h.Hash) {
		return fmt.Errorf("%w: hash id %d for a %s filter", ErrHash, h.Hash, TypeName(h.Type))
	}
	return nil
}

func parseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("%w: in the header", ErrTruncated)
	}
	if string(b[:8]) != Magic {
		return h, ErrBadMagic
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v == 0 || v > Version {
		return h, fmt.Errorf("%w: version %d, this build reads 1 to %d", ErrVersion, v, Version)
	}
	if got, want := binary.LittleEndian.Uint32(b[72:]), crc32.Checksum(b[:72], Castagnoli); got != want {
		return h, fmt.Errorf("%w: header CRC-32C is %#08x, want %#08x", ErrChecksum, got, want)
	}
	if b[11] < HashXXH3 || b[11] > HashMurmur2 {
		return h, fmt.Errorf("%w: hash id %d", ErrHash, b[11])
	}
	if flags := binary.LittleEndian.Uint32(b[12:]); flags != 0 {
		return h, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	if binary.LittleEndian.Uint32(b[36:]) != 0 || binary.LittleEndian.Uint32(b[76:]) != 0 {
		return h, fmt.Errorf("%w: reserved header bytes are not zero", ErrCorrupt)
	}
	h = Header{
		Type:       b[10],
		Hash:       b[11],
		Seed:       binary.LittleEndian.Uint64(b[16:]),
		M:          binary.LittleEndian.Uint64(b[24:]),
		K:          binary.LittleEndian.Uint32(b[32:]),
		N:          binary.LittleEndian.Uint64(b[40:]),
		P:          math.Float64frombits(binary.LittleEndian.Uint64(b[48:])),
		Count:      binary.LittleEndian.Uint64(b[56:]),
		PayloadLen: binary.LittleEndian.Uint64(b[64:]),
	}
	if h.PayloadLen > MaxPayload {
		return h, fmt.Errorf("%w: payload of %d bytes, the limit is %d", ErrTooLarge, h.PayloadLen, uint64(MaxPayload))
	}
	return h, nil
}

// ReadHeader reads and checks a header as ParseHeader does. If want is not
// 0 the header must be of that type.
func ReadHeader(r io.Reader, want uint8) (Header, error) {
	b := make([]byte, HeaderSize)
	if _, err := io.ReadFull(r, b); err != nil {
		return Header{}, Truncated(err, "header")
	}
	h, err := parseHeader(b)
	if err != nil {
		return h, err
	}
	if want != 0 && h.Type != want {
		return h, fmt.Errorf("%w: file holds a %s filter, want %s", ErrType, TypeName(h.Type), TypeName(want))
	}
	return h, h.checkFields()
}

// Truncated turns an EOF from reading what into ErrTruncated and wraps any
// other error with context.
func Truncated(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: in the %s", ErrTruncated, what)
	}
	return fmt.Errorf("bloomkit: reading the %s: %w", what, err)
}

// CRCWriter counts and checksums what passes through it.
type CRCWriter struct {
	W   io.Writer
	CRC uint32
	N   int64
}

func (c *CRCWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.CRC = crc32.Update(c.CRC, Castagnoli, p[:n])
	c.N += int64(n)
	return n, err
}

// WriteTrailer writes the CRC of everything written so far.
func (c *CRCWriter) WriteTrailer() error {
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], c.CRC)
	if _, err := c.Write(t[:]); err != nil {
		return fmt.Errorf("bloomkit: writing checksum: %w", err)
	}
	return nil
}

// CRCReader counts and checksums what passes through it.
type CRCReader struct {
	R   io.Reader
	CRC uint32
	N   int64
}

func (c *CRCReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.CRC = crc32.Update(c.CRC, Castagnoli, p[:n])
	c.N += int64(n)
	return n, err
}

// ReadTrailer reads the 4-byte trailer and checks it against the CRC of
// everything read before it.
func (c *CRCReader) ReadTrailer() error {
	sum := c.CRC
	var t [4]byte
	if _, err := io.ReadFull(c, t[:]); err != nil {
		return Truncated(err, "checksum")
	}
	if got := binary.LittleEndian.Uint32(t[:]); got != sum {
		return fmt.Errorf("%w: file CRC-32C is %#08x, data gives %#08x", ErrChecksum, got, sum)
	}
	return nil
}

// chunkWords is how many words are converted at a time: 64 KiB.
const chunkWords = 8192

// WriteWords writes words little-endian through a 64 KiB buffer.
func WriteWords(w io.Writer, words []uint64) error {
	buf := make([]byte, 8*min(len(words), chunkWords))
	for len(words) > 0 {
		n := min(len(words), chunkWords)
		for i, x := range words[:n] {
			binary.LittleEndian.PutUint64(buf[8*i:], x)
		}
		if _, err := w.Write(buf[:8*n]); err != nil {
			return fmt.Errorf("bloomkit: writing payload: %w", err)
		}
		words = words[n:]
	}
	return nil
}

// EagerBytes is the payload size up to which ReadWords allocates the whole
// payload at once even when the input's length is unknown. Above it, memory
// grows by doubling as the data arrives, so a forged header on a short
// stream costs at most this much (and a real payload at most twice its
// size while it is read).
const EagerBytes = 1 << 20

// ReadWords reads n little-endian words, allocating them with alloc (which
// must return n zeroed words). Unless known says the input is long enough,
// memory grows with the data actually read (doubling from EagerBytes), so a
// forged header on a short stream cannot make it allocate a huge slice.
func ReadWords(r io.Reader, n uint64, known bool, alloc func(uint64) []uint64) ([]uint64, error) {
	size := n
	if !known && n*8 > EagerBytes {
		size = EagerBytes / 8
	}
	words := alloc(size)
	buf := make([]byte, 8*min(n, chunkWords))
	var done uint64
	for done < n {
		c := min(n-done, chunkWords)
		if _, err := io.ReadFull(r, buf[:8*c]); err != nil {
			return nil, Truncated(err, "payload")
		}
		if done+c > uint64(len(words)) {
			bigger := alloc(min(n, 2*uint64(len(words))))
			copy(bigger, words)
			words = bigger
		}
		for i := range c {
			words[done+i] = binary.LittleEndian.Uint64(buf[8*i:])
		}
		done += c
	}
	return words, nil
}

// Remaining returns how many bytes r still holds, when r can tell.
func Remaining(r io.Reader) (int64, bool) {
	switch r := r.(type) {
	case interface{ Len() int }: // bytes.Reader, bytes.Buffer, strings.Reader
		return int64(r.Len()), true
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return 0, false
		}
		off, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return fi.Size() - off, true
	}
	return 0, false
}

// Prepend returns a reader of prefix followed by r. When Remaining can tell
// r's length, the result tells Remaining its own, so that a decoder given
// back the header it was shown still knows how much input there is (and
// refuses a header that announces more than that before allocating).
func Prepend(prefix []byte, r io.Reader) io.Reader {
	mr := io.MultiReader(bytes.NewReader(prefix), r)
	avail, known := Remaining(r)
	if !known {
		return mr
	}
	return &lenReader{r: mr, left: int64(len(prefix)) + avail}
}

// lenReader is a reader that knows how many bytes it holds.
type lenReader struct {
	r    io.Reader
	left int64
}

func (l *lenReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// Len returns the bytes not yet read (as bytes.Reader's Len does).
func (l *lenReader) Len() int { return int(min(max(l.left, 0), math.MaxInt)) }

// CheckAvailable fails with ErrTruncated when the input is known to hold
// fewer bytes than the payload and trailer that h announces.
func CheckAvailable(h Header, avail int64, known bool) error {
	if known && uint64(avail) < h.PayloadLen+4 {
		return fmt.Errorf("%w: %d bytes left, the header announces %d", ErrTruncated, avail, h.PayloadLen+4)
	}
	return nil
}

// WriteWordsFile writes a whole file whose payload is words.
func WriteWordsFile(w io.Writer, h Header, words []uint64) (int64, error) {
	cw := &CRCWriter{W: w}
	h.PayloadLen = uint64(len(words)) * 8
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("bloomkit: writing header: %w", err)
	}
	if err := WriteWords(cw, words); err != nil {
		return cw.N, err
	}
	return cw.N, cw.WriteTrailer()
}

// ReadWordsFile reads a whole file of type want whose payload is words: it
// checks the header, asks payloadWords how many words the header's
// parameters call for, reads them with ReadWords and checks the trailer. It
// never reads past the trailer.
func ReadWordsFile(r io.Reader, want uint8, payloadWords func(Header) (uint64, error), alloc func(uint64) []uint64) (Header, []uint64, int64, error) {
	avail, known := Remaining(r)
	cr := &CRCReader{R: r}
	h, err := ReadHeader(cr, want)
	if err != nil {
		return h, nil, cr.N, err
	}
	nw, err := payloadWords(h)
	if err != nil {
		return h, nil, cr.N, err
	}
	if h.PayloadLen != nw*8 {
		return h, nil, cr.N, fmt.Errorf("%w: payload of %d bytes, parameters call for %d", ErrCorrupt, h.PayloadLen, nw*8)
	}
	if err := CheckAvailable(h, avail-HeaderSize, known); err != nil {
		return h, nil, cr.N, err
	}
	words, err := ReadWords(cr, nw, known, alloc)
	if err != nil {
		return h, nil, cr.N, err
	}
	if err := cr.ReadTrailer(); err != nil {
		return h, nil, cr.N, err
	}
	return h, words, cr.N, nil
}
