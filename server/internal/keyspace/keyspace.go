package keyspace

import (
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/tdigest"
)

// Kind is the type of a key's value.
type Kind uint8

// Value kinds, with the names TYPE reports (RedisBloom's module type names).
const (
	KindBloom  Kind = 1
	KindCuckoo Kind = 2
	// kindString is a plain Redis string (SET/GET), kept so that clients
	// mixing strings and filters get WRONGTYPE where RedisBloom gives it.
	KindString Kind = 3
	// kindNative is one of bloomkit's own filters (classic, blocked or
	// window; native.go), created with BF.RESERVE's LAYOUT or WINDOW.
	KindNative Kind = 4
	// KindTDigest is RedisBloom's t-digest (TDIGEST.*), held in the
	// entry's value pointer (Entry.TD).
	KindTDigest Kind = 5
	// KindCMS is RedisBloom's Count-Min Sketch (CMS.*), KindTopK its
	// Top-K (TOPK.*): values that are neither filters nor strings, held
	// in the entry's value (sketch.go).
	KindCMS  Kind = 6
	KindTopK Kind = 7
)

// String is the name TYPE reports for the kind.
func (k Kind) String() string {
	switch k {
	case KindBloom:
		return "MBbloom--"
	case KindCuckoo:
		return "MBbloomCF"
	case KindString:
		return "string"
	case KindNative:
		return "BKbloom--"
	case KindTDigest:
		return "TDIS-TYPE"
	case KindCMS:
		return "CMSk-TYPE"
	case KindTopK:
		return "TopK-TYPE"
	}
	return "none"
}

// Entry is one key's value. One is kept per key, so its size is paid once
// per key (many small filters are a real workload): the fields are laid out
// to fit 80 bytes, an allocation size class (a test pins it). It is also
// the key's slot in the keyspace's table (table.go): its key and the next
// entry of its bucket.
type Entry struct {
	key  string
	next *Entry // in the table's bucket, in scan order
	BF   *redisbloom.Bloom
	CF   *redisbloom.Cuckoo
	NF   *NativeFilter
	// val is a string's value or a sketch's or a t-digest's (rare among
	// filters: one pointer here, not a string's two words; sketch.go).
	// A string is never changed in place (a write replaces the entry), so
	// a snapshot's image can share it.
	val      *value
	ExpireAt int64 // unix milliseconds; 0 = no expiry
	// img is the entry's point-in-time image while a snapshot still needs
	// it; epoch is the newest snapshot that no longer needs the entry (it
	// wrote it, or the entry did not exist at its point in time).
	img   *image
	epoch uint32
	Kind  Kind
	// tag is the low 8 bits of the key's scan hash (bits the bucket
	// index does not use), in what would be padding: a lookup skips the
	// other entries of its chain without reading their keys, which live
	// in allocations of their own (a cache miss each).
	tag uint8
	// lru is the LRU clock (DB.SetClock) at the key's last access, as
	// Redis keeps it in every object for OBJECT IDLETIME: here in minutes
	// and 16 bits, in the rest of the padding (45 days before it wraps).
	lru uint16
}

// StrBytes is a string value as bytes, without a copy: the bytes must not
// be changed (they are the string's).
func (e *Entry) StrBytes() []byte {
	if e.Kind != KindString || e.val == nil {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(e.val.str), len(e.val.str))
}

// NewString is a string value's entry.
func NewString(val string, expireAt int64) *Entry {
	s := &stringEntry{Entry{Kind: KindString, ExpireAt: expireAt}, value{str: val}}
	s.e.val = &s.v
	return &s.e
}

// stringEntry is a string's entry and its value in one allocation: 144
// bytes, the size class the two take apart (80 and 64), so a key costs
// the same memory and one allocation fewer, and reading the value after
// the entry touches memory next to it.
type stringEntry struct {
	e Entry
	v value
}

// TD is a t-digest entry's digest, or nil for another kind.
func (e *Entry) TD() *tdigest.Digest {
	if e.Kind != KindTDigest || e.val == nil {
		return nil
	}
	return e.val.td
}

// NewTDigest is a t-digest's entry.
func NewTDigest(d *tdigest.Digest, expireAt int64) *Entry {
	return &Entry{Kind: KindTDigest, val: &value{td: d}, ExpireAt: expireAt}
}

