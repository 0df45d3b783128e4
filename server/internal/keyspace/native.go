package keyspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/bitcount"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/generation"
	"github.com/bloomkit/bloomkit/redisbloom"
)

// Native filters: bloomkit's own layouts as server keys.
//
// A key created with BF.RESERVE … LAYOUT blocked|classic or … WINDOW T holds
// a nativeFilter: the bits of one bloom.Blocked or bloom.Filter, or of the
// G+1 generations of a bloom.Window. The server keeps the bits in its own
// arrays and probes them with Params.HashKey, bloom.LocateBlock and bloom.Locate,
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

// NativeFilter is one native key's value; all its methods run with the
// keyspace locked. A window's own fields are in its WindowState (nil for a
// classic or blocked filter): one small blocked filter per user is a real
// workload, and they would pay for a window's 64 bytes each.
type NativeFilter struct {
	Typ    uint8        // format.TypeClassic, TypeBlocked or TypeWindow
	Params bloom.Params // of the filter, or of each of a window's generations
	*WindowState
	// arrays holds the bits: one array, or for a window G+1 slots, generation
	// g in slot g mod (G+1). A Blocked array is m/512 blocks of 64 bytes; bit
	// j of block b is bit j%8 of byte 64b + j/8 (docs/format.md's words, in
	// little-endian bytes).
	Arrays [][]byte
	// counts[i] counts the adds into arrays[i] that answered 1 (new).
	Counts []uint64
	Guard  redisbloom.Guard
}

// WindowState is what only a window holds.
type WindowState struct {
	Period time.Duration // T
	Gens   int           // G
	GenLen int64         // d = ⌈T/G⌉ nanoseconds; generation g covers [g·d, (g+1)·d)
	Cur    int64         // the newest generation held
	// dirty[i] is false while arrays[i] is known to be all zeros (fresh,
	// or emptied since its last write), so that a rotation need not touch
	// it: clearing a never-written generation in place faulted in all its
	// pages, G+1 of them when an idle window moved (tens of ms with the
	// keyspace locked, and the window's whole size made resident). nil:
	// not known, every array may hold bits.
	dirty []bool
	// wiped counts the bytes rotations cleared in place (tests).
	Wiped uint64
}

// window returns the window's generations: the newest and G (0, 0 for a
// filter that is not a window: its one array is generation 0).
func (n *NativeFilter) window() (cur int64, gens int) {
	if n.WindowState == nil {
		return 0, 0
	}
	return n.Cur, n.Gens
}

// Shape returns a filter of n's type, parameters and window (standing
// where n stands), without arrays.
func (n *NativeFilter) Shape() *NativeFilter {
	c := &NativeFilter{Typ: n.Typ, Params: n.Params}
	if n.WindowState != nil {
		c.WindowState = &WindowState{Period: n.Period, Gens: n.Gens, GenLen: n.GenLen, Cur: n.Cur}
	}
	return c
}

// Native layouts as BF.INFO and BF.RESERVE name them.
const (
	LayoutClassic = "classic"
	LayoutBlocked = "blocked"
	layoutWindow  = "window"
)

// NativeMaxCapacity bounds a native filter's capacity (RedisBloom's is
// 2^30): the bits are bounded by bloom.MaxBits and by --maxmemory.
const NativeMaxCapacity = 1 << 40

// smallClear is the size up to which a window clears an expired
// generation in place; larger ones get a fresh (lazily zeroed) array and
// the old one is unmapped off the keyspace lock, so a rotation costs
// O(1) under the lock however large the generation.
const smallClear = 1 << 20

var errNativeParams = errors.New("ERR bad filter parameters")

func (n *NativeFilter) Layout() string {
	switch n.Typ {
	case format.TypeClassic:
		return LayoutClassic
	case format.TypeWindow:
		return layoutWindow
	}
	return LayoutBlocked
}

// arrayBytes is the size of one array: ⌈m/64⌉ words.
func (n *NativeFilter) ArrayBytes() uint64 { return (n.Params.M + 63) / 64 * 8 }

// dataBytes is what the filter's arrays take.
func (n *NativeFilter) DataBytes() uint64 { return n.ArrayBytes() * uint64(len(n.Arrays)) }

