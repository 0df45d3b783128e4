package server

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/tdigest"
	"github.com/redis/go-redis/v9"
)

func init() {
	for name, args := range map[string][]string{
		"tdigest.create": {"TDIGEST.CREATE", "tnew"}, "tdigest.add": {"TDIGEST.ADD", "tnew", "1"},
		"tdigest.reset": {"TDIGEST.RESET", "tnew"}, "tdigest.merge": {"TDIGEST.MERGE", "tm", "1", "tnew"},
		"tdigest.min": {"TDIGEST.MIN", "tnew"}, "tdigest.max": {"TDIGEST.MAX", "tnew"},
		"tdigest.quantile": {"TDIGEST.QUANTILE", "tnew", "0.5"}, "tdigest.cdf": {"TDIGEST.CDF", "tnew", "1"},
		"tdigest.rank": {"TDIGEST.RANK", "tnew", "1"}, "tdigest.revrank": {"TDIGEST.REVRANK", "tnew", "1"},
		"tdigest.byrank": {"TDIGEST.BYRANK", "tnew", "1"}, "tdigest.byrevrank": {"TDIGEST.BYREVRANK", "tnew", "1"},
		"tdigest.trimmed_mean": {"TDIGEST.TRIMMED_MEAN", "tnew", "0.1", "0.9"}, "tdigest.info": {"TDIGEST.INFO", "tnew"},
	} {
		multiCases[name] = [][]string{args}
	}
}

