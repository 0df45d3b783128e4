package topk

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/murmur2"
)

// Defaults of TOPK.RESERVE without its optional arguments.
const (
	DefaultWidth = 8
	DefaultDepth = 7
	DefaultDecay = 0.9
)

// MaxBuckets is the most counters (width × depth) a TopK may have: 1 TiB
// of them, the file format's payload limit.
const MaxBuckets = format.MaxPayload / 16

// fpSeed is the seed of an item's fingerprint hash (RedisBloom's GA).
const fpSeed = 1919

// lookupSize is the length of the table of decay powers.
const lookupSize = 256

// ErrInvalidParams: k, width or depth below 1, or a decay outside (0, 1].
var ErrInvalidParams = errors.New("topk: invalid parameters")

// Bucket is one HeavyKeeper counter: the fingerprint of the item that owns
// it and the owner's count.
type Bucket struct {
	Fingerprint uint32
	Count       uint32
}

// slot is one place of the min-heap of the k heaviest items; item is nil
// while the slot is empty.
type slot struct {
	fp, count uint32
	item      []byte
}

// TopK keeps the k heaviest items of a stream with HeavyKeeper, exactly as
// RedisBloom's TOPK: depth rows of width buckets, each held by one
// fingerprint with a count that other items decay away with probability
// decay^count per increment, and a min-heap of the k items with the
// largest counts seen. Its random choices come from a generator whose
// state is part of the TopK (saved in its file): the same TopK fed the
// same items makes the same choices. The methods are not safe for
// concurrent use.
type TopK struct {
	k, width, depth uint32
	decay           float64
	buckets         []Bucket // row after row
	heap            []slot
	lookup          [lookupSize]float64
	rng             uint64
}

// InitialSeed is the generator state of a new TopK (Seed changes it).
const InitialSeed = 0x9e3779b97f4a7c15

// New returns an empty TopK for the k heaviest items over depth rows of
// width buckets, decaying at decay (0 < decay ≤ 1).
func New(k, width, depth uint32, decay float64) (*TopK, error) {
	if err := checkParams(k, width, depth, decay); err != nil {
		return nil, err
	}
	t := &TopK{k: k, width: width, depth: depth, decay: decay, rng: InitialSeed,
		buckets: make([]Bucket, uint64(width)*uint64(depth)), heap: make([]slot, k)}
	t.fillLookup()
	return t, nil
}

func checkParams(k, width, depth uint32, decay float64) error {
	if k < 1 || width < 1 || depth < 1 || !(decay > 0 && decay <= 1) {
		return fmt.Errorf("%w: k %d, width %d, depth %d, decay %v", ErrInvalidParams, k, width, depth, decay)
	}
	if uint64(width)*uint64(depth) > MaxBuckets {
		return fmt.Errorf("%w: %d × %d buckets, the limit is %d", format.ErrTooLarge, width, depth, uint64(MaxBuckets))
	}
	return nil
}

func (t *TopK) fillLookup() {
	for i := range t.lookup {
		t.lookup[i] = math.Pow(t.decay, float64(i))
	}
}

// K, Width, Depth and Decay are the parameters the TopK was made with.
func (t *TopK) K() uint32 { return t.k }

// Width is the number of buckets in a row.
func (t *TopK) Width() uint32 { return t.width }

// Depth is the number of rows.
func (t *TopK) Depth() uint32 { return t.depth }

// Decay is the base of the probability that an increment decays a bucket
// another item holds.
func (t *TopK) Decay() float64 { return t.decay }

// Seed sets the state of the TopK's random generator.
func (t *TopK) Seed(s uint64) { t.rng = s }

// random is a uniform draw from [0, 1) (splitmix64).
func (t *TopK) random() float64 {
	t.rng += 0x9e3779b97f4a7c15
	z := t.rng
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) * 0x1p-53
}

func (t *TopK) decayOf(count uint32) float64 {
	if count < lookupSize {
		return t.lookup[count]
	}
	return math.Pow(t.lookup[lookupSize-1], float64(count/(lookupSize-1))) * t.lookup[count%(lookupSize-1)]
}

// find returns the heap slot holding item, or -1.
func (t *TopK) find(item []byte, fp uint32) int {
	for i := len(t.heap) - 1; i >= 0; i-- {
		s := &t.heap[i]
		if s.fp == fp && len(s.item) == len(item) && bytes.Equal(s.item, item) {
			return i
		}
	}
	return -1
}

// Add is IncrBy(item, 1).
func (t *TopK) Add(item []byte) (expelled []byte, ok bool) { return t.IncrBy(item, 1) }

// AddString is Add of a string's bytes.
func (t *TopK) AddString(item string) ([]byte, bool) { return t.IncrBy(sbytes(item), 1) }

