package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/redis/go-redis/v9"
)

// chunkBytes is how much one GETRANGE or SETRANGE of an export or import
// moves.
const chunkBytes = 1 << 20

// casScript changes the meta hash if its epoch, generation and busy token
// are as expected. ARGV: epoch, gen, busy token ("" for none), the number
// of fields to delete, those fields, then field/value pairs to set.
var casScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'gen', 'busy')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return redis.error_reply('BKCONFLICT the filter is at epoch ' .. tostring(cur[1]) .. ', generation ' .. tostring(cur[2]))
end
local busy = cur[3] or ''
if busy ~= ARGV[3] then return redis.error_reply('BKBUSY rebuild ' .. busy .. ' holds the filter') end
local nd = tonumber(ARGV[4])
for i = 5, 4 + nd do redis.call('HDEL', KEYS[1], ARGV[i]) end
local set = {}
for i = 5 + nd, #ARGV do set[#set + 1] = ARGV[i] end
if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
return 1`)

// deleteMetaScript deletes the meta hash if its epoch and generation are
// as expected.
var deleteMetaScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'gen')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return redis.error_reply('BKCONFLICT the filter is at epoch ' .. tostring(cur[1]) .. ', generation ' .. tostring(cur[2]))
end
return redis.call('DEL', KEYS[1])`)

// retireScript retires a shard key: renames it to KEYS[2] (ARGV[1] =
// "rename") or drops it ("drop"), and leaves in its place a tombstone hash
// that lives ARGV[2] seconds, so that a client still using the old name
// gets WRONGTYPE instead of an empty shard. It is idempotent.
var retireScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'hash' then return 0 end
if ARGV[1] == 'rename' then
  if t == 'string' then redis.call('RENAME', KEYS[1], KEYS[2]) end
elseif t ~= 'none' then
  redis.call('UNLINK', KEYS[1])
end
redis.call('HSET', KEYS[1], 'retired', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1`)

// mergeScript ORs an import's staged shard KEYS[2] into the shard KEYS[1]
// (which may hold adds made while the import ran) and drops the stage.
var mergeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('RENAME', KEYS[2], KEYS[1])
  redis.call('PERSIST', KEYS[1])
  return 1
end
redis.call('BITOP', 'OR', KEYS[1], KEYS[1], KEYS[2])
redis.call('UNLINK', KEYS[2])
return 1`)

