package server

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Many clients mixing writes, reads, snapshots, expiry, renames and flushes
// (run with -race); afterwards a restart must load cleanly.
func TestConcurrentMix(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always", MetricsAddr: "127.0.0.1:0", EventLoops: 3}) // several loops share the keyspace
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2 + w%2})
			defer c.Close()
			for i := 0; i < 150; i++ {
				key := fmt.Sprintf("k%d", i%7)
				var err error
				switch (w + i) % 11 {
				case 0:
					err = c.BFMAdd(ctx, key, "a", "b", i).Err()
				case 1:
					err = c.CFAdd(ctx, "c"+key, i).Err()
				case 2:
					err = c.BFExists(ctx, key, "a").Err()
				case 3:
					if i%50 == 0 {
						err = c.BgSave(ctx).Err()
					}
				case 4:
					err = c.Expire(ctx, key, 1000000).Err()
				case 5:
					err = c.Rename(ctx, key, key+"r").Err()
				case 6:
					err = c.Scan(ctx, 0, "*", 3).Err()
				case 7:
					if i%40 == 0 {
						err = c.Save(ctx).Err()
					}
				case 8:
					pipe := c.TxPipeline()
					pipe.BFAdd(ctx, key, "tx")
					pipe.CFDel(ctx, "c"+key, i-1)
					_, err = pipe.Exec(ctx)
				case 9:
					err = c.Info(ctx).Err()
				case 10:
					if i%60 == 0 {
						err = c.FlushAll(ctx).Err()
					}
				}
				if err != nil && err != redis.Nil && !isExpectedErr(err) {
					t.Errorf("worker %d op %d: %v", w, i, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	s.Save()
	s2 := restart(t, s, false)
	if err := newClient(t, s2.Addr(), 3).Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

func isExpectedErr(err error) bool {
	switch err.Error() {
	case "ERR no such key", "ERR Background save already in progress", "Not found",
		"WRONGTYPE Operation against a key holding the wrong kind of value":
		return true
	}
	return false
}
