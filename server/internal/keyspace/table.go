package keyspace

import "math/rand/v2"

// table is the keyspace's index: key → entry, and the scan order, in one
// structure. A separate map and sorted index cost a key ≈ 40–50 bytes of
// map slot and ≈ 35–40 of index item on top of its entry; here a key costs
// the three words its entry holds (key and chain link) and one bucket
// pointer at a load between ½ and 1. The scan hash is not kept: it is
// computed again where the order needs it (a 16-byte key hashes in a few
// nanoseconds; 8 bytes a key cost more).
//
// The buckets are chained, and a key's bucket is the top bits of its scan
// hash (a 63-bit number): bucket i holds exactly the hashes in
// [i·2^shift, (i+1)·2^shift), and each chain is kept sorted by (hash, key).
// Walking the buckets in index order and each chain in turn therefore
// visits the keys in (hash, key) order, the order SCAN's cursor, the
// memory recount and the snapshot writer resume from. Doubling splits
// bucket i into buckets 2i and 2i+1, which keeps that order, so a cursor
// means the same thing before and after a resize, the property Redis's
// reverse-binary cursor gets for its low-bit buckets.
//
// Doubling is incremental, as Redis's rehashing: the old buckets are moved
// into the new array two at a time by later inserts, so no insert moves
// more than a few chains (a million keys rehashed at once would hold the
// keyspace lock for tens of milliseconds). While it runs, old buckets
// before moved are in the new array and the rest still in the old one:
// the hash space below moved·2^oldShift lives in b, the rest in old.
type table struct {
	b     []*Entry
	shift uint8
	n     int
	// old and oldShift are the buckets being moved into b; nil when no
	// doubling runs.
	old      []*Entry
	oldShift uint8
	moved    int
}

const (
	// hashBits is the width of a scan hash (scanHash clears the top bit).
	hashBits = 63
	// minBucketBits sizes a new, empty table.
	minBucketBits = 3
	// movesPerInsert is how many old buckets an insert moves while the
	// table doubles: the move ends after at most half the inserts that
	// would make it double again.
	movesPerInsert = 2
)

func newTable() *table {
	return &table{b: make([]*Entry, 1<<minBucketBits), shift: hashBits - minBucketBits}
}

// len is the number of keys.
func (t *table) len() int { return t.n }

// head is the slot holding the chain that hash h belongs in.
func (t *table) head(h uint64) **Entry {
	if t.old != nil {
		if i := h >> t.oldShift; i >= uint64(t.moved) {
			return &t.old[i]
		}
	}
	return &t.b[h>>t.shift]
}

// find returns the entry of key (whose scan hash is h), or nil.
func (t *table) find(key string, h uint64) *Entry {
	tag := uint8(h)
	for e := *t.head(h); e != nil; e = e.next {
		if e.tag == tag && e.key == key {
			return e
		}
	}
	return nil
}

// findBytes is find for a key given as bytes (no allocation).
func (t *table) findBytes(key []byte, h uint64) *Entry {
	tag := uint8(h)
	for e := *t.head(h); e != nil; e = e.next {
		if e.tag == tag && e.key == string(key) {
			return e
		}
	}
	return nil
}

// before reports whether (ah, akey) comes before (h, key) in scan order.
func before(ah uint64, akey string, h uint64, key string) bool {
	return ah < h || (ah == h && akey < key)
}

// insert adds e, whose key is set and whose scan hash is h, and which is
// not in the table.
func (t *table) insert(e *Entry, h uint64) {
	e.tag = uint8(h)
	if t.old != nil {
		t.move(movesPerInsert)
	} else if t.n >= len(t.b) {
		t.grow()
		t.move(movesPerInsert)
	}
	p := t.head(h)
	for *p != nil && before(scanHash((*p).key), (*p).key, h, e.key) {
		p = &(*p).next
	}
	e.next = *p
	*p = e
	t.n++
}

// remove takes e, whose scan hash is h, out of the table, if it is there.
func (t *table) remove(e *Entry, h uint64) {
	for p := t.head(h); *p != nil; p = &(*p).next {
		if *p == e {
			*p = e.next
			e.next = nil
			t.n--
			return
		}
	}
}

