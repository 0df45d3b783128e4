package keyspace

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/tdigest"
)

// castagnoli is the snapshot checksum's polynomial (CRC-32C, as the log's).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshots.
//
// A snapshot is the keyspace at one point in time: "BKSNAP01", u64
// generation, u64 key count; per key: u32 key length, key, u8 kind, i64
// expiry (unix ms, 0 none), u32 header length, the filter's SCANDUMP header
// (kind 3, a string: its value; kind 4, a native filter: its bloomkit file
// header and item counts, native.go), then its arrays in dump order (a
// string has none); finally the CRC-32C of everything before it.
//
// Go cannot fork, so the point-in-time image is kept by copy-on-write
// instead of by the kernel. Starting a snapshot (beginSnapshot, with the
// keyspace locked) is O(1): it takes a new epoch number and the key count.
// Every entry that existed then has an older epoch; an entry created later
// gets the new one, and the writer skips it. The writer walks the keyspace
// in scan order (the table's order the SCAN cursor uses), a few keys per hold of
// the lock, and copies each filter's arrays out in 64 KiB chunks, so
// clients wait at most for one chunk copy. An entry that leaves the
// keyspace before the writer reaches it (DEL, RENAME, expiry, FLUSHALL,
// replacement) is frozen and queued with the name it had (remove), so it
// is written once, under that name, whatever happens to it afterwards.
// Meanwhile a command about to change an entry the writer has not finished
// first freezes it (preserve): the entry's header and expiry are captured
// and an image becomes the filter's redisbloom.Guard, which copies a chunk
// the writer still needs just before a write changes it. Without writes the
// snapshot costs one chunk of memory; with writes, at most one copy of each
// chunk written to.
const (
	snapMagic = "BKSNAP02"
	// Version 1 snapshots had the same layout and numbered generations
	// from 0.
	snapMagicV1 = "BKSNAP01"
	cowChunk    = 64 << 10
	// holdBytes bounds what the writer copies per hold of the keyspace lock.
	holdBytes = 256 << 10
	// holdKeys bounds how many small entries it takes per hold.
	holdKeys = 256
)

// Snapshot is one snapshot being written.
type Snapshot struct {
	Gen   uint64
	epoch uint32
	Count int // keys in the keyspace at the point in time
	// lazy counts the dropped entries it frees off the lock (the
	// keyspace's counters).
	lazy *lazyFree
	// cursor is where the writer's walk of the scan order goes on from;
	// walked tells that it has passed the last key.
	cursor  ScanKey
	started bool
	walked  bool
	// pending are entries of the point in time that left the keyspace
	// before the writer reached them, with the names they had; frozen are
	// the entries a change froze ahead of the writer, and current the one
	// it is writing: endSnapshot lets their images go.
	pending []snapKey
	frozen  []*Entry
	current *Entry
	// keys, once set, is the keyspace FLUSHALL took away while the
	// snapshot ran: the walk goes on over it (nothing else reaches its
	// entries), and endSnapshot frees it, with later, the keyspaces
	// further flushes took away meanwhile.
	keys  *table
	later []*table
	// copied counts bytes copied because a write came first (copy-on-write);
	// processed counts keys written out.
	Copied    atomic.Int64
	Processed atomic.Int64
	// str is the image of the string the writer takes from the walk: a
	// string has no arrays, so the writer is done with it in the hold of
	// the lock it took it in, and its image needs no allocation of its
	// own (one per key, most keys being strings).
	str image
}

type snapKey struct {
	key string
	e   *Entry
}

// image is one entry as it was at a snapshot's point in time, held from
// the first change after that point (or from when the writer reaches it)
// until the writer is done with it. It is the filter's Guard meanwhile.
// All its fields are used with the keyspace locked.
type image struct {
	snap     *Snapshot
	Kind     Kind
	ExpireAt int64
	header   []byte
	arrays   [][]byte   // the filter's arrays then (live memory, unless copied)
	copies   []*cowCopy // copies[i]: the chunks of array i as they were (cow.go)
	// The writer is done with arrays before doneArr, and with the chunks
	// of array doneArr before doneChunk.
	doneArr, doneChunk int
	started            bool     // the writer wrote the key and header
	released           [][]byte // arrays the filter gave up meanwhile
	dropped            bool     // the entry left the keyspace: free it when done
	// claimed: the writer has the entry — it took it from the walk, or
	// remove queued it — so the walk skips it under any other name.
	claimed bool
}

