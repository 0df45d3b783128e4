package tdigest

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/bloomkit/bloomkit/internal/format"
)

// The file format is the bloomkit format of docs/format.md, type 11: the
// 80-byte header (m = Capacity, p = compression, count = total weight), a
// payload of little-endian 64-bit words — merged | buffered<<32 (the node
// counts), compressions, merged weight, buffered weight, the bits of min
// and of max, then every node's mean (float64 bits) and every node's
// weight — and a CRC-32C of everything before it. The state is exact, the
// buffer included, so a digest read back evolves as the one written.

// TypeTDigest is the filter type of a t-digest in the file header.
const TypeTDigest = format.TypeTDigest

// Errors returned, wrapped with details, by ReadFrom and Read: the same
// values as the other bloomkit packages', so errors.Is works with any.
var (
	ErrBadMagic  = format.ErrBadMagic
	ErrVersion   = format.ErrVersion
	ErrType      = format.ErrType
	ErrHash      = format.ErrHash
	ErrCorrupt   = format.ErrCorrupt
	ErrChecksum  = format.ErrChecksum
	ErrTruncated = format.ErrTruncated
	ErrTooLarge  = format.ErrTooLarge
	ErrZero      = format.ErrZero
)

const metaWords = 6

func (d *Digest) words() []uint64 {
	n := d.merged + d.unmerged
	w := make([]uint64, 0, metaWords+2*n)
	w = append(w, uint64(d.merged)|uint64(d.unmerged)<<32, uint64(d.compressions),
		uint64(d.mergedW), uint64(d.unmergedW), math.Float64bits(d.min), math.Float64bits(d.max))
	for _, m := range d.mean[:n] {
		w = append(w, math.Float64bits(m))
	}
	for _, x := range d.weight[:n] {
		w = append(w, uint64(x))
	}
	return w
}

// WriteTo writes the digest to w in the bloomkit file format and returns
// the number of bytes written.
func (d *Digest) WriteTo(w io.Writer) (int64, error) {
	if d.capacity == 0 {
		return 0, ErrZero
	}
	h := format.Header{Type: TypeTDigest, M: uint64(d.capacity), P: d.compression, Count: uint64(d.Count())}
	return format.WriteWordsFile(w, h, d.words())
}

// Read reads one digest from r (see ReadFrom).
func Read(r io.Reader) (*Digest, error) {
	d := new(Digest)
	if _, err := d.ReadFrom(r); err != nil {
		return nil, err
	}
	return d, nil
}

func corrupt(f string, args ...any) error {
	return fmt.Errorf("%w: "+f, append([]any{ErrCorrupt}, args...)...)
}

func plainAlloc(n uint64) []uint64 { return make([]uint64, n) }

// ReadFrom replaces d with the digest read from r, reading exactly its
// bytes. On error d is unchanged and the error wraps one of ErrBadMagic,
// ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated or
// ErrTooLarge, or the reader's own error. It never allocates much more
// than the input holds.
func (d *Digest) ReadFrom(r io.Reader) (int64, error) {
	var h format.Header
	nodes := func(hd format.Header) (uint64, error) {
		h = hd
		c := hd.P
		if !(c >= 1 && c <= MaxCompression) {
			return 0, corrupt("compression %v", c)
		}
		if hd.M != uint64(Capacity(int(c))) {
			return 0, corrupt("capacity %d for compression %v", hd.M, c)
		}
		if hd.PayloadLen%16 != 0 || hd.PayloadLen < 8*metaWords || hd.PayloadLen > 8*(metaWords+2*hd.M) {
			return 0, corrupt("payload of %d bytes", hd.PayloadLen)
		}
		return hd.PayloadLen / 8, nil
	}
	g := new(Digest)
	_, w, n, err := format.ReadWordsFile(r, TypeTDigest, nodes, plainAlloc)
	if err != nil {
		return n, err
	}
	if err := g.fromWords(h, w); err != nil {
		return n, err
	}
	*d = *g
	return n, nil
}

func (d *Digest) fromWords(h format.Header, w []uint64) error {
	merged, unmerged := uint64(uint32(w[0])), uint64(uint32(w[0]>>32))
	nn := merged + unmerged
	if uint64(len(w)) != metaWords+2*nn {
		return corrupt("%d nodes in a payload of %d words", nn, len(w))
	}
	s := State{Compression: h.P, Capacity: int(h.M), Min: math.Float64frombits(w[4]), Max: math.Float64frombits(w[5]),
		MergedNodes: int(merged), Compressions: int64(w[1]), Means: make([]float64, nn), Weights: make([]int64, nn)}
	for i := range nn {
		s.Means[i] = math.Float64frombits(w[metaWords+i])
		s.Weights[i] = int64(w[metaWords+nn+i])
	}
	g, err := FromState(s)
	if err != nil {
		return err
	}
	if uint64(g.mergedW) != w[2] || uint64(g.unmergedW) != w[3] || uint64(g.Count()) != h.Count {
		return corrupt("node weights sum to %d and %d, the counters say %d and %d (count %d)", g.mergedW, g.unmergedW, w[2], w[3], h.Count)
	}
	*d = *g
	return nil
}

// MarshalBinary returns the digest in the bloomkit file format
// (encoding.BinaryMarshaler; gob uses it too).
func (d *Digest) MarshalBinary() ([]byte, error) {
	if d.capacity == 0 {
		return nil, ErrZero
	}
	var b bytes.Buffer
	if _, err := d.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalBinary replaces d with the digest encoded in data, which must
// hold exactly one (encoding.BinaryUnmarshaler). On error d is unchanged.
func (d *Digest) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(d, new(Digest), data)
}

// MarshalJSON returns the digest file as a JSON string in base64
// (json.Marshaler).
func (d *Digest) MarshalJSON() ([]byte, error) { return format.MarshalJSON(d.MarshalBinary) }

// UnmarshalJSON replaces d with the digest in a string MarshalJSON wrote
// (json.Unmarshaler).
func (d *Digest) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("tdigest", data, d.UnmarshalBinary)
}
