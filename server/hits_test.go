package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/redistest"
)

// hitsLikeRedis runs each command on both servers and compares how far
// INFO keyspace_hits and keyspace_misses moved, command by command.
func hitsLikeRedis(t *testing.T, ours, theirs *rawConn, cmds [][]string) {
	t.Helper()
	counts := func(c *rawConn) (hits, misses int64) {
		t.Helper()
		info, err := strconv.Unquote(c.do("INFO", "stats"))
		if err != nil {
			t.Fatalf("INFO stats: %v", err)
		}
		found := 0
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case k != "keyspace_hits" && k != "keyspace_misses":
			case err != nil:
				t.Fatalf("INFO %s:%s: %v", k, v, err)
			case k == "keyspace_hits":
				hits, found = n, found+1
			default:
				misses, found = n, found+1
			}
		}
		if found != 2 {
			t.Fatalf("INFO stats has no keyspace_hits or keyspace_misses:\n%s", info)
		}
		return hits, misses
	}
	for _, args := range cmds {
		oh, om := counts(ours)
		th, tm := counts(theirs)
		og, tg := ours.do(args...), theirs.do(args...)
		oh2, om2 := counts(ours)
		th2, tm2 := counts(theirs)
		if oh2-oh != th2-th || om2-om != tm2-tm {
			short := make([]string, len(args))
			for i, a := range args {
				short[i] = a[:min(len(a), 20)]
			}
			t.Errorf("%q (ours %.60q, Redis %.60q): hits +%d misses +%d, Redis hits +%d misses +%d",
				short, og, tg, oh2-oh, om2-om, th2-th, tm2-tm)
		}
	}
}

// TestKeyspaceHitsLikeRedis: keyspace_hits and keyspace_misses move as a
// real redis-server 7's do, command by command: the writes that read a
// key first (GETDEL, GETEX, GETSET, SET … GET, COPY's source) count that
// lookup, a hit or a miss; a syntax
// error before the lookup counts nothing; the other writes' lookups
// (SET NX/XX, SETNX, APPEND, INCR, SETRANGE, MSETNX, DEL, RENAME) count
// nothing; reads count each key. Before, bloom serve counted no write's
// lookups at all.
func TestKeyspaceHitsLikeRedis(t *testing.T) {
	rs := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true})
	ours, theirs := dialRaw(t, s.Addr()), dialRaw(t, rs.Addr)
	ours.do("FLUSHALL")
	theirs.do("FLUSHALL")
	hitsLikeRedis(t, ours, theirs, [][]string{
		{"SET", "s", "v"}, {"SET", "s", "v", "GET"}, {"SET", "nos", "v", "GET"}, {"SET", "s", "w", "NX", "GET"},
		{"SET", "nox", "v", "XX", "GET"}, {"SET", "s", "v", "NX"}, {"SET", "nox", "v", "XX"},
		{"SET", "s", "v", "GET", "EX", "abc"}, {"SET", "s", "v", "GET", "EX", "-1"}, {"SET", "s", "v", "BAD", "GET"},
		{"GETSET", "s", "w"}, {"GETSET", "nogs", "w"},
		{"GETEX", "s"}, {"GETEX", "nogx"}, {"GETEX", "s", "BAD"}, {"GETEX", "s", "EX", "abc"}, {"GETEX", "s", "PX", "100000"},
		{"GETEX", "s", "PERSIST"}, {"GETEX", "nogx", "EX", "10"},
		{"GETDEL", "s"}, {"GETDEL", "s"},
		{"SET", "s", "v"}, {"COPY", "s", "s2"}, {"COPY", "nos2", "s3"}, {"COPY", "s", "s"}, {"COPY", "s", "s2"},
		{"APPEND", "s", "x"}, {"INCR", "n"}, {"SETRANGE", "s", "0", "x"}, {"MSETNX", "a", "1", "b", "2"},
		{"SETNX", "s", "v"}, {"SETEX", "s", "100", "v"}, {"MSET", "a", "1"}, {"INCRBYFLOAT", "n", "1.5"},
		{"RENAME", "s", "s4"}, {"DEL", "s4", "zz"},
		{"GET", "a"}, {"GET", "zz"}, {"MGET", "a", "s2", "zz"}, {"STRLEN", "zz"}, {"GETRANGE", "a", "0", "1"},
		{"EXISTS", "a", "zz"}, {"TYPE", "zz"}, {"TTL", "a"},
	})
}

// TestKeyspaceHitsMaxMemoryLikeRedis: a write refused for memory counts
// no lookup, as Redis refuses it before it runs, and the lookup that
// checks the room a value needs counts nothing of its own.
func TestKeyspaceHitsMaxMemoryLikeRedis(t *testing.T) {
	rs := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 64 << 10})
	ours, theirs := dialRaw(t, s.Addr()), dialRaw(t, rs.Addr)
	for _, c := range []*rawConn{ours, theirs} {
		c.do("FLUSHALL")
		c.do("SET", "s", "v")
	}
	theirs.do("CONFIG", "SET", "maxmemory", "1") // over it already: denyoom writes are refused
	t.Cleanup(func() { theirs.do("CONFIG", "SET", "maxmemory", "0") })
	big := strings.Repeat("x", 100<<10)
	hitsLikeRedis(t, ours, theirs, [][]string{
		{"SET", "s", big, "GET"}, {"SET", "nos", big, "GET"}, {"GETSET", "s", big}, {"GETSET", "nos", big},
		{"GETEX", "s"}, {"GETEX", "nos"}, {"GET", "s"}, {"GETDEL", "s"}, {"GETDEL", "s"},
	})
}

