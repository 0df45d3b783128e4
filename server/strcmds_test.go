package server

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
)

// Values and amounts the random string commands draw from: integers at
// the edges of int64, floats Redis formats in its own way, words, and
// strings that are almost numbers.
var (
	strCmdValues = []string{"0", "1", "-1", "10", "9223372036854775806", "9223372036854775807", "-9223372036854775808",
		"-9223372036854775807", "3.14", "1e3", "0.1", "-0", "abc", "", " 1", "+1", "01", "1.5e300", "x", "hello world"}
	strCmdInts   = []string{"1", "-1", "7", "100", "-1000", "9223372036854775807", "-9223372036854775808", "0", "1.5", "x", ""}
	strCmdFloats = []string{"0.1", "-0.3", "1.5", "1e10", "-2.5e-3", "3", "0.3333333333333333", "1e20", "-1e20", "10.0",
		"1.", ".5", "+2", "5e-20", "0x10", "inf", "-inf", "nan", " 1", "1 ", "1e5000", "abc", "-0", "1.7976931348623157e308"}
)

// randomStringCommand draws one of the string commands (or a command that
// makes key "f" a non-string: other, as each server has its own kind).
func randomStringCommand(rnd *rand.Rand, other []string) []string {
	key := func() string {
		if rnd.IntN(8) == 0 {
			return "f"
		}
		return "k" + strconv.Itoa(rnd.IntN(5))
	}
	pick := func(l []string) string { return l[rnd.IntN(len(l))] }
	num := func() string { return strconv.Itoa(rnd.IntN(40) - 10) }
	switch rnd.IntN(22) {
	case 0:
		return other
	case 1:
		return []string{"INCR", key()}
	case 2:
		return []string{"DECR", key()}
	case 3:
		return []string{"INCRBY", key(), pick(strCmdInts)}
	case 4:
		return []string{"DECRBY", key(), pick(strCmdInts)}
	case 5, 6:
		return []string{"INCRBYFLOAT", key(), pick(strCmdFloats)}
	case 7:
		return []string{"APPEND", key(), pick(strCmdValues)}
	case 8:
		return []string{"SETNX", key(), pick(strCmdValues)}
	case 9:
		return []string{"SETEX", key(), pick([]string{"100", "0", "-1", "x", "9223372036854775807"}), pick(strCmdValues)}
	case 10:
		return []string{"PSETEX", key(), pick([]string{"100000", "0", "x"}), pick(strCmdValues)}
	case 11:
		return []string{"GETSET", key(), pick(strCmdValues)}
	case 12:
		opts := [][]string{{}, {"PERSIST"}, {"EX", "100"}, {"PX", "100000"}, {"EXAT", "1"}, {"PXAT", "99999999999999"},
			{"EX", "0"}, {"EX", "x"}, {"EX"}, {"EX", "10", "PX", "10"}, {"PERSIST", "EX", "10"}, {"EX", "10", "EX", "20"}, {"KEEPTTL"}}
		return append([]string{"GETEX", key()}, opts[rnd.IntN(len(opts))]...)
	case 13:
		args := []string{"MSETNX"}
		for range 1 + rnd.IntN(3) {
			args = append(args, key(), pick(strCmdValues))
		}
		if rnd.IntN(10) == 0 {
			args = args[:len(args)-1]
		}
		return args
	case 14:
		return []string{"SETRANGE", key(), pick([]string{"0", "1", "3", "10", "-1", "x"}), pick(strCmdValues)}
	case 15, 16:
		return []string{pick([]string{"GETRANGE", "SUBSTR"}), key(), num(), num()}
	case 17:
		return []string{"SET", key(), pick(strCmdValues)}
	case 18:
		return []string{"EXPIRE", key(), "100"}
	case 19:
		return []string{"GET", key()}
	case 20:
		return []string{"DEL", key()}
	default:
		return []string{"STRLEN", key()}
	}
}

