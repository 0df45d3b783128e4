package server

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
)

// sketchScript is a sequence of CMS.* and TOPK.* commands that exercises
// every reply and error of RedisBloom's code paths. The Top-Ks that take
// many items decay at 1, so that RedisBloom's answers do not depend on its
// random draws.
func sketchScript() [][]string {
	var s [][]string
	add := func(w string) { s = append(s, words(w)) }
	// Count-Min Sketch: creation and its errors.
	for _, w := range []string{
		"CMS.INITBYDIM c 10 3", "CMS.INITBYDIM c 10 3", "CMS.INITBYDIM c2 0 3", "CMS.INITBYDIM c2 10 0",
		"CMS.INITBYDIM c2 x 3", "CMS.INITBYDIM c2 10 -1", "CMS.INITBYDIM c2 10", "CMS.INITBYDIM c2 10 3 4",
		"CMS.INITBYPROB p 0.01 0.01", "CMS.INITBYPROB p2 0 0.01", "CMS.INITBYPROB p2 1 0.01", "CMS.INITBYPROB p2 0.1 0",
		"CMS.INITBYPROB p2 0.1 1", "CMS.INITBYPROB p2 abc 0.1", "CMS.INITBYPROB p3 0.3 0.999999999",
		"CMS.INITBYPROB p4 0.001 0.0000001", "CMS.INFO p", "CMS.INFO p4", "CMS.INFO p3", "CMS.INITBYDIM big 9223372036854775807 2",
		"CMS.INITBYDIM c3 10 3", "CMS.INITBYDIM c4 11 3",
		"CMS.INCRBY c a 1 b 2 c 3", "CMS.INCRBY c a", "CMS.INCRBY c a 1 b", "CMS.INCRBY c a x", "CMS.INCRBY c a -1",
		"CMS.INCRBY c a 1 b -1", "CMS.INCRBY missing a 1", "CMS.INCRBY c e 4294967294", "CMS.INCRBY c e 5",
		"CMS.INCRBY c f 4294967296", "CMS.QUERY c a b c d e f", "CMS.QUERY c", "CMS.QUERY missing a", "CMS.INFO c",
		"CMS.INFO missing", "CMS.INFO c x", "CMS.INCRBY c3 a 5 zz 7", "CMS.INCRBY c4 a 1",
		"SET str v", "CMS.QUERY str a", "CMS.INCRBY str a 1", "CMS.INITBYDIM str 1 1", "CMS.INFO str",
		// Merges and their errors, in RedisBloom's order of checks.
		"CMS.MERGE c3 1 c", "CMS.QUERY c3 a zz", "CMS.INFO c3", "CMS.MERGE c3 2 c c3 WEIGHTS 2 -1", "CMS.QUERY c3 a b zz",
		"CMS.MERGE c3 2 c c3 weights 1 1", "CMS.MERGE c3 1 c4", "CMS.MERGE c3 0 c", "CMS.MERGE c3 -1 c", "CMS.MERGE c3 x c",
		"CMS.MERGE c3 2 c", "CMS.MERGE c3 1 c c3", "CMS.MERGE c3 2 c c3 WEIGHTS 1", "CMS.MERGE c3 1 c WEIGHTS 1 2",
		"CMS.MERGE c3 2 c missing", "CMS.MERGE c3 2 c str", "CMS.MERGE c3 1 c WEIGHTS x", "CMS.MERGE missing 1 c",
		"CMS.MERGE c3 1 c WEIGHTS -1", "CMS.MERGE c3 2 c c WEIGHTS 4294967295 4294967295", "CMS.MERGE c3 1", "CMS.INFO c3",
		"CMS.MERGE c3 1 WEIGHTS", "TYPE c", "TYPE t",
	} {
		add(w)
	}
	// Top-K.
	for _, w := range []string{
		"TOPK.RESERVE t 3 20 4 1", "TOPK.RESERVE t 3", "TOPK.RESERVE t2 0", "TOPK.RESERVE t2 4294967296",
		"TOPK.RESERVE t2 x", "TOPK.RESERVE t2 3 0 4 0.9", "TOPK.RESERVE t2 3 10 0 0.9", "TOPK.RESERVE t2 3 10 4 0",
		"TOPK.RESERVE t2 3 10 4 1.5", "TOPK.RESERVE t2 3 10 4 x", "TOPK.RESERVE t2 3 10", "TOPK.RESERVE t2 3 10 4 0.5 1",
		"TOPK.RESERVE d 5", "TOPK.INFO d", "TOPK.ADD d solo solo solo", "TOPK.LIST d WITHCOUNT", "TOPK.COUNT d solo other",
		"TOPK.INFO t", "TOPK.ADD t", "TOPK.ADD missing a", "TOPK.ADD str a",
		"TOPK.INCRBY t a 5 b 3", "TOPK.INCRBY t a", "TOPK.INCRBY t a 1 b", "TOPK.INCRBY t c 100001",
		"TOPK.INCRBY t c -1", "TOPK.INCRBY t c x", "TOPK.INCRBY t c 0", "TOPK.INCRBY t d 2 e 100001",
		"TOPK.LIST t", "TOPK.LIST t WITHCOUNT", "TOPK.LIST t withc", "TOPK.LIST t WITHCOUNTS", "TOPK.LIST t x",
		"TOPK.LIST missing", "TOPK.LIST t WITHCOUNT x", "TOPK.LIST", "TOPK.QUERY t a b c d e zz", "TOPK.QUERY t",
		"TOPK.COUNT t a b c d e zz", "TOPK.COUNT missing a", "TOPK.QUERY str a", "TOPK.INFO missing",
		"TOPK.ADD t nul\x00byte", "TOPK.INCRBY t nul\x00byte 50", "TOPK.LIST t WITHCOUNT",
		// RedisBloom's TopKMemUsage is the same in 2.x and 8.x (CMS's is not).
		"MEMORY USAGE t", "MEMORY USAGE d",
	} {
		s = append(s, strings.Split(w, " "))
	}
	// A stream through the decay-1 Top-K: expulsions and the heap's order.
	r := rand.New(rand.NewSource(3))
	for range 40 {
		cmd := []string{"TOPK.ADD", "t"}
		for range 1 + r.Intn(6) {
			cmd = append(cmd, "i"+strconv.Itoa(int(r.ExpFloat64()*4)))
		}
		s = append(s, cmd)
		if r.Intn(5) == 0 {
			s = append(s, []string{"TOPK.INCRBY", "t", "i" + strconv.Itoa(r.Intn(12)), strconv.Itoa(r.Intn(9))})
		}
		s = append(s, []string{"TOPK.LIST", "t", "WITHCOUNT"})
	}
	for i := range 14 {
		s = append(s, []string{"TOPK.COUNT", "t", "i" + strconv.Itoa(i)}, []string{"TOPK.QUERY", "t", "i" + strconv.Itoa(i)})
	}
	return s
}

