package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	register(command{name: "migrate", summary: "copy filters and sketches (BF, CF, CMS, TOPK, TDIGEST keys) between servers, verified", run: runMigrate})
}

var migrateHelp = help{
	name:     "migrate",
	synopsis: `migrate [--match PATTERN] [--replace] [--jobs N] [--samples N] [--json] SRC DST`,
	about: `Copies every Bloom (BF.*), cuckoo (CF.*), Count-Min Sketch (CMS.*), Top-K
(TOPK.*) and t-digest (TDIGEST.*) key whose name matches PATTERN from server
SRC to server DST. Both may be anything that speaks RedisBloom's commands:
bloom serve, Redis with the RedisBloom module, Redis 8, or a Redis Cluster
(recognised by INFO; keys are routed by hash slot with go-redis's cluster
client). SRC and DST are host:port or redis:// URLs.

A filter travels as its SCANDUMP stream into LOADCHUNK, under a scratch key
in the same hash slot that is then renamed onto the key; a sketch, which
has no SCANDUMP, as its DUMP payload into RESTORE. Each key is copied as it
was at one moment, with its TTL. A key that DST already holds with the same
contents is left alone, so a migration that was interrupted can simply be
run again; one DST holds with other contents is a conflict, reported and
left alone unless --replace.

A verification pass then compares, for every key, its INFO on both sides,
their SCANDUMP streams or DUMP payloads (by CRC-32C) and the answers of
both to queries: --samples random items (BF.MEXISTS, CF.MEXISTS,
CMS.QUERY, TOPK.QUERY), TOPK.LIST with counts, and a t-digest's min, max
and quantiles. The report gives the keys matched, left out (neither
filters nor sketches), copied, unchanged, in conflict, failed and verified;
the exit status is 0 only when every matched key is on DST and verified.`,
	examples: `bloom migrate 127.0.0.1:6479 redis8:6379
bloom migrate --match 'seen:*' 127.0.0.1:6479 10.0.0.5:7000     # a Redis Cluster node
bloom migrate --json redis://:pw@old:6379 127.0.0.1:6479 > report.json`,
}

// migrateReport is what migrate tells at the end; --json prints it.
type migrateReport struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Match       string `json:"match"`
	Matched     int64  `json:"matched"`
	Bloom       int64  `json:"bf_keys"`
	Cuckoo      int64  `json:"cf_keys"`
	CMS         int64  `json:"cms_keys"`
	TopK        int64  `json:"topk_keys"`
	TDigest     int64  `json:"tdigest_keys"`
	// Other counts the keys matching the pattern that are neither filters
	// nor sketches, left out; OtherTypes by their TYPE.
	Other      int64            `json:"other_keys"`
	OtherTypes map[string]int64 `json:"other_types,omitempty"`
	Copied     int64            `json:"copied"`
	Unchanged  int64            `json:"unchanged"`
	Conflicts  int64            `json:"conflicts"`
	Failed     int64            `json:"failed"`
	Verified   int64            `json:"verified"`
	Bytes      int64            `json:"bytes_copied"`
	Seconds    float64          `json:"seconds"`
	Problems   []string         `json:"problems,omitempty"`
}

