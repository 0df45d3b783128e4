package rdb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/redis/go-redis/v9"
)

// filterSetup builds on a real RedisBloom the filters every interop test
// compares: Bloom chains reserved, auto-created, scaled over several
// links, non-scaling, with an expansion; cuckoo filters with deletions
// and expanded over several sub-filters. It returns each key's inserted
// items.
func filterSetup(ctx context.Context, t *testing.T, c *redis.Client) map[string][]string {
	t.Helper()
	items := map[string][]string{}
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	add := func(cmd, key string, n int) {
		t.Helper()
		args := []any{cmd, key}
		for i := range n {
			it := fmt.Sprintf("%s-item-%d", key, i)
			items[key] = append(items[key], it)
			args = append(args, it)
		}
		if cmd == "CF.ADD" {
			for _, it := range args[2:] {
				do("CF.ADD", key, it)
			}
			return
		}
		do(args...)
	}
	do("BF.RESERVE", "bf:reserved", 0.01, 1000)
	add("BF.MADD", "bf:reserved", 500)
	add("BF.MADD", "bf:auto", 50)
	do("BF.RESERVE", "bf:scaled", 0.02, 100, "EXPANSION", 3)
	add("BF.MADD", "bf:scaled", 1500) // 100, 300, 900, 2700: four links
	do("BF.RESERVE", "bf:nonscaling", 0.001, 300, "NONSCALING")
	add("BF.MADD", "bf:nonscaling", 300)
	do("BF.RESERVE", "bf:empty", 0.1, 10)
	do("CF.RESERVE", "cf:deleted", 1000)
	add("CF.ADD", "cf:deleted", 400)
	for _, it := range items["cf:deleted"][:100] {
		do("CF.DEL", "cf:deleted", it)
	}
	items["cf:deleted"] = items["cf:deleted"][100:]
	do("CF.RESERVE", "cf:expanded", 64, "BUCKETSIZE", 4, "EXPANSION", 2, "MAXITERATIONS", 30)
	add("CF.ADD", "cf:expanded", 600)
	add("CF.ADD", "cf:auto", 20)
	res, err := c.Do(ctx, "BF.INFO", "bf:scaled", "FILTERS").Result()
	if m, ok := res.(map[any]any); ok { // RESP3: {"Number of filters": n}
		for _, v := range m {
			res = v
		}
	}
	if n, ok := res.(int64); err != nil || !ok || n < 3 {
		t.Fatalf("bf:scaled has %v links (%v)", res, err)
	}
	return items
}

// probes are items that were never added: their answers include the
// filters' false positives, which must agree too.
func probes(key string) []string {
	out := make([]string, 2000)
	for i := range out {
		out[i] = fmt.Sprintf("%s-probe-%d", key, i)
	}
	return out
}

// realExists asks the real RedisBloom about items (BF.MEXISTS or
// CF.MEXISTS).
func realExists(ctx context.Context, t *testing.T, c *redis.Client, key string, items []string) []bool {
	t.Helper()
	cmd := "BF.MEXISTS"
	if key[:2] == "cf" {
		cmd = "CF.MEXISTS"
	}
	args := []any{cmd, key}
	for _, it := range items {
		args = append(args, it)
	}
	res, err := c.Do(ctx, args...).Slice()
	if err != nil {
		t.Fatalf("%s %s: %v", cmd, key, err)
	}
	out := make([]bool, len(res))
	for i, v := range res {
		switch v := v.(type) {
		case bool: // RESP3
			out[i] = v
		case int64:
			out[i] = v == 1
		default:
			t.Fatalf("%s answered %T", cmd, v)
		}
	}
	return out
}

type existser interface{ Exists([]byte) bool }

