package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// windowHeader is a bloomkit window file's header chunk (what BF.SCANDUMP
// 0 returns) with the given period, generations and start times, for a
// generation of m bits.
func windowHeader(m uint64, period int64, gens uint32, starts ...int64) []byte {
	h := format.Header{Type: format.TypeWindow, Seed: 1, M: m, K: 3, N: 10, P: 0.01}
	h.PayloadLen = m/8*uint64(len(starts)) + 16 + 8*uint64(len(starts))
	b := h.Marshal()
	b = binary.LittleEndian.AppendUint64(b, uint64(period))
	b = binary.LittleEndian.AppendUint32(b, gens)
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, st := range starts {
		b = binary.LittleEndian.AppendUint64(b, uint64(st))
	}
	return b
}

// within runs f and fails the test if it does not return in 10 s (the
// command would hold the keyspace lock forever).
func within(t *testing.T, what string, f func() string) string {
	t.Helper()
	done := make(chan string, 1)
	go func() { done <- f() }()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s does not return", what)
		return ""
	}
}

// A forged window header whose newest generation is at the end of int64
// time is refused: accepted, every loop over its generations (BF.INFO,
// BF.CARD, BF.SCANDUMP, snapshots) ran forever with the keyspace locked.
// Start times that wrap around int64 are refused too.
func TestNativeLoadChunkWindowStartsInRange(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	const max = math.MaxInt64
	for name, hdr := range map[string][]byte{
		"newest generation at MaxInt64": windowHeader(512, 1, 1, max-1, max),
		"start times wrap":              windowHeader(512, 2, 1, max-1, math.MinInt64+1),
		"64 generations at the end":     windowHeader(512, 4096, 64, seq(max/64-64, 65, 64)...),
	} {
		got := within(t, "BF.LOADCHUNK", func() string { return doArgs(s, c, "BF.LOADCHUNK", "f", "1", string(hdr)) })
		if !strings.HasPrefix(got, "-ERR window header: start times out of range") {
			t.Errorf("%s: %q", name, got)
			doArgs(s, c, "DEL", "f")
		}
	}
	// The last generations that fit are accepted, and answer.
	hdr := windowHeader(512, 4096, 64, seq(max/64-65, 65, 64)...)
	if got := doArgs(s, c, "BF.LOADCHUNK", "ok", "1", string(hdr)); got != "+OK\r\n" {
		t.Fatalf("the newest window that fits: %q", got)
	}
	for _, cmd := range [][]string{{"BF.INFO", "ok"}, {"BF.CARD", "ok"}, {"BF.SCANDUMP", "ok", "0"}, {"BF.DEBUG", "ok"}, {"BF.ADD", "ok", "x"}} {
		within(t, cmd[0], func() string { return doArgs(s, c, cmd...) })
	}
}

// seq is n generation start times: first·step, (first+1)·step, ….
func seq(first int64, n int, step int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = (first + int64(i)) * step
	}
	return out
}

// START is refused when the window's start times would not fit in int64
// nanoseconds: accepted, the start times overflowed and the next snapshot
// could not be read back — the server refused to start.
func TestNativeStartInRange(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, Config{Dir: dir, AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	// WINDOW 1ms GENERATIONS 1: a generation is 1 ms, so generation g
	// starts at g·10^6 ns; the oldest kept is START-1.
	first := int64(math.MinInt64/1_000_000) + 1 // the oldest START that fits
	runSteps(t, rc, []step{
		{fmt.Sprint("BF.RESERVE bad 0.01 100 WINDOW 1ms GENERATIONS 1 START ", first-1), "-" + errGenRange},
		{"BF.RESERVE worse 0.01 100 WINDOW 1ms GENERATIONS 1 START -9223372036854775808", "-" + errGenRange},
		{fmt.Sprint("BF.RESERVE edge 0.01 100 WINDOW 1ms GENERATIONS 1 START ", first), "+OK"},
		{"BF.ADD edge x", ":1"},
		{"SAVE", "+OK"},
	})
	want := dumpAll(t, s, &Session{authed: true}, "edge")
	s.Close()
	s2 := startServer(t, Config{Dir: dir})
	if got := dumpAll(t, s2, &Session{authed: true}, "edge"); got["edge"] != want["edge"] {
		t.Error("the window differs after a restart from its snapshot")
	}
}

// A log record moving a window past the end of int64 time (no server logs
// one; a damaged or forged log can hold one) stops start-up with an error
// instead of looping forever.
func TestNativeReplayAdvanceInRange(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{{"BF.RESERVE w 0.01 100 WINDOW 1ms GENERATIONS 1", "+OK"}})
	s.Close()
	path := filepath.Join(s.cfg.Dir, LogName(1))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Seek(0, io.SeekEnd)
	f.Write(aof.EncodeRecord(nil, [][]byte{[]byte("BF.ADVANCE"), []byte("w"), []byte("9223372036854775807")}))
	f.Close()
	got := within(t, "start-up", func() string {
		_, err := New(Config{Dir: s.cfg.Dir, Logger: quietLogger()})
		return fmt.Sprint(err)
	})
	if !strings.Contains(got, errGenRange[4:]) {
		t.Fatalf("New with a BF.ADVANCE past the end of time: %v", got)
	}
}

