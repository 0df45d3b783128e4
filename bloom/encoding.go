package bloom

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

// The file format is described in docs/format.md. In short: an 80-byte
// little-endian header that names the format version, the filter type, the
// hash and every parameter and carries its own CRC-32C; the payload; and a
// CRC-32C of everything before it.

// Magic is the first eight bytes of every bloomkit filter file.
const Magic = "bloomkit"

// FormatVersion is the version of the file format this package writes. It
// reads every version up to and including it.
const FormatVersion = 1

// Filter types, as recorded in the file header.
const (
	TypeClassic = 1 // Filter
	TypeBlocked = 2 // Blocked
)

const headerSize = 80

// Errors returned, wrapped with details, by ReadFrom and UnmarshalBinary.
// Each kind of bad input has its own, so callers can tell them apart with
// errors.Is.
var (
	// ErrBadMagic: the data does not start with Magic; it is not a filter.
	ErrBadMagic = errors.New("bloom: not a bloomkit filter (bad magic)")
	// ErrVersion: the file was written by a newer format version.
	ErrVersion = errors.New("bloom: unsupported format version")
	// ErrType: the file holds another type of filter than the one asked for,
	// or one this version does not know.
	ErrType = errors.New("bloom: wrong filter type")
	// ErrHash: the file names a hash function this version does not know.
	ErrHash = errors.New("bloom: unknown hash function")
	// ErrCorrupt: the header checksum matched but its fields contradict each
	// other or the payload (bits set beyond m, trailing data).
	ErrCorrupt = errors.New("bloom: corrupt filter data")
	// ErrChecksum: a CRC-32C did not match: the data was damaged.
	ErrChecksum = errors.New("bloom: checksum mismatch")
	// ErrTruncated: the data ended before the filter did.
	ErrTruncated = errors.New("bloom: truncated filter data")
	// ErrTooLarge: the header declares a filter above MaxBits.
	ErrTooLarge = errors.New("bloom: filter too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded fixed header of a filter file.
type header struct {
	typ        uint8
	params     Params
	count      uint64 // items added, for types that count them; 0 otherwise
	payloadLen uint64 // bytes
}

func (h *header) marshal() []byte {
	b := make([]byte, headerSize)
	copy(b, Magic)
	binary.LittleEndian.PutUint16(b[8:], FormatVersion)
	b[10] = h.typ
	b[11] = HashXXH3
	// b[12:16] flags, b[36:40] and b[76:80] reserved: zero in version 1.
	binary.LittleEndian.PutUint64(b[16:], h.params.Seed)
	binary.LittleEndian.PutUint64(b[24:], h.params.M)
	binary.LittleEndian.PutUint32(b[32:], h.params.K)
	binary.LittleEndian.PutUint64(b[40:], h.params.N)
	binary.LittleEndian.PutUint64(b[48:], math.Float64bits(h.params.P))
	binary.LittleEndian.PutUint64(b[56:], h.count)
	binary.LittleEndian.PutUint64(b[64:], h.payloadLen)
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], castagnoli))
	return b
}

