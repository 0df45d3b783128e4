package server

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// redisFollow points the real redis-server r at bloom serve m and waits
// for its link to be up.
func redisFollow(t *testing.T, r *redistest.Server, m *Server) {
	t.Helper()
	host, port, _ := strings.Cut(m.Addr(), ":")
	if _, err := r.CLI(context.Background(), "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	replWait(t, "the Redis replica's link to come up", func() bool {
		return redisInfo(t, r, "replication", "master_link_status") == "up"
	})
}

// waitOne runs WAIT 1 on bloom serve and fails unless it answers 1.
func waitOne(t *testing.T, mc *redis.Client) {
	t.Helper()
	n, err := mc.Do(context.Background(), "WAIT", 1, 5000).Int64()
	if err != nil || n != 1 {
		t.Fatalf("WAIT 1 5000 = %d, %v; want 1 (the Redis replica acknowledges)", n, err)
	}
}

// sameAnswers fails unless both servers answer every command alike.
func sameAnswers(t *testing.T, mc, rc *redis.Client, cmds [][]any) {
	t.Helper()
	ctx := context.Background()
	for _, c := range cmds {
		want, werr := mc.Do(ctx, c...).Result()
		got, gerr := rc.Do(ctx, c...).Result()
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
			t.Errorf("%.80v: bloom serve %.300v (%v), Redis replica %.300v (%v)", c, want, werr, got, gerr)
		}
	}
}