// sketchDiffers tells the replies where bloom serve knowingly differs from
// RedisBloom 2.8.20 on Redis 7.0: TOPK.INFO's decay, which Redis 7.0
// prints with %.17g and Redis 8 — as bloom serve — in its shortest form
// (TestTopKInfoDecay). (RedisBloom's TOPK.INCRBY with a bad increment
// before its last pair sends a short array no client can read; the script
// has none: TestTopKIncrByBadIncrementMidway.)
func sketchDiffers(cmd []string) bool { return strings.EqualFold(cmd[0], "TOPK.INFO") }

// TestSketchCommandsLikeRedisBloom runs the same commands on bloom serve
// and on Redis + RedisBloom and compares every reply, in RESP2 and RESP3.
func TestSketchCommandsLikeRedisBloom(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	for _, resp3 := range []bool{false, true} {
		t.Run(fmt.Sprintf("resp3=%v", resp3), func(t *testing.T) {
			rs := redistest.Start(t, "--loadmodule", module)
			s := startServer(t, Config{NoPersistence: true})
			want, got := dialRaw(t, rs.Addr), dialRaw(t, s.Addr())
			if resp3 {
				want.do("HELLO", "3")
				got.do("HELLO", "3")
			}
			for _, cmd := range sketchScript() {
				w, g := want.do(cmd...), got.do(cmd...)
				if w != g && !sketchDiffers(cmd) {
					t.Errorf("%q:\n RedisBloom %s\n bloom      %s", cmd, w, g)
				}
			}
		})
	}
}