// Replaying a BF.MERGE of windows moves them where the merge moved them
// (the BF.ADVANCE records before it), not to the replaying server's
// clock: replayed a day later, the merge emptied generations that were
// live when it ran and the adds after it landed in a later generation, so
// they lived longer than they should and the keys differed from before.
func TestNativeMergeReplay(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := newFakeClock(t0)
	dir := t.TempDir()
	s := startServer(t, Config{Dir: dir, AppendFsync: "always", Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.RESERVE w1 0.01 1000 WINDOW 4s SEED 9", "+OK"},
		{"BF.RESERVE w2 0.01 1000 WINDOW 4s SEED 9", "+OK"},
		{"BF.ADD w1 a", ":1"},
	})
	clock.Add(2 * time.Second)
	runSteps(t, rc, []step{
		{"BF.ADD w2 b", ":1"},
		{"BF.MERGE m w1 w2", "+OK"},
		{"BF.MERGE w1 w2", "+OK"},
		{"BF.ADD m c", ":1"},
	})
	keys := []string{"w1", "w2", "m"}
	want := dumpAll(t, s, &Session{authed: true}, keys...)
	s.Close()
	clock.Add(24 * time.Hour)
	s2 := startServer(t, Config{Dir: dir, Now: clock.Now})
	got := dumpAll(t, s2, &Session{authed: true}, keys...)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("window %s differs after replaying the log a day later", k)
		}
	}
}

// --maxmemory's running count of native keys matches a recount after
// every kind of change: create, merge into a new key, LOADCHUNK, rotation,
// RENAME, expiry, DEL, FLUSHALL; and a native key that would not fit is
// refused, whichever way it is created.
func TestNativeMemoryAccounting(t *testing.T) {
	clock := newFakeClock(time.Unix(1_800_000_000, 0))
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 4 << 20, Now: clock.Now})
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
	must("+OK", strings.Fields("BF.RESERVE b 0.01 100000 LAYOUT blocked SEED 1")...)
	check("BF.RESERVE blocked")
	must("+OK", strings.Fields("BF.RESERVE c 0.01 1000 LAYOUT classic SEED 1")...)
	must("+OK", strings.Fields("BF.RESERVE w 0.01 10000 WINDOW 4s SEED 1")...)
	check("BF.RESERVE window")
	must(":1", "BF.ADD", "w", "x")
	clock.Add(10 * time.Second)
	must(":1", "BF.ADD", "w", "y")
	check("a rotation")
	must("+OK", "BF.MERGE", "b2", "b")
	check("BF.MERGE into a new key")
	gc := goRedis(t, s)
	ctx := context.Background()
	for it := int64(0); ; {
		d, err := gc.BFScanDump(ctx, "w", it).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d.Iter == 0 {
			break
		}
		if err := gc.BFLoadChunk(ctx, "w2", d.Iter, d.Data).Err(); err != nil {
			t.Fatal(err)
		}
		it = d.Iter
	}
	check("BF.LOADCHUNK")
	must("+OK", "RENAME", "w2", "w3")
	check("RENAME")
	must(":1", "PEXPIRE", "b2", "1")
	clock.Add(time.Second)
	must(":0", "EXISTS", "b2")
	check("expiry")
	must(":1", "DEL", "w3")
	check("DEL")
	// 4 MiB: a blocked key of 5.4 MB or a window of 9 × 1.1 MB does not fit next to the others,
	// however it is made.
	must("-ERR Insufficient memory", strings.Fields("BF.RESERVE big 0.001 3000000 LAYOUT blocked SEED 1")...)
	must("-ERR Insufficient memory", strings.Fields("BF.RESERVE big 0.001 600000 WINDOW 1h GENERATIONS 8 SEED 1")...)
	h := format.Header{Type: format.TypeBlocked, Seed: 1, M: 64 << 20, K: 7, N: 1, P: 0.01, PayloadLen: 8 << 20}
	must("-ERR Insufficient memory", "BF.LOADCHUNK", "big", "1", string(h.Marshal()))
	must("+OK", strings.Fields("BF.RESERVE half 0.001 1500000 LAYOUT blocked SEED 1")...)
	must("-ERR Insufficient memory", "BF.MERGE", "big", "half")
	check("refused creations")
	must("+OK", "FLUSHALL")
	check("FLUSHALL")
}

