package keyspace

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// checkTable compares t with the keys it should hold: each is found, the
// count agrees, and ascend visits exactly them in (hash, key) order.
func checkTable(t *testing.T, tab *table, want map[string]*Entry) {
	t.Helper()
	if tab.len() != len(want) {
		t.Fatalf("len %d, want %d", tab.len(), len(want))
	}
	for k, e := range want {
		if got := tab.find(k, scanHash(k)); got != e {
			t.Fatalf("find(%q) = %p, want %p", k, got, e)
		}
		if got := tab.findBytes([]byte(k), scanHashBytes([]byte(k))); got != e {
			t.Fatalf("findBytes(%q) = %p, want %p", k, got, e)
		}
	}
	var prev *Entry
	n := 0
	tab.all(func(e *Entry) {
		if prev != nil && !before(scanHash(prev.key), prev.key, scanHash(e.key), e.key) {
			t.Fatalf("order: %q before %q", prev.key, e.key)
		}
		if want[e.key] != e {
			t.Fatalf("visited %q, not in the table", e.key)
		}
		prev = e
		n++
	})
	if n != len(want) {
		t.Fatalf("visited %d keys, want %d", n, len(want))
	}
	// from, started at any key, visits the rest of that order.
	var order []*Entry
	tab.ascend(0, "", func(e *Entry, h uint64) bool {
		if h != scanHash(e.key) {
			t.Fatalf("ascend passed %q with hash %d, not %d", e.key, h, scanHash(e.key))
		}
		order = append(order, e)
		return true
	})
	for _, j := range []int{0, len(order) / 3, len(order) / 2, len(order) - 1} {
		if j < 0 || j >= len(order) {
			continue
		}
		i := j
		tab.from(scanHash(order[j].key), order[j].key, func(e *Entry) bool {
			if order[i] != e {
				t.Fatalf("from %q: visited %q at %d, want %q", order[j].key, e.key, i, order[i].key)
			}
			i++
			return true
		})
		if i != len(order) {
			t.Fatalf("from %q: visited %d keys, want %d", order[j].key, i-j, len(order)-j)
		}
	}
}

// A walk over every key while the table doubles (old buckets not all
// moved yet) visits each key once, in scan order, without hashing them.
func TestTableWalkWhileDoubling(t *testing.T) {
	tab := newTable()
	want := map[string]*Entry{}
	for i := 0; len(want) < 100 || tab.old == nil; i++ {
		k := "d" + strconv.Itoa(i)
		e := &Entry{key: k}
		tab.insert(e, scanHash(k))
		want[k] = e
	}
	checkTable(t, tab, want)
}

// A table reserved for n keys takes them without doubling, and holds them
// as one that doubled on the way would.
func TestTableReserve(t *testing.T) {
	for _, n := range []int{0, 1, 8, 9, 1000, 1024, 1025} {
		tab := newTable()
		tab.reserve(n)
		buckets := len(tab.b)
		if buckets < n {
			t.Fatalf("reserve(%d): %d buckets", n, buckets)
		}
		want := map[string]*Entry{}
		for i := 0; i < n; i++ {
			k := "r" + strconv.Itoa(i)
			e := &Entry{key: k}
			tab.insert(e, scanHash(k))
			want[k] = e
		}
		if len(tab.b) != buckets || tab.old != nil {
			t.Fatalf("reserve(%d), then %d inserts: buckets %d → %d (doubling: %v)", n, n, buckets, len(tab.b), tab.old != nil)
		}
		checkTable(t, tab, want)
		// A table holding keys is not resized; a huge hint is bounded.
		tab.reserve(100 * n)
		if len(tab.b) != buckets && n > 0 {
			t.Fatalf("reserve on a table of %d keys resized it", n)
		}
	}
	tab := newTable()
	tab.reserve(1 << 40)
	if len(tab.b) != 1<<maxReserveBits {
		t.Fatalf("reserve(2^40): %d buckets, want 2^%d", len(tab.b), maxReserveBits)
	}
}