// IncrBy adds n to item's count. When this puts item in the list of the
// k heaviest in place of another, it returns that one (ok true; expelled is
// nil when the place was empty), as TOPK.ADD answers.
func (t *TopK) IncrBy(item []byte, n uint32) (expelled []byte, ok bool) {
	if t.heap == nil {
		return nil, false
	}
	fp := murmur2.Sum32(item, fpSeed)
	heapMin := t.heap[0].count
	var maxCount uint32
	for i := range t.depth {
		b := &t.buckets[uint64(i)*uint64(t.width)+uint64(murmur2.Sum32(item, i)%t.width)]
		switch {
		case b.Count == 0:
			b.Fingerprint, b.Count = fp, n
			maxCount = max(maxCount, b.Count)
		case b.Fingerprint == fp:
			b.Count += n
			maxCount = max(maxCount, b.Count)
		default:
			for local := n; local > 0; local-- {
				if t.random() < t.decayOf(b.Count) {
					b.Count--
					if b.Count == 0 {
						b.Fingerprint, b.Count = fp, local
						maxCount = max(maxCount, b.Count)
						break
					}
				}
			}
		}
	}
	if maxCount < heapMin {
		return nil, false
	}
	if i := t.find(item, fp); i >= 0 {
		// Not the larger of the two counts: the buckets may have decayed.
		t.heap[i].count = maxCount
		heapifyDown(t.heap, i)
		return nil, false
	}
	expelled = t.heap[0].item
	t.heap[0] = slot{fp: fp, count: maxCount, item: append(make([]byte, 0, len(item)), item...)}
	heapifyDown(t.heap, 0)
	return expelled, true
}

// IncrByString is IncrBy of a string's bytes.
func (t *TopK) IncrByString(item string, n uint32) ([]byte, bool) { return t.IncrBy(sbytes(item), n) }

// heapifyDown is RedisBloom's sift-down, step for step (the order of
// equal counts in the heap, and so which item a tie expels, depends on it).
func heapifyDown(a []slot, start int) {
	n := len(a)
	child := start
	if n < 2 || (n-2)/2 < child {
		return
	}
	child = 2*child + 1
	if child+1 < n && a[child].count > a[child+1].count {
		child++
	}
	if a[child].count > a[start].count {
		return
	}
	top := a[start]
	for {
		a[start] = a[child]
		start = child
		if (n-2)/2 < child {
			break
		}
		child = 2*child + 1
		if child+1 < n && a[child].count > a[child+1].count {
			child++
		}
		if !(a[child].count < top.count) {
			break
		}
	}
	a[start] = top
}

// Query reports whether item is among the k heaviest.
func (t *TopK) Query(item []byte) bool {
	return t.heap != nil && t.find(item, murmur2.Sum32(item, fpSeed)) >= 0
}

// QueryString is Query of a string's bytes.
func (t *TopK) QueryString(item string) bool { return t.Query(sbytes(item)) }

// Count is item's estimated count (TOPK.COUNT): the largest of the buckets
// its fingerprint holds (for an item in the list, only buckets at least
// the list's least count). HeavyKeeper never overestimates an item alone
// in its buckets; decay makes it underestimate.
func (t *TopK) Count(item []byte) uint32 {
	if t.heap == nil {
		return 0
	}
	fp := murmur2.Sum32(item, fpSeed)
	heapMin := t.heap[0].count
	inHeap := t.find(item, fp) >= 0
	var res uint32
	for i := range t.depth {
		b := t.buckets[uint64(i)*uint64(t.width)+uint64(murmur2.Sum32(item, i)%t.width)]
		if b.Fingerprint == fp && (!inHeap || b.Count >= heapMin) {
			res = max(res, b.Count)
		}
	}
	return res
}

// CountString is Count of a string's bytes.
func (t *TopK) CountString(item string) uint32 { return t.Count(sbytes(item)) }

// Item is one of the heaviest items and its count.
type Item struct {
	Item  []byte
	Count uint32
}

// List returns the heaviest items, heaviest first (ties in heap order), as
// TOPK.LIST does: the list's items with a count above 0.
func (t *TopK) List() []Item {
	// The heap's slots by count, highest first, ties in heap order (a
	// stable sort by count): sorted as one word each, the count's
	// complement above the slot's index, rather than moving the slots.
	keys := make([]uint64, 0, len(t.heap))
	for i, x := range t.heap {
		if x.count > 0 {
			keys = append(keys, uint64(^x.count)<<32|uint64(i))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	out := make([]Item, len(keys))
	for j, k := range keys {
		x := &t.heap[uint32(k)]
		out[j] = Item{Item: x.item, Count: x.count}
	}
	return out
}

// Clone returns an independent copy of t.
func (t *TopK) Clone() *TopK {
	c := *t
	c.buckets = slices.Clone(t.buckets)
	c.heap = slices.Clone(t.heap)
	for i := range c.heap {
		if c.heap[i].item != nil {
			c.heap[i].item = slices.Clone(c.heap[i].item)
		}
	}
	return &c
}

// MemUsage is the TopK's size in memory: buckets, heap (items included)
// and the struct.
func (t *TopK) MemUsage() uint64 {
	n := 8*uint64(len(t.buckets)) + 32*uint64(len(t.heap)) + 2128
	for _, s := range t.heap {
		n += uint64(len(s.item))
	}
	return n
}
