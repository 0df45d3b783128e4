package rdb

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/redisbloom"
)

// The recording: an RDB file real Redis 7.0.15 + RedisBloom 2.8.20 saved
// holding filterSetup's filters, and RedisBloom's answers for each
// filter's items and probes, so that every run reads real bytes even where
// no RedisBloom module is at hand. BLOOMKIT_WRITE_RECORDINGS=1 with the
// module (BLOOMKIT_REDISBLOOM_MODULE) records them again.
var (
	recordedRDB     = filepath.Join("testdata", "redisbloom", "redis-7.0.15-redisbloom-2.8.20.rdb")
	recordedAnswers = filepath.Join("testdata", "redisbloom", "redis-7.0.15-redisbloom-2.8.20.json")
)

// recordedKey is one filter of the recording: its items are
// "<key>-item-<i>" for From <= i < To, then probes(key); Answers holds
// RedisBloom's answer for each, in that order ('1' present).
type recordedKey struct {
	From, To int
	Answers  string
}

func recordedItems(key string, k recordedKey) []string {
	var out []string
	for i := k.From; i < k.To; i++ {
		out = append(out, fmt.Sprintf("%s-item-%d", key, i))
	}
	return append(out, probes(key)...)
}

func TestRecordRedisBloomRDB(t *testing.T) {
	if os.Getenv("BLOOMKIT_WRITE_RECORDINGS") != "1" {
		t.Skip("BLOOMKIT_WRITE_RECORDINGS=1 records the RDB file again (needs the RedisBloom module)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := startRedisBloom(t, t.TempDir())
	c := s.Client(t)
	items := filterSetup(ctx, t, c)
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string]recordedKey{}
	for _, key := range keys {
		var k recordedKey
		if its := items[key]; len(its) > 0 {
			// Every key's items are a run of "<key>-item-<i>".
			if _, err := fmt.Sscanf(strings.TrimPrefix(its[0], key+"-item-"), "%d", &k.From); err != nil {
				t.Fatal(err)
			}
			k.To = k.From + len(its)
		}
		var b strings.Builder
		for _, ok := range realExists(ctx, t, c, key, recordedItems(key, k)) {
			b.WriteByte("01"[btoi(ok)])
		}
		k.Answers = b.String()
		rec[key] = k
	}
	js, err := json.MarshalIndent(rec, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(recordedRDB), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recordedRDB, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recordedAnswers, append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRecordedRedisBloomRDB reads the recorded file and checks that every
// filter in it answers every item and probe as RedisBloom answered.
func TestRecordedRedisBloomRDB(t *testing.T) {
	data, err := os.ReadFile(recordedRDB)
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(recordedAnswers)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]recordedKey
	if err := json.Unmarshal(js, &rec); err != nil {
		t.Fatal(err)
	}
	es, err := readAll(t, data, Options{Modules: RedisBloomDecoders(func(uint64) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range es {
		if e.Kind != KindKey {
			continue
		}
		k, ok := rec[string(e.Key)]
		if !ok {
			t.Fatalf("key %s is not in the recording's answers", e.Key)
		}
		if e.Err != nil {
			t.Fatalf("%s: %v", e.Key, e.Err)
		}
		var f existser
		switch v := e.Value.(type) {
		case *redisbloom.Bloom:
			f = v
		case *redisbloom.Cuckoo:
			f = v
		default:
			t.Fatalf("%s: read as %T", e.Key, e.Value)
		}
		its := recordedItems(string(e.Key), k)
		if len(its) != len(k.Answers) {
			t.Fatalf("%s: %d items, %d answers", e.Key, len(its), len(k.Answers))
		}
		for i, it := range its {
			if want := k.Answers[i] == '1'; f.Exists([]byte(it)) != want {
				t.Fatalf("%s: %q answers %v here, %v on RedisBloom", e.Key, it, !want, want)
			}
		}
		seen++
	}
	if seen != len(rec) {
		t.Fatalf("read %d filters of the recording's %d", seen, len(rec))
	}
}
