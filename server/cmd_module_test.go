package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Clients and tools look for the module named bf before they use BF.*:
// MODULE LIST, INFO modules and HELLO list it as Redis with RedisBloom
// does; loading or unloading a module is refused with a clear error;
// HELLO's role is the server's.
func TestModuleDetection(t *testing.T) {
	m := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	mods, err := c.Do(ctx, "MODULE", "LIST").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 1 {
		t.Fatalf("MODULE LIST = %v", mods)
	}
	mod := map[string]any{}
	switch m := mods[0].(type) {
	case map[any]any:
		for k, v := range m {
			mod[k.(string)] = v
		}
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			mod[m[i].(string)] = m[i+1]
		}
	}
	if mod["name"] != "bf" || mod["ver"] != int64(RedisBloomVersion) {
		t.Fatalf("MODULE LIST = %v", mods)
	}
	info, err := c.Info(ctx, "modules").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "# Modules\r\nmodule:name=bf,ver=80000,api=1,") {
		t.Fatalf("INFO modules = %q", info)
	}
	all, _ := c.Info(ctx, "everything").Result()
	if !strings.Contains(all, "module:name=bf") {
		t.Fatalf("INFO everything has no module line")
	}
	rc := dialRaw(t, m.Addr())
	mustDo(t, rc, "-"+errNoModules, "MODULE", "LOAD", "/usr/lib/redis/modules/redisbloom.so")
	mustDo(t, rc, "-"+errNoModules, "MODULE", "UNLOAD", "bf")
	mustDo(t, rc, "-ERR wrong number of arguments for 'module|list' command", "MODULE", "LIST", "x")
	mustDo(t, rc, "-ERR unknown subcommand 'x'. Try MODULE HELP.", "MODULE", "x")
	hello := rc.do("HELLO", "3")
	if !strings.Contains(hello, `modules:[{name:"bf" ver::80000 path:"(built in)" args:[]}]`) &&
		!strings.Contains(hello, `"modules":[{"name":"bf" "ver"::80000`) {
		t.Fatalf("HELLO 3 = %s", hello)
	}
	if !strings.Contains(hello, `"role":"master"`) && !strings.Contains(hello, `role:"master"`) {
		t.Fatalf("HELLO 3 on a master = %s", hello)
	}
	// On a replica, HELLO says replica (as Redis: role is the server's).
	r := startReplica(t, m, Config{NoPersistence: true})
	rr := dialRaw(t, r.Addr())
	if hello := rr.do("HELLO", "3"); !strings.Contains(hello, `replica`) {
		t.Fatalf("HELLO 3 on a replica = %s", hello)
	}
}

// RANDOMKEY answers a key that exists, nil on an empty keyspace, and
// never an expired key on a master (it removes what it meets).
func TestRandomKey(t *testing.T) {
	clock := newFakeClock(time.Unix(5_000_000, 0))
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, "nil", "RANDOMKEY")
	for i := 0; i < 20; i++ {
		rc.do("SET", "live"+strconv.Itoa(i), "v")
		rc.do("SET", "gone"+strconv.Itoa(i), "v", "PX", "100")
	}
	clock.Add(time.Second)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		got := rc.do("RANDOMKEY")
		if !strings.HasPrefix(got, `"live`) {
			t.Fatalf("RANDOMKEY = %s, want a live key", got)
		}
		seen[got] = true
	}
	if len(seen) < 5 {
		t.Errorf("200 RANDOMKEYs gave only %d different keys", len(seen))
	}
}

