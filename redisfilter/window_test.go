package redisfilter

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testWindow: two clients share a window of T = 1.6 s in G = 2
// generations. Every 40 ms one adds a fresh batch that the other must find
// at once (across every rotation: no moment of wrong answers); a first
// batch stays present until T after it was added and is gone, but for the
// rate, T + T/G + 2·Slack after; every key the window made has a TTL. On
// the cluster a reshard runs meanwhile.
func testWindow(t *testing.T, b backend) {
	ctx := ctxT(t)
	o := WindowOptions{Span: 1600 * time.Millisecond, Generations: 2, Capacity: 20_000, Rate: 0.01,
		Slack: 50 * time.Millisecond, Filter: Options{ShardBytes: 1024, MetaMaxAge: 200 * time.Millisecond}}
	name := "window-" + b.name
	w1, err := OpenWindow(ctx, b.newClient(t), name, o)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := OpenWindow(ctx, b.newClient(t), name, WindowOptions{Slack: o.Slack, Filter: o.Filter})
	if err != nil {
		t.Fatal(err)
	}
	if w2.Span() != o.Span || w2.Generations() != 2 {
		t.Fatalf("attached window: %v in %d", w2.Span(), w2.Generations())
	}
	if _, err := OpenWindow(ctx, b.newClient(t), name, WindowOptions{Span: time.Hour, Capacity: 10, Rate: 0.01}); err == nil {
		t.Error("a window reopened with other parameters was accepted")
	}
	first := keys(name+"-first-", 500)
	start := time.Now()
	if err := w1.AddMany(ctx, first); err != nil {
		t.Fatal(err)
	}
	var resharded atomic.Bool
	var wg sync.WaitGroup
	if b.cluster != nil {
		wg.Go(func() {
			time.Sleep(300 * time.Millisecond)
			if out, err := b.cluster.Reshard(ctx, 0, 1, 300); err != nil {
				t.Errorf("reshard: %v\n%s", err, lastLines(out, 5))
			}
			resharded.Store(true)
		})
	}
	limit := o.Span + o.Span/2 + 2*o.Slack + 300*time.Millisecond
	for round := 0; ; round++ {
		elapsed := time.Since(start)
		if elapsed > limit+400*time.Millisecond && (b.cluster == nil || resharded.Load()) {
			break
		}
		fresh := keys(fmt.Sprintf("%s-round%d-", name, round), 50)
		added := time.Now()
		if err := w1.AddMany(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		got, err := w2.TestMany(ctx, fresh, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := allTrue(got, fresh); err != nil && time.Since(added) < o.Span {
			t.Fatalf("round %d (%v after start): a key just added by one client tests absent for the other: %v", round, elapsed, err)
		}
		before := time.Since(start)
		got, err = w2.TestMany(ctx, first, nil)
		if err != nil {
			t.Fatal(err)
		}
		present := 0
		for _, p := range got {
			if p {
				present++
			}
		}
		// Present is required only when the whole test ran within T of the
		// add's start (a loaded machine may stall between the two).
		if after := time.Since(start); after < o.Span && present != len(first) {
			t.Fatalf("%v after adding (< T = %v): %d of %d keys present", after, o.Span, present, len(first))
		}
		if before > limit && present > len(first)/20 {
			t.Fatalf("%v after adding (> T + T/G + 2·Slack): %d of %d keys still present", before, present, len(first))
		}
		time.Sleep(40 * time.Millisecond)
	}
	wg.Wait()
	// Every key the window made expires.
	var all []string
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, "*"+name+":w*", 1000).Iterator()
		for it.Next(ctx) {
			if !strings.Contains(it.Val(), "tombstone") {
				all = append(all, it.Val())
			}
		}
		return it.Err()
	}
	c := b.newClient(t)
	if cc, ok := c.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, n)
		})
	} else {
		err = scan(ctx, c.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 4 {
		t.Fatalf("found only %d generation keys: %v", len(all), all)
	}
	for _, k := range all {
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > 2*time.Minute {
			t.Errorf("%s: TTL %v (%v)", k, ttl, err)
		}
	}
}
