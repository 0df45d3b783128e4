package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Window is a fleet-wide "seen in the last T" set: a key added at time t
// tests present until at least t + T, and absent (but for the filter's
// false-positive rate) after t + T + T/G + 2·Slack. It keeps G+1
// generations, each an ordinary shared Filter (its own shard set) named
// "<name>:w<index>", sized for Capacity keys at Rate/(G+1) so that the G+1
// tested together keep the rate at Rate.
//
// # Agreeing on the time
//
// Generation i covers [origin + i·T/G, origin + (i+1)·T/G) on the clock of
// the Redis server that holds the window's meta hash (its TIME), not on the
// clients' clocks, and origin and T/G are stored in that hash when the
// window is created: so every client computes the same generation, and
// rotation needs no coordination and has no moment where clients disagree
// about which generations exist. A client measures its offset to the
// server's TIME when it opens the window and every MetaMaxAge. Within Slack
// of a boundary, adds go to both generations around it and tests read both,
// which covers clients whose offset estimate is off by up to Slack.
//
// # Expiry
//
// A generation's meta and shard keys are created with PEXPIREAT at the end
// of the last span in which any client can test it (plus Slack and a
// minute), so old generations vanish without anyone deleting them, and a
// window nobody uses costs nothing after T + T/G.
//
// There is no TestAndAdd: the generations are separate keys (spread over
// the cluster's slots), so the test of all and the add to one cannot be a
// single atomic command.
type Window struct {
	c       redis.UniversalClient
	name    string
	o       WindowOptions
	metaKey string
	origin  int64 // ms on the server's clock
	span    int64 // ms, T/G
	gens    int

	mu      sync.Mutex
	offset  time.Duration // server clock − local clock
	checked time.Time     // when offset was measured
	open    map[int64]*Filter
	// missing are generations found not to exist that are too old for any
	// client to create now.
	missing map[int64]bool
}

// WindowOptions configure OpenWindow. Span, Generations, Capacity and Rate
// size a window when it is created and must match it afterwards (or all be
// zero to attach to whatever exists).
type WindowOptions struct {
	// Span is T: how long a key stays present at least.
	Span time.Duration
	// Generations is G, the number of generations T is cut into (4 by
	// default): a key tests absent at most T/G after it expired.
	Generations int
	// Capacity is the number of distinct keys one generation (T/G) holds at
	// Rate.
	Capacity uint64
	// Rate is the false-positive rate of the whole window.
	Rate float64
	// Slack bounds how far a client's estimate of the server's clock may
	// be off (1 s by default).
	Slack time.Duration
	// Filter are the options of each generation's Filter (Prefix, seed,
	// shard size, batching); their Capacity and ErrorRate are set by the
	// window.
	Filter Options
}

// DefaultGenerations is G when WindowOptions.Generations is 0.
const DefaultGenerations = 4

// OpenWindow attaches to the window called name, creating it when it does
// not exist and o sizes it.
func OpenWindow(ctx context.Context, c redis.UniversalClient, name string, o WindowOptions) (*Window, error) {
	o.Filter = o.Filter.withDefaults()
	if err := checkName("window name", name); err != nil {
		return nil, err
	}
	if o.Slack <= 0 {
		o.Slack = time.Second
	}
	creating := o.Span > 0 || o.Capacity > 0
	if creating {
		if o.Generations == 0 {
			o.Generations = DefaultGenerations
		}
		if o.Generations < 1 || o.Generations > 64 || o.Span < time.Duration(o.Generations)*10*time.Millisecond ||
			o.Capacity == 0 || !(o.Rate > 0 && o.Rate < 1) {
			return nil, fmt.Errorf("%w: window of %v in %d generations of %d keys at rate %v", ErrInvalidOptions, o.Span, o.Generations, o.Capacity, o.Rate)
		}
		if o.Span/time.Duration(o.Generations) < 4*o.Slack {
			return nil, fmt.Errorf("%w: a generation (%v) must be at least 4 × Slack (%v)", ErrInvalidOptions, o.Span/time.Duration(o.Generations), o.Slack)
		}
	}
	w := &Window{c: c, name: name, o: o, metaKey: fmt.Sprintf("%s:{%s}:window", o.Filter.Prefix, name), open: map[int64]*Filter{}, missing: map[int64]bool{}}
	if err := w.measure(ctx); err != nil {
		return nil, err
	}
	if creating {
		now := time.Now().Add(w.offset).UnixMilli()
		err := createWindowScript.Run(ctx, c, []string{w.metaKey},
			int64(o.Span/time.Millisecond)/int64(o.Generations), o.Generations, o.Capacity,
			strconv.FormatFloat(o.Rate, 'g', -1, 64), now).Err()
		if err != nil {
			return nil, fmt.Errorf("redisfilter: creating window %q: %w", name, err)
		}
	}
	m, err := c.HGetAll(ctx, w.metaKey).Result()
	if err != nil {
		return nil, fmt.Errorf("redisfilter: reading %s: %w", w.metaKey, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: window %q", ErrNotFound, name)
	}
	span, err1 := strconv.ParseInt(m["span_ms"], 10, 64)
	gens, err2 := strconv.Atoi(m["gens"])
	capacity, err3 := strconv.ParseUint(m["capacity"], 10, 64)
	rate, err4 := strconv.ParseFloat(m["rate"], 64)
	origin, err5 := strconv.ParseInt(m["origin_ms"], 10, 64)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil || span <= 0 || gens < 1 || capacity == 0 || m["format"] != "1" {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptMeta, w.metaKey, m)
	}
	if creating && (span != int64(o.Span/time.Millisecond)/int64(o.Generations) || gens != o.Generations || capacity != o.Capacity || rate != o.Rate) {
		return nil, fmt.Errorf("%w: window %q is %d generations of %d ms for %d keys at %v", ErrParamsMismatch, name, gens, span, capacity, rate)
	}
	w.span, w.gens, w.origin = span, gens, origin
	w.o.Capacity, w.o.Rate, w.o.Generations = capacity, rate, gens
	w.o.Span = time.Duration(span*int64(gens)) * time.Millisecond
	return w, nil
}