// TOPK.INFO's decay: the shortest form in RESP2 (as Redis 8 prints
// doubles), a double in RESP3.
func TestTopKInfoDecay(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	rc.do("TOPK.RESERVE", "t", "3")
	if got := rc.do("TOPK.INFO", "t"); got != `[+k :3 +width :8 +depth :7 +decay "0.9"]` {
		t.Errorf("RESP2 TOPK.INFO = %s", got)
	}
	rc.do("HELLO", "3")
	if got := rc.do("TOPK.INFO", "t"); got != `{+k::3 +width::8 +depth::7 +decay:,0.9}` {
		t.Errorf("RESP3 TOPK.INFO = %s", got)
	}
}

// A bad increment in the middle of TOPK.INCRBY: the items before it are
// applied and answered, the rest answered with the error, the reply
// whole (the next command's reply is its own), and the log holds just
// what was applied.
func TestTopKIncrByBadIncrementMidway(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	rc.do("TOPK.RESERVE", "t", "3", "20", "4", "1")
	got := rc.do("TOPK.INCRBY", "t", "a", "5", "b", "-1", "c", "2")
	want := "[nil -" + errTopKIncr + " -" + errTopKIncr + "]"
	if got != want {
		t.Fatalf("TOPK.INCRBY = %s, want %s", got, want)
	}
	if got := rc.do("PING"); got != "+PONG" {
		t.Fatalf("the next reply is %s", got)
	}
	if got := rc.do("TOPK.LIST", "t", "WITHCOUNT"); got != `["a" :5]` {
		t.Fatalf("LIST = %s", got)
	}
	if got := rc.do("TOPK.INCRBY", "t", "z", "100001"); got != "[-"+errTopKIncr+"]" {
		t.Fatalf("a lone bad increment: %s", got)
	}
	s2 := restart(t, s, false)
	rc2 := dialRaw(t, s2.Addr())
	if got := rc2.do("TOPK.LIST", "t", "WITHCOUNT"); got != `["a" :5]` {
		t.Fatalf("after replay LIST = %s", got)
	}
}

// sketchAnswers is everything a client can learn of the sketch keys.
func sketchAnswers(t *testing.T, rc *rawConn, items int) string {
	t.Helper()
	var b strings.Builder
	for _, k := range []string{"c", "m", "t", "d"} {
		fmt.Fprintln(&b, k, rc.do("TYPE", k))
	}
	q := []string{"CMS.QUERY", "c"}
	cnt, qu := []string{"TOPK.COUNT", "t"}, []string{"TOPK.QUERY", "t"}
	for i := range items {
		q = append(q, "i"+strconv.Itoa(i))
		cnt = append(cnt, "i"+strconv.Itoa(i))
		qu = append(qu, "i"+strconv.Itoa(i))
	}
	fmt.Fprintln(&b, rc.do(q...), rc.do("CMS.INFO", "c"))
	q[1] = "m"
	fmt.Fprintln(&b, rc.do(q...), rc.do("CMS.INFO", "m"))
	fmt.Fprintln(&b, rc.do("TOPK.LIST", "t", "WITHCOUNT"), rc.do(cnt...), rc.do(qu...))
	fmt.Fprintln(&b, rc.do("TOPK.LIST", "d", "WITHCOUNT"))
	return b.String()
}

// sketchWrites sends a random mix of sketch writes; the Top-Ks decay at
// 0.9 with few buckets, so the answers depend on the random draws.
func sketchWrites(rc *rawConn, seed int64, n int) {
	r := rand.New(rand.NewSource(seed))
	rc.do("CMS.INITBYDIM", "c", "50", "4")
	rc.do("CMS.INITBYPROB", "m", "0.1", "0.1")
	rc.do("TOPK.RESERVE", "t", "5", "6", "3", "0.9")
	rc.do("TOPK.RESERVE", "d", "4")
	for range n {
		it := "i" + strconv.Itoa(int(r.ExpFloat64()*8))
		switch r.Intn(6) {
		case 0:
			rc.do("CMS.INCRBY", "c", it, strconv.Itoa(r.Intn(5)), "i1", "1")
		case 1:
			rc.do("CMS.MERGE", "m", "1", "c", "WEIGHTS", "2")
		case 2, 3:
			rc.do("TOPK.ADD", "t", it, "i0", it+"x")
		case 4:
			rc.do("TOPK.INCRBY", "d", it, strconv.Itoa(r.Intn(30)))
		case 5:
			rc.do("MULTI")
			rc.do("TOPK.ADD", "t", it)
			rc.do("CMS.INCRBY", "c", it, "2")
			rc.do("EXEC")
		}
	}
}

