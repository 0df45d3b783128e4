package keyspace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// EachSnapshotEntry reads a snapshot that WriteSnapshot wrote (size bytes
// from r) and calls fn with each key and its entry, one at a time, in the
// snapshot's order: the full sync to a Redis replica turns bloomkit's
// snapshot into an RDB this way, off the keyspace lock and with at most one
// filter in memory besides the keyspace. The entry belongs to
// EachSnapshotEntry: it is freed when fn returns, and fn must not keep it.
// Its filters are not counted against the memory limit (they are not in
// the keyspace). The checksum is verified at the end; an error from fn
// stops the walk and is returned.
func EachSnapshotEntry(r io.Reader, size int64, fn func(key string, e *Entry) error) error {
	cr := &crcReader{r: bufio.NewReaderSize(r, 1<<20), h: crc32.New(castagnoli)}
	remaining := size
	bad := func(what string, err error) error {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("snapshot: %s: %w", what, err)
	}
	read := func(n int64) ([]byte, error) {
		if n > remaining {
			return nil, io.ErrUnexpectedEOF
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(cr, p); err != nil {
			return nil, err
		}
		remaining -= n
		return p, nil
	}
	head, err := read(24)
	if err != nil {
		return bad("header", err)
	}
	if m := string(head[:8]); m != snapMagic && m != snapMagicV1 {
		return bad("bad magic", errors.New("not a bloomkit snapshot"))
	}
	nkeys := binary.LittleEndian.Uint64(head[16:])
	if nkeys > uint64(remaining) {
		return bad("impossible key count", nil)
	}
	fits := func(n uint64) error {
		if n > uint64(remaining) {
			return io.ErrUnexpectedEOF
		}
		return nil
	}
	for i := uint64(0); i < nkeys; i++ {
		lb, err := read(4)
		if err != nil {
			return bad(fmt.Sprintf("key %d", i), err)
		}
		kb, err := read(int64(binary.LittleEndian.Uint32(lb)))
		if err != nil {
			return bad(fmt.Sprintf("key %d", i), err)
		}
		meta, err := read(13)
		if err != nil {
			return bad(fmt.Sprintf("key %q", kb), err)
		}
		hdr, err := read(int64(binary.LittleEndian.Uint32(meta[9:])))
		if err != nil {
			return bad(fmt.Sprintf("key %q header", kb), err)
		}
		e := &Entry{Kind: Kind(meta[0]), ExpireAt: int64(binary.LittleEndian.Uint64(meta[1:]))}
		arrays, err := e.loadHeader(hdr, fits)
		if err != nil {
			return bad(fmt.Sprintf("key %q: bad filter header", kb), err)
		}
		for _, a := range arrays {
			if int64(len(a)) > remaining {
				e.Free()
				return bad(fmt.Sprintf("key %q data", kb), nil)
			}
			if _, err := io.ReadFull(cr, a); err != nil {
				e.Free()
				return bad(fmt.Sprintf("key %q data", kb), err)
			}
			remaining -= int64(len(a))
		}
		e.key = string(kb)
		err = fn(e.key, e)
		e.Free()
		if err != nil {
			return err
		}
	}
	want := cr.h.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(cr.r, sum[:]); err != nil {
		return bad("missing checksum", err)
	}
	if binary.LittleEndian.Uint32(sum[:]) != want {
		return bad("checksum mismatch", errors.New("corrupt"))
	}
	return nil
}