// createWindowScript creates the meta hash unless it exists.
var createWindowScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'format', '1', 'span_ms', ARGV[1], 'gens', ARGV[2], 'capacity', ARGV[3], 'rate', ARGV[4], 'origin_ms', ARGV[5])
return 1`)

// measure estimates the server's clock offset from one TIME round trip.
func (w *Window) measure(ctx context.Context) error {
	before := time.Now()
	var t time.Time
	var err error
	if cc, ok := w.c.(*redis.ClusterClient); ok {
		// The node that holds the meta hash keeps the window's time.
		var node *redis.Client
		if node, err = cc.MasterForKey(ctx, w.metaKey); err == nil {
			t, err = node.Time(ctx).Result()
		}
	} else {
		t, err = w.c.Time(ctx).Result()
	}
	if err != nil {
		return fmt.Errorf("redisfilter: window %q: reading the server's TIME: %w", w.name, err)
	}
	after := time.Now()
	mid := before.Add(after.Sub(before) / 2)
	w.mu.Lock()
	w.offset, w.checked = t.Sub(mid), after
	w.mu.Unlock()
	return nil
}

// now is the server's time as this client estimates it, in ms.
func (w *Window) now(ctx context.Context) (int64, error) {
	w.mu.Lock()
	stale := time.Since(w.checked) > w.o.Filter.MetaMaxAge
	w.mu.Unlock()
	if stale {
		if err := w.measure(ctx); err != nil {
			return 0, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Now().Add(w.offset).UnixMilli(), nil
}

func (w *Window) index(ms int64) int64 {
	d := ms - w.origin
	if d < 0 {
		return -1 - (-d-1)/w.span
	}
	return d / w.span
}

// generations returns the generations to add to and to test now.
func (w *Window) generations(ctx context.Context) (add []int64, test []int64, err error) {
	now, err := w.now(ctx)
	if err != nil {
		return nil, nil, err
	}
	slack := w.o.Slack.Milliseconds()
	lo, hi := w.index(now-slack), w.index(now+slack)
	for i := lo; i <= hi; i++ {
		add = append(add, i)
	}
	for i := lo - int64(w.gens); i <= hi; i++ {
		test = append(test, i)
	}
	return add, test, nil
}

// expiry is when generation i's keys may go: after the last moment any
// client can still test it.
func (w *Window) expiry(i int64) int64 {
	return w.origin + (i+int64(w.gens)+2)*w.span + 2*w.o.Slack.Milliseconds() + 60_000
}

// gen returns generation i's Filter, creating the generation (with its
// TTLs) when create is set; nil when it does not exist and create is not.
func (w *Window) gen(ctx context.Context, i int64, create bool) (*Filter, error) {
	w.mu.Lock()
	f := w.open[i]
	w.mu.Unlock()
	if f != nil {
		return f, nil
	}
	o := w.o.Filter
	o.Capacity, o.ErrorRate = 0, 0
	if create {
		o.Capacity, o.ErrorRate = w.o.Capacity, w.o.Rate/float64(w.gens+1)
	}
	name := w.name + ":w" + strconv.FormatInt(i, 10)
	f, err := Open(ctx, w.c, name, o)
	if errors.Is(err, ErrNotFound) && !create {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if create {
		if err := f.expireAt(ctx, w.expiry(i)); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	w.open[i] = f
	// Forget generations no client tests any more.
	for j := range w.open {
		if j < i-int64(w.gens)-2 {
			delete(w.open, j)
		}
	}
	w.mu.Unlock()
	return f, nil
}

// expireAtScript gives a shard key its full length (so that BITFIELD never
// creates it again without a TTL) and its expiry.
var expireAtScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]) - 1, '\0') end
return redis.call('PEXPIREAT', KEYS[1], ARGV[1])`)