// norm turns a reply into a comparable string: numbers by value (Redis 7.0
// writes doubles with 17 digits, Redis 8 and bloom serve the shortest
// form), errors by text.
func norm(v any, err error) string {
	if err != nil {
		return "ERR:" + err.Error()
	}
	switch x := v.(type) {
	case []any:
		s := "["
		for _, e := range x {
			s += norm(e, nil) + " "
		}
		return s + "]"
	case map[any]any:
		return fmt.Sprint(len(x), x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		if x == "-nan" {
			// Redis 7.0 prints a NaN with its sign bit as C's printf
			// does; Redis 7.2 and later (and bloom serve) write nan.
			return "nan"
		}
		if f, err := strconv.ParseFloat(x, 64); err == nil && !math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return x
	}
	return fmt.Sprint(v)
}

// TestTDigestMatchesRedisBloom runs the same random command sequences on
// Redis + RedisBloom and on bloom serve and compares every reply: answers
// of digests fed and queried alike, errors, INFO.
func TestTDigestMatchesRedisBloom(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := redistest.Start(t, "--loadmodule", module)
	s := startServer(t, Config{NoPersistence: true})
	bc := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer bc.Close()
	for _, proto := range []int{2, 3} {
		rc2 := redis.NewClient(&redis.Options{Addr: rs.Addr, Protocol: proto})
		bc2 := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: proto})
		defer rc2.Close()
		defer bc2.Close()
		same := func(args ...any) {
			t.Helper()
			a, b := norm(rc2.Do(ctx, args...).Result()), norm(bc2.Do(ctx, args...).Result())
			if a != b {
				t.Fatalf("RESP%d %v:\nRedisBloom %s\nbloom      %s", proto, args, a, b)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(proto), 3))
		for _, c := range [][]any{
			{"TDIGEST.CREATE", "t"}, {"TDIGEST.CREATE", "t"}, {"TDIGEST.CREATE", "u", "COMPRESSION", 0},
			{"TDIGEST.CREATE", "u", "COMPRESSION", "x"}, {"TDIGEST.CREATE", "u", "COMPRESION", 10}, {"TDIGEST.CREATE", "u", "COMPRESSION"},
			{"TDIGEST.QUANTILE", "t", 0.5}, {"TDIGEST.MIN", "t"}, {"TDIGEST.RANK", "t", 1}, {"TDIGEST.BYRANK", "t", 0, 1}, {"TDIGEST.CDF", "t", 1},
			{"TDIGEST.ADD", "t", 5}, {"TDIGEST.QUANTILE", "t", 0.5}, {"TDIGEST.RANK", "t", 5}, {"TDIGEST.REVRANK", "t", 5}, {"TDIGEST.INFO", "t"},
			{"TDIGEST.ADD", "t", "nan"}, {"TDIGEST.ADD", "t", "inf"}, {"TDIGEST.ADD", "t", "abc"}, {"TDIGEST.ADD", "t"},
			{"TDIGEST.QUANTILE", "t", 1.5}, {"TDIGEST.QUANTILE", "t", "x"}, {"TDIGEST.BYRANK", "t", -1}, {"TDIGEST.BYRANK", "t", 1.5},
			{"TDIGEST.TRIMMED_MEAN", "t", 0.5, 0.5}, {"TDIGEST.TRIMMED_MEAN", "t", 0.5, 2}, {"TDIGEST.TRIMMED_MEAN", "t", "a", 2},
			{"TDIGEST.ADD", "nokey", 1}, {"SET", "str", "x"}, {"TDIGEST.ADD", "str", 1}, {"TDIGEST.CREATE", "str"},
			{"TDIGEST.MERGE", "m", 0, "t"}, {"TDIGEST.MERGE", "m", 3, "t"}, {"TDIGEST.MERGE", "m", "x", "t"}, {"TDIGEST.MERGE", "m", 1, "nokey"},
			{"TDIGEST.MERGE", "m", 1, "t", "BOGUS"}, {"TDIGEST.MERGE", "m", 1, "t", "COMPRESSION"}, {"TDIGEST.MERGE", "m", 1, "m"},
			// COPY that copies a digest is bloom serve's (RedisBloom has no
			// copy for its types; TestCopy); the cases that copy nothing
			// answer alike.
			{"TYPE", "t"}, {"MEMORY", "USAGE", "t"}, {"COPY", "nokey", "t2"}, {"COPY", "t", "str"},
			{"OBJECT", "ENCODING", "t"}, {"OBJECT", "FREQ", "t"},
		} {
			same(c...)
		}
		for round := range 150 {
			k := "d" + strconv.Itoa(round%4)
			switch rng.IntN(9) {
			case 0:
				same("TDIGEST.CREATE", k, "COMPRESSION", 1+rng.IntN(200))
			case 1, 2, 3:
				args := []any{"TDIGEST.ADD", k}
				for range 1 + rng.IntN(400) {
					switch round % 3 {
					case 0:
						args = append(args, rng.NormFloat64()*100)
					case 1:
						args = append(args, rng.IntN(20))
					default:
						args = append(args, math.Exp(rng.NormFloat64()*4))
					}
				}
				same(args...)
			case 4:
				same("TDIGEST.QUANTILE", k, 0, 0.01, 0.5, 0.99, 1, 0.3)
				same("TDIGEST.CDF", k, -1, 0, 3.5, 10, 1e6)
			case 5:
				same("TDIGEST.RANK", k, -1, 0, 3.5, 10, 1e6)
				same("TDIGEST.REVRANK", k, -1, 0, 3.5, 10, 1e6)
				same("TDIGEST.BYRANK", k, 0, 1, 10, 100, 1e6)
				same("TDIGEST.BYREVRANK", k, 0, 1, 10, 100, 1e6)
			case 6:
				same("TDIGEST.MERGE", "d"+strconv.Itoa(rng.IntN(4)), 2, k, "d"+strconv.Itoa(rng.IntN(4)))
				same("TDIGEST.MERGE", "mm", 1, k, "COMPRESSION", 50, "OVERRIDE")
				same("TDIGEST.INFO", "mm")
			case 7:
				same("TDIGEST.TRIMMED_MEAN", k, 0.1, 0.9)
				same("TDIGEST.MIN", k)
				same("TDIGEST.MAX", k)
			case 8:
				same("TDIGEST.INFO", k)
				if rng.IntN(4) == 0 {
					same("TDIGEST.RESET", k)
				}
			}
		}
		rc2.FlushAll(ctx)
		bc2.FlushAll(ctx)
	}
}

