package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/internal/format"
)

// TypeScalable is the file-format type of a Scalable filter.
const TypeScalable = format.TypeScalable

// ErrFull is returned (wrapped, with the reason) by Scalable.TryAdd when the
// filter may not or cannot grow: it is non-scaling and holds its capacity,
// or its next link would exceed MaxBits or MaxLinks.
var ErrFull = errors.New("bloom: filter is full")

// MaxLinks is the largest number of links a Scalable filter chains.
const MaxLinks = 64

// MaxGrowth is the largest ScalableConfig.Growth: with it, 64 links
// already span far more capacity than MaxBits can hold.
const MaxGrowth = 1 << 16

// DefaultMaxBytes is how large a Scalable filter's links may grow in all,
// in bytes, when ScalableConfig.MaxBytes is 0 and the first link is
// smaller than a quarter of it (1 GiB).
const DefaultMaxBytes = 1 << 30

// Defaults for ScalableConfig.
const (
	// DefaultGrowth is the capacity multiplier of each new link.
	DefaultGrowth = 2
	// DefaultTightening is the ratio r by which each new link's share of
	// the rate shrinks.
	DefaultTightening = 0.8
)

// ScalableConfig describes a Scalable filter.
type ScalableConfig struct {
	// Capacity is the number of items the first link holds; 0 is taken
	// as 1, the smallest link.
	Capacity uint64
	// Rate is the bound on the compound false-positive rate, in (0, 1): it
	// holds however far the filter grows.
	Rate float64
	// Growth multiplies each new link's capacity (default 2). Higher growth
	// keeps the chain shorter, so lookups of absent keys probe fewer links,
	// at the cost of a bigger last link that is on average less full.
	Growth uint32
	// Tightening is the ratio r in (0, 1) by which each new link's rate
	// shrinks (default 0.8): link i has rate Rate·(1−r)·r^i, and these sum
	// to at most Rate. A larger r makes the first links dearer and the later
	// ones cheaper; r ≈ L/(L+1) costs least memory for a chain of L+1 links.
	// With growth 2 and 1,000-fold growth (10 links), r = 0.8 takes 19.2
	// bits per key at p = 1% and r = 0.5 (RedisBloom's choice) 28.3; a filter
	// that never grows takes 14.3 and 11.8 (docs/filters.md).
	Tightening float64
	// NonScaling makes TryAdd return ErrFull instead of adding a link once
	// the first link holds Capacity items. The only link of a non-scaling
	// filter is planned for the whole Rate (no tightening).
	NonScaling bool
	// Seed is the hash seed of every link.
	Seed uint64
	// MaxBytes is how large the links may grow in all, in bytes, rounded
	// up to a whole KiB: TryAdd fails with ErrFull (and Add overfills the
	// last link) rather than add a link that would pass it. 0 means
	// DefaultMaxBytes, or four times the first link when that is larger.
	// A limit below the first link is an error. It is kept in the file.
	MaxBytes uint64
}

func (c ScalableConfig) withDefaults() ScalableConfig {
	if c.Capacity == 0 {
		c.Capacity = 1 // n = 0 sizes the smallest filter, as New(0, p) does
	}
	if c.Growth == 0 {
		c.Growth = DefaultGrowth
	}
	if c.Tightening == 0 {
		c.Tightening = DefaultTightening
	}
	if c.MaxBytes != 0 && c.MaxBytes <= MaxBits/8 {
		c.MaxBytes = (c.MaxBytes + 1023) &^ 1023
	}
	return c
}

func (c ScalableConfig) validate() error {
	switch {
	case c.Capacity == 0:
		return fmt.Errorf("%w: capacity 0", ErrInvalidParams)
	case !(c.Rate >= MinRate && c.Rate < 1):
		return fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalidParams, c.Rate)
	case c.Growth == 0 || c.Growth > MaxGrowth:
		return fmt.Errorf("%w: growth factor %d, want 1 to %d", ErrInvalidParams, c.Growth, MaxGrowth)
	case c.MaxBytes > MaxBits/8:
		return fmt.Errorf("%w: MaxBytes %d, the limit is %d", ErrInvalidParams, c.MaxBytes, uint64(MaxBits/8))
	case !(c.Tightening > 0 && c.Tightening < 1):
		return fmt.Errorf("%w: tightening ratio %v is not in (0, 1)", ErrInvalidParams, c.Tightening)
	}
	return nil
}

