package server

import (
	"context"
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
