package keyspace

import (
	"errors"
	"fmt"
	"math"

	"github.com/bloomkit/bloomkit/redisbloom"
)

// Copy puts a copy of the live entry at src, its value and expiry, under
// dst (COPY). It reports copied false, and changes nothing, when src is
// missing or dst holds a key and replace is not set; fits false when the
// copy would pass the memory limit (what dst held counts as freed); an
// error, and nothing changed, if a filter's header does not load back
// (a bug: a live filter's header always does).
// Filters are copied through the header a snapshot writes and their
// arrays, so a copy answers exactly as the original and is independent of
// it.
func (db *DB) Copy(src, dst string, replace bool) (copied, fits bool, err error) {
	e := db.Get(src)
	if e == nil {
		return false, true, nil
	}
	if db.Get(dst) != nil && !replace {
		return false, true, nil
	}
	if e.Kind == KindString {
		if !db.RoomFor(uint64(len(e.StrBytes())), []byte(dst)) {
			return false, false, nil
		}
		db.PutString([]byte(dst), e.StrBytes(), e.ExpireAt)
		return true, true, nil
	}
	n := dataArrays(e)
	if !db.RoomFor(n, []byte(dst)) {
		return false, false, nil
	}
	if e.Kind == KindCMS || e.Kind == KindTopK || e.Kind == KindTDigest {
		c := &Entry{Kind: e.Kind, ExpireAt: e.ExpireAt, val: e.val.clone()} // without the guard
		db.used += n
		db.Put(dst, c)
		return true, true, nil
	}
	c := &Entry{Kind: e.Kind, ExpireAt: e.ExpireAt}
	none := func(uint64) error { return nil } // sizes come from a live filter
	var from, to [][]byte
	switch e.Kind {
	case KindBloom:
		if c.BF, err = redisbloom.LoadBloomHeader(e.BF.Header(), none); err == nil {
			for i := range e.BF.NumLinks() {
				from, to = append(from, e.BF.Link(i).Data), append(to, c.BF.Link(i).Data)
			}
		}
	case KindCuckoo:
		if c.CF, err = redisbloom.LoadCuckooHeader(e.CF.Header(), math.MaxUint16, none); err == nil {
			from, to = e.CF.Filters, c.CF.Filters
		}
	case KindNative:
		if c.NF, err = loadSnapshotHeader(e.NF.snapshotHeader(), none); err == nil {
			from, _ = e.NF.Ordered()
			to, _ = c.NF.Ordered()
		}
	}
	if err == nil && len(from) != len(to) {
		err = errors.New("the copy has other arrays than the original")
	}
	if err != nil {
		return false, true, fmt.Errorf("copying %q: %w", src, err)
	}
	for i := range from {
		copy(to[i], from[i])
	}
	db.used += n // the arrays, as Allow counts a new filter's
	db.attach(c)
	db.Put(dst, c)
	return true, true, nil
}