func runMigrate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("migrate")
	match := fs.String("match", "*", "copy the keys matching `PATTERN` (glob, as SCAN MATCH)")
	replace := fs.Bool("replace", false, "overwrite keys DST holds with other contents")
	jobs := fs.Int("jobs", 4, "copy `N` keys at a time")
	samples := fs.Int("samples", 256, "random queries compared on both sides for each key in the verification pass")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fb := addFeedbackFlags(fs)
	pos, code, ok := parseFlags(fs, migrateHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "migrate"
	if len(pos) != 2 {
		return usageErr(stderr, name, "want SRC and DST, got %d arguments", len(pos))
	}
	if *jobs < 1 || *jobs > 256 {
		return usageErr(stderr, name, "--jobs %d: want 1 to 256", *jobs)
	}
	if *samples < 0 || *samples > 100000 {
		return usageErr(stderr, name, "--samples %d: want 0 to 100000", *samples)
	}
	showProgress, err := fb.enabled(stderr)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	start := time.Now()
	src, err := dial(ctx, pos[0])
	if err != nil {
		return failf(stderr, name, "SRC %v", err)
	}
	defer src.close()
	dst, err := dial(ctx, pos[1])
	if err != nil {
		return failf(stderr, name, "DST %v", err)
	}
	defer dst.close()

	rep := &migrateReport{Source: pos[0], Destination: pos[1], Match: *match}
	keys, other, err := src.listFilters(ctx, *match)
	if err != nil {
		return failf(stderr, name, "SRC %s: listing keys: %v", pos[0], err)
	}
	for typ, n := range other {
		rep.Other += n
		if rep.OtherTypes == nil {
			rep.OtherTypes = map[string]int64{}
		}
		rep.OtherTypes[typ] = n
	}
	rep.Matched = int64(len(keys))
	for _, k := range keys {
		switch k.fam.prefix {
		case "BF":
			rep.Bloom++
		case "CF":
			rep.Cuckoo++
		case "CMS":
			rep.CMS++
		case "TOPK":
			rep.TopK++
		case "TDIGEST":
			rep.TDigest++
		}
	}
	m := &migration{src: src, dst: dst, replace: *replace, rep: rep, queries: sampleQueries(*samples)}
	var done atomic.Int64
	prog := startProgress(showProgress, stderr, 0, m.bytes.Load, &done, "keys", func() string {
		return fmt.Sprintf("of %s", commas(uint64(len(keys))))
	})
	ok2 := m.run(ctx, keys, *jobs, &done, func(k filterKey) result2 { return m.copyKey(ctx, k) })
	prog.finish()
	// The verification pass, over every key that should now be on DST.
	done.Store(0)
	prog = startProgress(showProgress, stderr, 0, nil, &done, "keys verified", nil)
	m.run(ctx, ok2, *jobs, &done, func(k filterKey) result2 { return m.verifyKey(ctx, k) })
	prog.finish()
	rep.Bytes = m.bytes.Load()
	rep.Seconds = time.Since(start).Seconds()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printMigrateReport(stdout, rep)
	}
	if ctx.Err() != nil {
		return failf(stderr, name, "interrupted; run it again to finish (keys already copied are left alone)")
	}
	if rep.Verified != rep.Matched {
		return exitError
	}
	return exitOK
}

func printMigrateReport(w io.Writer, r *migrateReport) {
	fmt.Fprintf(w, "bloom migrate %s → %s (keys matching %q)\n", r.Source, r.Destination, r.Match)
	row := func(k, v string) { fmt.Fprintf(w, "  %-10s %s\n", k+":", v) }
	kinds := fmt.Sprintf("%s BF, %s CF", commas(uint64(r.Bloom)), commas(uint64(r.Cuckoo)))
	for _, s := range []struct {
		n    int64
		name string
	}{{r.CMS, "CMS"}, {r.TopK, "TOPK"}, {r.TDigest, "TDIGEST"}} {
		if s.n > 0 {
			kinds += fmt.Sprintf(", %s %s", commas(uint64(s.n)), s.name)
		}
	}
	row("matched", fmt.Sprintf("%s (%s)", commas(uint64(r.Matched)), kinds))
	left := commas(uint64(r.Other)) + " (neither filters nor sketches)"
	if r.Other > 0 {
		var types []string
		for typ, n := range r.OtherTypes {
			types = append(types, fmt.Sprintf("%s %s", typ, commas(uint64(n))))
		}
		slices.Sort(types)
		left = fmt.Sprintf("%s (neither filters nor sketches: %s)", commas(uint64(r.Other)), strings.Join(types, ", "))
	}
	row("left out", left)
	row("copied", fmt.Sprintf("%s (%s)", commas(uint64(r.Copied)), humanBytes(uint64(r.Bytes))))
	row("unchanged", commas(uint64(r.Unchanged))+" (DST already held them, identical)")
	row("conflicts", commas(uint64(r.Conflicts))+" (DST holds other contents; --replace overwrites)")
	row("failed", commas(uint64(r.Failed)))
	row("verified", fmt.Sprintf("%s of %s (INFO, dump and sample queries equal)", commas(uint64(r.Verified)), commas(uint64(r.Matched))))
	row("time", fmt.Sprintf("%.2f s", r.Seconds))
	for i, p := range r.Problems {
		if i == 10 {
			fmt.Fprintf(w, "  ! ... and %d more (--json lists up to 50)\n", len(r.Problems)-10)
			break
		}
		fmt.Fprintf(w, "  ! %s\n", p)
	}
}

// filterKey is a key to migrate and its family.
type filterKey struct {
	name string
	fam  family
}

