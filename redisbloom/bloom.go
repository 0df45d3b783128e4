package redisbloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkit/bloomkit/internal/bitcount"
)

// Option bits stored in a Bloom chain's header, as RedisBloom defines them.
const (
	OptNoRound    = 1 // bit count not rounded to a power of two
	OptEntsIsBits = 2 // legacy: capacity given as log2(bits)
	OptForce64    = 4 // 64-bit hashing (MurmurHash64A)
	OptNoScaling  = 8 // never grows; adds to a full filter fail
)

// Errors returned by the Bloom chain. Their texts are RedisBloom's wire errors.
var (
	// ErrFull is returned by Add on a full non-scaling filter.
	ErrFull = errors.New("ERR non scaling filter is full")
	// ErrInsert is returned when a new link cannot be created.
	ErrInsert = errors.New("ERR problem inserting into filter")
	// ErrBadData is returned by LoadBloomHeader and LoadChunk for inconsistent input.
	ErrBadData = errors.New("ERR received bad data")
	// ErrNoLink is returned by LoadChunk for an offset past the last link.
	ErrNoLink = errors.New("ERR invalid offset - no link found")
	// ErrChunkTooBig is returned by LoadChunk for a chunk overrunning its link.
	ErrChunkTooBig = errors.New("ERR invalid chunk - Too big for current filter")
	// ErrInvalid is returned when sizing parameters are out of range.
	ErrInvalid = errors.New("ERR could not create filter")
	// ErrTooLarge is returned when an allocation is refused by the memory check.
	ErrTooLarge = errors.New("ERR Insufficient memory to create filter")
)

// MaxChunk is the largest SCANDUMP chunk, as in RedisBloom (16 MiB).
const MaxChunk = 16 << 20

const (
	errorTightening = 0.5
	ln2Squared      = 0.480453013918201
	ln2             = 0.693147180559945
	linkHeaderLen   = 53
	chainHeaderLen  = 20
	maxHashes       = 1100
)

// Link is one sub-filter of a Bloom chain (RedisBloom's SBLink).
//
// The fields are ordered so that the narrow ones share a word (80 bytes,
// not 88): a server holding millions of small filters pays for every
// padding byte once per key.
type Link struct {
	Bytes   uint64  // size of Data
	Bits    uint64  // Bytes*8: the bit modulus (unless N2 > 0)
	Size    uint64  // items counted in this link
	Error   float64 // this link's false-positive target
	BPE     float64 // bits per element
	Entries uint64  // capacity
	Data    []byte
	Hashes  uint32 // k
	N2      uint8  // log2 of bits for legacy power-of-two filters, else 0
}

// Bloom is a RedisBloom scalable Bloom filter (SBChain).
//
// A server may hold millions of small filters (one per user), and most
// never grow past their first link; such a chain keeps that link packed in
// the Bloom itself (the fields after Growth), its bits in one allocation
// beside it: 64 bytes of header where a Link of its own and the slice of
// links cost 80 + 24 more. Every link of a chain NewBloom created has that
// shape (its bit count, bits per element and hash count follow from
// capacity and error rate, so only those two are kept), and so has a
// loaded one whose header says the same. A chain that grows, a merge
// destination and a link of any other shape use the full form (ext.links),
// which holds Links as RedisBloom's SBChain does; Link and NumLinks read
// either form alike.
type Bloom struct {
	Size    uint64 // items inserted (counted)
	Options uint32
	Growth  uint32

	// AllowAlloc, if set, is asked before any bit array of n bytes is
	// allocated; an error refuses the allocation. It is not persisted.
	AllowAlloc func(n uint64) error

	// The packed link, while ext is nil or ext.links is: its bits (bytes
	// of them, fewer than mmapThreshold, on the Go heap), hash count,
	// capacity and error rate; its item count is Size.
	data    *byte
	bytes   uint32
	hashes  uint32
	entries uint64
	err     float64

	// ext holds what few filters need: the links of the full form, and
	// the Guard (SetGuard).
	ext *bloomExt
}

type bloomExt struct {
	links []Link
	guard Guard
}

// packed reports whether the chain is one packed link.
func (b *Bloom) packed() bool { return b.ext == nil || b.ext.links == nil }

// NumLinks is the number of links in the chain.
func (b *Bloom) NumLinks() int {
	if b.packed() {
		if b.data == nil {
			return 0 // freed
		}
		return 1
	}
	return len(b.ext.links)
}

