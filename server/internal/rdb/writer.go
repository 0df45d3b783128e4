package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
)

// output is the low level of the writer: lengths and strings, with the
// running checksum. The first error sticks.
type output struct {
	w        io.Writer
	crc      uint64
	n        int64
	err      error
	compress bool
	scratch  [16]byte
}

func (o *output) write(p []byte) {
	if o.err != nil {
		return
	}
	o.crc = Checksum(o.crc, p)
	n, err := o.w.Write(p)
	o.n += int64(n)
	if err != nil {
		o.err = fmt.Errorf("rdb: writing: %w", err)
	}
}

func (o *output) byte(b byte) {
	o.scratch[0] = b
	o.write(o.scratch[:1])
}

// length writes n in the shortest RDB length form.
func (o *output) length(n uint64) {
	p := o.scratch[:0]
	switch {
	case n < 1<<6:
		p = append(p, byte(n))
	case n < 1<<14:
		p = append(p, byte(n>>8)|len14<<6, byte(n))
	case n <= math.MaxUint32:
		p = append(p, len32)
		p = binary.BigEndian.AppendUint32(p, uint32(n))
	default:
		p = append(p, len64)
		p = binary.BigEndian.AppendUint64(p, n)
	}
	o.write(p)
}

// intEncoding returns v when s is the canonical decimal text of an
// integer that fits 32 bits (no sign '+', no leading zeros), as Redis
// stores such strings in integer form.
func intEncoding(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 11 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	var buf [12]byte
	if !bytes.Equal(strconv.AppendInt(buf[:0], v, 10), s) {
		return 0, false
	}
	return v, true
}

// str writes a string as Redis does: integer form when it is one, LZF
// when compression is on, it is over 20 bytes and it saves at least 4,
// raw otherwise.
func (o *output) str(s []byte) {
	if v, ok := intEncoding(s); ok {
		p := o.scratch[:0]
		switch {
		case v >= math.MinInt8 && v <= math.MaxInt8:
			p = append(p, lenEnc<<6|encInt8, byte(v))
		case v >= math.MinInt16 && v <= math.MaxInt16:
			p = append(p, lenEnc<<6|encInt16)
			p = binary.LittleEndian.AppendUint16(p, uint16(v))
		default:
			p = append(p, lenEnc<<6|encInt32)
			p = binary.LittleEndian.AppendUint32(p, uint32(v))
		}
		o.write(p)
		return
	}
	if o.compress && len(s) > 20 && compressible(s) {
		if c := lzfCompress(s, len(s)-4); c != nil {
			o.byte(lenEnc<<6 | encLZF)
			o.length(uint64(len(c)))
			o.length(uint64(len(s)))
			o.write(c)
			return
		}
	}
	o.length(uint64(len(s)))
	o.write(s)
}

// compressible reports whether LZF is worth trying on s: a string of 16
// KiB or more (a filter's bits, once it is in use, look random) is tried
// on its first 4 KiB first, and stored raw unless that shrinks by 1/32.
func compressible(s []byte) bool {
	const probe = 4 << 10
	if len(s) < 4*probe {
		return true
	}
	return lzfCompress(s[:probe], probe-probe/32) != nil
}

// Writer writes an RDB stream.
type Writer struct {
	out     output
	bw      *bufio.Writer
	version int
	closed  bool
}