func unmarshalHeader(b []byte) (header, error) {
	var h header
	if string(b[:8]) != Magic {
		return h, ErrBadMagic
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v == 0 || v > FormatVersion {
		return h, fmt.Errorf("%w: version %d, this build reads 1 to %d", ErrVersion, v, FormatVersion)
	}
	if got, want := binary.LittleEndian.Uint32(b[72:]), crc32.Checksum(b[:72], castagnoli); got != want {
		return h, fmt.Errorf("%w: header CRC-32C is %#08x, want %#08x", ErrChecksum, got, want)
	}
	h.typ = b[10]
	if b[11] != HashXXH3 {
		return h, fmt.Errorf("%w: hash id %d", ErrHash, b[11])
	}
	if flags := binary.LittleEndian.Uint32(b[12:]); flags != 0 {
		return h, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	if binary.LittleEndian.Uint32(b[36:]) != 0 || binary.LittleEndian.Uint32(b[76:]) != 0 {
		return h, fmt.Errorf("%w: reserved header bytes are not zero", ErrCorrupt)
	}
	h.params = Params{
		Seed: binary.LittleEndian.Uint64(b[16:]),
		M:    binary.LittleEndian.Uint64(b[24:]),
		K:    binary.LittleEndian.Uint32(b[32:]),
		N:    binary.LittleEndian.Uint64(b[40:]),
		P:    math.Float64frombits(binary.LittleEndian.Uint64(b[48:])),
	}
	h.count = binary.LittleEndian.Uint64(b[56:])
	h.payloadLen = binary.LittleEndian.Uint64(b[64:])
	if h.params.M > MaxBits {
		return h, fmt.Errorf("%w: m = %d bits, the limit is %d", ErrTooLarge, h.params.M, uint64(MaxBits))
	}
	return h, nil
}

// readHeader reads and checks the header of a filter of type want.
func readHeader(r io.Reader, want uint8) (header, []byte, error) {
	b := make([]byte, headerSize)
	if _, err := io.ReadFull(r, b); err != nil {
		return header{}, nil, truncated(err, "header")
	}
	h, err := unmarshalHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.typ != want {
		return h, nil, fmt.Errorf("%w: file holds type %d, want %d", ErrType, h.typ, want)
	}
	return h, b, nil
}

func truncated(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: in the %s", ErrTruncated, what)
	}
	return fmt.Errorf("bloom: reading the %s: %w", what, err)
}

// crcWriter counts and checksums what passes through it.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// crcReader counts and checksums what passes through it.
type crcReader struct {
	r   io.Reader
	crc uint32
	n   int64
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// chunkWords is how many words are converted to bytes at a time when
// streaming a payload: 64 KiB.
const chunkWords = 8192

// writeFilter streams header, words and trailer to w.
func writeFilter(w io.Writer, h header, words []uint64) (int64, error) {
	cw := &crcWriter{w: w}
	h.payloadLen = uint64(len(words)) * 8
	if _, err := cw.Write(h.marshal()); err != nil {
		return cw.n, fmt.Errorf("bloom: writing header: %w", err)
	}
	if err := writeWords(cw, words); err != nil {
		return cw.n, err
	}
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], cw.crc)
	if _, err := cw.Write(t[:]); err != nil {
		return cw.n, fmt.Errorf("bloom: writing checksum: %w", err)
	}
	return cw.n, nil
}

func writeWords(w io.Writer, words []uint64) error {
	buf := make([]byte, 8*min(len(words), chunkWords))
	for len(words) > 0 {
		n := min(len(words), chunkWords)
		for i, x := range words[:n] {
			binary.LittleEndian.PutUint64(buf[8*i:], x)
		}
		if _, err := w.Write(buf[:8*n]); err != nil {
			return fmt.Errorf("bloom: writing payload: %w", err)
		}
		words = words[n:]
	}
	return nil
}

// readFilter reads a whole filter of type want from r: header, payload and
// trailer. It checks the header, asks payloadWords how many words the
// parameters call for, allocates them with alloc (which must return zeroed
// words) and checks the trailing checksum. It never reads past the trailer.
func readFilter(r io.Reader, want uint8, payloadWords func(Params) (uint64, error), alloc func(uint64) []uint64) (header, []uint64, int64, error) {
	avail, known := remaining(r)
	cr := &crcReader{r: r}
	h, _, err := readHeader(cr, want)
	if err != nil {
		return h, nil, cr.n, err
	}
	nw, err := payloadWords(h.params)
	if err != nil {
		return h, nil, cr.n, err
	}
	if h.payloadLen != nw*8 {
		return h, nil, cr.n, fmt.Errorf("%w: payload of %d bytes, parameters call for %d", ErrCorrupt, h.payloadLen, nw*8)
	}
	if known && uint64(avail) < headerSize+h.payloadLen+4 {
		return h, nil, cr.n, fmt.Errorf("%w: %d bytes left, the header announces %d", ErrTruncated, avail, headerSize+h.payloadLen+4)
	}
	words, err := readWords(cr, nw, known, alloc)
	if err != nil {
		return h, nil, cr.n, err
	}
	sum := cr.crc
	var t [4]byte
	if _, err := io.ReadFull(cr, t[:]); err != nil {
		return h, nil, cr.n, truncated(err, "checksum")
	}
	if got := binary.LittleEndian.Uint32(t[:]); got != sum {
		return h, nil, cr.n, fmt.Errorf("%w: file CRC-32C is %#08x, data gives %#08x", ErrChecksum, got, sum)
	}
	return h, words, cr.n, nil
}