// KeyOverhead approximates the per-key bookkeeping cost counted against
// --maxmemory besides the key bytes and the filter's arrays.
const KeyOverhead = 160

func (e *Entry) DataBytes() uint64 {
	switch e.Kind {
	case KindBloom:
		return e.BF.MemUsage()
	case KindCuckoo:
		return e.CF.MemUsage()
	case KindString:
		return uint64(len(e.StrBytes()))
	case KindNative:
		return e.NF.MemUsage()
	case KindTDigest:
		return uint64(e.TD().MemoryUsage())
	case KindCMS, KindTopK:
		return e.sketchBytes()
	}
	return 0
}

// errOOM is returned when an allocation would exceed the memory limit.
var errOOM = errors.New("allocation exceeds maxmemory")

// DB is the keys: key → filter, with expiry. All access goes through
// the server's single mutex (mu), like Redis's single thread.
type DB struct {
	mu sync.Mutex
	// keys maps each key to its entry and holds them in scan order,
	// sorted by (scanHash, key): SCAN resumes from a cursor in O(1) and
	// metrics pick keys without sorting (table.go).
	keys *table
	// expires counts the keys with an expiry (INFO keyspace), kept by
	// link, remove and setExpire.
	expires int
	// natives are the entries of kind KindNative, kept with expires: a
	// Redis replica cannot hold them, and the master asks for their count
	// and a few names before it serves one (O(1)).
	natives map[*Entry]struct{}
	// pass is the memory recount running in steps (recountStep).
	pass    recountPass
	used    uint64 // bytes accounted: keys + filters
	limit   uint64 // 0 = none
	Now     func() time.Time
	dirty   uint64 // mutations since start (changes whenever state changes)
	expired uint64 // keys removed by expiry
	// hits and misses count the lookups for reading (INFO
	// keyspace_hits/keyspace_misses): Get and GetBytes count while
	// countReads is set, which the server sets around a command that does
	// not write, and ReadLookup counts a write's lookups for reading
	// (Redis counts lookups for reading, not those for writing).
	hits, misses uint64
	countReads   bool
	// readLookups is set, which the server sets around a client's
	// command, reads and writes alike: ReadLookup counts hits and misses.
	readLookups bool
	// loadLimit is the limit BeginLoad lifted.
	loadLimit uint64
	// clock is the LRU clock (SetClock) that accesses stamp entries with.
	clock uint16
	// loading is set while the log is replayed: keys do not expire then
	// (as in Redis), so replay reproduces the original history.
	loading bool
	// following is set on a replica: its master's DELs remove expired
	// keys, so reads treat them as absent without removing them (as a
	// Redis replica does), and the active expiry does nothing.
	following bool
	// onExpire is told about each key removed by expiry (the server logs
	// a DEL so that a later replay does not depend on the clock).
	OnExpire func(key string)
	// snap is the snapshot being written, if any; epoch numbers snapshots.
	snap  *Snapshot
	epoch uint32
	// probe is scratch space for native filters' lookups (Scratch).
	probe Probe
	// merges are the BF.MERGEs still ORing in the background (merge.go).
	merges []*MergeJob
	// sampled is ExpireSome's scratch space.
	sampled []*Entry
	// allowFn is Allow as a func value, made once: every filter holds it
	// (AllowAlloc), and a method value made per filter would cost each key
	// an allocation.
	allowFn func(uint64) error
	// lazy counts the values freed off the lock.
	lazy lazyFree
}

func New(limit uint64, now func() time.Time) *DB {
	if now == nil {
		now = time.Now
	}
	db := &DB{keys: newTable(), limit: limit, Now: now}
	db.allowFn = db.Allow
	db.SetClock(now())
	return db
}

// link adds key → e to the keyspace (key not present).
func (db *DB) Link(key string, e *Entry) { db.link(key, e, scanHash(key)) }

// link is Link given the key's scan hash h.
func (db *DB) link(key string, e *Entry, h uint64) {
	e.key = key
	e.lru = db.clock
	db.keys.insert(e, h)
	if db.pass.active && h < db.pass.cursor {
		db.pass.recheck[key] = struct{}{}
	}
	if e.ExpireAt != 0 {
		db.expires++
	}
	if e.Kind == KindNative {
		db.addNative(e)
	}
}

