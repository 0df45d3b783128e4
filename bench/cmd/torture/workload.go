package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

// Shared Bloom keys every worker writes to: bfAuto is created by the first
// BF.ADD with the server's defaults (capacity 100, scaling), bfScaling is
// reserved small so it grows many links, bfFixed is one large
// non-scaling link; bfBlocked and bfWindow are bloomkit's own filters
// (BF.RESERVE … LAYOUT blocked, and WINDOW 30m of 60 generations: it
// moves every 30 s, each move a logged BF.ADVANCE that replay must repeat
// and a snapshot must keep, while every item of a run is younger than the
// 30 minutes it keeps).
const (
	bfAuto    = "bf:auto"
	bfScaling = "bf:scaling"
	bfFixed   = "bf:fixed"
	bfBlocked = "bf:blocked"
	bfWindow  = "bf:window"
	srcKey    = "lc:src"
)

var sharedBF = []string{bfAuto, bfScaling, bfFixed, bfBlocked, bfWindow}

// cfPerKey caps the items one cuckoo key receives. Every item of a key has
// its own odd 8-bit fingerprint (128 exist); 100 keeps the search for an
// unused one short.
const cfPerKey = 100

// outcome of one command.
type outcome int

const (
	acked   outcome = iota // a reply arrived: the write must survive
	refused                // an error reply: not applied
	unknown                // no reply (connection lost, timeout): either way
)

// bfAck is one item whose BF.ADD / BF.MADD / BF.INSERT was acknowledged.
type bfAck struct {
	key, item string
	round     int
	at        time.Time
	gone      bool // lost within the allowed window: no longer checked
}

// cfItem is one cuckoo item: added once, maybe deleted once, never again.
type cfItem struct {
	key, item    string
	add, del     outcome
	hasDel       bool
	addRound     int
	delRound     int
	addAt, delAt time.Time
	gone         bool // outcome settled or unknowable: no longer checked
}

// copyKey is one BF.LOADCHUNK copy of the source filter; acked[i] is the ack
// time of chunk i of the source dump (zero: not acknowledged). Chunks are
// loaded in order and the copy stops at the first failure.
type copyKey struct {
	key   string
	round int
	acked []time.Time
	gone  bool
}

func (c *copyKey) complete(n int) bool { return len(c.acked) == n }

// chunk is one (iterator, data) pair of BF.SCANDUMP, as BF.LOADCHUNK takes it.
type chunk struct {
	iter int64
	data []byte
}

// stats counts what the clients saw.
type stats struct {
	ops        map[string]int // acknowledged commands by name
	items      int            // acknowledged item adds (BF and CF)
	cfDels     int            // acknowledged CF.DEL
	copies     int            // complete LOADCHUNK copies
	unknown    int            // commands without a reply
	refused    int            // error replies
	refusedMsg map[string]int
}

func newStats() stats { return stats{ops: map[string]int{}, refusedMsg: map[string]int{}} }

func (s *stats) add(o stats) {
	for k, v := range o.ops {
		s.ops[k] += v
	}
	for k, v := range o.refusedMsg {
		s.refusedMsg[k] += v
	}
	s.items += o.items
	s.cfDels += o.cfDels
	s.copies += o.copies
	s.unknown += o.unknown
	s.refused += o.refused
}

func (s *stats) acked() int {
	n := 0
	for _, v := range s.ops {
		n += v
	}
	return n
}

// worker is one client. Its ledger (what it had acknowledged) lives across
// rounds; only the connection is per round.
type worker struct {
	id    int
	run   string // makes item names unique across runs on one server
	rng   *rand.Rand
	seq   int
	src   []chunk
	round int

	bf     []bfAck
	cf     []*cfItem
	copies []*copyKey
	// deletable holds acknowledged, not yet deleted cuckoo items.
	deletable []*cfItem

	cfKey   string
	cfUsed  [256]bool
	cfCount int
	cfKeys  int
	keyN    int

	// pending is the cuckoo item whose CF.ADD is on the wire, for the
	// readers (set before sending, cleared when the reply arrives).
	pending atomic.Pointer[cfItem]

	live      []string // violations seen while running (a CF.DEL that found nothing)
	st        stats
	opTimeout time.Duration
}