// strKeyState is a key as a client sees it, comparable across servers: its
// type (any non-string as "other"), value and whether it has a TTL.
func strKeyState(rc *rawConn, key string) string {
	// One round trip: PTTL and GET answer something for every type, and
	// are read only for a string.
	r := rc.pipeline([]string{"TYPE", key}, []string{"PTTL", key}, []string{"GET", key})
	typ, ttl, val := r[0], r[1], r[2]
	switch typ {
	case "+none":
		return "none"
	case "+string":
	default:
		return "other"
	}
	if ttl != ":-1" {
		ttl = "ttl"
	}
	return val + " " + ttl
}

// INCR, INCRBY, DECR, DECRBY, INCRBYFLOAT, APPEND, SETNX, SETEX, PSETEX,
// GETSET, GETEX, MSETNX, SETRANGE, GETRANGE and SUBSTR answer as a real
// redis-server 7 answers them, reply for reply and error for error, in
// RESP2 and RESP3: fixed cases at the edges (overflow, float formatting,
// proto-max-bulk-len, syntax and arity errors), then random sequences
// over a few keys, one of them of another type. Before, bloom serve
// answered each with "unknown command".
func TestStringCommandsLikeRedis(t *testing.T) {
	rs := redistest.Start(t, "--proto-max-bulk-len", "1mb")
	s := startServer(t, Config{NoPersistence: true, MaxBulk: 1 << 20})
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			ours, theirs := dialRaw(t, s.Addr()), dialRaw(t, rs.Addr)
			ours.do("HELLO", proto)
			theirs.do("HELLO", proto)
			ours.do("FLUSHALL")
			theirs.do("FLUSHALL")
			same := func(args ...string) {
				t.Helper()
				if g, w := ours.do(args...), theirs.do(args...); g != w {
					t.Errorf("%q:\n got %s\nwant %s", args, g, w)
				}
			}
			big := strings.Repeat("z", 1000)
			for _, args := range [][]string{
				{"INCR", "n"}, {"INCRBY", "n", "9223372036854775806"}, {"INCR", "n"}, {"INCRBY", "n", "-1"},
				{"DECRBY", "n", "-9223372036854775808"}, {"SET", "m", "-9223372036854775808"}, {"DECR", "m"},
				{"INCRBY", "m", "9223372036854775807"}, {"INCRBY", "m", "+1"}, {"INCRBY", "m", "01"}, {"INCRBY", "m", " 1"},
				{"SET", "w", "12a"}, {"INCR", "w"}, {"INCRBYFLOAT", "w", "1"}, {"APPEND", "w", "bc"}, {"GET", "w"},
				{"INCRBYFLOAT", "x", "0.1"}, {"INCRBYFLOAT", "x", "0.1"}, {"INCRBYFLOAT", "x", "0.1"},
				{"INCRBYFLOAT", "x", "1e30"}, {"INCRBYFLOAT", "x", "-1e30"}, {"INCRBYFLOAT", "x", "5.0e3"},
				{"INCRBYFLOAT", "x", "-5000.3"}, {"INCRBYFLOAT", "x", "1e-20"}, {"INCRBYFLOAT", "x", "inf"},
				{"INCRBYFLOAT", "x", "nan"}, {"INCRBYFLOAT", "x", "0x1p4"}, {"INCRBYFLOAT", "x", "1e5000"},
				{"INCRBYFLOAT", "x", "1e-5000"}, {"INCRBYFLOAT", "x", "1.1e4932"}, {"INCRBYFLOAT", "x", "1.1e4932"},
				{"INCRBYFLOAT", "y", "-0.0"}, {"INCRBYFLOAT", "y", "1.23456789012345678901"}, {"INCRBYFLOAT", "y", "2e300"},
				{"SET", "ttl", "5", "EX", "100"}, {"INCR", "ttl"}, {"INCRBYFLOAT", "ttl", "1.5"}, {"APPEND", "ttl", "x"},
				{"SETRANGE", "ttl", "5", "y"}, {"GETSET", "ttl", "1"}, {"TTL", "ttl"},
				{"SETRANGE", "r", "3", ""}, {"EXISTS", "r"}, {"SETRANGE", "r", "3", "ab"}, {"GET", "r"}, {"SETRANGE", "r", "0", ""},
				{"SETRANGE", "r", "-1", "x"}, {"SETRANGE", "r", "1048570", "0123456789"}, {"SETRANGE", "r", "1048566", "0123456789"},
				{"STRLEN", "r"}, {"APPEND", "r", "x"}, {"APPEND", "a", big}, {"GETRANGE", "a", "-1", "-5"},
				{"GETRANGE", "a", "0", "-1000000"}, {"GETRANGE", "a", "990", "1000000"}, {"GETRANGE", "missing", "0", "-1"},
				{"GETRANGE", "a", "x", "1"}, {"SUBSTR", "a", "-3", "-1"},
				{"SETEX", "e", "0", "v"}, {"SETEX", "e", "9223372036854775807", "v"}, {"PSETEX", "e", "-5", "v"}, {"SETEX", "e", "x", "v"},
				{"SETEX", "e", "100", "v"}, {"PTTL", "missing"}, {"GETEX", "e", "PERSIST"}, {"TTL", "e"}, {"GETEX", "e", "EXAT", "1"},
				{"EXISTS", "e"}, {"GETEX", "missing", "EX", "x"}, {"SET", "e", "v"}, {"GETEX", "e", "EX", "x"}, {"GETEX", "e", "EXAT", "0"},
				{"GETEX", "e", "PX"}, {"GETEX", "e", "PERSIST", "PX", "5"}, {"GETEX", "e", "KEEPTTL"},
				{"SETNX", "e", "w"}, {"SETNX", "new", "w"}, {"MSETNX", "new", "1", "fresh", "2"}, {"EXISTS", "fresh"},
				{"MSETNX", "fresh", "1", "fresh2", "2"}, {"MSETNX", "a"}, {"MSETNX", "a", "b", "c"},
				{"INCR"}, {"INCR", "a", "b"}, {"INCRBY", "a"}, {"SETEX", "a", "1"}, {"GETEX"}, {"SETRANGE", "a", "1"}, {"SUBSTR", "a", "1"},
				{"GETSET", "new2", "v"}, {"GETSET", "new2", "w"},
			} {
				same(args...)
			}
			// A key of another kind: a filter here, a hash there.
			other := [][]string{{"BF.ADD", "f", "x"}, {"HSET", "f", "a", "b"}}
			mkOther := func() {
				ours.do("DEL", "f")
				theirs.do("DEL", "f")
				ours.do(other[0]...)
				theirs.do(other[1]...)
			}
			rnd := rand.New(rand.NewPCG(7, uint64(len(proto))))
			n := 0
			for range 3000 {
				args := randomStringCommand(rnd, nil)
				if args == nil {
					mkOther()
					continue
				}
				n++
				same(args...)
				for _, k := range args[1:] {
					if k == "f" || strings.HasPrefix(k, "k") && len(k) == 2 {
						if g, w := strKeyState(ours, k), strKeyState(theirs, k); g != w {
							t.Errorf("after %q, %s: got %s, want %s", args, k, g, w)
						}
					}
				}
				if t.Failed() {
					return
				}
			}
		})
	}
}