// eagerBytes is the payload size up to which readWords allocates the whole
// payload at once even when the length of the input is unknown.
const eagerBytes = 64 << 20

// readWords reads n little-endian words. When the input's length is not
// known in advance, memory grows with the data actually read (doubling), so
// a forged header on a short stream cannot make it allocate a huge slice.
func readWords(r io.Reader, n uint64, known bool, alloc func(uint64) []uint64) ([]uint64, error) {
	size := n
	if !known && n*8 > eagerBytes {
		size = eagerBytes / 8
	}
	words := alloc(size)
	buf := make([]byte, 8*min(n, chunkWords))
	var done uint64
	for done < n {
		c := min(n-done, chunkWords)
		if _, err := io.ReadFull(r, buf[:8*c]); err != nil {
			return nil, truncated(err, "payload")
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

// remaining returns how many bytes r still holds, when r can tell.
func remaining(r io.Reader) (int64, bool) {
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

func plainAlloc(n uint64) []uint64 { return make([]uint64, n) }

func classicWords(p Params) (uint64, error) {
	if err := p.validate(false); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return (p.M + 63) / 64, nil
}

func blockedWords(p Params) (uint64, error) {
	if err := p.validate(true); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return p.M / BlockBits * 8, nil
}

// unmarshalAll decodes data with readFrom and insists it is used up.
func unmarshalAll(data []byte, readFrom func(io.Reader) (int64, error)) error {
	r := bytes.NewReader(data)
	if _, err := readFrom(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, r.Len())
	}
	return nil
}

func marshal(size uint64, writeTo func(io.Writer) (int64, error)) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(headerSize + size + 4))
	if _, err := writeTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteTo writes the filter to w in the bloomkit file format, streaming: it
// needs no second copy of the filter in memory. It returns the number of
// bytes written.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	return writeFilter(w, header{typ: TypeClassic, params: f.params}, f.words)
}

// ReadFrom replaces f with the classic filter read from r, reading exactly
// the filter's bytes. On error f is unchanged and the error wraps one of
// ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum,
// ErrTruncated or ErrTooLarge, or the reader's own error.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := readFilter(r, TypeClassic, classicWords, plainAlloc)
	if err != nil {
		return n, err
	}
	if extra := h.params.M % 64; extra != 0 && words[len(words)-1]>>extra != 0 {
		return n, fmt.Errorf("%w: bits set beyond m = %d", ErrCorrupt, h.params.M)
	}
	f.words, f.params = words, h.params
	return n, nil
}

// MarshalBinary returns the filter in the bloomkit file format.
func (f *Filter) MarshalBinary() ([]byte, error) {
	return marshal(uint64(len(f.words))*8, f.WriteTo)
}

// UnmarshalBinary replaces f with the classic filter encoded in data, which
// must hold exactly one filter. Errors are as for ReadFrom.
func (f *Filter) UnmarshalBinary(data []byte) error {
	var g Filter
	if err := unmarshalAll(data, g.ReadFrom); err != nil {
		return err
	}
	*f = g
	return nil
}

// WriteTo writes the filter to w in the bloomkit file format, streaming.
func (f *Blocked) WriteTo(w io.Writer) (int64, error) {
	return writeFilter(w, header{typ: TypeBlocked, params: f.params}, f.words)
}

// ReadFrom replaces f with the blocked filter read from r. Errors are as
// for Filter.ReadFrom.
func (f *Blocked) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := readFilter(r, TypeBlocked, blockedWords, alignedWords)
	if err != nil {
		return n, err
	}
	f.words, f.blocks, f.params = words, h.params.M/BlockBits, h.params
	return n, nil
}

// MarshalBinary returns the filter in the bloomkit file format.
func (f *Blocked) MarshalBinary() ([]byte, error) {
	return marshal(uint64(len(f.words))*8, f.WriteTo)
}

// UnmarshalBinary replaces f with the blocked filter encoded in data.
func (f *Blocked) UnmarshalBinary(data []byte) error {
	var g Blocked
	if err := unmarshalAll(data, g.ReadFrom); err != nil {
		return err
	}
	*f = g
	return nil
}
