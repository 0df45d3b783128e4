package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// verdict is what one verification after a restart found.
type verdict struct {
	lost, lostAllowed               int // acknowledged adds missing; of them inside the everysec window
	resurrected, resurrectedAllowed int // acknowledged CF.DEL whose item is back
	duplicated                      int // CF.COUNT ≥ 2: a write applied twice
	revealed, revealedAllowed       int // unacknowledged adds a reader saw, gone after the restart
	copyBad, copyBadAllowed         int // LOADCHUNK copies with an acknowledged chunk missing or different
	violations                      int
	examples                        []string // the first few violations, described
}

func (v *verdict) add(o verdict) {
	v.lost += o.lost
	v.lostAllowed += o.lostAllowed
	v.resurrected += o.resurrected
	v.resurrectedAllowed += o.resurrectedAllowed
	v.duplicated += o.duplicated
	v.revealed += o.revealed
	v.revealedAllowed += o.revealedAllowed
	v.copyBad += o.copyBad
	v.copyBadAllowed += o.copyBadAllowed
	v.violations += o.violations
	for _, e := range o.examples {
		if len(v.examples) < maxExamples {
			v.examples = append(v.examples, e)
		}
	}
}

const maxExamples = 30

// checker verifies every worker's ledger against a restarted server.
type checker struct {
	c      *redis.Client
	round  int       // the round whose kill preceded this start
	killAt time.Time // when that kill was sent
	fsync  string
	window time.Duration
	clean  bool // after SIGTERM: nothing at all may be missing
	src    []chunk
	probes []string
	want   []int64 // the source filter's answers for probes
	v      verdict
}

// allowed reports whether losing a write acknowledged at at in round is
// within what appendfsync everysec may lose: the write belongs to the round
// that just ended in a kill and was acknowledged at most window before it.
func (k *checker) allowed(round int, at time.Time) bool {
	return !k.clean && k.fsync == "everysec" && round == k.round && k.killAt.Sub(at) <= k.window
}

func (k *checker) violation(format string, args ...any) {
	k.v.violations++
	if len(k.v.examples) < maxExamples {
		k.v.examples = append(k.v.examples, fmt.Sprintf("round %d: ", k.round)+fmt.Sprintf(format, args...))
	}
}

// beforeKill describes when something happened relative to the kill.
func (k *checker) beforeKill(what string, round int, at time.Time) string {
	if round != k.round || k.killAt.IsZero() {
		return fmt.Sprintf("%s in round %d", what, round)
	}
	return fmt.Sprintf("%s %v before the kill", what, k.killAt.Sub(at).Round(time.Millisecond))
}