// memUsage is BF.INFO's Size and MEMORY USAGE's value for the key.
func (n *NativeFilter) MemUsage() uint64 { return n.DataBytes() + 96 + 32*uint64(len(n.Arrays)) }

// NativeParams works out a new filter's parameters from BF.RESERVE's
// capacity and rate as the library does (bloom.Estimate, EstimateBlocked,
// and for a window EstimateBlocked at the generations' rate).
func NativeParams(typ uint8, capacity uint64, rate float64, period time.Duration, gens int, seed uint64) (*NativeFilter, error) {
	n := &NativeFilter{Typ: typ}
	n.Params = estimate(typ, capacity, rate)
	switch typ {
	case format.TypeWindow:
		n.Params.N, n.Params.P = capacity, rate
		if period <= 0 || gens < 1 || gens > bloom.MaxGenerations {
			return nil, errNativeParams
		}
		n.WindowState = &WindowState{Period: period, Gens: gens, GenLen: generation.Length(period, gens)}
	}
	n.Params.Seed = seed
	if n.Params.M == 0 || n.Params.K == 0 || n.Params.K > bloom.MaxK {
		return nil, errNativeParams
	}
	if n.Params.M > bloom.MaxBits/uint64(n.Slots()) {
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
		p.Hash = bloom.HashXXH3 // a window's only hash id (EstimateBlocked gives a blocked filter's newest)
	default:
		return bloom.Params{}
	}
	l.typ, l.capacity, l.rate, l.params = typ, capacity, rate, p
	return p
}

// slots is the number of arrays: 1, or G+1 for a window.
func (n *NativeFilter) Slots() int {
	if n.Typ == format.TypeWindow {
		return n.Gens + 1
	}
	return 1
}

// allocate gives the filter fresh zeroed arrays, zero counts and nothing
// dirty.
func (n *NativeFilter) Allocate() error {
	slots := n.Slots()
	n.Arrays = make([][]byte, slots)
	n.Counts = make([]uint64, slots)
	if n.WindowState != nil {
		n.dirty = make([]bool, slots)
	}
	for i := range n.Arrays {
		a, err := redisbloom.AllocArray(n.ArrayBytes())
		if err != nil {
			n.free()
			return err
		}
		n.Arrays[i] = a
	}
	return nil
}

func (n *NativeFilter) free() {
	for i, a := range n.Arrays {
		if a != nil {
			redisbloom.FreeArray(a)
			n.Arrays[i] = nil
		}
	}
}

// genAt is the generation the clock is in at t.
func (n *NativeFilter) GenAt(t time.Time) int64 { return generation.At(t, n.GenLen) }

// validGen reports whether a window can stand at generation g: the start
// times of its generations g-G … g+1 are whole int64 nanoseconds. The
// loops over a window's generations (g ≤ cur) and its start times
// (g·genLen) rely on it; a START, BF.ADVANCE or file header outside it is
// refused, or a forged header with cur = MaxInt64 would loop forever with
// the keyspace locked, and a start time that overflows would write a
// snapshot that cannot be read back.
func (n *NativeFilter) ValidGen(g int64) bool {
	return g >= math.MinInt64/n.GenLen+int64(n.Gens) && g < math.MaxInt64/n.GenLen
}

// slot is the array generation g lives in.
func (n *NativeFilter) Slot(g int64) int { return generation.Slot(g, len(n.Arrays)) }

// live returns the generations [lo, hi] a read at now sees: the last G+1
// by the clock, of those the window holds. A clock behind the window counts
// as standing at its newest generation, so keys are never forgotten early.
func (n *NativeFilter) live(now time.Time) (lo, hi int64) {
	return generation.Live(n.Cur, n.GenAt(now), n.Gens)
}

// advance moves the window forward to generation g, emptying the slots of
// the generations that expire on the way (at most G+1 however far g is).
func (n *NativeFilter) Advance(g int64) {
	if n.WindowState == nil || g <= n.Cur {
		return
	}
	lo, hi := generation.Expiring(n.Cur, g, n.Gens)
	for h := lo; h <= hi; h++ {
		n.empty(n.Slot(h))
	}
	n.Cur = g
}