// The log replays sketch writes exactly (Top-K's random draws included),
// and so does a snapshot taken in the middle, with writes after it: a
// server restarted between writes ends where one that never stopped does.
func TestSketchPersistence(t *testing.T) {
	for _, save := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", save), func(t *testing.T) {
			ref := dialRaw(t, startServer(t, Config{NoPersistence: true}).Addr())
			s := startServer(t, Config{AppendFsync: "always"})
			rc := dialRaw(t, s.Addr())
			for _, c := range []*rawConn{ref, rc} {
				sketchWrites(c, 1, 300)
			}
			if save {
				if got := rc.do("BGREWRITEAOF"); !strings.HasPrefix(got, "+") {
					t.Fatalf("BGREWRITEAOF: %s", got)
				}
				for _, c := range []*rawConn{ref, rc} {
					sketchWrites(c, 2, 100) // during and after the rewrite
				}
				waitFor(t, func() bool {
					return replInfo(t, rc, "persistence", "aof_rewrite_in_progress") == "0"
				})
			}
			s2 := restart(t, s, save)
			rc2 := dialRaw(t, s2.Addr())
			for _, c := range []*rawConn{ref, rc2} {
				sketchWrites(c, 3, 200)
			}
			if want, got := sketchAnswers(t, ref, 20), sketchAnswers(t, rc2, 20); want != got {
				t.Fatalf("restarted:\n%s\nnever stopped:\n%s", got, want)
			}
		})
	}
}

// A replica, by full sync and then by the stream, holds the same sketches
// as its master, Top-K's random draws included.
func TestSketchReplication(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	sketchWrites(mc, 4, 150)
	r := startReplica(t, m, Config{})
	rc := dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	sketchWrites(mc, 5, 150)
	waitSynced(t, mc, rc)
	if a, b := sketchAnswers(t, mc, 20), sketchAnswers(t, rc, 20); a != b {
		t.Fatalf("replica:\n%s\nmaster:\n%s", b, a)
	}
}

