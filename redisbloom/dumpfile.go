package redisbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// A dump file is a saved BF.SCANDUMP or CF.SCANDUMP stream: the replies,
// in order, that replay into BF.LOADCHUNK / CF.LOADCHUNK (`bloom push
// --format scandump`), or that load into a *Bloom or *Cuckoo in-process
// (ReadDump) without any server. Layout, all integers little-endian:
//
//	8 bytes  magic "RBDUMP01" (01: the layout version)
//	1 byte   kind: 'B' for a BF.SCANDUMP stream, 'C' for CF.SCANDUMP
//	3 bytes  zero (reserved)
//	records, one per SCANDUMP reply in order, the first being the header
//	(iterator 1):
//	  int64   the iterator the reply carried, as LOADCHUNK takes it (≥ 1)
//	  uint32  the chunk's length (≤ MaxChunk)
//	  bytes   the chunk
//	an end record: iterator 0, length 0
//	uint32   CRC-32C (Castagnoli) of every byte before it
//
// docs/formats-interop.md describes it for users.

// DumpMagic starts every dump file.
const DumpMagic = "RBDUMP01"

// Dump kinds: which command family the stream is from.
const (
	DumpBloom  = 'B'
	DumpCuckoo = 'C'
)

// Dump file errors.
var (
	ErrDumpMagic    = errors.New("redisbloom: not a RedisBloom dump file (bad magic)")
	ErrDumpCorrupt  = errors.New("redisbloom: corrupt dump file")
	ErrDumpTrunc    = errors.New("redisbloom: truncated dump file")
	ErrDumpChecksum = errors.New("redisbloom: dump file checksum mismatch")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const dumpPrefix = 12 // magic, kind, reserved

// DumpWriter writes a dump file record by record, as SCANDUMP replies
// arrive; Close finishes it.
type DumpWriter struct {
	w      io.Writer
	crc    uint32
	n      int64
	err    error
	closed bool
}

// NewDumpWriter starts a dump file of kind DumpBloom or DumpCuckoo on w.
func NewDumpWriter(w io.Writer, kind byte) (*DumpWriter, error) {
	if kind != DumpBloom && kind != DumpCuckoo {
		return nil, fmt.Errorf("%w: kind %q", ErrDumpCorrupt, kind)
	}
	d := &DumpWriter{w: w}
	var p [dumpPrefix]byte
	copy(p[:], DumpMagic)
	p[8] = kind
	d.write(p[:])
	return d, d.err
}

func (d *DumpWriter) write(p []byte) {
	if d.err != nil {
		return
	}
	n, err := d.w.Write(p)
	d.crc = crc32.Update(d.crc, castagnoli, p[:n])
	d.n += int64(n)
	if err != nil {
		d.err = fmt.Errorf("redisbloom: writing dump: %w", err)
	}
}

// Chunk appends one SCANDUMP reply: the iterator it carried and its data.
func (d *DumpWriter) Chunk(iter int64, data []byte) error {
	if iter < 1 || len(data) > MaxChunk {
		return fmt.Errorf("%w: chunk at iterator %d of %d bytes", ErrDumpCorrupt, iter, len(data))
	}
	var h [12]byte
	binary.LittleEndian.PutUint64(h[0:], uint64(iter))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(data)))
	d.write(h[:])
	d.write(data)
	return d.err
}

// Close writes the end record and the checksum. It does not close the
// underlying writer.
func (d *DumpWriter) Close() error {
	if d.closed {
		return d.err
	}
	d.closed = true
	d.write(make([]byte, 12))
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], d.crc)
	d.write(t[:])
	return d.err
}

// Written is the number of bytes written so far.
func (d *DumpWriter) Written() int64 { return d.n }

// DumpReader reads a dump file record by record.
type DumpReader struct {
	r     io.Reader
	kind  byte
	crc   uint32
	n     int64
	done  bool
	first bool
}

// NewDumpReader checks the start of a dump file.
func NewDumpReader(r io.Reader) (*DumpReader, error) {
	d := &DumpReader{r: r, first: true}
	var p [dumpPrefix]byte
	if err := d.read(p[:], "start"); err != nil {
		return nil, err
	}
	if string(p[:8]) != DumpMagic {
		return nil, ErrDumpMagic
	}
	if p[8] != DumpBloom && p[8] != DumpCuckoo || p[9]|p[10]|p[11] != 0 {
		return nil, fmt.Errorf("%w: kind %q, reserved %x", ErrDumpCorrupt, p[8], p[9:12])
	}
	d.kind = p[8]
	return d, nil
}

