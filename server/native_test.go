package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/redis/go-redis/v9"
)

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Set(t time.Time) {
	f.mu.Lock()
	f.t = t
	f.mu.Unlock()
}

func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// pullFile reassembles a key's SCANDUMP into a bloomkit file (the dump
// plus the CRC-32C trailer), as `bloom pull` does.
func pullFile(t *testing.T, c *redis.Client, key string) []byte {
	t.Helper()
	ctx := context.Background()
	var file []byte
	it := int64(0)
	for {
		d, err := c.BFScanDump(ctx, key, it).Result()
		if err != nil {
			t.Fatalf("BF.SCANDUMP %s %d: %v", key, it, err)
		}
		if d.Iter == 0 {
			break
		}
		file = append(file, d.Data...)
		it = d.Iter
	}
	// The header's payload length says where the file ends: the counts
	// chunk after it is the server's.
	if len(file) < 80 {
		t.Fatalf("dump of %s: %d bytes", key, len(file))
	}
	end := 80 + binary.LittleEndian.Uint64(file[64:])
	if uint64(len(file)) < end {
		t.Fatalf("dump of %s: %d bytes, the header says %d", key, len(file), end)
	}
	file = file[:end]
	return binary.LittleEndian.AppendUint32(file, crc32.Checksum(file, crc32.MakeTable(crc32.Castagnoli)))
}

func goRedis(t *testing.T, s *Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

func madd(t *testing.T, c *redis.Client, key string, items ...string) []bool {
	t.Helper()
	args := make([]any, len(items))
	for i, it := range items {
		args[i] = it
	}
	res, err := c.BFMAdd(context.Background(), key, args...).Result()
	if err != nil {
		t.Fatalf("BF.MADD %s: %v", key, err)
	}
	return res
}

func items(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(prefix, i))
	}
	return out
}

