package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/generation"
	"github.com/bloomkit/bloomkit/redisbloom"
)

// Native filters: bloomkit's own layouts as server keys.
//
// A key created with BF.RESERVE … LAYOUT blocked|classic or … WINDOW T holds
// a nativeFilter: the bits of one bloom.Blocked or bloom.Filter, or of the
// G+1 generations of a bloom.Window. The server keeps the bits in its own
// arrays and probes them with bloom.Hash, bloom.LocateBlock and bloom.Locate,
// so that a key sets exactly the bits the library's filter would — a key
// pulled as a bloomkit file (SCANDUMP) reads back with bloom.Read as the same
// filter, byte for byte — while the snapshot writer guards the arrays chunk
// by chunk exactly as it guards RedisBloom's (snapshot.go): every change of
// an array is announced to the guard first.
//
// A window's clock is the server's. Reads skip generations the clock says
// have expired and change nothing; a write first moves the window to the
// clock's generation and logs that move as its own record (BF.ADVANCE key
// generation) before the write's record, so that replaying the log moves
// the window exactly where it moved, never by the replaying server's clock,
// and never twice (a move to a generation at or before the current one does
// nothing).

// nativeFilter is one native key's value; all its methods run with the
// keyspace locked.
type nativeFilter struct {
	typ    uint8        // format.TypeClassic, TypeBlocked or TypeWindow
	params bloom.Params // of the filter, or of each of a window's generations
	// Window only.
	period time.Duration // T
	gens   int           // G
	genLen int64         // d = ⌈T/G⌉ nanoseconds; generation g covers [g·d, (g+1)·d)
	cur    int64         // the newest generation held
	// arrays holds the bits: one array, or for a window G+1 slots, generation
	// g in slot g mod (G+1). A Blocked array is m/512 blocks of 64 bytes; bit
	// j of block b is bit j%8 of byte 64b + j/8 (docs/format.md's words, in
	// little-endian bytes).
	arrays [][]byte
	// counts[i] counts the adds into arrays[i] that answered 1 (new).
	counts []uint64
	// dirty[i] is false while arrays[i] is known to be all zeros (fresh,
	// or emptied since its last write), so that a rotation need not touch
	// it: clearing a never-written generation in place faulted in all its
	// pages, G+1 of them when an idle window moved (tens of ms with the
	// keyspace locked, and the window's whole size made resident). nil:
	// not known, every array may hold bits.
	dirty []bool
	// wiped counts the bytes rotations cleared in place (tests).
	wiped uint64
	guard redisbloom.Guard
}

// Native layouts as BF.INFO and BF.RESERVE name them.
const (
	layoutClassic = "classic"
	layoutBlocked = "blocked"
	layoutWindow  = "window"
)

// nativeMaxCapacity bounds a native filter's capacity (RedisBloom's is
// 2^30): the bits are bounded by bloom.MaxBits and by --maxmemory.
const nativeMaxCapacity = 1 << 40

// smallClear is the size up to which a window clears an expired
// generation in place; larger ones get a fresh (lazily zeroed) array and
// the old one is unmapped off the keyspace lock, so a rotation costs
// O(1) under the lock however large the generation.
const smallClear = 1 << 20

var errNativeParams = errors.New("ERR bad filter parameters")

func (n *nativeFilter) layout() string {
	switch n.typ {
	case format.TypeClassic:
		return layoutClassic
	case format.TypeWindow:
		return layoutWindow
	}
	return layoutBlocked
}

// arrayBytes is the size of one array: ⌈m/64⌉ words.
func (n *nativeFilter) arrayBytes() uint64 { return (n.params.M + 63) / 64 * 8 }

// dataBytes is what the filter's arrays take.
func (n *nativeFilter) dataBytes() uint64 { return n.arrayBytes() * uint64(len(n.arrays)) }

// memUsage is BF.INFO's Size and MEMORY USAGE's value for the key.
func (n *nativeFilter) memUsage() uint64 { return n.dataBytes() + 96 + 32*uint64(len(n.arrays)) }

// nativeParams works out a new filter's parameters from BF.RESERVE's
// capacity and rate as the library does (bloom.Estimate, EstimateBlocked,
// and for a window EstimateBlocked at the generations' rate).
func nativeParams(typ uint8, capacity uint64, rate float64, period time.Duration, gens int, seed uint64) (*nativeFilter, error) {
	n := &nativeFilter{typ: typ}
	n.params = estimate(typ, capacity, rate)
	switch typ {
	case format.TypeWindow:
		n.params.N, n.params.P = capacity, rate
		if period <= 0 || gens < 1 || gens > bloom.MaxGenerations {
			return nil, errNativeParams
		}
		n.period, n.gens = period, gens
		n.genLen = generation.Length(period, gens)
	}
	n.params.Seed = seed
	if n.params.M == 0 || n.params.K == 0 || n.params.K > bloom.MaxK {
		return nil, errNativeParams
	}
	if n.params.M > bloom.MaxBits/uint64(n.slots()) {
		return nil, errNativeParams
	}
	return n, nil
}

