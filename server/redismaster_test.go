package server

// bloom serve as the replica of a real Redis master (repl_redis.go).

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// startRedisMaster runs a redis-server that serves replicas at once
// (no diskless delay); extra are more redis-server arguments.
func startRedisMaster(t *testing.T, extra ...string) *redistest.Server {
	t.Helper()
	return redistest.Start(t, append([]string{"--repl-diskless-sync-delay", "0"}, extra...)...)
}

// followRedis makes s a replica of r and waits until its link is up and
// its offset is the master's.
func followRedis(t *testing.T, r *redistest.Server, rc *rawConn) {
	t.Helper()
	host, port, _ := strings.Cut(r.Addr, ":")
	mustDo(t, rc, "+OK", "REPLICAOF", host, port)
	waitRedisSynced(t, r, rc)
}

// waitRedisSynced waits until the replica's link is up and its offset is
// the Redis master's (which moves only when something is written or
// pinged: a caught-up replica holds what the master held at that offset).
func waitRedisSynced(t *testing.T, r *redistest.Server, rc *rawConn) {
	t.Helper()
	var mo, ro, last string
	if err := poll.Wait(20*time.Second, func() error {
		mo = redisInfo(t, r, "replication", "master_repl_offset")
		ro = replInfo(t, rc, "replication", "slave_repl_offset")
		up := replInfo(t, rc, "replication", "master_link_status")
		last = replInfo(t, rc, "replication", "master_sync_last_error")
		if up != "up" || mo == "" || mo != ro {
			return fmt.Errorf("link %s, master offset %s, replica offset %s", up, mo, ro)
		}
		return nil
	}); err != nil {
		t.Fatalf("the replica did not catch up with the Redis master: %v (last error: %q)\n%s", err, last, r.Log())
	}
}

// strState is one key as a client sees it: its value and whether it has
// a time to live (its exact TTL moves with the clock).
type strState struct {
	val string
	ttl bool
}

// stringKeys reads every key of a server holding only strings.
func stringKeys(t *testing.T, c *redis.Client) map[string]strState {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]strState, len(keys))
	// One pipeline of GET and PTTL per thousand keys: these comparisons
	// read tens of thousands of keys, one round trip each was most of
	// their cost.
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 1000)]
		keys = keys[len(batch):]
		gets := make([]*redis.StringCmd, len(batch))
		ttls := make([]*redis.DurationCmd, len(batch))
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range batch {
				gets[i], ttls[i] = p.Get(ctx, k), p.PTTL(ctx, k)
			}
			return nil
		}); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		for i, k := range batch {
			v, err := gets[i].Result()
			if err == redis.Nil {
				continue // expired between KEYS and GET
			}
			if err != nil {
				t.Fatalf("GET %q: %v", k, err)
			}
			ttl, err := ttls[i].Result()
			if err != nil {
				t.Fatal(err)
			}
			out[k] = strState{v, ttl > 0}
		}
	}
	return out
}

// sameStrings compares the keys of the Redis master with the replica's.
func sameStrings(t *testing.T, r *redistest.Server, s *Server) {
	t.Helper()
	want := stringKeys(t, r.Client(t))
	oc := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer oc.Close()
	got := stringKeys(t, oc)
	if len(got) != len(want) {
		t.Errorf("the replica holds %d keys, the master %d", len(got), len(want))
	}
	bad := 0
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			if bad++; bad <= 5 {
				t.Errorf("key %q: master %+v, replica %+v (present %v)", k, w, g, ok)
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			if bad++; bad <= 10 {
				t.Errorf("key %q is on the replica only", k)
			}
		}
	}
}

// bloom serve follows an empty Redis master: the handshake, a full sync
// of an RDB holding no key, the stream's PINGs counted in its offset, and
// acknowledgements the master sees (its INFO lists the replica online).
// Before, bloom serve refused a Redis master before PSYNC.
func TestReplicaOfRedisEmptyMaster(t *testing.T) {
	r := startRedisMaster(t, "--repl-ping-replica-period", "1")
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	if got := redisInfo(t, r, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full on the master = %s, want 1", got)
	}
	// The master's PINGs move its offset; the replica's follows.
	off, _ := strconv.Atoi(redisInfo(t, r, "replication", "master_repl_offset"))
	poll.True(t, 10*time.Second, "the master to ping its replica", func() bool {
		n, _ := strconv.Atoi(redisInfo(t, r, "replication", "master_repl_offset"))
		return n > off
	})
	waitRedisSynced(t, r, rc)
	poll.True(t, 10*time.Second, "the master to list its replica online with its acknowledged offset", func() bool {
		return strings.Contains(redisInfo(t, r, "replication", "slave0"), "state=online,offset="+redisInfo(t, r, "replication", "master_repl_offset"))
	})
	if got := rc.do("ROLE"); !strings.HasPrefix(got, `["slave" "127.0.0.1"`) || !strings.Contains(got, `"connected"`) {
		t.Errorf("ROLE = %s", got)
	}
	if got := rc.do("DBSIZE"); got != ":0" {
		t.Errorf("DBSIZE = %s", got)
	}
}

