// Package redisfilter is a Bloom filter whose bits live in Redis or Redis
// Cluster, so that many processes on many machines share one filter: a
// crawler fleet's "seen" set, a cache tier's "known keys".
//
// The filter is a bloom.Blocked: every key's k bits lie in one 512-bit
// block, so Add, Test and TestAndAdd are each one atomic BITFIELD command,
// and a filter built offline with the bloom package (or `bloom build`) can
// be imported, and a shared one exported, in the bloomkit file format.
//
// # Layout in Redis
//
// For a filter called name (with the default prefix "bloomkit"):
//
//	bloomkit:{name}:meta                   hash: format, m, k, seed, n, p, shard_bytes,
//	                                       gen, epoch (and next_* during a rebuild)
//	bloomkit:{name:gen:shard}:bits:epoch   string: the bits of one shard
//
// The blocks are cut into shards of Options.ShardBytes bytes (64 MiB by
// default, far below Redis's 512 MB string limit), shard i holding blocks
// [i*ShardBytes/64, (i+1)*ShardBytes/64). A shard's bytes, as GETRANGE
// returns them, are exactly the bloom file format's payload bytes of its
// blocks (bit j of block b is bit j%8, counted from the least significant,
// of payload byte 64b + j/8). The shard number is inside the hash tag, so
// the shards spread over the cluster's slots and nodes; gen is a random
// 64-bit id chosen when a generation is created, so a re-created filter
// never shares a key with an old one.
//
// # Generations and rotation
//
// Rebuild, Reset and Import build a new generation beside the live one and
// switch every client to it without a window of wrong answers. Each change
// of the filter's configuration increases the meta hash's epoch; the shard
// keys carry the epoch in their name, and before the epoch changes every
// shard key of the old epoch is renamed (or dropped) and replaced by a
// small tombstone hash. A client still working at the old epoch then gets
// WRONGTYPE from its next BITFIELD, which has changed nothing, re-reads
// the meta hash and repeats the operation at the new epoch. While a new
// generation is being built, every add goes to both generations and every
// test to the live one, so nothing added while the rebuild runs is lost.
// See docs/redisfilter.md for the protocol and its guarantees.
package redisfilter

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/redis/go-redis/v9"
)

// MetaFormat is the version of the meta hash layout and key naming this
// package writes and reads.
const MetaFormat = 1

// Defaults for Options fields left zero.
const (
	DefaultPrefix       = "bloomkit"
	DefaultShardBytes   = 64 << 20
	DefaultBatchSize    = 8192
	DefaultParallel     = 4
	DefaultStallTimeout = 30 * time.Second
	DefaultMetaMaxAge   = 10 * time.Second
	DefaultTombstoneTTL = time.Hour
)

// MaxShardBytes is the largest shard: half of Redis's 512 MB string limit.
const MaxShardBytes = 256 << 20

// Errors, returned wrapped with details; test them with errors.Is.
var (
	// ErrNotFound: the filter does not exist (Open without Capacity, or a
	// filter deleted while in use).
	ErrNotFound = errors.New("redisfilter: filter not found")
	// ErrParamsMismatch: the filter exists with other parameters than the
	// Options passed to Open.
	ErrParamsMismatch = errors.New("redisfilter: filter exists with other parameters")
	// ErrInvalidOptions: a name or option is unusable.
	ErrInvalidOptions = errors.New("redisfilter: invalid options")
	// ErrBusy: another rebuild (or import) of the filter is running, or one
	// died half-way (see docs/redisfilter.md).
	ErrBusy = errors.New("redisfilter: a rebuild is in progress")
	// ErrConflict: the filter's configuration changed under a rebuild,
	// import or delete (a concurrent Delete, say).
	ErrConflict = errors.New("redisfilter: filter changed concurrently")
	// ErrStale: the filter stayed in mid-rotation for longer than
	// Options.StallTimeout (its rebuilder probably died).
	ErrStale = errors.New("redisfilter: filter is stuck in a rotation")
	// ErrCorruptMeta: the meta hash holds values this version cannot use.
	ErrCorruptMeta = errors.New("redisfilter: unreadable filter metadata")
)

