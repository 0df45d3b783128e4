package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// restoreCases are RESTORE requests (with P standing for a valid string
// payload) whose replies bloom serve gives exactly as Redis 7 does.
func restoreCases(p string) [][]string {
	badCRC := []byte(p)
	badCRC[len(badCRC)-1] ^= 1
	// A valid footer around a value that is not one.
	junk := []byte{0xee, 1, 2, 9, 0}
	crc := rdb.Checksum(0, junk)
	for i := range 8 {
		junk = append(junk, byte(crc>>(8*i)))
	}
	return [][]string{
		{"COMMAND", "INFO", "dump", "restore"},
		{"DUMP", "missing"},
		{"SET", "s", "old"},
		{"RESTORE", "s", "0", p},
		{"RESTORE", "n", "-1", p},
		{"RESTORE", "n", "x", p},
		{"RESTORE", "n", "0", "garbage"},
		{"RESTORE", "n", "0", string(badCRC)},
		{"RESTORE", "n", "0", string(junk)},
		{"RESTORE", "n", "0", p, "BOGUS"},
		{"RESTORE", "n", "0", p, "IDLETIME", "-1"},
		{"RESTORE", "n", "0", p, "IDLETIME", "x"},
		{"RESTORE", "n", "0", p, "FREQ", "256"},
		{"RESTORE", "n", "0", p, "IDLETIME", "1", "FREQ", "2"},
		{"RESTORE", "n", "0", p, "IDLETIME"},
		{"RESTORE", "n"},
		{"DUMP"},
		{"RESTORE", "n", "0", p, "IDLETIME", "5"},
		{"GET", "n"},
		{"RESTORE", "n", "0", p, "REPLACE", "FREQ", "5"},
		{"RESTORE", "s", "1", p, "REPLACE", "ABSTTL"},
		{"EXISTS", "s"},
		{"RESTORE", "e", "1", p, "ABSTTL"},
		{"EXISTS", "e"},
		{"RESTORE", "t", "100000000", p},
		{"EXISTS", "t"},
		{"RESTORE", "a", "99999999999999", p, "ABSTTL"},
		{"EXISTS", "a"},
	}
}

// TestDumpRestoreAsRedis: DUMP and RESTORE answer every request, errors
// included, as Redis 7 does.
func TestDumpRestoreAsRedis(t *testing.T) {
	rs := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true})
	p := string(rdb.DumpString([]byte("hello"), 10))
	ours, theirs := dialRaw(t, s.Addr()), dialRaw(t, rs.Addr)
	for _, req := range restoreCases(p) {
		want := theirs.do(req...)
		if got := ours.do(req...); got != want {
			t.Errorf("%q\n got  %s\n want %s (Redis)", req, got, want)
		}
	}
}

// stringValues covers every encoding a string takes in a DUMP payload.
var stringValues = []string{"", "0", "-1", "127", "-129", "40000", "2147483647", "-2147483649",
	"007", "+1", "hello", strings.Repeat("compressible ", 300), "\x00\xff\x01binary"}

// TestDumpRestoreStringsWithRedis: strings move between Redis and bloom
// serve by DUMP and RESTORE, both ways, with their expiries.
func TestDumpRestoreStringsWithRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true})
	rc, bc := rs.Client(t), redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer bc.Close()
	for i, v := range stringValues {
		k := fmt.Sprintf("k%d", i)
		for _, dir := range []struct {
			name     string
			from, to *redis.Client
		}{{"Redis to bloom serve", rc, bc}, {"bloom serve to Redis", bc, rc}} {
			if err := dir.from.Set(ctx, k, v, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			p, err := dir.from.Dump(ctx, k).Result()
			if err != nil {
				t.Fatalf("%s: DUMP %q: %v", dir.name, v, err)
			}
			if err := dir.to.RestoreReplace(ctx, k, 5*time.Minute, p).Err(); err != nil {
				t.Fatalf("%s: RESTORE %q: %v", dir.name, v, err)
			}
			got, err := dir.to.Get(ctx, k).Result()
			if err != nil || got != v {
				t.Fatalf("%s: %q restored as %q (%v)", dir.name, v, got, err)
			}
			if ttl := dir.to.PTTL(ctx, k).Val(); ttl <= 4*time.Minute || ttl > 5*time.Minute {
				t.Errorf("%s: TTL %v", dir.name, ttl)
			}
		}
	}
	// A type bloom serve does not hold is refused, naming it.
	rc.RPush(ctx, "list", "a")
	p := rc.Dump(ctx, "list").Val()
	if err := bc.Restore(ctx, "list", 0, p).Err(); err == nil || !strings.Contains(err.Error(), "Bad data format") || !strings.Contains(err.Error(), "list") {
		t.Fatalf("RESTORE of a list: %v", err)
	}
}