// Clients hammer native keys — adds, merges, renames, deletes, LOADCHUNK,
// BF.INFO, the per-filter metrics — while the clock rotates windows and BGSAVE runs again and
// again (run it with -race). Every snapshot must be readable, and after a
// restart from the last snapshot and the log every key is as it was.
func TestNativeConcurrentSnapshots(t *testing.T) {
	clock := newFakeClock(time.Unix(1_800_000_000, 0))
	dir := t.TempDir()
	s := startServer(t, Config{Dir: dir, AppendFsync: "no", Now: clock.Now, MetricsKeys: 100})
	ctx := context.Background()
	setup := goRedis(t, s)
	for _, cmd := range []string{
		"BF.RESERVE big 0.001 1000000 LAYOUT blocked SEED 1", // 1.8 MB: snapshots take a while
		"BF.RESERVE win 0.001 300000 WINDOW 4s GENERATIONS 4 SEED 2",
		"BF.RESERVE cls 0.01 20000 LAYOUT classic SEED 3",
	} {
		if err := setup.Do(ctx, strArgs(cmd)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	fail := make(chan error, 16)
	worker := func(id int, f func(c *redis.Client, i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := goRedis(t, s)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := f(c, i); err != nil {
					fail <- fmt.Errorf("worker %d: %w", id, err)
					return
				}
			}
		}()
	}
	for w := 0; w < 3; w++ {
		worker(w, func(c *redis.Client, i int) error {
			k := fmt.Sprint("k", w, "-", i)
			for _, key := range []string{"big", "win", "cls"} {
				if err := c.BFAdd(ctx, key, k).Err(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	worker(3, func(c *redis.Client, i int) error {
		// A window copy made by merge, renamed, merged into and deleted.
		tmp := fmt.Sprint("m", i%4)
		if err := c.Do(ctx, "BF.MERGE", tmp, "win").Err(); err != nil {
			return err
		}
		if err := c.Rename(ctx, tmp, tmp+"r").Err(); err != nil {
			return err
		}
		if err := c.Do(ctx, "BF.MERGE", "win", tmp+"r").Err(); err != nil {
			return err
		}
		if i%3 == 0 {
			return c.Del(ctx, tmp+"r").Err()
		}
		return nil
	})
	worker(4, func(c *redis.Client, i int) error {
		// Reloads cls into a fresh key chunk by chunk, reads BF.INFO.
		key := fmt.Sprint("copy", i%3)
		c.Del(ctx, key)
		for it := int64(0); ; {
			d, err := c.BFScanDump(ctx, "cls", it).Result()
			if err != nil {
				return err
			}
			if d.Iter == 0 {
				break
			}
			if err := c.BFLoadChunk(ctx, key, d.Iter, d.Data).Err(); err != nil {
				return err
			}
			it = d.Iter
		}
		return c.Do(ctx, "BF.INFO", "win").Err()
	})
	worker(6, func(c *redis.Client, i int) error {
		// The per-filter metrics read the arrays chunk by chunk.
		if rows := s.computeFilterStats(); len(rows) == 0 {
			return fmt.Errorf("no filter rows")
		}
		return nil
	})
	worker(5, func(c *redis.Client, i int) error {
		clock.Add(300 * time.Millisecond)
		time.Sleep(time.Millisecond)
		return nil
	})
	for i := 0; i < 8; i++ {
		if err := setup.Do(ctx, "BGSAVE", "SCHEDULE").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Error(err)
	}
	poll.Until(t, 30*time.Second, func() error {
		err := setup.Do(ctx, "SAVE").Err()
		if err != nil && !strings.Contains(err.Error(), "in progress") {
			t.Fatal(err)
		}
		return err // a background save still running: try again
	})
	for i := 0; i < 50; i++ { // writes after the snapshot: in the log only
		setup.BFAdd(ctx, "win", fmt.Sprint("late", i))
		clock.Add(100 * time.Millisecond)
	}
	keys, err := setup.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := dumpAll(t, s, &Session{authed: true}, keys...)
	s.Close()
	s2 := startServer(t, Config{Dir: dir, Now: clock.Now})
	got := dumpAll(t, s2, &Session{authed: true}, keys...)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("key %s differs after the restart", k)
		}
	}
	if n := doArgs(s2, &Session{authed: true}, "DBSIZE"); n != fmt.Sprintf(":%d\r\n", len(keys)) {
		t.Errorf("DBSIZE after the restart: %q, want %d", n, len(keys))
	}
}

// The window's promise exactly as docs/commands.md states it, to the
// nanosecond, when G does not divide T: with d = ⌈T/G⌉ ns, an item added
// at t tests present at t+T and absent from t+(G+1)·d on — which for an
// item added at the start of a generation is G+1 ns after t+T+T/G (the
// docs said "from t+T+T/G", true only when G divides T).
func TestNativeWindowBoundaries(t *testing.T) {
	const T, G = time.Second, 3
	d := (T + G - 1) / G // 333333334 ns
	base := time.Unix(0, 1_800_000_000*int64(d))
	clock := newFakeClock(base)
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{{fmt.Sprintf("BF.RESERVE w 0.0001 1000 WINDOW %dns GENERATIONS %d SEED 1", T, G), "+OK"}})
	for i, off := range []time.Duration{0, d / 2, d - 1} {
		tAdd := base.Add(time.Duration(i) * 10 * T).Add(off)
		item := fmt.Sprint("item-", i)
		clock.Set(tAdd)
		runSteps(t, rc, []step{{"BF.ADD w " + item, ":1"}})
		for _, c := range []struct {
			at   time.Duration
			want string
		}{
			{T, ":1"},
			{(G+1)*d - off - 1, ":1"}, // the last nanosecond of its last generation
			{(G + 1) * d, ":0"},
		} {
			clock.Set(tAdd.Add(c.at))
			if got := rc.do("BF.EXISTS", "w", item); got != c.want {
				t.Errorf("added %v into its generation, at t+%v: %s, want %s", off, c.at, got, c.want)
			}
		}
	}
}

// A rotation clears only the generations that were written since they
// were last empty: moving an idle window used to clear all G+1 in place,
// faulting in every page of generations never written (42 ms with the
// keyspace locked for 65 generations of 1 MB, and the whole window made
// resident). Written generations — by BF.ADD, BF.MERGE, BF.LOADCHUNK, or
// loaded from a snapshot — are still emptied when they expire.
func TestNativeRotationClearsOnlyWritten(t *testing.T) {
	clock := newFakeClock(time.Unix(1_800_000_000, 0))
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	c := &Session{authed: true}
	must := func(want string, args ...string) {
		t.Helper()
		if got := doArgs(s, c, args...); got != want {
			t.Fatalf("%v: %.80q, want %q", args, got, want)
		}
	}
	wiped := func(key string) uint64 {
		s.db.Lock()
		defer s.db.Unlock()
		n := s.db.Lookup(key).NF
		w := n.Wiped
		n.Wiped = 0
		return w
	}
	must("+OK\r\n", strings.Fields("BF.RESERVE w 0.01 50000 WINDOW 8s GENERATIONS 8 SEED 1")...)
	gen := s.db.Lookup("w").NF.ArrayBytes()
	clock.Add(time.Minute)
	must(":1\r\n", "BF.ADD", "w", "a") // every generation expires; none was written
	if got := wiped("w"); got != 0 {
		t.Errorf("moving a window never written cleared %d bytes", got)
	}
	must("+OK\r\n", "BF.MERGE", "m", "w") // m: a in its newest generation
	clock.Add(time.Second)
	must(":1\r\n", "BF.ADD", "w", "b")
	must(":1\r\n", "BF.ADD", "m", "b")
	clock.Add(time.Minute)
	must(":0\r\n", "BF.EXISTS", "w", "a")
	must(":1\r\n", "BF.ADD", "w", "c")
	if got := wiped("w"); got != 2*gen {
		t.Errorf("moving a window with 2 written generations cleared %d bytes, want %d", got, 2*gen)
	}
	must("*3\r\n:0\r\n:0\r\n:1\r\n", "BF.MEXISTS", "w", "a", "b", "c")
	must(":1\r\n", "BF.ADD", "m", "c")
	must("*3\r\n:0\r\n:0\r\n:1\r\n", "BF.MEXISTS", "m", "a", "b", "c")
	if got := wiped("m"); got != 2*gen {
		t.Errorf("moving a merged window cleared %d bytes, want %d", got, 2*gen)
	}
	// A copy by SCANDUMP/LOADCHUNK, and one loaded from a snapshot.
	gc := goRedis(t, s)
	ctx := context.Background()
	for it := int64(0); ; {
		d, err := gc.BFScanDump(ctx, "w", it).Result()
		if err != nil || d.Iter == 0 {
			break
		}
		gc.BFLoadChunk(ctx, "copy", d.Iter, d.Data)
		it = d.Iter
	}
	var snap strings.Builder
	s.db.Lock()
	sn := s.db.BeginSnapshot(1)
	s.db.Unlock()
	err := s.db.WriteSnapshot(&snap, sn)
	s.db.Lock()
	s.db.EndSnapshot(sn)
	s.db.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	if _, _, err := loadSnapshot(s2, []byte(snap.String())); err != nil {
		t.Fatal(err)
	}
	s2.db.Reindex()
	clock.Add(time.Minute)
	must(":1\r\n", "BF.ADD", "copy", "d")
	must("*2\r\n:0\r\n:1\r\n", "BF.MEXISTS", "copy", "c", "d")
	if got := doArgs(s2, c, "BF.ADD", "w", "d"); got != ":1\r\n" {
		t.Fatalf("BF.ADD on the loaded copy: %q", got)
	}
	if got := doArgs(s2, c, "BF.MEXISTS", "w", "c", "d"); got != "*2\r\n:0\r\n:1\r\n" {
		t.Errorf("the window loaded from a snapshot, moved past c's expiry: %q", got)
	}
}

// Hostile dumps and iterators: every forged header, chunk and iterator is
// answered with an error (or, for SCANDUMP, the end of the dump), never a
// panic, a hang or an allocation the header merely claims.
func TestNativeHostileChunks(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 64 << 20})
	c := &Session{authed: true}
	hdr := func(typ uint8, m uint64, k uint32, payload uint64) string {
		h := format.Header{Type: typ, Seed: 1, M: m, K: k, N: 10, P: 0.01, PayloadLen: payload}
		return string(h.Marshal())
	}
	win := func(period int64, gens uint32, starts ...int64) string {
		return string(windowHeader(512, period, gens, starts...))
	}
	for _, tc := range []struct{ data, want string }{
		{hdr(format.TypeBlocked, 512, 0, 64), "-ERR bloomkit header: bad parameters"},
		{hdr(format.TypeBlocked, 512, 65, 64), "-ERR bloomkit header: bad parameters"},
		{hdr(format.TypeBlocked, 0, 3, 0), "-ERR bloomkit header: bad parameters"},
		{hdr(format.TypeBlocked, 1<<62, 3, 1<<59), "-ERR bloomkit: filter too large"},
		{hdr(format.TypeBlocked, 1<<43, 3, 1<<40), "-ERR Insufficient memory"},
		{hdr(format.TypeBlocked, 500, 3, 64), "-ERR bloomkit header: blocked m is not a multiple of 512"},
		{hdr(format.TypeBlocked, 512, 3, 65), "-ERR bloomkit header: payload length 65, want 64"},
		{hdr(format.TypeClassic, 100, 3, 1<<40), "-ERR bloomkit header: payload length"},
		{hdr(format.TypeCounting, 512, 3, 64), "-ERR a counting filter cannot be a server key"},
		{hdr(format.TypeBlocked, 512, 3, 64) + "x", "-ERR the header chunk of a bloomkit dump is 80 bytes, got 81"},
		{win(1e9, 0, 0), "-ERR window header: bad window or generations"},
		{win(1e9, 65, seq(0, 66, 15384616)...), "-ERR window header: bad window or generations"},
		{win(0, 1, 0, 0), "-ERR window header: bad window or generations"},
		{win(-5, 1, 0, -5), "-ERR window header: bad window or generations"},
		{win(1e9, 1, 0, 2e9), "-ERR window header: start times are not consecutive generations"},
		{win(1e9, 1, 5, 1e9+5), "-ERR window header: a start time is not a multiple of the generation length"},
		{win(1e9, 4, 0)[:100], "-ERR window header: truncated"},
	} {
		got := within(t, "BF.LOADCHUNK", func() string { return doArgs(s, c, "BF.LOADCHUNK", "h", "1", tc.data) })
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("header %x…: %q, want %q", tc.data[:min(len(tc.data), 16)], got, tc.want)
		}
		doArgs(s, c, "DEL", "h")
	}
	// A blocked key of 2 × 512-bit blocks (128 bytes) and a window of 2 ×
	// 64 bytes.
	if got := doArgs(s, c, "BF.LOADCHUNK", "b", "1", hdr(format.TypeBlocked, 1024, 3, 128)); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := doArgs(s, c, "BF.LOADCHUNK", "w", "1", win(1e9, 1, 1e9, 2e9)); got != "+OK\r\n" {
		t.Fatal(got)
	}
	const outside = "-ERR invalid chunk: outside the filter's arrays"
	for _, tc := range []struct {
		key, it, data, want string
	}{
		{"b", "0", "x", "-ERR invalid iterator"},
		{"b", "-1", "x", "-ERR invalid iterator"},
		{"b", "-9223372036854775808", "x", "-ERR invalid iterator"},
		{"b", "9223372036854775807", "x", outside},
		{"b", "2", "xx", "-ERR invalid iterator"},        // starts before the data
		{"b", "130", strings.Repeat("x", 129), outside},  // longer than the arrays
		{"b", "131", "xx", outside},                      // past the end
		{"b", "137", "12345678", "+OK"},                  // the counts chunk
		{"b", "138", "123456789", outside},               // a counts chunk of the wrong size
		{"b", "129", strings.Repeat("\xff", 128), "+OK"}, // all the bits
		{"w", "100", strings.Repeat("x", 70), outside},   // across the two arrays
		{"w", "66", strings.Repeat("x", 65), outside},
		{"w", "145", "0123456789abcdef", "+OK"},
		{"w", "137", "12345678", outside},
	} {
		got := within(t, "BF.LOADCHUNK", func() string { return doArgs(s, c, "BF.LOADCHUNK", tc.key, tc.it, tc.data) })
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("BF.LOADCHUNK %s %s (%d bytes): %q, want %q", tc.key, tc.it, len(tc.data), got, tc.want)
		}
	}
	if got := doArgs(s, c, "BF.CARD", "b"); got != ":10\r\n" { // a full filter: its capacity
		t.Errorf("BF.CARD of a filter loaded with all bits set: %q", got)
	}
	for _, it := range []string{"-1", "-9223372036854775808", "9223372036854775807", "130", "146", "1000"} {
		got := within(t, "BF.SCANDUMP", func() string { return doArgs(s, c, "BF.SCANDUMP", "b", it) })
		if got != "*2\r\n:0\r\n$0\r\n\r\n" {
			t.Errorf("BF.SCANDUMP b %s: %q, want the end", it, got)
		}
	}
	if got := doArgs(s, c, "BF.SCANDUMP", "b", "129"); got != "*2\r\n:137\r\n$8\r\n\n\x00\x00\x00\x00\x00\x00\x00\r\n" {
		t.Errorf("BF.SCANDUMP b 129 (the counts): %q", got)
	}
	if got := doArgs(s, c, "BF.SCANDUMP", "b", "x"); !strings.HasPrefix(got, "-") {
		t.Errorf("BF.SCANDUMP b x: %q", got)
	}
}