// redisStrings writes strings of every RDB encoding, with and without a
// time to live, to a Redis server.
func redisStrings(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300)
	for i := range random {
		random[i] = byte(rnd.IntN(256))
	}
	vals := map[string]string{
		"empty":      "",
		"int8":       "-7",
		"int16":      "1234",
		"int32":      "-2000000000",
		"int64":      "9000000000000000000", // not an integer encoding: a plain string
		"leading0":   "007",
		"short":      "hello",
		"compressed": strings.Repeat("abcabcabc", 100), // LZF
		"random":     string(random),                   // incompressible
		"big":        strings.Repeat("x", 100000),
		"bin\x00key": "v\r\n",
	}
	for k, v := range vals {
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, "ttl:"+k, v, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		if err := c.Set(ctx, "n:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A Redis master's strings of every encoding, with their times to live,
// arrive whole by a full sync from disk and by a diskless one; then the
// commands Redis propagates for SET's options, EXPIRE's family, DEL,
// UNLINK, GETDEL, GETEX, RENAME, MSET, MULTI/EXEC and FLUSHALL apply as
// the master applied them.
func TestReplicaOfRedisStrings(t *testing.T) {
	for _, diskless := range []string{"yes", "no"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			r := startRedisMaster(t, "--repl-diskless-sync", diskless)
			c := r.Client(t)
			redisStrings(t, c)
			s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
			rc := dialRaw(t, s.Addr())
			followRedis(t, r, rc)
			sameStrings(t, r, s)

			ctx := context.Background()
			cmds := [][]any{
				{"SET", "s1", "a"},
				{"SET", "s2", "b", "EX", "100"},
				{"SETEX", "s3", "100", "c"},
				{"PSETEX", "s4", "100000", "d"},
				{"SET", "s5", "e", "PX", "100000", "GET"},
				{"SET", "s1", "a2", "KEEPTTL"},
				{"SET", "s1", "x", "NX"},
				{"SET", "s6", "f"},
				{"EXPIRE", "s6", "100"},
				{"PERSIST", "s6"},
				{"PEXPIRE", "s1", "100000"},
				{"EXPIREAT", "short", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
				{"EXPIRE", "int8", "100", "NX"},
				{"GETEX", "int16", "EX", "100"},
				{"GETEX", "ttl:int16", "PERSIST"},
				{"GETDEL", "int32"},
				{"DEL", "empty", "nothere"},
				{"UNLINK", "random"},
				{"RENAME", "compressed", "moved"},
				{"MSET", "m1", "1", "m2", "2"},
				{"EXPIRE", "m2", "-1"}, // in the past: Redis deletes it (DEL)
				{"SET", "gone", "soon", "PX", "1"},
				{"COPY", "s6", "s7"},
				{"SET", "s8", "h", "EXAT", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
				{"EVAL", "redis.call('SET', KEYS[1], ARGV[1]); redis.call('DEL', KEYS[2]); return 1", "2", "lua", "n:3", "from-a-script"},
				{"PUBLISH", "news", "hello"},
				{"SPUBLISH", "news", "hello"},
				{"FUNCTION", "LOAD", "#!lua name=lib" + diskless + "\nredis.register_function('setf', function(keys, args) return redis.call('SET', keys[1], args[1]) end)"},
				{"FCALL", "setf", "1", "by-function", "v"},
			}
			for _, cmd := range cmds {
				if err := c.Do(ctx, cmd...).Err(); err != nil && err != redis.Nil {
					t.Fatalf("%v: %v", cmd, err)
				}
			}
			tx := c.TxPipeline()
			tx.Set(ctx, "t1", "1", 0)
			tx.Del(ctx, "n:1")
			tx.Expire(ctx, "n:2", time.Hour)
			if _, err := tx.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			// The master expires "gone" by itself and sends DEL.
			poll.True(t, 10*time.Second, "the master to expire a key", func() bool {
				return c.Exists(ctx, "gone").Val() == 0
			})
			waitRedisSynced(t, r, rc)
			sameStrings(t, r, s)
			if got := rc.do("GET", "gone"); got != "nil" {
				t.Errorf("GET gone = %s", got)
			}
			if err := c.FlushDB(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			waitRedisSynced(t, r, rc)
			if got := rc.do("DBSIZE"); got != ":0" {
				t.Errorf("DBSIZE after FLUSHDB = %s", got)
			}
			c.Set(ctx, "again", "1", 0)
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			waitRedisSynced(t, r, rc)
			if got := rc.do("DBSIZE"); got != ":0" {
				t.Errorf("DBSIZE after FLUSHALL = %s", got)
			}
			if got := redisInfo(t, r, "stats", "sync_full"); got != "1" {
				t.Errorf("sync_full = %s, want 1", got)
			}
		})
	}
}

// A writer keeps writing to the Redis master while bloom serve syncs and
// follows; once the master's offset is acknowledged (WAIT), the replica
// holds exactly the master's keys: no acknowledged write is lost, whether
// it fell before the RDB's point in time, during the transfer or after.
func TestReplicaOfRedisWriterDuringSync(t *testing.T) {
	r := startRedisMaster(t)
	c := r.Client(t)
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := range 20000 {
		pipe.Set(ctx, "k"+strconv.Itoa(i), strings.Repeat("v", i%50), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes int
	wg.Add(1)
	go func() {
		defer wg.Done()
		rnd := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-stop:
				return
			default:
			}
			k := "k" + strconv.Itoa(rnd.IntN(25000))
			var err error
			switch rnd.IntN(4) {
			case 0:
				err = c.Del(ctx, k).Err()
			case 1:
				err = c.Expire(ctx, k, time.Hour).Err()
			default:
				err = c.Set(ctx, k, strconv.Itoa(writes), 0).Err()
			}
			if err != nil {
				t.Errorf("write: %v", err)
				return
			}
			writes++
		}
	}()
	host, port, _ := strings.Cut(r.Addr, ":")
	start := time.Now()
	mustDo(t, rc, "+OK", "REPLICAOF", host, port)
	poll.True(t, 20*time.Second, "the link to come up", func() bool {
		return replInfo(t, rc, "replication", "master_link_status") == "up"
	})
	t.Logf("20000 keys synced in %v while a writer wrote", time.Since(start))
	// Keep writing while the stream flows.
	poll.True(t, 10*time.Second, "the writer to write on", func() bool {
		n, _ := strconv.Atoi(redisInfo(t, r, "replication", "master_repl_offset"))
		return n > 200000
	})
	close(stop)
	wg.Wait()
	if n, err := c.Do(ctx, "WAIT", 1, 10000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v: the replica did not acknowledge the writer's last write", n, err)
	}
	t.Logf("%d writes during the sync and after", writes)
	waitRedisSynced(t, r, rc)
	sameStrings(t, r, s)
	if got := redisInfo(t, r, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full = %s, want 1", got)
	}
}

// A short break of the link (the master closes it, or the replica: CLIENT
// KILL TYPE master) is healed by a
// partial resynchronization: the master continues the stream from the
// replica's offset (+CONTINUE), with no second full sync, and the writes
// made while the link was down arrive.
func TestReplicaOfRedisPartialResync(t *testing.T) {
	r := startRedisMaster(t)
	c := r.Client(t)
	ctx := context.Background()
	redisStrings(t, c)
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	for round := range 3 {
		if round == 1 {
			// From this side, as on a Redis replica.
			mustDo(t, rc, ":1", "CLIENT", "KILL", "TYPE", "master")
		} else if err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			if err := c.Set(ctx, fmt.Sprintf("r%d:%d", round, i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		c.Del(ctx, "n:"+strconv.Itoa(round))
		waitRedisSynced(t, r, rc)
	}
	sameStrings(t, r, s)
	if got := redisInfo(t, r, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full = %s, want 1 (a break must not cost a full sync)", got)
	}
	if got := redisInfo(t, r, "stats", "sync_partial_ok"); got != "3" {
		t.Errorf("sync_partial_ok = %s, want 3", got)
	}
}

// A command in the stream that bloom serve does not have (SETBIT) stops the
// link with an error that names it, rather than being skipped (the
// replica would go on different from its master); the next sync is a full
// one, after a pause, and brings the key as the master holds it.
func TestReplicaOfRedisUnsupportedCommandStops(t *testing.T) {
	r := startRedisMaster(t)
	c := r.Client(t)
	ctx := context.Background()
	s := startServer(t, Config{replRetryMin: 200 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	if err := c.Set(ctx, "n", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBit(ctx, "n", 7, 0).Err(); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 10*time.Second, "the link to stop on SETBIT", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "SETBIT")
	})
	if e := replInfo(t, rc, "replication", "master_sync_last_error"); !strings.Contains(e, "does not have") {
		t.Errorf("master_sync_last_error = %q", e)
	}
	waitRedisSynced(t, r, rc)
	if got := rc.do("GET", "n"); got != `"0"` {
		t.Errorf("GET n after the full resync = %s, want \"0\" ('1' with its last bit cleared)", got)
	}
	if got := redisInfo(t, r, "stats", "sync_full"); got != "2" {
		t.Errorf("sync_full = %s, want 2 (one more full sync after the unsupported command)", got)
	}
}

// The stream selecting another database stops the link with an error:
// bloom serve holds database 0 only.
func TestReplicaOfRedisOtherDatabaseStops(t *testing.T) {
	r := startRedisMaster(t)
	s := startServer(t, Config{replRetryMin: time.Minute})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	if out, err := r.CLI(context.Background(), "-n", "3", "SET", "k", "v"); err != nil {
		t.Fatal(out, err)
	}
	poll.True(t, 10*time.Second, "the link to stop on SELECT 3", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "selects database 3")
	})
	if got := replInfo(t, rc, "replication", "master_link_status"); got != "down" {
		t.Errorf("master_link_status = %s", got)
	}
	if got := rc.do("GET", "k"); got != "nil" {
		t.Errorf("GET k = %s", got)
	}
}

// A Redis master holding keys bloom serve cannot hold (a hash, lists, a
// set, a sorted set, a stream, a key of database 2) stops the full sync
// with an error naming each type and its count, visible in INFO, and
// tried again after pauses that double (the master's full syncs stay
// few); nothing is loaded. With replica-ignore-unsupported yes the sync
// loads the rest and counts what it skipped.
func TestReplicaOfRedisUnsupportedTypes(t *testing.T) {
	r := startRedisMaster(t)
	ctx := context.Background()
	c := r.Client(t)
	c.Set(ctx, "str", "v", 0)
	c.HSet(ctx, "h", "f", "v")
	c.RPush(ctx, "l1", "a")
	c.RPush(ctx, "l2", "a", "b")
	c.SAdd(ctx, "set", "m")
	c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"})
	c.XAdd(ctx, &redis.XAddArgs{Stream: "x", Values: []string{"f", "v"}})
	if out, err := r.CLI(ctx, "-n", "2", "SET", "other", "v"); err != nil {
		t.Fatal(out, err)
	}
	s := startServer(t, Config{replRetryMin: 100 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	host, port, _ := strings.Cut(r.Addr, ":")
	start := time.Now()
	mustDo(t, rc, "+OK", "REPLICAOF", host, port)
	want := []string{"list: 2 keys", "in database 2: 1 key", "hash: 1 key", "set: 1 key", "stream: 1 key", "zset: 1 key", "7 keys"}
	poll.True(t, 10*time.Second, "the sync to stop on the unsupported keys", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "cannot hold")
	})
	e := replInfo(t, rc, "replication", "master_sync_last_error")
	for _, w := range want {
		if !strings.Contains(e, w) {
			t.Errorf("master_sync_last_error lacks %q: %s", w, e)
		}
	}
	if got := rc.do("DBSIZE"); got != ":0" {
		t.Errorf("DBSIZE = %s: something was loaded", got)
	}
	time.Sleep(3*time.Second - time.Since(start))
	// Pauses of 100, 200, 400, 800, 1600 ms: at most 5 tries in 3 s
	// (30 at a fixed 100 ms).
	if n, _ := strconv.Atoi(redisInfo(t, r, "stats", "sync_full")); n < 1 || n > 5 {
		t.Errorf("the master made %d full syncs in 3 s, want 1-5 (a pause doubling from 100 ms)", n)
	}
	if got := replInfo(t, rc, "replication", "master_link_status"); got != "down" {
		t.Errorf("master_link_status = %s", got)
	}
	mustDo(t, rc, "+OK", "CONFIG", "SET", "replica-ignore-unsupported", "yes")
	waitRedisSynced(t, r, rc)
	if got := rc.do("GET", "str"); got != `"v"` {
		t.Errorf("GET str = %s", got)
	}
	if got := replInfo(t, rc, "replication", "master_sync_skipped_keys"); got != "7" {
		t.Errorf("master_sync_skipped_keys = %s, want 7", got)
	}
	if got := replInfo(t, rc, "replication", "master_sync_last_error"); got != "" {
		t.Errorf("master_sync_last_error = %q after a sync that succeeded", got)
	}
	// The stream's writes to keys of those types are passed over too,
	// counted; the link stays up.
	fulls := redisInfo(t, r, "stats", "sync_full")
	c.HSet(ctx, "h", "f2", "v2")
	c.RPush(ctx, "l1", "b")
	c.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "n"})
	tx := c.TxPipeline()
	tx.SAdd(ctx, "set", "m2")
	tx.Set(ctx, "str", "v2", 0)
	if _, err := tx.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	waitRedisSynced(t, r, rc)
	if got := rc.do("GET", "str"); got != `"v2"` {
		t.Errorf("GET str = %s", got)
	}
	if got := replInfo(t, rc, "replication", "master_stream_skipped_commands"); got != "4" {
		t.Errorf("master_stream_skipped_commands = %s, want 4", got)
	}
	if got := redisInfo(t, r, "stats", "sync_full"); got != fulls {
		t.Errorf("sync_full went from %s to %s", fulls, got)
	}
	// One that would replace a key this server holds stops the link.
	c.SInterStore(ctx, "str", "set")
	poll.True(t, 10*time.Second, "the link to stop on SINTERSTORE onto a string key", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "SINTERSTORE")
	})
}