// TestDumpNativeRefused: one of bloomkit's own filters cannot be a Redis
// value: DUMP says so.
func TestDumpNativeRefused(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.RESERVE", "nat", "0.01", "100", "LAYOUT", "blocked")
	if got := rc.do("DUMP", "nat"); !strings.HasPrefix(got, "-ERR DUMP cannot encode a BKbloom-- key") {
		t.Fatalf("DUMP of a native filter: %s", got)
	}
}

// filterProbe is a request comparing a filter's answers on two servers.
func filterProbe(key string, n int) []any {
	cmd := "BF.MEXISTS"
	if strings.HasPrefix(key, "cf") {
		cmd = "CF.MEXISTS"
	}
	args := []any{cmd, key}
	for i := range n {
		args = append(args, fmt.Sprintf("%s-item-%d", key, i), fmt.Sprintf("probe-%d", i))
	}
	return args
}

// answers runs args and renders the reply (RESP2 and RESP3 alike).
func answers(ctx context.Context, t *testing.T, c *redis.Client, args ...any) string {
	t.Helper()
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args[:2], err)
	}
	s := fmt.Sprint(v)
	return strings.NewReplacer("true", "1", "false", "0").Replace(s)
}

// scandump is a filter's SCANDUMP records.
func scandump(ctx context.Context, t *testing.T, c *redis.Client, key string) [][]byte {
	t.Helper()
	cmd := "BF.SCANDUMP"
	if strings.HasPrefix(key, "cf") {
		cmd = "CF.SCANDUMP"
	}
	var out [][]byte
	for it := int64(0); ; {
		res, err := c.Do(ctx, cmd, key, it).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if it = res[0].(int64); it == 0 {
			return out
		}
		out = append(out, []byte(res[1].(string)))
	}
}

