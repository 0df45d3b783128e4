package bloom

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/bloomkit/bloomkit/internal/format"
)

// A split-block filter is stored three ways: in the bloomkit file format
// (WriteTo, ReadFrom, Read), whose payload is the Parquet bitset; as the
// bare bitset (AppendBitset, SplitBlockFromBitset); and as a Parquet
// column chunk's Bloom filter data, the Thrift BloomFilterHeader followed
// by the bitset (WriteParquet, ReadParquet).

func splitBlockWords(h format.Header) (uint64, error) {
	p := Params{Seed: h.Seed, M: h.M, K: h.K, N: h.N, P: h.P, Hash: h.Hash}
	if p.M > SplitBlockMaxBytes*8 {
		return 0, fmt.Errorf("%w: m = %d bits, a split-block filter has at most %d", ErrTooLarge, p.M, SplitBlockMaxBytes*8)
	}
	if _, err := p.validateSplitBlock(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return p.M / 64, nil
}

// WriteTo writes the filter to w in the bloomkit file format, streaming.
// The payload is the Parquet bitset.
func (f *SplitBlock) WriteTo(w io.Writer) (int64, error) {
	if f.words == nil {
		return 0, ErrZero
	}
	return format.WriteWordsFile(w, paramsHeader(TypeSplitBlock, f.params), f.words)
}

// ReadFrom replaces f with the split-block filter read from r, in the
// bloomkit file format. Errors are as for Filter.ReadFrom.
func (f *SplitBlock) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := format.ReadWordsFile(r, TypeSplitBlock, splitBlockWords, alignedWords)
	if err != nil {
		return n, err
	}
	f.words, f.blocks = words, h.M/SplitBlockBits
	f.params = Params{M: h.M, K: h.K, N: h.N, P: h.P, Hash: h.Hash}
	return n, nil
}

// MarshalBinary returns the filter in the bloomkit file format.
func (f *SplitBlock) MarshalBinary() ([]byte, error) { return format.MarshalBinary(f) }

// UnmarshalBinary replaces f with the split-block filter encoded in data
// (see Filter.UnmarshalBinary).
func (f *SplitBlock) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(f, new(SplitBlock), data)
}

// MarshalJSON returns the filter file as a JSON string in base64.
func (f *SplitBlock) MarshalJSON() ([]byte, error) { return format.MarshalJSON(f.MarshalBinary) }

// UnmarshalJSON replaces f with the filter in a string MarshalJSON wrote.
func (f *SplitBlock) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("bloom", data, f.UnmarshalBinary)
}

// AppendBitset appends the filter's Parquet bitset to dst and returns the
// extended slice: Len() bytes, the blocks in order, each 32-bit word
// little-endian. Pass dst[:0] of a reused slice to avoid allocating.
func (f *SplitBlock) AppendBitset(dst []byte) []byte {
	for _, w := range f.words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst
}

// SplitBlockFromBitset returns a split-block filter holding a copy of a
// Parquet bitset (what follows the BloomFilterHeader in a column chunk's
// Bloom filter data). Its length must be a multiple of 32 bytes from 32 to
// 128 MiB; otherwise the error wraps ErrCorrupt, or ErrTooLarge above 128
// MiB. The filter's plan (Params N and P) is unknown, 0.
func SplitBlockFromBitset(bitset []byte) (*SplitBlock, error) {
	n := uint64(len(bitset))
	if err := checkBitsetLen(n); err != nil {
		return nil, err
	}
	f, _ := NewSplitBlockFromParams(Params{M: n * 8})
	for i := range f.words {
		f.words[i] = binary.LittleEndian.Uint64(bitset[8*i:])
	}
	return f, nil
}

func checkBitsetLen(n uint64) error {
	switch {
	case n > SplitBlockMaxBytes:
		return fmt.Errorf("%w: a bitset of %d bytes, a split-block filter has at most %d", ErrTooLarge, n, SplitBlockMaxBytes)
	case n == 0 || n%SplitBlockMinBytes != 0:
		return fmt.Errorf("%w: a bitset of %d bytes is not a whole number of %d-byte blocks", ErrCorrupt, n, SplitBlockMinBytes)
	}
	return nil
}

// Thrift compact protocol field types used by BloomFilterHeader.
const (
	thriftStop   = 0
	thriftTrue   = 1
	thriftFalse  = 2
	thriftByte   = 3
	thriftI16    = 4
	thriftI32    = 5
	thriftI64    = 6
	thriftDouble = 7
	thriftBinary = 8
	thriftList   = 9
	thriftSet    = 10
	thriftMap    = 11
	thriftStruct = 12
	thriftUUID   = 13
)

// parquetHeaderTail is a BloomFilterHeader after its numBytes field, in
// the Thrift compact protocol: algorithm = BLOCK, hash = XXHASH,
// compression = UNCOMPRESSED (each a union whose field 1 is an empty
// struct), and the header's stop byte.
var parquetHeaderTail = []byte{
	0x1c, 0x1c, 0x00, 0x00, // field 2 (struct): field 1 (struct) {}, stop
	0x1c, 0x1c, 0x00, 0x00, // field 3
	0x1c, 0x1c, 0x00, 0x00, // field 4
	0x00,
}