// runPipe runs a pipeline; error replies stay in the commands, anything else
// (the server died, a timeout) is returned.
func runPipe(ctx context.Context, c *redis.Client, cmds [][]any) ([]*redis.Cmd, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pipe := c.Pipeline()
	out := make([]*redis.Cmd, len(cmds))
	for i, a := range cmds {
		out[i] = pipe.Do(ctx, a...)
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !isReply(err) {
		return nil, fmt.Errorf("verification pipeline: %w", err)
	}
	for _, c := range out {
		if err := c.Err(); err != nil && !isReply(err) {
			return nil, fmt.Errorf("verification pipeline: %w", err)
		}
	}
	return out, nil
}

func (k *checker) verify(ctx context.Context, ws []*worker, rs []*reader) error {
	if err := k.verifySource(ctx); err != nil {
		return err
	}
	if err := k.verifyBF(ctx, ws); err != nil {
		return err
	}
	if err := k.verifyCF(ctx, ws, rs); err != nil {
		return err
	}
	return k.verifyCopies(ctx, ws)
}

// verifyBF: every acknowledged Bloom add answers BF.EXISTS 1 (a Bloom filter
// has no false negatives, so 0 means the write is gone).
func (k *checker) verifyBF(ctx context.Context, ws []*worker) error {
	byKey := map[string][]*bfAck{}
	var keys []string
	for _, w := range ws {
		for i := range w.bf {
			a := &w.bf[i]
			if a.gone {
				continue
			}
			if byKey[a.key] == nil {
				keys = append(keys, a.key)
			}
			byKey[a.key] = append(byKey[a.key], a)
		}
	}
	const batch, perPipe = 500, 20
	type job struct{ acks []*bfAck }
	var jobs []job
	for _, key := range keys {
		l := byKey[key]
		for len(l) > 0 {
			n := min(batch, len(l))
			jobs = append(jobs, job{l[:n]})
			l = l[n:]
		}
	}
	for len(jobs) > 0 {
		n := min(perPipe, len(jobs))
		cmds := make([][]any, n)
		for i, j := range jobs[:n] {
			args := []any{"BF.MEXISTS", j.acks[0].key}
			for _, a := range j.acks {
				args = append(args, a.item)
			}
			cmds[i] = args
		}
		res, err := runPipe(ctx, k.c, cmds)
		if err != nil {
			return err
		}
		for i, j := range jobs[:n] {
			got, err := res[i].Int64Slice()
			if err != nil || len(got) != len(j.acks) {
				k.violation("BF.MEXISTS %s (%d items): %v", j.acks[0].key, len(j.acks), err)
				for _, a := range j.acks {
					a.gone = true
				}
				continue
			}
			for x, a := range j.acks {
				if got[x] == 1 {
					continue
				}
				k.v.lost++
				a.gone = true
				if k.allowed(a.round, a.at) {
					k.v.lostAllowed++
				} else {
					k.violation("lost: BF.EXISTS %s %s = 0, %s", a.key, a.item, k.beforeKill("acknowledged", a.round, a.at))
				}
			}
		}
		jobs = jobs[n:]
	}
	return nil
}

// verifyCF checks CF.COUNT of every tracked cuckoo item. Because no two
// items of a key share a fingerprint, the count is exactly the number of
// copies of that item: 1 after an acknowledged add, 0 after an acknowledged
// delete, never 2 (each item is added once). An add whose reply never came
// but which a reader saw (CF.EXISTS 1) must be there too.
func (k *checker) verifyCF(ctx context.Context, ws []*worker, rs []*reader) error {
	seen := map[*cfItem]sighting{}
	for _, r := range rs {
		for _, s := range r.seen {
			if _, dup := seen[s.e]; !dup {
				seen[s.e] = s
			}
		}
		r.seen = r.seen[:0]
	}
	var items []*cfItem
	for _, w := range ws {
		for _, e := range w.cf {
			if !e.gone {
				items = append(items, e)
			}
		}
	}
	const perPipe = 1000
	for len(items) > 0 {
		n := min(perPipe, len(items))
		cmds := make([][]any, n)
		for i, e := range items[:n] {
			cmds[i] = []any{"CF.COUNT", e.key, e.item}
		}
		res, err := runPipe(ctx, k.c, cmds)
		if err != nil {
			return err
		}
		for i, e := range items[:n] {
			cnt, err := res[i].Int64()
			if err != nil {
				k.violation("CF.COUNT %s %s: %v", e.key, e.item, err)
				e.gone = true
				continue
			}
			if cnt >= 2 {
				k.v.duplicated++
				e.gone = true
				k.violation("duplicated: CF.COUNT %s %s = %d, but it was added once", e.key, e.item, cnt)
				continue
			}
			switch {
			case e.add == unknown:
				e.gone = true // either outcome is correct, unless another client saw the item
				if s, ok := seen[e]; ok && cnt == 0 {
					k.v.revealed++
					if k.allowed(s.round, s.at) {
						k.v.revealedAllowed++
					} else {
						k.violation("revealed then lost: another client's CF.EXISTS %s %s answered 1 (%s) while its CF.ADD was unanswered; after the restart CF.COUNT = 0",
							e.key, e.item, k.beforeKill("seen", s.round, s.at))
					}
				}
			case e.hasDel && e.del == unknown:
				e.gone = true // either outcome is correct; nothing more to learn
			case e.hasDel && e.del == acked:
				if cnt != 0 {
					k.v.resurrected++
					e.gone = true
					if k.allowed(e.delRound, e.delAt) {
						k.v.resurrectedAllowed++
					} else {
						k.violation("resurrected: CF.COUNT %s %s = %d after its acknowledged CF.DEL (%s)", e.key, e.item, cnt, k.beforeKill("acknowledged", e.delRound, e.delAt))
					}
				}
			default:
				if cnt != 1 {
					k.v.lost++
					e.gone = true
					if k.allowed(e.addRound, e.addAt) {
						k.v.lostAllowed++
					} else {
						k.violation("lost: CF.COUNT %s %s = 0, %s", e.key, e.item, k.beforeKill("acknowledged", e.addRound, e.addAt))
					}
				}
			}
		}
		items = items[n:]
	}
	return nil
}

// dumpCmds are the SCANDUMP calls that return chunks 0..n-1 of a key with
// the source's layout: chunk i comes from the iterator chunk i-1 returned.
func (k *checker) dumpCmds(key string, n int) [][]any {
	cmds := make([][]any, n)
	for i := range n {
		it := int64(0)
		if i > 0 {
			it = k.src[i-1].iter
		}
		cmds[i] = []any{"BF.SCANDUMP", key, it}
	}
	return cmds
}

// chunkEqual reports whether a SCANDUMP reply is chunk want.
func chunkEqual(c *redis.Cmd, want chunk) (bool, string) {
	v, err := c.Slice()
	if err != nil {
		return false, err.Error()
	}
	if len(v) != 2 {
		return false, fmt.Sprintf("reply of %d elements", len(v))
	}
	it, _ := v[0].(int64)
	data, _ := v[1].(string)
	if it != want.iter {
		return false, fmt.Sprintf("iterator %d, want %d", it, want.iter)
	}
	if !bytes.Equal([]byte(data), want.data) {
		return false, fmt.Sprintf("chunk of %d bytes differs from the source's %d", len(data), len(want.data))
	}
	return true, ""
}

// verifySource: the LOADCHUNK source, written before round 1, is unchanged.
func (k *checker) verifySource(ctx context.Context) error {
	res, err := runPipe(ctx, k.c, k.dumpCmds(srcKey, len(k.src)))
	if err != nil {
		return err
	}
	for i, c := range res {
		if ok, why := chunkEqual(c, k.src[i]); !ok {
			k.violation("source filter %s: SCANDUMP chunk %d: %s", srcKey, i, why)
			break
		}
	}
	return nil
}

// verifyCopies: every acknowledged BF.LOADCHUNK is in its key (the copy
// dumps the same chunk at the same iterator), and a complete copy answers
// BF.MEXISTS like the source for the probe items.
func (k *checker) verifyCopies(ctx context.Context, ws []*worker) error {
	var copies []*copyKey
	for _, w := range ws {
		for _, c := range w.copies {
			if !c.gone && len(c.acked) > 0 {
				copies = append(copies, c)
			}
		}
	}
	const perPipe = 50
	for len(copies) > 0 {
		n := min(perPipe, len(copies))
		var cmds [][]any
		for _, c := range copies[:n] {
			cmds = append(cmds, k.dumpCmds(c.key, len(c.acked))...)
			if c.complete(len(k.src)) {
				args := []any{"BF.MEXISTS", c.key}
				for _, p := range k.probes {
					args = append(args, p)
				}
				cmds = append(cmds, args)
			}
		}
		res, err := runPipe(ctx, k.c, cmds)
		if err != nil {
			return err
		}
		for _, c := range copies[:n] {
			bad := -1
			why := ""
			for i := range c.acked {
				if ok, w := chunkEqual(res[i], k.src[i]); !ok && bad < 0 {
					bad, why = i, w
				}
			}
			res = res[len(c.acked):]
			if c.complete(len(k.src)) {
				got, err := res[0].Int64Slice()
				res = res[1:]
				if bad < 0 && (err != nil || !slices.Equal(got, k.want)) {
					k.violation("copy %s: every chunk matches the source but BF.MEXISTS of the probes differs (%v)", c.key, err)
				}
			}
			if bad < 0 {
				continue
			}
			k.v.copyBad++
			c.gone = true
			if k.allowed(c.round, c.acked[bad]) {
				k.v.copyBadAllowed++
			} else {
				k.violation("copy %s: acknowledged BF.LOADCHUNK %d of %d lost or altered (%s), %s", c.key, bad+1, len(k.src), why, k.beforeKill("acknowledged", c.round, c.acked[bad]))
			}
		}
		copies = copies[n:]
	}
	return nil
}

// staleTemp lists files in dir that look like leftovers of an interrupted
// write (stale temp files are removed at start-up).
func staleTemp(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}