// empty clears slot i: in place when small, otherwise by swapping in a
// fresh array and freeing the old one off the lock (or, while a snapshot
// still reads it, handing it to the guard).
func (n *NativeFilter) empty(i int) {
	a := n.Arrays[i]
	n.Counts[i] = 0
	if n.dirty == nil {
		n.dirty = make([]bool, len(n.Arrays))
		for j := range n.dirty {
			n.dirty[j] = true
		}
	}
	if !n.dirty[i] {
		return
	}
	n.dirty[i] = false
	if n.Guard == nil && len(a) <= smallClear {
		clear(a)
		n.Wiped += uint64(len(a))
		return
	}
	fresh, err := redisbloom.AllocArray(uint64(len(a)))
	if err != nil {
		if n.Guard != nil {
			n.Guard.Write(a, 0, len(a))
		}
		clear(a)
		n.Wiped += uint64(len(a))
		return
	}
	n.Arrays[i] = fresh
	if n.Guard != nil {
		n.Guard.Release(a)
		return
	}
	go redisbloom.FreeArray(a)
}

// Probe is where a key's bits are: a block and offsets in it (blocked and
// window) or bit positions (classic).
type Probe struct {
	block   uint64
	offsets []uint16
	bits    []uint64
}

func (n *NativeFilter) locate(key []byte, p *Probe) {
	h := n.Params.HashKey(key) // the key's hash for the filter's hash id and seed
	if n.Typ == format.TypeClassic {
		p.bits = bloom.Locate(n.Params, h, p.bits[:0])
		return
	}
	p.block, p.offsets = bloom.LocateBlock(n.Params, h, p.offsets[:0])
}

