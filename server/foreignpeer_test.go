package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
)

// redisInfo reads one INFO field of a real redis-server.
func redisInfo(t *testing.T, r *redistest.Server, section, field string) string {
	t.Helper()
	out, err := r.CLI(context.Background(), "INFO", section)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// bloom serve pointed at a Redis master stops before PSYNC — the Redis
// master forks and dumps nothing for it — and tries again after a pause
// that doubles each time, not every second.
func TestReplicaOfRedisRefusedBeforePSYNC(t *testing.T) {
	r := redistest.Start(t)
	ctx := context.Background()
	if _, err := r.CLI(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	conns0, _ := strconv.Atoi(redisInfo(t, r, "stats", "total_connections_received"))
	host, port, _ := strings.Cut(r.Addr, ":")
	mustDo(t, rc, "+OK", "REPLICAOF", host, port)
	start := time.Now()
	replWait(t, "the refusal to show in INFO", func() bool {
		return strings.Contains(rc.do("INFO", "replication"), "not bloom serve")
	})
	time.Sleep(1600*time.Millisecond - time.Since(start))
	attempts, _ := strconv.Atoi(redisInfo(t, r, "stats", "total_connections_received"))
	attempts -= conns0 + 1 // the INFO's own connection
	// Pauses of 50, 100, 200, 400, 800 ms: at most 6 tries in 1.6 s
	// (32 at a fixed 50 ms).
	if attempts < 1 || attempts > 7 {
		t.Errorf("%d connections to the Redis master in 1.6 s, want 1-7 (a pause doubling from 50 ms)", attempts)
	}
	if got := redisInfo(t, r, "stats", "sync_full"); got != "0" {
		t.Errorf("the Redis master made %s full syncs for a replica that cannot load them", got)
	}
	if got := replInfo(t, rc, "replication", "master_link_status"); got != "down" {
		t.Errorf("master_link_status = %s", got)
	}
	mustDo(t, rc, "+OK", "REPLICAOF", "NO", "ONE")
}