// scriptErr maps the scripts' error replies to this package's errors.
func scriptErr(err error) error {
	switch {
	case err == nil:
		return nil
	case strings.HasPrefix(err.Error(), "BKCONFLICT"):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case strings.HasPrefix(err.Error(), "BKBUSY"):
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return err
}

func (f *Filter) cas(ctx context.Context, epoch uint64, genID, busy string, del []string, set ...any) error {
	args := []any{strconv.FormatUint(epoch, 10), genID, busy, len(del)}
	for _, d := range del {
		args = append(args, d)
	}
	args = append(args, set...)
	if err := casScript.Run(ctx, f.c, []string{f.metaKey}, args...).Err(); err != nil {
		return fmt.Errorf("redisfilter: updating %s: %w", f.metaKey, scriptErr(err))
	}
	return nil
}

// retire retires every shard key of g at epoch from, renaming each to its
// name at epoch to, or dropping it when drop is set.
func (f *Filter) retire(ctx context.Context, g *gen, from, to uint64, drop bool, note string) error {
	op := "rename"
	if drop {
		op = "drop"
	}
	ttl := int64(math.Ceil(f.opts.TombstoneTTL.Seconds()))
	for s := range g.shards() {
		keys := []string{f.shardKey(g, s, from), f.shardKey(g, s, to)}
		if err := retireScript.Run(ctx, f.c, keys, op, ttl, note).Err(); err != nil {
			return fmt.Errorf("redisfilter: retiring shard %d of %q: %w", s, f.name, err)
		}
	}
	return nil
}

// Builder adds the keys of a generation being built by Rebuild.
type Builder struct {
	f     *Filter
	g     *gen
	epoch uint64
}

// Params returns the new generation's parameters.
func (b *Builder) Params() bloom.Params { return b.g.params }

// AddMany inserts keys into the new generation, BatchSize keys per
// pipelined round trip.
func (b *Builder) AddMany(ctx context.Context, keys [][]byte) error {
	for len(keys) > 0 {
		n := min(len(keys), b.f.opts.BatchSize)
		pending := make([]int, n)
		for i := range pending {
			pending[i] = i
		}
		var pause time.Duration
		for len(pending) > 0 {
			retry, retired, err := b.f.round(ctx, b.epoch, []*gen{b.g}, keys[:n], pending, modeAdd, nil)
			if err != nil {
				return fmt.Errorf("redisfilter: rebuilding %q: %w", b.f.name, err)
			}
			if retired {
				return fmt.Errorf("%w: the generation being built of %q was retired", ErrConflict, b.f.name)
			}
			if len(retry) > 0 {
				pause = min(max(2*pause, time.Millisecond), 100*time.Millisecond)
				if err := sleep(ctx, pause); err != nil {
					return fmt.Errorf("redisfilter: rebuilding %q: %w", b.f.name, err)
				}
			}
			pending = retry
		}
		keys = keys[n:]
	}
	return nil
}

// Add inserts key into the new generation.
func (b *Builder) Add(ctx context.Context, key []byte) error {
	return b.AddMany(ctx, [][]byte{key})
}

// Rebuild replaces the filter by a new generation sized by o (Capacity,
// ErrorRate, Seed, RandomSeed, ShardBytes; a zero Capacity keeps the
// current size, seed and shard size). It first makes every client add to
// both generations, then calls fill, which should add through b the keys
// the new generation must hold (from the application's source of truth),
// then switches every client to the new generation and drops the old one.
// Every key added by any client after fill was called is in the new
// generation; keys added before, and not re-added by fill, are forgotten.
// Clients never see a half-built filter: until the switch they test the old
// generation. If fill fails the new generation is dropped and the old one
// stays live. A nil fill gives an empty new generation (see Reset).
//
// Clients opened later with the old Options get ErrParamsMismatch when the
// size changed; attach with zero Capacity to follow whatever is live.
func (f *Filter) Rebuild(ctx context.Context, o Options, fill func(ctx context.Context, b *Builder) error) error {
	st, err := f.load(ctx)
	if err != nil {
		return err
	}
	ng, err := o.newGen(&st.live)
	if err != nil {
		return err
	}
	return f.rebuild(ctx, st, ng, func(ctx context.Context, g *gen, epoch uint64) error {
		if fill == nil {
			return nil
		}
		return fill(ctx, &Builder{f: f, g: g, epoch: epoch})
	})
}

// Reset empties the filter for every client at once: a Rebuild with the
// same parameters and nothing to fill. Use it to rotate a filter that
// tracks a period ("seen today").
func (f *Filter) Reset(ctx context.Context) error {
	return f.Rebuild(ctx, Options{}, nil)
}

// rebuild runs the rotation protocol (docs/redisfilter.md):
//
//  1. take the busy token at epoch E;
//  2. rename the live shards to epoch E+1 (tombstones at E), then set
//     epoch E+1 and next = ng: clients now add to both, test the live one;
//  3. fill ng;
//  4. drop the live shards at E+1, rename ng's to E+2, then set epoch E+2
//     and live = ng, releasing the token.
//
// If fill fails, step 4 drops ng instead and keeps the live generation.
func (f *Filter) rebuild(ctx context.Context, st *state, ng gen, fill func(context.Context, *gen, uint64) error) error {
	if st.next != nil {
		return fmt.Errorf("%w: filter %q is building generation %s", ErrBusy, f.name, st.next.id)
	}
	token := newID()
	live, e := st.live, st.epoch
	if err := f.cas(ctx, e, live.id, "", nil, "busy", token); err != nil {
		return err
	}
	if err := f.retire(ctx, &live, e, e+1, false, "epoch "+strconv.FormatUint(e+1, 10)); err != nil {
		return err
	}
	if err := f.cas(ctx, e, live.id, token, nil, append([]any{"epoch", strconv.FormatUint(e+1, 10)}, genFields("next_", ng)...)...); err != nil {
		return err
	}
	fillErr := fill(ctx, &ng, e+1)
	note := "epoch " + strconv.FormatUint(e+2, 10)
	if fillErr != nil {
		// Abort: drop ng, keep live.
		if err := f.retire(ctx, &ng, e+1, e+2, true, note); err != nil {
			return errors.Join(fillErr, err)
		}
		if err := f.retire(ctx, &live, e+1, e+2, false, note); err != nil {
			return errors.Join(fillErr, err)
		}
		err := f.cas(ctx, e+1, live.id, token, append(nextFields, "busy"), "epoch", strconv.FormatUint(e+2, 10))
		return errors.Join(fillErr, err)
	}
	if err := f.retire(ctx, &live, e+1, e+2, true, note); err != nil {
		return err
	}
	if err := f.retire(ctx, &ng, e+1, e+2, false, note); err != nil {
		return err
	}
	if err := f.cas(ctx, e+1, live.id, token, append(nextFields, "busy"),
		append([]any{"epoch", strconv.FormatUint(e+2, 10)}, genFields("", ng)...)...); err != nil {
		return err
	}
	if st, err := f.load(ctx); err == nil {
		f.st.Store(st)
	}
	return nil
}

// Delete drops the filter: its shards (leaving short-lived tombstones, so
// that clients still using it get ErrNotFound rather than an empty filter)
// and its meta hash. It also cleans up a filter left half-switched by a
// rebuilder that died. Deleting a filter that does not exist is not an
// error.
func (f *Filter) Delete(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		st, err := f.load(ctx)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		// A rotation whose process died may have renamed shards to the
		// next epoch or the one after: drop those too.
		for _, g := range []*gen{&st.live, st.next} {
			for e := st.epoch; g != nil && e <= st.epoch+2; e++ {
				if err := f.retire(ctx, g, e, e, true, "deleted"); err != nil {
					return err
				}
			}
		}
		err = deleteMetaScript.Run(ctx, f.c, []string{f.metaKey}, strconv.FormatUint(st.epoch, 10), st.live.id).Err()
		if err == nil {
			return nil
		}
		if err = scriptErr(err); !errors.Is(err, ErrConflict) || attempt == 10 {
			return fmt.Errorf("redisfilter: deleting %q: %w", f.name, err)
		}
		// A rotation moved on meanwhile: delete what it made.
	}
}

