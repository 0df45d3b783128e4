package server

import (
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/google/btree"
)

// valueKind is the type of a key's value.
type valueKind uint8

// Value kinds, with the names TYPE reports (RedisBloom's module type names).
const (
	kindBloom  valueKind = 1
	kindCuckoo valueKind = 2
	// kindString is a plain Redis string (SET/GET), kept so that clients
	// mixing strings and filters get WRONGTYPE where RedisBloom gives it.
	kindString valueKind = 3
	// kindNative is one of bloomkit's own filters (classic, blocked or
	// window; native.go), created with BF.RESERVE's LAYOUT or WINDOW.
	kindNative valueKind = 4
)

// String is the name TYPE reports for the kind.
func (k valueKind) String() string {
	switch k {
	case kindBloom:
		return "MBbloom--"
	case kindCuckoo:
		return "MBbloomCF"
	case kindString:
		return "string"
	case kindNative:
		return "BKbloom--"
	}
	return "none"
}

// entry is one key's value. One is kept per key, so its size is paid once
// per key (many small filters are a real workload): the fields are laid out
// to fill 80 bytes, an allocation size class, with no padding (a test pins
// it).
type entry struct {
	kind valueKind
	// countedIn is the number of the recount pass that counted the entry
	// (see recountPass); counted is the size it counted.
	countedIn uint32
	bf        *redisbloom.Bloom
	cf        *redisbloom.Cuckoo
	nf        *nativeFilter
	// str is a string's value. It is never changed in place (a write
	// replaces the entry), so a snapshot's image can share it.
	str      string
	expireAt int64 // unix milliseconds; 0 = no expiry
	// img is the entry's point-in-time image while a snapshot still needs
	// it; epoch is the newest snapshot that no longer needs the entry (it
	// wrote it, or the entry did not exist at its point in time).
	img     *image
	epoch   uint64
	counted uint64
}

// strBytes is a string value as bytes, without a copy: the bytes must not
// be changed (they are the string's).
func (e *entry) strBytes() []byte { return unsafe.Slice(unsafe.StringData(e.str), len(e.str)) }

// keyOverhead approximates the per-key bookkeeping cost counted against
// --maxmemory besides the key bytes and the filter's arrays.
const keyOverhead = 160

func (e *entry) dataBytes() uint64 {
	switch e.kind {
	case kindBloom:
		return e.bf.MemUsage()
	case kindCuckoo:
		return e.cf.MemUsage()
	case kindString:
		return uint64(len(e.str))
	case kindNative:
		return e.nf.memUsage()
	}
	return 0
}

// errOOM is returned when an allocation would exceed the memory limit.
var errOOM = errors.New("allocation exceeds maxmemory")

// keyspace is the keys: key → filter, with expiry. All access goes through
// the server's single mutex (mu), like Redis's single thread.
type keyspace struct {
	mu   sync.Mutex
	keys map[string]*entry
	// order holds every key of keys sorted by (scanHash, key): SCAN resumes
	// from a cursor in O(log N) and metrics pick keys without sorting.
	// Kept in step with keys by link, remove and flush (reindex rebuilds
	// it after a snapshot was loaded into keys directly).
	order *btree.BTreeG[scanKey]
	// expires counts the keys with an expiry (INFO keyspace), kept by
	// link, remove and setExpire.
	expires int
	// pass is the memory recount running in steps (recountStep).
	pass    recountPass
	used    uint64 // bytes accounted: keys + filters
	limit   uint64 // 0 = none
	now     func() time.Time
	dirty   uint64 // mutations since start (changes whenever state changes)
	expired uint64 // keys removed by expiry
	// loading is set while the log is replayed: keys do not expire then
	// (as in Redis), so replay reproduces the original history.
	loading bool
	// onExpire is told about each key removed by expiry (the server logs
	// a DEL so that a later replay does not depend on the clock).
	onExpire func(key string)
	// snap is the snapshot being written, if any; epoch numbers snapshots.
	snap  *snapshot
	epoch uint64
	// probe is scratch space for native filters' lookups (cmd_native.go).
	probe probe
	// merges are the BF.MERGEs still ORing in the background (merge.go).
	merges []*mergeJob
	// allowFn is allow as a func value, made once: every filter holds it
	// (AllowAlloc), and a method value made per filter would cost each key
	// an allocation.
	allowFn func(uint64) error
}