// COMMAND INFO of the string commands (arity, flags, key positions, ACL
// categories, key specifications) is Redis 7's.
func TestStringCommandInfoLikeRedis(t *testing.T) {
	rs := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true})
	ours, theirs := dialRaw(t, s.Addr()), dialRaw(t, rs.Addr)
	for _, proto := range []string{"2", "3"} {
		ours.do("HELLO", proto)
		theirs.do("HELLO", proto)
		for _, name := range strings.Fields("incr decr incrby decrby incrbyfloat append setnx setex psetex getset getex msetnx setrange getrange substr") {
			if g, w := ours.do("COMMAND", "INFO", name), theirs.do("COMMAND", "INFO", name); g != w {
				t.Errorf("RESP%s COMMAND INFO %s:\n got %s\nwant %s", proto, name, g, w)
			}
		}
	}
}

// strStateKeys are the keys the restart tests compare: the random
// sequences' and those of the fixed one.
var strStateKeys = []string{"f", "k0", "k1", "k2", "k3", "k4", "d:ex", "d:float", "d:setex", "d:persist", "d:past", "d:getset", "d:range", "d:nx"}

// allStrKeys is every key of a server as strKeyState gives it.
func allStrKeys(t *testing.T, rc *rawConn) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range strStateKeys {
		out[k] = strKeyState(rc, k)
	}
	if n := rc.do("DBSIZE"); n == ":0" {
		t.Fatal("no key at all: the sequence wrote nothing")
	}
	return out
}

