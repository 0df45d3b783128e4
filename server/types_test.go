package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/redisbloom"
)

// The answers below were recorded from RedisBloom 2.8.20 loaded into Redis
// 7.0.15. With BLOOMKIT_REDISBLOOM_MODULE set to a redisbloom.so (and redis-server
// installed) the same script also runs against the real module, so the
// recordings cannot drift from what it answers.

// typeScript builds filters and strings whose BF.DEBUG / CF.DEBUG / MEMORY
// USAGE answers are checked; the bulk adds are pipelined.
func typeScriptSetup(rc *rawConn) {
	rc.t.Helper()
	var cmds [][]string
	add := func(args ...string) { cmds = append(cmds, args) }
	adds := func(cmd, key string, n int) {
		for i := 1; i <= n; i++ {
			add(cmd, key, fmt.Sprint("i", i))
		}
	}
	add("FLUSHALL")
	add("BF.RESERVE", "bf", "0.01", "10")
	adds("BF.ADD", "bf", 99)
	add("BF.RESERVE", "t", "0.0001", "1000", "EXPANSION", "3")
	adds("BF.ADD", "t", 20000)
	add("BF.RESERVE", "ns", "0.001", "500", "NONSCALING")
	add("BF.ADD", "ns", "x")
	add("BF.ADD", "d", "x")
	add("BF.RESERVE", "big", "0.2", "7") // ≤ 0.25: RedisBloom 8 caps larger rates, 2.8 does not
	adds("BF.ADD", "big", 300)
	add("CF.RESERVE", "a", "128", "BUCKETSIZE", "1", "EXPANSION", "1")
	adds("CF.ADD", "a", 1000)
	add("CF.RESERVE", "c2", "1000", "BUCKETSIZE", "4", "MAXITERATIONS", "50", "EXPANSION", "2")
	adds("CF.ADD", "c2", 5000)
	adds("CF.DEL", "c2", 100)
	add("CF.ADD", "c3", "x")
	add("SET", "s", "hello")
	for _, c := range cmds {
		rc.send(c...)
	}
	for range cmds {
		if got := rc.read(); strings.HasPrefix(got, "-") {
			rc.t.Fatalf("setup: %s", got)
		}
	}
}