// linkRate returns link i's share of the rate: the most its false-positive
// rate may reach. A non-scaling filter's only link gets the whole rate.
func (c ScalableConfig) linkRate(i int) float64 {
	if c.NonScaling {
		return c.Rate
	}
	return c.Rate * (1 - c.Tightening) * math.Pow(c.Tightening, float64(i))
}

// planMargin: the links of a scaling filter are sized for 90% of their
// share of the rate, so that a link that comes out a little worse than
// average (see Scalable) still fits its share at capacity.
const planMargin = 0.9

// linkPlan returns the rate link i is sized for.
func (c ScalableConfig) linkPlan(i int) float64 {
	if c.NonScaling {
		return c.Rate
	}
	return planMargin * c.linkRate(i)
}

// Scalable is a Bloom filter that grows: a chain of blocked filters (links),
// of which only the last takes new keys. When it holds its capacity, a new
// link is added with Growth times the capacity and a rate tightened by the
// ratio r (link i's share of the rate is Rate·(1−r)·r^i), so the compound
// rate — the chance that an absent key tests present in any link — stays at
// most Rate however far the filter grows (the shares, a geometric series,
// sum to less than Rate). This is the scalable Bloom filter of Almeida,
// Baquero, Preguiça and Hutchison (2007), with blocked links.
//
// Every link uses the same seed, so a key is hashed once per call whatever
// the length of the chain, and each link costs one cache line. Lookups probe
// the newest link first: it is the largest and, with growth 2, holds about
// half the keys. In a chain of four links or more, a lookup builds the
// key's probe pattern once and then tests each link with one block load and
// eight AND-NOTs: after 1,000-fold growth (10 links, 1M keys) a hit costs
// 1.6 times a one-link filter's and a miss 2.8 times (docs/filters.md).
//
// A link's rate at capacity is only right on average: small links in
// particular can come out several percent worse when keys happen to crowd
// some blocks. So each link is sized for 90% of its share of the rate, and
// is closed early, before it holds its capacity, if its false-positive rate
// as it is now — computed from its bits, and kept up to date on every add —
// reaches its full share. The compound bound then holds for the filter
// actually built, not only on average.
//
// An Add of a key that already tests present changes nothing; Count is the
// number of adds that were new.
//
// The zero Scalable is not usable: make one with NewScalable or
// NewScalableWith, or read one from a file. It tests every key absent;
// TryAdd returns ErrZero and Add panics with it (see the package
// documentation).
//
// # Concurrency
//
// The Test methods only read and may run concurrently with each other.
// Every other method must run alone.
type Scalable struct {
	cfg    ScalableConfig
	links  []scalableLink
	count  uint64
	levels []uint32 // the links' different probe counts, ascending
}

type scalableLink struct {
	f        *Blocked
	capacity uint64
	items    uint64
	// Copies of f's fields, so that a lookup reads them without following
	// the pointer.
	words  []uint64
	blocks uint64
	k      uint32
	// load is the sum over the link's blocks of (bits set / 512)^k: blocks
	// times the chance that an absent key tests present in the link. It is
	// kept up to date by adds to the last link.
	load  float64
	level uint8 // index of k in Scalable.levels
	// share is the link's share of the rate (linkRate), which load/blocks
	// may not reach.
	share float64
}

func newLink(f *Blocked, capacity, items uint64) scalableLink {
	return scalableLink{f: f, capacity: capacity, items: items, words: f.words, blocks: f.blocks, k: f.params.K}
}

// powTables[k][j] = (j/512)^k, built when first needed.
var powTables [MaxK + 1]atomic.Pointer[[BlockBits + 1]float64]

func powTable(k uint32) *[BlockBits + 1]float64 {
	if t := powTables[k].Load(); t != nil {
		return t
	}
	t := new([BlockBits + 1]float64)
	for j := range t {
		t[j] = math.Pow(float64(j)/BlockBits, float64(k))
	}
	powTables[k].Store(t)
	return t
}

