package server

import (
	"context"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// infoFields maps each field of an INFO reply to its section.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	section := ""
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "# ") {
			section = strings.ToLower(l[2:])
			continue
		}
		if name, _, ok := strings.Cut(l, ":"); ok {
			out[name] = section
		}
	}
	return out
}

// Every field of Redis 7's INFO everything (but the per-command,
// per-error and per-database lines, which follow what ran) is in ours, in
// the same section: monitoring written for Redis reads each one.
func TestInfoHasEveryRedisField(t *testing.T) {
	r := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	theirs, err := r.Client(t).Info(ctx, "everything").Result()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	ours, err := c.Info(ctx, "everything").Result()
	if err != nil {
		t.Fatal(err)
	}
	want, got := infoFields(theirs), infoFields(ours)
	if len(want) < 150 {
		t.Fatalf("Redis's INFO everything has only %d fields", len(want))
	}
	for name, section := range want {
		if strings.HasPrefix(name, "cmdstat_") || strings.HasPrefix(name, "errorstat_") || strings.HasPrefix(name, "db") || strings.HasPrefix(name, "latency_percentiles_usec_") {
			continue
		}
		if g, ok := got[name]; !ok {
			t.Errorf("INFO has no %s (Redis's %s section has it)", name, section)
		} else if g != section {
			t.Errorf("INFO %s is in section %s, Redis's in %s", name, g, section)
		}
	}
}

// MEMORY STATS has Redis 7's fields, in Redis's order (then the Go
// runtime's two), in both protocols.
func TestMemoryStatsFields(t *testing.T) {
	r := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	names := func(c *redis.Client) []string {
		t.Helper()
		v, err := c.Do(ctx, "MEMORY", "STATS").Slice()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := 0; i < len(v); i += 2 {
			out = append(out, v[i].(string))
		}
		return out
	}
	rc := redis.NewClient(&redis.Options{Addr: r.Addr, Protocol: 2})
	defer rc.Close()
	rc.Set(ctx, "k", "v", 0)
	theirs := names(rc)
	for _, proto := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: proto})
		c.Set(ctx, "k", "v", 0)
		var ours []string
		if proto == 2 {
			ours = names(c)
		} else {
			m, err := c.Do(ctx, "MEMORY", "STATS").Result()
			if err != nil {
				t.Fatal(err)
			}
			for k := range m.(map[any]any) {
				ours = append(ours, k.(string))
			}
		}
		c.Close()
		have := map[string]bool{}
		for _, n := range ours {
			have[n] = true
		}
		for _, n := range theirs {
			if !have[n] {
				t.Errorf("RESP%d: MEMORY STATS has no %s", proto, n)
			}
		}
		if proto == 2 && strings.Join(ours[:len(theirs)], " ") != strings.Join(theirs, " ") {
			t.Errorf("MEMORY STATS order:\n ours   %v\n Redis  %v", ours, theirs)
		}
	}
}