// beginSnapshot starts a snapshot at this point in time (db.mu held), in
// O(1): every key now in the keyspace is part of it (one whose expiry has
// passed too; loading drops it).
func (db *DB) BeginSnapshot(gen uint64) *Snapshot {
	if db.epoch == math.MaxUint32 {
		// Four billion snapshots later: start the numbering again, every
		// entry marked as needed by no snapshot (none runs now).
		db.keys.all(func(e *Entry) { e.epoch = 0 })
		db.epoch = 0
	}
	db.epoch++
	snap := &Snapshot{Gen: gen, epoch: db.epoch, Count: db.keys.len(), lazy: &db.lazy}
	db.snap = snap
	return snap
}

// leaving is told (db.mu held) that key's entry e leaves the keyspace: if
// the running snapshot still needs it and has not taken it, it is frozen
// and queued under this name.
func (db *DB) leaving(key string, e *Entry) {
	snap := db.snap
	if snap == nil || e.epoch >= snap.epoch || (e.img != nil && e.img.claimed) {
		return
	}
	db.Preserve(e)
	e.img.claimed = true
	snap.pending = append(snap.pending, snapKey{key, e})
}

// next returns the next entry the writer should write (db.mu held), or
// false when there is none left: queued ones first, then the walk.
func (snap *Snapshot) next(db *DB) (snapKey, bool) {
	if len(snap.pending) > 0 {
		k := snap.pending[0]
		snap.pending = snap.pending[1:]
		snap.current = k.e
		return k, true
	}
	var found snapKey
	ok := false
	keys := db.keys
	if snap.keys != nil {
		keys = snap.keys
	}
	// The walk starts at the key it stopped at last time, if that key is
	// still there: only the first key visited can be it.
	again := snap.started
	visit := func(e *Entry) bool {
		if again {
			again = false
			if e.key == snap.cursor.k {
				return true
			}
		}
		if e.epoch >= snap.epoch || (e.img != nil && e.img.claimed) {
			return true
		}
		// The walk goes on from here next time: only the key it stops
		// at needs its scan hash.
		snap.cursor, snap.started = ScanKey{scanHash(e.key), e.key}, true
		switch {
		case e.img != nil:
		case e.Kind == KindString:
			snap.str = image{snap: snap, Kind: KindString, ExpireAt: e.ExpireAt, header: e.StrBytes()}
			e.img = &snap.str
		default:
			snap.freeze(e)
		}
		e.img.claimed = true
		found, ok = snapKey{e.key, e}, true
		snap.current = e
		return false
	}
	if !snap.walked {
		keys.from(snap.cursor.h, snap.cursor.k, visit)
		if !ok {
			snap.walked = true
		}
	}
	return found, ok
}

// preserve freezes e's image if a running snapshot still needs it; call it
// (db.mu held) before changing an entry in any way.
func (db *DB) Preserve(e *Entry) {
	if db.snap != nil && e.img == nil && e.epoch < db.snap.epoch {
		db.snap.freeze(e)
		db.snap.frozen = append(db.snap.frozen, e)
	}
}

// freeze captures e's image and makes it the filter's guard.
func (snap *Snapshot) freeze(e *Entry) *image {
	im := &image{snap: snap, Kind: e.Kind, ExpireAt: e.ExpireAt}
	switch e.Kind {
	case KindBloom:
		im.header = e.BF.Header()
		for i := range e.BF.NumLinks() {
			im.arrays = append(im.arrays, e.BF.Link(i).Data)
		}
		e.BF.SetGuard(im)
	case KindCuckoo:
		im.header = e.CF.Header()
		im.arrays = append(im.arrays, e.CF.Filters...)
		e.CF.Guard = im
	case KindString:
		im.header = e.StrBytes() // immutable: a write replaces the entry
	case KindTDigest:
		// A digest is small and a query rearranges it: its image is a
		// copy, its bloomkit file (exact, buffer included).
		im.header, _ = e.TD().MarshalBinary()
	case KindCMS, KindTopK:
		e.sketchImage(im)
	case KindNative:
		im.header = e.NF.snapshotHeader()
		im.arrays, _ = e.NF.Ordered()
		im.arrays = append([][]byte(nil), im.arrays...)
		e.NF.Guard = im
	}
	e.img = im
	return im
}

