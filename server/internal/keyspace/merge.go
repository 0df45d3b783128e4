package keyspace

import (
	"math"
	"runtime"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/internal/bitcount"
	"github.com/bloomkit/bloomkit/redisbloom"
)

// BF.MERGE in chunks.
//
// ORing two 1.28 GB filters takes seconds; with the keyspace locked all that
// time every client waited. A merge is instead a MergeJob: BF.MERGE checks
// its arguments, creates a missing destination and logs itself with the
// keyspace locked, as any command; the ORing is then done by a goroutine
// MergeChunk bytes per hold of the lock. The merge takes effect, for
// everyone, at the instant it was logged: until the job is done, any
// command that names its destination or one of its sources (or removes
// one, FLUSHALL, a snapshot's point in time) first finishes the job with
// the lock held, so no one ever sees a half-merged filter or changes a
// source under it, and replay — which merges at once — ends in the same
// bits. The client that sent BF.MERGE gets its reply when the job is done.
// Sources named twice (or the destination named as a source) are merged
// once: ORing and the counts' max are idempotent.
//
// CMS.MERGE runs the same way once every counter is checked (its answer,
// +OK or an overflow that changes nothing, depends on all of them: that
// read stays under the lock): its job writes each counter's weighted sum,
// the budget counting every source read.

// Variables, so that tests can send every merge to the background in
// many chunks.
var (
	// MergeChunk is what a background merge ORs per hold of the lock
	// (about a quarter of a millisecond).
	MergeChunk = 256 << 10
	// MergeAsyncBytes is the size from which a merge runs in the
	// background; smaller ones finish before BF.MERGE returns.
	MergeAsyncBytes uint64 = 4 << 20
)

// MergePause, when set (tests), runs before each chunk of a background
// merge.
var MergePause func()

// mergePass ORs one source array into one destination array; finish runs
// after the last chunk with the destination's population count. A pass
// with run instead sets d's bytes [off, off+n) itself, chunk by chunk
// (finish then gets 0), each byte of d costing cost bytes of the budget.
type mergePass struct {
	d, s   []byte
	guard  func() redisbloom.Guard // the destination's guard now
	finish func(pop uint64)
	run    func(off, n int)
	cost   int
}

// MergeJob is one BF.MERGE's ORing (db.mu held for all its methods).
type MergeJob struct {
	ents   []*Entry // the destination and the sources
	passes []mergePass
	after  func()
	i, off int
	pop    uint64
	done   chan struct{}
	closed bool
}

// Bytes is how much the job ORs (or reads, for a pass with run).
func (j *MergeJob) Bytes() uint64 {
	var n uint64
	for _, p := range j.passes {
		n += uint64(len(p.d)) * uint64(max(p.cost, 1))
	}
	return n
}

