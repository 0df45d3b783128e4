package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/redis/go-redis/v9"
)

// FAILOVER hands the master role to a replica as Redis 6.2+ does: writes
// pause, the replica catches up, the old master follows it with PSYNC …
// FAILOVER (a partial resync: nothing is copied again); a write sent
// meanwhile is answered once the hand-over is done (READONLY: the server
// is a replica by then); the data and the stream go on from the new
// master. Its errors are Redis's.
func TestFailover(t *testing.T) {
	ctx := context.Background()
	m := startServer(t, Config{})
	opts := func(o *redis.Options) { o.MaxRetries = -1 }
	mc := newClient(t, m.Addr(), 2, opts)
	if err := mc.Do(ctx, "FAILOVER").Err(); err == nil || err.Error() != "ERR FAILOVER requires connected replicas." {
		t.Errorf("FAILOVER without replicas: %v", err)
	}
	if err := mc.Do(ctx, "FAILOVER", "ABORT").Err(); err == nil || err.Error() != "ERR No failover in progress." {
		t.Errorf("FAILOVER ABORT: %v", err)
	}
	for i := range 100 {
		mc.Do(ctx, "BF.ADD", "k", i)
	}
	r := startReplica(t, m, Config{})
	rc := newClient(t, r.Addr(), 2, opts)
	if err := mc.Do(ctx, "WAIT", 1, 20000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, "FAILOVER").Err(); err == nil || err.Error() != "ERR FAILOVER is not valid when server is a replica." {
		t.Errorf("FAILOVER on a replica: %v", err)
	}
	if err := mc.Do(ctx, "FAILOVER", "TO", "127.0.0.1", "1", "TIMEOUT", 100).Err(); err == nil || err.Error() != "ERR FAILOVER target HOST and PORT is not a replica." {
		t.Errorf("FAILOVER TO a stranger: %v", err)
	}
	if err := mc.Do(ctx, "FAILOVER", "FORCE").Err(); err == nil || err.Error() != "ERR FAILOVER with force option requires both a timeout and target HOST and IP." {
		t.Errorf("FAILOVER FORCE: %v", err)
	}
	syncs := infoFieldOf(t, mc, "stats", "sync_full")
	host, port := hostPort(t, r)
	if err := mc.Do(ctx, "FAILOVER", "TO", host, port, "TIMEOUT", 10000).Err(); err != nil {
		t.Fatalf("FAILOVER TO the replica: %v", err)
	}
	// A write sent during the hand-over waits for its end.
	w := newClient(t, m.Addr(), 2, opts)
	werr := make(chan error, 1)
	go func() { werr <- w.Do(ctx, "BF.ADD", "k", "during").Err() }()
	poll.True(t, 20*time.Second, "the roles swapped", func() bool {
		return mc.Do(ctx, "ROLE").Val().([]any)[0] == "slave" && rc.Do(ctx, "ROLE").Val().([]any)[0] == "master"
	})
	poll.True(t, 20*time.Second, "master_failover_state:no-failover", func() bool {
		return infoFieldOf(t, mc, "replication", "master_failover_state") == "no-failover"
	})
	if err := <-werr; err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("a write held during FAILOVER: %v, want READONLY (answered once the server is a replica)", err)
	}
	if got := infoFieldOf(t, rc, "stats", "sync_full"); got != "0" {
		t.Errorf("the new master made %s full syncs: the old one must continue by a partial resync", got)
	}
	_ = syncs
	for i := range 100 {
		if n, err := rc.Do(ctx, "BF.EXISTS", "k", i).Int(); err != nil || n != 1 {
			t.Fatalf("item %d on the new master: %d %v", i, n, err)
		}
	}
	// The stream goes the other way now.
	if err := rc.Do(ctx, "BF.ADD", "k", "after").Err(); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 20*time.Second, "the new master's write on the old master", func() bool {
		n, _ := mc.Do(ctx, "BF.EXISTS", "k", "after").Int()
		return n == 1
	})
}