// NewWriter writes the header of an RDB file of the given version
// (MinVersion 9 here: older versions encode expiries differently) to w.
// Strings are LZF-compressed as with rdbcompression yes unless
// SetCompression(false) is called.
func NewWriter(w io.Writer, version int) (*Writer, error) {
	if version < 9 || version > MaxVersion {
		return nil, fmt.Errorf("rdb: writing version %d (9 to %d can be written): %w", version, MaxVersion, ErrVersion)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	wr := &Writer{out: output{w: bw, compress: true}, bw: bw, version: version}
	wr.out.write(fmt.Appendf(nil, "REDIS%04d", version))
	return wr, wr.out.err
}

// SetCompression turns LZF compression of strings over 20 bytes on or off.
func (w *Writer) SetCompression(on bool) { w.out.compress = on }

// Aux writes an aux field (redis-ver, redis-bits, ctime, used-mem,
// repl-id, repl-offset, aof-base, ...).
func (w *Writer) Aux(name, value string) error {
	w.out.byte(opAux)
	w.out.str([]byte(name))
	w.out.str([]byte(value))
	return w.out.err
}

// SelectDB starts the keys of database db.
func (w *Writer) SelectDB(db int) error {
	if db < 0 {
		return fmt.Errorf("rdb: database %d", db)
	}
	w.out.byte(opSelectDB)
	w.out.length(uint64(db))
	return w.out.err
}

// ResizeDB writes the hint of how many keys (and keys with an expiry)
// follow in the current database.
func (w *Writer) ResizeDB(keys, expires uint64) error {
	w.out.byte(opResizeDB)
	w.out.length(keys)
	w.out.length(expires)
	return w.out.err
}

// keyHead writes the expiry (expireAt ≥ 0, Unix ms; negative: none), the
// value type and the key.
func (w *Writer) keyHead(t byte, key []byte, expireAt int64) {
	if expireAt >= 0 {
		w.out.byte(opExpireTimeMs)
		w.out.write(binary.LittleEndian.AppendUint64(w.out.scratch[:0], uint64(expireAt)))
	}
	w.out.byte(t)
	w.out.str(key)
}

// String writes a string key; expireAt is its absolute expiry in Unix
// milliseconds, or negative for none.
func (w *Writer) String(key, value []byte, expireAt int64) error {
	w.keyHead(TypeString, key, expireAt)
	w.out.str(value)
	return w.out.err
}

// Module writes a module value key; expireAt as for String.
func (w *Writer) Module(key []byte, expireAt int64, enc ModuleEncoder) error {
	w.keyHead(TypeModule2, key, expireAt)
	return writeModule(&w.out, enc)
}

// writeModule writes a module value's type id, fields and end.
func writeModule(o *output, enc ModuleEncoder) error {
	name, ver := enc.ModuleType()
	id, err := ModuleTypeID(name, ver)
	if err != nil {
		return err
	}
	o.length(id)
	mw := &ModuleWriter{out: o}
	if err := enc.EncodeModule(mw); err != nil {
		if o.err == nil {
			o.err = err
		}
		return err
	}
	o.length(modEOF)
	return o.err
}

// Close writes the EOF opcode and the checksum and flushes. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.out.err
	}
	w.closed = true
	w.out.byte(opEOF)
	crc := w.out.crc
	w.out.write(binary.LittleEndian.AppendUint64(w.out.scratch[:0], crc))
	if w.out.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.out.err = fmt.Errorf("rdb: writing: %w", err)
		}
	}
	return w.out.err
}

// Written is the number of bytes written so far (buffered or not).
func (w *Writer) Written() int64 { return w.out.n }

// ModuleWriter writes one module value's fields for a ModuleEncoder.
type ModuleWriter struct {
	out *output
}

// SaveUnsigned writes an unsigned field (RedisModule_SaveUnsigned).
func (m *ModuleWriter) SaveUnsigned(v uint64) {
	m.out.length(modUint)
	m.out.length(v)
}

// SaveSigned writes a signed field (RedisModule_SaveSigned): as Redis
// does, an unsigned field of the same bits.
func (m *ModuleWriter) SaveSigned(v int64) {
	m.out.length(modUint)
	m.out.length(uint64(v))
}

// SaveDouble writes a double field (RedisModule_SaveDouble).
func (m *ModuleWriter) SaveDouble(v float64) {
	m.out.length(modDouble)
	m.out.write(binary.LittleEndian.AppendUint64(m.out.scratch[:0], math.Float64bits(v)))
}

// SaveFloat writes a float field (RedisModule_SaveFloat).
func (m *ModuleWriter) SaveFloat(v float32) {
	m.out.length(modFloat)
	m.out.write(binary.LittleEndian.AppendUint32(m.out.scratch[:0], math.Float32bits(v)))
}

// SaveString writes a string field (RedisModule_SaveStringBuffer).
func (m *ModuleWriter) SaveString(b []byte) {
	m.out.length(modString)
	m.out.str(b)
}

// Err is the first write error, if any.
func (m *ModuleWriter) Err() error { return m.out.err }