func (w *worker) item(kind string) string {
	w.seq++
	return fmt.Sprintf("%s:%s:w%d:r%d:%d", w.run, kind, w.id, w.round, w.seq)
}

// classify turns a go-redis result into an outcome, counting it.
func (w *worker) classify(name string, err error) outcome {
	switch {
	case err == nil:
		w.st.ops[name]++
		return acked
	case isReply(err):
		w.st.refused++
		msg := err.Error()
		if len(msg) > 80 {
			msg = msg[:80]
		}
		w.st.refusedMsg[name+": "+msg]++
		return refused
	default:
		w.st.unknown++
		return unknown
	}
}

// runRound issues random writes until ctx ends or the connection fails.
func (w *worker) runRound(ctx context.Context, addr string, round int) {
	w.round = round
	c := redis.NewClient(bloomproc.ClientOptions(addr, w.opTimeout))
	defer c.Close()
	w.newCFKey() // a cuckoo key per round: a reservation lost in a crash cannot confuse a later round
	for ctx.Err() == nil {
		var o outcome
		switch r := w.rng.IntN(100); {
		case r < 22:
			o = w.bfAdd(ctx, c)
		case r < 40:
			o = w.bfMulti(ctx, c, false)
		case r < 54:
			o = w.bfMulti(ctx, c, true)
		case r < 78:
			o = w.cfAdd(ctx, c)
		case r < 97:
			o = w.cfDel(ctx, c)
		default:
			o = w.loadCopy(ctx, c)
		}
		if o == unknown {
			return // the server is gone (or hangs): the round is over for this client
		}
	}
}

func (w *worker) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	// Not derived from the round's context: ending the round must not
	// turn a reply that is on its way into "unknown" by cancelling it.
	return context.WithTimeout(context.Background(), w.opTimeout)
}

func (w *worker) bfAdd(ctx context.Context, c *redis.Client) outcome {
	key, item := sharedBF[w.rng.IntN(len(sharedBF))], w.item("bf")
	octx, cancel := w.opCtx(ctx)
	defer cancel()
	err := c.Do(octx, "BF.ADD", key, item).Err()
	o := w.classify("BF.ADD", err)
	if o == acked {
		w.bf = append(w.bf, bfAck{key: key, item: item, round: w.round, at: time.Now()})
		w.st.items++
	}
	return o
}

// bfMulti is BF.MADD, or BF.INSERT (into a shared key, or one time in ten
// into a new key it creates with its own capacity, error and expansion).
func (w *worker) bfMulti(ctx context.Context, c *redis.Client, insert bool) outcome {
	key := sharedBF[w.rng.IntN(len(sharedBF))]
	n := 2 + w.rng.IntN(9)
	items := make([]string, n)
	for i := range items {
		items[i] = w.item("bf")
	}
	name := "BF.MADD"
	args := []any{name, key}
	if insert {
		name = "BF.INSERT"
		if w.rng.IntN(10) == 0 {
			w.keyN++
			key = fmt.Sprintf("bfi:%s:w%d:%d", w.run, w.id, w.keyN)
			args = []any{name, key, "CAPACITY", 50, "ERROR", "0.01", "EXPANSION", 4, "ITEMS"}
		} else {
			args = []any{name, key, "ITEMS"}
		}
	}
	for _, it := range items {
		args = append(args, it)
	}
	octx, cancel := w.opCtx(ctx)
	defer cancel()
	res, err := c.Do(octx, args...).Slice()
	o := w.classify(name, err)
	if o != acked {
		return o
	}
	now := time.Now()
	for i, v := range res {
		if i >= len(items) {
			break
		}
		if _, isErr := v.(error); isErr {
			continue // that item was refused (e.g. a full filter)
		}
		w.bf = append(w.bf, bfAck{key: key, item: items[i], round: w.round, at: now})
		w.st.items++
	}
	return o
}

// newCFKey starts a new cuckoo key. Half of them are reserved with a small
// capacity and expansion 1 so they grow several sub-filters.
func (w *worker) newCFKey() {
	w.cfKeys++
	w.cfKey = fmt.Sprintf("cf:%s:w%d:%d", w.run, w.id, w.cfKeys)
	w.cfUsed = [256]bool{}
	w.cfCount = 0
}