// The string commands survive a restart: what each logged (INCRBYFLOAT's
// result as SET … KEEPTTL, SETEX as SET … PXAT, GETEX's expiry as
// PEXPIREAT, PERSIST or DEL, INCR, APPEND, SETRANGE as sent) replays to
// the keys the clients saw, from the append-only log alone and from a
// snapshot.
func TestStringCommandsSurviveRestart(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	rnd := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		if args := randomStringCommand(rnd, []string{"BF.ADD", "f", "x"}); args[0] == "BF.ADD" {
			rc.do("DEL", "f")
			rc.do(args...)
		} else {
			rc.do(args...)
		}
	}
	for _, args := range [][]string{
		{"SET", "d:ex", "1"}, {"GETEX", "d:ex", "EX", "1000"},
		{"SET", "d:float", "1", "PX", "1000000"}, {"INCRBYFLOAT", "d:float", "0.1"}, {"INCRBYFLOAT", "d:float", "0.2"},
		{"SETEX", "d:setex", "1000", "v"}, {"SET", "d:persist", "v", "EX", "1000"}, {"GETEX", "d:persist", "PERSIST"},
		{"SET", "d:past", "v"}, {"GETEX", "d:past", "PXAT", "1"}, {"SET", "d:getset", "v", "EX", "1000"}, {"GETSET", "d:getset", "w"},
		{"SETRANGE", "d:range", "3", "x"}, {"APPEND", "d:range", "yz"}, {"SETNX", "d:nx", "1"}, {"INCR", "d:nx"}, {"MSETNX", "d:nx", "2", "d:other", "3"},
	} {
		rc.do(args...)
	}
	want := allStrKeys(t, rc)
	if want["d:float"] != `"1.3" ttl` || want["d:ex"] != `"1" ttl` || want["d:past"] != "none" || want["d:persist"] != `"v" :-1` {
		t.Fatalf("before the restart: %v", want)
	}
	for _, save := range []bool{false, true} {
		s = restart(t, s, save)
		rc = dialRaw(t, s.Addr())
		if got := allStrKeys(t, rc); strings.Join(mapLines(got), "\n") != strings.Join(mapLines(want), "\n") {
			t.Errorf("after a restart (snapshot %v):\n got %v\nwant %v", save, got, want)
		}
	}
}

func mapLines(m map[string]string) []string {
	var out []string
	for _, k := range strStateKeys {
		out = append(out, k+"="+m[k])
	}
	return out
}