// A native key sets exactly the bits the library's filter sets: pulled as
// a file it is byte for byte the library filter built with the same
// parameters, seed and keys (at the same times, for a window), and
// bloom.Read reads it back.
func TestNativeMatchesLibrary(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 250_000_000)
	clock := newFakeClock(t0)
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	c := goRedis(t, s)
	ctx := context.Background()
	keys := items("key-", 0, 3000)

	lib := map[string]interface {
		Add([]byte)
		io.WriterTo
	}{}
	pb := bloom.EstimateBlocked(5000, 0.01)
	pb.Seed = 42
	blocked, err := bloom.NewBlockedFromParams(pb)
	if err != nil {
		t.Fatal(err)
	}
	lib["blocked"] = blocked
	pc := bloom.Estimate(5000, 0.01)
	pc.Seed = 43
	classic, err := bloom.NewFromParams(pc)
	if err != nil {
		t.Fatal(err)
	}
	lib["classic"] = classic
	window, err := bloom.NewWindowWith(bloom.WindowConfig{Window: 4 * time.Second, Items: 5000, Rate: 0.01, Generations: 4, Seed: 44, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	lib["window"] = window
	for _, cmd := range []string{
		"BF.RESERVE blocked 0.01 5000 LAYOUT blocked SEED 42",
		"BF.RESERVE classic 0.01 5000 LAYOUT classic SEED 43",
		"BF.RESERVE window 0.01 5000 WINDOW 4s GENERATIONS 4 SEED 44",
	} {
		if err := c.Do(ctx, strArgs(cmd)...).Err(); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	// Keys arrive over 9 s: the window rotates (and forgets) on the way.
	for i := 0; i < len(keys); i += 100 {
		batch := keys[i : i+100]
		for name, f := range lib {
			got := madd(t, c, name, batch...)
			if len(got) != len(batch) {
				t.Fatalf("%s: %d replies", name, len(got))
			}
			for _, k := range batch {
				f.Add([]byte(k))
			}
		}
		clock.Add(300 * time.Millisecond)
	}
	for name, f := range lib {
		want, err := fileBytes(f)
		if err != nil {
			t.Fatal(err)
		}
		got := pullFile(t, c, name)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: pulled file (%d bytes) differs from the library's (%d bytes)", name, len(got), len(want))
			continue
		}
		tester, err := bloom.Read(bytes.NewReader(got))
		if err != nil {
			t.Errorf("%s: bloom.Read: %v", name, err)
			continue
		}
		if name != "window" && !tester.Test([]byte(keys[0])) {
			t.Errorf("%s: read back, the first key is missing", name)
		}
	}
	// go-redis's BF.INFO helper reads native keys (it skips the fields it
	// does not know, and fails on a null expansion rate, so it is 0).
	for name := range lib {
		info, err := c.BFInfo(ctx, name).Result()
		if err != nil || info.Capacity != 5000 || info.ItemsInserted == 0 || info.Size == 0 {
			t.Errorf("%s: go-redis BFInfo: %+v %v", name, info, err)
		}
	}
	// The server answers as the library does, hits and misses alike.
	for name := range lib {
		probe := append(items("key-", 2500, 3000), items("absent-", 0, 500)...)
		args := make([]any, len(probe))
		for i, p := range probe {
			args[i] = p
		}
		got, err := c.BFMExists(ctx, name, args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		var tester interface{ Test([]byte) bool }
		switch f := lib[name].(type) {
		case *bloom.Blocked:
			tester = f
		case *bloom.Filter:
			tester = f
		case *bloom.Window:
			tester = f
		}
		for i, p := range probe {
			if got[i] != tester.Test([]byte(p)) {
				t.Errorf("%s: BF.EXISTS %s = %v, the library says %v", name, p, got[i], !got[i])
			}
		}
	}
}

func strArgs(cmd string) []any {
	w := strings.Fields(cmd)
	out := make([]any, len(w))
	for i, x := range w {
		out[i] = x
	}
	return out
}

// The window's promise over the wire: an item added at t tests present
// until t+T and absent from t+T+T/G on; reads change nothing; BF.CARD and
// BF.INFO report the window.
func TestNativeWindowExpiry(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0) // a generation boundary (d = 1 s)
	clock := newFakeClock(t0.Add(500 * time.Millisecond))
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.RESERVE seen 0.01 1000 WINDOW 4s GENERATIONS 4 SEED 1", "+OK"},
		{"BF.ADD seen x", ":1"},
		{"BF.ADD seen x", ":0"},
		{"BF.MADD seen y z", "[:1 :1]"},
		{"BF.CARD seen", ":3"},
		{"BF.INFO seen layout", "[\"window\"]"},
		{"BF.INFO seen window", "[:4000]"},
		{"BF.INFO seen generations", "[:4]"},
		{"BF.INFO seen generation", "[:1800000000000]"},
		{"BF.INFO seen expansion", "[:0]"},
		{"TYPE seen", "+BKbloom--"},
	})
	clock.Set(t0.Add(4500 * time.Millisecond)) // exactly t+T
	runSteps(t, rc, []step{
		{"BF.EXISTS seen x", ":1"},
		{"BF.INFO seen generation", "[:1800000004000]"},
		{"BF.ADD seen w", ":1"}, // moves the window to generation 4: x's is the oldest kept
		{"BF.EXISTS seen x", ":1"},
	})
	clock.Set(t0.Add(5 * time.Second)) // t+T+T/G - 0.5 s: x's generation has just expired
	runSteps(t, rc, []step{
		{"BF.MEXISTS seen x y z w", "[:0 :0 :0 :1]"},
		{"BF.CARD seen", ":1"},
	})
	// A read-only window: nothing moves, yet nothing is resurrected.
	clock.Set(t0.Add(time.Hour))
	runSteps(t, rc, []step{
		{"BF.EXISTS seen w", ":0"},
		{"BF.CARD seen", ":0"},
		{"BF.ADD seen w", ":1"},
	})
	// The clock going back: the window stands still (keys are kept).
	clock.Set(t0)
	runSteps(t, rc, []step{{"BF.EXISTS seen w", ":1"}})
}

