package cms

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/bloomkit/bloomkit/internal/format"
)

// The file is the bloomkit format of docs/format.md, type 9 (TypeCMS),
// hash id 5 (HashMurmur2): the 80-byte header with m = width, n = depth and
// count = the sum of increments (k and p are 0); a payload of one
// little-endian 64-bit word of flags (bit 0: Conservative), then the
// width × depth counters, row after row, as little-endian 32-bit words,
// padded with zeros to a multiple of 8 bytes; and the CRC-32C trailer.

// TypeCMS is a Count-Min Sketch's type in the file header.
const TypeCMS = format.TypeCMS

// HashMurmur2 is the only hash id a sketch's file carries.
const HashMurmur2 = format.HashMurmur2

// Errors returned, wrapped with details, by ReadFrom and Read: the same
// values as every bloomkit package's, so errors.Is works with any.
var (
	ErrBadMagic  = format.ErrBadMagic  // not a bloomkit file
	ErrVersion   = format.ErrVersion   // written by a newer format version
	ErrType      = format.ErrType      // the file holds another type
	ErrHash      = format.ErrHash      // an unknown hash id
	ErrCorrupt   = format.ErrCorrupt   // fields contradict each other or the payload
	ErrChecksum  = format.ErrChecksum  // a CRC-32C did not match
	ErrTruncated = format.ErrTruncated // the data ended early
	ErrTooLarge  = format.ErrTooLarge  // more than MaxCells counters
	ErrZero      = format.ErrZero      // a zero Sketch, not made by New or Read
)

const flagConservative = 1

func payloadLen(cells uint64) uint64 { return 8 + (4*cells+7)&^7 }

// WriteTo writes the sketch in the bloomkit file format and returns the
// bytes written.
func (s *Sketch) WriteTo(w io.Writer) (int64, error) {
	if s.counters == nil {
		return 0, ErrZero
	}
	cw := &format.CRCWriter{W: w}
	h := format.Header{Type: TypeCMS, Hash: HashMurmur2, M: s.width, N: s.depth, Count: s.count,
		PayloadLen: payloadLen(uint64(len(s.counters)))}
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("cms: writing header: %w", err)
	}
	var flags uint64
	if s.Conservative {
		flags |= flagConservative
	}
	buf := binary.LittleEndian.AppendUint64(make([]byte, 0, 64<<10), flags)
	for i, c := range s.counters {
		buf = binary.LittleEndian.AppendUint32(buf, c)
		if len(buf) == cap(buf) || i == len(s.counters)-1 {
			if i == len(s.counters)-1 && len(buf)%8 != 0 {
				buf = append(buf, 0, 0, 0, 0)
			}
			if _, err := cw.Write(buf); err != nil {
				return cw.N, fmt.Errorf("cms: writing counters: %w", err)
			}
			buf = buf[:0]
		}
	}
	return cw.N, cw.WriteTrailer()
}

// Read reads one sketch from r (see ReadFrom).
func Read(r io.Reader) (*Sketch, error) {
	s := new(Sketch)
	if _, err := s.ReadFrom(r); err != nil {
		return nil, err
	}
	return s, nil
}

// ReadFrom replaces s with the sketch read from r, reading exactly its
// bytes. On error s is unchanged and the error wraps one of ErrBadMagic,
// ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated or
// ErrTooLarge, or the reader's own. It never allocates much more than the
// input holds: when r's length is unknown, the counters grow as they
// arrive.
func (s *Sketch) ReadFrom(r io.Reader) (int64, error) {
	avail, known := format.Remaining(r)
	cr := &format.CRCReader{R: r}
	g, err := read(cr, avail, known)
	if err != nil {
		return cr.N, err
	}
	*s = *g
	return cr.N, nil
}

func read(cr *format.CRCReader, avail int64, known bool) (*Sketch, error) {
	h, err := format.ReadHeader(cr, TypeCMS)
	if err != nil {
		return nil, err
	}
	switch {
	case h.M < 1 || h.N < 1:
		return nil, fmt.Errorf("%w: width %d, depth %d", ErrCorrupt, h.M, h.N)
	case h.M > MaxCells/h.N:
		return nil, fmt.Errorf("%w: %d × %d counters, the limit is %d", ErrTooLarge, h.M, h.N, uint64(MaxCells))
	case h.K != 0 || h.P != 0 || h.Seed != 0:
		return nil, fmt.Errorf("%w: k, p and seed must be 0 in a sketch's header", ErrCorrupt)
	case h.PayloadLen != payloadLen(h.M*h.N):
		return nil, fmt.Errorf("%w: payload of %d bytes for %d × %d counters", ErrCorrupt, h.PayloadLen, h.M, h.N)
	}
	if err := format.CheckAvailable(h, avail-format.HeaderSize, known); err != nil {
		return nil, err
	}
	var fw [8]byte
	if _, err := io.ReadFull(cr, fw[:]); err != nil {
		return nil, format.Truncated(err, "flags")
	}
	flags := binary.LittleEndian.Uint64(fw[:])
	if flags&^flagConservative != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	cells := h.M * h.N
	counters, err := readCounters(cr, cells, known)
	if err != nil {
		return nil, err
	}
	if cells%2 == 1 {
		var pad [4]byte
		if _, err := io.ReadFull(cr, pad[:]); err != nil {
			return nil, format.Truncated(err, "payload")
		}
		if pad != [4]byte{} {
			return nil, fmt.Errorf("%w: padding is not zero", ErrCorrupt)
		}
	}
	if err := cr.ReadTrailer(); err != nil {
		return nil, err
	}
	return &Sketch{width: h.M, depth: h.N, count: h.Count, counters: counters,
		Conservative: flags&flagConservative != 0}, nil
}

// readCounters reads n little-endian 32-bit counters. Unless the input is
// known to hold them, the slice grows (doubling from format.EagerBytes) as
// the data arrives.
func readCounters(r io.Reader, n uint64, known bool) ([]uint32, error) {
	size := n
	if !known && 4*n > format.EagerBytes {
		size = format.EagerBytes / 4
	}
	out := make([]uint32, size)
	buf := make([]byte, 4*min(n, 16<<10))
	var done uint64
	for done < n {
		c := min(n-done, uint64(len(buf)/4))
		if _, err := io.ReadFull(r, buf[:4*c]); err != nil {
			return nil, format.Truncated(err, "counters")
		}
		if done+c > uint64(len(out)) {
			bigger := make([]uint32, min(n, 2*uint64(len(out))))
			copy(bigger, out)
			out = bigger
		}
		for i := range c {
			out[done+i] = binary.LittleEndian.Uint32(buf[4*i:])
		}
		done += c
	}
	return out, nil
}

// MarshalBinary returns the sketch's bloomkit file
// (encoding.BinaryMarshaler; gob uses it too).
func (s *Sketch) MarshalBinary() ([]byte, error) {
	if s.counters == nil {
		return nil, ErrZero
	}
	var b bytes.Buffer
	b.Grow(int(format.HeaderSize + payloadLen(uint64(len(s.counters))) + 4))
	if _, err := s.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalBinary replaces s with the sketch in data, which must hold
// exactly one (encoding.BinaryUnmarshaler). On error s is unchanged.
func (s *Sketch) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(s, new(Sketch), data)
}

// MarshalJSON returns the sketch's file as a base64 JSON string.
func (s *Sketch) MarshalJSON() ([]byte, error) { return format.MarshalJSON(s.MarshalBinary) }

// UnmarshalJSON replaces s with the sketch in a string MarshalJSON wrote.
func (s *Sketch) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("cms", data, s.UnmarshalBinary)
}