func popBlock(b *[8]uint64) int {
	return bits.OnesCount64(b[0]) + bits.OnesCount64(b[1]) + bits.OnesCount64(b[2]) + bits.OnesCount64(b[3]) +
		bits.OnesCount64(b[4]) + bits.OnesCount64(b[5]) + bits.OnesCount64(b[6]) + bits.OnesCount64(b[7])
}

// computeLoad sets l.load from the link's bits.
func (l *scalableLink) computeLoad() {
	pow := powTable(l.k)
	l.load = 0
	for b := 0; b+8 <= len(l.words); b += 8 {
		l.load += pow[popBlock((*[8]uint64)(l.words[b:b+8]))]
	}
}

// add inserts a key hashed to (lo, hi) into the link, keeping load.
func (l *scalableLink) add(lo, hi uint64) {
	b, _ := bits.Mul64(hi, l.blocks)
	blk := (*[8]uint64)(l.words[b*8 : b*8+8])
	before := popBlock(blk)
	l.f.add(lo, hi)
	if after := popBlock(blk); after != before {
		pow := powTable(l.k)
		l.load += pow[after] - pow[before]
	}
	l.items++
}

// full reports whether the link may take no more keys: it holds its
// capacity, or (in a scaling filter) its false-positive rate as it is now
// has reached its share of the rate. The second can happen first when keys
// happen to crowd some blocks; it keeps the compound rate within its bound
// for the filter as it is, not only on average.
func (l *scalableLink) full(scaling bool) bool {
	return l.items >= l.capacity || scaling && l.load >= l.share*float64(l.blocks)
}

// NewScalable returns an empty scalable filter whose first link holds n
// items, with compound false-positive rate at most p, growth 2 and
// tightening 0.8.
func NewScalable(n uint64, p float64) (*Scalable, error) {
	return NewScalableWith(ScalableConfig{Capacity: n, Rate: p})
}

// NewScalableWith returns an empty scalable filter configured by c; zero
// Growth and Tightening take their defaults.
func NewScalableWith(c ScalableConfig) (*Scalable, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Scalable{cfg: c}
	if p := EstimateBlocked(c.Capacity, c.linkPlan(0)); p.M == 0 || p.M > MaxBits {
		return nil, fmt.Errorf("%w: a first link of %d items at rate %g needs more than %d bits", ErrInvalidParams, c.Capacity, c.linkPlan(0), uint64(MaxBits))
	}
	if err := s.grow(); err != nil {
		if errors.Is(err, ErrInvalidParams) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidParams, err)
	}
	return s, nil
}

// maxBytes is the limit of the links' total size (ScalableConfig.MaxBytes).
func (s *Scalable) maxBytes() uint64 {
	if s.cfg.MaxBytes != 0 {
		return s.cfg.MaxBytes
	}
	var first uint64
	if len(s.links) > 0 {
		first = s.links[0].f.params.M / 8
	}
	return max(DefaultMaxBytes, min(4*first, MaxBits/8))
}

// Config returns the filter's configuration.
func (s *Scalable) Config() ScalableConfig { return s.cfg }

// Len returns the number of keys added that were new: that tested absent
// when they were added.
func (s *Scalable) Len() uint64 { return s.count }

// capacity returns the number of items the links hold together before the
// next one is added.
func (s *Scalable) capacity() uint64 {
	var n uint64
	for _, l := range s.links {
		n = satAdd(n, l.capacity)
	}
	return n
}

// bits returns the total size of the links in bits.
func (s *Scalable) bits() uint64 {
	var m uint64
	for _, l := range s.links {
		m += l.f.params.M
	}
	return m
}

// linkCapacity is the capacity of link i: Capacity·Growth^i, or 0 when
// that overflows (no link has capacity 0).
func linkCapacity(c ScalableConfig, i int) uint64 {
	n := c.Capacity
	for range i {
		hi, lo := bits.Mul64(n, uint64(c.Growth))
		if hi != 0 {
			return 0
		}
		n = lo
	}
	return n
}

func satAdd(a, b uint64) uint64 {
	if s, c := bits.Add64(a, b, 0); c == 0 {
		return s
	}
	return math.MaxUint64
}