// Info describes the live generation.
type Info struct {
	// Params are the live generation's size, probes, seed and plan.
	Params bloom.Params
	// Generation is the live generation's id and Epoch the configuration
	// epoch; Rebuilding is true while a new generation is being built.
	Generation string
	Epoch      uint64
	Rebuilding bool
	// ShardBytes and Shards are the shard size and count.
	ShardBytes uint64
	Shards     uint64
	// BitsSet is the number of bits set (BITCOUNT over the shards).
	BitsSet uint64
}

// FillRatio returns the fraction of bits set.
func (i Info) FillRatio() float64 { return float64(i.BitsSet) / float64(i.Params.M) }

// ApproxCount estimates the number of distinct keys added from the bits
// set, as bloom.Blocked.ApproxCount does: with keys spread over the blocks
// as a Poisson process, the expected fill is 1 - exp(-λ(1 - (1-1/512)^k)),
// solved for λ = n/blocks. It is within about 1% at capacity (false
// positives among the added keys are not counted, as for any Bloom
// filter). A filter whose bits are all set returns math.MaxUint64.
func (i Info) ApproxCount() uint64 {
	if i.BitsSet >= i.Params.M {
		return math.MaxUint64
	}
	perKey := -math.Expm1(float64(i.Params.K) * math.Log1p(-1.0/bloom.BlockBits))
	lambda := -math.Log1p(-i.FillRatio()) / perKey
	return uint64(math.Round(lambda * float64(i.Params.M/bloom.BlockBits)))
}