// A real redis-server follows bloom serve: strings with their expiries in
// the full sync's RDB, then the stream, with a writer running during and
// after the sync; WAIT counts it.
func TestRedisReplicaOfBloomServeStrings(t *testing.T) {
	m := startServer(t, Config{NoPersistence: true})
	mc := newClient(t, m.Addr(), 2)
	ctx := context.Background()
	for i := range 200 {
		k := "s:" + strconv.Itoa(i)
		var err error
		switch i % 4 {
		case 0:
			err = mc.Set(ctx, k, "v"+strconv.Itoa(i), 0).Err()
		case 1:
			err = mc.Set(ctx, k, strings.Repeat("x", 100+i), time.Hour).Err() // LZF-compressed in the RDB
		case 2:
			err = mc.Set(ctx, k, strconv.Itoa(i*1000), 90*time.Second).Err() // integer-encoded
		case 3:
			err = mc.Set(ctx, k, "short-lived", 1500*time.Millisecond).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r := redistest.Start(t)
	rc := newClient(t, r.Addr, 2)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var written atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := newClient(t, m.Addr(), 2)
		for i := 0; !stop.Load(); i++ {
			if err := w.Set(ctx, "w:"+strconv.Itoa(i%500), i, 0).Err(); err != nil {
				t.Error(err)
				return
			}
			w.Del(ctx, "w:"+strconv.Itoa((i+250)%500))
			written.Add(1)
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	redisFollow(t, r, m)
	// The writer keeps going after the sync.
	n0 := written.Load()
	replWait(t, "writes after the sync", func() bool { return written.Load() > n0+200 })
	stop.Store(true)
	wg.Wait()
	mustWait := func() { waitOne(t, mc) }
	mustWait()
	if err := mc.Expire(ctx, "s:0", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Do(ctx, "SET", "s:1", "replaced", "KEEPTTL").Err(); err != nil {
		t.Fatal(err)
	}
	// The short-lived keys expire on the master, which sends DELs.
	replWait(t, "the short-lived keys to expire on the master", func() bool {
		n, _ := mc.Exists(ctx, "s:3", "s:7", "s:199").Result()
		return n == 0
	})
	mustWait()
	mk, err := mc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(mk)
	sort.Strings(rk)
	if !reflect.DeepEqual(mk, rk) {
		t.Fatalf("keys differ: bloom serve %d, Redis replica %d", len(mk), len(rk))
	}
	for _, k := range mk {
		mv, _ := mc.Get(ctx, k).Result()
		rv, _ := rc.Get(ctx, k).Result()
		if mv != rv {
			t.Errorf("GET %s: bloom serve %q, Redis replica %q", k, mv, rv)
		}
		mt, _ := mc.PTTL(ctx, k).Result()
		rt, _ := rc.PTTL(ctx, k).Result()
		if (mt < 0) != (rt < 0) || (mt-rt).Abs() > 5*time.Second {
			t.Errorf("PTTL %s: bloom serve %v, Redis replica %v", k, mt, rt)
		}
	}
	if got := redisInfo(t, r, "replication", "master_link_status"); got != "up" {
		t.Errorf("master_link_status = %s\n%s", got, r.Log())
	}
	if strings.Contains(r.Log(), "unknown command") || strings.Contains(r.Log(), "== CRITICAL ==") {
		t.Errorf("the Redis replica refused part of the stream:\n%s", r.Log())
	}
}

// With the RedisBloom module, the Redis replica answers every item of
// every Bloom and cuckoo filter as bloom serve does: filters in the full
// sync's RDB (RedisBloom's module encoding) and changed by the stream.
func TestRedisReplicaOfBloomServeFilters(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	m := startServer(t, Config{NoPersistence: true})
	mc := newClient(t, m.Addr(), 2)
	ctx := context.Background()
	do := func(args ...any) {
		t.Helper()
		if err := mc.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	items := func(prefix string, from, to int) []any {
		var out []any
		for i := from; i < to; i++ {
			out = append(out, prefix+strconv.Itoa(i))
		}
		return out
	}
	do("BF.RESERVE", "bf:reserved", 0.01, 1000)
	do(append([]any{"BF.MADD", "bf:reserved"}, items("a", 0, 300)...)...)
	do(append([]any{"BF.MADD", "bf:auto"}, items("b", 0, 200)...)...)
	do("BF.RESERVE", "bf:scaled", 0.02, 50, "EXPANSION", 3)
	do(append([]any{"BF.MADD", "bf:scaled"}, items("c", 0, 400)...)...)
	do("BF.RESERVE", "bf:nonscaling", 0.001, 300, "NONSCALING")
	do(append([]any{"BF.MADD", "bf:nonscaling"}, items("d", 0, 250)...)...)
	do(append([]any{"BF.INSERT", "bf:inserted", "CAPACITY", 500, "NONSCALING", "ITEMS"}, items("e", 0, 100)...)...)
	do("CF.RESERVE", "cf:deleted", 1000)
	do(append([]any{"CF.INSERT", "cf:deleted", "ITEMS"}, items("f", 0, 400)...)...)
	for i := 0; i < 400; i += 3 {
		do("CF.DEL", "cf:deleted", "f"+strconv.Itoa(i))
	}
	do("CF.RESERVE", "cf:expanded", 64, "BUCKETSIZE", 4, "EXPANSION", 2)
	do(append([]any{"CF.INSERT", "cf:expanded", "ITEMS"}, items("g", 0, 300)...)...)
	do("CF.ADD", "cf:auto", "h0")
	do("CF.ADD", "cf:auto", "h0")
	do("SET", "plain", "v", "EX", 100)
	do("PEXPIRE", "bf:auto", 600000)

	r := redistest.Start(t, "--loadmodule", module)
	rc := newClient(t, r.Addr, 2)
	redisFollow(t, r, m)
	// The stream: more items (a scaled filter grows another link), deletions,
	// new keys.
	do(append([]any{"BF.MADD", "bf:scaled"}, items("c", 400, 900)...)...)
	do(append([]any{"BF.MADD", "bf:reserved"}, items("a", 300, 400)...)...)
	do("BF.ADD", "bf:new", "z")
	do("BF.RESERVE", "bf:ns2", 0.01, 100, "NONSCALING")
	do(append([]any{"BF.INSERT", "bf:ns2", "ITEMS"}, items("z", 0, 50)...)...)
	do(append([]any{"BF.INSERT", "bf:ins2", "CAPACITY", 50, "EXPANSION", 4, "ITEMS"}, items("z", 0, 200)...)...)
	do("CF.COMPACT", "cf:deleted")
	for i := 1; i < 400; i += 5 {
		do("CF.DEL", "cf:deleted", "f"+strconv.Itoa(i))
	}
	do("CF.ADDNX", "cf:auto", "h1")
	do("CF.ADD", "cf:new", "y")
	waitOne(t, mc)

	var cmds [][]any
	for _, k := range []string{"bf:reserved", "bf:auto", "bf:scaled", "bf:nonscaling", "bf:inserted", "bf:new", "bf:ns2", "bf:ins2"} {
		cmds = append(cmds, []any{"BF.INFO", k}, []any{"TYPE", k})
		mt, _ := mc.PTTL(ctx, k).Result()
		rt, _ := rc.PTTL(ctx, k).Result()
		if (mt < 0) != (rt < 0) || (mt-rt).Abs() > 5*time.Second {
			t.Errorf("PTTL %s: bloom serve %v, Redis replica %v", k, mt, rt)
		}
		for _, p := range []string{"a", "b", "c", "d", "e", "z", "absent"} {
			cmds = append(cmds, append([]any{"BF.MEXISTS", k}, items(p, 0, 1000)...))
		}
	}
	for _, k := range []string{"cf:deleted", "cf:expanded", "cf:auto", "cf:new"} {
		cmds = append(cmds, []any{"CF.INFO", k}, []any{"TYPE", k})
		for _, p := range []string{"f", "g", "h", "y", "absent"} {
			cmds = append(cmds, append([]any{"CF.MEXISTS", k}, items(p, 0, 400)...))
			for _, it := range items(p, 0, 20) {
				cmds = append(cmds, []any{"CF.COUNT", k, it})
			}
		}
	}
	cmds = append(cmds, []any{"GET", "plain"}, []any{"DBSIZE"})
	sameAnswers(t, mc, rc, cmds)
	if strings.Contains(r.Log(), "unknown command") || strings.Contains(r.Log(), "== CRITICAL ==") {
		t.Errorf("the Redis replica refused part of the stream:\n%s", r.Log())
	}
}

// A key Redis cannot hold (one of bloomkit's own filters) refuses the
// Redis replica before any payload: it keeps its data, and its retries
// cost the master no snapshot. Once the key is gone the replica syncs.
// While it is attached, making such a key is refused.
func TestRedisReplicaRefusedForNativeKeys(t *testing.T) {
	m := startServer(t, Config{NoPersistence: true})
	mc := newClient(t, m.Addr(), 2)
	ctx := context.Background()
	for _, c := range [][]any{
		{"BF.RESERVE", "native:blocked", 0.01, 1000, "LAYOUT", "blocked"},
		{"BF.RESERVE", "native:window", 0.01, 1000, "WINDOW", "1h", "GENERATIONS", 4},
		{"SET", "s", "from-master"},
	} {
		if err := mc.Do(ctx, c...).Err(); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
	}
	r := redistest.Start(t)
	if _, err := r.CLI(ctx, "SET", "mine", "kept"); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(m.Addr(), ":")
	if _, err := r.CLI(ctx, "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	// Three of its tries refused, once a second (a refusal it took for
	// a failure would have it retry at once, in a loop).
	start := time.Now()
	replWait(t, "the Redis replica to be refused three times", func() bool {
		return strings.Count(r.Log(), "a Redis replica cannot hold") >= 3
	})
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Errorf("three refusals in %v: the Redis replica retries in a loop\n%s", d, r.Log())
	}
	log := r.Log()
	if !strings.Contains(log, "2 key(s)") || !strings.Contains(log, `"native:blocked", "native:window"; refused before any payload, the replica keeps its data`) {
		t.Errorf("the refusal does not name the keys:\n%s", log)
	}
	if out, err := r.CLI(ctx, "GET", "mine"); err != nil || strings.TrimSpace(out) != "kept" {
		t.Fatalf("the Redis replica lost its data: GET mine = %q, %v\n%s", out, err, r.Log())
	}
	if strings.Contains(log, "Flushing old data") || strings.Contains(log, "MASTER <-> REPLICA sync: receiving") {
		t.Errorf("the Redis replica got a payload:\n%s", log)
	}
	rawm := dialRaw(t, m.Addr())
	if got := replInfo(t, rawm, "stats", "sync_full"); got != "0" {
		t.Errorf("sync_full = %s: the master made snapshots for a replica it refuses", got)
	}
	// Gone, the replica follows.
	if err := mc.Del(ctx, "native:blocked", "native:window").Err(); err != nil {
		t.Fatal(err)
	}
	replWait(t, "the Redis replica's link to come up", func() bool {
		return redisInfo(t, r, "replication", "master_link_status") == "up"
	})
	waitOne(t, mc)
	if got := replInfo(t, rawm, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full = %s, want 1\n%s", got, r.Log())
	}
	rc := newClient(t, r.Addr, 2)
	if v, err := rc.Get(ctx, "s").Result(); err != nil || v != "from-master" {
		t.Errorf("GET s on the replica = %q, %v", v, err)
	}
	if n, _ := rc.Exists(ctx, "mine").Result(); n != 0 {
		t.Errorf("the replica kept its old key after the full sync")
	}
	// Attached, a Redis replica refuses what it could not follow.
	for _, c := range [][]any{
		{"BF.RESERVE", "native:new", 0.01, 1000, "LAYOUT", "classic"},
		{"BF.MERGE", "plain:copy", "plain:src"},
	} {
		err := mc.Do(ctx, c...).Err()
		if err == nil || !strings.Contains(err.Error(), "a Redis replica is attached") {
			t.Errorf("%v with a Redis replica attached: %v", c, err)
		}
	}
	if n, _ := mc.Exists(ctx, "native:new", "plain:copy").Result(); n != 0 {
		t.Errorf("a refused command made %d key(s)", n)
	}
	if err := mc.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitOne(t, mc)
	if v, _ := rc.Get(ctx, "after").Result(); v != "1" {
		t.Errorf("GET after on the replica = %q", v)
	}
	if _, err := r.CLI(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
}

// natives reads the server's count of keys a Redis replica cannot hold.
func natives(s *Server) (int, []string) {
	s.db.Lock()
	defer s.db.Unlock()
	n, names := s.db.Natives(10)
	sort.Strings(names)
	return n, names
}

// The keys a Redis replica cannot hold are counted through every way a
// key comes and goes: creation, RENAME, COPY, DEL, expiry, FLUSHALL, a
// restart from the snapshot and the log.
func TestNativeKeysCounted(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	check := func(want int, names ...string) {
		t.Helper()
		n, got := natives(s)
		if n != want || (names != nil && !reflect.DeepEqual(got, names)) {
			t.Fatalf("natives = %d %v, want %d %v", n, got, want, names)
		}
	}
	mustDo(t, rc, "+OK", "BF.RESERVE", "n1", "0.01", "1000", "LAYOUT", "blocked")
	mustDo(t, rc, "+OK", "BF.RESERVE", "plain", "0.01", "1000")
	mustDo(t, rc, "+OK", "SET", "s", "v")
	check(1, "n1")
	mustDo(t, rc, "+OK", "RENAME", "n1", "n2")
	check(1, "n2")
	mustDo(t, rc, ":1", "COPY", "n2", "n3")
	check(2, "n2", "n3")
	mustDo(t, rc, "+OK", "RENAME", "plain", "n3") // replaced by a RedisBloom-layout key
	check(1, "n2")
	s = restart(t, s, true)
	check(1, "n2")
	rc = dialRaw(t, s.Addr())
	mustDo(t, rc, "+OK", "BF.RESERVE", "n4", "0.01", "1000", "WINDOW", "1h")
	mustDo(t, rc, ":1", "PEXPIRE", "n4", "50")
	replWait(t, "n4 to expire", func() bool { n, _ := natives(s); return n == 1 })
	s = restart(t, s, false) // from the log
	check(1, "n2")
	rc = dialRaw(t, s.Addr())
	mustDo(t, rc, "+OK", "FLUSHALL")
	check(0)
	// The refusal fits the 256 bytes a Redis replica reads for it,
	// whatever the names.
	for i := range 5 {
		mustDo(t, rc, "+OK", "BF.RESERVE", strings.Repeat(strconv.Itoa(i), 300), "0.01", "100", "LAYOUT", "blocked")
	}
	s.db.Lock()
	msg := s.redisRefusal(true)
	s.db.Unlock()
	named := 0
	for i := range 5 {
		if strings.Contains(msg, `"`+strings.Repeat(strconv.Itoa(i), 40)+`..."`) {
			named++
		}
	}
	if len(msg) >= 250 || !strings.HasPrefix(msg, "NOMASTERLINK bloom serve holds 5 key(s)") || named == 0 {
		t.Errorf("refusal (%d bytes): %s", len(msg), msg)
	}
}

// A Redis replica whose link drops resyncs partially (PSYNC2), unless the
// stream since its offset holds a record Redis could not apply (BF.MERGE):
// then it gets a full sync.
func TestRedisReplicaPartialResync(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	m := startServer(t, Config{NoPersistence: true})
	mc := newClient(t, m.Addr(), 2)
	rawm := dialRaw(t, m.Addr())
	ctx := context.Background()
	mustDo(t, rawm, "+OK", "SET", "a", "1")
	mustDo(t, rawm, ":1", "BF.ADD", "src", "x")
	r := redistest.Start(t, "--loadmodule", module, "--enable-debug-command", "yes")
	rc := newClient(t, r.Addr, 2)
	redisFollow(t, r, m)
	waitOne(t, mc)
	mustDo(t, rawm, "+OK", "SET", "b", "2")
	if err := mc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	replWait(t, "a partial resync", func() bool {
		return replInfo(t, rawm, "stats", "sync_partial_ok") == "1" && replInfo(t, rawm, "replication", "connected_slaves") == "1"
	})
	waitOne(t, mc)
	if v, _ := rc.Get(ctx, "b").Result(); v != "2" {
		t.Errorf("GET b on the replica = %q", v)
	}
	if got := replInfo(t, rawm, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full = %s, want 1", got)
	}
	// Dropped again while it sleeps (Redis reconnects at once otherwise);
	// a BF.MERGE, refused while it was attached, goes in the stream before
	// it comes back.
	go r.CLI(ctx, "DEBUG", "SLEEP", "1.5")
	quick := redis.NewClient(&redis.Options{Addr: r.Addr, ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer quick.Close()
	replWait(t, "the Redis replica to sleep", func() bool {
		return quick.Ping(ctx).Err() != nil
	})
	if err := mc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	replWait(t, "BF.MERGE to be accepted", func() bool {
		err := mc.Do(ctx, "BF.MERGE", "merged", "src").Err()
		if err != nil && !strings.Contains(err.Error(), "a Redis replica is attached") {
			t.Fatal(err)
		}
		return err == nil
	})
	mustDo(t, rawm, "+OK", "SET", "c", "3")
	replWait(t, "a full resync", func() bool {
		return replInfo(t, rawm, "stats", "sync_full") == "2" && replInfo(t, rawm, "replication", "connected_slaves") == "1"
	})
	waitOne(t, mc)
	if v, _ := rc.Get(ctx, "c").Result(); v != "3" {
		t.Errorf("GET c on the replica = %q", v)
	}
	if v, _ := rc.Do(ctx, "BF.EXISTS", "merged", "x").Int(); v != 1 {
		t.Errorf("BF.EXISTS merged x on the replica = %d", v)
	}
	if got := replInfo(t, rawm, "stats", "sync_partial_ok"); got != "1" {
		t.Errorf("sync_partial_ok = %s, want 1", got)
	}
}

// A mixed fleet: Redis + RedisBloom master, bloom serve its replica, and
// a Redis + RedisBloom replica of bloom serve. What is written on the
// Redis master reaches the last Redis, through the full sync's RDB and
// the stream, and every item answers the same on all three.
func TestRedisReplicaOfBloomServeChainedFromRedis(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	top := startRedisMaster(t, "--loadmodule", module)
	tc := newClient(t, top.Addr, 2)
	ctx := context.Background()
	do := func(args ...any) {
		t.Helper()
		if err := tc.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do("BF.RESERVE", "bf", 0.01, 100, "EXPANSION", 2)
	do("CF.RESERVE", "cf", 500)
	for i := range 300 {
		do("BF.ADD", "bf", "i"+strconv.Itoa(i))
		do("CF.ADD", "cf", "i"+strconv.Itoa(i))
	}
	do("SET", "s", "v", "EX", 1000)
	b := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	bc := dialRaw(t, b.Addr())
	followRedis(t, top, bc)
	last := redistest.Start(t, "--loadmodule", module)
	lc := newClient(t, last.Addr, 2)
	redisFollow(t, last, b)
	for i := 300; i < 600; i++ {
		do("BF.ADD", "bf", "i"+strconv.Itoa(i))
		do("CF.ADD", "cf", "i"+strconv.Itoa(i))
	}
	do("CF.DEL", "cf", "i7")
	do("BF.ADD", "bf2", "x")
	waitRedisSynced(t, top, bc)
	replWait(t, "the last replica to catch up", func() bool {
		return redisInfo(t, last, "replication", "slave_repl_offset") == redisInfo(t, top, "replication", "master_repl_offset")
	})
	var cmds [][]any
	var probe []any
	for i := range 800 {
		probe = append(probe, "i"+strconv.Itoa(i))
	}
	cmds = append(cmds, append([]any{"BF.MEXISTS", "bf"}, probe...), append([]any{"CF.MEXISTS", "cf"}, probe...),
		[]any{"BF.INFO", "bf"}, []any{"CF.INFO", "cf"}, []any{"BF.EXISTS", "bf2", "x"}, []any{"GET", "s"}, []any{"DBSIZE"},
		[]any{"CF.COUNT", "cf", "i7"}, []any{"CF.COUNT", "cf", "i8"})
	sameAnswers(t, tc, lc, cmds)
}

// A native key that reaches bloom serve from its own master (a chain of
// bloom serve servers) cannot be refused: the Redis replica below is
// disconnected instead, and refused until the key is gone.
func TestRedisReplicaDroppedWhenNativeKeyArrives(t *testing.T) {
	top := startServer(t, Config{NoPersistence: true})
	tc := dialRaw(t, top.Addr())
	mustDo(t, tc, "+OK", "SET", "a", "1")
	h, p := hostPort(t, top)
	mid := startServer(t, Config{NoPersistence: true, ReplicaOf: h + " " + p})
	midc := dialRaw(t, mid.Addr())
	replWait(t, "the middle replica to sync", func() bool {
		return replInfo(t, midc, "replication", "master_link_status") == "up"
	})
	r := redistest.Start(t)
	redisFollow(t, r, mid)
	mustDo(t, tc, "+OK", "BF.RESERVE", "native", "0.01", "100", "LAYOUT", "blocked")
	replWait(t, "the Redis replica to be dropped and refused", func() bool {
		return strings.Contains(r.Log(), `a Redis replica cannot hold (bloomkit's own filters): "native"`)
	})
	if got := replInfo(t, midc, "replication", "connected_slaves"); got != "0" {
		t.Errorf("connected_slaves = %s on the middle server", got)
	}
	mustDo(t, tc, ":1", "DEL", "native")
	mustDo(t, tc, "+OK", "SET", "b", "2")
	replWait(t, "the Redis replica to follow again", func() bool {
		out, err := r.CLI(context.Background(), "GET", "b")
		return err == nil && strings.TrimSpace(out) == "2"
	})
}

// A Redis replica's RDB is made from the snapshot with no lock held:
// while the conversion is held back, SAVE, BGSAVE and writes answer; the
// payload is then an RDB of version 9.
func TestRedisReplicaRDBMadeOffTheLock(t *testing.T) {
	s := startServer(t, Config{})
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	testHookRedisRDB.Store(&hook)
	defer testHookRedisRDB.Store(nil)
	var released sync.Once
	defer released.Do(func() { close(release) })
	rc, admin := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	mustDo(t, admin, ":1", "BF.ADD", "k", "x")
	mustDo(t, rc, "+OK", "REPLCONF", "listening-port", "6380")
	mustDo(t, rc, "+OK", "REPLCONF", "capa", "eof", "capa", "psync2")
	rc.send("PSYNC", "?", "-1")
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the RDB was never made")
	}
	for _, cmd := range [][]string{{"SAVE"}, {"BGSAVE"}, {"BF.ADD", "k", "y"}} {
		got, err := doWithin(admin, 5*time.Second, cmd...)
		if err != nil {
			t.Fatalf("%v while the Redis replica's RDB is held: %v", cmd, err)
		}
		if got != "+OK" && got != "+Background saving started" && got != ":1" {
			t.Fatalf("%v: %s", cmd, got)
		}
	}
	released.Do(func() { close(release) })
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := rc.r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "+FULLRESYNC ") {
		t.Fatalf("reply to PSYNC: %q, %v", line, err)
	}
	for {
		line, err = rc.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line != "\n" {
			break
		}
	}
	if !strings.HasPrefix(line, "$") {
		t.Fatalf("payload header %q", line)
	}
	head := make([]byte, 9)
	if _, err := io.ReadFull(rc.r, head); err != nil || string(head) != "REDIS0009" {
		t.Fatalf("payload starts %q, %v", head, err)
	}
}

// A Redis + RedisBloom replica of bloom serve holds its Count-Min
// Sketches, Top-Ks and t-digests too: the full sync carries them in
// RedisBloom's encodings, the stream follows, and every query answers
// alike on both. (The Top-K has decay 1: RedisBloom draws its decays from
// the C library's rand(), which bloom serve's replicas do not share.)
func TestRedisReplicaOfBloomServeSketches(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	m := startServer(t, Config{NoPersistence: true})
	mc := newClient(t, m.Addr(), 2)
	ctx := context.Background()
	do := func(args ...any) {
		t.Helper()
		if err := mc.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do("CMS.INITBYDIM", "cms", 200, 5)
	do("CMS.INCRBY", "cms", "a", 3, "b", 7, "c", 1)
	do("CMS.INITBYPROB", "cms:prob", 0.01, 0.001)
	do("CMS.INCRBY", "cms:prob", "x", 100)
	do("TOPK.RESERVE", "topk", 3, 50, 4, 1)
	do("TOPK.ADD", "topk", "a", "b", "a", "c", "a", "b", "d")
	do("TDIGEST.CREATE", "td", "COMPRESSION", 50)
	for i := 0; i < 300; i++ {
		do("TDIGEST.ADD", "td", float64(i%97)*1.5, float64(i))
	}
	do("TDIGEST.QUANTILE", "td", 0.5) // merges the buffer: logged as such

	r := redistest.Start(t, "--loadmodule", module)
	rc := newClient(t, r.Addr, 2)
	redisFollow(t, r, m)
	do("CMS.INCRBY", "cms", "a", 2, "d", 4)
	do("CMS.INITBYDIM", "cms:new", 200, 5)
	do("CMS.MERGE", "cms:new", 1, "cms", "WEIGHTS", 3)
	do("TOPK.INCRBY", "topk", "e", 10, "a", 1)
	do("TDIGEST.ADD", "td", 1000, -5)
	do("TDIGEST.CREATE", "td:new")
	do("TDIGEST.ADD", "td:new", 1, 2, 3)
	waitOne(t, mc)

	cmds := [][]any{
		{"TYPE", "cms"}, {"TYPE", "topk"}, {"TYPE", "td"},
		{"CMS.QUERY", "cms", "a", "b", "c", "d", "zz"}, {"CMS.INFO", "cms"},
		{"CMS.QUERY", "cms:prob", "x", "y"}, {"CMS.INFO", "cms:prob"},
		{"CMS.QUERY", "cms:new", "a", "b", "d"}, {"CMS.INFO", "cms:new"},
		{"TOPK.LIST", "topk", "WITHCOUNT"}, {"TOPK.QUERY", "topk", "a", "b", "e", "zz"},
		{"TDIGEST.RANK", "td", 50}, {"DBSIZE"},
	}
	sameAnswers(t, mc, rc, cmds)
	// Doubles: the same numbers; Redis 7.0 prints them with 17 digits,
	// bloom serve in the shortest form that reads back the same, as Redis 8.
	for _, c := range [][]any{
		{"TDIGEST.QUANTILE", "td", 0, 0.1, 0.5, 0.9, 1}, {"TDIGEST.CDF", "td", 10, 100, 1000},
		{"TDIGEST.MIN", "td"}, {"TDIGEST.MAX", "td"}, {"TDIGEST.QUANTILE", "td:new", 0.5},
	} {
		floats := func(cl *redis.Client) []float64 {
			v, err := cl.Do(ctx, c...).Result()
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			var out []float64
			for _, x := range append([]any{}, anySlice(v)...) {
				f, err := strconv.ParseFloat(fmt.Sprint(x), 64)
				if err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				out = append(out, f)
			}
			return out
		}
		if want, got := floats(mc), floats(rc); !reflect.DeepEqual(want, got) {
			t.Errorf("%v: bloom serve %v, Redis replica %v", c, want, got)
		}
	}
}

// anySlice is v's elements when it is an array reply, else v alone.
func anySlice(v any) []any {
	if a, ok := v.([]any); ok {
		return a
	}
	return []any{v}
}

// While a Redis replica is attached, COPY of a filter or sketch is
// refused: RedisBloom registers no copy callback, so the replica would
// answer the copy "not supported for this module key" and miss it. A
// string copies, a COPY that copies nothing answers as always, and once
// the replica is gone every kind copies again.
func TestCopyRefusedWithRedisReplica(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	for _, c := range [][]string{{"BF.ADD", "bf", "x"}, {"TDIGEST.CREATE", "td"}, {"TDIGEST.ADD", "td", "1", "2"}, {"SET", "s", "v"}} {
		if got := admin.do(c...); strings.HasPrefix(got, "-") {
			t.Fatalf("%v: %s", c, got)
		}
	}
	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, "+OK", "REPLCONF", "listening-port", "6380")
	mustDo(t, rc, "+OK", "REPLCONF", "capa", "eof", "capa", "psync2")
	rc.send("PSYNC", "?", "-1")
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := rc.r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+FULLRESYNC ") {
		t.Fatalf("reply to PSYNC: %q, %v", line, err)
	}
	for _, k := range []string{"bf", "td"} {
		got := admin.do("COPY", k, k+"-copy")
		if !strings.HasPrefix(got, "-"+errRedisReplicaAttached) || !strings.Contains(got, "COPY") {
			t.Errorf("COPY %s with a Redis replica attached: %s", k, got)
		}
	}
	mustDo(t, admin, ":0", "EXISTS", "bf-copy", "td-copy")
	mustDo(t, admin, ":1", "COPY", "s", "s-copy")
	mustDo(t, admin, ":0", "COPY", "bf", "s-copy") // copies nothing: no refusal
	rc.c.Close()
	poll.True(t, 10*time.Second, "COPY once the Redis replica is gone", func() bool {
		return admin.do("COPY", "td", "td-copy") == ":1"
	})
	mustDo(t, admin, ":1", "COPY", "bf", "bf-copy")
}