// grow appends a link, failing (with an error wrapping ErrFull) when the
// chain cannot grow further.
func (s *Scalable) grow() error {
	i := len(s.links)
	if i >= MaxLinks {
		return fmt.Errorf("%w: %d links, the limit", ErrFull, MaxLinks)
	}
	capacity := s.cfg.Capacity
	if i > 0 {
		hi, lo := bits.Mul64(s.links[i-1].capacity, uint64(s.cfg.Growth))
		if hi != 0 {
			return fmt.Errorf("%w: the next link's capacity overflows", ErrFull)
		}
		capacity = lo
	}
	p := EstimateBlocked(capacity, s.cfg.linkPlan(i))
	p.Seed, p.Hash = s.cfg.Seed, HashXXH3 // a chain's only hash id
	if p.M == 0 || p.M > MaxBits || s.bits()+p.M > MaxBits {
		return fmt.Errorf("%w: the next link (%d items at rate %g) would take the chain above %d bits", ErrFull, capacity, p.P, uint64(MaxBits))
	}
	if i > 0 {
		if now, limit := s.bits()/8, s.maxBytes(); now+p.M/8 > limit {
			return fmt.Errorf("%w: %d links of %d bytes; the next (%d items at rate %g) of %d bytes would pass the limit of %d bytes (ScalableConfig.MaxBytes)",
				ErrFull, i, now, capacity, p.P, p.M/8, limit)
		}
	} else if s.cfg.MaxBytes != 0 && p.M/8 > s.cfg.MaxBytes {
		return fmt.Errorf("%w: the first link (%d items at rate %g) takes %d bytes, above MaxBytes %d", ErrInvalidParams, capacity, p.P, p.M/8, s.cfg.MaxBytes)
	}
	f, err := NewBlockedFromParams(p)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFull, err)
	}
	s.links = append(s.links, newLink(f, capacity, 0))
	s.links[i].share = s.cfg.linkRate(i)
	s.index()
	return nil
}

// TryAdd inserts key unless it already tests present, and reports whether
// it was new. When the last link holds its capacity, a new link is added
// first; if the filter is non-scaling or cannot grow, TryAdd changes
// nothing and returns an error wrapping ErrFull.
func (s *Scalable) TryAdd(key []byte) (added bool, err error) {
	lo, hi := hashBytes(key, s.cfg.Seed)
	return s.tryAdd(lo, hi)
}

// TryAddString is TryAdd for a string key.
func (s *Scalable) TryAddString(key string) (added bool, err error) {
	lo, hi := hashString(key, s.cfg.Seed)
	return s.tryAdd(lo, hi)
}

func (s *Scalable) tryAdd(lo, hi uint64) (bool, error) {
	if len(s.links) == 0 {
		return false, fmt.Errorf("%w (a zero Scalable)", ErrZero)
	}
	if s.test(lo, hi) {
		return false, nil
	}
	last := &s.links[len(s.links)-1]
	if last.full(!s.cfg.NonScaling) {
		if s.cfg.NonScaling {
			return false, fmt.Errorf("%w: non-scaling filter holds its capacity of %d items", ErrFull, s.capacity())
		}
		if err := s.grow(); err != nil {
			return false, err
		}
		last = &s.links[len(s.links)-1]
	}
	last.add(lo, hi)
	s.count++
	return true, nil
}

// Add inserts key. Add never loses a key: when the filter is full (see
// TryAdd) it adds the key to the last link anyway, above that link's
// capacity, and the false-positive rate climbs above the configured rate.
// Use TryAdd to be told instead.
func (s *Scalable) Add(key []byte) {
	lo, hi := hashBytes(key, s.cfg.Seed)
	s.addAnyway(lo, hi)
}

// AddString is Add for a string key.
func (s *Scalable) AddString(key string) {
	lo, hi := hashString(key, s.cfg.Seed)
	s.addAnyway(lo, hi)
}

func (s *Scalable) addAnyway(lo, hi uint64) bool {
	added, err := s.tryAdd(lo, hi)
	if len(s.links) == 0 {
		panicZero("Scalable")
	}
	if err != nil {
		s.links[len(s.links)-1].add(lo, hi)
		s.count++
		return true
	}
	return added
}

// TestAndAdd inserts key as Add does and reports whether it tested present
// before.
func (s *Scalable) TestAndAdd(key []byte) bool {
	lo, hi := hashBytes(key, s.cfg.Seed)
	return !s.addAnyway(lo, hi)
}