// A snapshot started in O(1) holds the native keys as they were when it
// started, under the names they had, while they are renamed over each
// other, deleted, rotated, merged and re-created before the writer
// reaches them; and the image of a key the writer is in the middle of
// survives a rotation that swaps its arrays and a DEL that frees them.
func TestNativeSnapshotWhileKeysMove(t *testing.T) {
	clock := newFakeClock(time.Unix(1_800_000_000, 0))
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	c := &Session{authed: true}
	must := func(want string, args ...string) {
		t.Helper()
		if got := doArgs(s, c, args...); !strings.HasPrefix(got, want) {
			t.Fatalf("%v: %.80q, want %q", args, got, want)
		}
	}
	// 16 keys in make test, 40 in the long form. Either way the large keys
	// (w1, w9, ...) are the ones renamed over and freed below, and the first
	// MB the reader takes leaves the writer inside one of them.
	n := 16
	if longForm() {
		n = 40
	}
	var keys []string
	for i := 0; i < n; i++ {
		k := fmt.Sprint("w", i)
		keys = append(keys, k)
		size := "1000"
		if i%8 == 1 {
			size = "400000" // generations of 1 MB: swapped, not cleared, when they expire
		}
		must("+OK", strings.Fields("BF.RESERVE "+k+" 0.001 "+size+" WINDOW 4s SEED 1")...)
		for j := 0; j < 50; j++ {
			doArgs(s, c, "BF.ADD", k, fmt.Sprint("a", j))
		}
		clock.Add(500 * time.Millisecond)
	}
	want := dumpAll(t, s, c, keys...)
	rs := startSnapshot(s)
	rs.read(t, 1<<20) // the writer is inside some key
	clock.Add(10 * time.Second)
	for i := 0; i < n; i += 4 {
		a, b := keys[i], keys[i+1]
		must(":1", "BF.ADD", a, "late") // rotates: every generation expires
		must("+OK", "RENAME", a, b)     // b's old value leaves the keyspace
		must("+OK", "BF.MERGE", keys[i+2], b)
		must(":1", "DEL", keys[i+3])
		must("+OK", strings.Fields("BF.RESERVE "+keys[i+3]+" 0.01 100 WINDOW 4s SEED 1")...)
		must(":1", "BF.ADD", keys[i+3], "new")
	}
	data := rs.finish(t)
	holdsPointInTime(t, data, clock.Now, want, keys...)
}

