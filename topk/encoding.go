package topk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/bloomkit/bloomkit/internal/format"
)

// The file is the bloomkit format of docs/format.md, type 10 (TypeTopK),
// hash id 5 (HashMurmur2): the 80-byte header with m = width, k = depth,
// n = the k of the TopK, p = decay (seed and count 0); a payload of
// little-endian 64-bit words — flags (0), the random generator's state,
// one word per bucket (fingerprint in the low half, count in the high),
// then per heap slot one word (fingerprint low, count high), one word of
// item length + 1 (0: an empty slot) and the item's bytes padded with
// zeros to whole words —; and the CRC-32C trailer.

// TypeTopK is a TopK's type in the file header.
const TypeTopK = format.TypeTopK

// HashMurmur2 is the only hash id a TopK's file carries.
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
	ErrTooLarge  = format.ErrTooLarge  // more than MaxBuckets buckets
	ErrZero      = format.ErrZero      // a zero TopK, not made by New or Read
)

// Slot is one place of the heap of the heaviest items; Item is nil while
// the slot is empty.
type Slot struct {
	Fingerprint uint32
	Count       uint32
	Item        []byte
}

// State is a TopK's whole state, for codecs of other formats (RedisBloom's
// RDB encoding): the slices are the TopK's own, not copies.
type State struct {
	K, Width, Depth uint32
	Decay           float64
	Buckets         []Bucket // row after row
	Heap            []Slot   // the min-heap, in heap order
	RNG             uint64   // the random generator's state
}

// State returns t's state (sharing t's buckets).
func (t *TopK) State() State {
	st := State{K: t.k, Width: t.width, Depth: t.depth, Decay: t.decay, Buckets: t.buckets, RNG: t.rng}
	st.Heap = make([]Slot, len(t.heap))
	for i, s := range t.heap {
		st.Heap[i] = Slot{s.fp, s.count, s.item}
	}
	return st
}

// FromState returns the TopK st describes (it keeps st's slices).
func FromState(st State) (*TopK, error) {
	if err := checkParams(st.K, st.Width, st.Depth, st.Decay); err != nil {
		return nil, err
	}
	if uint64(len(st.Buckets)) != uint64(st.Width)*uint64(st.Depth) || uint64(len(st.Heap)) != uint64(st.K) {
		return nil, fmt.Errorf("%w: %d buckets and %d slots for k %d, %d × %d", ErrCorrupt, len(st.Buckets), len(st.Heap), st.K, st.Width, st.Depth)
	}
	t := &TopK{k: st.K, width: st.Width, depth: st.Depth, decay: st.Decay, buckets: st.Buckets, rng: st.RNG,
		heap: make([]slot, st.K)}
	for i, s := range st.Heap {
		t.heap[i] = slot{s.Fingerprint, s.Count, s.Item}
	}
	t.fillLookup()
	return t, nil
}

func (t *TopK) payloadLen() uint64 {
	n := 8 * (2 + uint64(len(t.buckets)) + 2*uint64(len(t.heap)))
	for _, s := range t.heap {
		n += (uint64(len(s.item)) + 7) &^ 7
	}
	return n
}

// WriteTo writes t in the bloomkit file format and returns the bytes
// written.
func (t *TopK) WriteTo(w io.Writer) (int64, error) {
	if t.heap == nil {
		return 0, ErrZero
	}
	cw := &format.CRCWriter{W: w}
	h := format.Header{Type: TypeTopK, Hash: HashMurmur2, M: uint64(t.width), K: t.depth, N: uint64(t.k), P: t.decay,
		PayloadLen: t.payloadLen()}
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("topk: writing header: %w", err)
	}
	buf := make([]byte, 0, 64<<10)
	flush := func(force bool) error {
		if len(buf) >= 60<<10 || force {
			if _, err := cw.Write(buf); err != nil {
				return fmt.Errorf("topk: writing payload: %w", err)
			}
			buf = buf[:0]
		}
		return nil
	}
	buf = binary.LittleEndian.AppendUint64(buf, 0)
	buf = binary.LittleEndian.AppendUint64(buf, t.rng)
	for _, b := range t.buckets {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(b.Fingerprint)|uint64(b.Count)<<32)
		if err := flush(false); err != nil {
			return cw.N, err
		}
	}
	for _, s := range t.heap {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(s.fp)|uint64(s.count)<<32)
		var l uint64
		if s.item != nil {
			l = uint64(len(s.item)) + 1
		}
		buf = binary.LittleEndian.AppendUint64(buf, l)
		if err := flush(false); err != nil {
			return cw.N, err
		}
		for rest := s.item; len(rest) > 0; {
			n := min(len(rest), cap(buf)-len(buf))
			buf = append(buf, rest[:n]...)
			rest = rest[n:]
			if err := flush(len(buf) == cap(buf)); err != nil {
				return cw.N, err
			}
		}
		for len(buf)%8 != 0 {
			buf = append(buf, 0)
		}
	}
	if err := flush(true); err != nil {
		return cw.N, err
	}
	return cw.N, cw.WriteTrailer()
}