// A Redis master whose replication user may only replicate (AUTH with
// masteruser and masterauth; CONFIG and MODULE refused): bloom serve
// follows it with RedisBloom's default parameters, and says so in its
// log. A wrong password shows in INFO.
func TestReplicaOfRedisReplicationUser(t *testing.T) {
	r := startRedisMaster(t, "--user", "repl", "on", ">s3cret", "+psync", "+replconf", "+ping")
	var log strings.Builder
	var mu sync.Mutex
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond, MasterUser: "repl", MasterAuth: "wrong",
		Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return log.Write(p)
		}), nil))})
	rc := dialRaw(t, s.Addr())
	host, port, _ := strings.Cut(r.Addr, ":")
	mustDo(t, rc, "+OK", "REPLICAOF", host, port)
	poll.True(t, 10*time.Second, "the wrong password to show in INFO", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "WRONGPASS")
	})
	mustDo(t, rc, "+OK", "CONFIG", "SET", "masterauth", "s3cret")
	poll.True(t, 10*time.Second, "the link to come up", func() bool {
		return replInfo(t, rc, "replication", "master_link_status") == "up"
	})
	mu.Lock()
	got := log.String()
	mu.Unlock()
	if !strings.Contains(got, "the master refused to say") || !strings.Contains(got, "bf-error-rate=0.01") {
		t.Errorf("the log does not say the master's RedisBloom parameters were not readable:\n%s", got)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// startRedisBloomMaster runs a redis-server with the RedisBloom module
// (skipped when BLOOMKIT_REDISBLOOM_MODULE is unset), loaded with args.
func startRedisBloomMaster(t *testing.T, args ...string) *redistest.Server {
	t.Helper()
	mod := redistest.RedisBloomModule(t)
	return startRedisMaster(t, append([]string{"--loadmodule", mod}, args...)...)
}

// filterDump is everything a client can read of a filter key: its TYPE,
// its INFO, its SCANDUMP stream, whether it has a time to live.
func filterDump(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	ctx := context.Background()
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	prefix := map[string]string{"MBbloom--": "BF", "MBbloomCF": "CF"}[typ]
	if prefix == "" {
		v, _ := c.Get(ctx, key).Result()
		return typ + " " + v
	}
	info, err := c.Do(ctx, prefix+".INFO", key).Result()
	if err != nil {
		t.Fatalf("%s.INFO %s: %v", prefix, key, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v ttl=%v\n", typ, info, c.PTTL(ctx, key).Val() > 0)
	for it := int64(0); ; {
		v, err := c.Do(ctx, prefix+".SCANDUMP", key, it).Slice()
		if err != nil {
			t.Fatalf("%s.SCANDUMP %s %d: %v", prefix, key, it, err)
		}
		it = v[0].(int64)
		if it == 0 {
			break
		}
		fmt.Fprintf(&b, "%d:%x\n", it, v[1])
	}
	return b.String()
}

// sameFilters compares every key of the Redis master with the replica's:
// TYPE, INFO and SCANDUMP identical, and the same answers to queries of
// the items added and of others.
func sameFilters(t *testing.T, r *redistest.Server, s *Server, items []string) {
	t.Helper()
	ctx := context.Background()
	rc := r.Client(t)
	oc := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer oc.Close()
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := oc.DBSize(ctx).Val(); n != int64(len(keys)) {
		t.Errorf("the replica holds %d keys, the master %d", n, len(keys))
	}
	for _, k := range keys {
		want, got := filterDump(t, rc, k), filterDump(t, oc, k)
		if want != got {
			wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
			for i := range min(len(wl), len(gl)) {
				if wl[i] != gl[i] {
					t.Errorf("key %q differs (line %d of %d/%d):\nmaster  %.300s\nreplica %.300s", k, i, len(wl), len(gl), wl[i], gl[i])
					break
				}
			}
			continue
		}
		typ := rc.Type(ctx, k).Val()
		if typ != "MBbloom--" && typ != "MBbloomCF" {
			continue
		}
		cmd := map[string]string{"MBbloom--": "BF.MEXISTS", "MBbloomCF": "CF.MEXISTS"}[typ]
		args := []any{cmd, k}
		for _, it := range items {
			args = append(args, it)
		}
		w, err1 := rc.Do(ctx, args...).Slice()
		g, err2 := oc.Do(ctx, args...).Slice()
		if err1 != nil || err2 != nil || fmt.Sprint(w) != fmt.Sprint(g) {
			t.Errorf("%s %s: master %v %v, replica %v %v", cmd, k, w, err1, g, err2)
		}
	}
}

// redisBloomKeys writes RedisBloom keys of every shape to the master:
// reserved, created by BF.ADD/CF.ADD with the module's parameters,
// scaled to several links or filters, non-scaling, cuckoo filters with
// deletions, with and without a time to live.
func redisBloomKeys(t *testing.T, c *redis.Client, tag string) []string {
	t.Helper()
	ctx := context.Background()
	var items []string
	for i := range 3000 {
		items = append(items, fmt.Sprintf("item-%d", i))
	}
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args[:min(len(args), 3)], err)
		}
	}
	many := func(cmd, key string, from, to int) {
		args := []any{cmd, key}
		for _, it := range items[from:to] {
			args = append(args, it)
		}
		do(args...)
	}
	do("BF.RESERVE", tag+"bf:reserved", "0.001", "1000")
	many("BF.MADD", tag+"bf:reserved", 0, 500)
	do("BF.ADD", tag+"bf:auto", "x")
	many("BF.MADD", tag+"bf:auto", 0, 50)
	do("BF.RESERVE", tag+"bf:scaled", "0.01", "100", "EXPANSION", "3")
	many("BF.MADD", tag+"bf:scaled", 0, 2000) // several links
	do("BF.RESERVE", tag+"bf:fixed", "0.05", "200", "NONSCALING")
	many("BF.MADD", tag+"bf:fixed", 0, 150)
	args := []any{"BF.INSERT", tag + "bf:insert", "CAPACITY", "300", "ERROR", "0.02", "ITEMS"}
	for _, it := range items[:400] {
		args = append(args, it)
	}
	do(args...)
	do("BF.ADD", tag+"bf:ttl", "y")
	do("EXPIRE", tag+"bf:ttl", "3600")
	do("CF.RESERVE", tag+"cf:reserved", "1000", "BUCKETSIZE", "4")
	for _, it := range items[:600] {
		do("CF.ADD", tag+"cf:reserved", it)
	}
	for _, it := range items[:200] {
		do("CF.DEL", tag+"cf:reserved", it)
	}
	do("CF.ADD", tag+"cf:auto", "x")
	do("CF.ADDNX", tag+"cf:auto", "y")
	do("CF.RESERVE", tag+"cf:scaled", "64", "EXPANSION", "2")
	for _, it := range items[:500] {
		do("CF.ADD", tag+"cf:scaled", it) // several filters
	}
	for _, it := range items[100:150] {
		do("CF.DEL", tag+"cf:scaled", it)
	}
	do("SET", tag+"plain", "v")
	return append(items[:20:20], "absent-1", "absent-2", "item-2999")
}