// WriteParquet writes the filter as a Parquet column chunk's Bloom filter
// data: the Thrift (compact protocol) BloomFilterHeader, saying numBytes =
// Len(), algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED, followed
// by the bitset. The count it returns is the column's bloom_filter_length.
func (f *SplitBlock) WriteParquet(w io.Writer) (int64, error) {
	if f.words == nil {
		return 0, ErrZero
	}
	hdr := []byte{0x15} // field 1, i32
	n := int64(f.Len())
	hdr = binary.AppendUvarint(hdr, uint64(n<<1^n>>63)) // zigzag
	hdr = append(hdr, parquetHeaderTail...)
	k, err := w.Write(hdr)
	if err != nil {
		return int64(k), fmt.Errorf("bloomkit: writing the Parquet Bloom filter header: %w", err)
	}
	if err := format.WriteWords(w, f.words); err != nil {
		return int64(k), err
	}
	return int64(k) + n, nil
}

// maxParquetHeader bounds the BloomFilterHeader ReadParquet reads: the
// header this package writes is 15 to 19 bytes; one with unknown fields
// that pass the limit is refused.
const maxParquetHeader = 4096

// ReadParquet reads a Parquet column chunk's Bloom filter data from r, the
// Thrift BloomFilterHeader and the bitset it announces (at the column's
// bloom_filter_offset), and returns the filter; it reads nothing past the
// bitset. Unknown header fields are skipped. A header that is not valid
// Thrift, lacks a field, or announces a size SplitBlockFromBitset refuses
// gives an error wrapping ErrCorrupt (ErrTooLarge above 128 MiB); an
// algorithm other than BLOCK, or a compression other than UNCOMPRESSED,
// ErrType; a hash other than XXHASH, ErrHash; a short input,
// ErrTruncated. Memory grows with the bitset actually read, as for Read.
func ReadParquet(r io.Reader) (*SplitBlock, error) {
	avail, known := format.Remaining(r)
	t := &thriftReader{r: r, left: maxParquetHeader}
	numBytes, err := t.readBloomHeader()
	if err != nil {
		return nil, err
	}
	n := uint64(numBytes)
	if err := checkBitsetLen(n); err != nil {
		return nil, err
	}
	if known && uint64(avail)-uint64(maxParquetHeader-t.left) < n {
		return nil, fmt.Errorf("%w: the header announces a %d-byte bitset, %d bytes follow it", ErrTruncated, n, uint64(avail)-uint64(maxParquetHeader-t.left))
	}
	words, err := format.ReadWords(r, n/8, known, alignedWords)
	if err != nil {
		return nil, err
	}
	return &SplitBlock{words: words, blocks: n / SplitBlockMinBytes, params: Params{M: n * 8, K: SplitBlockK, Hash: HashXXH64}}, nil
}

// thriftReader reads the Thrift compact protocol one byte at a time, so
// that it never reads past the structure, and at most left bytes.
type thriftReader struct {
	r    io.Reader
	left int
	b    [1]byte
}

func (t *thriftReader) byte() (byte, error) {
	if t.left == 0 {
		return 0, fmt.Errorf("%w: the Parquet Bloom filter header is longer than %d bytes", ErrCorrupt, maxParquetHeader)
	}
	if _, err := io.ReadFull(t.r, t.b[:]); err != nil {
		return 0, format.Truncated(err, "Parquet Bloom filter header")
	}
	t.left--
	return t.b[0], nil
}