// done ends e's part in the snapshot (db.mu held).
func (snap *Snapshot) done(e *Entry) {
	im := e.img
	e.img = nil
	e.epoch = snap.epoch
	switch e.Kind {
	case KindBloom:
		e.BF.SetGuard(nil)
	case KindCuckoo:
		e.CF.Guard = nil
	case KindNative:
		e.NF.Guard = nil
	case KindCMS:
		e.val.guard = nil
	}
	copies, released := im.copies, im.released
	im.copies, im.released = nil, nil
	if im.dropped {
		e.release(snap.lazy)
	}
	if im == &snap.str {
		snap.str = image{}
	}
	// The copies and the arrays the filter gave up meanwhile can be as
	// large as the filter: unmapping them waits for no one.
	var n uint64
	for _, a := range released {
		n += uint64(len(a))
	}
	for _, c := range copies {
		if c != nil {
			n += uint64(len(c.buf))
		}
	}
	if n == 0 {
		return
	}
	free := func() {
		for _, c := range copies {
			c.free()
		}
		for _, a := range released {
			redisbloom.FreeArray(a)
		}
	}
	if n < LazyFreeBytes {
		free()
		return
	}
	go free()
}

// end finishes the snapshot, successful or not (db.mu held): every entry
// still holding an image lets it go. Entries the writer never reached keep
// their older epoch, which only a snapshot with this epoch looked at.
func (db *DB) EndSnapshot(snap *Snapshot) {
	for _, e := range append(snap.frozen, snap.current) {
		if e != nil && e.img != nil && e.img.snap == snap {
			snap.done(e)
		}
	}
	for _, k := range snap.pending { // frozen too, but listed here
		if k.e.img != nil && k.e.img.snap == snap {
			snap.done(k.e)
		}
	}
	snap.frozen, snap.pending, snap.current = nil, nil, nil
	if db.snap == snap {
		db.snap = nil
	}
	if snap.keys != nil {
		flushed := append(snap.later, snap.keys)
		snap.keys, snap.later = nil, nil
		n := 0
		for _, m := range flushed {
			n += m.len()
		}
		db.lazy.run(int64(n), func() {
			for _, m := range flushed {
				freeAll(m)
			}
		})
	}
}

// index finds array a among the image's arrays by identity, or -1 (an
// array the filter allocated after the point in time).
func (im *image) index(a []byte) int {
	if len(a) == 0 {
		return -1
	}
	for i, b := range im.arrays {
		if len(b) > 0 && &b[0] == &a[0] {
			return i
		}
	}
	return -1
}

// Write is the redisbloom.Guard hook: before bytes [off, off+n) of array a
// change, it copies the chunks holding them that the writer still needs.
func (im *image) Write(a []byte, off, n int) {
	i := im.index(a)
	if i < 0 || i < im.doneArr || n <= 0 {
		return
	}
	first, last := off/cowChunk, (off+n-1)/cowChunk
	if i == im.doneArr && first < im.doneChunk {
		first = im.doneChunk
	}
	for c := first; c <= last; c++ {
		if im.copies == nil {
			im.copies = make([]*cowCopy, len(im.arrays))
		}
		if im.copies[i] == nil {
			im.copies[i] = newCowCopy(len(a))
		}
		if n := im.copies[i].save(a, c); n > 0 {
			im.snap.Copied.Add(int64(n))
		}
	}
}

// Release is the redisbloom.Guard hook for an array the filter no longer
// needs: it is freed when the writer is done with it.
func (im *image) Release(a []byte) {
	if im.index(a) >= 0 {
		im.released = append(im.released, a)
		return
	}
	redisbloom.FreeArray(a)
}

type crcWriter struct {
	w io.Writer
	h hash.Hash32
}

// Write writes p and adds it to the checksum.
func (c *crcWriter) Write(p []byte) (int, error) {
	c.h.Write(p)
	return c.w.Write(p)
}