// Options configure Open. Capacity and ErrorRate size a filter when it is
// created; when the filter exists they must match it (or both be zero to
// attach to whatever exists). The client-side fields (BatchSize and the
// durations) may differ between clients.
type Options struct {
	// Capacity is the number of distinct keys the filter is sized for.
	// Zero attaches to an existing filter and fails with ErrNotFound when
	// there is none.
	Capacity uint64
	// ErrorRate is the false-positive rate at Capacity keys, in (0, 1).
	ErrorRate float64
	// Seed is the hash seed. Filters built offline must use the same seed
	// to be imported as they are; bloom's default is 0.
	Seed uint64
	// RandomSeed makes a creating Open pick a secret random seed (against
	// crafted keys) and an attaching Open accept any stored seed.
	RandomSeed bool
	// ShardBytes is the size of a shard in bytes, a multiple of 64 (one
	// block) up to MaxShardBytes; 0 means DefaultShardBytes when creating
	// and "whatever is stored" when attaching.
	ShardBytes uint64
	// Prefix starts every key name; "bloomkit" by default. It must not
	// contain '{' or '}'.
	Prefix string
	// BatchSize is the number of keys AddMany, TestMany and TestAndAddMany
	// send per pipelined round trip (one BITFIELD per shard touched and
	// per 128 keys).
	BatchSize int
	// Parallel is how many batches of one AddMany, TestMany or
	// TestAndAddMany call are in flight at once (DefaultParallel when 0;
	// 1 sends them one after another).
	Parallel int
	// StallTimeout bounds how long an operation waits for a rotation in
	// progress to finish before failing with ErrStale.
	StallTimeout time.Duration
	// MetaMaxAge is how long a client trusts its copy of the meta hash
	// without re-reading it. Tombstones catch every change long before
	// that; the re-read is a safety net for clients idle for longer than
	// TombstoneTTL.
	MetaMaxAge time.Duration
	// TombstoneTTL is how long the tombstone left at a retired shard key
	// lives. It must be well above MetaMaxAge.
	TombstoneTTL time.Duration
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.MetaMaxAge <= 0 {
		o.MetaMaxAge = DefaultMetaMaxAge
	}
	if o.TombstoneTTL <= 0 {
		o.TombstoneTTL = DefaultTombstoneTTL
	}
	return o
}

// checkName rejects names and prefixes that would break the hash tags.
func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalidOptions, what)
	}
	if len(s) > 256 {
		return fmt.Errorf("%w: %s of %d bytes, the limit is 256", ErrInvalidOptions, what, len(s))
	}
	if strings.ContainsAny(s, "{}") {
		return fmt.Errorf("%w: %s %q contains '{' or '}'", ErrInvalidOptions, what, s)
	}
	return nil
}

func checkShardBytes(b uint64) error {
	if b == 0 || b%64 != 0 || b > MaxShardBytes {
		return fmt.Errorf("%w: shard size %d bytes is not a multiple of 64 from 64 to %d", ErrInvalidOptions, b, MaxShardBytes)
	}
	return nil
}

// gen is one generation of the filter's bits: its id and shape.
type gen struct {
	id         string
	params     bloom.Params
	shardBytes uint64
}

func (g gen) blocks() uint64         { return g.params.M / bloom.BlockBits }
func (g gen) blocksPerShard() uint64 { return g.shardBytes / 64 }
func (g gen) shards() uint64 {
	return (g.blocks() + g.blocksPerShard() - 1) / g.blocksPerShard()
}

// shardLen returns the length in bytes of shard s.
func (g gen) shardLen(s uint64) uint64 {
	first := s * g.blocksPerShard()
	return min(g.blocksPerShard(), g.blocks()-first) * 64
}

// state is a client's copy of the meta hash.
type state struct {
	epoch uint64
	live  gen
	next  *gen // the generation being built, nil when none
	at    time.Time
}

// Filter is a handle on a shared filter. It is safe for concurrent use by
// any number of goroutines; any number of Filters, in any number of
// processes, may use the same filter at once.
type Filter struct {
	c       redis.UniversalClient
	name    string
	opts    Options
	metaKey string

	st        atomic.Pointer[state]
	refreshMu sync.Mutex

	batches  atomic.Uint64
	commands atomic.Uint64
	images   atomic.Uint64
	retries  atomic.Uint64
}