// A Redis + RedisBloom master's Bloom and cuckoo filters of every shape
// arrive by the full sync, then by the stream (RedisBloom replicates its
// commands verbatim: a BF.ADD that creates a key is sent as BF.ADD), and
// every key answers identically on the replica: TYPE, INFO, the SCANDUMP
// stream byte for byte, queries.
func TestReplicaOfRedisBloom(t *testing.T) {
	r := startRedisBloomMaster(t)
	c := r.Client(t)
	items := redisBloomKeys(t, c, "sync:")
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	sameFilters(t, r, s, items)
	// The same shapes made by the stream, and changes to the synced keys.
	redisBloomKeys(t, c, "stream:")
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"BF.MADD", "sync:bf:scaled", "new-1", "new-2"},
		{"CF.DEL", "sync:cf:reserved", "item-300"},
		{"CF.ADD", "sync:cf:scaled", "new-3"},
		{"BF.ADD", "sync:bf:fixed", "new-4"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	waitRedisSynced(t, r, rc)
	sameFilters(t, r, s, append(items, "new-1", "new-3"))
	if got := redisInfo(t, r, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full = %s, want 1", got)
	}
}

// A master whose RedisBloom was loaded with other parameters
// (ERROR_RATE, INITIAL_SIZE): the filters its stream's BF.ADD creates on
// the replica are the master's (same INFO, same bits), not ones made with
// the replica's own defaults.
func TestReplicaOfRedisBloomModuleParameters(t *testing.T) {
	r := startRedisBloomMaster(t, "ERROR_RATE", "0.001", "INITIAL_SIZE", "500")
	c := r.Client(t)
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	// A bloom serve replica of it (a chain) creates the same filters:
	// its master passes the Redis master's parameters on.
	h, p := hostPort(t, s)
	chained := startServer(t, Config{ReplicaOf: h + " " + p})
	cc := dialRaw(t, chained.Addr())
	waitSynced(t, rc, cc)
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"BF.ADD", "a", "x"},
		{"BF.MADD", "b", "x", "y"},
		{"BF.INSERT", "c", "ITEMS", "x"},
		{"CF.ADD", "d", "x"},
		{"CF.INSERT", "e", "ITEMS", "x"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	waitRedisSynced(t, r, rc)
	sameFilters(t, r, s, []string{"x", "y", "z"})
	waitSynced(t, rc, cc)
	sameFilters(t, r, chained, []string{"x", "y", "z"})
	if got := rc.do("BF.INFO", "a", "CAPACITY"); got != "[:500]" && got != ":500" {
		t.Errorf("BF.INFO a CAPACITY = %s, want 500 (the master's INITIAL_SIZE)", got)
	}
	// The replica's own parameters are untouched.
	if got := rc.do("CONFIG", "GET", "bf-error-rate"); got != `["bf-error-rate" "0.01"]` {
		t.Errorf("CONFIG GET bf-error-rate = %s", got)
	}
}

