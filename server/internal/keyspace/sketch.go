package keyspace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/tdigest"
	"github.com/bloomkit/bloomkit/topk"
)

// Sketches: RedisBloom's Count-Min Sketch (KindCMS) and Top-K (KindTopK)
// as keys. The entry's value holds the library's cms.Sketch or topk.TopK;
// the server's handlers change it in place (after the before-write rules
// preserve it for a running snapshot).
//
// A snapshot's image of a Count-Min Sketch is a 32-byte header (width,
// depth, count, flags) and one array, its counters as they lie in memory
// (little-endian 32-bit words on the machines Go runs bloomkit on): the
// snapshot writer copies them out chunk by chunk like a filter's bits, and
// a write announces the counters it is about to change to the image
// (SketchGuard, CounterBytes), which first copies the chunks the writer
// still needs. A Top-K's image is its whole bloomkit file, taken when the
// image is frozen (the first write after the snapshot's point in time, or
// the writer reaching the key): Top-Ks are small next to filters (width ×
// depth buckets of 8 bytes and k items).

// value is what an entry's val points at: a string, one sketch or a
// t-digest.
type value struct {
	str  string
	cms  *cms.Sketch
	topk *topk.TopK
	td   *tdigest.Digest
	// guard is the running snapshot's image of a Count-Min Sketch while
	// the snapshot still needs its counters (nil otherwise).
	guard redisbloom.Guard
}

func (v *value) clone() *value {
	c := &value{str: v.str}
	if v.cms != nil {
		c.cms = v.cms.Clone()
	}
	if v.topk != nil {
		c.topk = v.topk.Clone()
	}
	if v.td != nil {
		c.td = v.td.Clone()
	}
	return c
}

// NewCMS is a Count-Min Sketch's entry.
func NewCMS(s *cms.Sketch, expireAt int64) *Entry {
	return &Entry{Kind: KindCMS, val: &value{cms: s}, ExpireAt: expireAt}
}

// NewTopK is a Top-K's entry.
func NewTopK(t *topk.TopK, expireAt int64) *Entry {
	return &Entry{Kind: KindTopK, val: &value{topk: t}, ExpireAt: expireAt}
}

// CMS is a KindCMS entry's sketch (nil for any other kind).
func (e *Entry) CMS() *cms.Sketch {
	if e.Kind != KindCMS || e.val == nil {
		return nil
	}
	return e.val.cms
}

// TopK is a KindTopK entry's Top-K (nil for any other kind).
func (e *Entry) TopK() *topk.TopK {
	if e.Kind != KindTopK || e.val == nil {
		return nil
	}
	return e.val.topk
}

// sketchBytes is a sketch's size in memory.
func (e *Entry) sketchBytes() uint64 {
	switch {
	case e.CMS() != nil:
		return e.val.cms.MemUsage()
	case e.TopK() != nil:
		return e.val.topk.MemUsage()
	}
	return 0
}

// sketchArrays is what Allow counted for a sketch when it was made (a
// Count-Min Sketch's counters; all of a Top-K, whose items Resized counts
// as they come and go).
func (e *Entry) sketchArrays() uint64 {
	if s := e.CMS(); s != nil {
		return 4 * uint64(len(s.Counters()))
	}
	return e.sketchBytes()
}

// SketchAllocBytes is what Allow is asked for a new Count-Min Sketch of
// width × depth counters.
func SketchAllocBytes(width, depth uint64) uint64 { return 4 * width * depth }

// Resized accounts a value that grew or shrank in place from before to
// after bytes (a Top-K's items; db.mu held).
func (db *DB) Resized(before, after uint64) {
	if after >= before {
		db.used += after - before
		return
	}
	db.used -= min(before-after, db.used)
}

// CounterBytes is a Count-Min Sketch's counters as the bytes they occupy
// (the same slice every time: the snapshot's image knows its arrays by
// their address).
func CounterBytes(s *cms.Sketch) []byte {
	c := s.Counters()
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c))), 4*len(c))
}

// SketchGuard is the guard a write to a Count-Min Sketch's counters must
// tell first (Guard.Write with CounterBytes' slice), or nil when no
// snapshot needs them.
func (e *Entry) SketchGuard() redisbloom.Guard {
	if e.val == nil {
		return nil
	}
	return e.val.guard
}

// sketchImage sets im's header and arrays for a sketch and makes im the
// guard of a Count-Min Sketch's counters.
func (e *Entry) sketchImage(im *image) {
	if s := e.CMS(); s != nil {
		im.header = cmsSnapHeader(s)
		im.arrays = [][]byte{CounterBytes(s)}
		e.val.guard = im
		return
	}
	if t := e.TopK(); t != nil {
		im.header, _ = t.MarshalBinary()
	}
}

const cmsFlagConservative = 1

// cmsSnapHeader is a Count-Min Sketch's snapshot header: width, depth,
// count and flags, little-endian 64-bit words.
func cmsSnapHeader(s *cms.Sketch) []byte {
	var flags uint64
	if s.Conservative {
		flags |= cmsFlagConservative
	}
	b := binary.LittleEndian.AppendUint64(nil, s.Width())
	b = binary.LittleEndian.AppendUint64(b, s.Depth())
	b = binary.LittleEndian.AppendUint64(b, s.Count())
	return binary.LittleEndian.AppendUint64(b, flags)
}

// loadSketch reads a sketch's snapshot header; a Count-Min Sketch's
// counters follow as its one array (fits checks their size first).
func loadSketch(kind Kind, hdr []byte, fits func(uint64) error) (*value, [][]byte, error) {
	corrupt := func(err error) (*value, [][]byte, error) {
		return nil, nil, fmt.Errorf("%w: %v", aof.ErrCorrupt, err)
	}
	if kind == KindTopK {
		t, err := topk.Read(bytes.NewReader(hdr))
		if err != nil {
			return corrupt(err)
		}
		return &value{topk: t}, nil, nil
	}
	if len(hdr) != 32 {
		return corrupt(fmt.Errorf("count-min sketch header of %d bytes", len(hdr)))
	}
	w, d := binary.LittleEndian.Uint64(hdr), binary.LittleEndian.Uint64(hdr[8:])
	count, flags := binary.LittleEndian.Uint64(hdr[16:]), binary.LittleEndian.Uint64(hdr[24:])
	if w == 0 || d == 0 || w > cms.MaxCells/d || flags&^cmsFlagConservative != 0 {
		return corrupt(fmt.Errorf("count-min sketch of %d × %d counters, flags %#x", w, d, flags))
	}
	if err := fits(4 * w * d); err != nil {
		return nil, nil, err
	}
	s, err := cms.FromCounters(w, d, count, make([]uint32, w*d))
	if err != nil {
		return corrupt(err)
	}
	s.Conservative = flags&cmsFlagConservative != 0
	return &value{cms: s}, [][]byte{CounterBytes(s)}, nil
}