// BF.ADVANCE to where a window stands is 0 even when the clock has gone
// back behind it (it said the generation was ahead of the clock).
func TestNativeAdvanceClockBack(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := newFakeClock(t0)
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	g := t0.Unix() // WINDOW 4s GENERATIONS 4: generations of 1 s
	runSteps(t, rc, []step{
		{"BF.RESERVE w 0.01 100 WINDOW 4s", "+OK"},
		{fmt.Sprint("BF.ADVANCE w ", g), ":0"},
	})
	clock.Add(-time.Minute)
	runSteps(t, rc, []step{
		{fmt.Sprint("BF.ADVANCE w ", g), ":0"},
		{fmt.Sprint("BF.ADVANCE w ", g-5), ":0"},
		{fmt.Sprint("BF.ADVANCE w ", g+1), "-ERR generation is ahead of the server's clock"},
	})
}

// BenchmarkNativeIdleWindowMove is the write that moves a window idle for
// longer than its period: 65 generations of 1 MB (b.N windows, each moved
// once, so that no generation was ever touched: the first move of a new
// window). Before rotations skipped clean generations it cleared all 65 in
// place with the keyspace locked.
func BenchmarkNativeIdleWindowMove(b *testing.B) {
	clock := newFakeClock(time.Unix(1_800_000_000, 0))
	s := startServer(b, Config{NoPersistence: true, Now: clock.Now})
	c := &Session{authed: true}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		doArgs(s, c, "DEL", "w")
		if got := doArgs(s, c, strings.Fields("BF.RESERVE w 0.01 720000 WINDOW 64s GENERATIONS 64 SEED 1")...); got != "+OK\r\n" {
			b.Fatal(got)
		}
		clock.Add(time.Hour)
		b.StartTimer()
		doArgs(s, c, "BF.ADD", "w", "x")
	}
}

