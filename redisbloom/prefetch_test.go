package redisbloom

import (
	"fmt"
	"testing"
)

// Prefetch reads the byte Exists reads first: for an item that was added,
// the byte holding its first bit, which is set.
func TestBloomPrefetchReadsFirstProbe(t *testing.T) {
	b, err := NewBloom(100000, 0.01, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		item := []byte(fmt.Sprint("item", i))
		b.Add(item)
		if b.Prefetch(item) == 0 {
			t.Fatalf("%s: Prefetch read a zero byte where its first bit is set", item)
		}
		if i > 0 {
			prev := []byte(fmt.Sprint("item", i-1))
			if got, want := b.Prefetch(prev, item), b.Prefetch(prev)^b.Prefetch(item); got != want {
				t.Fatalf("Prefetch of two items %d, want the two bytes combined %d", got, want)
			}
		}
	}
	if (&Bloom{}).Prefetch([]byte("x")) != 0 {
		t.Error("an empty Bloom filter prefetched something")
	}
}

// For a cuckoo filter Prefetch reads the first slot of each candidate
// bucket: after one insert into an empty filter, the fingerprint.
func TestCuckooPrefetchReadsBuckets(t *testing.T) {
	for i := 0; i < 200; i++ {
		c, err := NewCuckoo(1000, 2, 20, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		item := []byte(fmt.Sprint("item", i))
		p := cuckooLookup(item)
		if c.index(c.Filters[0], p.h1) == c.index(c.Filters[0], p.h2) {
			continue // one bucket read twice cancels out
		}
		c.Insert(item)
		for _, write := range []bool{false, true} {
			if got := c.Prefetch(write, item); got != p.fp {
				t.Fatalf("%s: Prefetch %d, want the fingerprint %d", item, got, p.fp)
			}
		}
	}
	if (&Cuckoo{}).Prefetch(false, []byte("x")) != 0 {
		t.Error("an empty cuckoo filter prefetched something")
	}
}

// Prefetch of many items (more than one block of positions) reads what
// Prefetch of each does.
func TestPrefetchManyIsEachCombined(t *testing.T) {
	b, _ := NewBloom(100000, 0.01, 2, false, nil)
	c, _ := NewCuckoo(1000, 2, 20, 1, nil)
	var items [][]byte
	for i := 0; i < 40; i++ {
		items = append(items, []byte(fmt.Sprint("many", i)))
		b.Add(items[i])
		c.Insert(items[i])
	}
	for c.Insert([]byte("x")) == Inserted && len(c.Filters) < 2 { // a second sub-filter
	}
	var wantB, wantR, wantW byte
	for _, it := range items {
		wantB ^= b.Prefetch(it)
		wantR ^= c.Prefetch(false, it)
		wantW ^= c.Prefetch(true, it)
	}
	if got := b.Prefetch(items...); got != wantB {
		t.Errorf("Bloom: %d, want %d", got, wantB)
	}
	if got := c.Prefetch(false, items...); got != wantR {
		t.Errorf("cuckoo read: %d, want %d", got, wantR)
	}
	if got := c.Prefetch(true, items...); got != wantW {
		t.Errorf("cuckoo write: %d, want %d", got, wantW)
	}
}