// bloom serve follows a Redis master whose clients use the string
// commands (alone and in MULTI/EXEC, before the full sync and after it)
// and holds every key as the master does; then, restarted from its own
// log, it still does.
func TestReplicaOfRedisStringCommands(t *testing.T) {
	r := startRedisMaster(t)
	mc := dialRaw(t, r.Addr)
	rnd := rand.New(rand.NewPCG(21, 22))
	write := func(n int) {
		for range n {
			if rnd.IntN(20) == 0 {
				mc.do("MULTI")
				for range 1 + rnd.IntN(4) {
					if args := randomStringCommand(rnd, nil); args != nil {
						mc.do(args...)
					}
				}
				mc.do("EXEC")
				continue
			}
			if args := randomStringCommand(rnd, nil); args != nil {
				mc.do(args...)
			}
		}
	}
	write(300)
	s := startServer(t, Config{AppendFsync: "always", replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	write(2000)
	waitRedisSynced(t, r, rc)
	if e := replInfo(t, rc, "replication", "master_sync_last_error"); e != "" {
		t.Errorf("master_sync_last_error = %q", e)
	}
	if got := redisInfo(t, r, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full = %s, want 1 (the link never stopped)", got)
	}
	sameStrings(t, r, s)
	mustDo(t, rc, "+OK", "REPLICAOF", "NO", "ONE")
	s = restart(t, s, false)
	sameStrings(t, r, s)
}

// A master's command on a key whose time to live passed by the replica's
// clock, but not yet by the master's, works on the key as the master held
// it, as on a Redis replica (the stream applies as loading does: keys
// expire when the master's DEL says so): here a script sets keys for 1 ms
// and changes them 30 ms later (a script's clock stands still on the
// master), and the replica applies the changes after the keys' time. Had
// it seen no key, INCR would make "1" and INCRBYFLOAT's SET … KEEPTTL a
// value with no time to live, visible on the replica while the master
// holds nothing a client can see.
func TestReplicaOfRedisWritesOnKeysExpiringMeanwhile(t *testing.T) {
	r := startRedisMaster(t, "--enable-debug-command", "yes")
	mc := dialRaw(t, r.Addr)
	mustDo(t, mc, "+OK", "DEBUG", "SET-ACTIVE-EXPIRE", "0")
	s := startServer(t, Config{replRetryMin: 50 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	followRedis(t, r, rc)
	script := `
for i, k in ipairs(KEYS) do redis.call('SET', k, '5', 'PX', '1') end
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start > 30000
redis.call('INCR', KEYS[1])
redis.call('INCRBYFLOAT', KEYS[2], '1.5')
redis.call('APPEND', KEYS[3], 'x')
redis.call('SETNX', KEYS[4], 'new')
return 1`
	if got := mc.do("EVAL", script, "4", "i", "f", "a", "nx"); got != ":1" {
		t.Fatalf("EVAL = %s", got)
	}
	waitRedisSynced(t, r, rc)
	for _, k := range []string{"i", "f", "a", "nx"} {
		if got := rc.do("GET", k); got != "nil" {
			t.Errorf("GET %s on the replica = %s, want nil (expired, as on the master)", k, got)
		}
	}
	// Once the master expires them (a read does), DEL arrives and both
	// hold nothing.
	for _, k := range []string{"i", "f", "a", "nx"} {
		mc.do("GET", k)
	}
	waitRedisSynced(t, r, rc)
	if got := rc.do("DBSIZE"); got != ":0" {
		t.Errorf("DBSIZE on the replica = %s, want :0", got)
	}
}

// The string commands that grow memory respect --maxmemory as SET does,
// and the memory they account is what a recount finds.
func TestStringCommandsMaxMemory(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 64 << 10})
	rc := dialRaw(t, s.Addr())
	big := strings.Repeat("x", 40<<10)
	const oom = "-OOM command not allowed when used memory > 'maxmemory'."
	runSteps(t, rc, []step{
		{"SET a " + big, "+OK"},
		{"APPEND a " + big, oom},
		{"SETRANGE a 100000 x", oom},
		{"SETNX b " + big, oom},
		{"SETEX b 100 " + big, oom},
		{"GETSET b " + big, oom},
		{"MSETNX b x c " + big, oom},
		{"EXISTS b c", ":0"},
		{"STRLEN a", ":40960"},
		{"SETRANGE a 0 y", ":40960"},
		{"APPEND a z", ":40961"},
		{"INCR n", ":1"},
		{"INCRBYFLOAT n 0.5", `"1.5"`},
		{"GETRANGE a 0 1", `"yx"`},
		{"GETRANGE a -2 -1", `"xz"`},
		{"GETSET a short", `"y` + big[1:] + `z"`},
		{"STRLEN a", ":5"},
	})
	s.db.Lock()
	used := s.db.Used()
	s.db.Recount()
	if s.db.Used() != used {
		t.Errorf("accounted %d bytes, recount says %d", used, s.db.Used())
	}
	s.db.Unlock()
}