// Errors of the native options, and the types around them.
func TestNativeErrors(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.RESERVE a 0.01 100 LAYOUT blocked EXPANSION 2", "-ERR LAYOUT and WINDOW filters do not grow: EXPANSION is not allowed"},
		{"BF.RESERVE a 0.01 100 LAYOUT cuckoo", "-ERR LAYOUT must be blocked or classic"},
		{"BF.RESERVE a 0.01 100 LAYOUT", "-ERR LAYOUT needs a value"},
		{"BF.RESERVE a 0.01 100 GENERATIONS 4", "-ERR GENERATIONS and START need WINDOW"},
		{"BF.RESERVE a 0.01 100 WINDOW 1h START 99999999999", "-ERR generation is ahead of the server's clock"},
		{"BF.RESERVE a 0.01 100 WINDOW 1h GENERATIONS 65", "-ERR GENERATIONS must be in the range [1, 64]"},
		{"BF.RESERVE a 0.01 100 WINDOW 0s", "-ERR WINDOW must be a duration from 1ms to 100 years (24h, 90m, 500ms, or seconds)"},
		{"BF.RESERVE a 0.01 100 WINDOW 1h LAYOUT classic", "-ERR WINDOW filters use the blocked layout"},
		{"BF.RESERVE a 0.01 100 SEED -1", "-ERR SEED must be random or an integer in the range [0, 18446744073709551615]"},
		{"BF.RESERVE a 0.01 100 SEED 1 FOO", "-ERR unknown argument 'FOO'"},
		{"BF.RESERVE a 2 100 SEED 1", "-ERR error rate must be in the range (0.000000, 1.000000)"},
		{"BF.RESERVE a 0.01 0 SEED 1", "-ERR capacity must be in the range [1, 1099511627776] for LAYOUT and WINDOW filters"},
		{"BF.RESERVE a 0.01 100 LAYOUT blocked NONSCALING", "+OK"},
		{"BF.RESERVE big 0.01 100 SEED 18446744073709551615", "+OK"},
		{"BF.INFO big seed", "[\"18446744073709551615\"]"},
		{"BF.RESERVE a 0.01 100 LAYOUT blocked", "-ERR item exists"},
		{"BF.RESERVE w 0.01 100 WINDOW 3600", "+OK"},
		{"BF.INFO w window", "[:3600000]"},
		{"CF.ADD a x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.ADVANCE a 1", "-ERR BF.ADVANCE needs a WINDOW filter"},
		{"BF.ADVANCE w 99999999999999", "-ERR generation is ahead of the server's clock"},
		{"BF.ADVANCE w 1", ":0"},
		{"SET s v", "+OK"},
		{"BF.ADD s x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.MERGE a w", "-" + strings.TrimPrefix(errMergeShape, "-")},
		{"BF.RESERVE rb 0.01 100", "+OK"},
		{"BF.MERGE a rb", "-" + strings.TrimPrefix(errMergeShape, "-")},
		{"BF.MERGE rb a", "-" + strings.TrimPrefix(errMergeShape, "-")},
		{"BF.LOADCHUNK a 999999999 xxxxxxxx", "-ERR invalid chunk: outside the filter's arrays"},
		{"BF.LOADCHUNK a 0 x", "-ERR invalid iterator"},
		{"BF.LOADCHUNK n 1 bloomkitxxxx", "-ERR a bloomkit header is 80 bytes, got 12"},
	})
	// The seed is random unless given, and differs between keys.
	runSteps(t, rc, []step{{"BF.RESERVE r1 0.01 100", "+OK"}})
	rc.do("BF.RESERVE", "r2", "0.01", "100", "SEED", "random")
	rc.do("BF.RESERVE", "r3", "0.01", "100", "LAYOUT", "blocked")
	s1, s3 := rc.do("BF.INFO", "r2", "seed"), rc.do("BF.INFO", "r3", "seed")
	if s1 == s3 || !strings.HasPrefix(s1, "[\"") {
		t.Errorf("random seeds: %s and %s", s1, s3)
	}
	if got := rc.do("BF.INFO", "r1", "layout"); got != "-Invalid information value" {
		t.Errorf("a RedisBloom key has no layout field: %s", got)
	}
}

