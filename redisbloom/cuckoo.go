package redisbloom

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/bloomkit/bloomkit/cuckoo"
)

// Cuckoo filter errors, with RedisBloom's wire texts.
var (
	// ErrCFHeader is returned by LoadCuckooHeader for a header of the wrong length.
	ErrCFHeader = errors.New("Invalid header")
	// ErrCFCreate is returned by LoadCuckooHeader for an inconsistent header.
	ErrCFCreate = errors.New("Couldn't create filter!")
	// ErrCFChunk is returned by (*Cuckoo).LoadChunk for a chunk that does not fit.
	ErrCFChunk = errors.New("Couldn't load chunk!")
)

// InsertStatus is the outcome of a cuckoo insert (RedisBloom's CuckooInsertStatus).
type InsertStatus int

// Insert outcomes.
const (
	Inserted       InsertStatus = 1
	Exists         InsertStatus = 0
	NoSpace        InsertStatus = -1
	MemAllocFailed InsertStatus = -2
)

const (
	cfMaxNumBuckets = 0x00FFFFFFFFFFFFFF
	cfHeaderLen     = 38
	altHashMul      = 0x5bd1e995
)

// Cuckoo is a RedisBloom cuckoo filter: a list of sub-filters of
// NumBuckets×Expansion^i buckets, each bucket BucketSize one-byte
// fingerprints (0 = empty).
type Cuckoo struct {
	NumBuckets    uint64 // buckets of the first sub-filter
	NumItems      uint64
	NumDeletes    uint64
	BucketSize    uint16
	MaxIterations uint16
	Expansion     uint16
	Filters       [][]byte

	// AllowAlloc, if set, is asked before a sub-filter of n bytes is
	// allocated; an error refuses the allocation. It is not persisted.
	AllowAlloc func(n uint64) error
	// Guard, if set, is told before any sub-filter changes or is released
	// (see Guard).
	Guard Guard
}

// put stores v at sub[off], telling the guard first.
func (c *Cuckoo) put(sub []byte, off uint64, v byte) {
	if c.Guard != nil {
		c.Guard.Write(sub, int(off), 1)
	}
	sub[off] = v
}

func nextPow2(n uint64) uint64 {
	n--
	n |= n >> 1
	n |= n >> 2
	n |= n >> 4
	n |= n >> 8
	n |= n >> 16
	n |= n >> 32
	n++
	return n
}

func isPow2(n uint64) bool { return n != 0 && n&(n-1) == 0 }

// CuckooCreateBytes is the number of bytes NewCuckoo would allocate.
func CuckooCreateBytes(capacity uint64, bucketSize uint16) uint64 {
	nb := nextPow2(capacity / uint64(bucketSize))
	if nb == 0 {
		nb = 1
	}
	return nb * uint64(bucketSize)
}