// TestTDigestGoRedis: go-redis's TDigest* methods, in RESP2 and RESP3,
// parse bloom serve's replies (INFO's field names included).
func TestTDigestGoRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startServer(t, Config{NoPersistence: true})
	bc := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer bc.Close()
	if err := bc.TDigestCreate(ctx, "g").Err(); err != nil {
		t.Fatal(err)
	}
	if err := bc.TDigestAdd(ctx, "g", 1, 2, 3, 4).Err(); err != nil {
		t.Fatal(err)
	}
	if q, err := bc.TDigestQuantile(ctx, "g", 0.5).Result(); err != nil || len(q) != 1 || q[0] != 3 {
		t.Fatalf("quantile %v %v", q, err)
	}
	for _, proto := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: proto})
		defer c.Close()
		info, err := c.TDigestInfo(ctx, "g").Result()
		if err != nil || info.Compression != 100 || info.Capacity != 610 || info.Observations != 4 || info.MemoryUsage != 9768 {
			t.Fatalf("RESP%d TDigestInfo %+v %v", proto, info, err)
		}
		if v, err := c.TDigestMin(ctx, "g").Result(); err != nil || v != 1 {
			t.Fatalf("RESP%d TDigestMin %v %v", proto, v, err)
		}
		if v, err := c.TDigestByRank(ctx, "g", 0, 10).Result(); err != nil || len(v) != 2 || v[0] != 1 || !math.IsInf(v[1], 1) {
			t.Fatalf("RESP%d TDigestByRank %v %v", proto, v, err)
		}
		if v, err := c.TDigestRank(ctx, "g", 0, 2.5).Result(); err != nil || len(v) != 2 || v[0] != -1 || v[1] != 2 {
			t.Fatalf("RESP%d TDigestRank %v %v", proto, v, err)
		}
		if err := c.TDigestMerge(ctx, "g2", &redis.TDigestMergeOptions{Compression: 50, Override: true}, "g", "g").Err(); err != nil {
			t.Fatalf("RESP%d TDigestMerge %v", proto, err)
		}
		if v, err := c.TDigestTrimmedMean(ctx, "g2", 0.1, 0.9).Result(); err != nil || v != 2.5 {
			t.Fatalf("RESP%d TDigestTrimmedMean %v %v", proto, v, err)
		}
	}
}

// tdigestSteps is a random stream of TDIGEST commands in which queries
// come between adds (so they merge buffers), some inside MULTI.
func tdigestSteps(seed uint64, n int) [][]string {
	rng := rand.New(rand.NewPCG(seed, 9))
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	var out [][]string
	for i := range n {
		k := "t" + strconv.Itoa(rng.IntN(3))
		switch rng.IntN(10) {
		case 0:
			out = append(out, []string{"TDIGEST.CREATE", k, "COMPRESSION", strconv.Itoa(5 + rng.IntN(100))})
		case 1, 2, 3, 4:
			cmd := []string{"TDIGEST.ADD", k}
			for range 1 + rng.IntN(150) {
				cmd = append(cmd, f(math.Round(rng.NormFloat64()*1000)/16))
			}
			out = append(out, cmd)
		case 5:
			out = append(out, []string{"TDIGEST.QUANTILE", k, "0.1", "0.5", "0.99"})
		case 6:
			out = append(out, []string{"TDIGEST.RANK", k, "0"}, []string{"TDIGEST.BYREVRANK", k, "3"}, []string{"DUMP", k})
		case 7:
			out = append(out, []string{"MULTI"}, []string{"TDIGEST.ADD", k, "1", "2"}, []string{"TDIGEST.CDF", k, "1"}, []string{"TDIGEST.TRIMMED_MEAN", k, "0.1", "0.9"}, []string{"EXEC"})
		case 8:
			out = append(out, []string{"TDIGEST.MERGE", "t" + strconv.Itoa(rng.IntN(3)), "2", k, "t" + strconv.Itoa(rng.IntN(3))})
		case 9:
			if i%7 == 0 {
				out = append(out, []string{"TDIGEST.RESET", k})
			} else {
				out = append(out, []string{"TDIGEST.INFO", k})
			}
		}
	}
	return out
}