// Link returns link i (0 ≤ i < NumLinks), its Data the filter's own bits.
// Changing the returned Link's fields changes nothing in the chain.
func (b *Bloom) Link(i int) Link {
	if !b.packed() {
		return b.ext.links[i]
	}
	if i != 0 || b.data == nil {
		panic("redisbloom: link index out of range")
	}
	s, _ := SizeLink(b.entries, b.err)
	return Link{
		Bytes: uint64(b.bytes), Bits: uint64(b.bytes) * 8, Size: b.Size, Error: b.err, BPE: s.BPE,
		Entries: b.entries, Data: unsafe.Slice(b.data, b.bytes), Hashes: b.hashes,
	}
}

// Links returns the chain's links in the full form, which the chain keeps
// from then on: changes to them (their Size, their bits) are the chain's.
// Merging uses it; most filters never need it.
func (b *Bloom) Links() []Link {
	if b.packed() {
		if b.data == nil {
			return nil
		}
		l := b.Link(0)
		if b.ext == nil {
			b.ext = &bloomExt{}
		}
		b.ext.links = []Link{l}
		b.data, b.bytes, b.hashes, b.entries, b.err = nil, 0, 0, 0, 0
	}
	return b.ext.links
}

// SetGuard sets (nil: removes) the Guard told before any bit array
// changes.
func (b *Bloom) SetGuard(g Guard) {
	if b.ext == nil {
		if g == nil {
			return
		}
		b.ext = &bloomExt{}
	}
	b.ext.guard = g
	if g == nil && b.ext.links == nil {
		b.ext = nil
	}
}

// Guard is the Guard SetGuard set, or nil.
func (b *Bloom) Guard() Guard {
	if b.ext == nil {
		return nil
	}
	return b.ext.guard
}

// packable reports whether l can be a packed link: NewBloom's shape for
// its capacity and error rate, and small.
func packable(l *Link) bool {
	if l.N2 != 0 || l.Bytes >= mmapThreshold || l.Bytes >= 1<<32 {
		return false
	}
	s, err := SizeLink(l.Entries, l.Error)
	return err == nil && s.Bytes == l.Bytes && s.Bits == l.Bits && s.Hashes == l.Hashes &&
		math.Float64bits(s.BPE) == math.Float64bits(l.BPE)
}

// pack makes a one-link chain whose link is packable packed.
func (b *Bloom) pack() {
	if b.packed() || len(b.ext.links) != 1 || !packable(&b.ext.links[0]) {
		return
	}
	l := &b.ext.links[0]
	if len(l.Data) > 0 {
		b.data = &l.Data[0]
	}
	b.bytes, b.hashes, b.entries, b.err = uint32(l.Bytes), l.Hashes, l.Entries, l.Error
	b.ext.links = nil
	if b.ext.guard == nil {
		b.ext = nil
	}
}

// ln2Big is ln 2 to 200 bits, for logRN.
var ln2Big, _, _ = big.ParseFloat("0.69314718055994530941723212145817656807550013436025525412068000949339362196969471560586332699641868754200148102057068573368552023575813055703267075163507596193072757", 10, 200, big.ToNearestEven)

// logRN is the natural logarithm of x > 0 rounded to the nearest double,
// as the C library RedisBloom is built with computes it (glibc's and
// musl's log are correctly rounded); Go's math.Log can be one unit in the
// last place off (it is for 0.01), which changed a link's bits per
// element, so its header, and, where entries × bpe crosses an integer,
// its size. One Newton step from math.Log in 200-bit arithmetic:
// y + (x − e^y)/e^y.
//
// A filter's links are sized again whenever a packed one is read
// (Link), so results are kept in a small lock-free cache: few distinct
// error rates are in use at a time.
func logRN(x float64) float64 {
	bits := math.Float64bits(x)
	slot := &logCache[(bits*0x9e3779b97f4a7c15)>>(64-logCacheBits)]
	if p := slot.Load(); p != nil && p[0] == bits {
		return math.Float64frombits(p[1])
	}
	y := logNewton(x)
	slot.Store(&[2]uint64{bits, math.Float64bits(y)})
	return y
}

const logCacheBits = 8

var logCache [1 << logCacheBits]atomic.Pointer[[2]uint64]