// TestAndAddString is TestAndAdd for a string key.
func (s *Scalable) TestAndAddString(key string) bool {
	lo, hi := hashString(key, s.cfg.Seed)
	return !s.addAnyway(lo, hi)
}

// Test reports whether key may have been added. False means it certainly
// was not; true means it probably was.
func (s *Scalable) Test(key []byte) bool {
	lo, hi := hashBytes(key, s.cfg.Seed)
	return s.test(lo, hi)
}

// TestString is Test for a string key, without copying it.
func (s *Scalable) TestString(key string) bool {
	lo, hi := hashString(key, s.cfg.Seed)
	return s.test(lo, hi)
}

// test checks every link, newest (largest) first. Short chains are tested
// link by link, probe by probe. For longer ones, the key's probe pattern is
// built once as a 512-bit mask per distinct probe count (links planned for
// tighter rates use more probes; the pattern of k probes is a prefix of
// that of k+1), and each link then costs one block load and eight
// AND-NOTs: a lookup's work grows little with the chain, and the links'
// cache misses, which do not depend on one another, overlap.
func (s *Scalable) test(lo, hi uint64) bool {
	links := s.links
	if len(links) < maskFrom {
		for i := len(links) - 1; i >= 0; i-- {
			if links[i].f.test(lo, hi) {
				return true
			}
		}
		return false
	}
	var masks [maxLevels][8]uint64
	var m [8]uint64
	levels := s.levels
	lv := 0
	for j, salt := range blockSalts[:levels[len(levels)-1]] {
		p := (lo * salt) >> 55
		m[p>>6] |= 1 << (p & 63)
		if uint32(j+1) == levels[lv] {
			if lv < maxLevels {
				masks[lv] = m
			}
			lv++
		}
	}
	for i := len(links) - 1; i >= 0; i-- {
		l := &links[i]
		if l.level >= maxLevels {
			if l.f.test(lo, hi) {
				return true
			}
			continue
		}
		b, _ := bits.Mul64(hi, l.blocks)
		blk := (*[8]uint64)(l.words[b*8 : b*8+8])
		mk := &masks[l.level]
		// Plain loads: nothing writes a Scalable while it is tested.
		if (mk[0]&^blk[0])|(mk[1]&^blk[1])|(mk[2]&^blk[2])|(mk[3]&^blk[3])|
			(mk[4]&^blk[4])|(mk[5]&^blk[5])|(mk[6]&^blk[6])|(mk[7]&^blk[7]) == 0 {
			return true
		}
	}
	return false
}

// maskFrom is the chain length from which test builds probe masks: below
// it, building them costs more than it saves.
const maskFrom = 4

// maxLevels is how many different probe counts test builds masks for;
// links with more (rare: it takes a chain whose rates span many decades)
// are tested probe by probe.
const maxLevels = 6

// index records the links' different probe counts, for test.
func (s *Scalable) index() {
	s.levels = s.levels[:0]
	for _, l := range s.links {
		if !slices.Contains(s.levels, l.k) {
			s.levels = append(s.levels, l.k)
		}
	}
	slices.Sort(s.levels)
	for i := range s.links {
		s.links[i].level = uint8(slices.Index(s.levels, s.links[i].k))
	}
}

// Reset removes every key and every link but the first.
func (s *Scalable) Reset() {
	s.links[0].f.Reset()
	s.links[0].items, s.links[0].load = 0, 0
	clear(s.links[1:])
	s.links = s.links[:1]
	s.count = 0
	s.index()
}

// Clone returns an independent copy of s.
func (s *Scalable) Clone() *Scalable {
	t := &Scalable{cfg: s.cfg, count: s.count, links: make([]scalableLink, len(s.links))}
	for i, l := range s.links {
		t.links[i] = newLink(l.f.Clone(), l.capacity, l.items)
		t.links[i].load, t.links[i].share = l.load, l.share
	}
	t.index()
	return t
}

// Equal reports whether s and t have the same configuration, links and
// bits, so that they answer every Test alike and grow alike.
func (s *Scalable) Equal(t *Scalable) bool {
	if s.cfg != t.cfg || s.count != t.count || len(s.links) != len(t.links) {
		return false
	}
	for i, l := range s.links {
		o := t.links[i]
		if l.capacity != o.capacity || l.items != o.items || l.f.params != o.f.params || !l.f.Equal(o.f) {
			return false
		}
	}
	return true
}