// Open attaches to the filter called name in the Redis (or Redis Cluster,
// or Sentinel setup) that c talks to, creating it from o.Capacity and
// o.ErrorRate when it does not exist. Two processes racing to create the
// same filter end with one configuration: creation is one atomic script,
// and the loser attaches to the winner's filter. Opening an existing filter
// with other parameters fails with ErrParamsMismatch.
func Open(ctx context.Context, c redis.UniversalClient, name string, o Options) (*Filter, error) {
	o = o.withDefaults()
	if err := checkName("filter name", name); err != nil {
		return nil, err
	}
	if err := checkName("key prefix", o.Prefix); err != nil {
		return nil, err
	}
	f := &Filter{c: c, name: name, opts: o, metaKey: fmt.Sprintf("%s:{%s}:meta", o.Prefix, name)}
	var want gen
	if o.Capacity > 0 {
		var err error
		if want, err = o.newGen(nil); err != nil {
			return nil, err
		}
	} else if o.ErrorRate != 0 {
		return nil, fmt.Errorf("%w: ErrorRate without Capacity", ErrInvalidOptions)
	}
	st, err := f.load(ctx)
	if errors.Is(err, ErrNotFound) && o.Capacity > 0 {
		if err := f.create(ctx, want); err != nil {
			return nil, err
		}
		st, err = f.load(ctx)
	}
	if err != nil {
		return nil, err
	}
	if o.Capacity > 0 {
		if err := o.match(st.live); err != nil {
			return nil, fmt.Errorf("%w: filter %q: %s", ErrParamsMismatch, name, err)
		}
	}
	f.st.Store(st)
	return f, nil
}

// newGen returns a new generation sized by o, with a fresh id. base, when
// not nil, supplies what o leaves open (a rebuild with zero Capacity keeps
// the live shape).
func (o Options) newGen(base *gen) (gen, error) {
	var g gen
	switch {
	case o.Capacity > 0:
		if !(o.ErrorRate > 0 && o.ErrorRate < 1) {
			return g, fmt.Errorf("%w: error rate %v is not in (0, 1)", ErrInvalidOptions, o.ErrorRate)
		}
		g.params = bloom.EstimateBlocked(o.Capacity, o.ErrorRate)
		// A filter kept in Redis stays on hash id 1: the meta hash does not
		// record the id, so every client, of any version, derives it alike.
		g.params.Hash = bloom.HashXXH3
		if g.params.M > bloom.MaxBits {
			return g, fmt.Errorf("%w: %d keys at rate %v need %d bits, the limit is %d", ErrInvalidOptions, o.Capacity, o.ErrorRate, g.params.M, uint64(bloom.MaxBits))
		}
		g.params.Seed = o.Seed
		if o.RandomSeed {
			g.params.Seed = bloom.RandomSeed()
		}
	case base != nil:
		g.params = base.params
	default:
		return g, fmt.Errorf("%w: zero Capacity", ErrInvalidOptions)
	}
	g.shardBytes = o.ShardBytes
	if g.shardBytes == 0 {
		g.shardBytes = DefaultShardBytes
		if base != nil {
			g.shardBytes = base.shardBytes
		}
	}
	if err := checkShardBytes(g.shardBytes); err != nil {
		return g, err
	}
	g.id = newID()
	return g, nil
}

// match reports how the stored generation g differs from what o asks for.
// The stored m and k are not compared with today's EstimateBlocked: a
// filter sized by an earlier version's model for the same keys and rate is
// the filter that was asked for, and its stored m and k stay authoritative.
func (o Options) match(g gen) error {
	var diffs []string
	if g.params.N != o.Capacity || g.params.P != o.ErrorRate {
		diffs = append(diffs, fmt.Sprintf("sized for %d keys at %v, not %d at %v", g.params.N, g.params.P, o.Capacity, o.ErrorRate))
	}
	if !o.RandomSeed && g.params.Seed != o.Seed {
		diffs = append(diffs, fmt.Sprintf("seed %#x, not %#x", g.params.Seed, o.Seed))
	}
	if o.ShardBytes != 0 && g.shardBytes != o.ShardBytes {
		diffs = append(diffs, fmt.Sprintf("shards of %d bytes, not %d", g.shardBytes, o.ShardBytes))
	}
	if diffs == nil {
		return nil
	}
	return errors.New(strings.Join(diffs, "; "))
}

// newID returns 16 random hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	if binary.LittleEndian.Uint64(b[:]) == 0 {
		b[0] = 1
	}
	return hex.EncodeToString(b[:])
}

// Name returns the filter's name.
func (f *Filter) Name() string { return f.name }