func newDB(limit uint64, now func() time.Time) *keyspace {
	if now == nil {
		now = time.Now
	}
	db := &keyspace{keys: map[string]*entry{}, order: newOrder(), limit: limit, now: now}
	db.allowFn = db.allow
	return db
}

func newOrder() *btree.BTreeG[scanKey] {
	return btree.NewG(32, func(a, b scanKey) bool {
		if a.h != b.h {
			return a.h < b.h
		}
		return a.k < b.k
	})
}

// link adds key → e to the map and the scan order (key not present).
func (db *keyspace) link(key string, e *entry) {
	db.keys[key] = e
	h := scanHash(key)
	db.order.ReplaceOrInsert(scanKey{h, key})
	if db.pass.active && h < db.pass.cursor {
		db.pass.recheck[key] = struct{}{}
	}
	if e.expireAt != 0 {
		db.expires++
	}
}

// setExpire changes a key's expiry, keeping the expires count.
func (db *keyspace) setExpire(e *entry, at int64) {
	if (e.expireAt != 0) != (at != 0) {
		if at != 0 {
			db.expires++
		} else {
			db.expires--
		}
	}
	e.expireAt = at
}

// reindex rebuilds the scan order and the expires count from the map.
func (db *keyspace) reindex() {
	db.order = newOrder()
	db.expires = 0
	for k, e := range db.keys {
		db.order.ReplaceOrInsert(scanKey{scanHash(k), k})
		if e.expireAt != 0 {
			db.expires++
		}
	}
}

func (db *keyspace) nowMs() int64 { return db.now().UnixMilli() }

// allow is the filters' allocation check against the memory limit.
func (db *keyspace) allow(n uint64) error {
	if db.limit != 0 && db.used+n > db.limit {
		return errOOM
	}
	db.used += n
	return nil
}

// get returns the live entry for key, removing it first if expired.
func (db *keyspace) get(key string) *entry {
	e, ok := db.keys[key]
	if !ok {
		return nil
	}
	if e.expireAt != 0 && !db.loading && e.expireAt <= db.nowMs() {
		db.expire(key, e)
		return nil
	}
	return e
}

func (db *keyspace) expire(key string, e *entry) {
	db.drop(key, e)
	db.expired++
	if db.onExpire != nil {
		db.onExpire(key)
	}
}

// getb is get for a key given as bytes, without allocating.
func (db *keyspace) getb(key []byte) *entry {
	e, ok := db.keys[string(key)]
	if !ok {
		return nil
	}
	if e.expireAt != 0 {
		return db.get(string(key))
	}
	return e
}

// drop removes key and releases its filter's memory, unless a snapshot
// being written still needs it (it is released when written).
func (db *keyspace) drop(key string, e *entry) {
	db.remove(key, e)
	db.preserve(e)
	if e.img != nil {
		e.img.dropped = true
		return
	}
	e.release()
}

// lazyFreeBytes is the size from which a removed entry's arrays are
// returned to the system off the keyspace lock, as Redis's lazy free does
// for large values: unmapping a 1 GiB filter takes ~0.3 s, every client
// would wait for it. Smaller ones are freed at once (a goroutine costs
// more than they do).
const lazyFreeBytes = 1 << 20

// release frees the arrays of an entry that nothing reaches any more (it
// left the keyspace and no snapshot needs it): large ones off the lock.
func (e *entry) release() {
	if e.dataBytes() < lazyFreeBytes {
		e.free()
		return
	}
	go lazyFree(e)
}

// lazyFree frees an entry in the background (a variable: tests hold it
// to show that nothing waits for it).
var lazyFree = func(e *entry) { e.free() }

func (e *entry) free() {
	switch e.kind {
	case kindBloom:
		e.bf.Free()
	case kindCuckoo:
		e.cf.Free()
	case kindNative:
		e.nf.free()
	}
}