// tdigests copies every digest of s.
func tdigests(t *testing.T, s *Server) map[string]*tdigest.Digest {
	t.Helper()
	out := map[string]*tdigest.Digest{}
	s.db.Lock()
	defer s.db.Unlock()
	for _, k := range []string{"t0", "t1", "t2"} {
		if e := s.db.Lookup(k); e != nil && e.TD() != nil {
			out[k] = e.TD().Clone()
		}
	}
	return out
}

func sameDigests(t *testing.T, what string, a, b map[string]*tdigest.Digest) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d digests, want %d", what, len(b), len(a))
	}
	for k, d := range a {
		if e := b[k]; e == nil || !e.Equal(d) {
			t.Fatalf("%s: digest %s differs: %+v, want %+v", what, k, b[k].Info(), d.Info())
		}
	}
}

// TestTDigestReplayAndReplicaExact: a query merges a digest's buffer (as
// RedisBloom's does) and later answers depend on when that happened, so
// what the queries did is logged: the log replayed after kill -9 (from a
// snapshot taken part-way and the log after it) and a replica fed the
// stream hold digests equal bit for bit to the master's, and a replica's
// client queries change nothing there.
func TestTDigestReplayAndReplicaExact(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	r := startReplica(t, s, Config{NoPersistence: true})
	mc, rc := dialRaw(t, s.Addr()), dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	steps := tdigestSteps(1, 400)
	saved, inMulti := false, false
	for i, st := range steps {
		if i >= len(steps)/2 && !saved && !inMulti {
			if got := mc.do("SAVE"); got != "+OK" {
				t.Fatalf("SAVE: %s", got)
			}
			saved = true
		}
		inMulti = st[0] == "MULTI" || inMulti && st[0] != "EXEC"
		got := mc.do(st...)
		if strings.HasPrefix(got, "-") && !strings.Contains(got, "key already exists") && !strings.Contains(got, "key does not exist") {
			t.Fatalf("%v: %s", st, got)
		}
		if i%5 == 0 && st[0] == "TDIGEST.QUANTILE" && !inMulti {
			// The replica answers as the master would, from a merged copy.
			waitSynced(t, mc, rc)
			if a, b := rc.do(st...), mc.do(st...); a != b {
				t.Fatalf("%v: replica %s, master %s", st, a, b)
			}
		}
	}
	want := tdigests(t, s)
	if len(want) == 0 {
		t.Fatal("no digests")
	}
	if !sameData(t, s, r, mc, rc) {
		t.Fatal("the replica's keyspace differs from the master's")
	}
	sameDigests(t, "replica", want, tdigests(t, r))
	s2 := crashRestart(t, s, Config{})
	sameDigests(t, "after restart", want, tdigests(t, s2))
}