func logNewton(x float64) float64 {
	y := math.Log(x)
	if !(x > 0) || math.IsInf(x, 0) || x == 1 {
		return y
	}
	const prec = 200
	// e^y = 2^k · e^r with r = y − k·ln2 small; e^r by its series.
	k := math.Round(y / math.Ln2)
	r := new(big.Float).SetPrec(prec).SetFloat64(k)
	r.Mul(r, ln2Big)
	r.Sub(new(big.Float).SetPrec(prec).SetFloat64(y), r)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for n := int64(1); n < 60; n++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(n))
		sum.Add(sum, term)
	}
	ey := sum.SetMantExp(sum, int(k))
	d := new(big.Float).SetPrec(prec).SetFloat64(x)
	d.Sub(d, ey)
	d.Quo(d, ey)
	d.Add(d, new(big.Float).SetPrec(prec).SetFloat64(y))
	out, _ := d.Float64()
	return out
}

// BloomSizing is the layout RedisBloom gives one link.
type BloomSizing struct {
	Bytes  uint64
	Bits   uint64
	BPE    float64
	Hashes uint32
}

// SizeLink computes a NOROUND link's layout for capacity entries and error rate e
// without allocating, exactly as RedisBloom's bloom_init does.
func SizeLink(entries uint64, e float64) (BloomSizing, error) {
	if entries < 1 || !(e > 0) || e >= 1 {
		return BloomSizing{}, ErrInvalid
	}
	bpe := -(logRN(e) / ln2Squared)
	if bpe < 0 {
		bpe = -bpe
	}
	fb := float64(entries) * bpe
	if fb >= 1<<63 {
		return BloomSizing{}, ErrTooLarge
	}
	bits := uint64(fb)
	if bits == 0 {
		bits = 1
	}
	var bytes uint64
	if bits%64 != 0 {
		bytes = (bits/64 + 1) * 8
	} else {
		bytes = bits / 8
	}
	return BloomSizing{Bytes: bytes, Bits: bytes * 8, BPE: bpe, Hashes: uint32(math.Ceil(ln2 * bpe))}, nil
}

// NewBloom creates a chain with one link, as BF.RESERVE does. A scaling
// filter's first link uses half of errorRate.
func NewBloom(capacity uint64, errorRate float64, growth uint32, nonScaling bool, allow func(uint64) error) (*Bloom, error) {
	if capacity == 0 || !(errorRate > 0) || errorRate >= 1 {
		return nil, ErrInvalid
	}
	b := &Bloom{Options: OptNoRound | OptForce64, Growth: growth, AllowAlloc: allow}
	tight := errorTightening
	if nonScaling {
		b.Options |= OptNoScaling
		tight = 1
	}
	if err := b.addLink(capacity, errorRate*tight); err != nil {
		return nil, err
	}
	return b, nil
}

// BloomCreateBytes is the number of bit-array bytes NewBloom would allocate.
func BloomCreateBytes(capacity uint64, errorRate float64, nonScaling bool) (uint64, error) {
	tight := errorTightening
	if nonScaling {
		tight = 1
	}
	s, err := SizeLink(capacity, errorRate*tight)
	return s.Bytes, err
}

func (b *Bloom) addLink(entries uint64, e float64) error {
	s, err := SizeLink(entries, e)
	if err != nil {
		return err
	}
	if b.AllowAlloc != nil {
		if err := b.AllowAlloc(s.Bytes); err != nil {
			return err
		}
	}
	data, err := safeMake(s.Bytes)
	if err != nil {
		return err
	}
	l := Link{
		Bytes: s.Bytes, Bits: s.Bits, Error: e, BPE: s.BPE, Hashes: s.Hashes,
		Entries: entries, Data: data,
	}
	if b.NumLinks() == 0 && packable(&l) {
		b.data, b.bytes, b.hashes, b.entries, b.err = &data[0], uint32(l.Bytes), l.Hashes, l.Entries, l.Error
		return nil
	}
	links := b.Links()
	if b.ext == nil {
		b.ext = &bloomExt{}
	}
	b.ext.links = append(links, l)
	return nil
}

// view is the chain's links: the full form's, or the packed link built in
// *one (a caller's variable, so that reading a packed chain allocates
// nothing). Changes to a packed link's fields other than its bits are not
// the chain's.
func (b *Bloom) view(one *[1]Link) []Link {
	if !b.packed() {
		return b.ext.links
	}
	if b.data == nil {
		return nil
	}
	one[0] = b.Link(0)
	return one[:]
}