// step ORs up to budget bytes and reports whether the job is done.
func (j *MergeJob) step(budget int) bool {
	for budget > 0 && j.i < len(j.passes) {
		p := &j.passes[j.i]
		n := min(budget, len(p.d)-j.off)
		if p.run != nil {
			n = min(max(budget/p.cost, 1), len(p.d)-j.off)
			if g := p.guard(); g != nil && n > 0 {
				g.Write(p.d, j.off, n)
			}
			p.run(j.off, n)
			j.off += n
			budget -= n * p.cost
		} else if n > 0 {
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
func (j *MergeJob) involves(e *Entry) bool {
	for _, x := range j.ents {
		if x == e {
			return true
		}
	}
	return false
}

// FinishMerges completes, with the lock held, the running merges that
// involve e (all of them when e is nil).
func (db *DB) FinishMerges(e *Entry) {
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

// FinishMergesNamed is FinishMerges for the key a command names.
func (db *DB) FinishMergesNamed(key []byte) {
	if e := db.keys.findBytes(key, scanHashBytes(key)); e != nil {
		db.FinishMerges(e)
	}
}

// drop removes a finished job from the running ones.
func (db *DB) dropMerge(j *MergeJob) {
	for i, x := range db.merges {
		if x == j {
			db.merges = append(db.merges[:i], db.merges[i+1:]...)
			return
		}
	}
}

// Background starts j in the background, MergeChunk bytes per hold of
// the lock (db.mu held): start runs the work on a goroutine of its choice.
// It returns what is closed when the job is done.
func (db *DB) Background(j *MergeJob, start func(work func())) <-chan struct{} {
	db.merges = append(db.merges, j)
	start(func() {
		for {
			if MergePause != nil {
				MergePause()
			}
			db.mu.Lock()
			finished := j.closed || j.step(MergeChunk)
			if finished {
				db.dropMerge(j)
			}
			db.mu.Unlock()
			if finished {
				return
			}
			runtime.Gosched()
		}
	})
	return j.done
}

// Finish does all of j now (db.mu held).
func (j *MergeJob) Finish() { j.step(math.MaxInt) }

// Merging reports whether merges run in the background (db.mu held).
func (db *DB) Merging() bool { return len(db.merges) > 0 }

// WaitMerges waits (without the lock; it takes it briefly) for the merges
// running now.
func (db *DB) WaitMerges() {
	db.mu.Lock()
	var done []chan struct{}
	for _, j := range db.merges {
		done = append(done, j.done)
	}
	db.mu.Unlock()
	for _, d := range done {
		<-d
	}
}

// BloomMergeJob is the job that merges srcs into dest (RedisBloom layout,
// layouts checked) exactly as dest.Merge of each would; with clone, dest
// was just created from srcs[0]'s header and takes its bits as a copy.
func BloomMergeJob(dest *Entry, srcs []*Entry, clone bool) *MergeJob {
	b := dest.BF
	j := &MergeJob{done: make(chan struct{}), ents: append([]*Entry{dest}, srcs...)}
	guard := func() redisbloom.Guard { return b.Guard() }
	merged := false
	for n, se := range srcs {
		o := se.BF
		links := b.Links() // the full form: the passes change link sizes
		for i := range links {
			l, ol := &links[i], o.Link(i)
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
			for _, l := range b.Links() {
				b.Size += l.Size
			}
		}
	}
	return j
}

// NativeMergeJob is the job that merges srcs into dest (native keys of one
// shape, windows moved to one generation) exactly as a merge of
// each would.
func NativeMergeJob(dest *Entry, srcs []*Entry) *MergeJob {
	n := dest.NF
	j := &MergeJob{done: make(chan struct{}), ents: append([]*Entry{dest}, srcs...)}
	guard := func() redisbloom.Guard { return n.Guard }
	for _, se := range srcs {
		src := se.NF
		scur, sgens := src.window()
		ncur, ngens := n.window()
		for g := scur - int64(sgens); g <= scur; g++ {
			if g < ncur-int64(ngens) || g > ncur {
				continue
			}
			if src.WindowState != nil && src.dirty != nil && !src.dirty[src.Slot(g)] {
				continue // all zeros: nothing to OR
			}
			i, si := n.Slot(g), src.Slot(g)
			d := n.Arrays[i]
			j.passes = append(j.passes, mergePass{d: d, s: src.Arrays[si], guard: guard, finish: func(pop uint64) {
				n.MarkDirty(i)
				// As for RedisBloom-layout keys: the larger of the two
				// counts and of the count the merged bits imply.
				n.Counts[i] = max(n.Counts[i], src.Counts[si], n.KeysFromBits(pop))
			}})
		}
	}
	return j
}

// CMSMergeJob is the job that writes a CMS.MERGE's counters into dest, a
// Count-Min Sketch, once m (its Merger, whose checks passed) is prepared
// from the sketches of srcs; the count is set after the last counter.
func CMSMergeJob(dest *Entry, srcs []*Entry, m *cms.Merger) *MergeJob {
	j := &MergeJob{done: make(chan struct{}), ents: append([]*Entry{dest}, srcs...)}
	view := CounterBytes(dest.CMS())
	// Bytes [off, off+n) cover counters off/4 to (off+n)/4: consecutive
	// chunks cover each counter once, whatever their sizes.
	j.passes = []mergePass{{
		d:      view,
		guard:  dest.SketchGuard,
		run:    func(off, n int) { m.Write(off/4, (off+n)/4) },
		cost:   max(len(srcs), 1),
		finish: func(uint64) { m.Finish() },
	}}
	return j
}

// UniqueSources drops repeated sources and the destination itself.
func UniqueSources(dest *Entry, srcs []*Entry) []*Entry {
	out := make([]*Entry, 0, len(srcs))
	seen := map[*Entry]bool{dest: true}
	for _, e := range srcs {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}