// TestTDigestACLCategory: +@tdigest grants the TDIGEST commands and
// nothing else; ACL CAT lists the category and its commands; COMMAND INFO
// shows them in @tdigest with RedisBloom's read/write and fast categories.
func TestTDigestACLCategory(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"ACL SETUSER td on nopass ~* -@all +@tdigest", "+OK"},
		{"AUTH td x", "+OK"},
		{"TDIGEST.CREATE k", "+OK"},
		{"TDIGEST.ADD k 1 2 3", "+OK"},
		{"TDIGEST.QUANTILE k 0.5", `["2"]`},
		{"BF.ADD b x", "-NOPERM User td has no permissions to run the 'bf.add' command"},
	})
	admin := dialRaw(t, s.Addr())
	cats := admin.do("ACL", "CAT")
	if !strings.Contains(cats, `"tdigest"`) {
		t.Fatalf("ACL CAT: %s", cats)
	}
	list := admin.do("ACL", "CAT", "tdigest")
	for _, name := range []string{"tdigest.add", "tdigest.trimmed_mean", "tdigest.info"} {
		if !strings.Contains(list, `"`+name+`"`) {
			t.Fatalf("ACL CAT tdigest lacks %s: %s", name, list)
		}
	}
	info := admin.do("COMMAND", "INFO", "tdigest.create", "tdigest.trimmed_mean")
	for _, want := range []string{"[+@write +@fast +@tdigest]", "[+@read +@tdigest]"} {
		if !strings.Contains(info, want) {
			t.Errorf("COMMAND INFO lacks %s: %s", want, info)
		}
	}
}

// TestTDigestDumpRestoreWithRedisBloom: t-digests move between Redis +
// RedisBloom and bloom serve by DUMP and RESTORE, both ways, and answer
// alike afterwards (INFO included), the one-value digest too.
func TestTDigestDumpRestoreWithRedisBloom(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs := redistest.Start(t, "--loadmodule", module)
	s := startServer(t, Config{NoPersistence: true})
	rc, bc := rs.Client(t), redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer bc.Close()
	setup := [][]any{
		{"TDIGEST.CREATE", "empty"},
		{"TDIGEST.CREATE", "one", "COMPRESSION", 50}, {"TDIGEST.ADD", "one", 7.5},
		{"TDIGEST.CREATE", "many", "COMPRESSION", 30},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		add := []any{"TDIGEST.ADD", "many"}
		for range 300 {
			add = append(add, math.Round(rng.ExpFloat64()*1000)/10)
		}
		setup = append(setup, add, []any{"TDIGEST.QUANTILE", "many", 0.5})
	}
	setup = append(setup, []any{"TDIGEST.ADD", "many", 1, 2, 3}, []any{"TDIGEST.MERGE", "merged", 2, "many", "one"})
	keys := []string{"empty", "one", "many", "merged"}
	queries := func(k string) [][]any {
		return [][]any{{"TDIGEST.INFO", k}, {"TDIGEST.MIN", k}, {"TDIGEST.MAX", k},
			{"TDIGEST.QUANTILE", k, 0, 0.01, 0.5, 0.99, 1}, {"TDIGEST.CDF", k, 0, 7.5, 50, 1000},
			{"TDIGEST.RANK", k, 7.5, 50}, {"TDIGEST.BYREVRANK", k, 0, 5, 100}, {"TDIGEST.TRIMMED_MEAN", k, 0.1, 0.8}}
	}
	for _, dir := range []struct {
		name     string
		from, to *redis.Client
	}{{"RedisBloom to bloom", rc, bc}, {"bloom to RedisBloom", bc, rc}} {
		t.Run(dir.name, func(t *testing.T) {
			rc.FlushAll(ctx)
			bc.FlushAll(ctx)
			for _, c := range setup {
				if err := dir.from.Do(ctx, c...).Err(); err != nil {
					t.Fatalf("%v: %v", c, err)
				}
			}
			for _, k := range keys {
				payload, err := dir.from.Dump(ctx, k).Result()
				if err != nil {
					t.Fatalf("DUMP %s: %v", k, err)
				}
				if err := dir.to.Restore(ctx, k, 0, payload).Err(); err != nil {
					t.Fatalf("RESTORE %s: %v", k, err)
				}
				if typ := dir.to.Type(ctx, k).Val(); typ != "TDIS-TYPE" {
					t.Fatalf("TYPE %s: %s", k, typ)
				}
			}
			for _, k := range keys {
				for _, q := range append(queries(k), []any{"TDIGEST.ADD", k, 1, 2, 3.5}, []any{"TDIGEST.QUANTILE", k, 0.25, 0.75}, []any{"TDIGEST.INFO", k}) {
					a, b := norm(dir.from.Do(ctx, q...).Result()), norm(dir.to.Do(ctx, q...).Result())
					if a != b {
						t.Fatalf("%v after the move: source %s, copy %s", q, a, b)
					}
				}
			}
		})
	}
}