// listFilters returns the filter and sketch keys matching pattern, and how
// many other keys match, by TYPE: SCAN on every master, then TYPE of each
// key.
func (s *remote) listFilters(ctx context.Context, pattern string) ([]filterKey, map[string]int64, error) {
	var mu sync.Mutex
	var names []string
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		var local []string
		for it.Next(ctx) {
			local = append(local, it.Val())
		}
		mu.Lock()
		names = append(names, local...)
		mu.Unlock()
		return it.Err()
	}
	var err error
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, scan)
	} else {
		err = scan(ctx, s.c.(*redis.Client))
	}
	if err != nil {
		return nil, nil, err
	}
	var out []filterKey
	other := map[string]int64{}
	for i := 0; i < len(names); i += 1000 {
		batch := names[i:min(i+1000, len(names))]
		cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, n := range batch {
				p.Type(ctx, n)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		for j, c := range cmds {
			typ := c.(*redis.StatusCmd).Val()
			if f, ok := familyOfType(typ); ok {
				out = append(out, filterKey{batch[j], f})
			} else if f, ok := sketchOfType(typ); ok {
				out = append(out, filterKey{batch[j], f})
			} else if typ != "none" { // "none": deleted since the SCAN
				other[typ]++
			}
		}
	}
	return out, other, nil
}

// migration is one run's state.
type migration struct {
	src, dst *remote
	replace  bool
	rep      *migrateReport
	queries  []string
	bytes    atomic.Int64
	sent     sync.Map   // key → CRC of the SCANDUMP stream copied (uint32), or sketchSum of a sketch ([32]byte)
	mu       sync.Mutex // guards rep's counters and Problems
}

// result2 says what became of a key: ok means it belongs in the next pass.
type result2 struct {
	ok      bool
	problem string
}

// run applies one to every key with jobs workers and returns the keys for
// which it returned ok.
func (m *migration) run(ctx context.Context, keys []filterKey, jobs int, done *atomic.Int64, one func(filterKey) result2) []filterKey {
	next := make(chan int)
	oks := make([]bool, len(keys))
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := one(keys[i])
				oks[i] = r.ok
				if r.problem != "" {
					m.mu.Lock()
					if len(m.rep.Problems) < 50 {
						m.rep.Problems = append(m.rep.Problems, r.problem)
					}
					m.mu.Unlock()
				}
				done.Add(1)
			}
		}()
	}
	for i := range keys {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var out []filterKey
	for i, ok := range oks {
		if ok {
			out = append(out, keys[i])
		}
	}
	return out
}

func (m *migration) count(p *int64) {
	m.mu.Lock()
	*p++
	m.mu.Unlock()
}

// copyKey copies one key unless DST already holds it identically.
func (m *migration) copyKey(ctx context.Context, k filterKey) result2 {
	if k.fam.sketch {
		return m.copySketch(ctx, k)
	}
	fail := func(format string, args ...any) result2 {
		m.count(&m.rep.Failed)
		return result2{problem: fmt.Sprintf("%s %q: ", k.fam.prefix, k.name) + fmt.Sprintf(format, args...)}
	}
	old, exists, err := m.dst.keyFamily(ctx, k.name)
	if err != nil && !m.replace {
		m.count(&m.rep.Conflicts)
		return result2{problem: fmt.Sprintf("%q: DST: %v", k.name, err)}
	}
	if exists && old == k.fam && m.same(ctx, k) {
		m.count(&m.rep.Unchanged)
		return result2{ok: true}
	}
	if exists && !m.replace {
		m.count(&m.rep.Conflicts)
		return result2{problem: fmt.Sprintf("%q: DST holds a different %s filter under this name (left alone; --replace overwrites it)", k.name, old.prefix)}
	}
	var sum uint32
	n, err := m.dst.putKey(ctx, k.fam, k.name, func(load func(int64, []byte) error) error {
		return m.src.scanDump(ctx, k.fam, k.name, func(iter int64, data []byte) error {
			sum = recordSum(sum, iter, data)
			return load(iter, data)
		})
	})
	if err == nil {
		m.sent.Store(k.name, sum)
	}
	if errors.Is(err, errEmptyCuckoo) {
		m.sent.Delete(k.name)
		err = m.reserveEmptyCuckoo(ctx, k.name)
	}
	if err != nil && k.fam == familyNative && n == 0 {
		// The header chunk was refused: DST is not bloom serve.
		return fail("%v — a bloomkit filter (made with BF.RESERVE … LAYOUT or WINDOW) can only be copied to bloom serve", err)
	}
	if err != nil {
		return fail("%v", err)
	}
	m.bytes.Add(n)
	if ttl, err := m.src.c.PTTL(ctx, k.name).Result(); err == nil && ttl > 0 {
		if err := m.dst.c.PExpire(ctx, k.name, ttl).Err(); err != nil {
			return fail("setting its TTL: %v", err)
		}
	}
	m.count(&m.rep.Copied)
	return result2{ok: true}
}