// remove takes key out of the keyspace without releasing its filter
// (RENAME moves it).
func (db *keyspace) remove(key string, e *entry) {
	db.finishMerges(e) // a merge it is part of took effect already
	db.leaving(key, e)
	delete(db.keys, key)
	db.order.Delete(scanKey{scanHash(key), key})
	db.pass.uncount(e)
	if e.expireAt != 0 {
		db.expires--
	}
	sub := e.dataBytes() + uint64(len(key)) + keyOverhead
	if sub > db.used {
		sub = db.used
	}
	db.used -= sub
	db.dirty++
}

// put stores a new entry whose filter memory was already accounted by allow.
func (db *keyspace) put(key string, e *entry) {
	if old, ok := db.keys[key]; ok {
		db.drop(key, old)
	}
	if e.img == nil {
		e.epoch = db.epoch // no running snapshot needs it
	}
	db.link(key, e)
	db.used += uint64(len(key)) + keyOverhead
	// the filter's arrays were counted by allow; the struct overheads of
	// MemUsage beyond the arrays are small and added here.
	db.used += e.dataBytes() - dataArrays(e)
	db.dirty++
}

func dataArrays(e *entry) uint64 {
	switch e.kind {
	case kindBloom:
		return e.bf.DataBytes()
	case kindCuckoo:
		return e.cf.DataBytes()
	case kindString:
		return uint64(len(e.str)) // counted by the SET that stored it
	case kindNative:
		return e.nf.dataBytes()
	}
	return 0
}

// recountPass recomputes the memory accounting in steps of about a
// millisecond of lock each (a full recount of 500k keys holds the lock for
// ≈ 0.2 s). Keys are counted in scan order; cursor is the first hash not
// yet counted. A key the pass already counted that changes meanwhile (a
// write names it, it is removed, or it is created behind the cursor) is
// taken out of the sum and recounted at the end, so the result is the
// accounting at the moment the pass ends, whatever ran between steps.
type recountPass struct {
	active bool
	// id numbers passes, for entry.countedIn; 0 is never a pass's (it
	// marks an entry no running pass counted), so the numbering skips it
	// when it wraps (every pass stamps every key, so no older stamp can
	// be mistaken for the running pass's).
	id      uint32
	cursor  uint64
	sum     uint64
	recheck map[string]struct{}
}

// uncount takes e out of the pass's sum if the pass counted it.
func (p *recountPass) uncount(e *entry) {
	if p.active && e.countedIn == p.id {
		p.sum -= e.counted
		e.countedIn = 0
	}
}

// touch is called (db.mu held) before a write to key: if the pass is
// behind it, the key is recounted at the end of the pass.
func (db *keyspace) touch(key []byte) {
	p := &db.pass
	if h := scanHash(string(key)); h >= p.cursor {
		return
	}
	if e, ok := db.keys[string(key)]; ok {
		p.uncount(e)
	}
	p.recheck[string(key)] = struct{}{}
}

func entrySize(k string, e *entry) uint64 {
	return uint64(len(k)) + keyOverhead + e.dataBytes()
}

// recountStep advances the memory recount for about budget (db.mu held),
// starting a pass if none runs; it reports whether the pass finished (and
// db.used was set from it).
func (db *keyspace) recountStep(budget time.Duration) bool {
	p := &db.pass
	if !p.active {
		id := p.id + 1
		if id == 0 {
			id = 1
		}
		*p = recountPass{active: true, id: id, recheck: map[string]struct{}{}}
	}
	deadline := time.Now().Add(budget)
	n := 0
	done := true
	var last uint64
	started := false
	db.order.AscendGreaterOrEqual(scanKey{h: p.cursor}, func(sk scanKey) bool {
		if started && sk.h != last {
			// A hash is finished: move the cursor past it, maybe stop.
			p.cursor = sk.h
			if n&63 == 0 && time.Now().After(deadline) {
				done = false
				return false
			}
		}
		started, last = true, sk.h
		e := db.keys[sk.k]
		e.counted, e.countedIn = entrySize(sk.k, e), p.id
		p.sum += e.counted
		n++
		return true
	})
	if !done {
		return false
	}
	for k := range p.recheck {
		if e, ok := db.keys[k]; ok && e.countedIn != p.id {
			p.sum += entrySize(k, e)
		}
	}
	db.used = p.sum
	p.active, p.recheck = false, nil
	return true
}