var typeSteps = []step{
	{"BF.DEBUG bf", `["size:97" ` +
		`"bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005" ` +
		`"bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025" ` +
		`"bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125" ` +
		`"bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:27 ratio:0.000625"]`},
	{"BF.DEBUG t", `["size:20000" ` +
		`"bytes:2584 bits:20672 hashes:15 hashwidth:64 capacity:1000 size:1000 ratio:5e-05" ` +
		`"bytes:8272 bits:66176 hashes:16 hashwidth:64 capacity:3000 size:3000 ratio:2.5e-05" ` +
		`"bytes:26440 bits:211520 hashes:17 hashwidth:64 capacity:9000 size:9000 ratio:1.25e-05" ` +
		`"bytes:84176 bits:673408 hashes:18 hashwidth:64 capacity:27000 size:7000 ratio:6.25e-06"]`},
	{"BF.DEBUG ns", `["size:1" "bytes:904 bits:7232 hashes:10 hashwidth:64 capacity:500 size:1 ratio:0.001"]`},
	{"BF.DEBUG d", `["size:1" "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005"]`},
	{"BF.DEBUG big", `["size:273" ` +
		`"bytes:8 bits:64 hashes:4 hashwidth:64 capacity:7 size:7 ratio:0.1" ` +
		`"bytes:16 bits:128 hashes:5 hashwidth:64 capacity:14 size:14 ratio:0.05" ` +
		`"bytes:32 bits:256 hashes:6 hashwidth:64 capacity:28 size:28 ratio:0.025" ` +
		`"bytes:64 bits:512 hashes:7 hashwidth:64 capacity:56 size:56 ratio:0.0125" ` +
		`"bytes:152 bits:1216 hashes:8 hashwidth:64 capacity:112 size:112 ratio:0.00625" ` +
		`"bytes:344 bits:2752 hashes:9 hashwidth:64 capacity:224 size:56 ratio:0.003125"]`},
	{"CF.DEBUG a", `"bktsize:1 buckets:128 items:1000 deletes:0 filters:10 max_iterations:20 expansion:1"`},
	{"CF.DEBUG c2", `"bktsize:4 buckets:256 items:4900 deletes:100 filters:3 max_iterations:50 expansion:2"`},
	{"CF.DEBUG c3", `"bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"`},
	// From RedisBloom's tests/flow/test_cuckoo.py (test_insert,
	// test_max_iterations, test_mem_usage).
	{"CF.INSERT f3 CAPACITY 10000 ITEMS foo", "[:1]"},
	{"CF.DEBUG f3", `"bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"`},
	{"CF.RESERVE mia 10 MAXITERATIONS 10", "+OK"},
	{"CF.DEBUG mia", `"bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:10 expansion:1"`},
	{"CF.RESERVE mib 10", "+OK"},
	{"CF.DEBUG mib", `"bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"`},
	{"CF.RESERVE cf 1000", "+OK"},
	{"MEMORY USAGE cf", ":1112"},
	{"CF.INSERT cf NOCREATE ITEMS foo", "[:1]"},
	{"MEMORY USAGE cf", ":1112"},
	{"BF.DEBUG nokey", "-ERR not found"},
	{"CF.DEBUG nokey", "-ERR not found"},
	{"BF.DEBUG a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.DEBUG bf", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.DEBUG", "-ERR wrong number of arguments for 'bf.debug' command"},
	{"CF.DEBUG a b", "-ERR wrong number of arguments for 'cf.debug' command"},
	// MEMORY USAGE: the filter's size (BF.INFO/CF.INFO Size) plus the key.
	{"MEMORY USAGE bf", ":600"},
	{"MEMORY USAGE t", ":121792"},
	{"MEMORY USAGE ns", ":1032"},
	{"MEMORY USAGE d", ":272"},
	{"MEMORY USAGE big", ":1064"},
	{"MEMORY USAGE a", ":1512"},
	{"MEMORY USAGE c2", ":7288"},
	{"MEMORY USAGE c3", ":1112"},
	{"MEMORY USAGE s", ":64"},
	{"MEMORY USAGE nokey", "nil"},
	{"MEMORY USAGE s SAMPLES 0", ":64"},
	{"MEMORY USAGE s SAMPLES", "-ERR syntax error"},
	{"MEMORY USAGE s SAMPLES x", "-ERR value is not an integer or out of range"},
	{"MEMORY USAGE s SAMPLES -1", "-ERR syntax error"},
	{"MEMORY USAGE s FOO 1", "-ERR syntax error"},
	{"MEMORY USAGE", "-ERR wrong number of arguments for 'memory|usage' command"},
	{"MEMORY DOCTOR x", "-ERR wrong number of arguments for 'memory|doctor' command"},
	{"MEMORY FOO", "-ERR unknown subcommand 'FOO'. Try MEMORY HELP."},
	{"MEMORY", "-ERR wrong number of arguments for 'memory' command"},
	{"MEMORY PURGE", "+OK"},
	{"MEMORY DOCTOR", `"Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"`},
	// A string key: WRONGTYPE where RedisBloom gives it, 0 or "not found"
	// where it does not look at the type.
	{"TYPE s", "+string"},
	{"STRLEN s", ":5"},
	{"BF.RESERVE s 0.01 100", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.ADD s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.MADD s a b", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.INSERT s ITEMS a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.EXISTS s a", ":0"},
	{"BF.MEXISTS s a b", "[:0 :0]"},
	{"BF.INFO s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.CARD s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.SCANDUMP s 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.LOADCHUNK s 1 x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BF.DEBUG s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.RESERVE s 100", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.ADD s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.ADDNX s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.INSERT s ITEMS a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.INSERTNX s ITEMS a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.EXISTS s a", ":0"},
	{"CF.MEXISTS s a b", "[:0 :0]"},
	{"CF.COUNT s a", ":0"},
	{"CF.DEL s a", "-Not found"},
	{"CF.COMPACT s", "-Cuckoo filter was not found"},
	{"CF.INFO s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.SCANDUMP s 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.LOADCHUNK s 1 x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"CF.DEBUG s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"GETDEL s", `"hello"`},
	{"EXISTS s", ":0"},
	// A filter key: WRONGTYPE to string reads; SET replaces it.
	{"GET bf", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"STRLEN bf", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"GETDEL bf", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SET bf v GET", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"TYPE bf", "+MBbloom--"},
	{"MGET bf nokey", "[nil nil]"},
	{"SET bf v", "+OK"},
	{"TYPE bf", "+string"},
	{"GET bf", `"v"`},
	{"BF.ADD bf x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"MSET a 1 c2 x", "+OK"},
	{"TYPE a", "+string"},
	{"MGET a c2 bf nokey", `["1" "x" "v" nil]`},
	{"CF.ADD c2 x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	// Generic commands on strings.
	{"SET e1 v", "+OK"},
	{"EXPIRE e1 100", ":1"},
	{"TTL e1", ":100"},
	{"PERSIST e1", ":1"},
	{"RENAME e1 e2", "+OK"},
	{"GET e2", `"v"`},
	{"EXISTS e1 e2", ":1"},
	{"DEL e2", ":1"},
	// SET's options and errors (Redis 7.0).
	{"SET k v NX XX", "-ERR syntax error"},
	{"SET k v EX 0", "-ERR invalid expire time in 'set' command"},
	{"SET k v EX -1", "-ERR invalid expire time in 'set' command"},
	{"SET k v EX abc", "-ERR value is not an integer or out of range"},
	{"SET k v EX 10 PX 100", "-ERR syntax error"},
	{"SET k v KEEPTTL EX 10", "-ERR syntax error"},
	{"SET k v FOO", "-ERR syntax error"},
	{"SET k v EX", "-ERR syntax error"},
	{"SET k v EX 9223372036854775807", "-ERR invalid expire time in 'set' command"},
	{"SET k v PX 9223372036854775807", "-ERR invalid expire time in 'set' command"},
	{"SET k v EX 10 EX 20", "+OK"}, // the same option again: the last value wins
	{"TTL k", ":20"},
	{"SET k v KEEPTTL KEEPTTL", "+OK"},
	{"SET k v NX NX", "nil"},
	{"SET k v ex abc ex 10", "+OK"}, // only the last value is parsed
	{"SET k v ex 10 ex abc", "-ERR value is not an integer or out of range"},
	{"SET k v PX 100 EX 10", "-ERR syntax error"},
	{"SET k v EXAT 1", "+OK"},
	{"GET k", "nil"},
	{"SET k v NX GET", "nil"},
	{"SET k v2 NX GET", `"v"`},
	{"SET k v3 XX GET", `"v"`},
	{"GET k", `"v3"`},
	{"SET n v XX GET", "nil"},
	{"SET n v XX", "nil"},
	{"SET n v NX", "+OK"},
	{"SET n w NX", "nil"},
	{"SET k v4 EX 100", "+OK"},
	{"TTL k", ":100"},
	{"SET k v5 KEEPTTL", "+OK"},
	{"TTL k", ":100"},
	{"SET k v6", "+OK"},
	{"TTL k", ":-1"},
	{"SET k v px 100000 GET", `"v6"`},
	{"PTTL k", ":100000"},
	{"SET k", "-ERR wrong number of arguments for 'set' command"},
	{"GET", "-ERR wrong number of arguments for 'get' command"},
	{"GET a b", "-ERR wrong number of arguments for 'get' command"},
	{"MSET a 1 b", "-ERR wrong number of arguments for 'mset' command"},
	{"STRLEN none", ":0"},
	{"GETDEL none", "nil"},
	// MEMORY USAGE of strings: integer, embedded (≤ 44 bytes) and raw.
	{"SET k 12345", "+OK"},
	{"MEMORY USAGE k", ":48"},
	{"SET k -5", "+OK"},
	{"MEMORY USAGE k", ":48"},
	{"SET k 007", "+OK"},
	{"MEMORY USAGE k", ":64"},
	{"SET k ''", "+OK"},
	{"MEMORY USAGE k", ":64"},
	{"SET k 1234567890123456789012345678901234567890abcd", "+OK"},
	{"MEMORY USAGE k", ":96"},
	{"SET k 1234567890123456789012345678901234567890abcde", "+OK"},
	{"MEMORY USAGE k", ":112"},
	{"SET kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk 1", "+OK"},
	{"MEMORY USAGE kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", ":88"},
	{"SET v1000 " + strings.Repeat("x", 1000), "+OK"},
	{"MEMORY USAGE v1000", ":1072"},
	{"SET v20000 " + strings.Repeat("y", 20000), "+OK"},
	{"MEMORY USAGE v20000", ":20528"},
	{"BF.ADD " + strings.Repeat("q", 300) + " x", ":1"},
	{"MEMORY USAGE " + strings.Repeat("q", 300), ":584"},
}

// ttlClose reports whether got is a TTL/PTTL reply at most a second (or
// 1000 ms) below want: the clock moves while the script runs.
func ttlClose(cmd, got, want string) bool {
	if !strings.HasPrefix(cmd, "TTL ") && !strings.HasPrefix(cmd, "PTTL ") {
		return false
	}
	g, err1 := strconv.Atoi(strings.TrimPrefix(got, ":"))
	w, err2 := strconv.Atoi(strings.TrimPrefix(want, ":"))
	slack := 1
	if strings.HasPrefix(cmd, "PTTL ") {
		slack = 1000
	}
	return err1 == nil && err2 == nil && w > 0 && g <= w && g >= w-slack
}

func runTypeScript(t *testing.T, rc *rawConn) {
	t.Helper()
	typeScriptSetup(rc)
	for _, st := range typeSteps {
		args := words(st.cmd)
		for i := range args {
			if args[i] == "''" {
				args[i] = ""
			}
		}
		got := rc.do(args...)
		if got != st.want && !ttlClose(st.cmd, got, st.want) {
			t.Errorf("%.80s\n got  %.300s\n want %.300s", st.cmd, got, st.want)
		}
	}
}

func TestStringsDebugMemory(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	runTypeScript(t, dialRaw(t, s.Addr()))
}

// The recordings above, checked against RedisBloom itself when available.
func TestStringsDebugMemoryAgainstRedisBloom(t *testing.T) {
	r := redistest.Start(t, "--loadmodule", redistest.RedisBloomModule(t))
	runTypeScript(t, dialRaw(t, r.Addr))
}

// C's printf("%g"), as RedisBloom prints a link's error ratio. The
// expected strings are what glibc prints.
func TestCFormatG(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0.005, "0.005"}, {0.01, "0.01"}, {0.0001, "0.0001"}, {0.00005, "5e-05"},
		{1.953125e-07, "1.95313e-07"}, {0.0046875, "0.0046875"}, {0.25, "0.25"},
		{1, "1"}, {100000, "100000"}, {1e6, "1e+06"}, {123456789, "1.23457e+08"},
		{0.1 + 0.2, "0.3"}, {2.5e-300, "2.5e-300"}, {0.00012345678, "0.000123457"},
		{0, "0"}, {0.3333333333, "0.333333"},
	} {
		if got := cFormatG(c.f); got != c.want {
			t.Errorf("cFormatG(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

// A CF.DEBUG example: 1000 items in a cuckoo filter of 64
// one-slot buckets that grows by 1 needs 18 sub-filters.
func TestCFDebugGrowthExample(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	rc.do("CF.RESERVE", "a", "64", "BUCKETSIZE", "1", "EXPANSION", "1")
	for i := 0; i < 1000; i++ {
		rc.send("CF.ADD", "a", fmt.Sprint(i))
	}
	for i := 0; i < 1000; i++ {
		rc.read()
	}
	// Recorded from RedisBloom 2.8.20 with the same items.
	want := `"bktsize:1 buckets:64 items:1000 deletes:0 filters:18 max_iterations:20 expansion:1"`
	if got := rc.do("CF.DEBUG", "a"); got != want {
		t.Fatalf("CF.DEBUG a = %s, want %s", got, want)
	}
}

// Strings survive a restart from the log and from a snapshot, with their
// expiry; EX is logged as an absolute PXAT, so a replay later does not
// extend the key's life.
func TestStringPersistence(t *testing.T) {
	for _, save := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", save), func(t *testing.T) {
			var mu sync.Mutex
			now := time.Unix(2_000_000, 0)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
			dir := t.TempDir()
			s := startServer(t, Config{Dir: dir, AppendFsync: "always", Now: clock})
			rc := dialRaw(t, s.Addr())
			runSteps(t, rc, []step{
				{"SET plain hello", "+OK"},
				{"SET empty ''", "+OK"},
				{"SET ex v EX 100", "+OK"},
				{"SET px v PX 50000", "+OK"},
				{"SET kept v EX 30", "+OK"},
				{"SET kept w KEEPTTL", "+OK"},
				{"SET gone v EX 10", "+OK"},
				{"MSET m1 a m2 b", "+OK"},
				{"GETDEL m2", `"b"`},
				{"SET wasbf x", "+OK"},
				{"BF.ADD wasbf2 x", ":1"},
				{"SET wasbf2 y", "+OK"},
				{"SET n v NX", "+OK"},
				{"SET n w NX", "nil"},
				{"RENAME m1 m3", "+OK"},
			})
			if save {
				if err := s.Shutdown(); err != nil { // writes a snapshot
					t.Fatal(err)
				}
			} else {
				s.Close()
			}
			advance(20 * time.Second) // "gone" expires while the server is down
			s2 := startServer(t, Config{Dir: dir, Now: clock})
			runSteps(t, dialRaw(t, s2.Addr()), []step{
				{"GET plain", `"hello"`},
				{"GET empty", `""`},
				{"TTL ex", ":80"},
				{"PTTL px", ":30000"},
				{"GET kept", `"w"`},
				{"TTL kept", ":10"},
				{"EXISTS gone", ":0"},
				{"MGET m1 m2 m3", `[nil nil "a"]`},
				{"TYPE wasbf2", "+string"},
				{"GET n", `"v"`},
				{"DBSIZE", ":9"},
			})
		})
	}
}

// A snapshot holds a string's value as it was when the snapshot started,
// however the key is overwritten, deleted or renamed meanwhile.
func TestSnapshotStringsArePointInTime(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	doArgs(s, c, "BF.RESERVE", "big", "0.001", "2000000") // many chunks: the writer yields
	for i := 0; i < 300; i++ {
		doArgs(s, c, "SET", fmt.Sprint("s", i), fmt.Sprint("old", i))
	}
	s.db.Lock()
	snap := s.db.BeginSnapshot(3)
	s.db.Unlock()
	var out strings.Builder
	w := &syncWriter{w: &out, before: func() {
		// The writer is between holds of the lock: change every string.
		for i := 0; i < 300; i++ {
			k := fmt.Sprint("s", i)
			switch i % 3 {
			case 0:
				doArgs(s, c, "SET", k, "new")
			case 1:
				doArgs(s, c, "DEL", k)
			default:
				doArgs(s, c, "RENAME", k, k+"x")
			}
		}
	}}
	err := s.db.WriteSnapshot(w, snap)
	s.db.Lock()
	s.db.EndSnapshot(snap)
	s.db.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if !w.fired {
		t.Fatal("the writes did not run while the snapshot was written")
	}
	s2 := startServer(t, Config{NoPersistence: true})
	data := out.String()
	if _, n, err := loadSnapshot(s2, []byte(data)); err != nil || n != 301 {
		t.Fatalf("reading the snapshot: %d keys, %v", n, err)
	}
	c2 := &Session{authed: true}
	for i := 0; i < 300; i++ {
		if got, want := doArgs(s2, c2, "GET", fmt.Sprint("s", i)), fmt.Sprintf("$%d\r\nold%d\r\n", len(fmt.Sprint("old", i)), i); got != want {
			t.Fatalf("s%d in the snapshot: %q, want %q", i, got, want)
		}
	}
}

// syncWriter runs before once, on the first write: the writer has
// released the keyspace lock after its first batch of keys.
type syncWriter struct {
	w      *strings.Builder
	before func()
	fired  bool
}

func (w *syncWriter) Write(p []byte) (int, error) {
	if !w.fired {
		w.fired = true
		w.before()
	}
	return w.w.Write(p)
}

// SET and MSET respect --maxmemory; a SET that does not grow memory is
// always allowed, as in Redis.
func TestStringMaxMemory(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 64 << 10})
	rc := dialRaw(t, s.Addr())
	big := strings.Repeat("x", 40<<10)
	runSteps(t, rc, []step{
		{"SET a " + big, "+OK"},
		{"SET b " + big, "-OOM command not allowed when used memory > 'maxmemory'."},
		{"MSET c x d " + big, "-OOM command not allowed when used memory > 'maxmemory'."},
		{"EXISTS b c d", ":0"},
		{"SET a " + big[:1000], "+OK"},
		{"SET a " + big, "+OK"},
		{"DEL a", ":1"},
		{"SET b " + big, "+OK"},
	})
	s.db.Lock()
	used := s.db.Used()
	s.db.Recount()
	if s.db.Used() != used {
		t.Errorf("accounted %d bytes, recount says %d", used, s.db.Used())
	}
	s.db.Unlock()
}

// A legacy filter (RedisBloom 1.x dumps: 32-bit hashes, a power-of-two bit
// count given by N2) prints hashwidth:32 and 1<<N2 bits, as RedisBloom does.
func TestBFDebugLegacyLink(t *testing.T) {
	b := &redisbloom.Bloom{Size: 3, Options: redisbloom.OptNoRound}
	l := redisbloom.Link{Bytes: 128, N2: 10, Hashes: 7, Entries: 100, Size: 3, Error: 0.01}
	want := "bytes:128 bits:1024 hashes:7 hashwidth:32 capacity:100 size:3 ratio:0.01"
	if got := bloomDebugLink(b, &l); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// MEMORY STATS counts what --maxmemory counts (INFO's used_memory).
func TestMemoryStats(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	rc.do("SET", "a", strings.Repeat("x", 1000))
	rc.do("BF.RESERVE", "b", "0.01", "1000")
	got := rc.do("MEMORY", "STATS")
	s.db.Lock()
	used := s.db.Used()
	s.db.Unlock()
	for _, want := range []string{
		fmt.Sprintf(`"total.allocated" :%d `, used),
		`"keys.count" :2 `,
		fmt.Sprintf(`"keys.bytes-per-key" :%d `, used/2),
		fmt.Sprintf(`"dataset.bytes" :%d `, used-2*keyspace.KeyOverhead),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("MEMORY STATS = %s\nmissing %s", got, want)
		}
	}
	if used < 1000+1198 {
		t.Errorf("used = %d: the string and the filter are not both counted", used)
	}
	if got := rc.do("MEMORY", "HELP"); !strings.HasPrefix(got, "[+MEMORY <subcommand>") {
		t.Errorf("MEMORY HELP = %s", got)
	}
}