// safeMake allocates n zero bytes, refusing sizes Go cannot allocate.
// Arrays of mmapThreshold bytes or more are mapped outside the Go heap and
// must be released with freeBytes.
func safeMake(n uint64) (b []byte, err error) {
	if n > 1<<40 {
		return nil, ErrTooLarge
	}
	if n >= mmapThreshold {
		return allocLarge(n)
	}
	defer func() {
		if recover() != nil {
			b, err = nil, ErrTooLarge
		}
	}()
	return make([]byte, n), nil
}

// freeBytes releases an array from safeMake.
func freeBytes(b []byte) {
	if uint64(cap(b)) >= mmapThreshold {
		freeLarge(b[:cap(b)])
	}
}

// Free releases the filter's arrays; the filter must not be used afterwards.
// Filters that are simply dropped are reclaimed by the garbage collector
// except for arrays of 1 MiB or more, which only Free returns to the system.
func (b *Bloom) Free() {
	b.data, b.bytes = nil, 0 // a packed link's bits are on the Go heap
	if b.packed() {
		return
	}
	for i := range b.ext.links {
		freeBytes(b.ext.links[i].Data)
		b.ext.links[i].Data = nil
	}
	b.ext.links = nil
}

type hashPair struct{ a, b uint64 }

func bloomHash(item []byte) hashPair {
	a := MurmurHash64A(item, 0xc6a4a7935bd1e995)
	return hashPair{a, MurmurHash64A(item, a)}
}

func (l *Link) mod() uint64 {
	if l.N2 > 0 {
		return 1 << l.N2
	}
	return l.Bits
}

func (l *Link) check(h hashPair) bool { return checkBits(l.Data, l.mod(), l.Hashes, h) }

// checkBits reports whether all the item's bits are set in data.
func checkBits(data []byte, mod uint64, hashes uint32, h hashPair) bool {
	for i := uint64(0); i < uint64(hashes); i++ {
		x := (h.a + i*h.b) % mod
		if data[x>>3]&(1<<(x&7)) == 0 {
			return false
		}
	}
	return true
}

// add sets the item's bits and reports whether any was unset; g (may be
// nil) is told about each byte before it changes.
func (l *Link) add(h hashPair, g Guard) bool { return addBits(l.Data, l.mod(), l.Hashes, h, g) }

func addBits(data []byte, mod uint64, hashes uint32, h hashPair, g Guard) bool {
	found := false
	for i := uint64(0); i < uint64(hashes); i++ {
		x := (h.a + i*h.b) % mod
		m := byte(1) << (x & 7)
		if data[x>>3]&m == 0 {
			if g != nil {
				g.Write(data, int(x>>3), 1)
			}
			data[x>>3] |= m
			found = true
		}
	}
	return found
}

// Exists reports whether item is (probably) in the filter.
func (b *Bloom) Exists(item []byte) bool {
	h := bloomHash(item)
	if b.packed() {
		return b.data != nil && checkBits(unsafe.Slice(b.data, b.bytes), uint64(b.bytes)*8, b.hashes, h)
	}
	links := b.ext.links
	for i := len(links) - 1; i >= 0; i-- {
		if links[i].check(h) {
			return true
		}
	}
	return false
}

// Add inserts item. It returns true if the item was new (set at least one
// bit), false if it was reported present; ErrFull for a full non-scaling
// filter, or the allocation error when a new link was refused.
func (b *Bloom) Add(item []byte) (bool, error) {
	h := bloomHash(item)
	if b.packed() {
		data, mod := unsafe.Slice(b.data, b.bytes), uint64(b.bytes)*8
		if checkBits(data, mod, b.hashes, h) {
			return false, nil
		}
		if b.Size < b.entries {
			if addBits(data, mod, b.hashes, h, b.Guard()) {
				b.Size++
				return true, nil
			}
			return false, nil
		}
		if b.Options&OptNoScaling != 0 {
			return false, ErrFull
		}
		b.Links() // full: the chain grows below
	} else {
		links := b.ext.links
		for i := len(links) - 1; i >= 0; i-- {
			if links[i].check(h) {
				return false, nil
			}
		}
	}
	cur := &b.ext.links[len(b.ext.links)-1]
	if cur.Size >= cur.Entries {
		if b.Options&OptNoScaling != 0 {
			return false, ErrFull
		}
		if err := b.addLink(cur.Entries*uint64(b.Growth), cur.Error*errorTightening); err != nil {
			if err == ErrTooLarge || err == ErrInvalid {
				return false, ErrInsert
			}
			return false, err
		}
		cur = &b.ext.links[len(b.ext.links)-1]
	}
	if cur.add(h, b.Guard()) {
		cur.Size++
		b.Size++
		return true, nil
	}
	return false, nil
}