// RedisBloom's other types (Count-Min Sketch, Top-K, t-digest) load and
// follow the stream, answering as on the master; a key of a type bloom
// serve cannot hold (a hash here) stops the sync, named with its count;
// with replica-ignore-unsupported yes the rest loads without it and the
// stream's writes to it are passed over; with no, such a write stops the
// link.
func TestReplicaOfRedisBloomOtherTypes(t *testing.T) {
	r := startRedisBloomMaster(t)
	c := r.Client(t)
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"BF.ADD", "bf", "x"},
		{"CMS.INITBYDIM", "cms1", "100", "5"},
		{"CMS.INITBYDIM", "cms2", "100", "5"},
		{"CMS.INCRBY", "cms1", "a", "3", "b", "4"},
		{"TOPK.RESERVE", "topk", "10"},
		{"TOPK.ADD", "topk", "a", "a", "b"},
		{"TDIGEST.CREATE", "td"},
		{"TDIGEST.ADD", "td", "1", "2", "3"},
		{"HSET", "h", "f", "v"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	s := startServer(t, Config{replRetryMin: time.Minute})
	rc := dialRaw(t, s.Addr())
	host, port, _ := strings.Cut(r.Addr, ":")
	mustDo(t, rc, "+OK", "REPLICAOF", host, port)
	poll.True(t, 10*time.Second, "the sync to stop on the unsupported keys", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "cannot hold")
	})
	e := replInfo(t, rc, "replication", "master_sync_last_error")
	for _, w := range []string{"1 keys", "hash: 1 key"} {
		if !strings.Contains(e, w) {
			t.Errorf("master_sync_last_error lacks %q: %s", w, e)
		}
	}
	for _, n := range []string{"CMSk-TYPE", "TopK-TYPE", "TDIS-TYPE"} {
		if strings.Contains(e, n) {
			t.Errorf("master_sync_last_error names %s, which bloom serve holds: %s", n, e)
		}
	}
	if got := rc.do("DBSIZE"); got != ":0" {
		t.Errorf("DBSIZE = %s", got)
	}
	// The next try comes at once, not after the minute's pause.
	mustDo(t, rc, "+OK", "CONFIG", "SET", "replica-ignore-unsupported", "yes")
	waitRedisSynced(t, r, rc)
	if got := rc.do("BF.EXISTS", "bf", "x"); got != ":1" {
		t.Errorf("BF.EXISTS bf x = %s", got)
	}
	if got := replInfo(t, rc, "replication", "master_sync_skipped_keys"); got != "1" {
		t.Errorf("master_sync_skipped_keys = %s, want 1", got)
	}
	// The sketches' and the t-digest's writes in the stream apply; the
	// hash's are passed over with it.
	for _, cmd := range [][]any{{"CMS.INCRBY", "cms1", "a", "1"}, {"CMS.MERGE", "cms2", "1", "cms1", "WEIGHTS", "2"},
		{"TOPK.ADD", "topk", "c", "b"}, {"TDIGEST.ADD", "td", "4", "5"}, {"HSET", "h", "g", "w"}, {"BF.ADD", "bf", "y"}} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	waitRedisSynced(t, r, rc)
	if got := replInfo(t, rc, "replication", "master_stream_skipped_commands"); got != "1" {
		t.Errorf("master_stream_skipped_commands = %s, want 1", got)
	}
	mc := dialRaw(t, r.Addr)
	for _, q := range [][]string{{"CMS.QUERY", "cms1", "a", "b", "z"}, {"CMS.QUERY", "cms2", "a", "b"}, {"CMS.INFO", "cms2"},
		{"TOPK.LIST", "topk", "WITHCOUNT"}, {"TYPE", "cms1"}, {"TYPE", "topk"}, {"TYPE", "td"},
		{"TDIGEST.QUANTILE", "td", "0.1", "0.5", "0.9"}, {"TDIGEST.MIN", "td"}, {"TDIGEST.MAX", "td"}} {
		if want, got := mc.do(q...), rc.do(q...); want != got {
			t.Errorf("%v: master %s, replica %s", q, want, got)
		}
	}
	mustDo(t, rc, "+OK", "CONFIG", "SET", "replica-ignore-unsupported", "no")
	if err := c.Do(ctx, "HSET", "h", "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 10*time.Second, "the link to stop on HSET", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "HSET")
	})
}