// TestTDigestMergeOverflow: merging a digest into itself until the total
// weight would pass an int64 fails with RedisBloom's error, changes
// nothing (the digest and the memory accounted stay as they were), and
// the log and a replica agree with the master.
func TestTDigestMergeOverflow(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{{"TDIGEST.CREATE d", "+OK"}, {"TDIGEST.ADD d 1 2 3", "+OK"}})
	var failed bool
	for range 80 {
		got := rc.do("TDIGEST.MERGE", "d", "3", "d", "d", "d")
		if got == "-ERR T-Digest: overflow detected" {
			failed = true
			break
		}
		if got != "+OK" {
			t.Fatalf("MERGE: %s", got)
		}
		rc.do("TDIGEST.ADD", "d", "4")
	}
	if !failed {
		t.Fatal("no overflow after 80 merges")
	}
	s.db.Lock()
	used := s.db.Used()
	s.db.Unlock()
	before := tdigests1(t, s, "d")
	if got := rc.do("TDIGEST.MERGE", "d", "3", "d", "d", "d"); got != "-ERR T-Digest: overflow detected" {
		t.Fatalf("MERGE again: %s", got)
	}
	s.db.Lock()
	after := s.db.Used()
	s.db.Unlock()
	if after != used || !tdigests1(t, s, "d").Equal(before) {
		t.Fatalf("a failed merge changed the digest or the memory accounted (%d → %d bytes)", used, after)
	}
	s2 := crashRestart(t, s, Config{})
	if !tdigests1(t, s2, "d").Equal(before) {
		t.Fatal("replay differs")
	}
}

func tdigests1(t *testing.T, s *Server, key string) *tdigest.Digest {
	t.Helper()
	s.db.Lock()
	defer s.db.Unlock()
	e := s.db.Lookup(key)
	if e == nil || e.TD() == nil {
		t.Fatalf("no digest at %s", key)
	}
	return e.TD().Clone()
}

// TestTDigestSnapshotPointInTime: a snapshot holds a digest as it was at
// its point in time although a query (which merges the buffer) and an add
// change it while the snapshot is being written.
func TestTDigestSnapshotPointInTime(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{{"TDIGEST.CREATE d", "+OK"}, {"TDIGEST.ADD d 5 1 4 2 3", "+OK"}, {"SET s x", "+OK"}})
	want := keyspaceImage(t, s)
	s.persist.saveMu.Lock()
	s.db.Lock()
	snap := s.db.BeginSnapshot(1)
	s.db.Unlock()
	runSteps(t, rc, []step{{"TDIGEST.QUANTILE d 0.5", `["3"]`}, {"TDIGEST.ADD d 6", "+OK"}})
	var b bytes.Buffer
	err := s.db.WriteSnapshot(&b, snap)
	s.db.Lock()
	s.db.EndSnapshot(snap)
	s.db.Unlock()
	s.persist.saveMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatal("the snapshot holds the digest as changed after its point in time")
	}
	if in := tdigests1(t, s, "d").Info(); in.MergedNodes == 0 || in.UnmergedNodes != 1 {
		t.Fatalf("the live digest did not change: %+v", in)
	}
}

