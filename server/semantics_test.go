package server

import (
	"strings"
	"testing"
)

// step is one command and its exact reply in the rawConn notation.
type step struct {
	cmd  string // words separated by spaces; "\x00"-free test data only
	want string
}

func words(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, " ")
}

func runSteps(t *testing.T, rc *rawConn, steps []step) {
	t.Helper()
	for _, st := range steps {
		args := words(st.cmd)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "␠", " ")
			if args[i] == "''" {
				args[i] = ""
			}
		}
		if got := rc.do(args...); got != st.want {
			t.Errorf("%s\n got  %s\n want %s", st.cmd, got, st.want)
		}
	}
}

// The RedisBloom semantics (../shared/redisbloom-semantics.md, 8.x texts),
// checked over the wire with exact reply types.
func TestRedisBloomSemanticsRESP2(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		// BF.RESERVE validation order and texts.
		{"BF.RESERVE k", "-ERR wrong number of arguments for 'bf.reserve' command"},
		{"bf.reserve k 0.01", "-ERR wrong number of arguments for 'bf.reserve' command"},
		{"BF.RESERVE k 0.01 100 a b c d", "-ERR wrong number of arguments for 'bf.reserve' command"},
		{"BF.RESERVE k abc 100", "-ERR bad error rate"},
		{"BF.RESERVE k nan 100", "-ERR bad error rate"},
		{"BF.RESERVE k ␠0.1 100", "-ERR bad error rate"},
		{"BF.RESERVE k 0 100", "-ERR error rate must be in the range (0.000000, 1.000000)"},
		{"BF.RESERVE k 1 100", "-ERR error rate must be in the range (0.000000, 1.000000)"},
		{"BF.RESERVE k inf 100", "-ERR error rate must be in the range (0.000000, 1.000000)"},
		{"BF.RESERVE k 0.01 abc", "-ERR bad capacity"},
		{"BF.RESERVE k 0.01 +5", "-ERR bad capacity"},
		{"BF.RESERVE k 0.01 1e3", "-ERR bad capacity"},
		{"BF.RESERVE k 0.01 0", "-ERR capacity must be in the range [1, 1073741824]"},
		{"BF.RESERVE k 0.01 1073741825", "-ERR capacity must be in the range [1, 1073741824]"},
		{"BF.RESERVE k 0.01 100 EXPANSION", "-ERR no expansion"},
		{"BF.RESERVE k 0.01 100 EXPANSION x", "-ERR bad expansion"},
		{"BF.RESERVE k 0.01 100 EXPANSION 2 NONSCALING", "-Nonscaling filters cannot expand"},
		{"BF.RESERVE k 0.01 100 EXPANSION -1", "-ERR expansion must be in the range [0, 32768]"},
		{"BF.RESERVE k 0.01 100 EXPANSION 40000", "-ERR expansion must be in the range [0, 32768]"},
		{"BF.RESERVE EXPANSION 0.01 100", "-ERR bad expansion"},
		{"BF.RESERVE k 0.01 100 FOO", "+OK"},
		{"BF.RESERVE k 0.01 100", "-ERR item exists"},
		{"BF.INFO k", `[+Capacity :100 +Size :240 +Number of filters :1 +Number of items inserted :0 +Expansion rate :2]`},
		{"BF.RESERVE NONSCALING 0.01 100", "+OK"},
		{"BF.INFO NONSCALING", `[+Capacity :100 +Size :216 +Number of filters :1 +Number of items inserted :0 +Expansion rate nil]`},
		{"BF.RESERVE e0 0.01 100 EXPANSION 0", "+OK"},
		{"BF.INFO e0 EXPANSION", "[nil]"},
		{"BF.RESERVE big 0.5 100", "+OK"},
		{"BF.INFO big size", "[:152]"},
		{"BF.RESERVE d3 0.001 100", "+OK"},
		{"BF.INFO d3 SIZE", "[:296]"},
		{"BF.INFO d3 capacity", "[:100]"},
		{"BF.INFO d3 Filters", "[:1]"},
		{"BF.INFO d3 items", "[:0]"},
		{"BF.INFO d3 bogus", "-Invalid information value"},
		{"BF.INFO d3 a b", "-ERR wrong number of arguments for 'bf.info' command"},
		{"BF.INFO missing", "-ERR not found"},
		// BF.ADD / MADD / full non-scaling filters.
		{"BF.RESERVE full 0.01 2 NONSCALING", "+OK"},
		{"BF.MADD full a b", "[:1 :1]"},
		{"BF.ADD full a", ":0"},
		{"BF.ADD full c", "-ERR non scaling filter is full"},
		{"BF.MADD full a new b", "[:0 -ERR non scaling filter is full]"},
		{"BF.INSERT full ITEMS a zz b", "[:0 -ERR non scaling filter is full]"},
		{"BF.ADD full", "-ERR wrong number of arguments for 'bf.add' command"},
		{"BF.MADD full", "-ERR wrong number of arguments for 'bf.madd' command"},
		{"bf.add auto x", ":1"},
		{"BF.INFO auto", `[+Capacity :100 +Size :240 +Number of filters :1 +Number of items inserted :1 +Expansion rate :2]`},
		{"BF.CARD auto", ":1"},
		{"BF.CARD nokey", ":0"},
		{"BF.CARD auto x", "-ERR wrong number of arguments for 'bf.card' command"},
		// BF.EXISTS on missing / other types gives 0.
		{"CF.ADD cf x", ":1"},
		{"BF.EXISTS cf x", ":0"},
		{"BF.MEXISTS cf x y", "[:0 :0]"},
		{"BF.EXISTS nokey x", ":0"},
		{"BF.EXISTS auto x", ":1"},
		{"BF.ADD cf x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.CARD cf", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.INFO cf", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.RESERVE cf 0.01 100", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		// BF.INSERT option parsing.
		{"BF.INSERT i", "-ERR wrong number of arguments for 'bf.insert' command"},
		{"BF.INSERT i ITEMS", "-ERR wrong number of arguments for 'bf.insert' command"},
		{"BF.INSERT i CAPACITY 10", "-ERR wrong number of arguments for 'bf.insert' command"},
		{"BF.INSERT i CAPACITY", "-ERR wrong number of arguments for 'bf.insert' command"},
		{"BF.INSERT i FOO 1 ITEMS a", "-Unknown argument received"},
		{"BF.INSERT i CAPACITY x ITEMS a", "-Bad capacity"},
		{"BF.INSERT i CAPACITY 0 ITEMS a", "-Bad capacity"},
		{"BF.INSERT i ERROR x ITEMS a", "-Bad error rate"},
		{"BF.INSERT i ERROR 0 ITEMS a", "-Bad error rate"},
		{"BF.INSERT i EXPANSION -1 ITEMS a", "-Bad expansion"},
		{"BF.INSERT i NOCREATE ITEMS a", "-ERR not found"},
		{"BF.INSERT i cap 10 err 0.001 exp 4 ixyz a CAPACITY", "[:1 :1]"},
		{"BF.INFO i", `[+Capacity :10 +Size :120 +Number of filters :1 +Number of items inserted :2 +Expansion rate :4]`},
		{"BF.INSERT ns EXPANSION 3 NONSCALING ITEMS a", "[:1]"},
		{"BF.INFO ns EXPANSION", "[nil]"},
		{"BF.INSERT e0 EXPANSION 0 ITEMS a", "[:1]"},
		// BF.SCANDUMP / LOADCHUNK.
		{"BF.SCANDUMP nokey 0", "-ERR not found"},
		{"BF.SCANDUMP cf 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.SCANDUMP auto x", "-Second argument must be numeric"},
		{"BF.SCANDUMP auto 1000", `[:0 ""]`},
		{"BF.SCANDUMP auto -1", `[:0 ""]`},
		{"BF.LOADCHUNK auto x y", "-ERR Second argument must be numeric"},
		{"BF.LOADCHUNK newkey 1 garbage", "-ERR received bad data"},
		{"BF.LOADCHUNK newkey 2 garbage", "-ERR not found"},
		{"BF.LOADCHUNK auto 1 garbage", "-ERR received bad data"},
		{"BF.LOADCHUNK cf 5 garbage", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.LOADCHUNK auto 100000 x", "-ERR invalid offset - no link found"},
		// CF.RESERVE.
		{"CF.RESERVE c", "-ERR wrong number of arguments for 'cf.reserve' command"},
		{"CF.RESERVE c 100 BUCKETSIZE", "-ERR wrong number of arguments for 'cf.reserve' command"},
		{"CF.RESERVE c x", "-Bad capacity"},
		{"CF.RESERVE c 100 MAXITERATIONS x", "-Couldn't parse MAXITERATIONS"},
		{"CF.RESERVE c 100 MAXITERATIONS 0", "-MAXITERATIONS: value must be in the range [1, 65535]"},
		{"CF.RESERVE c 100 BUCKETSIZE x", "-Couldn't parse BUCKETSIZE"},
		{"CF.RESERVE c 100 BUCKETSIZE 256", "-BUCKETSIZE: value must be in the range [1, 255]"},
		{"CF.RESERVE c 100 EXPANSION x", "-Couldn't parse EXPANSION"},
		{"CF.RESERVE c 100 EXPANSION 40000", "-EXPANSION: value must be in the range [0, 32768]"},
		{"CF.RESERVE c 3", "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"},
		{"CF.RESERVE c 1073741825", "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"},
		{"CF.RESERVE c 1000", "+OK"},
		{"CF.RESERVE c 1000", "-ERR item exists"},
		{"CF.RESERVE auto 1000", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"CF.INFO c", `[+Size :1080 +Number of buckets :512 +Number of filters :1 +Number of items inserted :0 +Number of items deleted :0 +Bucket size :2 +Expansion rate :1 +Max iterations :20]`},
		{"CF.RESERVE c3 100 EXPANSION 3 foo bar", "+OK"},
		{"CF.INFO c3", `[+Size :184 +Number of buckets :64 +Number of filters :1 +Number of items inserted :0 +Number of items deleted :0 +Bucket size :2 +Expansion rate :4 +Max iterations :20]`},
		{"CF.INFO c3 x", "-ERR wrong number of arguments for 'cf.info' command"},
		{"CF.INFO nokey", "-ERR not found"},
		// CF adds, counts, deletes.
		{"CF.ADD c a", ":1"},
		{"CF.ADD c a", ":1"},
		{"CF.ADDNX c a", ":0"},
		{"CF.ADDNX c b", ":1"},
		{"CF.COUNT c a", ":2"},
		{"CF.EXISTS c a", ":1"},
		{"CF.MEXISTS c a zz", "[:1 :0]"},
		{"CF.EXISTS auto a", ":0"},
		{"CF.COUNT auto a", ":0"},
		{"CF.MEXISTS nokey a", "[:0]"},
		{"CF.DEL c a", ":1"},
		{"CF.DEL c zz", ":0"},
		{"CF.DEL nokey a", "-Not found"},
		{"CF.DEL auto a", "-Not found"},
		{"CF.ADD auto a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"CF.ADD c", "-ERR wrong number of arguments for 'cf.add' command"},
		// CF.INSERT.
		{"CF.INSERT c", "-ERR wrong number of arguments for 'cf.insert' command"},
		{"CF.INSERT c ITEMS", "-ERR wrong number of arguments for 'cf.insert' command"},
		{"CF.INSERT c CAPACITY x ITEMS a", "-Bad capacity"},
		{"CF.INSERT c CAPACITY 3 ITEMS a", "-Capacity must be in the range [cf-bucket-size * 2, 1073741824]"},
		{"CF.INSERT c FOO ITEMS a", "-Unknown argument received"},
		{"CF.INSERT n NOCREATE ITEMS a", "-ERR not found"},
		{"CF.INSERT c ITEMS a b", "[:1 :1]"},
		{"CF.INSERTNX c ITEMS a q", "[:0 :1]"},
		{"CF.INSERT small cap 4 ITEMS x", "[:1]"},
		{"CF.INFO small", `[+Size :60 +Number of buckets :2 +Number of filters :1 +Number of items inserted :1 +Number of items deleted :0 +Bucket size :2 +Expansion rate :1 +Max iterations :20]`},
		// CF.SCANDUMP / LOADCHUNK.
		{"CF.SCANDUMP c x", "-Invalid position"},
		{"CF.SCANDUMP c -1", "-Invalid position"},
		{"CF.SCANDUMP nokey 0", "-ERR not found"},
		{"CF.SCANDUMP c3 0", "[:0 nil]"},
		{"CF.SCANDUMP c 100000", "[:0 nil]"},
		{"CF.LOADCHUNK c x y", "-Invalid position"},
		{"CF.LOADCHUNK c 0 y", "-Invalid position"},
		{"CF.LOADCHUNK c 1 y", "-ERR item exists"},
		{"CF.LOADCHUNK newcf 1 short", "-Invalid header"},
		{"CF.LOADCHUNK newcf 9 data", "-ERR not found"},
		{"CF.LOADCHUNK c 100000 data", "-Couldn't load chunk!"},
		{"CF.LOADCHUNK auto 1 y", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		// Generic commands.
		{"TYPE auto", "+MBbloom--"},
		{"TYPE c", "+MBbloomCF"},
		{"TYPE nokey", "+none"},
		{"PING", "+PONG"},
		{"PING hi", `"hi"`},
		{"ECHO hello", `"hello"`},
		{"SELECT 0", "+OK"},
		{"SELECT 1", "-ERR DB index is out of range"},
		{"SELECT x", "-ERR value is not an integer or out of range"},
		{"EXISTS auto auto nokey", ":2"},
		{"DEL nokey", ":0"},
		{"HELLO 4", "-NOPROTO unsupported protocol version"},
		{"CLIENT SETNAME my␠name", "-ERR Client names cannot contain spaces, newlines or special characters."},
		{"CLIENT SETNAME myname", "+OK"},
		{"CLIENT GETNAME", `"myname"`},
		{"CLIENT SETINFO LIB-NAME go-redis(x,go1.26)", "+OK"},
		{"CLIENT SETINFO LIB-VER 9.23.0", "+OK"},
		{"CLIENT MAINT_NOTIFICATIONS on moving-endpoint-type auto", "-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP."},
		{"RENAME nokey x", "-ERR no such key"},
		{"RENAME auto auto2", "+OK"},
		{"BF.EXISTS auto2 x", ":1"},
		{"TTL auto2", ":-1"},
		{"TTL nokey", ":-2"},
		{"EXPIRE auto2 100", ":1"}, // TTL values: TestExpiry (fake clock)
		{"PERSIST auto2", ":1"},
		{"PERSIST auto2", ":0"},
		{"EXPIRE nokey 10", ":0"},
		{"EXPIRE auto2 -1", ":1"},
		{"EXISTS auto2", ":0"},
		{"NOSUCH a b", "-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' "},
		{"HGET x f", "-ERR unknown command 'HGET', with args beginning with: 'x' 'f' "},
		{"ECHO", "-ERR wrong number of arguments for 'echo' command"},
		{"FLUSHALL", "+OK"},
		{"DBSIZE", ":0"},
		// Transactions (redis-py pipelines use MULTI/EXEC by default).
		{"EXEC", "-ERR EXEC without MULTI"},
		{"MULTI", "+OK"},
		{"BF.ADD t a", "+QUEUED"},
		{"BF.MADD t a b", "+QUEUED"},
		{"CF.DEL nokey x", "+QUEUED"},
		{"EXEC", "[:1 [:0 :1] -Not found]"},
		{"MULTI", "+OK"},
		{"BF.ADD t c", "+QUEUED"},
		{"NOSUCH", "-ERR unknown command 'NOSUCH', with args beginning with: "},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors."},
		{"BF.EXISTS t c", ":0"},
		{"MULTI", "+OK"},
		{"DISCARD", "+OK"},
		{"WATCH t", "+OK"},
		{"QUIT", "+OK"},
	})
}

func TestRedisBloomSemanticsRESP3(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"HELLO 3", `{"server":"redis" "version":"7.2.4" "proto"::3 "id"::1 "mode":"standalone" "role":"master" "modules":[{"name":"bf" "ver"::80000 "path":"(built in)" "args":[]}]}`},
		{"BF.ADD b a", "#t"},
		{"BF.ADD b a", "#f"},
		{"BF.MADD b a c", "[#f #t]"},
		{"BF.EXISTS b a", "#t"},
		{"BF.MEXISTS b a zz", "[#t #f]"},
		{"BF.EXISTS nokey a", "#f"},
		{"BF.CARD b", ":2"},
		{"BF.INSERT b ITEMS d", "[#t]"},
		{"BF.INFO b", `{+Capacity::100 +Size::240 +Number of filters::1 +Number of items inserted::3 +Expansion rate::2}`},
		{"BF.INFO b ITEMS", `{+Number of items inserted::3}`},
		{"BF.RESERVE ns 0.01 2 NONSCALING", "+OK"},
		{"BF.INFO ns", `{+Capacity::2 +Size::104 +Number of filters::1 +Number of items inserted::0 +Expansion rate:nil}`},
		{"BF.MADD ns a b c d", "[#t #t -ERR non scaling filter is full]"},
		{"CF.ADD c a", "#t"},
		{"CF.ADDNX c a", "#f"},
		{"CF.EXISTS c a", "#t"},
		{"CF.MEXISTS c a zz", "[#t #f]"},
		{"CF.COUNT c a", ":1"},
		{"CF.INSERT c ITEMS a b", "[#t #t]"},
		{"CF.INSERTNX c ITEMS a zz", "[:0 :1]"},
		{"CF.DEL c a", "#t"},
		{"CF.DEL c nothere", "#f"},
		{"CF.INFO c", `{+Size::1080 +Number of buckets::512 +Number of filters::1 +Number of items inserted::3 +Number of items deleted::1 +Bucket size::2 +Expansion rate::1 +Max iterations::20}`},
		{"CF.RESERVE e 4 EXPANSION 0", "+OK"},
		{"CF.SCANDUMP e 0", "[:0 nil]"},
		{"HELLO 2", `["server" "redis" "version" "7.2.4" "proto" :2 "id" :1 "mode" "standalone" "role" "master" "modules" [["name" "bf" "ver" :80000 "path" "(built in)" "args" []]]]`},
		{"BF.ADD b zzz", ":1"},
	})
}