// bloom serve following Redis, stopped cleanly and started again,
// continues where it stopped (+CONTINUE), as a Redis replica restarted
// from its RDB does: the writes made meanwhile arrive, with no second
// full sync.
func TestReplicaOfRedisCleanRestartContinues(t *testing.T) {
	r := startRedisMaster(t)
	c := r.Client(t)
	ctx := context.Background()
	redisStrings(t, c)
	startRep := restartable(t, Config{ReplicaOf: strings.Replace(r.Addr, ":", " ", 1), replRetryMin: 50 * time.Millisecond})
	s := startRep()
	rc := dialRaw(t, s.Addr())
	waitRedisSynced(t, r, rc)
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "while-away", "1", 0)
	c.Del(ctx, "n:7")
	s = startRep()
	rc = dialRaw(t, s.Addr())
	waitRedisSynced(t, r, rc)
	sameStrings(t, r, s)
	if full, ok := redisInfo(t, r, "stats", "sync_full"), redisInfo(t, r, "stats", "sync_partial_ok"); full != "1" || ok != "1" {
		t.Errorf("master: sync_full=%s sync_partial_ok=%s, want 1 and 1 (the restart continued)", full, ok)
	}
}

// A bloom serve replica of a bloom serve that follows Redis (a chain)
// gets the first one's snapshot and then Redis's stream as it came: it
// holds what Redis holds, at Redis's offset.
func TestReplicaOfRedisChained(t *testing.T) {
	r := startRedisMaster(t)
	c := r.Client(t)
	ctx := context.Background()
	redisStrings(t, c)
	b := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	bc := dialRaw(t, b.Addr())
	followRedis(t, r, bc)
	h, p := hostPort(t, b)
	cs := startServer(t, Config{ReplicaOf: h + " " + p})
	cc := dialRaw(t, cs.Addr())
	waitSynced(t, bc, cc)
	for i := range 100 {
		c.Set(ctx, "chain:"+strconv.Itoa(i), i, time.Hour)
	}
	c.Del(ctx, "n:1", "n:2")
	waitRedisSynced(t, r, bc)
	waitSynced(t, bc, cc)
	sameStrings(t, r, cs)
	if got, want := replInfo(t, cc, "replication", "master_repl_offset"), redisInfo(t, r, "replication", "master_repl_offset"); got != want {
		t.Errorf("the chained replica's offset %s, Redis's %s", got, want)
	}
}