// The table keeps every key findable and in scan order through inserts,
// removals and doublings, including doublings left half done.
func TestTableInsertRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newTable()
	want := map[string]*Entry{}
	for i := 0; i < 20000; i++ {
		k := "k" + strconv.Itoa(rng.IntN(5000))
		if e, ok := want[k]; ok && rng.IntN(3) == 0 {
			tab.remove(e, scanHash(k))
			delete(want, k)
		} else if !ok {
			e := &Entry{key: k}
			tab.insert(e, scanHash(k))
			want[k] = e
		}
		if i%997 == 0 {
			checkTable(t, tab, want)
		}
	}
	checkTable(t, tab, want)
	if tab.old != nil {
		// Check once more with a doubling in progress.
		checkTable(t, tab, want)
	}
}

// A scan in steps, with keys added and removed between the steps (and the
// table doubling meanwhile), returns every key present for the whole scan,
// SCAN's guarantee.
func TestTableScanWhileChanging(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		db := New(0, nil)
		for i := 0; i < 3000; i++ {
			db.Link("stay"+strconv.Itoa(i), &Entry{Kind: KindString})
		}
		seen := map[string]bool{}
		cursor := uint64(0)
		churn := 0
		for {
			cursor = db.Scan(cursor, 1+rng.IntN(40), func(k string, e *Entry) { seen[k] = true })
			for j := 0; j < 30; j++ {
				k := "churn" + strconv.Itoa(churn)
				churn++
				db.Link(k, &Entry{Kind: KindString})
				if old := "churn" + strconv.Itoa(rng.IntN(churn)); db.Lookup(old) != nil && rng.IntN(2) == 0 {
					db.Remove(old, db.Lookup(old))
				}
			}
			if cursor == 0 {
				break
			}
		}
		for i := 0; i < 3000; i++ {
			if k := "stay" + strconv.Itoa(i); !seen[k] {
				t.Fatalf("seed %d: %s, present for the whole scan, was not returned", seed, k)
			}
		}
	}
}

// sample returns distinct keys from a random place, wrapping around.
func TestTableSample(t *testing.T) {
	tab := newTable()
	for i := 0; i < 1000; i++ {
		k := strconv.Itoa(i)
		tab.insert(&Entry{key: k}, scanHash(k))
	}
	got := tab.sample(nil, 1000)
	if len(got) != 1000 {
		t.Fatalf("sample of all: %d keys", len(got))
	}
	seen := map[*Entry]bool{}
	for _, e := range got {
		if seen[e] {
			t.Fatalf("%q sampled twice", e.key)
		}
		seen[e] = true
	}
	firsts := map[string]bool{}
	for i := 0; i < 20; i++ {
		firsts[tab.sample(nil, 1)[0].key] = true
	}
	if len(firsts) < 5 {
		t.Fatalf("20 samples started at only %d places", len(firsts))
	}
}

// Keys crafted to share the top bits of an unkeyed hash (here FNV-1a,
// which the scan order once used) do not share a chain: the scan hash is
// keyed per process, so no client can make lookups linear.
func TestTableCraftedKeys(t *testing.T) {
	fnv := func(k string) uint64 {
		h := uint64(14695981039346656037)
		for i := 0; i < len(k); i++ {
			h ^= uint64(k[i])
			h *= 1099511628211
		}
		return h >> 1
	}
	const n = 1000
	tab := newTable()
	for i := 0; tab.len() < n; i++ {
		k := "k" + strconv.Itoa(i)
		if fnv(k)>>(hashBits-10) == 0 { // the same top 10 bits
			tab.insert(&Entry{key: k}, scanHash(k))
		}
	}
	longest := 0
	for _, head := range tab.b {
		l := 0
		for e := head; e != nil; e = e.next {
			l++
		}
		longest = max(longest, l)
	}
	if longest > 16 {
		t.Errorf("%d keys crafted to collide: a chain of %d", n, longest)
	}
}
