package main

import (
	"context"
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/server"
)

// Count-Min Sketches, Top-Ks and t-digests have no SCANDUMP in RedisBloom,
// so migrate copies them whole: DUMP on SRC (one key, at one moment) and
// RESTORE on DST, which both RedisBloom and bloom serve answer for these
// module types. Two servers holding the same sketch give different DUMP
// bytes (RDB versions, compressors, and the memory addresses RedisBloom
// writes into a Top-K's), so sketches are compared decoded: a hash of the
// sketch in the bloomkit file format.

// sketchSum decodes a sketch's DUMP payload and returns a SHA-256 of the
// sketch in the bloomkit file format: equal sums mean equal sketches. (Not
// a CRC: the file ends in its own CRC-32C, which makes the CRC of every
// file the same.)
func sketchSum(payload []byte) ([32]byte, error) {
	v, err := server.DecodeSketchDump(payload)
	if err != nil {
		return [32]byte{}, err
	}
	m, ok := v.(encoding.BinaryMarshaler)
	if !ok {
		return [32]byte{}, fmt.Errorf("a %T", v)
	}
	b, err := m.MarshalBinary()
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// dumpKey returns key's DUMP payload and its remaining time to live in
// milliseconds (0: none), read in one round trip.
func (s *remote) dumpKey(ctx context.Context, key string) ([]byte, int64, error) {
	var dump *redis.StringCmd
	var pttl *redis.DurationCmd
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		dump = p.Dump(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	payload, err := dump.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("DUMP %s: the key is gone", key)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("DUMP %s: %w", key, err)
	}
	ttl, err := pttl.Result()
	if err != nil {
		return nil, 0, fmt.Errorf("PTTL %s: %w", key, err)
	}
	ms := ttl.Milliseconds()
	if ms < 0 { // -1: no expiry
		ms = 0
	}
	return payload, ms, nil
}

// dumpSum is the sketchSum of key's DUMP payload.
func (s *remote) dumpSum(ctx context.Context, key string) ([32]byte, error) {
	payload, _, err := s.dumpKey(ctx, key)
	if err != nil {
		return [32]byte{}, err
	}
	sum, err := sketchSum(payload)
	if err != nil {
		return [32]byte{}, fmt.Errorf("DUMP %s: %w", key, err)
	}
	return sum, nil
}

// copySketch copies one sketch key with DUMP and RESTORE, unless DST
// already holds it identically.
func (m *migration) copySketch(ctx context.Context, k filterKey) result2 {
	fail := func(format string, args ...any) result2 {
		m.count(&m.rep.Failed)
		return result2{problem: fmt.Sprintf("%s %q: ", k.fam.prefix, k.name) + fmt.Sprintf(format, args...)}
	}
	typ, err := m.dst.c.Type(ctx, k.name).Result()
	if err != nil {
		return fail("DST: %v", err)
	}
	exists := typ != "none"
	if exists && typ == k.fam.typeName {
		a, err1 := m.src.dumpSum(ctx, k.name)
		b, err2 := m.dst.dumpSum(ctx, k.name)
		if err1 == nil && err2 == nil && a == b {
			m.count(&m.rep.Unchanged)
			return result2{ok: true}
		}
	}
	if exists && !m.replace {
		m.count(&m.rep.Conflicts)
		what := "a different " + k.fam.prefix + " sketch"
		if typ != k.fam.typeName {
			what = "a key of type " + typ
		}
		return result2{problem: fmt.Sprintf("%q: DST holds %s under this name (left alone; --replace overwrites it)", k.name, what)}
	}
	payload, ttl, err := m.src.dumpKey(ctx, k.name)
	if err != nil {
		return fail("SRC: %v", err)
	}
	sum, err := sketchSum(payload)
	if err != nil {
		return fail("SRC: DUMP: %v", err)
	}
	args := []any{"RESTORE", k.name, ttl, payload}
	if exists || m.replace {
		args = append(args, "REPLACE")
	}
	if err := m.dst.c.Do(ctx, args...).Err(); err != nil {
		return fail("RESTORE on DST: %v", err)
	}
	m.sent.Store(k.name, sum)
	m.bytes.Add(int64(len(payload)))
	m.count(&m.rep.Copied)
	return result2{ok: true}
}

// verifySketch compares a sketch's INFO and its answers to queries on
// both sides, and for a key copied in this run the DUMP value DST now
// gives with the one SRC sent.
func (m *migration) verifySketch(ctx context.Context, k filterKey) result2 {
	bad := func(format string, args ...any) result2 {
		return result2{problem: fmt.Sprintf("%s %q: verification: ", k.fam.prefix, k.name) + fmt.Sprintf(format, args...)}
	}
	a, err := m.src.sketchProbe(ctx, k, m.queries)
	if err != nil {
		return bad("SRC: %v", err)
	}
	b, err := m.dst.sketchProbe(ctx, k, m.queries)
	if err != nil {
		return bad("DST: %v", err)
	}
	if !reflect.DeepEqual(a[0], b[0]) {
		return bad("INFO differs: SRC %v, DST %v", a[0], b[0])
	}
	if !reflect.DeepEqual(a[1:], b[1:]) {
		return bad("answers to the queries differ: SRC %v, DST %v", a[1:], b[1:])
	}
	if v, ok := m.sent.Load(k.name); ok {
		sum, err := m.dst.dumpSum(ctx, k.name)
		if err != nil {
			return bad("DST: %v", err)
		}
		if sum != v.([32]byte) {
			return bad("DST holds another sketch than SRC sent (DUMP decoded)")
		}
	}
	m.count(&m.rep.Verified)
	return result2{ok: true}
}

// tdigestQuantiles are the quantiles compared for every t-digest.
var tdigestQuantiles = []any{0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1}

// sketchProbe returns, in one round trip, a sketch's INFO and then its
// answers: to CMS.QUERY or TOPK.QUERY of the sample items, TOPK.LIST with
// counts, a t-digest's min, max and quantiles. Numbers are compared as
// numbers (servers print doubles with different digits: 0.9 and
// 0.90000000000000002 are one double).
func (s *remote) sketchProbe(ctx context.Context, k filterKey, queries []string) ([]any, error) {
	var cmds []*redis.Cmd
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		do := func(args ...any) { cmds = append(cmds, p.Do(ctx, args...)) }
		withSamples := func(cmd string) {
			if len(queries) == 0 {
				return
			}
			args := []any{cmd, k.name}
			for _, q := range queries {
				args = append(args, q)
			}
			do(args...)
		}
		do(k.fam.prefix+".INFO", k.name)
		switch k.fam {
		case familyCMS:
			withSamples("CMS.QUERY")
		case familyTopK:
			do("TOPK.LIST", k.name, "WITHCOUNT")
			withSamples("TOPK.QUERY")
		case familyTDigest:
			do("TDIGEST.MIN", k.name)
			do("TDIGEST.MAX", k.name)
			do(append([]any{"TDIGEST.QUANTILE", k.name}, tdigestQuantiles...)...)
		}
		return nil
	})
	out := make([]any, len(cmds))
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name(), err)
		}
		out[i] = asNumbers(v)
	}
	return out, nil
}

// asNumbers turns every reply element that reads as a number into a
// float64 (NaN into "nan", which compares equal to itself).
func asNumbers(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = asNumbers(x[i])
		}
		return out
	case string:
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return asNumbers(f)
		}
	case int64:
		return float64(x)
	case float64:
		if math.IsNaN(x) {
			return "nan"
		}
	}
	return v
}