// COPY as Redis 7, for every kind of key: the copy answers exactly as the
// original (its dump, info, TTL), is independent of it, and survives a
// restart from the log; REPLACE, an existing destination, the same key, DB
// other than 0 and a write-only user as Redis answer them.
func TestCopy(t *testing.T) {
	clock := newFakeClock(time.Unix(5_000_000, 0))
	s := startServer(t, Config{AppendFsync: "always", Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	for _, cmd := range [][]string{
		{"SET", "str", "value", "PX", "100000"},
		{"BF.RESERVE", "bf", "0.01", "20", "EXPANSION", "2"}, {"BF.MADD", "bf", "a", "b", "c"},
		{"BF.INSERT", "bf", "ITEMS", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x"},
		{"CF.RESERVE", "cf", "8", "BUCKETSIZE", "2", "EXPANSION", "1"}, {"CF.INSERT", "cf", "ITEMS", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"},
		{"BF.RESERVE", "nat", "0.01", "100", "LAYOUT", "blocked", "SEED", "7"}, {"BF.ADD", "nat", "a"},
		{"BF.RESERVE", "win", "0.01", "100", "WINDOW", "4s", "GENERATIONS", "4", "SEED", "7"}, {"BF.ADD", "win", "a"},
		{"CMS.INITBYDIM", "cms", "50", "4"}, {"CMS.INCRBY", "cms", "a", "3", "b", "5"},
		{"TOPK.RESERVE", "topk", "3", "20", "4", "0.9"}, {"TOPK.ADD", "topk", "a", "b", "a", "c", "a", "d"},
		// Values still in the t-digest's buffer: the copy holds them
		// unmerged too (TDIGEST.INFO's unmerged nodes).
		{"TDIGEST.CREATE", "td", "COMPRESSION", "100"}, {"TDIGEST.ADD", "td", "1", "2", "3", "4.5", "100"},
	} {
		if got := rc.do(cmd...); strings.HasPrefix(got, "-") {
			t.Fatalf("%v: %s", cmd, got)
		}
	}
	// Every kind copies, RedisBloom's too: RedisBloom registers no copy
	// callback, so Redis answers "ERR not supported for this module key"
	// there; bloom serve extends COPY to them.
	for _, k := range copyKinds {
		mustDo(t, rc, ":1", "COPY", k, k+"-copy")
	}
	mustDo(t, rc, ":0", "COPY", "bf", "cf-copy")
	mustDo(t, rc, ":0", "COPY", "missing", "x")
	mustDo(t, rc, "-ERR source and destination objects are the same", "COPY", "bf", "bf")
	mustDo(t, rc, "-ERR DB index is out of range", "COPY", "bf", "x", "DB", "1")
	mustDo(t, rc, ":1", "COPY", "bf", "x", "DB", "0")
	mustDo(t, rc, "-ERR syntax error", "COPY", "bf", "y", "NOW")
	// Each copy answers as its original.
	same := func(rc *rawConn) {
		t.Helper()
		for _, k := range copyKinds {
			for _, q := range [][]string{{"TYPE", k}, {"PTTL", k}, {"DUMPALL", k}} {
				a, b := copyObserve(rc, q, k), copyObserve(rc, q, k+"-copy")
				if a != b {
					t.Errorf("%v: original %s, copy %s", q, a, b)
				}
			}
		}
	}
	same(rc)
	// Independent: an add to the copy leaves the original alone.
	rc.do("BF.ADD", "bf-copy", "only-in-copy")
	mustDo(t, rc, ":0", "BF.EXISTS", "bf", "only-in-copy")
	rc.do("BF.ADD", "bf", "only-in-copy")
	rc.do("TDIGEST.ADD", "td-copy", "1000")
	mustDo(t, rc, `"100"`, "TDIGEST.MAX", "td")
	rc.do("TDIGEST.ADD", "td", "1000")
	// REPLACE overwrites.
	mustDo(t, rc, ":1", "COPY", "str", "cf-copy", "REPLACE")
	mustDo(t, rc, `"value"`, "GET", "cf-copy")
	mustDo(t, rc, ":1", "COPY", "cf", "cf-copy", "REPLACE")
	// A restart replays the copies.
	s.Close()
	s2 := startServer(t, Config{Dir: s.cfg.Dir, Now: clock.Now})
	rc2 := dialRaw(t, s2.Addr())
	same(rc2)
	// The source needs read access, the destination write access.
	mustDo(t, rc2, "+OK", "ACL", "SETUSER", "w", "on", ">pw", "%W~*", "+@all")
	w := asUser(t, s2, "w", "pw")
	mustDo(t, w, "-NOPERM No permissions to access a key", "COPY", "str", "z")
}

// copyKinds are TestCopy's keys, one of each kind.
var copyKinds = []string{"str", "bf", "cf", "nat", "win", "cms", "topk", "td"}

// copyObserve is one observation of key k: its type, TTL, or everything
// its type shows (DUMPALL: GET, or INFO and every SCANDUMP chunk; for a
// sketch its INFO, what it answers, and DUMP).
func copyObserve(rc *rawConn, q []string, k string) string {
	if q[0] != "DUMPALL" {
		return rc.do(q[0], k)
	}
	switch rc.do("TYPE", k) {
	case "+string":
		return rc.do("GET", k)
	case "+CMSk-TYPE":
		return rc.do("CMS.INFO", k) + rc.do("CMS.QUERY", k, "a", "b", "c") + rc.do("DUMP", k)
	case "+TopK-TYPE":
		return rc.do("TOPK.INFO", k) + rc.do("TOPK.LIST", k, "WITHCOUNT") + rc.do("DUMP", k)
	case "+TDIS-TYPE":
		// INFO before DUMP, which merges the buffer (as RedisBloom's save).
		return rc.do("TDIGEST.INFO", k) + rc.do("DUMP", k) + rc.do("TDIGEST.QUANTILE", k, "0.5", "0.9")
	case "+MBbloomCF":
		return rc.do("CF.INFO", k) + copyDump(rc, "CF", k)
	default:
		return rc.do("BF.INFO", k) + copyDump(rc, "BF", k)
	}
}

func copyDump(rc *rawConn, prefix, k string) string {
	var b strings.Builder
	it := "0"
	for n := 0; n < 10000; n++ {
		got := rc.do(prefix+".SCANDUMP", k, it)
		next, data, ok := parseDumpReply(got)
		if !ok {
			return b.String() + got
		}
		b.WriteString(next + ":" + data + ";")
		if next == "0" {
			break
		}
		it = next
	}
	return b.String()
}