// CF.INSERT on a full non-expanding filter: -1 (RESP2) / false (RESP3);
// CF.ADD answers "Filter is full".
func TestCuckooFull(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	rc.do(words("CF.RESERVE f 4 EXPANSION 0 MAXITERATIONS 1")...)
	var last string
	for i := 0; i < 50; i++ {
		last = rc.do("CF.INSERT", "f", "ITEMS", "x"+itoa(int64(i)))
		if last == "[:-1]" {
			break
		}
	}
	if last != "[:-1]" {
		t.Fatalf("never full: %s", last)
	}
	if got := rc.do("CF.ADD", "f", "another"); got != "-Filter is full" {
		t.Errorf("CF.ADD on full: %s", got)
	}
	if got := rc.do("CF.INSERTNX", "f", "ITEMS", "y1", "x0"); got != "[:-1 :0]" {
		t.Errorf("CF.INSERTNX on full: %s", got)
	}
	rc.do("HELLO", "3")
	if got := rc.do("CF.INSERT", "f", "ITEMS", "y2"); got != "[#f]" {
		t.Errorf("RESP3 CF.INSERT on full: %s", got)
	}
}

// 32 sub-filters: every insert command fails as a whole; reads and deletes work.
func TestCuckooMaxExpansions(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	rc.do(words("CF.RESERVE f 2 BUCKETSIZE 1 MAXITERATIONS 1 EXPANSION 1")...)
	for i := 0; ; i++ {
		got := rc.do("CF.ADD", "f", "i"+itoa(int64(i)))
		if got == "-Maximum expansions reached" {
			break
		}
		if got != ":1" || i > 10000 {
			t.Fatalf("add %d: %s", i, got)
		}
	}
	if got := rc.do("CF.INFO", "f"); !strings.Contains(got, `+Number of filters :32`) {
		t.Fatalf("info: %s", got)
	}
	for _, c := range [][]string{{"CF.ADDNX", "f", "i0"}, {"CF.INSERT", "f", "ITEMS", "a", "b"}, {"CF.INSERTNX", "f", "ITEMS", "i0"}} {
		if got := rc.do(c...); got != "-Maximum expansions reached" {
			t.Errorf("%v: %s", c, got)
		}
	}
	if got := rc.do("CF.EXISTS", "f", "i0"); got != ":1" {
		t.Errorf("exists: %s", got)
	}
	if got := rc.do("CF.DEL", "f", "i0"); got != ":1" {
		t.Errorf("del: %s", got)
	}
}
