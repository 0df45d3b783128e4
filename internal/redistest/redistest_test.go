package redistest_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/keyslot"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestStart(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k = %q, %v; want v", got, err)
	}
	out, err := s.CLI(ctx, "GET", "k")
	if err != nil || out != "v\n" {
		t.Fatalf("redis-cli GET k = %q, %v", out, err)
	}
	s.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded after Stop")
	}
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node Redis Cluster: make test runs it, make test-short does not")
	}
	cl := redistest.StartCluster(t)
	c := cl.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// keyslot.Of agrees with CLUSTER KEYSLOT.
	for _, k := range []string{"", "a", "foo", "{user1000}.following", "bk:{f:1:2}:bits", "x{}y", "{a}{b}", "{}{a}", "123456789"} {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keyslot.Of(k); int64(got) != want {
			t.Errorf("keyslot.Of(%q) = %d, want %d", k, got, want)
		}
	}
	// Keys over all slots land on three different masters.
	owners := map[int]bool{}
	for i := range 300 {
		k := fmt.Sprint("key", i)
		if err := c.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		o, err := cl.Owner(ctx, keyslot.Of(k))
		if err != nil {
			t.Fatal(err)
		}
		owners[o] = true
	}
	if len(owners) != 3 {
		t.Fatalf("keys landed on %d masters, want 3", len(owners))
	}
	// Move the slot of the key nearest the low end of its node's range
	// (redis-cli reshard moves slots from there) to another node.
	key, from, n := "", -1, 1<<30
	for i := range 300 {
		k := fmt.Sprint("key", i)
		slot := keyslot.Of(k)
		o, err := cl.Owner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.SlotRanges(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if d := slot - r[0][0] + 1; slot <= r[0][1] && d < n {
			key, from, n = k, o, d
		}
	}
	slot := keyslot.Of(key)
	if _, err := cl.Reshard(ctx, from, (from+1)%3, n); err != nil {
		t.Fatal(err)
	}
	if o, err := cl.Owner(ctx, slot); err != nil || o != (from+1)%3 {
		t.Fatalf("after reshard slot %d is on node %d (%v), want %d", slot, o, err, (from+1)%3)
	}
	want, _ := strconv.Atoi(strings.TrimPrefix(key, "key"))
	if got, err := c.Get(ctx, key).Int(); err != nil || got != want {
		t.Fatalf("GET %s after reshard = %d, %v", key, got, err)
	}
}

// Example shows a test's use of a throw-away server: Start skips the test
// (or fails it when BLOOMKIT_REQUIRE_REDIS=1) if redis-server is missing.
func Example() {
	var t *testing.T // the test's *testing.T
	_ = func() {
		s := redistest.Start(t)
		c := redis.NewClient(s.Options())
		defer c.Close()
		_ = c.Set(context.Background(), "greeting", "hello", 0).Err()
	}
	fmt.Println(keyslot.Of("bk:{seen:1:0}:bits") == keyslot.Of("{seen:1:0}"))
	// Output: true
}