// A save in the server's own process (SAVE, DEBUG RELOAD, SHUTDOWN)
// merges the buffer of each t-digest first, as RedisBloom's RDB save
// does to the live digest: TDIGEST.INFO after it, and after a restart
// from it, reports every value merged (RedisBloom's flow test
// test_save_load reads "Merged weight" after a restart). With a
// RedisBloom module, real Redis goes through the same steps and answers
// alike.
func TestTDigestSaveMergesBuffer(t *testing.T) {
	ctx := context.Background()
	const unmerged = "[Compression 100 Capacity 610 Merged nodes 0 Unmerged nodes 5 Merged weight 0 Unmerged weight 5 Observations 5 Total compressions 0 Memory usage 9768 ]"
	const merged = "[Compression 100 Capacity 610 Merged nodes 5 Unmerged nodes 0 Merged weight 5 Unmerged weight 0 Observations 5 Total compressions 1 Memory usage 9768 ]"
	run := func(t *testing.T, c *redis.Client, save func()) {
		t.Helper()
		var got []string
		for _, args := range [][]any{{"TDIGEST.CREATE", "d"}, {"TDIGEST.ADD", "d", 1, 2, 3, 4, 5}, {"TDIGEST.INFO", "d"}} {
			got = append(got, norm(c.Do(ctx, args...).Result()))
		}
		save()
		for _, args := range [][]any{{"TDIGEST.INFO", "d"}, {"TDIGEST.MIN", "d"}, {"TDIGEST.MAX", "d"}, {"TDIGEST.QUANTILE", "d", 0.5}} {
			got = append(got, norm(c.Do(ctx, args...).Result()))
		}
		want := []string{"OK", "OK", unmerged, merged, "1", "5", "[3 ]"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	do := func(c *redis.Client, how string) func() {
		var args []any
		for _, w := range strings.Fields(how) {
			args = append(args, w)
		}
		return func() {
			if err := c.Do(ctx, args...).Err(); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
	}
	for _, how := range []string{"SAVE", "DEBUG RELOAD"} {
		t.Run(how, func(t *testing.T) {
			s := startServer(t, Config{EnableDebugCommand: "yes"})
			c := newClient(t, s.Addr(), 2)
			run(t, c, do(c, how))
		})
	}
	t.Run("restart", func(t *testing.T) {
		s := startServer(t, Config{})
		c := newClient(t, s.Addr(), 2)
		run(t, c, func() {
			s = restart(t, s, true)
			*c = *newClient(t, s.Addr(), 2)
		})
	})
	t.Run("RedisBloom", func(t *testing.T) {
		module := redistest.RedisBloomModule(t)
		rs := redistest.Start(t, "--loadmodule", module, "--enable-debug-command", "yes")
		for _, how := range []string{"SAVE", "DEBUG RELOAD"} {
			c := newClient(t, rs.Addr, 2)
			c.FlushAll(ctx)
			run(t, c, do(c, how))
		}
	})
}

// The merges a save makes are logged: a replica's digests stay equal bit
// for bit to its master's, and so do the master's after a crash replays
// its log, although values keep being added after the save.
func TestTDigestSaveMergeLogged(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	r := startReplica(t, s, Config{NoPersistence: true})
	mc, rc := dialRaw(t, s.Addr()), dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	runSteps(t, mc, []step{
		{"TDIGEST.CREATE t0", "+OK"}, {"TDIGEST.ADD t0 5 1 4 2 3", "+OK"},
		{"TDIGEST.CREATE t1 COMPRESSION 90", "+OK"}, {"TDIGEST.ADD t1 9 8", "+OK"},
		{"SAVE", "+OK"},
		{"TDIGEST.ADD t0 7 6", "+OK"}, {"TDIGEST.CREATE t2", "+OK"}, {"TDIGEST.ADD t2 1", "+OK"},
	})
	want := tdigests(t, s)
	if in := want["t0"].Info(); in.MergedNodes != 5 || in.UnmergedNodes != 2 {
		t.Fatalf("t0 after SAVE and two more values: %+v, want 5 merged and 2 buffered", in)
	}
	waitSynced(t, mc, rc)
	sameDigests(t, "replica", want, tdigests(t, r))
	s2 := crashRestart(t, s, Config{})
	sameDigests(t, "after restart", want, tdigests(t, s2))
}