// EstimatedFPR returns the false-positive rate expected now:
// bloom.BlockedFalsePositiveRate at ApproxCount keys. (The bloom package's
// exact per-block figure would need every block's popcount; BITCOUNT gives
// only the total.)
func (i Info) EstimatedFPR() float64 {
	n := i.ApproxCount()
	if n == math.MaxUint64 {
		return 1
	}
	return bloom.BlockedFalsePositiveRate(i.Params.M, n, i.Params.K)
}

// Info returns the live generation's description and statistics, counting
// the bits set with one BITCOUNT per shard in one pipelined round.
func (f *Filter) Info(ctx context.Context) (Info, error) {
	st, err := f.current(ctx)
	if err != nil {
		return Info{}, err
	}
	for {
		g := &st.live
		pipe := f.c.Pipeline()
		cmds := make([]*redis.IntCmd, g.shards())
		for s := range g.shards() {
			cmds[s] = pipe.BitCount(ctx, f.shardKey(g, s, st.epoch), nil)
		}
		_, _ = pipe.Exec(ctx)
		info := Info{Params: g.params, Generation: g.id, Epoch: st.epoch, Rebuilding: st.next != nil,
			ShardBytes: g.shardBytes, Shards: g.shards()}
		retired := false
		for _, c := range cmds {
			n, err := c.Result()
			if isRetired(err) {
				retired = true
				break
			}
			if err != nil {
				return Info{}, fmt.Errorf("redisfilter: counting bits of %q: %w", f.name, err)
			}
			info.BitsSet += uint64(n)
		}
		if !retired {
			return info, nil
		}
		if st, err = f.follow(ctx, st); err != nil {
			return Info{}, err
		}
	}
}

// Export writes the live generation to w in the bloomkit file format, as
// a blocked filter that bloom.Read or bloom.Blocked.ReadFrom load and that
// answers exactly as the shared filter did. It streams each shard with
// GETRANGE, 1 MiB at a time, so it needs no copy of the filter in memory.
// Adds made while it runs may or may not be included (bits are only ever
// set, so every key added before Export began is). If a rotation retires
// the generation meanwhile, Export fails with ErrConflict. It returns the
// number of bytes written.
func (f *Filter) Export(ctx context.Context, w io.Writer) (int64, error) {
	st, err := f.load(ctx)
	if err != nil {
		return 0, err
	}
	g := &st.live
	h := format.Header{Type: format.TypeBlocked, Seed: g.params.Seed, M: g.params.M, K: g.params.K,
		N: g.params.N, P: g.params.P, PayloadLen: g.params.M / 8}
	cw := &format.CRCWriter{W: w}
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("redisfilter: exporting %q: writing header: %w", f.name, err)
	}
	zeros := make([]byte, chunkBytes)
	for s := range g.shards() {
		key := f.shardKey(g, s, st.epoch)
		size := g.shardLen(s)
		for off := uint64(0); off < size; off += chunkBytes {
			n := min(chunkBytes, size-off)
			b, err := f.c.GetRange(ctx, key, int64(off), int64(off+n-1)).Bytes()
			if isRetired(err) {
				return cw.N, fmt.Errorf("%w: %q was rotated during the export", ErrConflict, f.name)
			}
			if err != nil {
				return cw.N, fmt.Errorf("redisfilter: exporting %q: GETRANGE %s: %w", f.name, key, err)
			}
			if uint64(len(b)) > n {
				return cw.N, fmt.Errorf("redisfilter: exporting %q: GETRANGE %s returned %d bytes, want at most %d", f.name, key, len(b), n)
			}
			if _, err := cw.Write(b); err != nil {
				return cw.N, fmt.Errorf("redisfilter: exporting %q: %w", f.name, err)
			}
			// Redis keeps a string only as long as its last set byte.
			if _, err := cw.Write(zeros[:n-uint64(len(b))]); err != nil {
				return cw.N, fmt.Errorf("redisfilter: exporting %q: %w", f.name, err)
			}
		}
	}
	if err := cw.WriteTrailer(); err != nil {
		return cw.N, fmt.Errorf("redisfilter: exporting %q: %w", f.name, err)
	}
	return cw.N, nil
}