// expireAt makes every key of the live generation (meta and shards) expire
// at ms on the server's clock.
func (f *Filter) expireAt(ctx context.Context, ms int64) error {
	st := f.st.Load()
	for s := range st.live.shards() {
		key := f.shardKey(&st.live, s, st.epoch)
		if err := expireAtScript.Run(ctx, f.c, []string{key}, ms, st.live.shardLen(s)).Err(); err != nil {
			return fmt.Errorf("redisfilter: setting the expiry of %s: %w", key, err)
		}
	}
	if err := f.c.PExpireAt(ctx, f.metaKey, time.UnixMilli(ms)).Err(); err != nil {
		return fmt.Errorf("redisfilter: setting the expiry of %s: %w", f.metaKey, err)
	}
	return nil
}

// Add inserts key into the current generation (both, near a boundary).
func (w *Window) Add(ctx context.Context, key []byte) error {
	return w.AddMany(ctx, [][]byte{key})
}

// AddString is Add for a string key.
func (w *Window) AddString(ctx context.Context, key string) error { return w.Add(ctx, bytesOf(key)) }

// AddMany inserts every key (batched as Filter.AddMany).
func (w *Window) AddMany(ctx context.Context, keys [][]byte) error {
	add, _, err := w.generations(ctx)
	if err != nil {
		return err
	}
	for _, i := range add {
		f, err := w.gen(ctx, i, true)
		if err != nil {
			return err
		}
		if err := f.AddMany(ctx, keys); err != nil {
			return fmt.Errorf("redisfilter: window %q generation %d: %w", w.name, i, err)
		}
	}
	return nil
}

// Test reports whether key was (probably) added within the window.
func (w *Window) Test(ctx context.Context, key []byte) (bool, error) {
	out, err := w.TestMany(ctx, [][]byte{key}, nil)
	if err != nil {
		return false, err
	}
	return out[0], nil
}

// TestString is Test for a string key.
func (w *Window) TestString(ctx context.Context, key string) (bool, error) {
	return w.Test(ctx, bytesOf(key))
}

// TestMany appends to dst whether each key was (probably) added within the
// window. The generations are asked concurrently.
func (w *Window) TestMany(ctx context.Context, keys [][]byte, dst []bool) ([]bool, error) {
	_, test, err := w.generations(ctx)
	if err != nil {
		return dst, err
	}
	results := make([][]bool, len(test))
	errs := make([]error, len(test))
	var wg sync.WaitGroup
	// A generation older than any a client with a clock within Slack
	// can add to, once found missing, stays missing.
	// (Adders write at or after generation hi-1, where hi is the newest
	// tested.)
	cutoff := test[len(test)-1] - 2
	for j, i := range test {
		w.mu.Lock()
		skip := w.missing[i]
		w.mu.Unlock()
		if skip {
			continue
		}
		wg.Go(func() {
			f, err := w.gen(ctx, i, false)
			if f == nil && err == nil && i < cutoff {
				w.mu.Lock()
				w.missing[i] = true
				for j := range w.missing {
					if j < cutoff-int64(w.gens)-2 {
						delete(w.missing, j)
					}
				}
				w.mu.Unlock()
			}
			if err != nil || f == nil {
				errs[j] = err
				return
			}
			results[j], errs[j] = f.TestMany(ctx, keys, nil)
			if errors.Is(errs[j], ErrNotFound) {
				// Expired between Open and the test: it held nothing
				// still in the window.
				results[j], errs[j] = nil, nil
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return dst, fmt.Errorf("redisfilter: window %q: %w", w.name, err)
	}
	for k := range keys {
		present := false
		for _, r := range results {
			if r != nil && r[k] {
				present = true
				break
			}
		}
		dst = append(dst, present)
	}
	return dst, nil
}

// Span is T, Generations G.
func (w *Window) Span() time.Duration { return w.o.Span }

// Generations is G.
func (w *Window) Generations() int { return w.gens }
