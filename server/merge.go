package server

import (
	"math"
	"runtime"

	"github.com/bloomkit/bloomkit/internal/bitcount"
	"github.com/bloomkit/bloomkit/redisbloom"
)

// BF.MERGE in chunks.
//
// ORing two 1.28 GB filters takes seconds; with the keyspace locked all that
// time every client waited. A merge is instead a mergeJob: BF.MERGE checks
// its arguments, creates a missing destination and logs itself with the
// keyspace locked, as any command; the ORing is then done by a goroutine
// mergeChunk bytes per hold of the lock. The merge takes effect, for
// everyone, at the instant it was logged: until the job is done, any
// command that names its destination or one of its sources (or removes
// one, FLUSHALL, a snapshot's point in time) first finishes the job with
// the lock held, so no one ever sees a half-merged filter or changes a
// source under it, and replay — which merges at once — ends in the same
// bits. The client that sent BF.MERGE gets its reply when the job is done.
// Sources named twice (or the destination named as a source) are merged
// once: ORing and the counts' max are idempotent.

// Variables, so that tests can send every merge to the background in
// many chunks.
var (
	// mergeChunk is what a background merge ORs per hold of the lock
	// (about a quarter of a millisecond).
	mergeChunk = 256 << 10
	// mergeAsyncBytes is the size from which a merge runs in the
	// background; smaller ones finish before BF.MERGE returns.
	mergeAsyncBytes uint64 = 4 << 20
)

// mergePause, when set (tests), runs before each chunk of a background
// merge.
var mergePause func()

// mergePass ORs one source array into one destination array; finish runs
// after the last chunk with the destination's population count.
type mergePass struct {
	d, s   []byte
	guard  func() redisbloom.Guard // the destination's guard now
	finish func(pop uint64)
}

// mergeJob is one BF.MERGE's ORing (db.mu held for all its methods).
type mergeJob struct {
	ents   []*entry // the destination and the sources
	passes []mergePass
	after  func()
	i, off int
	pop    uint64
	done   chan struct{}
	closed bool
}

func (j *mergeJob) bytes() uint64 {
	var n uint64
	for _, p := range j.passes {
		n += uint64(len(p.d))
	}
	return n
}

// step ORs up to budget bytes and reports whether the job is done.
func (j *mergeJob) step(budget int) bool {
	for budget > 0 && j.i < len(j.passes) {
		p := &j.passes[j.i]
		n := min(budget, len(p.d)-j.off)
		if n > 0 {
			if g := p.guard(); g != nil {
				g.Write(p.d, j.off, n)
			}
			d := p.d[j.off : j.off+n]
			orBytes(d, p.s[j.off:j.off+n])
			j.pop += bitcount.Ones(d)
			j.off += n
			budget -= n
		}
		if j.off == len(p.d) {
			if p.finish != nil {
				p.finish(j.pop)
			}
			j.i, j.off, j.pop = j.i+1, 0, 0
		}
	}
	if j.i < len(j.passes) {
		return false
	}
	if !j.closed {
		j.closed = true
		if j.after != nil {
			j.after()
		}
		close(j.done)
	}
	return true
}

// involves reports whether the job reads or writes e.
func (j *mergeJob) involves(e *entry) bool {
	for _, x := range j.ents {
		if x == e {
			return true
		}
	}
	return false
}

// finishMerges completes, with the lock held, the running merges that
// involve e (all of them when e is nil).
func (db *keyspace) finishMerges(e *entry) {
	if len(db.merges) == 0 {
		return
	}
	kept := db.merges[:0]
	for _, j := range db.merges {
		if e == nil || j.involves(e) {
			j.step(math.MaxInt)
			continue
		}
		kept = append(kept, j)
	}
	clear(db.merges[len(kept):])
	db.merges = kept
}

// finishMergesNamed is finishMerges for the key a command names.
func (db *keyspace) finishMergesNamed(key []byte) {
	if e, ok := db.keys[string(key)]; ok {
		db.finishMerges(e)
	}
}

// drop removes a finished job from the running ones.
func (db *keyspace) dropMerge(j *mergeJob) {
	for i, x := range db.merges {
		if x == j {
			db.merges = append(db.merges[:i], db.merges[i+1:]...)
			return
		}
	}
}