// BF.MERGE of native keys is the library's Union; windows are merged
// generation by generation after being moved to one clock.
func TestNativeMerge(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := newFakeClock(t0)
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	c := goRedis(t, s)
	ctx := context.Background()
	for _, cmd := range []string{
		"BF.RESERVE d1 0.01 10000 LAYOUT blocked SEED 5",
		"BF.RESERVE d2 0.01 10000 LAYOUT blocked SEED 5",
		"BF.RESERVE d3 0.01 10000 LAYOUT blocked SEED 6",
		"BF.RESERVE w1 0.01 1000 WINDOW 4s SEED 9",
		"BF.RESERVE w2 0.01 1000 WINDOW 4s SEED 9",
	} {
		if err := c.Do(ctx, strArgs(cmd)...).Err(); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	p := bloom.EstimateBlocked(10000, 0.01)
	p.Seed = 5
	u, _ := bloom.NewBlockedFromParams(p)
	for i, k := range items("m", 0, 4000) {
		key := "d1"
		if i%2 == 1 {
			key = "d2"
		}
		madd(t, c, key, k)
		u.Add([]byte(k))
	}
	if err := c.Do(ctx, "BF.MERGE", "both", "d1", "d2").Err(); err != nil {
		t.Fatal(err)
	}
	want, _ := fileBytes(u)
	if got := pullFile(t, c, "both"); !bytes.Equal(got, want) {
		t.Error("BF.MERGE of two blocked keys differs from the library's union")
	}
	card := c.BFCard(ctx, "both").Val()
	if card < 3900 || card > 4100 {
		t.Errorf("BF.CARD of the union of 2 × 2000 keys: %d", card)
	}
	// d1 is inside both already: merging it again counts nothing twice.
	if err := c.Do(ctx, "BF.MERGE", "both", "d1").Err(); err != nil {
		t.Fatal(err)
	}
	if again := c.BFCard(ctx, "both").Val(); again != card {
		t.Errorf("BF.CARD after merging a subset: %d, before %d", again, card)
	}
	if err := c.Do(ctx, "BF.MERGE", "d1", "d3").Err(); err == nil || !strings.Contains(err.Error(), "identical parameters") {
		t.Errorf("merging keys with different seeds: %v", err)
	}
	// Windows: w1 gets "old" now and "new" 3 s later; w2 is idle.
	madd(t, c, "w1", "old")
	clock.Add(3 * time.Second)
	madd(t, c, "w2", "new")
	if err := c.Do(ctx, "BF.MERGE", "w", "w1", "w2").Err(); err != nil {
		t.Fatal(err)
	}
	got, _ := c.BFMExists(ctx, "w", "old", "new", "never").Result()
	if fmt.Sprint(got) != "[true true false]" {
		t.Errorf("merged window: %v", got)
	}
	clock.Add(2 * time.Second) // "old" expires (t+T+T/G), "new" stays
	got, _ = c.BFMExists(ctx, "w", "old", "new").Result()
	if fmt.Sprint(got) != "[false true]" {
		t.Errorf("merged window after 5 s: %v", got)
	}
}

// Rotation is persisted through the log: replay moves a window exactly
// where it moved (BF.ADVANCE records), never by the replaying server's
// clock, and never twice; snapshots keep the start times. Restarts from
// the log and from a snapshot answer as the server did before.
func TestNativePersistence(t *testing.T) {
	for _, save := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", save), func(t *testing.T) {
			t0 := time.Unix(1_800_000_000, 0)
			clock := newFakeClock(t0)
			dir := t.TempDir()
			start := func() *Server {
				return startServer(t, Config{Dir: dir, AppendFsync: "always", Now: clock.Now})
			}
			s := start()
			rc := dialRaw(t, s.Addr())
			runSteps(t, rc, []step{
				{"BF.RESERVE w 0.01 1000 WINDOW 4s", "+OK"},
				{"BF.RESERVE b 0.001 1000 LAYOUT blocked", "+OK"},
				{"BF.RESERVE c 0.001 1000 LAYOUT classic SEED 3", "+OK"},
				{"BF.ADD w first", ":1"},
				{"BF.MADD b x y", "[:1 :1]"},
				{"BF.ADD c x", ":1"},
			})
			for i := 0; i < 6; i++ { // rotations, logged
				clock.Add(time.Second)
				rc.do("BF.ADD", "w", fmt.Sprint("s", i))
			}
			rc.do("MULTI")
			rc.do("BF.ADD", "w", "in-multi")
			rc.do("BF.MERGE", "m", "b")
			rc.do("EXEC")
			keys := []string{"w", "b", "c", "m"}
			probe := []string{"BF.MEXISTS", "w", "first", "s0", "s1", "s2", "s3", "s4", "s5", "in-multi"}
			before := rc.do(probe...)
			// At generation 6 the live ones are 2…6: s1 on.
			if before != "[:0 :0 :1 :1 :1 :1 :1 :1]" {
				t.Fatalf("before restart: %s", before)
			}
			dumps := dumpAll(t, s, &Session{authed: true}, keys...)
			cards := rc.do("BF.CARD", "w")
			var s2 *Server
			if save {
				if err := s.Shutdown(); err != nil {
					t.Fatal(err)
				}
			} else {
				s.Close()
			}
			// Down for a day: replay must not move the window by this
			// clock; reads skip what expired; the dump is unchanged.
			clock.Add(24 * time.Hour)
			s2 = start()
			rc2 := dialRaw(t, s2.Addr())
			after := dumpAll(t, s2, &Session{authed: true}, keys...)
			for _, k := range keys {
				if after[k] != dumps[k] {
					t.Errorf("key %s differs after the restart", k)
				}
			}
			if got := rc2.do(probe...); got != "[:0 :0 :0 :0 :0 :0 :0 :0]" {
				t.Errorf("a day later: %s", got)
			}
			clock.Add(-24 * time.Hour)
			if got := rc2.do(probe...); got != before {
				t.Errorf("at the time of the restart: %s, want %s", got, before)
			}
			if got := rc2.do("BF.CARD", "w"); got != cards {
				t.Errorf("BF.CARD: %s, want %s", got, cards)
			}
			runSteps(t, rc2, []step{{"BF.MEXISTS b x y nope", "[:1 :1 :0]"}, {"BF.MEXISTS m x y", "[:1 :1]"}, {"BF.EXISTS c x", ":1"}})
			// A second restart replays the same records again: same state.
			s2.Close()
			s3 := start()
			if got := dumpAll(t, s3, &Session{authed: true}, keys...); got["w"] != dumps["w"] {
				t.Error("window differs after a second replay")
			}
		})
	}
}