// lastEstimate is the sizing estimate last worked out. Many small filters
// (one per user) are reserved with the same capacity and rate again and
// again, and the blocked layout's search for the smallest size that meets
// the rate costs a few hundred microseconds of CPU per call, more than the
// rest of a BF.RESERVE; the estimate is a pure function of its inputs, so
// the remembered one is exactly what a new search would find.
var lastEstimate struct {
	sync.Mutex
	typ      uint8
	capacity uint64
	rate     float64
	params   bloom.Params
}

// estimate is the library's sizing for a native filter of type typ: the
// classic or blocked layout's, a window's generations at the rate that
// keeps the window's rate.
func estimate(typ uint8, capacity uint64, rate float64) bloom.Params {
	l := &lastEstimate
	l.Lock()
	defer l.Unlock()
	if l.typ == typ && l.capacity == capacity && l.rate == rate {
		return l.params
	}
	var p bloom.Params
	switch typ {
	case format.TypeClassic:
		p = bloom.Estimate(capacity, rate)
	case format.TypeBlocked:
		p = bloom.EstimateBlocked(capacity, rate)
	case format.TypeWindow:
		p = bloom.EstimateBlocked(capacity, generation.Rate(rate))
	default:
		return bloom.Params{}
	}
	l.typ, l.capacity, l.rate, l.params = typ, capacity, rate, p
	return p
}

// slots is the number of arrays: 1, or G+1 for a window.
func (n *nativeFilter) slots() int {
	if n.typ == format.TypeWindow {
		return n.gens + 1
	}
	return 1
}

// allocate gives the filter fresh zeroed arrays, zero counts and nothing
// dirty.
func (n *nativeFilter) allocate() error {
	slots := n.slots()
	n.arrays = make([][]byte, slots)
	n.counts = make([]uint64, slots)
	n.dirty = nil // one array: never emptied by a rotation, nothing to track
	if n.typ == format.TypeWindow {
		n.dirty = make([]bool, slots)
	}
	for i := range n.arrays {
		a, err := redisbloom.AllocArray(n.arrayBytes())
		if err != nil {
			n.free()
			return err
		}
		n.arrays[i] = a
	}
	return nil
}

func (n *nativeFilter) free() {
	for i, a := range n.arrays {
		if a != nil {
			redisbloom.FreeArray(a)
			n.arrays[i] = nil
		}
	}
}

// genAt is the generation the clock is in at t.
func (n *nativeFilter) genAt(t time.Time) int64 { return generation.At(t, n.genLen) }

// validGen reports whether a window can stand at generation g: the start
// times of its generations g-G … g+1 are whole int64 nanoseconds. The
// loops over a window's generations (g ≤ cur) and its start times
// (g·genLen) rely on it; a START, BF.ADVANCE or file header outside it is
// refused, or a forged header with cur = MaxInt64 would loop forever with
// the keyspace locked, and a start time that overflows would write a
// snapshot that cannot be read back.
func (n *nativeFilter) validGen(g int64) bool {
	return g >= math.MinInt64/n.genLen+int64(n.gens) && g < math.MaxInt64/n.genLen
}

// slot is the array generation g lives in.
func (n *nativeFilter) slot(g int64) int { return generation.Slot(g, len(n.arrays)) }

// live returns the generations [lo, hi] a read at now sees: the last G+1
// by the clock, of those the window holds. A clock behind the window counts
// as standing at its newest generation, so keys are never forgotten early.
func (n *nativeFilter) live(now time.Time) (lo, hi int64) {
	return generation.Live(n.cur, n.genAt(now), n.gens)
}

// advance moves the window forward to generation g, emptying the slots of
// the generations that expire on the way (at most G+1 however far g is).
func (n *nativeFilter) advance(g int64) {
	if g <= n.cur {
		return
	}
	lo, hi := generation.Expiring(n.cur, g, n.gens)
	for h := lo; h <= hi; h++ {
		n.empty(n.slot(h))
	}
	n.cur = g
}