// grow starts doubling the buckets.
func (t *table) grow() {
	t.old, t.oldShift, t.moved = t.b, t.shift, 0
	t.b = make([]*Entry, 2*len(t.old))
	t.shift--
}

// move moves up to n old buckets into the new array.
func (t *table) move(n int) {
	for ; n > 0 && t.old != nil; n-- {
		i := t.moved
		lo, hi := &t.b[2*i], &t.b[2*i+1]
		for e := t.old[i]; e != nil; {
			next := e.next
			e.next = nil
			if scanHash(e.key)>>t.shift&1 == 0 {
				*lo, lo = e, &e.next
			} else {
				*hi, hi = e, &e.next
			}
			e = next
		}
		t.old[i] = nil
		t.moved++
		if t.moved == len(t.old) {
			t.old = nil
		}
	}
}

// ascend calls fn for each entry at or after (h, key) in scan order, with
// its scan hash, until fn returns false. fn must not add or remove keys.
func (t *table) ascend(h uint64, key string, fn func(*Entry, uint64) bool) {
	t.from(h, key, func(e *Entry) bool { return fn(e, scanHash(e.key)) })
}

// from calls fn for each entry at or after (h, key) in scan order until
// fn returns false, as ascend does, but computes the scan hashes of the
// first bucket's keys only (to pass over those before (h, key)): a walk
// that needs no hash per key saves hashing every one. fn must not add or
// remove keys.
func (t *table) from(h uint64, key string, fn func(*Entry) bool) {
	first := true
	for pos := h; ; {
		var e *Entry
		var end uint64 // the first hash after this bucket
		if i := pos >> t.oldShift; t.old != nil && i >= uint64(t.moved) {
			e, end = t.old[i], (i+1)<<t.oldShift
		} else {
			i := pos >> t.shift
			e, end = t.b[i], (i+1)<<t.shift
		}
		for ; e != nil; e = e.next {
			if first && before(scanHash(e.key), e.key, h, key) {
				continue
			}
			first = false // the chain is sorted: the rest come after
			if !fn(e) {
				return
			}
		}
		first = false
		if end >= 1<<hashBits {
			return
		}
		pos = end
	}
}

// all calls fn for every entry, in scan order, computing no hash. fn must
// not add or remove keys.
func (t *table) all(fn func(*Entry)) {
	each := func(b []*Entry) {
		for _, e := range b {
			for ; e != nil; e = e.next {
				fn(e)
			}
		}
	}
	if t.old == nil {
		each(t.b)
		return
	}
	// While doubling, the moved buckets' keys are at the start of b
	// and the hashes above them are still in old (head).
	each(t.b[:2*t.moved])
	each(t.old[t.moved:])
}

// maxReserveBits bounds reserve: a hint of more keys than 2^24 gets 2^24
// buckets (128 MiB of them), and the table doubles from there as usual.
const maxReserveBits = 24

// reserve sizes an empty table's buckets for n keys, so that inserting
// them never doubles it (each doubling moves, and so hashes again, every
// key the table holds). A table already holding keys is left as it is.
func (t *table) reserve(n int) {
	if t.n != 0 || t.old != nil {
		return
	}
	bits := minBucketBits
	for bits < maxReserveBits && 1<<bits < n {
		bits++
	}
	if 1<<bits > len(t.b) {
		t.b = make([]*Entry, 1<<bits)
		t.shift = hashBits - uint8(bits)
	}
}

// sample appends to dst up to n entries from a random place in scan order
// on (wrapping around at the end), as a map's random iteration order
// gives them: active expiry looks at a different part of the keyspace
// each time.
func (t *table) sample(dst []*Entry, n int) []*Entry {
	if t.n == 0 || n <= 0 {
		return dst
	}
	start := rand.Uint64N(1 << hashBits)
	take := func(e *Entry, _ uint64) bool {
		dst = append(dst, e)
		n--
		return n > 0
	}
	t.ascend(start, "", take)
	if n > 0 {
		t.ascend(0, "", func(e *Entry, h uint64) bool {
			return h < start && take(e, h)
		})
	}
	return dst
}