// Read reads one TopK from r (see ReadFrom).
func Read(r io.Reader) (*TopK, error) {
	t := new(TopK)
	if _, err := t.ReadFrom(r); err != nil {
		return nil, err
	}
	return t, nil
}

// ReadFrom replaces t with the TopK read from r, reading exactly its
// bytes. On error t is unchanged and the error wraps one of ErrBadMagic,
// ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated or
// ErrTooLarge, or the reader's own. It never allocates much more than the
// input holds.
func (t *TopK) ReadFrom(r io.Reader) (int64, error) {
	avail, known := format.Remaining(r)
	cr := &format.CRCReader{R: r}
	g, err := read(cr, avail, known)
	if err != nil {
		return cr.N, err
	}
	*t = *g
	return cr.N, nil
}

func read(cr *format.CRCReader, avail int64, known bool) (*TopK, error) {
	h, err := format.ReadHeader(cr, TypeTopK)
	if err != nil {
		return nil, err
	}
	switch {
	case h.M < 1 || h.M > math.MaxUint32 || h.K < 1 || h.N < 1 || h.N > math.MaxUint32 || !(h.P > 0 && h.P <= 1):
		return nil, fmt.Errorf("%w: k %d, width %d, depth %d, decay %v", ErrCorrupt, h.N, h.M, h.K, h.P)
	case h.M*uint64(h.K) > MaxBuckets:
		return nil, fmt.Errorf("%w: %d × %d buckets", ErrTooLarge, h.M, h.K)
	case h.Seed != 0 || h.Count != 0:
		return nil, fmt.Errorf("%w: seed and count must be 0 in a TopK's header", ErrCorrupt)
	case h.PayloadLen%8 != 0 || h.PayloadLen < 8*(2+h.M*uint64(h.K)+2*h.N):
		return nil, fmt.Errorf("%w: payload of %d bytes", ErrCorrupt, h.PayloadLen)
	}
	if err := format.CheckAvailable(h, avail-format.HeaderSize, known); err != nil {
		return nil, err
	}
	left := h.PayloadLen
	word := func() (uint64, error) {
		var b [8]byte
		if _, err := io.ReadFull(cr, b[:]); err != nil {
			return 0, format.Truncated(err, "payload")
		}
		left -= 8
		return binary.LittleEndian.Uint64(b[:]), nil
	}
	flags, err := word()
	if err != nil {
		return nil, err
	}
	if flags != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	rng, err := word()
	if err != nil {
		return nil, err
	}
	nb := h.M * uint64(h.K)
	words, err := format.ReadWords(cr, nb, known, func(n uint64) []uint64 { return make([]uint64, n) })
	if err != nil {
		return nil, err
	}
	left -= 8 * nb
	buckets := make([]Bucket, nb)
	for i, w := range words {
		buckets[i] = Bucket{uint32(w), uint32(w >> 32)}
	}
	words = nil
	heap := make([]Slot, 0, min(h.N, left/16))
	for range h.N {
		fc, err := word()
		if err != nil {
			return nil, err
		}
		l, err := word()
		if err != nil {
			return nil, err
		}
		s := Slot{Fingerprint: uint32(fc), Count: uint32(fc >> 32)}
		if l > 0 {
			padded := (l - 1 + 7) &^ 7
			if l-1 > left || padded > left {
				return nil, fmt.Errorf("%w: an item of %d bytes with %d left", ErrCorrupt, l-1, left)
			}
			b := make([]byte, padded)
			if _, err := io.ReadFull(cr, b); err != nil {
				return nil, format.Truncated(err, "items")
			}
			left -= padded
			for _, x := range b[l-1:] {
				if x != 0 {
					return nil, fmt.Errorf("%w: padding is not zero", ErrCorrupt)
				}
			}
			s.Item = b[: l-1 : l-1]
		}
		heap = append(heap, s)
	}
	if left != 0 {
		return nil, fmt.Errorf("%w: %d payload bytes after the heap", ErrCorrupt, left)
	}
	if err := cr.ReadTrailer(); err != nil {
		return nil, err
	}
	return FromState(State{K: uint32(h.N), Width: uint32(h.M), Depth: h.K, Decay: h.P, Buckets: buckets, Heap: heap, RNG: rng})
}

// MarshalBinary returns t's bloomkit file (encoding.BinaryMarshaler; gob
// uses it too).
func (t *TopK) MarshalBinary() ([]byte, error) {
	if t.heap == nil {
		return nil, ErrZero
	}
	var b bytes.Buffer
	b.Grow(int(format.HeaderSize + t.payloadLen() + 4))
	if _, err := t.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalBinary replaces t with the TopK in data, which must hold exactly
// one (encoding.BinaryUnmarshaler). On error t is unchanged.
func (t *TopK) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(t, new(TopK), data)
}

// MarshalJSON returns t's file as a base64 JSON string.
func (t *TopK) MarshalJSON() ([]byte, error) { return format.MarshalJSON(t.MarshalBinary) }

// UnmarshalJSON replaces t with the TopK in a string MarshalJSON wrote.
func (t *TopK) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("topk", data, t.UnmarshalBinary)
}