// NonScaling reports whether the filter never grows.
func (b *Bloom) NonScaling() bool { return b.Options&OptNoScaling != 0 }

// Capacity is the sum of the links' capacities (BF.INFO Capacity).
func (b *Bloom) Capacity() uint64 {
	var c uint64
	var one [1]Link
	for _, l := range b.view(&one) {
		c += l.Entries
	}
	return c
}

// MemUsage is RedisBloom's BF.INFO Size: 32 + Σ(64 + bytes).
func (b *Bloom) MemUsage() uint64 {
	if b.packed() {
		if b.data == nil {
			return 32
		}
		return 32 + 64 + uint64(b.bytes)
	}
	n := uint64(32)
	for i := range b.ext.links {
		n += 64 + b.ext.links[i].Bytes
	}
	return n
}

// DataBytes is the total size of the bit arrays.
func (b *Bloom) DataBytes() uint64 {
	if b.packed() {
		return uint64(b.bytes)
	}
	var n uint64
	for i := range b.ext.links {
		n += b.ext.links[i].Bytes
	}
	return n
}

// FillRatio is the fraction of set bits over all links.
func (b *Bloom) FillRatio() float64 {
	var set, total uint64
	var one [1]Link
	for _, l := range b.view(&one) {
		set += bitcount.Ones(l.Data)
		total += l.Bytes * 8
	}
	if total == 0 {
		return 0
	}
	return float64(set) / float64(total)
}

// EstimatedFPR is the false-positive rate implied by the current fill of
// each link: 1 - Π(1 - fill_i^k_i).
func (b *Bloom) EstimatedFPR() float64 {
	miss := 1.0
	var one [1]Link
	links := b.view(&one)
	for i := range links {
		l := &links[i]
		f := float64(bitcount.Ones(l.Data)) / float64(l.Bytes*8)
		miss *= 1 - math.Pow(f, float64(l.Hashes))
	}
	return 1 - miss
}

// Header encodes the chain header as BF.SCANDUMP iterator 0 returns it.
func (b *Bloom) Header() []byte {
	var one [1]Link
	links := b.view(&one)
	out := make([]byte, chainHeaderLen+linkHeaderLen*len(links))
	binary.LittleEndian.PutUint64(out[0:], b.Size)
	binary.LittleEndian.PutUint32(out[8:], uint32(len(links)))
	binary.LittleEndian.PutUint32(out[12:], b.Options)
	binary.LittleEndian.PutUint32(out[16:], b.Growth)
	p := out[chainHeaderLen:]
	for i := range links {
		l := &links[i]
		binary.LittleEndian.PutUint64(p[0:], l.Bytes)
		binary.LittleEndian.PutUint64(p[8:], l.Bits)
		binary.LittleEndian.PutUint64(p[16:], l.Size)
		binary.LittleEndian.PutUint64(p[24:], math.Float64bits(l.Error))
		binary.LittleEndian.PutUint64(p[32:], math.Float64bits(l.BPE))
		binary.LittleEndian.PutUint32(p[40:], l.Hashes)
		binary.LittleEndian.PutUint64(p[44:], l.Entries)
		p[52] = l.N2
		p = p[linkHeaderLen:]
	}
	return out
}

// linkAt finds the link among links holding byte offset iter-1 of the
// concatenated bit arrays.
func linkAt(links []Link, iter int64) (*Link, uint64) {
	if iter < 1 {
		return nil, 0
	}
	pos := uint64(iter - 1)
	var seek uint64
	for i := range links {
		if seek+links[i].Bytes > pos {
			return &links[i], pos - seek
		}
		seek += links[i].Bytes
	}
	return nil, 0
}