// Params returns the live generation's parameters as this client last saw
// them.
func (f *Filter) Params() bloom.Params { return f.st.Load().live.params }

// shardKey returns the key of shard s of generation g at epoch e.
func (f *Filter) shardKey(g *gen, s, e uint64) string {
	return f.opts.Prefix + ":{" + f.name + ":" + g.id + ":" + strconv.FormatUint(s, 10) + "}:bits:" + strconv.FormatUint(e, 10)
}

// stageKey returns the key an import stages shard s of generation g in.
func (f *Filter) stageKey(g *gen, s uint64, token string) string {
	return f.opts.Prefix + ":{" + f.name + ":" + g.id + ":" + strconv.FormatUint(s, 10) + "}:stage:" + token
}

// Meta hash fields.
func genFields(prefix string, g gen) []any {
	return []any{
		prefix + "gen", g.id,
		prefix + "m", strconv.FormatUint(g.params.M, 10),
		prefix + "k", strconv.FormatUint(uint64(g.params.K), 10),
		prefix + "seed", strconv.FormatUint(g.params.Seed, 10),
		prefix + "n", strconv.FormatUint(g.params.N, 10),
		prefix + "p", strconv.FormatFloat(g.params.P, 'g', -1, 64),
		prefix + "shard_bytes", strconv.FormatUint(g.shardBytes, 10),
	}
}

var nextFields = []string{"next_gen", "next_m", "next_k", "next_seed", "next_n", "next_p", "next_shard_bytes"}