// A snapshot of native keys is their state when it started, while writes,
// rotations (which swap arrays) and merges go on as the writer works.
func TestNativeSnapshotIsPointInTime(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := newFakeClock(t0)
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	c := &Session{authed: true}
	must := func(want string, args ...string) {
		t.Helper()
		if got := doArgs(s, c, args...); !strings.HasPrefix(got, want) {
			t.Fatalf("%v: %q, want %q", args, got, want)
		}
	}
	must("+OK", strings.Fields("BF.RESERVE big 0.001 2000000 LAYOUT blocked SEED 1")...) // 3.6 MB
	// Generations of 2.3 MB: rotating swaps in fresh arrays.
	must("+OK", strings.Fields("BF.RESERVE win 0.001 1000000 WINDOW 4s SEED 2")...)
	must("+OK", strings.Fields("BF.RESERVE small 0.01 1000 LAYOUT classic SEED 3")...)
	for i := 0; i < 20000; i++ {
		doArgs(s, c, "BF.ADD", "big", fmt.Sprint("a", i))
		doArgs(s, c, "BF.ADD", "win", fmt.Sprint("a", i))
	}
	doArgs(s, c, "BF.ADD", "small", "a")
	keys := []string{"big", "win", "small"}
	want := dumpAll(t, s, c, keys...)

	rs := startSnapshot(s)
	rs.read(t, 300<<10)
	for i := 0; i < 20000; i++ {
		doArgs(s, c, "BF.ADD", "big", fmt.Sprint("b", i))
	}
	clock.Add(10 * time.Second) // every generation of win expires
	for i := 0; i < 2000; i++ {
		doArgs(s, c, "BF.ADD", "win", fmt.Sprint("b", i))
	}
	must("+OK", "BF.MERGE", "small", "small")
	doArgs(s, c, "BF.ADD", "small", "b")
	data := rs.finish(t)
	if rs.snap.copied.Load() == 0 {
		t.Error("no chunk was copied on write: the test did not race the writer")
	}
	holdsPointInTime(t, data, clock.Now, want, keys...)
}