// TYPE, MEMORY USAGE (RedisBloom 8's figures), COPY (an independent
// copy), ACL categories, and the sketches through go-redis's own methods.
func TestSketchKeysGoRedis(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.CMSInitByDim(ctx, "c", 100, 5).Err())
	must(c.CMSInitByProb(ctx, "p", 0.001, 0.01).Err())
	incr, err := c.CMSIncrBy(ctx, "c", "a", 3, "b", 4).Result()
	if err != nil || fmt.Sprint(incr) != "[3 4]" {
		t.Fatalf("CMSIncrBy = %v, %v", incr, err)
	}
	q, err := c.CMSQuery(ctx, "c", "a", "b", "z").Result()
	if err != nil || fmt.Sprint(q) != "[3 4 0]" {
		t.Fatalf("CMSQuery = %v, %v", q, err)
	}
	info, err := c.CMSInfo(ctx, "p").Result()
	if err != nil || info.Width != 2000 || info.Depth != 7 || info.Count != 0 {
		t.Fatalf("CMSInfo = %+v, %v", info, err)
	}
	must(c.CMSInitByDim(ctx, "c2", 100, 5).Err())
	must(c.CMSMergeWithWeight(ctx, "c2", map[string]int64{"c": 3}).Err())
	if q, _ := c.CMSQuery(ctx, "c2", "a").Result(); fmt.Sprint(q) != "[9]" {
		t.Fatalf("after merge: %v", q)
	}
	must(c.TopKReserveWithOptions(ctx, "t", 2, 50, 4, 0.9).Err())
	if _, err := c.TopKAdd(ctx, "t", "x", "y", "x", "z", "x").Result(); err != nil {
		t.Fatal(err)
	}
	list, err := c.TopKListWithCount(ctx, "t").Result()
	if err != nil || list["x"] != 3 || len(list) != 2 {
		t.Fatalf("TopKListWithCount = %v, %v", list, err)
	}
	qs, err := c.TopKQuery(ctx, "t", "x", "nope").Result()
	if err != nil || fmt.Sprint(qs) != "[true false]" {
		t.Fatalf("TopKQuery = %v, %v", qs, err)
	}
	ti, err := c.TopKInfo(ctx, "t").Result()
	if err != nil || ti.K != 2 || ti.Width != 50 || ti.Depth != 4 || ti.Decay != 0.9 {
		t.Fatalf("TopKInfo = %+v, %v", ti, err)
	}
	for k, want := range map[string]string{"c": "CMSk-TYPE", "t": "TopK-TYPE"} {
		if got, _ := c.Type(ctx, k).Result(); got != want {
			t.Errorf("TYPE %s = %s, want %s", k, got, want)
		}
	}
	// RedisBloom 8: sizeof(CMSketch) + 4 per counter; TopK: its struct,
	// 8 per bucket, 24 per heap slot. The key's part: sds + dict entry.
	keyPart := int64(sdsAlloc(1, false) + dictEntrySize)
	if got, _ := c.MemoryUsage(ctx, "c").Result(); got != 32+4*500+keyPart {
		t.Errorf("MEMORY USAGE c = %d, want %d", got, 32+4*500+keyPart)
	}
	if got, _ := c.MemoryUsage(ctx, "t").Result(); got != 2088+8*200+24*2+keyPart {
		t.Errorf("MEMORY USAGE t = %d, want %d", got, 2088+8*200+24*2+keyPart)
	}
	// COPY makes independent copies.
	must(c.Copy(ctx, "c", "cc", 0, false).Err())
	must(c.Copy(ctx, "t", "tc", 0, false).Err())
	must(c.CMSIncrBy(ctx, "c", "a", 100).Err())
	must(c.TopKIncrBy(ctx, "t", "w", 50).Err())
	if q, _ := c.CMSQuery(ctx, "cc", "a").Result(); fmt.Sprint(q) != "[3]" {
		t.Errorf("the copy changed with the original: %v", q)
	}
	if ok, _ := c.TopKQuery(ctx, "tc", "w").Result(); fmt.Sprint(ok) != "[false]" {
		t.Errorf("the Top-K copy changed with the original: %v", ok)
	}
	// ACL: @cms and @topk name their commands; a user with only @topk
	// cannot touch a sketch.
	cat, err := c.Do(ctx, "ACL", "CAT", "cms").StringSlice()
	if err != nil || len(cat) != 6 {
		t.Fatalf("ACL CAT cms = %v, %v", cat, err)
	}
	cat, err = c.Do(ctx, "ACL", "CAT", "topk").StringSlice()
	if err != nil || len(cat) != 7 {
		t.Fatalf("ACL CAT topk = %v, %v", cat, err)
	}
	must(c.Do(ctx, "ACL", "SETUSER", "tk", "on", ">pw", "~*", "+@topk").Err())
	u := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: "tk", Password: "pw"})
	defer u.Close()
	if err := u.TopKAdd(ctx, "t", "q").Err(); err != nil {
		t.Errorf("TOPK.ADD as a @topk user: %v", err)
	}
	if err := u.CMSQuery(ctx, "c", "a").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("CMS.QUERY as a @topk user: %v", err)
	}
}

// sketchDumpSetup makes sketches with every kind of content: counters,
// saturated counters, merged ones; a Top-K with a full heap, an empty
// one, one with an item holding a NUL byte.
var sketchDumpSetup = []string{
	"CMS.INITBYDIM c 40 4", "CMS.INCRBY c a 5 b 7 big 4294967295", "CMS.INITBYPROB p 0.05 0.01",
	"CMS.INITBYDIM m 40 4", "CMS.MERGE m 2 c c WEIGHTS 1 0",
	"TOPK.RESERVE t 4 30 3 1", "TOPK.RESERVE e 3", "TOPK.RESERVE n 2 10 2 1", "TOPK.ADD n x\x00y z",
}

func sketchDumpAnswers(t *testing.T, rc *rawConn) string {
	var b strings.Builder
	for _, q := range []string{"CMS.QUERY c a b big zz", "CMS.INFO c", "CMS.INFO p", "CMS.QUERY m a b big",
		"CMS.INFO m", "TOPK.LIST t WITHCOUNT", "TOPK.COUNT t i0 i1 i2 i3 i4 i5 zz", "TOPK.QUERY t i0 i1 i2",
		"TOPK.LIST e", "TOPK.LIST n WITHCOUNT", "TOPK.COUNT n z", "TYPE c", "TYPE t"} {
		fmt.Fprintln(&b, rc.do(strings.Split(q, " ")...))
	}
	return b.String()
}