// same reports whether DST holds k with the same contents as SRC: equal
// SCANDUMP streams, or for empty cuckoo filters (which have none) equal
// CF.INFO.
func (m *migration) same(ctx context.Context, k filterKey) bool {
	a, _, err1 := m.src.streamSum(ctx, k.fam, k.name)
	b, _, err2 := m.dst.streamSum(ctx, k.fam, k.name)
	if errors.Is(err1, errEmptyCuckoo) && errors.Is(err2, errEmptyCuckoo) {
		ia, err1 := m.src.c.Do(ctx, "CF.INFO", k.name).Slice()
		ib, err2 := m.dst.c.Do(ctx, "CF.INFO", k.name).Slice()
		return err1 == nil && err2 == nil && reflect.DeepEqual(ia, ib)
	}
	return err1 == nil && err2 == nil && a == b
}

// reserveEmptyCuckoo recreates an empty cuckoo filter from CF.INFO, since
// RedisBloom dumps nothing for one.
func (m *migration) reserveEmptyCuckoo(ctx context.Context, key string) error {
	info, err := infoMap(ctx, m.src, "CF", key)
	if err != nil {
		return err
	}
	capacity := info["Number of buckets"] * info["Bucket size"]
	args := []any{"CF.RESERVE", key, capacity, "BUCKETSIZE", info["Bucket size"], "MAXITERATIONS", info["Max iterations"]}
	if e := info["Expansion rate"]; e > 0 {
		args = append(args, "EXPANSION", e)
	}
	if m.replace {
		m.dst.c.Del(ctx, key)
	}
	return m.dst.c.Do(ctx, args...).Err()
}

// infoMap reads BF.INFO / CF.INFO as field → number.
func infoMap(ctx context.Context, s *remote, prefix, key string) (map[string]int64, error) {
	v, err := s.c.Do(ctx, prefix+".INFO", key).Slice()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for i := 0; i+1 < len(v); i += 2 {
		name := fmt.Sprint(v[i])
		switch x := v[i+1].(type) {
		case int64:
			out[name] = x
		case string:
			n, _ := strconv.ParseInt(x, 10, 64)
			out[name] = n
		}
	}
	return out, nil
}

// verifyKey compares INFO and the answers to the sample queries on both
// sides, and for a key copied in this run the SCANDUMP stream DST now gives
// with the one SRC sent.
func (m *migration) verifyKey(ctx context.Context, k filterKey) result2 {
	if k.fam.sketch {
		return m.verifySketch(ctx, k)
	}
	bad := func(format string, args ...any) result2 {
		return result2{problem: fmt.Sprintf("%s %q: verification: ", k.fam.prefix, k.name) + fmt.Sprintf(format, args...)}
	}
	ia, qa, err := m.probe(ctx, m.src, k)
	if err != nil {
		return bad("SRC: %v", err)
	}
	ib, qb, err := m.dst.probeWith(ctx, k, m.queries)
	if err != nil {
		return bad("DST: %v", err)
	}
	if !reflect.DeepEqual(ia, ib) {
		return bad("INFO differs: SRC %v, DST %v", ia, ib)
	}
	if !reflect.DeepEqual(qa, qb) {
		return bad("answers to the sample queries differ")
	}
	if v, ok := m.sent.Load(k.name); ok {
		sum, _, err := m.dst.streamSum(ctx, k.fam, k.name)
		if err != nil && !errors.Is(err, errEmptyCuckoo) {
			return bad("DST: %v", err)
		}
		if sum != v.(uint32) {
			return bad("DST's SCANDUMP stream differs from what SRC sent")
		}
	}
	m.count(&m.rep.Verified)
	return result2{ok: true}
}

func (m *migration) probe(ctx context.Context, s *remote, k filterKey) ([]any, []any, error) {
	return s.probeWith(ctx, k, m.queries)
}

// probeWith reads INFO and the answers to queries in one round trip.
func (s *remote) probeWith(ctx context.Context, k filterKey, queries []string) ([]any, []any, error) {
	var info, answers *redis.Cmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Do(ctx, k.fam.prefix+".INFO", k.name)
		if len(queries) > 0 {
			args := []any{k.fam.prefix + ".MEXISTS", k.name}
			for _, q := range queries {
				args = append(args, q)
			}
			answers = p.Do(ctx, args...)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	i, err := info.Slice()
	if err != nil {
		return nil, nil, err
	}
	if answers == nil {
		return i, nil, nil
	}
	a, err := answers.Slice()
	return i, a, err
}

// sampleQueries are n random keys, the same for every key of a run.
func sampleQueries(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.FormatUint(rand.Uint64(), 36)
	}
	return out
}