// empty clears slot i: in place when small, otherwise by swapping in a
// fresh array and freeing the old one off the lock (or, while a snapshot
// still reads it, handing it to the guard).
func (n *nativeFilter) empty(i int) {
	a := n.arrays[i]
	n.counts[i] = 0
	if n.dirty == nil {
		n.dirty = make([]bool, len(n.arrays))
		for j := range n.dirty {
			n.dirty[j] = true
		}
	}
	if !n.dirty[i] {
		return
	}
	n.dirty[i] = false
	if n.guard == nil && len(a) <= smallClear {
		clear(a)
		n.wiped += uint64(len(a))
		return
	}
	fresh, err := redisbloom.AllocArray(uint64(len(a)))
	if err != nil {
		if n.guard != nil {
			n.guard.Write(a, 0, len(a))
		}
		clear(a)
		n.wiped += uint64(len(a))
		return
	}
	n.arrays[i] = fresh
	if n.guard != nil {
		n.guard.Release(a)
		return
	}
	go redisbloom.FreeArray(a)
}

// probe is where a key's bits are: a block and offsets in it (blocked and
// window) or bit positions (classic).
type probe struct {
	block   uint64
	offsets []uint16
	bits    []uint64
}

func (n *nativeFilter) locate(key []byte, p *probe) {
	h := bloom.Hash(n.params.Seed, key)
	if n.typ == format.TypeClassic {
		p.bits = bloom.Locate(n.params, h, p.bits[:0])
		return
	}
	p.block, p.offsets = bloom.LocateBlock(n.params, h, p.offsets[:0])
}

// has reports whether all the key's bits are set in a.
func (n *nativeFilter) has(a []byte, p *probe) bool {
	if n.typ == format.TypeClassic {
		for _, b := range p.bits {
			if a[b>>3]&(1<<(b&7)) == 0 {
				return false
			}
		}
		return true
	}
	blk := a[p.block*64 : p.block*64+64]
	for _, j := range p.offsets {
		if blk[j>>3]&(1<<(j&7)) == 0 {
			return false
		}
	}
	return true
}

// set sets the key's bits in a, telling the guard first.
func (n *nativeFilter) set(a []byte, p *probe) {
	if n.typ == format.TypeClassic {
		for _, b := range p.bits {
			if n.guard != nil {
				n.guard.Write(a, int(b>>3), 1)
			}
			a[b>>3] |= 1 << (b & 7)
		}
		return
	}
	if n.guard != nil {
		n.guard.Write(a, int(p.block*64), 64)
	}
	blk := a[p.block*64 : p.block*64+64]
	for _, j := range p.offsets {
		blk[j>>3] |= 1 << (j & 7)
	}
}

// prefetch reads, for each of items, the first byte of the 64-byte block
// it will probe in every generation a read at now looks at (a classic
// filter: the byte of its first bit), all hashes first and the reads
// after, so that the cache misses overlap (prefetch.go). It returns what
// it read, so that the reads are not optimized away.
func (n *nativeFilter) prefetch(now time.Time, items [][]byte) byte {
	var (
		pos [16]uint64
		v   byte
	)
	lo, hi := int64(0), int64(0)
	if n.typ == format.TypeWindow {
		lo, hi = n.live(now)
	}
	for len(items) > 0 {
		k := min(len(items), len(pos))
		for i, item := range items[:k] {
			h := bloom.Hash(n.params.Seed, item)
			if n.typ == format.TypeClassic {
				// The first probe: the same for every hash id.
				b, _ := bits.Mul64(h.Lo, n.params.M)
				pos[i] = b >> 3
			} else {
				b, _ := bits.Mul64(h.Hi, n.params.M/bloom.BlockBits)
				pos[i] = b * 64
			}
		}
		for g := hi; g >= lo; g-- {
			a := n.arrays[n.slot(g)]
			for _, p := range pos[:k] {
				if p < uint64(len(a)) {
					v ^= a[p]
				}
			}
		}
		items = items[k:]
	}
	return v
}

// test reports whether the key tests present at now.
func (n *nativeFilter) test(key []byte, now time.Time, p *probe) bool {
	_, ok := n.find(key, now, p)
	return ok
}

// find locates the key's bits and returns the slot of the newest
// generation (the only array, for a blocked or classic filter) that has
// them all, if any does.
func (n *nativeFilter) find(key []byte, now time.Time, p *probe) (int, bool) {
	if n.typ != format.TypeWindow {
		return n.findIn(key, 0, 0, p)
	}
	lo, hi := n.live(now)
	return n.findIn(key, lo, hi, p)
}