// A classic, blocked or window filter counts no keys, so its file header's
// count is 0: a header chunk with another count is refused as the file is
// by bloom.Read (accepted, the count was dropped when the key was dumped
// back), and no key is created.
func TestNativeLoadChunkCountRefused(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	header := func(typ uint8, count uint64) []byte {
		if typ == format.TypeWindow {
			b := windowHeader(512, 1e9, 1, 1e9, 2e9)
			binary.LittleEndian.PutUint64(b[56:], count)
			binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], format.Castagnoli))
			return b
		}
		h := format.Header{Type: typ, Hash: format.HashXXH3, Seed: 1, M: 512, K: 3, N: 10, P: 0.01, Count: count, PayloadLen: 64}
		return h.Marshal()
	}
	for _, typ := range []uint8{format.TypeClassic, format.TypeBlocked, format.TypeWindow} {
		name := format.TypeName(typ)
		want := "-ERR bloomkit: corrupt filter data: a " + name + " filter with count 7 "
		if got := doArgs(s, c, "BF.LOADCHUNK", "f", "1", string(header(typ, 7))); !strings.HasPrefix(got, want) {
			t.Errorf("%s, count 7: %q, want %q…", name, got, want)
		}
		if got := doArgs(s, c, "EXISTS", "f"); got != ":0\r\n" {
			t.Errorf("%s, count 7: EXISTS f after the refused header: %q", name, got)
		}
		doArgs(s, c, "DEL", "f")
		if got := doArgs(s, c, "BF.LOADCHUNK", "f", "1", string(header(typ, 0))); got != "+OK\r\n" {
			t.Errorf("%s, count 0: %q", name, got)
		}
		doArgs(s, c, "DEL", "f")
	}
}