// runMerge runs a merge's job: at once when it is small, while replaying,
// inside MULTI/EXEC or for a session that cannot wait; otherwise in the
// background, with c's reply held until it is done.
func (s *Server) runMerge(c *Session, j *mergeJob) {
	if j.bytes() < mergeAsyncBytes || s.db.loading || s.txn != nil || c == nil || !c.canWait {
		j.step(math.MaxInt)
		return
	}
	s.db.merges = append(s.db.merges, j)
	c.wait = j.done
	// On a thread of lower priority, as the snapshot writer: the event
	// loops get the CPU first when there is not enough for both.
	go s.inBackgroundThread(func() error {
		for {
			if mergePause != nil {
				mergePause()
			}
			s.db.mu.Lock()
			finished := j.closed || j.step(mergeChunk)
			if finished {
				s.db.dropMerge(j)
			}
			s.db.mu.Unlock()
			if finished {
				return nil
			}
			runtime.Gosched()
		}
	})
}

// waitMerges waits (without the lock) for the merges running now.
func (s *Server) waitMerges() {
	s.db.mu.Lock()
	var done []chan struct{}
	for _, j := range s.db.merges {
		done = append(done, j.done)
	}
	s.db.mu.Unlock()
	for _, d := range done {
		<-d
	}
}

// bloomMergeJob is the job that merges srcs into dest (RedisBloom layout,
// layouts checked) exactly as dest.Merge of each would; with clone, dest
// was just created from srcs[0]'s header and takes its bits as a copy.
func bloomMergeJob(dest *entry, srcs []*entry, clone bool) *mergeJob {
	b := dest.bf
	j := &mergeJob{done: make(chan struct{}), ents: append([]*entry{dest}, srcs...)}
	guard := func() redisbloom.Guard { return b.Guard }
	merged := false
	for n, se := range srcs {
		o := se.bf
		for i := range b.Links {
			l, ol := &b.Links[i], &o.Links[i]
			p := mergePass{d: l.Data, s: ol.Data, guard: guard}
			if !clone || n > 0 {
				merged = true
				p.finish = func(pop uint64) {
					// As redisbloom's Merge.
					size := max(l.Size, ol.Size)
					if pop < l.Bits {
						size = max(size, bitcount.Classic(pop, l.Bits, l.Hashes))
					}
					l.Size = size
				}
			}
			j.passes = append(j.passes, p)
		}
	}
	if merged {
		j.after = func() {
			b.Size = 0
			for i := range b.Links {
				b.Size += b.Links[i].Size
			}
		}
	}
	return j
}

// nativeMergeJob is the job that merges srcs into dest (native keys of one
// shape, windows moved to one generation) exactly as nativeFilter.merge of
// each would.
func nativeMergeJob(dest *entry, srcs []*entry) *mergeJob {
	n := dest.nf
	j := &mergeJob{done: make(chan struct{}), ents: append([]*entry{dest}, srcs...)}
	guard := func() redisbloom.Guard { return n.guard }
	for _, se := range srcs {
		src := se.nf
		for g := src.cur - int64(src.gens); g <= src.cur; g++ {
			if g < n.cur-int64(n.gens) || g > n.cur {
				continue
			}
			if src.dirty != nil && !src.dirty[src.slot(g)] {
				continue // all zeros: nothing to OR
			}
			i, si := n.slot(g), src.slot(g)
			d := n.arrays[i]
			j.passes = append(j.passes, mergePass{d: d, s: src.arrays[si], guard: guard, finish: func(pop uint64) {
				n.markDirty(i)
				// As for RedisBloom-layout keys: the larger of the two
				// counts and of the count the merged bits imply.
				n.counts[i] = max(n.counts[i], src.counts[si], n.keysFromBits(pop))
			}})
		}
	}
	return j
}

// uniqueSources drops repeated sources and the destination itself.
func uniqueSources(dest *entry, srcs []*entry) []*entry {
	out := make([]*entry, 0, len(srcs))
	seen := map[*entry]bool{dest: true}
	for _, e := range srcs {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}
