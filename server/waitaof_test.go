package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// WAITAOF (Redis 7.2) answers [local, replicas] fsynced, per appendfsync:
// always at once, everysec within about a second, no not before the
// timeout; its argument errors and refusals are Redis's.
func TestWaitAOF(t *testing.T) {
	ctx := context.Background()
	waitaof := func(c *redis.Client, args ...any) ([]int64, error) {
		return c.Do(ctx, append([]any{"WAITAOF"}, args...)...).Int64Slice()
	}
	for _, policy := range []string{"always", "everysec", "no"} {
		t.Run(policy, func(t *testing.T) {
			s := startServer(t, Config{AppendFsync: policy})
			c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
			if err := c.Do(ctx, "BF.ADD", "k", "x").Err(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got, err := waitaof(c, 1, 0, 3000)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			switch policy {
			case "always":
				if fmt.Sprint(got) != "[1 0]" || took > time.Second {
					t.Errorf("WAITAOF 1 0 3000 after a write: %v in %v", got, took)
				}
			case "everysec":
				if fmt.Sprint(got) != "[1 0]" || took > 2500*time.Millisecond {
					t.Errorf("WAITAOF 1 0 3000 after a write: %v in %v", got, took)
				}
			case "no":
				if fmt.Sprint(got) != "[0 0]" || took < 3*time.Second {
					t.Errorf("WAITAOF 1 0 3000 after a write: %v in %v (appendfsync no never fsyncs)", got, took)
				}
			}
			// No replicas: 0 0 0 answers at once, 0 1 100 after the timeout.
			if got, err := waitaof(c, 0, 0, 0); err != nil || fmt.Sprint(got) != fmt.Sprint([]int64{got[0], 0}) {
				t.Errorf("WAITAOF 0 0 0: %v %v", got, err)
			}
			start = time.Now()
			if got, err := waitaof(c, 0, 1, 100); err != nil || got[1] != 0 || time.Since(start) < 100*time.Millisecond {
				t.Errorf("WAITAOF 0 1 100 without replicas: %v %v after %v", got, err, time.Since(start))
			}
		})
	}
	s := startServer(t, Config{})
	c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{2, 0, 0}, "ERR value is out of range, value must between 0 and 1"},
		{[]any{"x", 0, 0}, "ERR value is not an integer or out of range"},
		{[]any{0, -1, 0}, "ERR value is out of range, must be positive"},
		{[]any{0, 0, -1}, "ERR timeout is negative"},
		{[]any{0, 0, "x"}, "ERR timeout is not an integer or out of range"},
		{[]any{0, 0}, "ERR wrong number of arguments for 'waitaof' command"},
	} {
		if _, err := waitaof(c, tc.args...); err == nil || err.Error() != tc.want {
			t.Errorf("WAITAOF %v: %v, want %s", tc.args, err, tc.want)
		}
	}
	for _, cfg := range []Config{{NoAppendLog: true}, {NoPersistence: true}} {
		s := startServer(t, cfg)
		c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
		if _, err := waitaof(c, 1, 0, 0); err == nil || err.Error() != "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled." {
			t.Errorf("WAITAOF 1 0 0 without a log (%+v): %v", cfg, err)
		}
		if got, err := waitaof(c, 0, 0, 0); err != nil || fmt.Sprint(got) != "[0 0]" {
			t.Errorf("WAITAOF 0 0 0 without a log: %v %v", got, err)
		}
	}
}

// A replica acknowledges what its log holds fsynced (REPLCONF ACK … FACK,
// as Redis 7.2's replicas): WAITAOF on the master counts it; WAITAOF on
// the replica is refused as Redis refuses it.
func TestWaitAOFReplica(t *testing.T) {
	ctx := context.Background()
	m := startServer(t, Config{AppendFsync: "everysec"})
	r := startReplica(t, m, Config{AppendFsync: "everysec"})
	mc := newClient(t, m.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
	rc := newClient(t, r.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
	if err := mc.Do(ctx, "WAIT", 1, 20000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Do(ctx, "BF.ADD", "k", "x").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := mc.Do(ctx, "WAITAOF", 1, 1, 10000).Int64Slice()
	if err != nil || fmt.Sprint(got) != "[1 1]" {
		t.Fatalf("WAITAOF 1 1 10000 with a replica (appendfsync everysec on both): %v %v", got, err)
	}
	if err := rc.Do(ctx, "WAITAOF", 0, 0, 0).Err(); err == nil || err.Error() != "ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated." {
		t.Errorf("WAITAOF on a replica: %v", err)
	}
}