// Reserve sizes an empty keyspace for n keys about to be added (a
// snapshot's or an RDB's key count), so that adding them does not double
// its table on the way: a hint only, it changes nothing but the speed.
func (db *DB) Reserve(n int) { db.keys.reserve(n) }

func (db *DB) addNative(e *Entry) {
	if db.natives == nil {
		db.natives = make(map[*Entry]struct{})
	}
	db.natives[e] = struct{}{}
}

// Natives returns how many keys hold one of bloomkit's own filters (a
// kind a Redis server cannot hold) and up to max of their names, in no
// particular order (db.mu held). It costs O(max), whatever the keyspace.
func (db *DB) Natives(max int) (int, []string) {
	var names []string
	for e := range db.natives {
		if len(names) >= max {
			break
		}
		names = append(names, e.key)
	}
	return len(db.natives), names
}

// setExpire changes a key's expiry, keeping the expires count.
func (db *DB) SetExpire(e *Entry, at int64) {
	if (e.ExpireAt != 0) != (at != 0) {
		if at != 0 {
			db.expires++
		} else {
			db.expires--
		}
	}
	e.ExpireAt = at
}

// Reindex recounts the keys with an expiry and lists the native ones
// (after a snapshot was loaded).
func (db *DB) Reindex() {
	db.expires = 0
	db.natives = nil
	db.keys.all(db.index)
}

// index counts e in the expires count and the list of native keys
// (Reindex).
func (db *DB) index(e *Entry) {
	if e.ExpireAt != 0 {
		db.expires++
	}
	if e.Kind == KindNative {
		db.addNative(e)
	}
}

func (db *DB) NowMs() int64 { return db.Now().UnixMilli() }

// allow is the filters' allocation check against the memory limit.
func (db *DB) Allow(n uint64) error {
	if db.limit != 0 && db.used+n > db.limit {
		return errOOM
	}
	db.used += n
	return nil
}

// AllowFn is Allow as a func value for a filter's AllowAlloc and the
// redisbloom constructors: one made with the keyspace and shared, so a new
// key does not pay for a method value of its own.
func (db *DB) AllowFn() func(uint64) error { return db.allowFn }

// Get returns the live entry for key, removing it first if expired, and
// counts an access (OBJECT IDLETIME).
func (db *DB) Get(key string) *Entry {
	e := db.getNoTouch(key)
	if e != nil {
		e.lru = db.clock
	}
	return e
}

// GetNoTouch is Get without counting an access, as Redis's EXISTS, TYPE
// and TTL look (LOOKUP_NOTOUCH); hits and misses are counted.
func (db *DB) GetNoTouch(key string) *Entry { return db.getNoTouch(key) }

func (db *DB) getNoTouch(key string) *Entry {
	e := db.keys.find(key, scanHash(key))
	ok := e != nil
	if ok && e.ExpireAt != 0 && !db.loading && e.ExpireAt <= db.NowMs() {
		if !db.following {
			db.expire(key, e)
		}
		e, ok = nil, false
	}
	if db.countReads {
		if ok {
			db.hits++
		} else {
			db.misses++
		}
	}
	return e
}

func (db *DB) expire(key string, e *Entry) {
	db.Drop(key, e)
	db.expired++
	if db.OnExpire != nil {
		db.OnExpire(key)
	}
}

// getb is get for a key given as bytes, without allocating.
func (db *DB) GetBytes(key []byte) *Entry {
	e := db.keys.findBytes(key, scanHashBytes(key))
	ok := e != nil
	if ok && e.ExpireAt != 0 {
		return db.Get(string(key))
	}
	if ok {
		e.lru = db.clock
	}
	if db.countReads {
		if ok {
			db.hits++
		} else {
			db.misses++
		}
	}
	return e
}

// drop removes key and releases its filter's memory, unless a snapshot
// being written still needs it (it is released when written).
func (db *DB) Drop(key string, e *Entry) {
	db.Remove(key, e)
	db.Preserve(e)
	if e.img != nil {
		e.img.dropped = true
		return
	}
	e.release(&db.lazy)
}

// LazyFreeBytes is the size from which a removed entry's arrays are
// returned to the system off the keyspace lock, as Redis's lazy free does
// for large values: unmapping a 1 GiB filter takes ~0.3 s, every client
// would wait for it. Smaller ones are freed at once (a goroutine costs
// more than they do).
const LazyFreeBytes = 1 << 20