// NewCuckoo creates a filter as CF.RESERVE does. expansion is rounded up to a
// power of two (0 stays 0: the filter never grows). bucketSize must be ≥ 1.
func NewCuckoo(capacity uint64, bucketSize, maxIterations, expansion uint16, allow func(uint64) error) (*Cuckoo, error) {
	if bucketSize == 0 {
		return nil, ErrInvalid
	}
	c := &Cuckoo{
		Expansion:     uint16(nextPow2(uint64(expansion))),
		BucketSize:    bucketSize,
		MaxIterations: maxIterations,
		NumBuckets:    nextPow2(capacity / uint64(bucketSize)),
		AllowAlloc:    allow,
	}
	if c.NumBuckets == 0 {
		c.NumBuckets = 1
	}
	if c.NumBuckets > cfMaxNumBuckets {
		return nil, ErrTooLarge
	}
	if err := c.grow(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cuckoo) grow() error {
	if len(c.Filters) == math.MaxUint16 {
		return ErrTooLarge
	}
	growth := math.Pow(float64(c.Expansion), float64(len(c.Filters)))
	if growth > float64(cfMaxNumBuckets/c.NumBuckets) {
		return ErrTooLarge
	}
	nb := c.NumBuckets * uint64(growth)
	if nb > (1<<40)/uint64(c.BucketSize) {
		return ErrTooLarge
	}
	n := nb * uint64(c.BucketSize)
	if c.AllowAlloc != nil {
		if err := c.AllowAlloc(n); err != nil {
			return err
		}
	}
	d, err := safeMake(n)
	if err != nil {
		return err
	}
	c.Filters = append(c.Filters, d)
	return nil
}

type lookup struct {
	h1, h2 uint64
	fp     byte
}

func altHash(fp byte, index uint64) uint64 { return index ^ (uint64(fp) * altHashMul) }

func cuckooLookup(item []byte) lookup {
	h := MurmurHash64A(item, 0)
	fp := byte(h%255 + 1)
	return lookup{h1: h, h2: altHash(fp, h), fp: fp}
}

// CuckooHash is the 64-bit hash RedisBloom computes for a cuckoo item.
func CuckooHash(item []byte) uint64 { return MurmurHash64A(item, 0) }

func (c *Cuckoo) nb(sub []byte) uint64 { return uint64(len(sub)) / uint64(c.BucketSize) }

// index is RedisBloom's SubCF_GetIndex, 32-bit result included.
func (c *Cuckoo) index(sub []byte, h uint64) uint64 {
	return uint64(uint32((h % c.nb(sub)) * uint64(c.BucketSize)))
}

func (c *Cuckoo) bucket(sub []byte, h uint64) []byte {
	i := c.index(sub, h)
	return sub[i : i+uint64(c.BucketSize)]
}

func findSlot(b []byte, fp byte) int {
	for i, v := range b {
		if v == fp {
			return i
		}
	}
	return -1
}

func (c *Cuckoo) subFind(sub []byte, p lookup) bool {
	return findSlot(c.bucket(sub, p.h1), p.fp) >= 0 || findSlot(c.bucket(sub, p.h2), p.fp) >= 0
}

func (c *Cuckoo) checkFP(p lookup) bool {
	for _, sub := range c.Filters {
		if c.subFind(sub, p) {
			return true
		}
	}
	return false
}

// Exists reports whether item's fingerprint is in either candidate bucket of any sub-filter.
func (c *Cuckoo) Exists(item []byte) bool { return c.checkFP(cuckooLookup(item)) }

// Count sums fingerprint matches over the candidate buckets of all
// sub-filters (may over-count, never under-counts).
func (c *Cuckoo) Count(item []byte) uint64 {
	p := cuckooLookup(item)
	var n uint64
	for _, sub := range c.Filters {
		for _, h := range [2]uint64{p.h1, p.h2} {
			for _, v := range c.bucket(sub, h) {
				if v == p.fp {
					n++
				}
			}
		}
	}
	return n
}

// Delete removes one copy of item's fingerprint, newest sub-filter first,
// and may compact the filter as RedisBloom does.
func (c *Cuckoo) Delete(item []byte) bool {
	p := cuckooLookup(item)
	for i := len(c.Filters) - 1; i >= 0; i-- {
		sub := c.Filters[i]
		ok := false
		for _, h := range [2]uint64{p.h1, p.h2} {
			at := c.index(sub, h)
			if j := findSlot(sub[at:at+uint64(c.BucketSize)], p.fp); j >= 0 {
				c.put(sub, at+uint64(j), 0)
				ok = true
				break
			}
		}
		if ok {
			c.NumItems--
			c.NumDeletes++
			if len(c.Filters) > 1 && float64(c.NumDeletes) > float64(c.NumItems)*0.10 {
				c.Compact(false)
			}
			return true
		}
	}
	return false
}

// Insert adds item (another copy if already present).
func (c *Cuckoo) Insert(item []byte) InsertStatus { return c.insertFP(cuckooLookup(item)) }

// InsertUnique adds item unless its fingerprint is already present.
func (c *Cuckoo) InsertUnique(item []byte) InsertStatus {
	p := cuckooLookup(item)
	if c.checkFP(p) {
		return Exists
	}
	return c.insertFP(p)
}

// freeSlot finds an empty slot for p in sub: its offset, or false.
func (c *Cuckoo) freeSlot(sub []byte, p lookup) (uint64, bool) {
	for _, h := range [2]uint64{p.h1, p.h2} {
		at := c.index(sub, h)
		if j := findSlot(sub[at:at+uint64(c.BucketSize)], 0); j >= 0 {
			return at + uint64(j), true
		}
	}
	return 0, false
}

func (c *Cuckoo) insertFP(p lookup) InsertStatus {
	for {
		for i := len(c.Filters) - 1; i >= 0; i-- {
			if off, ok := c.freeSlot(c.Filters[i], p); ok {
				c.put(c.Filters[i], off, p.fp)
				c.NumItems++
				return Inserted
			}
		}
		if c.koInsert(c.Filters[len(c.Filters)-1], p) {
			c.NumItems++
			return Inserted
		}
		if c.Expansion == 0 {
			return NoSpace
		}
		if c.grow() != nil {
			return MemAllocFailed
		}
	}
}

// koInsert is RedisBloom's eviction loop, undone on failure.
func (c *Cuckoo) koInsert(sub []byte, p lookup) bool {
	nb := c.nb(sub)
	bs := uint64(c.BucketSize)
	fp := p.fp
	victim := uint64(0)
	ii := p.h1 % nb
	for n := uint16(0); n < c.MaxIterations; n++ {
		old := sub[ii*bs+victim]
		c.put(sub, ii*bs+victim, fp)
		fp = old
		ii = altHash(fp, ii) % nb
		if j := findSlot(sub[ii*bs:ii*bs+bs], 0); j >= 0 {
			c.put(sub, ii*bs+uint64(j), fp)
			return true
		}
		victim = (victim + 1) % bs
	}
	for n := uint16(0); n < c.MaxIterations; n++ {
		victim = (victim + bs - 1) % bs
		ii = altHash(fp, ii) % nb
		old := sub[ii*bs+victim]
		c.put(sub, ii*bs+victim, fp)
		fp = old
	}
	return false
}

// Compact moves fingerprints into older sub-filters and frees emptied
// newest sub-filters; cont keeps going after a sub-filter cannot be emptied.
func (c *Cuckoo) Compact(cont bool) {
	for i := len(c.Filters) - 1; i > 0; i-- {
		if !c.compactSingle(i) && !cont {
			break
		}
	}
	c.NumDeletes = 0
}

func (c *Cuckoo) compactSingle(fi int) bool {
	sub := c.Filters[fi]
	bs := uint64(c.BucketSize)
	ok := true
	for bi := uint64(0); bi < c.nb(sub); bi++ {
		for si := uint64(0); si < bs; si++ {
			fp := sub[bi*bs+si]
			if fp == 0 {
				continue
			}
			p := lookup{h1: bi, h2: altHash(fp, bi), fp: fp}
			moved := false
			for j := 0; j < fi; j++ {
				if off, ok := c.freeSlot(c.Filters[j], p); ok {
					c.put(c.Filters[j], off, fp)
					c.put(sub, bi*bs+si, 0)
					moved = true
					break
				}
			}
			if !moved {
				ok = false
			}
		}
	}
	if ok && fi == len(c.Filters)-1 {
		if c.Guard != nil {
			c.Guard.Release(c.Filters[fi])
		} else {
			freeBytes(c.Filters[fi])
		}
		c.Filters[fi] = nil
		c.Filters = c.Filters[:fi]
	}
	return ok
}

// Free releases the filter's arrays; the filter must not be used afterwards
// (see (*Bloom).Free).
func (c *Cuckoo) Free() {
	for i, s := range c.Filters {
		freeBytes(s)
		c.Filters[i] = nil
	}
	c.Filters = nil
}

// MemUsage is RedisBloom's CF.INFO Size: 40 + 16 per sub-filter + bucket bytes.
func (c *Cuckoo) MemUsage() uint64 {
	n := uint64(40 + 16*len(c.Filters))
	for _, s := range c.Filters {
		n += uint64(len(s))
	}
	return n
}

// DataBytes is the total size of the bucket arrays.
func (c *Cuckoo) DataBytes() uint64 {
	var n uint64
	for _, s := range c.Filters {
		n += uint64(len(s))
	}
	return n
}

// FillRatio is the fraction of occupied fingerprint slots.
func (c *Cuckoo) FillRatio() float64 {
	var used, total uint64
	for _, s := range c.Filters {
		for _, v := range s {
			if v != 0 {
				used++
			}
		}
		total += uint64(len(s))
	}
	if total == 0 {
		return 0
	}
	return float64(used) / float64(total)
}

// EstimatedFPR is the false-positive rate implied by each sub-filter's
// current load (cuckoo.ExpectedRate with RedisBloom's 255 fingerprint
// values), combined over the sub-filters a lookup probes.
func (c *Cuckoo) EstimatedFPR() float64 {
	miss := 1.0
	for _, s := range c.Filters {
		var used uint64
		for _, v := range s {
			if v != 0 {
				used++
			}
		}
		miss *= 1 - cuckoo.ExpectedRate(uint32(c.BucketSize), 8, float64(used)/float64(len(s)))
	}
	return 1 - miss
}

// Header encodes the 38-byte CF.SCANDUMP header.
func (c *Cuckoo) Header() []byte {
	out := make([]byte, cfHeaderLen)
	binary.LittleEndian.PutUint64(out[0:], c.NumItems)
	binary.LittleEndian.PutUint64(out[8:], c.NumBuckets)
	binary.LittleEndian.PutUint64(out[16:], c.NumDeletes)
	binary.LittleEndian.PutUint64(out[24:], uint64(len(c.Filters)))
	binary.LittleEndian.PutUint16(out[32:], c.BucketSize)
	binary.LittleEndian.PutUint16(out[34:], c.MaxIterations)
	binary.LittleEndian.PutUint16(out[36:], c.Expansion)
	return out
}

// Chunk returns the CF.SCANDUMP chunk for position pos ≥ 1 and the next
// position; (0, nil) past the end. Like RedisBloom, a sub-filter of at most
// MaxChunk bytes is always sent whole.
func (c *Cuckoo) Chunk(pos int64) (int64, []byte) {
	off := pos - 1
	for _, s := range c.Filters {
		size := int64(len(s))
		if off < size {
			if size <= MaxChunk {
				return pos + size, s
			}
			rem := size - off
			if rem > MaxChunk {
				rem = MaxChunk
			}
			return pos + rem, s[off : off+rem]
		}
		off -= size
	}
	return 0, nil
}

// LoadCuckooHeader creates an empty filter from a CF.SCANDUMP header, as
// CF.LOADCHUNK with position 1 does. maxExpansions bounds the sub-filter
// count; allow (may be nil) is asked for the total size first.
func LoadCuckooHeader(hdr []byte, maxFilters uint64, allow func(uint64) error) (*Cuckoo, error) {
	if len(hdr) != cfHeaderLen {
		return nil, ErrCFHeader
	}
	c := &Cuckoo{
		NumItems:      binary.LittleEndian.Uint64(hdr[0:]),
		NumBuckets:    binary.LittleEndian.Uint64(hdr[8:]),
		NumDeletes:    binary.LittleEndian.Uint64(hdr[16:]),
		BucketSize:    binary.LittleEndian.Uint16(hdr[32:]),
		MaxIterations: binary.LittleEndian.Uint16(hdr[34:]),
		Expansion:     binary.LittleEndian.Uint16(hdr[36:]),
		AllowAlloc:    allow,
	}
	nf := uint64(uint16(binary.LittleEndian.Uint64(hdr[24:])))
	if c.BucketSize < 1 || c.BucketSize > 255 || nf < 1 || nf > maxFilters ||
		c.MaxIterations < 1 || c.Expansion > 32768 || (c.Expansion == 0 && nf > 1) ||
		c.NumBuckets == 0 || c.NumBuckets > cfMaxNumBuckets || !isPow2(c.NumBuckets) {
		return nil, ErrCFCreate
	}
	sizes := make([]uint64, nf)
	var total uint64
	for i := range sizes {
		g := math.Pow(float64(c.Expansion), float64(i))
		if g > float64(cfMaxNumBuckets/c.NumBuckets) {
			return nil, ErrCFCreate
		}
		nb := c.NumBuckets * uint64(g)
		if nb == 0 || nb > (1<<40)/uint64(c.BucketSize) {
			return nil, ErrCFCreate
		}
		sizes[i] = nb * uint64(c.BucketSize)
		total += sizes[i]
		if total > 1<<40 {
			return nil, ErrCFCreate
		}
	}
	if allow != nil {
		if err := allow(total); err != nil {
			return nil, ErrCFCreate
		}
	}
	for _, n := range sizes {
		d, err := safeMake(n)
		if err != nil {
			c.Free()
			return nil, ErrCFCreate
		}
		c.Filters = append(c.Filters, d)
	}
	return c, nil
}

// LoadChunk copies a CF.SCANDUMP chunk into place; pos is the position the
// dump returned with it.
func (c *Cuckoo) LoadChunk(pos int64, data []byte) error {
	n := int64(len(data))
	if n == 0 || pos <= 0 || pos-1 < n {
		return ErrCFChunk
	}
	off := pos - n - 1
	for _, s := range c.Filters {
		size := int64(len(s))
		if off < size {
			if size < off+n {
				return ErrCFChunk
			}
			if c.Guard != nil {
				c.Guard.Write(s, int(off), int(n))
			}
			copy(s[off:], data)
			return nil
		}
		off -= size
	}
	return ErrCFChunk
}

// Prefetch reads the candidate buckets of each item that Exists (write
// false: both buckets in every sub-filter, up to eight of them) or Insert
// (write true: both buckets in the newest sub-filter, where it looks for a
// free slot first) reads, and returns a byte of them combined, so the
// reads cannot be optimized away; see Bloom.Prefetch for why. It changes
// nothing and its result means nothing.
func (c *Cuckoo) Prefetch(write bool, items ...[]byte) byte {
	if len(c.Filters) == 0 || c.BucketSize == 0 {
		return 0
	}
	subs := c.Filters
	if write {
		subs = subs[len(subs)-1:]
	} else if len(subs) > 8 {
		subs = subs[:8]
	}
	var (
		pos [16]uint64
		v   byte
	)
	for _, sub := range subs {
		if c.nb(sub) == 0 {
			continue
		}
		for rest := items; len(rest) > 0; {
			n := min(len(rest), len(pos)/2)
			for i, item := range rest[:n] {
				p := cuckooLookup(item)
				pos[2*i], pos[2*i+1] = c.index(sub, p.h1), c.index(sub, p.h2)
			}
			for _, at := range pos[:2*n] {
				if at < uint64(len(sub)) {
					v ^= sub[at]
				}
			}
			rest = rest[n:]
		}
	}
	return v
}
