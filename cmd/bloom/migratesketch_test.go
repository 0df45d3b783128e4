package main

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/internal/redistest"
)

// sketchNames are the keys fillSketches makes.
var sketchNames = []string{"s:cms-dim", "s:cms-prob", "s:cms-empty", "s:topk", "s:topk-small", "s:td", "s:td-one", "s:td-empty"}

// fillSketches makes Count-Min Sketches, Top-Ks and t-digests on c: fed a
// skewed stream of words, empty, or holding one value; s:cms-dim expires
// in an hour.
func fillSketches(t *testing.T, c redis.Cmdable) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CMS.INITBYDIM", "s:cms-dim", 200, 4)
		p.Do(ctx, "CMS.INITBYPROB", "s:cms-prob", 0.01, 0.01)
		p.Do(ctx, "CMS.INITBYDIM", "s:cms-empty", 10, 2)
		p.Do(ctx, "TOPK.RESERVE", "s:topk", 10, 50, 4, 0.9)
		p.Do(ctx, "TOPK.RESERVE", "s:topk-small", 3, 8, 2, 0.8) // narrow: items clash and decay
		p.Do(ctx, "TDIGEST.CREATE", "s:td", "COMPRESSION", 50)
		p.Do(ctx, "TDIGEST.CREATE", "s:td-one")
		p.Do(ctx, "TDIGEST.CREATE", "s:td-empty")
		p.Do(ctx, "TDIGEST.ADD", "s:td-one", 42.5)
		p.PExpire(ctx, "s:cms-dim", time.Hour)
		for i := range 3000 {
			w := fmt.Sprintf("w%d", (i*i+7*i)%(1+i%97)) // low numbers far more often
			p.Do(ctx, "CMS.INCRBY", "s:cms-dim", w, 1+i%3)
			p.Do(ctx, "CMS.INCRBY", "s:cms-prob", w, 1)
			p.Do(ctx, "TOPK.ADD", "s:topk", w)
			p.Do(ctx, "TOPK.INCRBY", "s:topk-small", w, 1+i%2)
			p.Do(ctx, "TDIGEST.ADD", "s:td", float64((i*7919)%1000)/7, float64(i%13)*1e3)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sketchQueries are the queries whose answers must be alike on both sides.
func sketchQueries(key, typ string) [][]any {
	var words []any
	for i := range 120 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	words = append(words, "absent-1", "absent-2")
	with := func(cmd string, args ...any) []any { return append([]any{cmd, key}, args...) }
	switch typ {
	case "CMSk-TYPE":
		return [][]any{with("CMS.INFO"), with("CMS.QUERY", words...)}
	case "TopK-TYPE":
		return [][]any{with("TOPK.INFO"), with("TOPK.LIST", "WITHCOUNT"), with("TOPK.QUERY", words...), with("TOPK.COUNT", words...)}
	case "TDIS-TYPE":
		return [][]any{
			with("TDIGEST.INFO"), with("TDIGEST.MIN"), with("TDIGEST.MAX"),
			with("TDIGEST.QUANTILE", 0, 0.01, 0.1, 0.3, 0.5, 0.77, 0.9, 0.99, 1),
			with("TDIGEST.CDF", -1, 0, 10, 50.5, 100, 143, 1e9),
			with("TDIGEST.RANK", -1, 0, 10, 50.5, 143), with("TDIGEST.REVRANK", 0, 10, 50.5),
			with("TDIGEST.BYRANK", 0, 1, 100, 5000, 1e9), with("TDIGEST.BYREVRANK", 0, 7, 1e9),
			with("TDIGEST.TRIMMED_MEAN", 0.1, 0.9),
		}
	}
	return nil
}

// sameSketches checks that a and b hold the same sketches: same type and
// TTL (to the hour), and every query answered alike, numbers as numbers.
func sameSketches(t *testing.T, a, b *redis.Client, names []string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range names {
		typ := a.Type(ctx, k).Val()
		if typB := b.Type(ctx, k).Val(); typB != typ {
			t.Errorf("%s: TYPE %s and %s", k, typ, typB)
			continue
		}
		if ta, tb := a.TTL(ctx, k).Val(), b.TTL(ctx, k).Val(); ta.Round(time.Hour) != tb.Round(time.Hour) {
			t.Errorf("%s: TTL %v and %v", k, ta, tb)
		}
		qs := sketchQueries(k, typ)
		if qs == nil {
			t.Errorf("%s: TYPE %s is not a sketch", k, typ)
		}
		for _, q := range qs {
			ra, errA := a.Do(ctx, q...).Result()
			rb, errB := b.Do(ctx, q...).Result()
			if errA != nil || errB != nil {
				t.Errorf("%v: %v / %v", q[:2], errA, errB)
				continue
			}
			if !reflect.DeepEqual(asNumbers(ra), asNumbers(rb)) {
				t.Errorf("%v: %v\nand %v", q[:2], ra, rb)
			}
		}
	}
}

// migrateSketches runs migrate from src to dst and checks the report:
// every sketch copied and verified.
func migrateSketches(t *testing.T, srcAddr, dstAddr string) {
	t.Helper()
	r := bloomIn(t, t.TempDir(), "", "migrate", "--samples", "64", "--match", "s:*", srcAddr, dstAddr).want(t, exitOK, "migrate")
	for _, want := range []string{"matched:   8 (0 BF, 0 CF, 3 CMS, 2 TOPK, 3 TDIGEST)", "copied:    8", "verified:  8 of 8", "failed:    0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestMigrateSketches copies Count-Min Sketches, Top-Ks and t-digests
// between two bloom serves with DUMP and RESTORE: every query answers
// alike after; a second run finds them unchanged; a sketch changed on SRC,
// or a key of another type on DST, is a conflict until --replace.
func TestMigrateSketches(t *testing.T) {
	srcAddr, src := startServe(t)
	dstAddr, dst := startServe(t)
	ctx := context.Background()
	fillSketches(t, src)
	src.Do(ctx, "BF.ADD", "s:bf", "x") // filters and sketches go together
	dir := t.TempDir()
	r := bloomIn(t, dir, "", "migrate", "--samples", "64", srcAddr, dstAddr).want(t, exitOK, "migrate")
	for _, want := range []string{"matched:   9 (1 BF, 0 CF, 3 CMS, 2 TOPK, 3 TDIGEST)", "copied:    9", "verified:  9 of 9", "left out:  0 (neither filters nor sketches)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	sameSketches(t, src, dst, sketchNames)
	sameAnswers(t, src, dst, []string{"s:bf"})
	if ttl := dst.TTL(ctx, "s:cms-dim").Val(); ttl < 50*time.Minute {
		t.Errorf("TTL not carried: %v", ttl)
	}
	r = bloomIn(t, dir, "", "migrate", "--json", "--samples", "8", srcAddr, dstAddr).want(t, exitOK, "migrate again")
	for _, want := range []string{`"unchanged": 9`, `"copied": 0`, `"cms_keys": 3`, `"topk_keys": 2`, `"tdigest_keys": 3`, `"verified": 9`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("second run lacks %s:\n%s", want, r.stdout)
		}
	}
	src.Do(ctx, "CMS.INCRBY", "s:cms-prob", "new", 5)
	src.Do(ctx, "TOPK.ADD", "s:topk", "w1")
	dst.Del(ctx, "s:td-one")
	dst.Set(ctx, "s:td-one", "a string", 0)
	r = bloomIn(t, dir, "", "migrate", "--match", "s:*", srcAddr, dstAddr)
	if r.code != exitError || !strings.Contains(r.stdout, "conflicts: 3") ||
		!strings.Contains(r.stdout, `"s:cms-prob": DST holds a different CMS sketch under this name`) ||
		!strings.Contains(r.stdout, `"s:td-one": DST holds a key of type string under this name`) {
		t.Errorf("changed keys: exit %d\n%s", r.code, r.stdout)
	}
	bloomIn(t, dir, "", "migrate", "--replace", "--match", "s:*", srcAddr, dstAddr).want(t, exitOK, "migrate --replace")
	sameSketches(t, src, dst, sketchNames)

	// What is compared is the decoded sketch: a string's or a filter's
	// DUMP, or a damaged one, is no sketch.
	src.Set(ctx, "plain", "x", 0)
	payload, err := src.Dump(ctx, "s:topk").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sketchSum(payload); err != nil {
		t.Errorf("sketchSum of a Top-K: %v", err)
	}
	payload[len(payload)/2] ^= 1
	for name, p := range map[string]string{"string": src.Dump(ctx, "plain").Val(), "BF": src.Dump(ctx, "s:bf").Val(), "damaged": string(payload)} {
		if _, err := sketchSum([]byte(p)); err == nil {
			t.Errorf("sketchSum of a %s's DUMP: no error", name)
		}
	}
}

// TestMigrateSketchesRedisBloom copies sketches from Redis with the real
// RedisBloom module to bloom serve, and from there to a second Redis +
// RedisBloom: all three answer every query alike, and a second run finds
// bloom serve's copies identical to RedisBloom's (equal DUMP values).
func TestMigrateSketchesRedisBloom(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	rs := redistest.Start(t, "--loadmodule", module)
	rb := redis.NewClient(&redis.Options{Addr: rs.Addr, Protocol: 2})
	t.Cleanup(func() { rb.Close() })
	serveAddr, serve := startServe(t)
	fillSketches(t, rb)
	migrateSketches(t, rs.Addr, serveAddr)
	sameSketches(t, rb, serve, sketchNames)
	r := bloomIn(t, t.TempDir(), "", "migrate", "--json", "--match", "s:*", rs.Addr, serveAddr).want(t, exitOK, "migrate again")
	if !strings.Contains(r.stdout, `"unchanged": 8`) {
		t.Errorf("second run from RedisBloom:\n%s", r.stdout)
	}
	back := redistest.Start(t, "--loadmodule", module)
	rb2 := redis.NewClient(&redis.Options{Addr: back.Addr, Protocol: 2})
	t.Cleanup(func() { rb2.Close() })
	migrateSketches(t, serveAddr, back.Addr)
	sameSketches(t, rb, rb2, sketchNames)
}