// findIn is find over the generations [lo, hi] (ignored unless a window).
func (n *nativeFilter) findIn(key []byte, lo, hi int64, p *probe) (int, bool) {
	n.locate(key, p)
	if n.typ != format.TypeWindow {
		return 0, n.has(n.arrays[0], p)
	}
	for g := hi; g >= lo; g-- {
		if i := n.slot(g); n.has(n.arrays[i], p) {
			return i, true
		}
	}
	return 0, false
}

// add adds the key (a window into its newest generation, which the caller
// has moved to the clock) and reports whether it was new: it did not test
// present in any generation the window holds. That is what a read at the
// time of the add sees (the window stands at the clock's generation), and
// it does not consult the clock, so replaying the log — on a server whose
// clock is hours later — decides "new" exactly as the live server did.
func (n *nativeFilter) add(key []byte, p *probe) bool {
	at, present := n.findIn(key, n.cur-int64(n.gens), n.cur, p)
	i := 0
	if n.typ == format.TypeWindow {
		i = n.slot(n.cur)
	}
	if !present || at != i {
		n.set(n.arrays[i], p)
		n.markDirty(i)
	}
	if !present {
		n.counts[i]++
	}
	return !present
}

// markDirty records that slot i may hold bits.
func (n *nativeFilter) markDirty(i int) {
	if n.dirty != nil {
		n.dirty[i] = true
	}
}

// card is BF.CARD: the adds that answered 1, in the generations still live.
func (n *nativeFilter) card(now time.Time) uint64 {
	if n.typ != format.TypeWindow {
		return n.counts[0]
	}
	var c uint64
	lo, hi := n.live(now)
	for g := lo; g <= hi; g++ {
		c += n.counts[n.slot(g)]
	}
	return c
}

// ordered returns the arrays oldest generation first (the file's order) and
// their counts.
func (n *nativeFilter) ordered() ([][]byte, []uint64) {
	if n.typ != format.TypeWindow {
		return n.arrays, n.counts
	}
	arrays := make([][]byte, 0, len(n.arrays))
	counts := make([]uint64, 0, len(n.arrays))
	for g := n.cur - int64(n.gens); g <= n.cur; g++ {
		arrays = append(arrays, n.arrays[n.slot(g)])
		counts = append(counts, n.counts[n.slot(g)])
	}
	return arrays, counts
}

// windowPrefix is the size of a window payload's fixed part before the
// bits: T, G, reserved, G+1 start times (docs/filters.md).
func windowPrefix(gens int) uint64 { return 16 + 8*uint64(gens+1) }

// fileHeader is the start of the key as a bloomkit file: the 80-byte
// header, and for a window the payload's configuration and start times.
// The arrays, oldest first, follow it; then the CRC-32C trailer.
func (n *nativeFilter) fileHeader() []byte {
	h := format.Header{Type: n.typ, Hash: n.params.Hash, Seed: n.params.Seed, M: n.params.M, K: n.params.K, N: n.params.N, P: n.params.P}
	h.PayloadLen = n.dataBytes()
	if n.typ == format.TypeWindow {
		h.PayloadLen += windowPrefix(n.gens)
	}
	b := h.Marshal()
	if n.typ == format.TypeWindow {
		b = binary.LittleEndian.AppendUint64(b, uint64(n.period))
		b = binary.LittleEndian.AppendUint32(b, uint32(n.gens))
		b = binary.LittleEndian.AppendUint32(b, 0)
		for g := n.cur - int64(n.gens); g <= n.cur; g++ {
			b = binary.LittleEndian.AppendUint64(b, uint64(g*n.genLen))
		}
	}
	return b
}