// createScript creates the meta hash unless it exists: the one atomic step
// that settles a creation race.
var createScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`)

func (f *Filter) create(ctx context.Context, g gen) error {
	args := append([]any{"format", strconv.Itoa(MetaFormat), "epoch", "1"}, genFields("", g)...)
	if err := createScript.Run(ctx, f.c, []string{f.metaKey}, args...).Err(); err != nil {
		return fmt.Errorf("redisfilter: creating filter %q: %w", f.name, err)
	}
	return nil
}

// load reads the meta hash.
func (f *Filter) load(ctx context.Context) (*state, error) {
	m, err := f.c.HGetAll(ctx, f.metaKey).Result()
	if err != nil {
		return nil, fmt.Errorf("redisfilter: reading %s: %w", f.metaKey, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: %q (no key %s)", ErrNotFound, f.name, f.metaKey)
	}
	st, err := parseMeta(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptMeta, f.metaKey, err)
	}
	st.at = time.Now()
	return st, nil
}

func parseMeta(m map[string]string) (*state, error) {
	if v := m["format"]; v != strconv.Itoa(MetaFormat) {
		return nil, fmt.Errorf("format %q, this version reads %d", v, MetaFormat)
	}
	epoch, err := strconv.ParseUint(m["epoch"], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("epoch: %w", err)
	}
	st := &state{epoch: epoch}
	if st.live, err = parseGen(m, ""); err != nil {
		return nil, err
	}
	if m["next_gen"] != "" {
		g, err := parseGen(m, "next_")
		if err != nil {
			return nil, err
		}
		st.next = &g
	}
	return st, nil
}

func parseGen(m map[string]string, prefix string) (gen, error) {
	var g gen
	var errs []error
	u := func(field string, bitSize int) uint64 {
		v, err := strconv.ParseUint(m[prefix+field], 10, bitSize)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", prefix, field, err))
		}
		return v
	}
	g.id = m[prefix+"gen"]
	g.params.M = u("m", 64)
	g.params.K = uint32(u("k", 32))
	g.params.Seed = u("seed", 64)
	g.params.N = u("n", 64)
	g.shardBytes = u("shard_bytes", 64)
	p, err := strconv.ParseFloat(m[prefix+"p"], 64)
	if err != nil {
		errs = append(errs, fmt.Errorf("%sp: %w", prefix, err))
	}
	g.params.P = p
	// A shared filter is blocked with hash id HashXXH3; the id is not
	// stored in Redis, so clients of every version derive the same bits.
	g.params.Hash = bloom.HashXXH3
	if err := errors.Join(errs...); err != nil {
		return g, err
	}
	if err := checkGen(g); err != nil {
		return g, err
	}
	return g, nil
}

// checkGen checks what a client relies on: a whole number of blocks, a
// probe count Locate handles, a usable shard size and a safe id.
func checkGen(g gen) error {
	p := g.params
	switch {
	case g.id == "" || strings.ContainsAny(g.id, "{}"):
		return fmt.Errorf("bad generation id %q", g.id)
	case p.M == 0 || p.M%bloom.BlockBits != 0 || p.M > bloom.MaxBits:
		return fmt.Errorf("m = %d is not a positive multiple of %d up to %d", p.M, bloom.BlockBits, uint64(bloom.MaxBits))
	case p.K == 0 || p.K > bloom.MaxK:
		return fmt.Errorf("k = %d is not in 1..%d", p.K, bloom.MaxK)
	case p.P < 0 || p.P >= 1 || math.IsNaN(p.P):
		return fmt.Errorf("p = %v is not in [0, 1)", p.P)
	}
	return checkShardBytes(g.shardBytes)
}

// current returns the client's state, re-reading the meta hash when it is
// older than MetaMaxAge.
func (f *Filter) current(ctx context.Context) (*state, error) {
	st := f.st.Load()
	if time.Since(st.at) <= f.opts.MetaMaxAge {
		return st, nil
	}
	f.refreshMu.Lock()
	defer f.refreshMu.Unlock()
	if st = f.st.Load(); time.Since(st.at) <= f.opts.MetaMaxAge {
		return st, nil
	}
	st, err := f.load(ctx)
	if err != nil {
		return nil, err
	}
	f.st.Store(st)
	return st, nil
}

// follow is called when an operation at state seen met a retired shard: it
// re-reads the meta hash until its epoch or generation differs from seen's
// (a rotation retires the shards first and switches the meta hash right
// after), backing off from 1 ms to 100 ms, for at most StallTimeout.
func (f *Filter) follow(ctx context.Context, seen *state) (*state, error) {
	f.retries.Add(1)
	if st := f.st.Load(); st.epoch != seen.epoch || st.live.id != seen.live.id {
		return st, nil // another goroutine has followed already
	}
	deadline := time.Now().Add(f.opts.StallTimeout)
	wait := time.Millisecond
	for {
		st, err := f.load(ctx)
		if err != nil {
			return nil, err
		}
		if st.epoch != seen.epoch || st.live.id != seen.live.id {
			f.st.Store(st)
			return st, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: filter %q has stayed at epoch %d with retired shards for %v", ErrStale, f.name, st.epoch, f.opts.StallTimeout)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("redisfilter: waiting for a rotation of %q: %w", f.name, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// isRetired reports whether err is Redis's answer to a command on a
// retired shard key (now a tombstone hash).
func isRetired(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}

// Stats counts what this Filter has sent since Open.
type Stats struct {
	// Batches is the number of pipelines sent by the key operations: one
	// per single-key call, one per BatchSize keys of a batch call (plus one
	// per retry after a rotation). In a cluster a pipeline costs one round
	// trip to each node it touches, in parallel.
	Batches uint64
	// Commands is the number of commands in them: per batch and shard
	// touched, one BITFIELD per 128 keys, or one image command when the
	// keys are dense (twice as many during a rebuild, which writes to both
	// generations).
	Commands uint64
	// Images is how many of the Commands were image commands (a BITOP OR
	// script for AddMany, a GETRANGE for TestMany).
	Images uint64
	// Retries counts operations repeated because a rotation retired the
	// shards they used.
	Retries uint64
}

// Stats returns the counters of this handle.
func (f *Filter) Stats() Stats {
	return Stats{Batches: f.batches.Load(), Commands: f.commands.Load(), Images: f.images.Load(), Retries: f.retries.Load()}
}

// Plan is the shape a filter created with some Options would have in
// Redis.
type Plan struct {
	// Params are the blocked filter's size in bits, probes and seed.
	Params bloom.Params
	// ShardBytes is the size of a shard, Shards their number (the last one
	// may be shorter) and Bytes the total, the memory the bits take in
	// Redis once the filter fills.
	ShardBytes, Shards, Bytes uint64
}

// PlanFor returns the shape Open would create for o, without talking to
// Redis: use it to size shards and memory before creating a filter.
func PlanFor(o Options) (Plan, error) {
	if o.Capacity == 0 {
		return Plan{}, fmt.Errorf("%w: zero Capacity", ErrInvalidOptions)
	}
	g, err := o.newGen(nil)
	if err != nil {
		return Plan{}, err
	}
	return Plan{Params: g.params, ShardBytes: g.shardBytes, Shards: g.shards(), Bytes: g.params.M / 8}, nil
}