func (d *DumpReader) read(p []byte, what string) error {
	n, err := io.ReadFull(d.r, p)
	d.crc = crc32.Update(d.crc, castagnoli, p[:n])
	d.n += int64(n)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: in the %s", ErrDumpTrunc, what)
	}
	if err != nil {
		return fmt.Errorf("redisbloom: reading dump %s: %w", what, err)
	}
	return nil
}

// Kind is DumpBloom or DumpCuckoo.
func (d *DumpReader) Kind() byte { return d.kind }

// Next returns the next record: the iterator to give LOADCHUNK and the
// chunk. After the last record it checks the checksum and returns io.EOF.
// The first record is the header (iterator 1).
func (d *DumpReader) Next() (int64, []byte, error) {
	if d.done {
		return 0, nil, io.EOF
	}
	var h [12]byte
	if err := d.read(h[:], "record header"); err != nil {
		return 0, nil, err
	}
	iter, n := int64(binary.LittleEndian.Uint64(h[0:])), binary.LittleEndian.Uint32(h[8:])
	if iter == 0 && n == 0 {
		sum := d.crc
		var t [4]byte
		if err := d.read(t[:], "checksum"); err != nil {
			return 0, nil, err
		}
		if got := binary.LittleEndian.Uint32(t[:]); got != sum {
			return 0, nil, fmt.Errorf("%w: file says %#08x, data gives %#08x", ErrDumpChecksum, got, sum)
		}
		if d.first {
			return 0, nil, fmt.Errorf("%w: no header record", ErrDumpCorrupt)
		}
		d.done = true
		return 0, nil, io.EOF
	}
	if iter < 1 || n > MaxChunk || (d.first && iter != 1) {
		return 0, nil, fmt.Errorf("%w: record at iterator %d of %d bytes", ErrDumpCorrupt, iter, n)
	}
	d.first = false
	data := make([]byte, n)
	if err := d.read(data, "chunk"); err != nil {
		return 0, nil, err
	}
	return iter, data, nil
}

// Dumpable is what a RedisBloom filter of either family offers for dumps
// and lookups: *Bloom and *Cuckoo.
type Dumpable interface {
	Exists(item []byte) bool
	Header() []byte
	Chunk(iter int64) (int64, []byte)
	LoadChunk(iter int64, data []byte) error
	FillRatio() float64
	EstimatedFPR() float64
	MemUsage() uint64
}

var (
	_ Dumpable = (*Bloom)(nil)
	_ Dumpable = (*Cuckoo)(nil)
)

// WriteDump writes f as a dump file: exactly the records a server holding
// f answers BF.SCANDUMP / CF.SCANDUMP with.
func WriteDump(w io.Writer, f Dumpable) (int64, error) {
	kind := byte(DumpBloom)
	if _, ok := f.(*Cuckoo); ok {
		kind = DumpCuckoo
	}
	d, err := NewDumpWriter(w, kind)
	if err != nil {
		return 0, err
	}
	if err := d.Chunk(1, f.Header()); err != nil {
		return d.Written(), err
	}
	for it := int64(1); ; {
		next, data := f.Chunk(it)
		if next == 0 {
			break
		}
		if err := d.Chunk(next, data); err != nil {
			return d.Written(), err
		}
		it = next
	}
	return d.Written(), d.Close()
}

// ReadDump loads a dump file into a *Bloom or *Cuckoo, checking it as
// LOADCHUNK does. allow (may be nil) is asked for the filter's size before
// it is allocated, so a forged header cannot make it allocate more than
// the caller permits.
func ReadDump(r io.Reader, allow func(uint64) error) (Dumpable, error) {
	d, err := NewDumpReader(r)
	if err != nil {
		return nil, err
	}
	_, hdr, err := d.Next()
	if err != nil {
		return nil, err
	}
	var f Dumpable
	if d.Kind() == DumpBloom {
		b, err := LoadBloomHeader(hdr, allow)
		if err != nil {
			return nil, fmt.Errorf("%w: header: %w", ErrDumpCorrupt, err)
		}
		f = b
	} else {
		c, err := LoadCuckooHeader(hdr, 65536, allow)
		if err != nil {
			return nil, fmt.Errorf("%w: header: %w", ErrDumpCorrupt, err)
		}
		f = c
	}
	for {
		iter, data, err := d.Next()
		if err == io.EOF {
			return f, nil
		}
		if err != nil {
			return nil, err
		}
		if err := f.LoadChunk(iter, data); err != nil {
			return nil, fmt.Errorf("%w: chunk at iterator %d: %w", ErrDumpCorrupt, iter, err)
		}
	}
}