// has reports whether all the key's bits are set in a.
func (n *NativeFilter) has(a []byte, p *Probe) bool {
	if n.Typ == format.TypeClassic {
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
func (n *NativeFilter) set(a []byte, p *Probe) {
	if n.Typ == format.TypeClassic {
		for _, b := range p.bits {
			if n.Guard != nil {
				n.Guard.Write(a, int(b>>3), 1)
			}
			a[b>>3] |= 1 << (b & 7)
		}
		return
	}
	if n.Guard != nil {
		n.Guard.Write(a, int(p.block*64), 64)
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
func (n *NativeFilter) Prefetch(now time.Time, items [][]byte) byte {
	var (
		pos [16]uint64
		v   byte
	)
	lo, hi := int64(0), int64(0)
	if n.Typ == format.TypeWindow {
		lo, hi = n.live(now)
	}
	for len(items) > 0 {
		k := min(len(items), len(pos))
		for i, item := range items[:k] {
			h := n.Params.HashKey(item)
			if n.Typ == format.TypeClassic {
				// The first probe: the same for every hash id.
				b, _ := bits.Mul64(h.Lo, n.Params.M)
				pos[i] = b >> 3
			} else {
				b, _ := bits.Mul64(h.Hi, n.Params.M/bloom.BlockBits)
				pos[i] = b * 64
			}
		}
		for g := hi; g >= lo; g-- {
			a := n.Arrays[n.Slot(g)]
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
func (n *NativeFilter) Test(key []byte, now time.Time, p *Probe) bool {
	_, ok := n.find(key, now, p)
	return ok
}

// find locates the key's bits and returns the slot of the newest
// generation (the only array, for a blocked or classic filter) that has
// them all, if any does.
func (n *NativeFilter) find(key []byte, now time.Time, p *Probe) (int, bool) {
	if n.Typ != format.TypeWindow {
		return n.findIn(key, 0, 0, p)
	}
	lo, hi := n.live(now)
	return n.findIn(key, lo, hi, p)
}

// findIn is find over the generations [lo, hi] (ignored unless a window).
func (n *NativeFilter) findIn(key []byte, lo, hi int64, p *Probe) (int, bool) {
	n.locate(key, p)
	if n.Typ != format.TypeWindow {
		return 0, n.has(n.Arrays[0], p)
	}
	for g := hi; g >= lo; g-- {
		if i := n.Slot(g); n.has(n.Arrays[i], p) {
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
func (n *NativeFilter) Add(key []byte, p *Probe) bool {
	cur, gens := n.window()
	at, present := n.findIn(key, cur-int64(gens), cur, p)
	i := 0
	if n.Typ == format.TypeWindow {
		i = n.Slot(n.Cur)
	}
	if !present || at != i {
		n.set(n.Arrays[i], p)
		n.MarkDirty(i)
	}
	if !present {
		n.Counts[i]++
	}
	return !present
}

// markDirty records that slot i may hold bits.
func (n *NativeFilter) MarkDirty(i int) {
	if n.WindowState != nil && n.dirty != nil {
		n.dirty[i] = true
	}
}

// card is BF.CARD: the adds that answered 1, in the generations still live.
func (n *NativeFilter) Card(now time.Time) uint64 {
	if n.Typ != format.TypeWindow {
		return n.Counts[0]
	}
	var c uint64
	lo, hi := n.live(now)
	for g := lo; g <= hi; g++ {
		c += n.Counts[n.Slot(g)]
	}
	return c
}

// ordered returns the arrays oldest generation first (the file's order) and
// their counts.
func (n *NativeFilter) Ordered() ([][]byte, []uint64) {
	if n.Typ != format.TypeWindow {
		return n.Arrays, n.Counts
	}
	arrays := make([][]byte, 0, len(n.Arrays))
	counts := make([]uint64, 0, len(n.Arrays))
	for g := n.Cur - int64(n.Gens); g <= n.Cur; g++ {
		arrays = append(arrays, n.Arrays[n.Slot(g)])
		counts = append(counts, n.Counts[n.Slot(g)])
	}
	return arrays, counts
}

// windowPrefix is the size of a window payload's fixed part before the
// bits: T, G, reserved, G+1 start times (docs/filters.md).
func windowPrefix(gens int) uint64 { return 16 + 8*uint64(gens+1) }

// fileHeader is the start of the key as a bloomkit file: the 80-byte
// header, and for a window the payload's configuration and start times.
// The arrays, oldest first, follow it; then the CRC-32C trailer.
func (n *NativeFilter) FileHeader() []byte {
	h := format.Header{Type: n.Typ, Hash: n.Params.Hash, Seed: n.Params.Seed, M: n.Params.M, K: n.Params.K, N: n.Params.N, P: n.Params.P}
	h.PayloadLen = n.DataBytes()
	if n.Typ == format.TypeWindow {
		h.PayloadLen += windowPrefix(n.Gens)
	}
	b := h.Marshal()
	if n.Typ == format.TypeWindow {
		b = binary.LittleEndian.AppendUint64(b, uint64(n.Period))
		b = binary.LittleEndian.AppendUint32(b, uint32(n.Gens))
		b = binary.LittleEndian.AppendUint32(b, 0)
		for g := n.Cur - int64(n.Gens); g <= n.Cur; g++ {
			b = binary.LittleEndian.AppendUint64(b, uint64(g*n.GenLen))
		}
	}
	return b
}

// ParseFileHeader reads the start of a bloomkit file (what fileHeader
// writes) into a filter without arrays; it returns the header's length.
// Only the classic, blocked and window types can be server keys.
func ParseFileHeader(b []byte) (*NativeFilter, int, error) {
	if len(b) < format.HeaderSize {
		return nil, 0, fmt.Errorf("a bloomkit header is %d bytes, got %d", format.HeaderSize, len(b))
	}
	h, err := format.ParseHeader(b[:format.HeaderSize])
	if err != nil {
		return nil, 0, err
	}
	// The hash id comes with the key: a classic key written before hash id
	// 2 existed keeps id 1 and answers as it did.
	n := &NativeFilter{Typ: h.Type, Params: bloom.Params{M: h.M, K: h.K, Seed: h.Seed, N: h.N, P: h.P, Hash: h.Hash}}
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
		if !(h.P > 0) {
			// A window is sized by its rate: bloom.Window's reader refuses
			// one without, and so would a file pulled from this key.
			return nil, 0, fmt.Errorf("window header: rate %v, want above 0", h.P)
		}
		if len(b) < size+16 {
			return nil, 0, errors.New("window header: truncated")
		}
		period := int64(binary.LittleEndian.Uint64(b[size:]))
		gens := binary.LittleEndian.Uint32(b[size+8:])
		if period <= 0 || gens < 1 || gens > bloom.MaxGenerations || binary.LittleEndian.Uint32(b[size+12:]) != 0 {
			return nil, 0, errors.New("window header: bad window or generations")
		}
		n.WindowState = &WindowState{Period: time.Duration(period), Gens: int(gens)}
		n.GenLen = generation.Length(n.Period, n.Gens)
		if len(b) < size+int(windowPrefix(n.Gens)) {
			return nil, 0, errors.New("window header: truncated")
		}
		first := int64(binary.LittleEndian.Uint64(b[size+16:]))
		if first%n.GenLen != 0 {
			return nil, 0, errors.New("window header: a start time is not a multiple of the generation length")
		}
		// The newest start is checked before the sums below, which could
		// wrap; the oldest as bloom.Window's reader checks it, so that
		// every key loaded here reads back there.
		if first/n.GenLen >= math.MaxInt64/n.GenLen-int64(n.Gens) || first/n.GenLen < math.MinInt64/n.GenLen+1 {
			return nil, 0, errors.New("window header: start times out of range")
		}
		for j := 1; j <= n.Gens; j++ {
			st := int64(binary.LittleEndian.Uint64(b[size+16+8*j:]))
			if st != first+int64(j)*n.GenLen {
				return nil, 0, errors.New("window header: start times are not consecutive generations")
			}
		}
		n.Cur = first/n.GenLen + int64(n.Gens)
		size += int(windowPrefix(n.Gens))
	}
	slots := uint64(n.Slots())
	if n.Params.M > bloom.MaxBits/slots {
		return nil, 0, errors.New("bloomkit header: too large")
	}
	want := n.ArrayBytes() * slots
	if h.Type == format.TypeWindow {
		want += windowPrefix(n.Gens)
	}
	if h.PayloadLen != want {
		return nil, 0, fmt.Errorf("bloomkit header: payload length %d, want %d", h.PayloadLen, want)
	}
	n.Arrays = make([][]byte, slots)
	n.Counts = make([]uint64, slots)
	return n, size, nil
}

// snapshotHeader is the key's header in a snapshot: its file header, then
// one count per array, oldest first.
func (n *NativeFilter) snapshotHeader() []byte {
	b := n.FileHeader()
	_, counts := n.Ordered()
	for _, c := range counts {
		b = binary.LittleEndian.AppendUint64(b, c)
	}
	return b
}

// loadSnapshotHeader is snapshotHeader's reverse. fits checks each array's
// size against what is left of the file before anything is allocated.
func loadSnapshotHeader(b []byte, fits func(uint64) error) (*NativeFilter, error) {
	n, size, err := ParseFileHeader(b)
	if err != nil {
		return nil, err
	}
	if len(b) != size+8*len(n.Arrays) {
		return nil, errors.New("native key: bad snapshot header length")
	}
	if err := fits(n.DataBytes()); err != nil {
		return nil, err
	}
	for i := range n.Arrays {
		a, err := redisbloom.AllocArray(n.ArrayBytes())
		if err != nil {
			n.free()
			return nil, err
		}
		// arrays are read oldest first into the slots they belong in.
		slot := i
		if n.Typ == format.TypeWindow {
			slot = n.Slot(n.Cur - int64(n.Gens) + int64(i))
		}
		n.Arrays[slot] = a
		n.Counts[slot] = binary.LittleEndian.Uint64(b[size+8*i:])
	}
	return n, nil
}

// sameShape reports whether o has n's type and parameters (and window),
// so that their bits can be ORed.
func (n *NativeFilter) SameShape(o *NativeFilter) bool {
	if n.Typ != o.Typ || n.Params != o.Params || (n.WindowState == nil) != (o.WindowState == nil) {
		return false
	}
	return n.WindowState == nil || (n.Period == o.Period && n.Gens == o.Gens)
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

// keysFromBits estimates how many keys set the set bits of one of the
// filter's arrays, as the library's Stats does for its layout; an array
// with every bit set counts as holding its capacity.
func (n *NativeFilter) KeysFromBits(set uint64) uint64 {
	if set >= n.Params.M {
		return n.Params.N
	}
	if n.Typ == format.TypeClassic {
		return bitcount.Classic(set, n.Params.M, n.Params.K)
	}
	return bitcount.Blocked(set, n.Params.M, n.Params.K)
}
