package keyspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// memFile is a snapshot held in memory, as aof.ReadFile.
type memFile struct {
	*bytes.Reader
	size int64
}

func (m memFile) Close() error { return nil }
func (m memFile) Size() int64  { return m.size }

// nativeSnapshot is a snapshot of one native key f: a filter of the given
// type (classic or blocked, 512 bits) whose file header has the given
// count, with one bit set.
func nativeSnapshot(typ uint8, count uint64) []byte {
	h := format.Header{Type: typ, Hash: format.HashXXH3, Seed: 9, M: 512, K: 3, N: 10, P: 0.01, Count: count, PayloadLen: 64}
	hdr := binary.LittleEndian.AppendUint64(h.Marshal(), 1) // the array's count
	b := []byte(snapMagic)
	b = binary.LittleEndian.AppendUint64(b, 1) // generation
	b = binary.LittleEndian.AppendUint64(b, 1) // keys
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = append(b, 'f', byte(KindNative))
	b = binary.LittleEndian.AppendUint64(b, 0) // no expiry
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hdr)))
	b = append(b, hdr...)
	data := make([]byte, 64)
	data[3] = 0x10
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// A native key's header in a snapshot is a bloomkit file header; a classic
// or blocked one with a count (which these types do not keep: the field
// is 0) is refused by both snapshot readers, as bloom.Read refuses the
// file. Accepted, the count was silently dropped when the key was written
// back (SCANDUMP, the next snapshot).
func TestSnapshotNativeCountRefused(t *testing.T) {
	for _, typ := range []uint8{format.TypeClassic, format.TypeBlocked} {
		name := format.TypeName(typ)
		for _, count := range []uint64{0, 1} {
			snap := nativeSnapshot(typ, count)
			db := New(1<<30, nil)
			db.Lock()
			_, n, err := db.ReadSnapshot(memFile{bytes.NewReader(snap), int64(len(snap))}, "mem")
			db.Unlock()
			each := EachSnapshotEntry(bytes.NewReader(snap), int64(len(snap)), func(string, *Entry) error { return nil })
			if count == 0 {
				if err != nil || n != 1 || each != nil {
					t.Fatalf("%s, count 0: ReadSnapshot: %d keys, %v; EachSnapshotEntry: %v", name, n, err, each)
				}
				continue
			}
			if !errors.Is(err, aof.ErrCorrupt) || !strings.Contains(err.Error(), "bad filter header") || db.Len() != 0 {
				t.Errorf("%s, count 1: ReadSnapshot: %d keys (%d in the keyspace), err = %v, want it refused", name, n, db.Len(), err)
			}
			if !errors.Is(each, format.ErrCorrupt) || !strings.Contains(each.Error(), "count 1") {
				t.Errorf("%s, count 1: EachSnapshotEntry: err = %v, want ErrCorrupt naming the count", name, each)
			}
		}
	}
}