// writeSnapshot writes snap's image to w. It takes the keyspace lock
// briefly and often (see the comment at the top of this file); the caller
// must call db.endSnapshot whatever the outcome.
func (db *DB) WriteSnapshot(w io.Writer, snap *Snapshot) error {
	cw := &crcWriter{w: w, h: crc32.New(castagnoli)}
	stage := make([]byte, 0, holdBytes+cowChunk)
	stage = append(stage, snapMagic...)
	stage = binary.LittleEndian.AppendUint64(stage, snap.Gen)
	stage = binary.LittleEndian.AppendUint64(stage, uint64(snap.Count))
	written := 0
	var k snapKey // the entry being written, across holds of the lock
	for more := true; more; {
		keys := 0
		db.mu.Lock()
		for len(stage) < holdBytes && keys < holdKeys {
			if k.e == nil {
				if k, more = snap.next(db); !more {
					break
				}
			}
			im := k.e.img
			if !im.started {
				im.started = true
				stage = binary.LittleEndian.AppendUint32(stage, uint32(len(k.key)))
				stage = append(stage, k.key...)
				stage = append(stage, byte(im.Kind))
				stage = binary.LittleEndian.AppendUint64(stage, uint64(im.ExpireAt))
				stage = binary.LittleEndian.AppendUint32(stage, uint32(len(im.header)))
				stage = append(stage, im.header...)
			}
			// Copy chunks until the stage is full or the entry is done.
			for im.doneArr < len(im.arrays) && len(stage) < holdBytes {
				a := im.arrays[im.doneArr]
				c := im.doneChunk
				lo, hi := c*cowChunk, min((c+1)*cowChunk, len(a))
				if lo < hi {
					var cp *cowCopy
					if im.copies != nil {
						cp = im.copies[im.doneArr]
					}
					var copied bool
					if stage, copied = cp.take(stage, c); !copied {
						stage = append(stage, a[lo:hi]...)
					}
				}
				if hi >= len(a) {
					im.doneArr, im.doneChunk = im.doneArr+1, 0
				} else {
					im.doneChunk++
				}
			}
			if im.doneArr < len(im.arrays) {
				break // stage full in the middle of this entry
			}
			snap.done(k.e)
			snap.Processed.Add(1)
			k, snap.current = snapKey{}, nil
			written++
			keys++
		}
		db.mu.Unlock()
		if _, err := cw.Write(stage); err != nil {
			return err
		}
		stage = stage[:0]
		// Let the goroutines serving clients run now rather than at
		// the next preemption (up to 10 ms away): the writer is the only
		// long-running goroutine and clients are waiting for a P.
		runtime.Gosched()
	}
	if written != snap.Count {
		// Every key of the point in time is written exactly once (see
		// leaving and next); anything else is a bug, not a snapshot.
		return fmt.Errorf("snapshot: wrote %d keys of the %d at its point in time", written, snap.Count)
	}
	if len(stage) > 0 {
		if _, err := cw.Write(stage); err != nil {
			return err
		}
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, cw.h.Sum32()))
	return err
}

type crcReader struct {
	r io.Reader
	h hash.Hash32
}

// Read reads into p and adds what was read to the checksum.
func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	return n, err
}

