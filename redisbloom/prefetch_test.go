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
			if got := c.Prefetch(item, write); got != p.fp {
				t.Fatalf("%s: Prefetch %d, want the fingerprint %d", item, got, p.fp)
			}
		}
	}
	if (&Cuckoo{}).Prefetch([]byte("x"), false) != 0 {
		t.Error("an empty cuckoo filter prefetched something")
	}
}