// sameAnswers checks that f answers every inserted item and every probe
// as the real RedisBloom does for key.
func sameAnswers(ctx context.Context, t *testing.T, c *redis.Client, key string, f existser, inserted []string) {
	t.Helper()
	all := append(append([]string{}, inserted...), probes(key)...)
	want := realExists(ctx, t, c, key, all)
	fp := 0
	for i, it := range all {
		if got := f.Exists([]byte(it)); got != want[i] {
			t.Fatalf("%s: %q answers %v here, %v on RedisBloom", key, it, got, want[i])
		}
		if i >= len(inserted) && want[i] {
			fp++
		}
	}
	t.Logf("%s: %d items, %d probes (%d false positives) answer alike", key, len(inserted), len(all)-len(inserted), fp)
}

// realScandump returns the real RedisBloom's SCANDUMP records of key.
func realScandump(ctx context.Context, t *testing.T, c *redis.Client, key string) [][]byte {
	t.Helper()
	cmd := "BF.SCANDUMP"
	if key[:2] == "cf" {
		cmd = "CF.SCANDUMP"
	}
	var out [][]byte
	for it := int64(0); ; {
		res, err := c.Do(ctx, cmd, key, it).Slice()
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		it = res[0].(int64)
		if it == 0 {
			return out
		}
		out = append(out, []byte(res[1].(string)))
	}
}

// ourScandump is the same records from our filter.
func ourScandump(f redisbloom.Dumpable) [][]byte {
	out := [][]byte{f.Header()}
	for it := int64(1); ; {
		next, data := f.Chunk(it)
		if next == 0 {
			return out
		}
		out = append(out, bytes.Clone(data))
		it = next
	}
}