// tls-replication yes: bloom serve follows a Redis master on its TLS
// port, with a client certificate the master checks, and checks the
// master's certificate against the CA.
func TestReplicaOfRedisTLS(t *testing.T) {
	m := newMTLS(t)
	tlsPort, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := startRedisMaster(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", m.srvCert, "--tls-key-file", m.srvKey,
		"--tls-ca-cert-file", m.ca.File, "--tls-auth-clients", "yes")
	c := r.Client(t)
	ctx := context.Background()
	redisStrings(t, c)
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond, TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File, "tls-replication": "yes",
			"tls-client-cert-file": m.clientCrt, "tls-client-key-file": m.clientK}})
	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, "+OK", "REPLICAOF", "127.0.0.1", strconv.Itoa(tlsPort))
	waitRedisSynced(t, r, rc)
	c.Set(ctx, "after", "tls", 0)
	waitRedisSynced(t, r, rc)
	sameStrings(t, r, s)
}

// A Redis master's payload is received with no lock held: SAVE, BGSAVE
// and INFO answer while it is held back.
func TestReplicaOfRedisReceivesPayloadOffTheLock(t *testing.T) {
	r := startRedisMaster(t)
	redisStrings(t, r.Client(t))
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	testHookSyncPayload.Store(&hook)
	defer testHookSyncPayload.Store(nil)
	s := startServer(t, Config{ReplicaOf: strings.Replace(r.Addr, ":", " ", 1)})
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("the replica never received a payload")
	}
	rc := dialRaw(t, s.Addr())
	for _, cmd := range [][]string{{"SAVE"}, {"BGSAVE"}, {"INFO", "replication"}} {
		got, err := doWithin(rc, 5*time.Second, cmd...)
		if err != nil {
			close(release)
			t.Fatalf("%v on the replica while the master's payload is held back: %v", cmd, err)
		}
		if cmd[0] == "INFO" && !strings.Contains(got, "master_sync_in_progress:1") {
			t.Errorf("INFO replication while receiving: %s", got)
		}
	}
	close(release)
	waitRedisSynced(t, r, rc)
	sameStrings(t, r, s)
}

// RedisBloom replicates a BF.ADD into a full non-scaling filter, which
// fails on the master: it fails alike on the replica, changes nothing on
// either, and the link stays up.
func TestReplicaOfRedisBloomFailedAddReplicated(t *testing.T) {
	r := startRedisBloomMaster(t)
	c := r.Client(t)
	ctx := context.Background()
	s := startServer(t, Config{replRetryMin: time.Minute})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	if err := c.Do(ctx, "BF.RESERVE", "full", "0.1", "2", "NONSCALING").Err(); err != nil {
		t.Fatal(err)
	}
	full := false
	for i := 0; i < 100 && !full; i++ {
		err := c.Do(ctx, "BF.ADD", "full", "item"+strconv.Itoa(i)).Err()
		full = err != nil && strings.Contains(err.Error(), "non scaling filter is full")
	}
	if !full {
		t.Fatal("the non-scaling filter never filled")
	}
	c.Set(ctx, "after", "1", 0)
	waitRedisSynced(t, r, rc)
	sameFilters(t, r, s, []string{"item1", "item50"})
	if got := redisInfo(t, r, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full = %s, want 1", got)
	}
}