// Import loads a blocked filter in the bloomkit file format (written by
// bloom.Blocked.WriteTo, `bloom build`, or Export) from r as a new
// generation and switches every client to it, as Rebuild does: the file's
// parameters (size, probes, seed) replace the filter's, and adds made by
// clients while the import runs are kept. The payload is streamed, 1 MiB
// at a time, into staging keys beside the new shards (all-zero chunks are
// skipped); only when the file's checksum has been verified are they merged
// into the new generation, so a damaged or truncated file changes nothing.
// Errors from reading the file wrap the bloom package's ErrChecksum,
// ErrTruncated, ErrType and the like.
func (f *Filter) Import(ctx context.Context, r io.Reader) error {
	cr := &format.CRCReader{R: r}
	h, err := format.ReadHeader(cr, format.TypeBlocked)
	if err != nil {
		return fmt.Errorf("redisfilter: importing into %q: %w", f.name, err)
	}
	st, err := f.load(ctx)
	if err != nil {
		return err
	}
	if h.Hash != bloom.HashXXH3 {
		// The bits of another hash id are not where this filter's clients
		// look for its keys.
		return fmt.Errorf("redisfilter: importing into %q: %w: the file has hash id %d, a filter kept in Redis uses id %d (build it with Params.Hash = bloom.HashXXH3)",
			f.name, bloom.ErrHash, h.Hash, bloom.HashXXH3)
	}
	ng := gen{id: newID(), params: bloom.Params{M: h.M, K: h.K, Seed: h.Seed, N: h.N, P: h.P, Hash: bloom.HashXXH3}, shardBytes: f.opts.ShardBytes}
	if ng.shardBytes == 0 {
		ng.shardBytes = st.live.shardBytes
	}
	if err := checkGen(ng); err != nil {
		return fmt.Errorf("redisfilter: importing into %q: %w: %w", f.name, format.ErrCorrupt, err)
	}
	if h.PayloadLen != h.M/8 {
		return fmt.Errorf("redisfilter: importing into %q: %w: payload of %d bytes, m = %d calls for %d", f.name, format.ErrCorrupt, h.PayloadLen, h.M, h.M/8)
	}
	token := newID()
	var staged []uint64
	dropStage := func() {
		for _, s := range staged {
			_ = f.c.Unlink(context.WithoutCancel(ctx), f.stageKey(&ng, s, token)).Err()
		}
	}
	buf := make([]byte, chunkBytes)
	for s := range ng.shards() {
		key := f.stageKey(&ng, s, token)
		size := ng.shardLen(s)
		for off := uint64(0); off < size; off += chunkBytes {
			n := min(chunkBytes, size-off)
			if _, err := io.ReadFull(cr, buf[:n]); err != nil {
				dropStage()
				return fmt.Errorf("redisfilter: importing into %q: %w", f.name, format.Truncated(err, "payload"))
			}
			if allZero(buf[:n]) {
				continue
			}
			if len(staged) == 0 || staged[len(staged)-1] != s {
				staged = append(staged, s)
			}
			pipe := f.c.Pipeline()
			pipe.SetRange(ctx, key, int64(off), string(buf[:n]))
			pipe.Expire(ctx, key, f.opts.TombstoneTTL)
			if _, err := pipe.Exec(ctx); err != nil {
				dropStage()
				return fmt.Errorf("redisfilter: importing into %q: SETRANGE %s: %w", f.name, key, err)
			}
		}
	}
	if err := cr.ReadTrailer(); err != nil {
		dropStage()
		return fmt.Errorf("redisfilter: importing into %q: %w", f.name, err)
	}
	err = f.rebuild(ctx, st, ng, func(ctx context.Context, g *gen, epoch uint64) error {
		for _, s := range staged {
			err := mergeScript.Run(ctx, f.c, []string{f.shardKey(g, s, epoch), f.stageKey(g, s, token)}).Err()
			if err != nil {
				return fmt.Errorf("redisfilter: importing into %q: merging shard %d: %w", f.name, s, err)
			}
		}
		return nil
	})
	if err != nil {
		dropStage()
	}
	return err
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