func (w *worker) cfAdd(ctx context.Context, c *redis.Client) outcome {
	if w.cfCount >= cfPerKey {
		w.newCFKey()
	}
	if w.cfCount == 0 && w.cfKeys%2 == 0 {
		octx, cancel := w.opCtx(ctx)
		err := c.Do(octx, "CF.RESERVE", w.cfKey, 64, "BUCKETSIZE", 2, "EXPANSION", 1).Err()
		cancel()
		if o := w.classify("CF.RESERVE", err); o == unknown {
			return o
		}
	}
	// An item whose fingerprint no other item of this key has: then
	// CF.COUNT of it counts exactly its own copies, a CF.DEL can remove
	// only its own fingerprint, and "deleted" is checkable. The
	// fingerprint is odd so the item's two buckets always differ (see the
	// package comment).
	var item string
	var fp byte
	for {
		item = w.item("cf")
		fp = fingerprint(item)
		if fp%2 == 1 && !w.cfUsed[fp] {
			break
		}
	}
	w.cfUsed[fp] = true
	w.cfCount++
	e := &cfItem{key: w.cfKey, item: item, addRound: w.round}
	octx, cancel := w.opCtx(ctx)
	defer cancel()
	w.pending.Store(e)
	err := c.Do(octx, "CF.ADD", e.key, item).Err()
	w.pending.Store(nil)
	e.add = w.classify("CF.ADD", err)
	e.addAt = time.Now()
	switch e.add {
	case acked:
		w.st.items++
		w.deletable = append(w.deletable, e)
		w.cf = append(w.cf, e)
	case unknown:
		w.cf = append(w.cf, e) // checked once: 0 or 1 copies, never 2
	}
	return e.add
}

// fingerprint is RedisBloom's 8-bit cuckoo fingerprint of item (1..255).
func fingerprint(item string) byte {
	return byte(redisbloom.CuckooHash([]byte(item))%255 + 1)
}

func (w *worker) cfDel(ctx context.Context, c *redis.Client) outcome {
	if len(w.deletable) == 0 {
		return w.cfAdd(ctx, c)
	}
	i := w.rng.IntN(len(w.deletable))
	e := w.deletable[i]
	w.deletable[i] = w.deletable[len(w.deletable)-1]
	w.deletable = w.deletable[:len(w.deletable)-1]
	if e.gone {
		return acked
	}
	e.hasDel, e.delRound = true, w.round
	octx, cancel := w.opCtx(ctx)
	defer cancel()
	n, err := c.Do(octx, "CF.DEL", e.key, e.item).Int64()
	e.del = w.classify("CF.DEL", err)
	e.delAt = time.Now()
	switch e.del {
	case acked:
		w.st.cfDels++
		if n != 1 {
			w.live = append(w.live, fmt.Sprintf("CF.DEL %s %s answered %d: the acknowledged CF.ADD (round %d) is missing while the server runs", e.key, e.item, n, e.addRound))
			e.gone = true
		}
	case refused:
		e.hasDel = false // not applied: the item stays, checked as added
	}
	return e.del
}

// loadCopy copies the source filter into a new key chunk by chunk with
// BF.LOADCHUNK, as `bloom migrate` or a RedisBloom client restoring a dump
// would.
func (w *worker) loadCopy(ctx context.Context, c *redis.Client) outcome {
	w.keyN++
	k := &copyKey{key: fmt.Sprintf("lc:%s:w%d:%d", w.run, w.id, w.keyN), round: w.round}
	w.copies = append(w.copies, k)
	for _, ch := range w.src {
		octx, cancel := w.opCtx(ctx)
		err := c.Do(octx, "BF.LOADCHUNK", k.key, ch.iter, ch.data).Err()
		cancel()
		o := w.classify("BF.LOADCHUNK", err)
		if o != acked {
			return o
		}
		k.acked = append(k.acked, time.Now())
	}
	w.st.copies++
	return acked
}

// adminStats counts the background persistence commands.
type adminStats struct {
	bgsave, bgsaveBusy   int
	rewrite, rewriteBusy int
	rewriteUnsupported   bool
	failed               map[string]int
}