// parseFileHeader reads the start of a bloomkit file (what fileHeader
// writes) into a filter without arrays; it returns the header's length.
// Only the classic, blocked and window types can be server keys.
func parseFileHeader(b []byte) (*nativeFilter, int, error) {
	if len(b) < format.HeaderSize {
		return nil, 0, fmt.Errorf("a bloomkit header is %d bytes, got %d", format.HeaderSize, len(b))
	}
	h, err := format.ParseHeader(b[:format.HeaderSize])
	if err != nil {
		return nil, 0, err
	}
	// The hash id comes with the key: a classic key written before hash id
	// 2 existed keeps id 1 and answers as it did.
	n := &nativeFilter{typ: h.Type, params: bloom.Params{M: h.M, K: h.K, Seed: h.Seed, N: h.N, P: h.P, Hash: h.Hash}}
	if h.K < 1 || h.K > bloom.MaxK || h.M == 0 || h.M > bloom.MaxBits || !(h.P >= 0 && h.P < 1) {
		return nil, 0, errors.New("bloomkit header: bad parameters")
	}
	size := format.HeaderSize
	switch h.Type {
	case format.TypeClassic:
	case format.TypeBlocked, format.TypeWindow:
		if h.M%bloom.BlockBits != 0 {
			return nil, 0, errors.New("bloomkit header: blocked m is not a multiple of 512")
		}
	default:
		return nil, 0, fmt.Errorf("a %s filter cannot be a server key (classic, blocked and window can)", format.TypeName(h.Type))
	}
	if h.Type == format.TypeWindow {
		if len(b) < size+16 {
			return nil, 0, errors.New("window header: truncated")
		}
		period := int64(binary.LittleEndian.Uint64(b[size:]))
		gens := binary.LittleEndian.Uint32(b[size+8:])
		if period <= 0 || gens < 1 || gens > bloom.MaxGenerations || binary.LittleEndian.Uint32(b[size+12:]) != 0 {
			return nil, 0, errors.New("window header: bad window or generations")
		}
		n.period, n.gens = time.Duration(period), int(gens)
		n.genLen = generation.Length(n.period, n.gens)
		if len(b) < size+int(windowPrefix(n.gens)) {
			return nil, 0, errors.New("window header: truncated")
		}
		first := int64(binary.LittleEndian.Uint64(b[size+16:]))
		if first%n.genLen != 0 {
			return nil, 0, errors.New("window header: a start time is not a multiple of the generation length")
		}
		// first/genLen ≥ MinInt64/genLen: only the newest can be out of
		// range (checked before the sums below, which could wrap).
		if first/n.genLen >= math.MaxInt64/n.genLen-int64(n.gens) {
			return nil, 0, errors.New("window header: start times out of range")
		}
		for j := 1; j <= n.gens; j++ {
			st := int64(binary.LittleEndian.Uint64(b[size+16+8*j:]))
			if st != first+int64(j)*n.genLen {
				return nil, 0, errors.New("window header: start times are not consecutive generations")
			}
		}
		n.cur = first/n.genLen + int64(n.gens)
		size += int(windowPrefix(n.gens))
	}
	slots := uint64(n.slots())
	if n.params.M > bloom.MaxBits/slots {
		return nil, 0, errors.New("bloomkit header: too large")
	}
	want := n.arrayBytes() * slots
	if h.Type == format.TypeWindow {
		want += windowPrefix(n.gens)
	}
	if h.PayloadLen != want {
		return nil, 0, fmt.Errorf("bloomkit header: payload length %d, want %d", h.PayloadLen, want)
	}
	n.arrays = make([][]byte, slots)
	n.counts = make([]uint64, slots)
	return n, size, nil
}

// snapshotHeader is the key's header in a snapshot: its file header, then
// one count per array, oldest first.
func (n *nativeFilter) snapshotHeader() []byte {
	b := n.fileHeader()
	_, counts := n.ordered()
	for _, c := range counts {
		b = binary.LittleEndian.AppendUint64(b, c)
	}
	return b
}

// loadSnapshotHeader is snapshotHeader's reverse. fits checks each array's
// size against what is left of the file before anything is allocated.
func loadSnapshotHeader(b []byte, fits func(uint64) error) (*nativeFilter, error) {
	n, size, err := parseFileHeader(b)
	if err != nil {
		return nil, err
	}
	if len(b) != size+8*len(n.arrays) {
		return nil, errors.New("native key: bad snapshot header length")
	}
	if err := fits(n.dataBytes()); err != nil {
		return nil, err
	}
	for i := range n.arrays {
		a, err := redisbloom.AllocArray(n.arrayBytes())
		if err != nil {
			n.free()
			return nil, err
		}
		// arrays are read oldest first into the slots they belong in.
		slot := i
		if n.typ == format.TypeWindow {
			slot = n.slot(n.cur - int64(n.gens) + int64(i))
		}
		n.arrays[slot] = a
		n.counts[slot] = binary.LittleEndian.Uint64(b[size+8*i:])
	}
	return n, nil
}

// sameShape reports whether o has n's type and parameters (and window),
// so that their bits can be ORed.
func (n *nativeFilter) sameShape(o *nativeFilter) bool {
	return n.typ == o.typ && n.params == o.params && n.period == o.period && n.gens == o.gens
}

func orBytes(d, s []byte) {
	for len(d) >= 8 && len(s) >= 8 {
		binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(d)|binary.LittleEndian.Uint64(s))
		d, s = d[8:], s[8:]
	}
	for i := range d {
		d[i] |= s[i]
	}
}