// Stats returns the chain's size and fill (see Stats): its links' bits
// together, its exact count of new keys as ApproxCount, and the chance that
// an absent key tests present in at least one link, 1 − Π(1 − rate of link
// i), each link's rate estimated from its bits.
func (s *Scalable) Stats() Stats {
	st := Stats{Bits: s.bits(), ApproxCount: s.count, Capacity: s.capacity()}
	miss := 1.0
	for _, l := range s.links {
		set, fpr := l.f.fill()
		st.BitsSet += set
		miss *= 1 - fpr
		st.Parts = append(st.Parts, l.f.params)
	}
	if st.Bits > 0 {
		st.FillRatio = float64(st.BitsSet) / float64(st.Bits)
	}
	st.EstimatedFPR = 1 - miss
	return st
}

// The payload of a scalable filter (docs/filters.md): a 16-byte
// configuration, a 32-byte entry per link, then each link's blocks.
const (
	scalableConfigSize = 16
	scalableLinkSize   = 32
	scalableNonScaling = 1 // configuration flag
)

func (s *Scalable) header() format.Header {
	h := format.Header{
		Type:  TypeScalable,
		Seed:  s.cfg.Seed,
		M:     s.bits(),
		K:     uint32(len(s.links)),
		N:     s.cfg.Capacity,
		P:     s.cfg.Rate,
		Count: s.count,
	}
	h.PayloadLen = scalableConfigSize + scalableLinkSize*uint64(len(s.links)) + h.M/8
	return h
}

func (s *Scalable) table() []byte {
	b := make([]byte, scalableConfigSize+scalableLinkSize*len(s.links))
	binary.LittleEndian.PutUint32(b[0:], s.cfg.Growth)
	if s.cfg.NonScaling {
		binary.LittleEndian.PutUint32(b[4:], scalableNonScaling)
	}
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(s.cfg.Tightening))
	for i, l := range s.links {
		e := b[scalableConfigSize+scalableLinkSize*i:]
		binary.LittleEndian.PutUint64(e[0:], l.capacity)
		binary.LittleEndian.PutUint64(e[8:], l.items)
		binary.LittleEndian.PutUint64(e[16:], l.f.params.M)
		binary.LittleEndian.PutUint32(e[24:], l.f.params.K)
		if i == 0 {
			// The size limit in KiB (0: the default); reserved, zero, in
			// the other links.
			binary.LittleEndian.PutUint32(e[28:], uint32(s.cfg.MaxBytes>>10))
		}
	}
	return b
}

// WriteTo writes the filter to w in the bloomkit file format (type 4,
// docs/filters.md), streaming.
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	if len(s.links) == 0 {
		return 0, ErrZero
	}
	cw := &format.CRCWriter{W: w}
	h := s.header()
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("bloomkit: writing header: %w", err)
	}
	if _, err := cw.Write(s.table()); err != nil {
		return cw.N, fmt.Errorf("bloomkit: writing payload: %w", err)
	}
	for _, l := range s.links {
		if err := format.WriteWords(cw, l.f.words); err != nil {
			return cw.N, err
		}
	}
	return cw.N, cw.WriteTrailer()
}

