package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/redisbloom"
)

// The cuckoo workload relies on this: an item with an odd fingerprint,
// alone in its filter, has CF.COUNT 1 whatever the number of buckets, while
// an even fingerprint that the bucket count divides puts both candidate
// buckets on one bucket and is counted twice. The second half shows the
// rule is needed, the first that it suffices.
func TestOddFingerprintCountsOnce(t *testing.T) {
	twice := 0
	for nb := uint64(2); nb <= 1024; nb *= 2 {
		for i := range 600 {
			item := fmt.Sprintf("item:%d:%d", nb, i)
			fp := fingerprint(item)
			c, err := redisbloom.NewCuckoo(nb*2, 2, 20, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st := c.Insert([]byte(item)); st != redisbloom.Inserted {
				t.Fatalf("insert %q into an empty filter: %v", item, st)
			}
			n := c.Count([]byte(item))
			switch {
			case fp%2 == 1 && n != 1:
				t.Errorf("%d buckets, %q (fingerprint %d): CF.COUNT %d, want 1", nb, item, fp, n)
			case fp%2 == 0 && uint64(fp)%nb == 0:
				if n != 2 {
					t.Errorf("%d buckets, %q (fingerprint %d): CF.COUNT %d, want 2 (one bucket seen twice)", nb, item, fp, n)
				}
				twice++
			}
		}
	}
	if twice == 0 {
		t.Fatal("no item with a fingerprint the bucket count divides: the test shows nothing")
	}
}

func TestAllowed(t *testing.T) {
	kill := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	k := &checker{round: 3, killAt: kill, fsync: "everysec", window: 2 * time.Second}
	cases := []struct {
		name  string
		k     checker
		round int
		at    time.Time
		want  bool
	}{
		{"everysec, this round, inside the window", *k, 3, kill.Add(-time.Second), true},
		{"everysec, acknowledged after the kill was sent", *k, 3, kill.Add(time.Millisecond), true},
		{"everysec, this round, before the window", *k, 3, kill.Add(-3 * time.Second), false},
		{"everysec, an earlier round", *k, 2, kill.Add(-time.Second), false},
		{"always", checker{round: 3, killAt: kill, fsync: "always", window: 2 * time.Second}, 3, kill.Add(-time.Millisecond), false},
		{"after SIGTERM", checker{round: 3, killAt: kill, fsync: "everysec", window: 2 * time.Second, clean: true}, 3, kill.Add(-time.Millisecond), false},
	}
	for _, c := range cases {
		if got := c.k.allowed(c.round, c.at); got != c.want {
			t.Errorf("%s: allowed = %v, want %v", c.name, got, c.want)
		}
	}
}