// Chunk returns the BF.SCANDUMP chunk for iterator iter ≥ 1 and the next
// iterator; past the end it returns (0, nil). The chunk aliases the filter.
func (b *Bloom) Chunk(iter int64) (int64, []byte) {
	var one [1]Link
	l, off := linkAt(b.view(&one), iter)
	if l == nil {
		return 0, nil
	}
	n := l.Bytes - off
	if n > MaxChunk {
		n = MaxChunk
	}
	return iter + int64(n), l.Data[off : off+n]
}

// LoadBloomHeader creates an empty chain from a BF.SCANDUMP header, as
// BF.LOADCHUNK with iterator 1 does. allow (may be nil) is asked for the
// total bit-array size before anything is allocated.
func LoadBloomHeader(hdr []byte, allow func(uint64) error) (*Bloom, error) {
	if len(hdr) < chainHeaderLen {
		return nil, ErrBadData
	}
	nf := binary.LittleEndian.Uint32(hdr[8:])
	if nf == 0 || uint64(len(hdr)) != chainHeaderLen+linkHeaderLen*uint64(nf) {
		return nil, ErrBadData
	}
	b := &Bloom{
		Size:       binary.LittleEndian.Uint64(hdr[0:]),
		Options:    binary.LittleEndian.Uint32(hdr[12:]),
		Growth:     binary.LittleEndian.Uint32(hdr[16:]),
		AllowAlloc: allow,
		ext:        &bloomExt{links: make([]Link, nf)},
	}
	links := b.ext.links
	if !validOptions(b.Options) {
		return nil, ErrBadData
	}
	p := hdr[chainHeaderLen:]
	var total, sum uint64
	for i := range links {
		l := &links[i]
		l.Bytes = binary.LittleEndian.Uint64(p[0:])
		l.Bits = binary.LittleEndian.Uint64(p[8:])
		l.Size = binary.LittleEndian.Uint64(p[16:])
		l.Error = math.Float64frombits(binary.LittleEndian.Uint64(p[24:]))
		l.BPE = math.Float64frombits(binary.LittleEndian.Uint64(p[32:]))
		l.Hashes = binary.LittleEndian.Uint32(p[40:])
		l.Entries = binary.LittleEndian.Uint64(p[44:])
		l.N2 = p[52]
		p = p[linkHeaderLen:]
		if !validLink(l) || !addSizes(&sum, &total, l) {
			return nil, ErrBadData
		}
	}
	if sum != b.Size {
		return nil, ErrBadData
	}
	if allow != nil {
		if err := allow(total); err != nil {
			return nil, ErrBadData
		}
	}
	for i := range links {
		d, err := safeMake(links[i].Bytes)
		if err != nil {
			b.Free()
			return nil, ErrBadData
		}
		links[i].Data = d
	}
	b.pack()
	return b, nil
}

// validOptions reports whether a chain's option bits are all known ones.
func validOptions(o uint32) bool {
	return o&^(OptNoRound|OptEntsIsBits|OptForce64|OptNoScaling) == 0
}

// validLink checks one link's fields as RedisBloom does when it loads a
// chain (bloom_validate_integrity), and bounds its size.
func validLink(l *Link) bool {
	return l.Error > 0 && l.Error < 1 && l.N2 <= 63 &&
		(l.N2 == 0 || l.Bits >= 1<<l.N2) && l.Bits != 0 && l.Bits == l.Bytes*8 &&
		l.Bytes <= 1<<40 && float64(l.Hashes) == math.Ceil(ln2*l.BPE) &&
		// no error rate a double can hold needs more than ~1075 hashes;
		// a forged count would make every lookup spin.
		l.Hashes <= maxHashes
}

// addSizes adds l's item count to *sum and its bytes to *total, and
// reports false when either overflows its bound.
func addSizes(sum, total *uint64, l *Link) bool {
	if l.Size > math.MaxUint64-*sum {
		return false
	}
	*sum += l.Size
	*total += l.Bytes
	return *total <= 1<<40
}

// LoadChunk copies a BF.SCANDUMP chunk into place; iter is the iterator the
// dump returned with that chunk.
func (b *Bloom) LoadChunk(iter int64, data []byte) error {
	if iter <= 0 || iter < int64(len(data)) {
		return ErrBadData
	}
	var one [1]Link
	l, off := linkAt(b.view(&one), iter-int64(len(data)))
	if l == nil {
		return ErrNoLink
	}
	if uint64(len(data)) > l.Bytes-off {
		return ErrChunkTooBig
	}
	if g := b.Guard(); g != nil {
		g.Write(l.Data, int(off), len(data))
	}
	copy(l.Data[off:], data)
	return nil
}