// TestKeyspaceHitsRedisBloomLikeRedis: RedisBloom's commands move
// keyspace_hits and keyspace_misses as the module in a real redis-server
// 7 does: a key the module opens for reading only (BF.EXISTS, BF.INFO,
// CF.COUNT …) counts, a key it opens for writing (BF.ADD, BF.INSERT,
// CF.DEL …) does not, even on WRONGTYPE or "item exists"; CMS.MERGE's
// sources and TDIGEST.MERGE's destination and other sources count, up to
// the first that fails, as the module opens them for reading; a string
// command's lookup for reading counts a filter's key as a hit, WRONGTYPE
// and all.
func TestKeyspaceHitsRedisBloomLikeRedis(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	rs := redistest.Start(t, "--loadmodule", module)
	s := startServer(t, Config{NoPersistence: true})
	ours, theirs := dialRaw(t, s.Addr()), dialRaw(t, rs.Addr)
	ours.do("FLUSHALL")
	theirs.do("FLUSHALL")
	hitsLikeRedis(t, ours, theirs, [][]string{
		{"BF.ADD", "f", "a"}, {"BF.MADD", "f", "a", "b"}, {"BF.INSERT", "nf", "ITEMS", "a"},
		{"BF.RESERVE", "nf", "0.01", "100"}, {"BF.RESERVE", "nf2", "0.01", "100"},
		{"SET", "s", "v"}, {"BF.ADD", "s", "a"}, {"BF.EXISTS", "s", "a"}, {"SET", "f", "v", "GET"}, {"GETSET", "f", "v"},
		{"GETEX", "f", "EX", "10"}, {"GETDEL", "f"}, {"COPY", "f", "f2"}, {"MGET", "f", "s", "zz"},
		{"BF.ADD", "f", "a"}, {"BF.EXISTS", "f", "a"}, {"BF.EXISTS", "nof", "a"}, {"BF.MEXISTS", "f", "a", "b"},
		{"BF.INFO", "f"}, {"BF.INFO", "nof"}, {"BF.CARD", "nof"}, {"BF.CARD", "f"}, {"BF.SCANDUMP", "f", "0"},
		{"CF.ADD", "c", "a"}, {"CF.ADDNX", "c", "a"}, {"CF.DEL", "c", "a"}, {"CF.DEL", "noc", "a"},
		{"CF.INSERT", "c", "ITEMS", "a"}, {"CF.INSERTNX", "c", "ITEMS", "a"}, {"CF.RESERVE", "c2", "100"},
		{"CF.EXISTS", "c", "a"}, {"CF.EXISTS", "noc", "a"}, {"CF.MEXISTS", "c", "a", "b"}, {"CF.COUNT", "c", "a"},
		{"CF.INFO", "c"}, {"CF.SCANDUMP", "c", "0"}, {"CF.ADD", "s", "a"},
		{"CMS.INITBYDIM", "m1", "10", "5"}, {"CMS.INITBYDIM", "m2", "10", "5"}, {"CMS.INITBYDIM", "m3", "10", "5"},
		{"CMS.MERGE", "m3", "2", "m1", "m2"}, {"CMS.MERGE", "m3", "2", "m1", "nom"}, {"CMS.MERGE", "nom", "1", "m1"},
		{"CMS.MERGE", "m3", "2", "nom", "m1"}, {"CMS.MERGE", "m3", "1", "m1", "WEIGHTS", "x"},
		{"CMS.MERGE", "m3", "2", "nom", "m1", "WEIGHTS", "1", "x"}, {"CMS.MERGE", "m3", "2", "m1", "m1", "WEIGHTS", "1", "x"},
		{"CMS.INITBYDIM", "m4", "20", "5"}, {"CMS.MERGE", "m3", "2", "m1", "m4"}, {"CMS.MERGE", "m3", "2", "m1", "s"},
		{"CMS.MERGE", "s", "1", "m1"}, {"CMS.MERGE", "m3", "x", "m1"}, {"CMS.MERGE", "m3", "3", "m1", "m1"},
		{"CMS.MERGE", "m3", "1", "m3"}, {"CMS.MERGE", "m3", "2", "m3", "m1"},
		{"CMS.INCRBY", "m1", "a", "1"}, {"CMS.QUERY", "m1", "a"}, {"CMS.INFO", "m1"},
		{"TDIGEST.CREATE", "d1"}, {"TDIGEST.CREATE", "d2"}, {"TDIGEST.ADD", "d1", "1"},
		{"TDIGEST.MERGE", "d3", "2", "d1", "d2"}, {"TDIGEST.MERGE", "d3", "2", "d1", "nod"},
		{"TDIGEST.MERGE", "d4", "2", "nod", "d1"}, {"TDIGEST.MERGE", "d3", "1", "d1", "BAD"},
		{"TDIGEST.MERGE", "d9", "1", "d1", "BAD"}, {"TDIGEST.MERGE", "d3", "2", "d1", "s"}, {"TDIGEST.MERGE", "s", "1", "d1"},
		{"TDIGEST.MERGE", "d3", "x", "d1"}, {"TDIGEST.MERGE", "d3", "1", "d1", "COMPRESSION", "x"},
		{"TDIGEST.MERGE", "d3", "1", "d1", "COMPRESSION", "100"}, {"TDIGEST.MERGE", "d3", "1", "d1", "OVERRIDE"},
		{"TDIGEST.MERGE", "d3", "2", "d1"}, {"TDIGEST.MERGE", "d3", "1", "d3"}, {"TDIGEST.MERGE", "d8", "1", "d8"},
		{"TDIGEST.RESET", "d1"}, {"TDIGEST.QUANTILE", "d1", "0.5"},
		{"TOPK.RESERVE", "t", "3"}, {"TOPK.ADD", "t", "a"}, {"TOPK.QUERY", "t", "a"}, {"TOPK.LIST", "not"},
	})
}
