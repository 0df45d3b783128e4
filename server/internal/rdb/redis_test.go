package rdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestReadRedisWrittenFile reads a dump.rdb real redis-server writes:
// strings of every encoding, expiries, every other type (passed over and
// reported), a function library, and compares with what Redis holds.
func TestReadRedisWrittenFile(t *testing.T) {
	s := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.Client(t)
	want := map[string]string{}
	for i, v := range stringCases {
		k := fmt.Sprintf("s%d", i)
		want[k] = string(v)
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// An integer Redis keeps as a number (INCR), a shared small integer.
	if err := c.IncrBy(ctx, "counter", 123456789).Err(); err != nil {
		t.Fatal(err)
	}
	want["counter"] = "123456789"
	want["small"] = "7"
	c.Set(ctx, "small", 7, 0)
	expireAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	c.Set(ctx, "ttl", "v", 0)
	c.PExpireAt(ctx, "ttl", expireAt)
	want["ttl"] = "v"
	others := map[string]string{
		"list": "list", "biglist": "list", "set": "set", "intset": "set", "bigset": "set",
		"zset": "zset", "bigzset": "zset", "hash": "hash", "bighash": "hash", "stream": "stream",
	}
	c.RPush(ctx, "list", "a", "b", 1)
	for i := range 300 {
		c.RPush(ctx, "biglist", strings.Repeat("x", i))
		c.SAdd(ctx, "bigset", fmt.Sprintf("m%d", i))
		c.ZAdd(ctx, "bigzset", redis.Z{Score: float64(i) / 3, Member: fmt.Sprintf("m%d", i)})
		c.HSet(ctx, "bighash", fmt.Sprintf("f%d", i), strings.Repeat("v", i))
	}
	c.SAdd(ctx, "set", "a", "b")
	c.SAdd(ctx, "intset", 1, 2, 3)
	c.ZAdd(ctx, "zset", redis.Z{Score: 1.5, Member: "a"})
	c.HSet(ctx, "hash", "f", "v")
	for i := range 5 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "stream", Values: []any{"f", i}})
	}
	c.XGroupCreate(ctx, "stream", "g", "0")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"stream", ">"}, Count: 2})
	if err := c.FunctionLoad(ctx, "#!lua name=bklib\nredis.register_function('bkf', function() return 1 end)").Err(); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "SELECT", 2)
	c2 := redis.NewClient(&redis.Options{Addr: s.Addr, DB: 2})
	defer c2.Close()
	if err := c2.Set(ctx, "db2key", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	es, err := readAll(t, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var skipped []string
	functions := 0
	aux := map[string]string{}
	for _, e := range es {
		switch e.Kind {
		case KindAux:
			aux[string(e.Key)] = string(e.String)
		case KindFunction:
			functions++
		case KindKey:
			if e.DB == 2 {
				if string(e.Key) != "db2key" || string(e.String) != "x" {
					t.Errorf("db 2: %+v", e)
				}
				continue
			}
			var te *TypeError
			if errors.As(e.Err, &te) {
				if others[string(e.Key)] != te.Name {
					t.Errorf("key %s reported as %s", e.Key, te.Name)
				}
				skipped = append(skipped, string(e.Key))
				continue
			}
			if e.Err != nil || e.Type != TypeString {
				t.Fatalf("%s: %+v", e.Key, e)
			}
			got[string(e.Key)] = string(e.String)
			if string(e.Key) == "ttl" {
				if !e.HasExpire || e.ExpireAt != expireAt.UnixMilli() {
					t.Errorf("ttl: expire %v %d, want %d", e.HasExpire, e.ExpireAt, expireAt.UnixMilli())
				}
			} else if e.HasExpire {
				t.Errorf("%s has an expiry", e.Key)
			}
		}
	}
	if aux["redis-ver"] != "7.0.15" && !strings.HasPrefix(aux["redis-ver"], "7.") {
		t.Logf("redis-ver %q", aux["redis-ver"])
	}
	if aux["redis-bits"] != "64" {
		t.Errorf("aux fields %v", aux)
	}
	if functions != 1 {
		t.Errorf("%d function libraries", functions)
	}
	if len(skipped) != len(others) {
		t.Errorf("passed over %v, want %d keys", skipped, len(others))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, Redis holds %q", k, got[k], v)
		}
	}
}

// TestRedisLoadsWrittenFile starts redis-server on an RDB file we wrote
// (every RDB version it reads, compressed or not) and checks what it holds.
func TestRedisLoadsWrittenFile(t *testing.T) {
	redistest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, compress := range []bool{true, false} {
		dir := t.TempDir()
		var buf bytes.Buffer
		w, err := NewWriter(&buf, 10)
		if err != nil {
			t.Fatal(err)
		}
		w.SetCompression(compress)
		w.Aux("redis-ver", "7.0.15")
		w.SelectDB(0)
		expireAt := time.Now().Add(time.Hour).UnixMilli()
		for i, s := range stringCases {
			exp := int64(-1)
			if i == 1 {
				exp = expireAt
			}
			if err := w.String([]byte(fmt.Sprintf("k%d", i)), s, exp); err != nil {
				t.Fatal(err)
			}
		}
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
		big[12345] = 'X'
		w.String([]byte("big"), big, -1)
		w.String([]byte("past"), []byte("gone"), 1000) // expired in 1970: Redis drops it on load
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		port, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		s, err := redistest.StartAt(t, dir, port)
		if err != nil {
			t.Fatal(err)
		}
		c := s.Client(t)
		for i, v := range stringCases {
			got, err := c.Get(ctx, fmt.Sprintf("k%d", i)).Result()
			if err != nil || got != string(v) {
				t.Fatalf("compress %v: k%d = %q %v, want %q", compress, i, got, err, v)
			}
		}
		if ms, _ := c.PExpireTime(ctx, "k1").Result(); ms.Milliseconds() != expireAt {
			t.Errorf("k1 expires at %v, want %d", ms, expireAt)
		}
		if got, _ := c.Get(ctx, "big").Result(); got != string(big) {
			t.Errorf("big value differs (%d bytes)", len(got))
		}
		if n, _ := c.Exists(ctx, "past").Result(); n != 0 {
			t.Error("an expired key was loaded")
		}
		s.Stop()
	}
}
