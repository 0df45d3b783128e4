package server

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
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

// norm turns a reply into a comparable string: numbers by value (Redis 7
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
			{"TYPE", "t"},
		} {
			same(c...)
		}
		for round := range 30 {
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
	// go-redis's own methods.
	if err := bc.TDigestCreate(ctx, "g").Err(); err != nil {
		t.Fatal(err)
	}
	if err := bc.TDigestAdd(ctx, "g", 1, 2, 3, 4).Err(); err != nil {
		t.Fatal(err)
	}
	if q, err := bc.TDigestQuantile(ctx, "g", 0.5).Result(); err != nil || len(q) != 1 || q[0] != 3 {
		t.Fatalf("quantile %v %v", q, err)
	}
}