// Sketches move between Redis + RedisBloom and bloom serve by DUMP and
// RESTORE, both ways, and answer alike on both afterwards, also to the
// writes that follow.
func TestSketchDumpRestoreWithRedisBloom(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	rs := redistest.Start(t, "--loadmodule", module)
	s := startServer(t, Config{NoPersistence: true})
	rc, bc := dialRaw(t, rs.Addr), dialRaw(t, s.Addr())
	for _, from := range []*rawConn{rc, bc} {
		to := bc
		if from == bc {
			to = rc
		}
		from.do("FLUSHALL")
		to.do("FLUSHALL")
		for _, c := range sketchDumpSetup {
			from.do(strings.Split(c, " ")...)
		}
		for i := range 60 {
			from.do("TOPK.ADD", "t", "i"+strconv.Itoa(i%7*(i%3)))
		}
		for _, k := range []string{"c", "p", "m", "t", "e", "n"} {
			payload := from.do("DUMP", k)
			raw, err := strconv.Unquote(payload)
			if err != nil {
				t.Fatalf("DUMP %s: %s", k, payload)
			}
			if got := to.do("RESTORE", k, "0", raw); got != "+OK" {
				t.Fatalf("RESTORE %s: %s", k, got)
			}
		}
		want, got := sketchDumpAnswers(t, from), sketchDumpAnswers(t, to)
		if want != got {
			t.Fatalf("restored:\n%s\noriginal:\n%s", got, want)
		}
		for _, c := range []*rawConn{from, to} {
			c.do("CMS.INCRBY", "c", "a", "3")
			c.do("TOPK.ADD", "t", "i1", "new", "i2")
		}
		if want, got := sketchDumpAnswers(t, from), sketchDumpAnswers(t, to); want != got {
			t.Fatalf("after more writes, restored:\n%s\noriginal:\n%s", got, want)
		}
	}
}

// DUMP and RESTORE between bloom serve's own keys, and the payloads a
// RESTORE refuses.
func TestSketchDumpRestore(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	for _, c := range sketchDumpSetup {
		rc.do(strings.Split(c, " ")...)
	}
	before := sketchDumpAnswers(t, rc)
	for _, k := range []string{"c", "p", "m", "t", "e", "n"} {
		raw, err := strconv.Unquote(rc.do("DUMP", k))
		if err != nil {
			t.Fatal(err)
		}
		if got := rc.do("RESTORE", k, "0", raw, "REPLACE"); got != "+OK" {
			t.Fatalf("RESTORE %s: %s", k, got)
		}
		// A damaged value (the checksum made right again) is refused.
		bad := []byte(raw)
		bad[len(bad)-11] ^= 0xff
		bad = rdb.WithDumpVersion(bad, rdb.DumpVersion)
		if got := rc.do("RESTORE", k+"x", "0", string(bad)); got != "-"+errBadData {
			t.Fatalf("RESTORE of a damaged %s: %s", k, got)
		}
	}
	if after := sketchDumpAnswers(t, rc); after != before {
		t.Fatalf("after RESTORE:\n%s\nbefore:\n%s", after, before)
	}
}