// String describes the chain briefly (for logs and debugging).
func (b *Bloom) String() string {
	return fmt.Sprintf("bloom{items:%d links:%d capacity:%d bytes:%d}", b.Size, b.NumLinks(), b.Capacity(), b.DataBytes())
}

// ErrLayout is returned by Merge for chains whose links differ.
var ErrLayout = errors.New("ERR filters differ in layout: only filters created with the same capacity, error rate, expansion and options, grown to the same number of links, can be merged")

// SameLayout reports whether b and o have identical links (sizes, hash
// counts, capacities, error rates) and options, so that a bit of one means
// the same as that bit of the other.
func (b *Bloom) SameLayout(o *Bloom) bool {
	var bone, oone [1]Link
	bl, ol := b.view(&bone), o.view(&oone)
	if b.Options != o.Options || b.Growth != o.Growth || len(bl) != len(ol) {
		return false
	}
	for i := range bl {
		x, y := &bl[i], &ol[i]
		if x.Bytes != y.Bytes || x.Bits != y.Bits || x.Hashes != y.Hashes || x.Entries != y.Entries ||
			x.N2 != y.N2 || x.Error != y.Error {
			return false
		}
	}
	return true
}

// Merge ORs o's bits into b: afterwards b reports present every item that
// either reported present. The layouts must be the same (SameLayout). Each
// link's item count becomes the larger of the two counts and of the count
// its merged bits imply (-m/k·ln(1 - set/m)), so an item both filters hold
// is not counted twice and a full link still makes the next add grow the
// chain.
func (b *Bloom) Merge(o *Bloom) error {
	if !b.SameLayout(o) {
		return ErrLayout
	}
	var bone, oone [1]Link
	links, olinks := b.view(&bone), o.view(&oone)
	b.Size = 0
	for i := range links {
		l, src := &links[i], olinks[i].Data
		if g := b.Guard(); g != nil {
			g.Write(l.Data, 0, len(l.Data))
		}
		for j := range l.Data {
			l.Data[j] |= src[j]
		}
		size := max(l.Size, olinks[i].Size)
		if set := bitcount.Ones(l.Data); set < l.Bits {
			size = max(size, bitcount.Classic(set, l.Bits, l.Hashes))
		}
		l.Size = size
		b.Size += size
	}
	return nil
}

// Clone returns a copy of b whose arrays are allocated through allow (may
// be nil).
func (b *Bloom) Clone(allow func(uint64) error) (*Bloom, error) {
	c, err := LoadBloomHeader(b.Header(), allow)
	if err != nil {
		return nil, err
	}
	var cone, bone [1]Link
	bl := b.view(&bone)
	for i, l := range c.view(&cone) {
		copy(l.Data, bl[i].Data)
	}
	return c, nil
}

// Prefetch reads the bytes of the filter that Exists of each item reads
// first (its first bit position in the newest link) and returns them
// combined, so the reads cannot be optimized away. A caller about to look
// up many items calls it once for all of them: the positions are computed
// first and read after, so the cache misses overlap (the CPU runs ahead of
// them), where the lookups, each with other work in between, would pay
// them one at a time. (Add needs no such help: the loads of an item's bit
// positions are independent of each other and overlap anyway.) It changes
// nothing and its result means nothing.
func (b *Bloom) Prefetch(items ...[]byte) byte {
	var data []byte
	var mod uint64
	if b.packed() {
		data, mod = unsafe.Slice(b.data, b.bytes), uint64(b.bytes)*8
	} else if n := len(b.ext.links); n > 0 {
		l := &b.ext.links[n-1]
		data, mod = l.Data, l.mod()
	}
	if mod == 0 {
		return 0
	}
	var (
		pos [16]uint64
		v   byte
	)
	for len(items) > 0 {
		n := min(len(items), len(pos))
		for i, item := range items[:n] {
			// The first position needs only the first of bloomHash's
			// two hashes.
			pos[i] = (MurmurHash64A(item, 0xc6a4a7935bd1e995) % mod) >> 3
		}
		for _, p := range pos[:n] {
			if p < uint64(len(data)) {
				v ^= data[p]
			}
		}
		items = items[n:]
	}
	return v
}