// TestDumpRestoreFiltersWithRedisBloom: RedisBloom filters move between
// Redis + RedisBloom and bloom serve by DUMP and RESTORE, both ways, and
// answer every item and probe alike on both (SCANDUMP byte for byte).
func TestDumpRestoreFiltersWithRedisBloom(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs := redistest.Start(t, "--loadmodule", module)
	s := startServer(t, Config{NoPersistence: true})
	rc, bc := rs.Client(t), redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer bc.Close()
	setup := [][]any{
		{"BF.RESERVE", "bf:reserved", 0.01, 1000},
		{"BF.RESERVE", "bf:scaled", 0.02, 50, "EXPANSION", 3},
		{"BF.RESERVE", "bf:nonscaling", 0.001, 300, "NONSCALING"},
		{"CF.RESERVE", "cf:deleted", 1000},
		{"CF.RESERVE", "cf:expanded", 64, "BUCKETSIZE", 4, "EXPANSION", 2},
	}
	keys := []string{"bf:reserved", "bf:auto", "bf:scaled", "bf:nonscaling", "cf:deleted", "cf:expanded", "cf:auto"}
	for _, from := range []*redis.Client{rc, bc} {
		for _, a := range setup {
			if err := from.Do(ctx, a...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keys {
			n := 400
			if k == "bf:nonscaling" {
				n = 300
			}
			for i := range n {
				cmd := "BF.ADD"
				if strings.HasPrefix(k, "cf") {
					cmd = "CF.ADD"
				}
				if err := from.Do(ctx, cmd, k, fmt.Sprintf("%s-item-%d", k, i)).Err(); err != nil {
					t.Fatalf("%s: %v", k, err)
				}
			}
		}
		for i := range 100 {
			from.Do(ctx, "CF.DEL", "cf:deleted", fmt.Sprintf("cf:deleted-item-%d", i))
		}
	}
	for _, dir := range []struct {
		name     string
		from, to *redis.Client
	}{{"Redis to bloom serve", rc, bc}, {"bloom serve to Redis", bc, rc}} {
		for _, k := range keys {
			p, err := dir.from.Dump(ctx, k).Result()
			if err != nil {
				t.Fatalf("%s: DUMP %s: %v", dir.name, k, err)
			}
			copyKey := k + ":restored"
			if err := dir.to.RestoreReplace(ctx, copyKey, time.Hour, p).Err(); err != nil {
				t.Fatalf("%s: RESTORE %s: %v", dir.name, k, err)
			}
			if ttl := dir.to.TTL(ctx, copyKey).Val(); ttl < 59*time.Minute {
				t.Errorf("%s: %s TTL %v", dir.name, k, ttl)
			}
			want := answers(ctx, t, dir.from, filterProbe(k, 1000)...)
			probe := filterProbe(k, 1000)
			probe[1] = copyKey
			if got := answers(ctx, t, dir.to, probe...); got != want {
				t.Fatalf("%s: %s answers differently after RESTORE", dir.name, k)
			}
			if !slicesEqual(scandump(ctx, t, dir.from, k), scandump(ctx, t, dir.to, copyKey)) {
				t.Fatalf("%s: %s SCANDUMP differs after RESTORE", dir.name, k)
			}
			if info := answers(ctx, t, dir.to, strings.ToUpper(k[:2])+".INFO", copyKey); info != answers(ctx, t, dir.from, strings.ToUpper(k[:2])+".INFO", k) {
				t.Fatalf("%s: %s INFO differs after RESTORE: %s", dir.name, k, info)
			}
		}
	}
	// The filters built alike on both servers hold the same bytes, header
	// included (bits per element as RedisBloom rounds them). (Their DUMP
	// payloads may still differ in how LZF compressed the arrays.)
	for _, k := range keys {
		if a, b := scandump(ctx, t, rc, k), scandump(ctx, t, bc, k); !slicesEqual(a, b) {
			t.Fatalf("%s differs between the servers", k)
		}
	}
}

func slicesEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestRestoreLoggedAsDone: RESTORE is logged as what it did (the absolute
// expiry; a DEL when REPLACE removed a key and the value had expired), so
// a restart and a replica hold what clients saw.
func TestRestoreLoggedAsDone(t *testing.T) {
	m := startServer(t, Config{AppendFsync: "always"})
	r := startReplica(t, m, Config{NoPersistence: true})
	mc, rcn := dialRaw(t, m.Addr()), dialRaw(t, r.Addr())
	mc.do("BF.ADD", "bf", "x")
	p := string(rdb.DumpString([]byte("v"), rdb.DumpVersion))
	m.db.Lock() // a replica's full sync may be reading the filter
	b, err := rdb.DumpModule(rdb.BloomValue{Bloom: m.db.Lookup("bf").BF}, rdb.DumpVersion)
	m.db.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	steps := [][]string{
		{"RESTORE", "rel", "100000", p},
		{"RESTORE", "filter", "0", string(b)},
		{"SET", "gone", "x"},
		{"RESTORE", "gone", "1", p, "REPLACE", "ABSTTL"},
		{"MULTI"}, {"RESTORE", "intx", "0", string(b)}, {"EXEC"},
		{"RESTORE", "v12", "0", string(rdb.DumpString([]byte("from 7.4"), 12))},
	}
	for _, st := range steps {
		if got := mc.do(st...); strings.HasPrefix(got, "-") {
			t.Fatalf("%q: %s", st[:2], got)
		}
	}
	at := expireAt(m, "rel")
	if at == 0 {
		t.Fatal("rel has no expiry")
	}
	if !sameData(t, m, r, mc, rcn) { // expiries included
		t.Fatal("the replica differs from the master after RESTORE")
	}
	// The log holds what RESTORE did: absolute expiries, a DEL, and
	// payloads in the RDB version every Redis from 6.2 restores.
	var logged []string
	f, err := os.Open(filepath.Join(m.cfg.Dir, LogName(1)))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	_, err = aof.ScanLog(f, st.Size(), func(_ int64, cmds [][][]byte) error {
		for _, c := range cmds {
			if strings.EqualFold(string(c[0]), "restore") {
				p := c[3]
				if v := int(p[len(p)-10]) | int(p[len(p)-9])<<8; v != rdb.DumpVersion {
					t.Errorf("RESTORE %s logged with a payload of RDB version %d", c[1], v)
				}
				if _, err := rdb.ParseDump(p, rdb.Options{Modules: rdb.RedisBloomDecoders(nil)}); err != nil {
					t.Errorf("RESTORE %s logged with a payload that does not parse: %v", c[1], err)
				}
			}
			logged = append(logged, string(c[0])+" "+string(c[1]))
		}
		return nil
	})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(logged, ","); got != "BF.ADD bf,RESTORE rel,RESTORE filter,SET gone,DEL gone,RESTORE intx,RESTORE v12" {
		t.Errorf("logged: %s", got)
	}
	m2 := restart(t, m, false)
	c2 := dialRaw(t, m2.Addr())
	for _, want := range [][2]string{
		{"EXISTS gone", ":0"}, {"EXISTS filter", ":1"}, {"EXISTS intx", ":1"},
		{"BF.EXISTS filter x", ":1"}, {"GET v12", `"from 7.4"`},
	} {
		if got := c2.do(strings.Fields(want[0])...); got != want[1] {
			t.Errorf("after restart %s: %s, want %s", want[0], got, want[1])
		}
	}
	if got := expireAt(m2, "rel"); got != at {
		t.Errorf("after restart rel expires at %d, before at %d", got, at)
	}
}

// expireAt is key's absolute expiry on s (0: none or missing).
func expireAt(s *Server, key string) int64 {
	s.db.Lock()
	defer s.db.Unlock()
	if e := s.db.Lookup(key); e != nil {
		return e.ExpireAt
	}
	return 0
}

// brokenChain writes a two-link Bloom chain whose second link's hash
// count does not match its bits per element: the first link is
// allocated before the second is found wrong.
type brokenChain struct{}

func (brokenChain) ModuleType() (string, int) { return "MBbloom--", 4 }

func (brokenChain) EncodeModule(m *rdb.ModuleWriter) error {
	m.SaveUnsigned(0) // items
	m.SaveUnsigned(2) // links
	m.SaveUnsigned(redisbloomOptions)
	m.SaveUnsigned(2) // growth
	for _, hashes := range []uint64{7, 99} {
		m.SaveUnsigned(1000)             // entries
		m.SaveDouble(0.01)               // error
		m.SaveUnsigned(hashes)           // ceil(ln2 × bpe) is 7
		m.SaveDouble(9.585058377367446)  // bpe at 0.01
		m.SaveUnsigned(9600)             // bits
		m.SaveUnsigned(0)                // n2
		m.SaveString(make([]byte, 1200)) // bytes
		m.SaveUnsigned(0)                // items
	}
	return nil
}

// redisbloomOptions is NOROUND | FORCE64, as RedisBloom creates chains.
const redisbloomOptions = 1 | 4

// TestRestoreMaxMemory: a filter's arrays count against maxmemory as
// RESTORE allocates them; a payload refused (over the limit, or found
// bad after arrays were allocated) leaves the accounting as it was.
func TestRestoreMaxMemory(t *testing.T) {
	src := startServer(t, Config{NoPersistence: true})
	sc := dialRaw(t, src.Addr())
	mustDo(t, sc, "+OK", "BF.RESERVE", "big", "0.001", "300000")
	src.db.Lock()
	big, err := rdb.DumpModule(rdb.BloomValue{Bloom: src.db.Lookup("big").BF}, rdb.DumpVersion)
	src.db.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	broken, err := rdb.DumpModule(brokenChain{}, rdb.DumpVersion)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 256 << 10})
	rc := dialRaw(t, s.Addr())
	used := func() uint64 {
		s.db.Lock()
		defer s.db.Unlock()
		return s.db.Used()
	}
	before := used()
	if got := rc.do("RESTORE", "big", "0", string(big)); got != "-"+errOOMCommand {
		t.Fatalf("RESTORE over maxmemory: %s", got)
	}
	if got := rc.do("RESTORE", "broken", "0", string(broken)); got != "-ERR Bad data format" {
		t.Fatalf("RESTORE of a bad chain: %s", got)
	}
	if after := used(); after != before {
		t.Fatalf("used memory %d before, %d after the refused RESTOREs", before, after)
	}
	if got := rc.do("DBSIZE"); got != ":0" {
		t.Fatalf("DBSIZE %s", got)
	}
}