func (a *adminStats) add(o adminStats) {
	a.bgsave += o.bgsave
	a.bgsaveBusy += o.bgsaveBusy
	a.rewrite += o.rewrite
	a.rewriteBusy += o.rewriteBusy
	a.rewriteUnsupported = a.rewriteUnsupported || o.rewriteUnsupported
	if a.failed == nil {
		a.failed = map[string]int{}
	}
	for k, v := range o.failed {
		a.failed[k] += v
	}
}

// admin issues BGSAVE and BGREWRITEAOF at random moments (every 30-300 ms)
// until ctx ends or the connection fails. "Already in progress" is normal,
// and so is an unknown BGREWRITEAOF on servers that do not have it yet.
func admin(ctx context.Context, addr string, rng *rand.Rand, timeout time.Duration) adminStats {
	st := adminStats{failed: map[string]int{}}
	c := redis.NewClient(bloomproc.ClientOptions(addr, timeout))
	defer c.Close()
	for {
		select {
		case <-ctx.Done():
			return st
		case <-time.After(time.Duration(30+rng.IntN(270)) * time.Millisecond):
		}
		cmd := "BGSAVE"
		if rng.IntN(5) < 2 {
			cmd = "BGREWRITEAOF"
		}
		octx, cancel := context.WithTimeout(context.Background(), timeout)
		err := c.Do(octx, cmd).Err()
		cancel()
		msg := ""
		if err != nil {
			msg = strings.ToLower(err.Error())
		}
		switch {
		case err != nil && !isReply(err):
			return st // the server is gone
		case cmd == "BGSAVE" && err == nil:
			st.bgsave++
		case cmd == "BGREWRITEAOF" && err == nil:
			st.rewrite++
		case strings.Contains(msg, "in progress") || strings.Contains(msg, "already"):
			if cmd == "BGSAVE" {
				st.bgsaveBusy++
			} else {
				st.rewriteBusy++
			}
		case cmd == "BGREWRITEAOF" && strings.Contains(msg, "unknown command"):
			st.rewriteUnsupported = true
		default:
			if len(msg) > 100 {
				msg = msg[:100]
			}
			st.failed[cmd+": "+msg]++
		}
	}
}

// sortedCounts renders a count map as "k ×n" lines, most frequent first.
func sortedCounts(m map[string]int) []string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.k + " ×" + strconv.Itoa(e.v)
	}
	return out
}

// sighting is a reader's CF.EXISTS = 1 for an item whose CF.ADD had not
// been answered yet: the server revealed that write to another client.
type sighting struct {
	e     *cfItem
	round int
	at    time.Time
}

// reader looks, with CF.EXISTS, at the items other clients are adding
// right now. Every item of a key has its own fingerprint, so 1 means the
// add was applied. No reply may reveal a write before it is durable, so
// an item seen this way must survive the kill like an acknowledged one.
type reader struct {
	id        int
	rng       *rand.Rand
	seen      []sighting
	reads     int
	opTimeout time.Duration
}

func (r *reader) runRound(ctx context.Context, addr string, round int, ws []*worker) {
	c := redis.NewClient(bloomproc.ClientOptions(addr, r.opTimeout))
	defer c.Close()
	for ctx.Err() == nil {
		e := ws[r.rng.IntN(len(ws))].pending.Load()
		if e == nil {
			time.Sleep(50 * time.Microsecond) // nothing in flight there
			continue
		}
		octx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
		n, err := c.Do(octx, "CF.EXISTS", e.key, e.item).Int64()
		at := time.Now()
		cancel()
		if err != nil && !isReply(err) {
			return
		}
		r.reads++
		if err == nil && n == 1 {
			r.seen = append(r.seen, sighting{e: e, round: round, at: at})
		}
	}
}

// runWorkers runs every worker, reader and the admin client until ctx ends
// and all of them have returned (each command has its own timeout).
func runWorkers(ctx context.Context, addr string, round int, ws []*worker, rs []*reader, rng *rand.Rand, timeout time.Duration) adminStats {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runRound(ctx, addr, round)
		}()
	}
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.runRound(ctx, addr, round, ws)
		}()
	}
	var st adminStats
	wg.Add(1)
	go func() {
		defer wg.Done()
		st = admin(ctx, addr, rng, timeout)
	}()
	wg.Wait()
	return st
}