// A window header that bloom.Window's reader refuses — no rate, or its
// oldest generation at the start of int64 time — is refused by
// BF.LOADCHUNK too: accepted, the key pulled back (BF.SCANDUMP, `bloom
// pull`) was a file bloom.Read does not read.
func TestNativeLoadChunkWindowAsLibrary(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	const d = int64(1e9)
	oldest := math.MinInt64 / d * d
	noRate := windowHeader(512, d, 1, d, 2*d)
	binary.LittleEndian.PutUint64(noRate[48:], 0)
	binary.LittleEndian.PutUint32(noRate[72:], crc32.Checksum(noRate[:72], format.Castagnoli))
	for _, tc := range []struct {
		name string
		hdr  []byte
		want string
	}{
		{"rate 0", noRate, "-ERR window header: rate 0, want above 0"},
		{"oldest start at MinInt64", windowHeader(512, d, 1, oldest, oldest+d), "-ERR window header: start times out of range"},
	} {
		// The whole file, zero bits: what the key would pull back as.
		file := append(bytes.Clone(tc.hdr), make([]byte, 2*64)...)
		file = binary.LittleEndian.AppendUint32(file, crc32.Checksum(file, format.Castagnoli))
		if _, err := bloom.Read(bytes.NewReader(file)); !errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("%s: bloom.Read of the file: %v, want ErrCorrupt", tc.name, err)
		}
		if got := doArgs(s, c, "BF.LOADCHUNK", "w", "1", string(tc.hdr)); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		doArgs(s, c, "DEL", "w")
	}
	// The oldest start the library reads is accepted.
	if got := doArgs(s, c, "BF.LOADCHUNK", "w", "1", string(windowHeader(512, d, 1, oldest+d, oldest+2*d))); got != "+OK\r\n" {
		t.Errorf("the oldest window start that fits: %q", got)
	}
}