// readSnapshot loads a snapshot into the keyspace and returns its
// generation and key count. Every length read is bounded by the file size,
// so a forged header cannot make it allocate more than the file could hold.
func (db *DB) ReadSnapshot(f aof.ReadFile, path string) (uint64, int, error) {
	fail := func(what string, err error) (uint64, int, error) {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, aof.ErrCorrupt) {
			return 0, 0, fmt.Errorf("snapshot %s is damaged (%s); refusing to start with a partial database — restore it or move it away: %w", path, what, aof.ErrCorrupt)
		}
		return 0, 0, fmt.Errorf("snapshot %s is damaged (%s: %v); refusing to start with a partial database — restore it or move it away: %w", path, what, err, aof.ErrCorrupt)
	}
	cr := &crcReader{r: bufio.NewReaderSize(f, 1<<20), h: crc32.New(castagnoli)}
	remaining := f.Size()
	read := func(n int64) ([]byte, error) {
		if n > remaining {
			return nil, aof.ErrCorrupt
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
		return fail("header", err)
	}
	gen := binary.LittleEndian.Uint64(head[8:])
	switch string(head[:8]) {
	case snapMagic:
	case snapMagicV1:
		gen++
	default:
		return fail("bad magic", nil)
	}
	nkeys := binary.LittleEndian.Uint64(head[16:])
	if nkeys > uint64(remaining) {
		return fail("impossible key count", nil)
	}
	keys := newTable()
	keys.reserve(int(nkeys))
	release := func() {
		keys.all(func(e *Entry) { e.Free() })
	}
	for i := uint64(0); i < nkeys; i++ {
		lb, err := read(4)
		if err != nil {
			release()
			return fail(fmt.Sprintf("key %d", i), err)
		}
		kb, err := read(int64(binary.LittleEndian.Uint32(lb)))
		if err != nil {
			release()
			return fail(fmt.Sprintf("key %d", i), err)
		}
		meta, err := read(13)
		if err != nil {
			release()
			return fail(fmt.Sprintf("key %q", kb), err)
		}
		kind := Kind(meta[0])
		exp := int64(binary.LittleEndian.Uint64(meta[1:]))
		hdr, err := read(int64(binary.LittleEndian.Uint32(meta[9:])))
		if err != nil {
			release()
			return fail(fmt.Sprintf("key %q header", kb), err)
		}
		e := &Entry{Kind: kind, ExpireAt: exp, lru: db.clock}
		// The header's sizes must fit in what is left of the file.
		fits := func(n uint64) error {
			if n > uint64(remaining) {
				return aof.ErrCorrupt
			}
			return nil
		}
		arrays, err := e.loadHeader(hdr, fits)
		if err != nil {
			release()
			return fail(fmt.Sprintf("key %q: bad filter header", kb), err)
		}
		for _, a := range arrays {
			if int64(len(a)) > remaining {
				e.Free()
				release()
				return fail(fmt.Sprintf("key %q data", kb), nil)
			}
			if _, err := io.ReadFull(cr, a); err != nil {
				e.Free()
				release()
				return fail(fmt.Sprintf("key %q data", kb), err)
			}
			remaining -= int64(len(a))
		}
		k := string(kb)
		h := scanHash(k)
		if old := keys.find(k, h); old != nil {
			keys.remove(old, h)
			old.Free()
		}
		e.key = k
		keys.insert(e, h)
	}
	want := cr.h.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(cr.r, sum[:]); err != nil {
		release()
		return fail("missing checksum", err)
	}
	if binary.LittleEndian.Uint32(sum[:]) != want {
		release()
		return fail("checksum mismatch", nil)
	}
	if n, _ := cr.r.Read(sum[:1]); n != 0 {
		release()
		return fail("trailing data", nil)
	}
	n := keys.len()
	keys.all(func(e *Entry) { db.attach(e) })
	if db.keys.len() == 0 {
		db.keys = keys
		return gen, n, nil
	}
	var loaded []*Entry
	keys.all(func(e *Entry) { loaded = append(loaded, e) })
	for _, e := range loaded {
		e.next = nil
		h := scanHash(e.key)
		if old := db.keys.find(e.key, h); old != nil {
			db.keys.remove(old, h)
		}
		db.keys.insert(e, h)
	}
	return gen, n, nil
}

// loadHeader fills e (whose Kind is set) from its snapshot header hdr and
// returns the arrays its data is read into, in the file's order; fits
// checks a size the header names against what is left of the file. Both
// snapshot readers (ReadSnapshot, EachSnapshotEntry) use it.
func (e *Entry) loadHeader(hdr []byte, fits func(uint64) error) (arrays [][]byte, err error) {
	switch e.Kind {
	case KindBloom:
		e.BF, err = redisbloom.LoadBloomHeader(hdr, fits)
		if err == nil {
			for j := range e.BF.NumLinks() {
				arrays = append(arrays, e.BF.Link(j).Data)
			}
		}
	case KindCuckoo:
		e.CF, err = redisbloom.LoadCuckooHeader(hdr, math.MaxUint16, fits)
		if err == nil {
			arrays = e.CF.Filters
		}
	case KindString:
		e.val = &value{str: string(hdr)}
	case KindTDigest:
		var d *tdigest.Digest
		if d, err = tdigest.Read(bytes.NewReader(hdr)); err == nil {
			e.val = &value{td: d}
		}
	case KindCMS, KindTopK:
		e.val, arrays, err = loadSketch(e.Kind, hdr, fits)
	case KindNative:
		e.NF, err = loadSnapshotHeader(hdr, fits)
		if err == nil {
			arrays, _ = e.NF.Ordered()
		}
	default:
		err = fmt.Errorf("%w: unknown kind %d", aof.ErrCorrupt, e.Kind)
	}
	return arrays, err
}
