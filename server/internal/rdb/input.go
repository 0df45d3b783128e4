package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Errors of the reader. A returned error wraps one of them with the byte
// offset and what was being read.
var (
	// ErrCorrupt: the bytes are not a valid RDB stream.
	ErrCorrupt = errors.New("rdb: corrupt data")
	// ErrChecksum: the CRC-64 at the end does not match the data.
	ErrChecksum = errors.New("rdb: checksum mismatch")
	// ErrVersion: the header names an RDB version this package cannot read.
	ErrVersion = errors.New("rdb: unsupported RDB version")
	// ErrLimit: a length in the stream is over the configured limit.
	ErrLimit = errors.New("rdb: length over limit")
)

// Length encodings (the two high bits of the first byte) and the special
// string encodings (11xxxxxx).
const (
	len6      = 0
	len14     = 1
	len32     = 0x80
	len64     = 0x81
	lenEnc    = 3
	encInt8   = 0
	encInt16  = 1
	encInt32  = 2
	encLZF    = 3
	readChunk = 1 << 20 // strings arrive in pieces of at most this much
)

// byteReader is what the input reads from: a *bufio.Reader given by the
// caller (so that nothing past the RDB is consumed) or one of our own.
type byteReader interface {
	io.Reader
	io.ByteReader
}

// input is the low level of the reader: bytes, lengths and strings, with
// the running checksum and offset.
type input struct {
	r       byteReader
	crc     uint64
	off     int64
	scratch [16]byte
}

func (in *input) fail(what string, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("rdb: reading %s at offset %d: %w", what, in.off, err)
}

func (in *input) corrupt(what string) error {
	return fmt.Errorf("rdb: %s at offset %d: %w", what, in.off, ErrCorrupt)
}

// full reads len(p) bytes into p.
func (in *input) full(p []byte, what string) error {
	n, err := io.ReadFull(in.r, p)
	in.crc = Checksum(in.crc, p[:n])
	in.off += int64(n)
	if err != nil {
		return in.fail(what, err)
	}
	return nil
}

func (in *input) byte(what string) (byte, error) {
	b, err := in.r.ReadByte()
	if err != nil {
		return 0, in.fail(what, err)
	}
	in.scratch[0] = b
	in.crc = Checksum(in.crc, in.scratch[:1])
	in.off++
	return b, nil
}

// fixed reads n ≤ 16 bytes into the scratch buffer.
func (in *input) fixed(n int, what string) ([]byte, error) {
	p := in.scratch[:n]
	return p, in.full(p, what)
}