// ReadFrom replaces s with the scalable filter read from r, reading exactly
// the filter's bytes. On error s is unchanged; errors are as for
// Filter.ReadFrom.
func (s *Scalable) ReadFrom(r io.Reader) (int64, error) {
	avail, known := format.Remaining(r)
	cr := &format.CRCReader{R: r}
	h, err := format.ReadHeader(cr, TypeScalable)
	if err != nil {
		return cr.N, err
	}
	if h.M > MaxBits {
		return cr.N, fmt.Errorf("%w: m = %d bits, the limit is %d", ErrTooLarge, h.M, uint64(MaxBits))
	}
	if h.K == 0 || h.K > MaxLinks {
		return cr.N, fmt.Errorf("%w: %d links, want 1 to %d", ErrCorrupt, h.K, MaxLinks)
	}
	tableLen := scalableConfigSize + scalableLinkSize*uint64(h.K)
	if h.PayloadLen != tableLen+h.M/8 || h.M%BlockBits != 0 {
		return cr.N, fmt.Errorf("%w: payload of %d bytes, %d links of %d bits call for %d", ErrCorrupt, h.PayloadLen, h.K, h.M, tableLen+h.M/8)
	}
	if err := format.CheckAvailable(h, avail-format.HeaderSize, known); err != nil {
		return cr.N, err
	}
	tbl := make([]byte, tableLen)
	if _, err := io.ReadFull(cr, tbl); err != nil {
		return cr.N, format.Truncated(err, "payload")
	}
	t := Scalable{cfg: ScalableConfig{
		Capacity:   h.N,
		Rate:       h.P,
		Growth:     binary.LittleEndian.Uint32(tbl[0:]),
		Tightening: math.Float64frombits(binary.LittleEndian.Uint64(tbl[8:])),
		NonScaling: binary.LittleEndian.Uint32(tbl[4:]) == scalableNonScaling,
		Seed:       h.Seed,
		MaxBytes:   uint64(binary.LittleEndian.Uint32(tbl[scalableConfigSize+28:])) << 10,
	}, count: h.Count}
	if flags := binary.LittleEndian.Uint32(tbl[4:]); flags&^scalableNonScaling != 0 {
		return cr.N, fmt.Errorf("%w: unknown scalable flags %#x", ErrCorrupt, flags)
	}
	if err := t.cfg.validate(); err != nil {
		return cr.N, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	var total, items uint64
	t.links = make([]scalableLink, h.K)
	for i := range t.links {
		e := tbl[scalableConfigSize+scalableLinkSize*i:]
		l := scalableLink{capacity: binary.LittleEndian.Uint64(e[0:]), items: binary.LittleEndian.Uint64(e[8:])}
		p := Params{
			M:    binary.LittleEndian.Uint64(e[16:]),
			K:    binary.LittleEndian.Uint32(e[24:]),
			Seed: h.Seed,
			N:    l.capacity,
			P:    t.cfg.linkPlan(i),
			Hash: HashXXH3,
		}
		if _, err := p.validate(true); err != nil {
			return cr.N, fmt.Errorf("%w: link %d: %w", ErrCorrupt, i, err)
		}
		if i > 0 && binary.LittleEndian.Uint32(e[28:]) != 0 {
			return cr.N, fmt.Errorf("%w: link %d: reserved bytes set", ErrCorrupt, i)
		}
		// Links are made with capacity Capacity·Growth^i: a forged
		// capacity would size every later link.
		if want := linkCapacity(t.cfg, i); l.capacity != want {
			return cr.N, fmt.Errorf("%w: link %d: capacity %d, want %d × %d^%d", ErrCorrupt, i, l.capacity, t.cfg.Capacity, t.cfg.Growth, i)
		}
		total += p.M // no overflow: each is at most MaxBits, and there are at most 64
		var carry uint64
		if items, carry = bits.Add64(items, l.items, 0); carry != 0 {
			return cr.N, fmt.Errorf("%w: link item counts overflow", ErrCorrupt)
		}
		l.f = &Blocked{blocks: p.M / BlockBits, params: p}
		t.links[i] = l
	}
	if total != h.M || items != h.Count {
		return cr.N, fmt.Errorf("%w: links hold %d bits and %d items, the header says %d and %d", ErrCorrupt, total, items, h.M, h.Count)
	}
	if t.cfg.MaxBytes != 0 && total/8 > t.cfg.MaxBytes {
		return cr.N, fmt.Errorf("%w: links of %d bytes, above the filter's limit of %d", ErrCorrupt, total/8, t.cfg.MaxBytes)
	}
	for i := range t.links {
		l := &t.links[i]
		if l.f.words, err = format.ReadWords(cr, l.f.blocks*8, known, alignedWords); err != nil {
			return cr.N, err
		}
		*l = newLink(l.f, l.capacity, l.items)
		l.share = t.cfg.linkRate(i)
	}
	t.links[len(t.links)-1].computeLoad()
	t.index()
	if err := cr.ReadTrailer(); err != nil {
		return cr.N, err
	}
	*s = t
	return cr.N, nil
}