// A dump taken with BF.SCANDUMP loads back with BF.LOADCHUNK into a new
// key (of this or another server), which answers identically.
func TestNativeDumpLoad(t *testing.T) {
	clock := newFakeClock(time.Unix(1_800_000_000, 0))
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	c := goRedis(t, s)
	ctx := context.Background()
	for _, cmd := range []string{
		"BF.RESERVE b 0.01 3000000 LAYOUT blocked", // 3.6 MB: four chunks
		"BF.RESERVE w 0.01 1000 WINDOW 1h GENERATIONS 3",
	} {
		if err := c.Do(ctx, strArgs(cmd)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	in := items("k", 0, 5000)
	madd(t, c, "b", in...)
	madd(t, c, "w", in...)
	for _, key := range []string{"b", "w"} {
		var chunks []redis.ScanDump
		for it := int64(0); ; {
			d, err := c.BFScanDump(ctx, key, it).Result()
			if err != nil {
				t.Fatal(err)
			}
			if d.Iter == 0 {
				break
			}
			chunks = append(chunks, d)
			it = d.Iter
		}
		if key == "b" && len(chunks) != 6 {
			t.Errorf("%d chunks for a 3.6 MB filter, want the header, 4 and the counts", len(chunks))
		}
		for _, d := range chunks {
			if err := c.BFLoadChunk(ctx, key+"-copy", d.Iter, d.Data).Err(); err != nil {
				t.Fatalf("BF.LOADCHUNK %s-copy %d: %v", key, d.Iter, err)
			}
		}
		if !bytes.Equal(pullFile(t, c, key), pullFile(t, c, key+"-copy")) {
			t.Errorf("%s: the loaded copy differs", key)
		}
		if a, b := c.BFCard(ctx, key).Val(), c.BFCard(ctx, key+"-copy").Val(); a != b {
			t.Errorf("%s: BF.CARD %d, of the copy %d", key, a, b)
		}
		// Without the counts chunk (a file), BF.CARD is estimated.
		for _, d := range chunks[:len(chunks)-1] {
			if err := c.BFLoadChunk(ctx, key+"-file", d.Iter, d.Data).Err(); err != nil {
				t.Fatal(err)
			}
		}
		card, _ := c.BFCard(ctx, key+"-file").Result()
		if card < 4800 || card > 5200 {
			t.Errorf("%s: BF.CARD of a loaded file of 5000 keys: %d", key, card)
		}
		// … as the library estimates it from the same bits.
		f, err := bloom.Read(bytes.NewReader(pullFile(t, c, key+"-file")))
		if err != nil {
			t.Fatal(err)
		}
		if want := f.(interface{ Stats() bloom.Stats }).Stats().ApproxCount; uint64(card) != want {
			t.Errorf("%s: BF.CARD of a loaded file %d, the library's estimate %d", key, card, want)
		}
		ex, _ := c.BFExists(ctx, key+"-copy", "k4999").Result()
		if !ex {
			t.Errorf("%s: loaded copy misses a key", key)
		}
	}
}

// kill -9 in the middle of acknowledged writes to a window key, a blocked
// key and merges into a third: after a restart every acknowledged item is
// present in each, and the window kept its generations.
func TestNativeCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := bloomBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	srv := startBinary(t, bin, dir, addr, "--appendfsync", "always")
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2})
	defer c.Close()
	for _, cmd := range []string{
		"BF.RESERVE win 0.01 100000 WINDOW 1h GENERATIONS 2",
		"BF.RESERVE blk 0.01 100000 LAYOUT blocked SEED 11",
		"BF.RESERVE merged 0.01 100000 LAYOUT blocked SEED 11",
	} {
		if err := c.Do(ctx, strArgs(cmd)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var acked []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			item := fmt.Sprint("item-", i)
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.BFAdd(ctx, "win", item)
				p.BFAdd(ctx, "blk", item)
				if i%50 == 49 {
					p.Do(ctx, "BF.MERGE", "merged", "blk")
				}
				return nil
			})
			if err != nil {
				return // the server died
			}
			if i%50 == 49 {
				mu.Lock()
				acked = append(acked, item)
				mu.Unlock()
			}
			mu.Lock()
			acked = append(acked, "win+blk:"+item)
			mu.Unlock()
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n > 800 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := srv.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	srv.Wait()
	<-done
	addr2 := freePort(t)
	startBinary(t, bin, dir, addr2)
	c2 := redis.NewClient(&redis.Options{Addr: addr2, Protocol: 2})
	defer c2.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	lost := 0
	var merges int
	for _, a := range acked {
		keys := []string{"merged"}
		item := a
		if rest, ok := strings.CutPrefix(a, "win+blk:"); ok {
			keys, item = []string{"win", "blk"}, rest
		} else {
			merges++
		}
		for _, k := range keys {
			if ok, err := c2.BFExists(ctx, k, item).Result(); err != nil || !ok {
				lost++
				if lost < 5 {
					t.Errorf("acknowledged %s in %s lost (%v)", item, k, err)
				}
			}
		}
	}
	t.Logf("%d acknowledged transactions (%d with a merge) before kill -9; %d lost", len(acked)-merges, merges, lost)
	if typ := c2.Type(ctx, "win").Val(); typ != "BKbloom--" {
		t.Errorf("TYPE win after restart: %s", typ)
	}
}

// fileBytes returns f in the bloomkit file format.
func fileBytes(f io.WriterTo) ([]byte, error) {
	var b bytes.Buffer
	_, err := f.WriteTo(&b)
	return b.Bytes(), err
}