// release frees the arrays of an entry that nothing reaches any more (it
// left the keyspace and no snapshot needs it): large ones off the lock.
func (e *Entry) release(l *lazyFree) {
	if e.DataBytes() < LazyFreeBytes {
		e.Free()
		return
	}
	l.run(1, func() { LazyFree(e) })
}

// lazyFree counts the values being freed off the lock, as Redis's INFO
// lazyfree_pending_objects and lazyfreed_objects do. The memory
// accounting (Used) already left them when they left the keyspace.
type lazyFree struct{ pending, freed atomic.Int64 }

// run frees n values with f on a goroutine of its own.
func (l *lazyFree) run(n int64, f func()) {
	l.pending.Add(n)
	go func() {
		f()
		l.freed.Add(n) // before pending drops: a reader that sees 0 pending sees them freed
		l.pending.Add(-n)
	}()
}

// LazyFreePending is the number of values left to free off the lock (INFO
// lazyfree_pending_objects); any goroutine may read it.
func (db *DB) LazyFreePending() int64 { return db.lazy.pending.Load() }

// LazyFreed is the number of values freed off the lock since the start
// (INFO lazyfreed_objects); any goroutine may read it.
func (db *DB) LazyFreed() int64 { return db.lazy.freed.Load() }

// LazyFree frees an entry in the background (a variable: tests hold it
// to show that nothing waits for it).
var LazyFree = func(e *Entry) { e.Free() }

func (e *Entry) Free() {
	switch e.Kind {
	case KindBloom:
		e.BF.Free()
	case KindCuckoo:
		e.CF.Free()
	case KindNative:
		e.NF.free()
	}
}

// remove takes key out of the keyspace without releasing its filter
// (RENAME moves it).
func (db *DB) Remove(key string, e *Entry) {
	db.FinishMerges(e) // a merge it is part of took effect already
	db.leaving(key, e)
	h := scanHash(key)
	db.keys.remove(e, h)
	db.pass.uncount(key, h, e)
	if e.ExpireAt != 0 {
		db.expires--
	}
	delete(db.natives, e)
	sub := e.DataBytes() + uint64(len(key)) + KeyOverhead
	if sub > db.used {
		sub = db.used
	}
	db.used -= sub
	db.dirty++
}

// put stores a new entry whose filter memory was already accounted by allow.
func (db *DB) Put(key string, e *Entry) {
	h := scanHash(key)
	if old := db.keys.find(key, h); old != nil {
		db.Drop(key, old)
	}
	if e.img == nil {
		e.epoch = db.epoch // no running snapshot needs it
	}
	db.link(key, e, h)
	db.used += uint64(len(key)) + KeyOverhead
	// the filter's arrays were counted by allow; the struct overheads of
	// MemUsage beyond the arrays are small and added here.
	db.used += e.DataBytes() - dataArrays(e)
	db.dirty++
}

func dataArrays(e *Entry) uint64 {
	switch e.Kind {
	case KindBloom:
		return e.BF.DataBytes()
	case KindCuckoo:
		return e.CF.DataBytes()
	case KindString:
		return uint64(len(e.StrBytes())) // counted by the SET that stored it
	case KindNative:
		return e.NF.DataBytes()
	case KindTDigest:
		return uint64(e.TD().MemoryUsage()) // counted by Allow when created
	case KindCMS, KindTopK:
		return e.sketchArrays()
	}
	return 0
}

// recountPass recomputes the memory accounting in steps of about a
// millisecond of lock each (a full recount of 500k keys holds the lock for
// ≈ 0.2 s). Keys are counted in scan order; cursor is the first hash not
// yet counted: between steps the pass has counted exactly the keys whose
// hash is below it, except those in recheck. A key the pass already
// counted that changes meanwhile (a write names it, it is removed, or it is
// created behind the cursor) is taken out of the sum, put in recheck and
// recounted at the end, so the result is the accounting at the moment the
// pass ends, whatever ran between steps. A key's size is what the pass
// counted until a write changes it, and every write tells the pass first
// (Touch), so the size to take out is the key's size when it is taken
// out: entries need not remember what was counted.
type recountPass struct {
	active  bool
	cursor  uint64
	sum     uint64
	recheck map[string]struct{}
}

