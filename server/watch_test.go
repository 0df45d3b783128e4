package server

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// watchScenario is one WATCH ... EXEC: setup runs on another connection,
// then the watching client WATCHes keys, between runs (on the other
// connection unless own is set), and the client's MULTI block is queued
// and EXECed.
type watchScenario struct {
	name    string
	setup   [][]string
	keys    []string
	between [][]string
	own     bool
	expire  string // a key to wait for expiry of before MULTI
	block   [][]string
	want    string // EXEC's reply
}

var watchScenarios = []watchScenario{
	{name: "another client's write", setup: [][]string{{"SET", "k", "v"}}, keys: []string{"k"},
		between: [][]string{{"SET", "k", "w"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "an unrelated key's write", setup: [][]string{{"SET", "k", "v"}}, keys: []string{"k"},
		between: [][]string{{"SET", "other", "w"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "nothing between", setup: [][]string{{"SET", "k", "v"}}, keys: []string{"k", "k", "missing"},
		block: [][]string{{"GET", "k"}}, want: `["v"]`},
	{name: "its own write", setup: [][]string{{"SET", "k", "v"}}, keys: []string{"k"}, own: true,
		between: [][]string{{"SET", "k", "mine"}}, block: [][]string{{"GET", "k"}}, want: "nil"},
	{name: "CMS.INCRBY", setup: [][]string{{"CMS.INITBYDIM", "c", "10", "2"}}, keys: []string{"c"},
		between: [][]string{{"CMS.INCRBY", "c", "a", "1"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "BF.ADD of an item already there", setup: [][]string{{"BF.ADD", "b", "a"}}, keys: []string{"b"},
		between: [][]string{{"BF.ADD", "b", "a"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "a read", setup: [][]string{{"BF.ADD", "b", "a"}}, keys: []string{"b"},
		between: [][]string{{"BF.EXISTS", "b", "a"}, {"GET", "b2"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "a t-digest query", setup: [][]string{{"TDIGEST.CREATE", "t"}, {"TDIGEST.ADD", "t", "1", "2", "3"}}, keys: []string{"t"},
		between: [][]string{{"TDIGEST.QUANTILE", "t", "0.5"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "DEL of a missing key", keys: []string{"missing"},
		between: [][]string{{"DEL", "missing"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "a key created", keys: []string{"new"},
		between: [][]string{{"CF.ADD", "new", "a"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "a failed write", setup: [][]string{{"SET", "s", "v"}}, keys: []string{"s"},
		between: [][]string{{"EXPIRE", "s", "x"}, {"RENAME", "missing", "s"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "a RedisBloom error after opening the key", setup: [][]string{{"SET", "s", "v"}}, keys: []string{"s"},
		between: [][]string{{"BF.ADD", "s", "a"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "BF.LOADCHUNK of bad data", setup: [][]string{{"BF.RESERVE", "b", "0.01", "100"}}, keys: []string{"b"},
		between: [][]string{{"BF.LOADCHUNK", "b", "1", "xxxx"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "a RedisBloom argument that does not parse", setup: [][]string{{"SET", "s", "v"}}, keys: []string{"s", "t"},
		between: [][]string{{"BF.RESERVE", "s", "x", "100"}, {"CF.RESERVE", "s", "x"}, {"TDIGEST.MERGE", "t", "x", "s"}, {"CMS.INCRBY", "s", "a"}},
		block:   [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "a Count-Min Sketch argument that does not parse", keys: []string{"c"},
		between: [][]string{{"CMS.INITBYDIM", "c", "x", "2"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "CMS.MERGE's source", setup: [][]string{{"CMS.INITBYDIM", "s1", "10", "2"}, {"CMS.INITBYDIM", "d", "10", "2"}}, keys: []string{"s1"},
		between: [][]string{{"CMS.MERGE", "d", "1", "s1"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "FLUSHALL of a watched key", setup: [][]string{{"SET", "k", "v"}}, keys: []string{"k"},
		between: [][]string{{"FLUSHALL"}}, block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "FLUSHALL without the watched key", keys: []string{"absent"},
		between: [][]string{{"FLUSHALL"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "expiry", setup: [][]string{{"SET", "e", "v", "PX", "30"}}, keys: []string{"e"}, expire: "e",
		block: [][]string{{"SET", "x", "1"}}, want: "nil"},
	{name: "UNWATCH", setup: [][]string{{"SET", "k", "v"}}, keys: []string{"k"}, own: true,
		between: [][]string{{"UNWATCH"}, {"SET", "k", "w"}}, block: [][]string{{"SET", "x", "1"}}, want: "[+OK]"},
	{name: "UNWATCH queued in MULTI", setup: [][]string{{"SET", "k", "v"}}, keys: []string{"k"},
		between: [][]string{{"SET", "k", "w"}}, block: [][]string{{"UNWATCH"}, {"SET", "x", "1"}}, want: "nil"},
}

// runWatchScenarios runs every scenario on the server at addr and returns
// what each step answered, one line per step.
func runWatchScenarios(t *testing.T, addr string) []string {
	t.Helper()
	var out []string
	c, o := dialRaw(t, addr), dialRaw(t, addr)
	for _, sc := range watchScenarios {
		o.do("FLUSHALL")
		for _, a := range sc.setup {
			o.do(a...)
		}
		line := sc.name + ": WATCH " + c.do(append([]string{"WATCH"}, sc.keys...)...)
		by := o
		if sc.own {
			by = c
		}
		for _, a := range sc.between {
			line += " | " + strings.Join(a, " ") + " " + by.do(a...)
		}
		if sc.expire != "" {
			poll.True(t, 5*time.Second, sc.expire+" to expire", func() bool { return o.do("EXISTS", sc.expire) == ":0" })
		}
		line += " | MULTI " + c.do("MULTI")
		for _, a := range sc.block {
			line += " | " + strings.Join(a, " ") + " " + c.do(a...)
		}
		got := c.do("EXEC")
		line += " | EXEC " + got
		if got != sc.want {
			t.Errorf("%s: EXEC %s, want %s", sc.name, got, sc.want)
		}
		out = append(out, line)
	}
	// WATCH inside MULTI is refused; DISCARD forgets the watched keys.
	for _, a := range [][]string{{"WATCH", "k"}, {"MULTI"}, {"WATCH", "k"}, {"DISCARD"}} {
		out = append(out, strings.Join(a, " ")+" "+c.do(a...))
	}
	out = append(out, "SET "+o.do("SET", "k", "after discard"), "MULTI "+c.do("MULTI"), "EXEC "+c.do("EXEC"))
	return out
}

// WATCH makes EXEC run nothing and answer a null array when a watched key
// changed after it: written by any client (itself included), by a
// RedisBloom command whether or not the value changed, emptied by
// FLUSHALL, or expired. Reads, writes to other keys and failed writes
// leave the transaction to run; UNWATCH, DISCARD and EXEC forget the keys.
// With a RedisBloom module, real Redis answers every step alike.
func TestWatch(t *testing.T) {
	var got []string
	bothPaths(t, func(t *testing.T, goroutinePerConn bool) {
		s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
		got = runWatchScenarios(t, s.Addr())
		if n := func() int { s.db.Lock(); defer s.db.Unlock(); return len(s.watching.keys) }(); n != 0 {
			t.Errorf("%d keys still watched after every EXEC and DISCARD", n)
		}
	})
	t.Run("RedisBloom", func(t *testing.T) {
		module := redistest.RedisBloomModule(t)
		rs := redistest.Start(t, "--loadmodule", module)
		want := runWatchScenarios(t, rs.Addr)
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Errorf("step %d:\nRedisBloom %s\nbloom      %s", i, want[i], got[min(i, len(got)-1)])
			}
		}
	})
}

// A watching client that goes away leaves nothing watched behind.
func TestWatchForgottenOnDisconnect(t *testing.T) { bothPaths(t, testWatchForgottenOnDisconnect) }

func testWatchForgottenOnDisconnect(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
	c := dialRaw(t, s.Addr())
	if got := c.do("WATCH", "a", "b"); got != "+OK" {
		t.Fatalf("WATCH: %s", got)
	}
	watched := func() int { s.db.Lock(); defer s.db.Unlock(); return len(s.watching.keys) }
	if n := watched(); n != 2 {
		t.Fatalf("%d keys watched, want 2", n)
	}
	c.c.Close()
	poll.True(t, 5*time.Second, "the closed connection's keys to be forgotten", func() bool { return watched() == 0 })
}

// A replica's client watching a key sees the master's write to it (the
// stream) fail its EXEC, as on a Redis replica.
func TestWatchOnReplica(t *testing.T) {
	m := startServer(t, Config{NoPersistence: true})
	r := startReplica(t, m, Config{NoPersistence: true})
	mc, rc := dialRaw(t, m.Addr()), dialRaw(t, r.Addr())
	mc.do("SET", "k", "v")
	waitSynced(t, mc, rc)
	c := dialRaw(t, r.Addr())
	steps := [][2]string{{"WATCH k", "+OK"}, {"MULTI", "+OK"}, {"GET k", "+QUEUED"}}
	for _, st := range steps[:1] {
		if got := c.do(strings.Fields(st[0])...); got != st[1] {
			t.Fatalf("%s: %s", st[0], got)
		}
	}
	mc.do("BF.ADD", "k2", "x")
	waitSynced(t, mc, rc)
	for _, st := range steps[1:] {
		if got := c.do(strings.Fields(st[0])...); got != st[1] {
			t.Fatalf("%s: %s", st[0], got)
		}
	}
	if got := c.do("EXEC"); got != `["v"]` {
		t.Fatalf("EXEC after a write to another key: %s", got)
	}
	for _, st := range steps[:1] {
		c.do(strings.Fields(st[0])...)
	}
	mc.do("SET", "k", "w")
	waitSynced(t, mc, rc)
	for _, st := range steps[1:] {
		c.do(strings.Fields(st[0])...)
	}
	if got := c.do("EXEC"); got != "nil" {
		t.Fatalf("EXEC after the master wrote the watched key: %s", got)
	}
}

// Check-and-set with go-redis's Watch: clients each add one to a counter
// (GET, then SET in MULTI/EXEC, retried when EXEC fails) concurrently; no
// increment is lost, as none could be if EXEC checked the watched key
// apart from running the queue.
func TestWatchCheckAndSet(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	const clients, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	var retries atomic.Int64
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.Addr()})
			defer c.Close()
			for range each {
				for {
					err := c.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, "n").Int()
						if err != nil && err != redis.Nil {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, "n", n+1, 0)
							return nil
						})
						return err
					}, "n")
					if err == redis.TxFailedErr {
						retries.Add(1)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := newClient(t, s.Addr(), 2)
	if n, err := c.Get(ctx, "n").Int(); err != nil || n != clients*each {
		t.Fatalf("counter %d (%v), want %d (%d EXECs failed and were retried)", n, err, clients*each, retries.Load())
	}
	t.Logf("%d EXECs failed on a changed key and were retried", retries.Load())
}
