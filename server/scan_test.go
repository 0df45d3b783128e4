package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestScanGuarantees checks Redis's SCAN contract through a real client
// while the keyspace changes between calls: every key present for the
// whole scan is returned, each call visits about COUNT keys, MATCH and
// TYPE filter, and the cursor ends at 0.
func TestScanGuarantees(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer c.Close()
	const n = 2000
	for i := 0; i < n; i++ {
		if err := c.Do(ctx, "BF.ADD", fmt.Sprintf("stay:%d", i), "x").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, "CF.ADD", fmt.Sprintf("gone:%d", i), "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	cur, calls, added := uint64(0), 0, 0
	for {
		keys, next, err := c.Scan(ctx, cur, "", 25).Result()
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if len(keys) > 40 {
			t.Fatalf("one SCAN COUNT 25 call returned %d keys", len(keys))
		}
		for _, k := range keys {
			seen[k]++
		}
		// Churn: delete some keys, add others, between calls.
		for i := 0; i < 10 && calls*10+i < n; i++ {
			c.Del(ctx, fmt.Sprintf("gone:%d", calls*10+i))
			c.Do(ctx, "BF.ADD", fmt.Sprintf("new:%d", added), "x")
			added++
		}
		cur = next
		if cur == 0 {
			break
		}
	}
	for i := 0; i < n; i++ {
		if seen[fmt.Sprintf("stay:%d", i)] == 0 {
			t.Fatalf("stay:%d was present for the whole scan but not returned", i)
		}
	}
	if calls < 2*n/25/2 {
		t.Errorf("the scan took only %d calls for %d keys at COUNT 25", calls, 2*n)
	}
	// MATCH and TYPE.
	var all []string
	it := c.ScanType(ctx, 0, "stay:1*", 100, "MBbloom--").Iterator()
	for it.Next(ctx) {
		all = append(all, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(all) != 1111 { // stay:1, stay:10-19, stay:100-199, stay:1000-1999
		t.Errorf("SCAN MATCH stay:1* TYPE MBbloom-- found %d keys, want 1111", len(all))
	}
	it = c.ScanType(ctx, 0, "gone:*", 100, "MBbloom--").Iterator()
	for it.Next(ctx) {
		t.Fatalf("TYPE MBbloom-- returned cuckoo key %s", it.Val())
	}
	if err := c.Do(ctx, "SCAN", "abc").Err(); err == nil || err.Error() != "ERR invalid cursor" {
		t.Errorf("SCAN abc: %v", err)
	}
	if err := c.Do(ctx, "SCAN", "0", "COUNT", "0").Err(); err == nil || err.Error() != "ERR syntax error" {
		t.Errorf("SCAN 0 COUNT 0: %v", err)
	}
}