func (t *thriftReader) uvarint() (uint64, error) {
	var x uint64
	for shift := 0; shift < 70; shift += 7 {
		c, err := t.byte()
		if err != nil {
			return 0, err
		}
		if shift == 63 && c > 1 {
			break
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, fmt.Errorf("%w: a varint in the Parquet Bloom filter header overflows 64 bits", ErrCorrupt)
}

func (t *thriftReader) zigzag() (int64, error) {
	u, err := t.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

// field reads a field header: its type (thriftStop at the end of a
// struct) and id, given the previous field's id.
func (t *thriftReader) field(prev int16) (typ byte, id int16, err error) {
	c, err := t.byte()
	if err != nil || c == thriftStop {
		return thriftStop, 0, err
	}
	typ, delta := c&0x0f, int16(c>>4)
	if typ == thriftStop {
		return 0, 0, fmt.Errorf("%w: a field of Thrift type 0 in the Parquet Bloom filter header", ErrCorrupt)
	}
	if delta != 0 {
		return typ, prev + delta, nil
	}
	v, err := t.zigzag()
	if err != nil {
		return 0, 0, err
	}
	if v < -1<<15 || v >= 1<<15 {
		return 0, 0, fmt.Errorf("%w: field id %d in the Parquet Bloom filter header", ErrCorrupt, v)
	}
	return typ, int16(v), nil
}

// maxThriftDepth bounds the nesting skip follows.
const maxThriftDepth = 16

// skip reads and discards a value of type typ.
func (t *thriftReader) skip(typ byte, depth int) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("%w: the Parquet Bloom filter header nests more than %d deep", ErrCorrupt, maxThriftDepth)
	}
	switch typ {
	case thriftTrue, thriftFalse:
		return nil // in a field header; an element's byte is read by the list
	case thriftByte:
		_, err := t.byte()
		return err
	case thriftI16, thriftI32, thriftI64:
		_, err := t.uvarint()
		return err
	case thriftDouble:
		return t.skipBytes(8)
	case thriftUUID:
		return t.skipBytes(16)
	case thriftBinary:
		n, err := t.uvarint()
		if err != nil {
			return err
		}
		if n > uint64(t.left) {
			return fmt.Errorf("%w: a %d-byte string in the Parquet Bloom filter header", ErrCorrupt, n)
		}
		return t.skipBytes(int(n))
	case thriftStruct:
		var id int16
		for {
			ft, fid, err := t.field(id)
			if err != nil || ft == thriftStop {
				return err
			}
			if err := t.skip(ft, depth+1); err != nil {
				return err
			}
			id = fid
		}
	case thriftList, thriftSet:
		c, err := t.byte()
		if err != nil {
			return err
		}
		n, et := uint64(c>>4), c&0x0f
		if n == 15 {
			if n, err = t.uvarint(); err != nil {
				return err
			}
		}
		return t.skipElems(n, et, depth)
	case thriftMap:
		n, err := t.uvarint()
		if err != nil || n == 0 {
			return err
		}
		c, err := t.byte()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if err := t.skipElems(1, c>>4, depth); err != nil {
				return err
			}
			if err := t.skipElems(1, c&0x0f, depth); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: Thrift type %d in the Parquet Bloom filter header", ErrCorrupt, typ)
}

// skipElems skips n elements of type et of a list, set or map; every
// element is at least one byte, so the byte limit bounds n.
func (t *thriftReader) skipElems(n uint64, et byte, depth int) error {
	for ; n > 0; n-- {
		if et == thriftTrue || et == thriftFalse {
			if _, err := t.byte(); err != nil {
				return err
			}
			continue
		}
		if et == thriftStop {
			return fmt.Errorf("%w: a collection of Thrift type 0 in the Parquet Bloom filter header", ErrCorrupt)
		}
		if err := t.skip(et, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (t *thriftReader) skipBytes(n int) error {
	for range n {
		if _, err := t.byte(); err != nil {
			return err
		}
	}
	return nil
}

// union reads a union whose member 1, an empty struct, is the only one
// this package knows, and reports whether that member was set (and no
// other).
func (t *thriftReader) union() (bool, error) {
	var id int16
	known, other := false, false
	for {
		ft, fid, err := t.field(id)
		if err != nil {
			return false, err
		}
		if ft == thriftStop {
			return known && !other, nil
		}
		if fid == 1 && ft == thriftStruct {
			known = true
		} else {
			other = true
		}
		if err := t.skip(ft, 1); err != nil {
			return false, err
		}
		id = fid
	}
}

// readBloomHeader reads a BloomFilterHeader and returns its numBytes.
func (t *thriftReader) readBloomHeader() (int32, error) {
	var id int16
	var numBytes int32
	var seen [5]bool
	for {
		ft, fid, err := t.field(id)
		if err != nil {
			return 0, err
		}
		if ft == thriftStop {
			break
		}
		id = fid
		var want byte
		switch fid {
		case 1:
			want = thriftI32
		case 2, 3, 4:
			want = thriftStruct
		default:
			if err := t.skip(ft, 0); err != nil {
				return 0, err
			}
			continue
		}
		if ft != want {
			return 0, fmt.Errorf("%w: field %d of the Parquet Bloom filter header has Thrift type %d, want %d", ErrCorrupt, fid, ft, want)
		}
		seen[fid] = true
		if fid == 1 {
			v, err := t.zigzag()
			if err != nil {
				return 0, err
			}
			if v < 0 || v > 1<<31-1 {
				return 0, fmt.Errorf("%w: numBytes = %d in the Parquet Bloom filter header", ErrCorrupt, v)
			}
			numBytes = int32(v)
			continue
		}
		ok, err := t.union()
		if err != nil {
			return 0, err
		}
		if !ok {
			switch fid {
			case 2:
				return 0, fmt.Errorf("%w: the Parquet Bloom filter's algorithm is not BLOCK (split-block)", ErrType)
			case 3:
				return 0, fmt.Errorf("%w: the Parquet Bloom filter's hash is not XXHASH", ErrHash)
			default:
				return 0, fmt.Errorf("%w: the Parquet Bloom filter's compression is not UNCOMPRESSED", ErrType)
			}
		}
	}
	for fid, name := range [...]string{1: "numBytes", 2: "algorithm", 3: "hash", 4: "compression"} {
		if fid > 0 && !seen[fid] {
			return 0, fmt.Errorf("%w: the Parquet Bloom filter header has no %s", ErrCorrupt, name)
		}
	}
	return numBytes, nil
}
