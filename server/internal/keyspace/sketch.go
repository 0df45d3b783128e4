package keyspace

import (
	"bytes"
	"fmt"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/topk"
)

// Sketches: RedisBloom's Count-Min Sketch (KindCMS) and Top-K (KindTopK)
// as keys. The entry's value holds the library's cms.Sketch or topk.TopK;
// the server's handlers change it in place (after the before-write rules
// preserve it for a running snapshot).
//
// A snapshot's image of a sketch is its whole bloomkit file, taken when the
// image is frozen (the first write after the snapshot's point in time, or
// the writer reaching the key): a sketch is written as a header and no
// arrays. Freezing copies the sketch with the keyspace locked, so it costs
// time proportional to the sketch — sketches are small next to filters
// (CMS.INITBYPROB 0.0001 0.000001 is 1.6 MB); a guard per counter, as
// filters have, is the remedy should large ones become common.

// value is what an entry's val points at: a string, or one sketch.
type value struct {
	str  string
	cms  *cms.Sketch
	topk *topk.TopK
}

func (v *value) clone() *value {
	c := &value{str: v.str}
	if v.cms != nil {
		c.cms = v.cms.Clone()
	}
	if v.topk != nil {
		c.topk = v.topk.Clone()
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

// sketchImage is a sketch's snapshot image: its bloomkit file.
func (e *Entry) sketchImage() []byte {
	var b []byte
	switch {
	case e.CMS() != nil:
		b, _ = e.val.cms.MarshalBinary()
	case e.TopK() != nil:
		b, _ = e.val.topk.MarshalBinary()
	}
	return b
}

// loadSketch reads a sketch's snapshot image.
func loadSketch(kind Kind, hdr []byte) (*value, error) {
	var err error
	v := &value{}
	if kind == KindCMS {
		v.cms, err = cms.Read(bytes.NewReader(hdr))
	} else {
		v.topk, err = topk.Read(bytes.NewReader(hdr))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", aof.ErrCorrupt, err)
	}
	return v, nil
}