func startRedisBloom(t *testing.T, dir string) *redistest.Server {
	t.Helper()
	mod := redistest.RedisBloomModule(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := redistest.StartAt(t, dir, port, "--loadmodule", mod)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRedisBloomRDBBothWays: filters saved by real Redis + RedisBloom are
// read here and answer every item alike (and SCANDUMP byte for byte);
// written back by our writer, real Redis + RedisBloom loads them and
// answers alike again.
func TestRedisBloomRDBBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := startRedisBloom(t, t.TempDir())
	c := s.Client(t)
	items := filterSetup(ctx, t, c)
	c.Set(ctx, "plain", "string", 0)
	expireAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	c.PExpireAt(ctx, "bf:auto", expireAt)
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	var asked uint64
	opts := Options{Modules: RedisBloomDecoders(func(n uint64) error { asked += n; return nil })}
	es, err := readAll(t, data, opts)
	if err != nil {
		t.Fatal(err)
	}
	filters := map[string]redisbloom.Dumpable{}
	for _, e := range es {
		if e.Kind != KindKey {
			continue
		}
		if e.Err != nil {
			t.Fatalf("%s: %v", e.Key, e.Err)
		}
		switch v := e.Value.(type) {
		case *redisbloom.Bloom:
			filters[string(e.Key)] = v
		case *redisbloom.Cuckoo:
			filters[string(e.Key)] = v
		default:
			if string(e.Key) != "plain" || string(e.String) != "string" {
				t.Fatalf("unexpected key %s: %+v", e.Key, e)
			}
		}
		if (string(e.Key) == "bf:auto") != e.HasExpire || (e.HasExpire && e.ExpireAt != expireAt.UnixMilli()) {
			t.Errorf("%s expiry %v %d", e.Key, e.HasExpire, e.ExpireAt)
		}
	}
	if asked == 0 {
		t.Error("the allocation check was never asked")
	}
	keys := []string{"bf:reserved", "bf:auto", "bf:scaled", "bf:nonscaling", "bf:empty", "cf:deleted", "cf:expanded", "cf:auto"}
	for _, k := range keys {
		f := filters[k]
		if f == nil {
			t.Fatalf("%s not read", k)
		}
		sameAnswers(ctx, t, c, k, f, items[k])
		if want, got := realScandump(ctx, t, c, k), ourScandump(f); !equalRecords(want, got) {
			t.Fatalf("%s: SCANDUMP differs (%d records here, %d on RedisBloom)", k, len(got), len(want))
		}
	}
	if cf := filters["cf:expanded"].(*redisbloom.Cuckoo); len(cf.Filters) < 2 {
		t.Errorf("cf:expanded has %d sub-filters", len(cf.Filters))
	}

	// Our RDB, loaded by real Redis + RedisBloom.
	dir := t.TempDir()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 10)
	if err != nil {
		t.Fatal(err)
	}
	w.SelectDB(0)
	for _, k := range keys {
		var enc ModuleEncoder
		switch f := filters[k].(type) {
		case *redisbloom.Bloom:
			enc = BloomValue{f}
		case *redisbloom.Cuckoo:
			enc = CuckooValue{f}
		}
		if err := w.Module([]byte(k), -1, enc); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := startRedisBloom(t, dir)
	c2 := s2.Client(t)
	for _, k := range keys {
		sameAnswers(ctx, t, c2, k, filters[k], items[k])
		if want, got := realScandump(ctx, t, c2, k), ourScandump(filters[k]); !equalRecords(want, got) {
			t.Fatalf("%s after loading our RDB: SCANDUMP differs", k)
		}
	}
	// And the loaded filters still behave as RedisBloom's: a scaled chain
	// grows the same way on both sides.
	more := make([]any, 0, 3000)
	more = append(more, "BF.MADD", "bf:scaled")
	b := filters["bf:scaled"].(*redisbloom.Bloom)
	for i := range 3000 {
		it := fmt.Sprintf("more-%d", i)
		more = append(more, it)
		if _, err := b.Add([]byte(it)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c2.Do(ctx, more...).Err(); err != nil {
		t.Fatal(err)
	}
	if want, got := realScandump(ctx, t, c2, "bf:scaled"), ourScandump(b); !equalRecords(want, got) {
		t.Fatal("bf:scaled grown on both sides: SCANDUMP differs")
	}
}

func equalRecords(a, b [][]byte) bool {
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

// TestRedisBloomDumpRestore: DUMP payloads of RedisBloom filters move
// between real Redis + RedisBloom and this package both ways.
func TestRedisBloomDumpRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := startRedisBloom(t, t.TempDir())
	c := s.Client(t)
	items := filterSetup(ctx, t, c)
	opts := Options{Modules: RedisBloomDecoders(nil)}
	for _, k := range []string{"bf:reserved", "bf:scaled", "bf:nonscaling", "cf:deleted", "cf:expanded"} {
		payload, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		e, err := ParseDump([]byte(payload), opts)
		if err != nil || e.Err != nil {
			t.Fatalf("%s: %v %v", k, err, e)
		}
		f := e.Value.(redisbloom.Dumpable)
		sameAnswers(ctx, t, c, k, f, items[k])
		var enc ModuleEncoder
		switch v := f.(type) {
		case *redisbloom.Bloom:
			enc = BloomValue{v}
		case *redisbloom.Cuckoo:
			enc = CuckooValue{v}
		}
		ours, err := DumpModule(enc, DumpVersion)
		if err != nil {
			t.Fatal(err)
		}
		copyKey := k + ":copy"
		if err := c.Restore(ctx, copyKey, 0, string(ours)).Err(); err != nil {
			t.Fatalf("RESTORE of our payload for %s: %v", k, err)
		}
		sameAnswers(ctx, t, c, copyKey, f, items[k])
		if want, got := realScandump(ctx, t, c, copyKey), ourScandump(f); !equalRecords(want, got) {
			t.Fatalf("%s restored from our payload: SCANDUMP differs", k)
		}
	}
}

// oldLayout writes a filter in the field layout of RedisBloom 2.0
// (encoding version 3): no growth for Bloom chains; for cuckoo filters no
// deletions, bucket size, iterations, expansion or per-filter buckets.
type oldLayout struct {
	b *redisbloom.Bloom
	c *redisbloom.Cuckoo
}

func (o oldLayout) ModuleType() (string, int) {
	if o.b != nil {
		return redisbloom.BloomModuleType, 3
	}
	return redisbloom.CuckooModuleType, 3
}

func (o oldLayout) EncodeModule(m *ModuleWriter) error {
	if o.c != nil {
		m.SaveUnsigned(uint64(len(o.c.Filters)))
		m.SaveUnsigned(o.c.NumBuckets)
		m.SaveUnsigned(o.c.NumItems)
		for _, f := range o.c.Filters {
			m.SaveString(f)
		}
		return nil
	}
	b := o.b
	m.SaveUnsigned(b.Size)
	m.SaveUnsigned(uint64(b.NumLinks()))
	m.SaveUnsigned(uint64(b.Options))
	for i := range b.NumLinks() {
		l := b.Link(i)
		m.SaveUnsigned(l.Entries)
		m.SaveDouble(l.Error)
		m.SaveUnsigned(uint64(l.Hashes))
		m.SaveDouble(l.BPE)
		m.SaveUnsigned(l.Bits)
		m.SaveUnsigned(uint64(l.N2))
		m.SaveString(l.Data)
		m.SaveUnsigned(l.Size)
	}
	return nil
}

// TestRedisBloomOldEncodings reads the layouts RedisBloom 2.0 wrote
// (encoding version 3) and refuses what cannot answer alike.
func TestRedisBloomOldEncodings(t *testing.T) {
	b, err := redisbloom.NewBloom(100, 0.01, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// RedisBloom 2.0's cuckoo filters: bucket size 2, expansion 1.
	c, err := redisbloom.NewCuckoo(1000, 2, 20, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		it := []byte(fmt.Sprintf("old-%d", i))
		if _, err := b.Add(it); err != nil {
			t.Fatal(err)
		}
		c.Insert(it)
	}
	if b.NumLinks() < 2 {
		t.Fatalf("%d links", b.NumLinks())
	}
	opts := Options{Modules: RedisBloomDecoders(nil)}
	for _, v := range []oldLayout{{b: b}, {c: c}} {
		p, err := DumpModule(v, DumpVersion)
		if err != nil {
			t.Fatal(err)
		}
		e, err := ParseDump(p, opts)
		if err != nil || e.Err != nil || e.EncVer != 3 {
			t.Fatalf("%+v %v", e, err)
		}
		var want, got redisbloom.Dumpable = b, e.Value.(redisbloom.Dumpable)
		if v.c != nil {
			want = c
		}
		if !equalRecords(ourScandump(want), ourScandump(got)) {
			t.Fatalf("encoding version 3 %T read differently", want)
		}
	}
	// A newer encoding version than RedisBloom writes is refused, as
	// RedisBloom refuses it; the stream goes on.
	p, _ := DumpModule(versioned{BloomValue{b}, 5}, DumpVersion)
	if e, err := ParseDump(p, opts); err != nil || e.Err == nil {
		t.Fatalf("encoding version 5: %+v %v", e, err)
	}
	// A chain without 64-bit hashing (RedisBloom 1.x) would answer
	// differently: refused.
	b.Options &^= redisbloom.OptForce64
	p, _ = DumpModule(BloomValue{b}, DumpVersion)
	if e, err := ParseDump(p, opts); err != nil || e.Err == nil {
		t.Fatalf("32-bit chain: %+v %v", e, err)
	}
	b.Options |= redisbloom.OptForce64
	// The allocation check refuses: the value is refused, not allocated.
	refuse := Options{Modules: RedisBloomDecoders(func(n uint64) error { return fmt.Errorf("no room for %d bytes", n) })}
	p, _ = DumpModule(BloomValue{b}, DumpVersion)
	if e, err := ParseDump(p, refuse); err != nil || e.Err == nil || e.Value != nil {
		t.Fatalf("refused allocation: %+v %v", e, err)
	}
	p, _ = DumpModule(CuckooValue{c}, DumpVersion)
	if e, err := ParseDump(p, refuse); err != nil || e.Err == nil || e.Value != nil {
		t.Fatalf("refused cuckoo allocation: %+v %v", e, err)
	}
}

type versioned struct {
	ModuleEncoder
	ver int
}

func (v versioned) ModuleType() (string, int) {
	n, _ := v.ModuleEncoder.ModuleType()
	return n, v.ver
}