// The memory accounting follows sketches through every kind of change —
// create, writes that add Top-K items, merge, COPY, RESTORE, RENAME, DEL,
// FLUSHALL — as a recount finds it; and a sketch that would not fit under
// --maxmemory is refused with RedisBloom's error.
func TestSketchMemoryAccounting(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 4 << 20})
	c := &Session{authed: true}
	check := func(what string) {
		t.Helper()
		s.db.Lock()
		defer s.db.Unlock()
		used := s.db.Used()
		s.db.Recount()
		if s.db.Used() != used {
			t.Errorf("after %s: accounted %d bytes, recount says %d", what, used, s.db.Used())
		}
	}
	must := func(want string, args ...string) {
		t.Helper()
		if got := doArgs(s, c, args...); !strings.HasPrefix(got, want) {
			t.Fatalf("%v: %.80q, want %q", args, got, want)
		}
	}
	must("+OK", "CMS.INITBYDIM", "c", "1000", "10")
	check("CMS.INITBYDIM")
	must("+OK", "TOPK.RESERVE", "t", "50", "100", "5", "0.9")
	check("TOPK.RESERVE")
	for i := range 200 {
		doArgs(s, c, "TOPK.ADD", "t", strings.Repeat("item", i%40)+strconv.Itoa(i))
		doArgs(s, c, "CMS.INCRBY", "c", strconv.Itoa(i), "2")
	}
	check("TOPK.ADD")
	must("+OK", "CMS.INITBYDIM", "m", "1000", "10")
	must("+OK", "CMS.MERGE", "m", "2", "c", "c")
	must(":1", "COPY", "t", "t2")
	must(":1", "COPY", "c", "c2")
	check("COPY")
	for _, k := range []string{"t", "c"} {
		dump := doArgs(s, c, "DUMP", k)
		payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
		must("+OK", "RESTORE", k+"r", "0", payload)
	}
	check("RESTORE")
	must("+OK", "RENAME", "t2", "t3")
	must(":1", "DEL", "c2")
	check("RENAME and DEL")
	must("-CMS: Insufficient memory to create the key", "CMS.INITBYDIM", "huge", "1000000", "10")
	must("-ERR Insufficient memory to create topk data structure", "TOPK.RESERVE", "huge", "10", "1000000", "10", "0.9")
	check("refusals")
	must("+OK", "FLUSHALL")
	check("FLUSHALL")
}

// A snapshot holds sketches exactly as they were when it started, while
// clients go on incrementing and merging into a Count-Min Sketch the
// writer is copying chunk by chunk (and writing to a Top-K).
func TestSketchSnapshotIsPointInTime(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	must := func(want string, args ...string) {
		t.Helper()
		if got := doArgs(s, c, args...); !strings.HasPrefix(got, want) {
			t.Fatalf("%v: %.80q, want %q", args, got, want)
		}
	}
	must("+OK", "CMS.INITBYDIM", "big", "250000", "4") // 4 MB: many chunks
	must("+OK", "CMS.INITBYDIM", "src", "250000", "4")
	must("+OK", "TOPK.RESERVE", "tk", "5", "50", "3", "0.9")
	for i := range 20000 {
		doArgs(s, c, "CMS.INCRBY", "big", fmt.Sprint("a", i), "1")
		doArgs(s, c, "CMS.INCRBY", "src", fmt.Sprint("s", i), "2")
		doArgs(s, c, "TOPK.ADD", "tk", fmt.Sprint("t", i%37))
	}
	answers := func(s *Server) map[string]string {
		out := map[string]string{}
		c := &Session{authed: true}
		for _, k := range []string{"big", "src"} {
			args := []string{"CMS.QUERY", k}
			for i := range 300 {
				args = append(args, fmt.Sprint("a", i*61), fmt.Sprint("s", i*67), fmt.Sprint("b", i*71))
			}
			out[k] = doArgs(s, c, args...) + doArgs(s, c, "CMS.INFO", k)
			dump := doArgs(s, c, "DUMP", k) // every counter
			out[k+" dump"] = dump
		}
		out["tk"] = doArgs(s, c, "TOPK.LIST", "tk", "WITHCOUNT") + doArgs(s, c, "DUMP", "tk")
		return out
	}
	want := answers(s)
	rs := startSnapshot(s)
	rs.read(t, 300<<10)
	// The writer is inside the first sketch now: change both, ahead of
	// and behind it.
	for i := range 20000 {
		doArgs(s, c, "CMS.INCRBY", "big", fmt.Sprint("b", i), "3")
		doArgs(s, c, "CMS.INCRBY", "src", fmt.Sprint("a", i), "1")
		doArgs(s, c, "TOPK.ADD", "tk", fmt.Sprint("u", i%41))
	}
	must("+OK", "CMS.MERGE", "src", "2", "src", "big")
	rs.read(t, 1<<20)
	must("+OK", "CMS.MERGE", "big", "1", "src", "WEIGHTS", "2")
	data := rs.finish(t)
	if rs.snap.Copied.Load() == 0 {
		t.Error("no chunk was copied on write: the test did not race the writer")
	}
	s2 := startServer(t, Config{NoPersistence: true})
	if _, n, err := loadSnapshot(s2, data); err != nil || n != 3 {
		t.Fatalf("reading the snapshot: %d keys, %v", n, err)
	}
	got := answers(s2)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s differs from its state when the snapshot started", k)
		}
	}
}