// recount recomputes the memory accounting from scratch.
// It is O(N) with the lock held: start-up only; the server recounts with
// recountStep.
func (db *keyspace) recount() {
	db.pass = recountPass{id: db.pass.id}
	var n uint64
	for k, e := range db.keys {
		n += uint64(len(k)) + keyOverhead + e.dataBytes()
	}
	db.used = n
}

// attach makes a filter's growth allocations go through the limit check.
func (db *keyspace) attach(e *entry) {
	switch e.kind {
	case kindBloom:
		e.bf.AllowAlloc = db.allowFn
	case kindCuckoo:
		e.cf.AllowAlloc = db.allowFn
	}
}

func (db *keyspace) flush() {
	db.finishMerges(nil)
	if len(db.keys) > 0 {
		db.dirty++
	}
	old := db.keys
	if snap := db.snap; snap != nil && snap.keys == nil {
		// A snapshot is being written: it goes on walking the old
		// keyspace, which no command reaches any more, so its entries
		// need no freezing and no queueing; they are freed when the
		// snapshot ends (endSnapshot). O(1) with the lock held, like
		// the rest of FLUSHALL: 1M keys took 15 s one by one.
		snap.keys, snap.order = old, db.order
	} else if snap != nil {
		// Flushed again while the same snapshot runs: every entry here
		// is newer than its point in time (the first flush took all of
		// those), so the snapshot needs none of them.
		snap.later = append(snap.later, old)
	} else {
		// No snapshot is being written, so nothing but the map holds
		// the entries (a scrape re-checks its entry under the lock):
		// their arrays are returned to the system off the lock, as
		// Redis's lazy free does, and FLUSHALL is O(1) with it held.
		go freeAll(old)
	}
	db.keys = map[string]*entry{}
	db.order = newOrder()
	db.expires = 0
	db.used = 0
	db.pass = recountPass{id: db.pass.id}
}

// freeAll frees the arrays of entries that left the keyspace together and
// that nothing else reaches (run it off the lock).
func freeAll(keys map[string]*entry) {
	for _, e := range keys {
		if e.dataBytes() >= lazyFreeBytes {
			lazyFree(e)
		} else {
			e.free()
		}
	}
}

// expireSome removes up to max expired keys, sampling like Redis's active
// expiry; it reports how many were removed.
func (db *keyspace) expireSome(max int) int {
	now := db.nowMs()
	n, seen := 0, 0
	for k, e := range db.keys { // map order is random
		if seen >= max*4 || n >= max {
			break
		}
		seen++
		if e.expireAt != 0 && e.expireAt <= now {
			db.expire(k, e)
			n++
		}
	}
	return n
}

// scan visits keys in scan order from cursor (a scan hash) on: at least
// count keys, then the rest of the last hash's keys, so that a cursor never
// splits keys of equal hash. It returns the next cursor (0 at the end).
// Expired keys are visited (they count) but not passed to fn. Work is
// O(count + log N): keys present for a whole scan are each visited once
// whatever is added or removed meanwhile, since a key's position depends
// on its own hash only.
func (db *keyspace) scan(cursor uint64, count int, fn func(k string, e *entry)) uint64 {
	now := db.nowMs()
	next := uint64(0)
	visited := 0
	var last uint64
	db.order.AscendGreaterOrEqual(scanKey{h: cursor}, func(sk scanKey) bool {
		if visited > 0 && visited >= count && sk.h != last {
			next = sk.h
			return false
		}
		visited++
		last = sk.h
		e := db.keys[sk.k]
		if e.expireAt != 0 && e.expireAt <= now && !db.loading {
			return true
		}
		fn(sk.k, e)
		return true
	})
	return next
}

type scanKey struct {
	h uint64
	k string
}

// scanHash is FNV-1a with the top bit cleared, so cursors stay positive and
// next-cursor values (h+1) never wrap to 0.
func scanHash(k string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(k); i++ {
		h ^= uint64(k[i])
		h *= 1099511628211
	}
	return h >> 1
}