// discard skips n bytes without keeping them.
func (in *input) discard(n uint64, what string) error {
	var buf [4096]byte
	for n > 0 {
		k := min(n, uint64(len(buf)))
		if err := in.full(buf[:k], what); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// length reads an RDB length; encoded reports the 11xxxxxx form, whose
// value is then the special encoding's number.
func (in *input) length(what string) (n uint64, encoded bool, err error) {
	b, err := in.byte(what)
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case len6:
		return uint64(b & 0x3f), false, nil
	case len14:
		c, err := in.byte(what)
		if err != nil {
			return 0, false, err
		}
		return uint64(b&0x3f)<<8 | uint64(c), false, nil
	case lenEnc:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case len32:
		p, err := in.fixed(4, what)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case len64:
		p, err := in.fixed(8, what)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, in.corrupt(fmt.Sprintf("bad length byte %#x in %s", b, what))
}

// plainLength reads a length that may not be a special encoding.
func (in *input) plainLength(what string) (uint64, error) {
	n, enc, err := in.length(what)
	if err == nil && enc {
		err = in.corrupt("encoded value where a length belongs in " + what)
	}
	return n, err
}

// readN reads n bytes into a new slice, growing it as the bytes arrive.
func (in *input) readN(n uint64, what string) ([]byte, error) {
	buf := make([]byte, 0, min(n, readChunk))
	for uint64(len(buf)) < n {
		k := min(n-uint64(len(buf)), readChunk)
		if uint64(cap(buf)-len(buf)) < k {
			buf = append(buf[:cap(buf)], make([]byte, min(uint64(cap(buf)), n-uint64(cap(buf))))...)[:len(buf)]
		}
		start := len(buf)
		buf = buf[:start+int(k)]
		if err := in.full(buf[start:], what); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// strHead reads a string's length and encoding. For an integer encoding
// it returns the decimal text in txt; for LZF the compressed bytes in
// comp and the uncompressed size in n; for a raw string only n.
func (in *input) strHead(max uint64, what string) (n uint64, txt, comp []byte, err error) {
	l, enc, err := in.length(what)
	if err != nil {
		return 0, nil, nil, err
	}
	if !enc {
		if l > max {
			return 0, nil, nil, fmt.Errorf("rdb: %s of %d bytes at offset %d (limit %d): %w", what, l, in.off, max, ErrLimit)
		}
		return l, nil, nil, nil
	}
	var v int64
	switch l {
	case encInt8:
		b, err := in.byte(what)
		if err != nil {
			return 0, nil, nil, err
		}
		v = int64(int8(b))
	case encInt16:
		p, err := in.fixed(2, what)
		if err != nil {
			return 0, nil, nil, err
		}
		v = int64(int16(binary.LittleEndian.Uint16(p)))
	case encInt32:
		p, err := in.fixed(4, what)
		if err != nil {
			return 0, nil, nil, err
		}
		v = int64(int32(binary.LittleEndian.Uint32(p)))
	case encLZF:
		clen, err := in.plainLength(what)
		if err != nil {
			return 0, nil, nil, err
		}
		ulen, err := in.plainLength(what)
		if err != nil {
			return 0, nil, nil, err
		}
		if ulen > max || clen > max {
			return 0, nil, nil, fmt.Errorf("rdb: compressed %s of %d bytes at offset %d (limit %d): %w", what, ulen, in.off, max, ErrLimit)
		}
		if clen == 0 || ulen/lzfMaxRatio > clen {
			return 0, nil, nil, in.corrupt(fmt.Sprintf("LZF %s of %d bytes from %d", what, ulen, clen))
		}
		comp, err := in.readN(clen, what)
		if err != nil {
			return 0, nil, nil, err
		}
		return ulen, nil, comp, nil
	default:
		return 0, nil, nil, in.corrupt(fmt.Sprintf("unknown string encoding %d in %s", l, what))
	}
	return 0, strconv.AppendInt(nil, v, 10), nil, nil
}

// str reads a string of at most max bytes in any encoding.
func (in *input) str(max uint64, what string) ([]byte, error) {
	n, txt, comp, err := in.strHead(max, what)
	switch {
	case err != nil:
		return nil, err
	case txt != nil:
		return txt, nil
	case comp != nil:
		out := make([]byte, n)
		if err := lzfDecompress(comp, out); err != nil {
			return nil, in.corrupt(fmt.Sprintf("%v in %s", err, what))
		}
		return out, nil
	}
	return in.readN(n, what)
}

// skipStr skips a string in any encoding without keeping it.
func (in *input) skipStr(what string) error {
	l, enc, err := in.length(what)
	if err != nil {
		return err
	}
	if !enc {
		return in.discard(l, what)
	}
	switch l {
	case encInt8:
		return in.discard(1, what)
	case encInt16:
		return in.discard(2, what)
	case encInt32:
		return in.discard(4, what)
	case encLZF:
		clen, err := in.plainLength(what)
		if err != nil {
			return err
		}
		if _, err := in.plainLength(what); err != nil {
			return err
		}
		return in.discard(clen, what)
	}
	return in.corrupt(fmt.Sprintf("unknown string encoding %d in %s", l, what))
}

func (in *input) int64LE(what string) (int64, error) {
	p, err := in.fixed(8, what)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(p)), nil
}

func (in *input) float64LE(what string) (float64, error) {
	v, err := in.int64LE(what)
	return math.Float64frombits(uint64(v)), err
}
