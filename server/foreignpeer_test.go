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

// A Redis replica pointed at bloom serve is refused before any payload:
// it keeps its own data (it would discard it, fail to load bloomkit's
// snapshot and reconnect at once), and the master makes no snapshot.
func TestRedisReplicaRefusedBeforePayload(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	mustDo(t, mc, ":1", "BF.ADD", "f", "x")
	r := redistest.Start(t)
	ctx := context.Background()
	if _, err := r.CLI(ctx, "SET", "mine", "kept"); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(m.Addr(), ":")
	if _, err := r.CLI(ctx, "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	replWait(t, "the Redis replica to be refused", func() bool {
		return strings.Contains(r.Log(), "bloom serve")
	})
	// Give it a few of its once-a-second tries.
	time.Sleep(2500 * time.Millisecond)
	if out, err := r.CLI(ctx, "GET", "mine"); err != nil || strings.TrimSpace(out) != "kept" {
		t.Fatalf("the Redis replica lost its data: GET mine = %q, %v\n%s", out, err, r.Log())
	}
	if got := replInfo(t, mc, "replication", "connected_slaves"); got != "0" {
		t.Errorf("connected_slaves = %s", got)
	}
	if strings.Contains(r.Log(), "Wrong signature") || strings.Contains(r.Log(), "Flushing old data") {
		t.Errorf("the Redis replica got a payload:\n%s", r.Log())
	}
	if _, err := r.CLI(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
}