// uncount takes key's entry e (h: its scan hash) out of the pass's sum if
// the pass counted it, and marks the key for the recount at the end.
func (p *recountPass) uncount(key string, h uint64, e *Entry) {
	if !p.active || h >= p.cursor {
		return
	}
	if _, done := p.recheck[key]; done {
		return
	}
	p.sum -= min(entrySize(key, e), p.sum)
	p.recheck[key] = struct{}{}
}

// touch is called (db.mu held) before a write to key: if the pass is
// behind it, the key is recounted at the end of the pass.
func (db *DB) Touch(key []byte) {
	p := &db.pass
	h := scanHashBytes(key)
	if h >= p.cursor {
		return
	}
	if _, done := p.recheck[string(key)]; done {
		return
	}
	if e := db.keys.findBytes(key, h); e != nil {
		p.sum -= min(entrySize(e.key, e), p.sum)
	}
	p.recheck[string(key)] = struct{}{}
}

func entrySize(k string, e *Entry) uint64 {
	return uint64(len(k)) + KeyOverhead + e.DataBytes()
}

// recountStep advances the memory recount for about budget (db.mu held),
// starting a pass if none runs; it reports whether the pass finished (and
// db.used was set from it).
func (db *DB) RecountStep(budget time.Duration) bool {
	p := &db.pass
	if !p.active {
		*p = recountPass{active: true, recheck: map[string]struct{}{}}
	}
	deadline := time.Now().Add(budget)
	n := 0
	done := true
	var last uint64
	started := false
	db.keys.ascend(p.cursor, "", func(e *Entry, h uint64) bool {
		if started && h != last {
			// A hash is finished: move the cursor past it, maybe stop.
			p.cursor = h
			if n&63 == 0 && time.Now().After(deadline) {
				done = false
				return false
			}
		}
		started, last = true, h
		p.sum += entrySize(e.key, e) // at or past the cursor: never in recheck
		n++
		return true
	})
	if !done {
		return false
	}
	for k := range p.recheck {
		if e := db.keys.find(k, scanHash(k)); e != nil {
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
func (db *DB) Recount() {
	db.pass = recountPass{}
	var n uint64
	db.keys.all(func(e *Entry) { n += entrySize(e.key, e) })
	db.used = n
}

// attach makes a filter's growth allocations go through the limit check.
func (db *DB) attach(e *Entry) {
	switch e.Kind {
	case KindBloom:
		e.BF.AllowAlloc = db.allowFn
	case KindCuckoo:
		e.CF.AllowAlloc = db.allowFn
	}
}

func (db *DB) Flush() {
	db.FinishMerges(nil)
	if db.keys.len() > 0 {
		db.dirty++
	}
	old := db.keys
	if snap := db.snap; snap != nil && snap.keys == nil {
		// A snapshot is being written: it goes on walking the old
		// keyspace, which no command reaches any more, so its entries
		// need no freezing and no queueing; they are freed when the
		// snapshot ends (endSnapshot). O(1) with the lock held, like
		// the rest of FLUSHALL: 1M keys took 15 s one by one.
		snap.keys = old
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
		db.lazy.run(int64(old.len()), func() { freeAll(old) })
	}
	db.keys = newTable()
	db.expires = 0
	db.natives = nil
	db.used = 0
	db.pass = recountPass{}
}

// freeAll frees the arrays of entries that left the keyspace together and
// that nothing else reaches (run it off the lock).
func freeAll(keys *table) {
	keys.all(func(e *Entry) {
		if e.DataBytes() >= LazyFreeBytes {
			LazyFree(e)
		} else {
			e.Free()
		}
	})
}

// expireSome removes up to max expired keys, sampling like Redis's active
// expiry; it reports how many were removed.
func (db *DB) ExpireSome(max int) int {
	if db.following {
		return 0
	}
	now := db.NowMs()
	n := 0
	sample := db.keys.sample(db.sampled[:0], max*4)
	for _, e := range sample {
		if n >= max {
			break
		}
		if e.ExpireAt != 0 && e.ExpireAt <= now {
			db.expire(e.key, e)
			n++
		}
	}
	clear(sample)
	db.sampled = sample[:0]
	return n
}

// scan visits keys in scan order from cursor (a scan hash) on: at least
// count keys, then the rest of the last hash's keys, so that a cursor never
// splits keys of equal hash. It returns the next cursor (0 at the end).
// Expired keys are visited (they count) but not passed to fn. Work is
// O(count + log N): keys present for a whole scan are each visited once
// whatever is added or removed meanwhile, since a key's position depends
// on its own hash only.
func (db *DB) Scan(cursor uint64, count int, fn func(k string, e *Entry)) uint64 {
	now := db.NowMs()
	next := uint64(0)
	visited := 0
	var last uint64
	db.keys.ascend(cursor, "", func(e *Entry, h uint64) bool {
		if visited > 0 && visited >= count && h != last {
			next = h
			return false
		}
		visited++
		last = h
		if e.ExpireAt != 0 && e.ExpireAt <= now && !db.loading {
			return true
		}
		fn(e.key, e)
		return true
	})
	return next
}

// RandomKey returns the key at a random place in scan order, or false
// when the keyspace is empty. An expired key it meets is removed (OnExpire
// logs its DEL) and another one picked, as Redis's RANDOMKEY does; a
// replica removes none, and after 100 expired picks returns the last one
// (Redis's way out of a replica's keyspace of expired keys).
func (db *DB) RandomKey() (string, bool) {
	now := db.NowMs()
	for tries := 0; ; tries++ {
		picked := db.keys.sample(db.sampled[:0], 1)
		if len(picked) == 0 {
			return "", false
		}
		e := picked[0]
		if e.ExpireAt == 0 || db.loading || e.ExpireAt > now {
			return e.key, true
		}
		if db.following {
			if tries >= 100 {
				return e.key, true
			}
			continue
		}
		db.expire(e.key, e)
	}
}

// ScanKey is a place in scan order: a scan hash and, among keys of that
// hash, a key.
type ScanKey struct {
	h uint64
	k string
}

// scanSeed keys the scan hash for this process, as Go's maps and Redis's
// dictionaries key theirs: keys crafted to share buckets would otherwise
// make chains as long as the keys sent (an unkeyed hash is easy to
// collide in its top bits), every lookup among them linear. SCAN cursors,
// like Redis's, mean nothing to another process.
var scanSeed = maphash.MakeSeed()

// scanHash is the key's place in the table and in scan order: the
// runtime's hash (AES-based where the CPU has it), keyed by scanSeed, with
// the top bit cleared, so cursors stay positive and next-cursor values
// (h+1) never wrap to 0.
func scanHash(k string) uint64 { return maphash.String(scanSeed, k) >> 1 }

// scanHashBytes is scanHash of a key given as bytes.
func scanHashBytes(k []byte) uint64 { return maphash.Bytes(scanSeed, k) >> 1 }

// roomFor reports whether storing values of n bytes in place of the live
// keys named would stay within --maxmemory (db.mu held). Like Redis, a
// write that does not grow memory is always allowed, and nothing is
// refused while the log is replayed.
func (db *DB) RoomFor(n uint64, replaced ...[]byte) bool {
	if db.limit == 0 || db.loading {
		return true
	}
	var freed uint64
	for _, k := range replaced {
		if e := db.GetBytes(k); e != nil {
			freed += e.DataBytes()
		}
	}
	return n <= freed || db.used+(n-freed) <= db.limit
}

// putString stores a copy of val under key with the given expiry,
// replacing a key of any kind (db.mu held; roomFor was checked).
func (db *DB) PutString(key, val []byte, expireAt int64) {
	db.SetString(string(key), string(val), expireAt)
}

// SetString is PutString for a key and value that are strings already:
// they are kept, not copied.
func (db *DB) SetString(key, val string, expireAt int64) {
	e := NewString(val, expireAt)
	db.used += uint64(len(val))
	db.Put(key, e)
}

// Lock takes the keyspace lock: every access to the keyspace holds it,
// like Redis's single thread.
func (db *DB) Lock() { db.mu.Lock() }

// Unlock releases the keyspace lock.
func (db *DB) Unlock() { db.mu.Unlock() }

// Accounting. The counters change only here, through these methods; the
// server reads them (db.mu held, as for everything else).

// Used is the memory accounted against the limit: keys, bookkeeping and
// filters, in bytes.
func (db *DB) Used() uint64 { return db.used }

// Unaccount gives back n bytes that Allow counted for memory the caller
// did not keep (or that a filter released, as CF.COMPACT does).
func (db *DB) Unaccount(n uint64) { db.used -= min(n, db.used) }

// Limit is the memory limit in force (0: none).
func (db *DB) Limit() uint64 {
	if db.loading {
		return db.loadLimit
	}
	return db.limit
}

// SetLimit changes the memory limit (CONFIG SET maxmemory). While loading
// (BeginLoad) no limit applies: the new one takes effect at EndLoad.
func (db *DB) SetLimit(n uint64) {
	if db.loading {
		db.loadLimit = n
		return
	}
	db.limit = n
}

// Dirty counts the changes since start-up (rdb_changes_since_last_save
// is the difference from its value at the last snapshot).
func (db *DB) Dirty() uint64 { return db.dirty }

// Changed counts a change made inside a value (a filter's bits), which
// the keyspace does not see.
func (db *DB) Changed() { db.dirty++ }

// Expired is the number of keys removed by expiry.
func (db *DB) Expired() uint64 { return db.expired }

// ResetExpired zeroes Expired, Hits and Misses (CONFIG RESETSTAT).
func (db *DB) ResetExpired() { db.expired, db.hits, db.misses = 0, 0, 0 }

// CountReads makes Get and GetBytes count hits and misses (on) or not:
// the server turns it on while a command that only reads runs.
func (db *DB) CountReads(on bool) { db.countReads = on }

// ReadLookups makes ReadLookup count hits and misses (on) or not: the
// server turns it on while a client's command runs (not one replayed from
// the log or applied from a master), a write as well as a read.
func (db *DB) ReadLookups(on bool) { db.readLookups = on }

// ReadLookup is GetBytes for a command that writes but reads the key
// first, as Redis's lookupKeyRead does in GETDEL, GETEX, GETSET, SET …
// GET and COPY's source: it counts a hit or a miss while ReadLookups is
// on. A write's other lookups (GetBytes, Get) count nothing, as Redis's
// lookupKeyWrite; in a read command, where CountReads is on, it counts
// once, as GetBytes.
func (db *DB) ReadLookup(key []byte) *Entry {
	was := db.countReads
	db.countReads = was || db.readLookups
	e := db.GetBytes(key)
	db.countReads = was
	return e
}

// UnreadLookup takes back the hit (found) or the miss that ReadLookup
// counted in a write that is then refused for memory: Redis refuses such
// a command before it runs, so it counts no lookup.
func (db *DB) UnreadLookup(found bool) {
	switch {
	case !db.readLookups || db.countReads:
	case found:
		db.hits--
	default:
		db.misses--
	}
}

// Hits and Misses count the lookups made while CountReads was on that
// found a live key, and that did not (INFO keyspace_hits and
// keyspace_misses).
func (db *DB) Hits() uint64 { return db.hits }

// Misses: see Hits.
func (db *DB) Misses() uint64 { return db.misses }

// Expires is the number of keys with an expiry.
func (db *DB) Expires() int { return db.expires }

// Len is the number of keys (expired ones not yet removed included).
func (db *DB) Len() int { return db.keys.len() }

// Lookup returns the entry under key whether or not it has expired, or nil.
func (db *DB) Lookup(key string) *Entry { return db.keys.find(key, scanHash(key)) }

// Peek returns the live entry for key without counting a read or an
// access (Redis's LOOKUP_NOTOUCH: OBJECT, DEBUG OBJECT), or nil; an
// expired key is nil but left for expiry to remove.
func (db *DB) Peek(key string) *Entry {
	e := db.keys.find(key, scanHash(key))
	if e != nil && e.ExpireAt != 0 && e.ExpireAt <= db.NowMs() && !db.loading {
		return nil
	}
	return e
}

// lruUnit is the LRU clock's resolution (Redis's is a second in 24 bits;
// 16 bits of minutes cover about as much).
const lruUnit = 60

// SetClock sets the LRU clock from now, as Redis's serverCron does; the
// server calls it every tick. Keys accessed from then on are stamped with
// it.
func (db *DB) SetClock(now time.Time) { db.clock = uint16(now.Unix() / lruUnit) }

// IdleSeconds is how long ago e was last accessed, as Redis's
// estimateObjectIdleTime computes it (the clock wraps), to the minute.
func (db *DB) IdleSeconds(e *Entry) int64 {
	now, at := int64(db.clock), int64(e.lru)
	if now < at {
		now += 1 << 16
	}
	return (now - at) * lruUnit
}

// LRU is e's access stamp (DEBUG OBJECT's lru field).
func (e *Entry) LRU() uint16 { return e.lru }

// SetFollowing makes the keyspace a replica's (true) or a master's: a
// replica removes no expired key by its own clock (its master's DEL does),
// while reads still treat such keys as absent.
func (db *DB) SetFollowing(on bool) { db.following = on }

// Following reports what SetFollowing set.
func (db *DB) Following() bool { return db.following }

// PrepareFor readies src, a keyspace a snapshot was read into, to become
// db's contents (TakeOver): its scan order, memory count and allocation
// checks (db's), and its entries marked as needed by db's next snapshot
// (src's own snapshot, if one wrote it to a file, marked them as its
// own). It does not touch db, so db need not be locked; no snapshot of
// src may be running.
func (src *DB) PrepareFor(db *DB) {
	// Reindex, Recount and the marking in one walk over the keys.
	src.expires, src.natives = 0, nil
	src.pass = recountPass{}
	var used uint64
	src.keys.all(func(e *Entry) {
		src.index(e)
		used += entrySize(e.key, e)
		e.epoch = 0
		db.attach(e) // reads only db.allowFn, made once by New
	})
	src.used = used
}

// TakeOver replaces the keyspace's contents with src's, prepared by
// PrepareFor (a replica's full resync, loaded into a fresh keyspace and
// swapped in when complete), in O(1): the old entries are released as
// FLUSHALL releases them. src must not be used afterwards.
func (db *DB) TakeOver(src *DB) {
	db.Flush()
	db.keys, db.expires, db.natives = src.keys, src.expires, src.natives
	db.used = src.used
	db.dirty++
	db.pass = recountPass{}
}

// Loading reports whether the log is being replayed.
func (db *DB) Loading() bool { return db.loading }

// BeginLoad starts loading a snapshot and replaying the log: no memory
// limit applies (replay is exact: a limit that changed between runs must
// not refuse what was acknowledged) and keys do not expire. EndLoad ends it
// with the memory recounted and no changes counted.
func (db *DB) BeginLoad() {
	db.loadLimit, db.limit = db.limit, 0
	db.loading = true
}

// EndLoad ends what BeginLoad started.
func (db *DB) EndLoad() {
	db.loading = false
	db.limit = db.loadLimit
}

// Loaded recounts the memory of everything loaded and counts no changes
// for it.
func (db *DB) Loaded() {
	db.Recount()
	db.dirty = 0
}

// Rename moves e from src to dst, replacing what dst held (src != dst).
func (db *DB) Rename(src, dst string, e *Entry) {
	db.Remove(src, e)
	db.used += e.DataBytes() // remove subtracted the filter; link adds only the key
	if old := db.Get(dst); old != nil {
		db.Drop(dst, old)
	}
	db.Link(dst, e)
	db.used += uint64(len(dst)) + KeyOverhead
	db.dirty++
}

// Recounting reports whether a memory recount pass is running (writes
// must then Touch the keys they name).
func (db *DB) Recounting() bool { return db.pass.active }

// Snapshotting reports whether a snapshot is being written (writes must
// then Preserve the entries they change).
func (db *DB) Snapshotting() bool { return db.snap != nil }

// FirstKeys appends up to n keys in scan order to dst.
func (db *DB) FirstKeys(dst []string, n int) []string {
	if n <= 0 {
		return dst
	}
	db.keys.ascend(0, "", func(e *Entry, _ uint64) bool {
		dst = append(dst, e.key)
		return len(dst) < n
	})
	return dst
}

// Scratch is scratch space for a native filter's bit positions, for use
// with the keyspace locked (a local one would escape to the heap: one
// allocation per command).
func (db *DB) Scratch() *Probe {
	p := &db.probe
	if p.offsets == nil {
		p.offsets = make([]uint16, 0, bloom.MaxK)
		p.bits = make([]uint64, 0, bloom.MaxK)
	}
	return p
}
