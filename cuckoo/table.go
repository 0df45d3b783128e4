package cuckoo

import (
	"math/bits"

	"github.com/bloomkit/bloomkit/internal/mem"
)

// A table is one cuckoo hash table of the chain: buckets × b slots of f bits
// each, packed in a bit array. Slot j of bucket i holds bits
// [(i·b + j)·f, (i·b + j + 1)·f) of the array; bit p of the array is bit
// p mod 64 of word p/64. A slot of 0 is empty; fingerprints are never 0.
type table struct {
	words   []uint64
	buckets uint64 // nb0 << shift
	count   uint64 // fingerprints stored
	nb0     uint64 // buckets of the first table of the chain
	shift   uint   // log2(buckets / nb0): log2(expansion) × the table's place
}

// Multipliers that turn a fingerprint into the offsets of its alternate
// bucket. They are part of the file format.
const (
	altMulTop = 0x9e3779b97f4a7c15 // 2^64 / golden ratio
	altMulLow = 0xc2b2ae3d27d4eb4f // a 64-bit prime of XXH64
)

// alt returns the other bucket of fingerprint fp when it is in bucket i:
// alt(alt(i, fp), fp) = i, so either bucket leads to the other knowing only
// the fingerprint (partial-key cuckoo hashing).
//
// An index of a table of nb0·2^s buckets is a "top" digit in [0, nb0) and s
// low bits: top = i >> s. The top digit is mirrored around a point that the
// fingerprint picks, top' = (c − top) mod nb0 with c = ⌊(fp·altMulTop mod
// 2^64)·nb0 / 2^64⌋, which works for any nb0 (not only powers of two); the
// low bits are XORed with the top s bits of fp·altMulLow mod 2^64. Both are
// involutions. Because a key's first bucket is ⌊lo·buckets/2^64⌋ and
// buckets grow by powers of two, dropping a table's low bit gives the
// bucket in a table half its size, for both of a key's buckets: two keys
// that share a fingerprint and a pair of buckets in one table share them in
// every smaller table too. That is what makes Delete safe across tables
// (see Filter.delete).
func (t *table) alt(i, fp uint64) uint64 {
	top := i >> t.shift
	c := mulHigh(fp*altMulTop, t.nb0)
	if c >= top {
		top = c - top
	} else {
		top = c + t.nb0 - top
	}
	low := (i ^ (fp*altMulLow)>>(64-t.shift)) & (1<<t.shift - 1)
	return top<<t.shift | low
}

// get returns the f-bit slot at bit offset o.
func (t *table) get(o, f uint64) uint64 { return readBits(t.words, o, uint(f)) }

// set stores v in the f-bit slot at bit offset o.
func (t *table) set(o, f, v uint64) { xorBits(t.words, o, t.get(o, f)^v, uint(f)) }

func mulHigh(a, b uint64) uint64 {
	hi, _ := bits.Mul64(a, b)
	return hi
}

// A shape holds a filter's bucket size and fingerprint length, and the
// constants for treating a bucket of at most 64 bits as b lanes of f bits
// in one register (SWAR: SIMD within a register).
type shape struct {
	b, f   uint64 // slots a bucket, bits a fingerprint
	bb     uint64 // bits a bucket: b·f
	fpMask uint64 // 2^f − 1
	ones   uint64 // the lowest bit of every lane
	high   uint64 // the highest bit of every lane
	low    uint64 // every bit of every lane but the highest
	fast   bool   // bb <= 64: a bucket fits in one register
}

func newShape(b, f uint64) shape {
	s := shape{b: b, f: f, bb: b * f, fpMask: 1<<f - 1}
	s.fast = s.bb <= 64
	if s.fast {
		for j := range b {
			s.ones |= 1 << (j * f)
		}
		s.high = s.ones << (f - 1)
		s.low = s.high - s.ones
	}
	return s
}

// newTable returns an empty table of n = nb0 << shift buckets.
func (s *shape) newTable(nb0 uint64, shift uint) table {
	n := nb0 << shift
	return table{words: allocWords(s.tableWords(n)), buckets: n, nb0: nb0, shift: shift}
}

// allocWords returns n zeroed words, on huge pages when they are many.
func allocWords(n uint64) []uint64 { return mem.Words(n) }

// tableWords is the number of 64-bit words of a table of n buckets. Callers
// keep n·bb below MaxBits.
func (s *shape) tableWords(n uint64) uint64 { return (n*s.bb + 63) / 64 }

// zeroLanes returns the lanes of x that are 0, as their highest bit. It is
// exact for every lane: the addition cannot carry from one lane into the
// next.
func (s *shape) zeroLanes(x uint64) uint64 {
	return ^(((x & s.low) + s.low) | x | s.low) & s.high
}

// readBits returns n <= 64 bits of w starting at bit off.
func readBits(w []uint64, off uint64, n uint) uint64 {
	i, sh := off>>6, uint(off&63)
	x := w[i] >> sh
	if sh+n > 64 {
		x |= w[i+1] << (64 - sh)
	}
	return x & (^uint64(0) >> (64 - n))
}

// xorBits XORs the n <= 64 low bits of v into w at bit off. Every write to a
// table is an XOR: into an empty slot it stores, with the slot's own value it
// clears, and with old^new it replaces.
func xorBits(w []uint64, off uint64, v uint64, n uint) {
	i, sh := off>>6, uint(off&63)
	w[i] ^= v << sh
	if sh+n > 64 {
		w[i+1] ^= v >> (64 - sh)
	}
}

// bucket returns bucket i as one register (fast shapes only).
func (s *shape) bucket(t *table, i uint64) uint64 {
	return readBits(t.words, i*s.bb, uint(s.bb))
}

// has reports whether bucket i holds fingerprint fp.
func (s *shape) has(t *table, i, fp uint64) bool {
	if s.fast {
		return s.zeroLanes(s.bucket(t, i)^(fp*s.ones)) != 0
	}
	for o, end := i*s.bb, (i+1)*s.bb; o < end; o += s.f {
		if t.get(o, s.f) == fp {
			return true
		}
	}
	return false
}

// count returns how many slots of bucket i hold fp.
func (s *shape) count(t *table, i, fp uint64) uint64 {
	if s.fast {
		return uint64(bits.OnesCount64(s.zeroLanes(s.bucket(t, i) ^ (fp * s.ones))))
	}
	var n uint64
	for o, end := i*s.bb, (i+1)*s.bb; o < end; o += s.f {
		if t.get(o, s.f) == fp {
			n++
		}
	}
	return n
}

// put stores fp in the first empty slot of bucket i, if there is one.
func (s *shape) put(t *table, i, fp uint64) bool {
	if s.fast {
		z := s.zeroLanes(s.bucket(t, i))
		if z == 0 {
			return false
		}
		// The lowest empty lane's highest bit is bit p: the lane starts at p-f+1.
		p := uint64(bits.TrailingZeros64(z)) + 1 - s.f
		xorBits(t.words, i*s.bb+p, fp, uint(s.f))
		t.count++
		return true
	}
	for o, end := i*s.bb, (i+1)*s.bb; o < end; o += s.f {
		if t.get(o, s.f) == 0 {
			xorBits(t.words, o, fp, uint(s.f))
			t.count++
			return true
		}
	}
	return false
}

// remove empties the first slot of bucket i that holds fp, if there is one.
func (s *shape) remove(t *table, i, fp uint64) bool {
	if s.fast {
		z := s.zeroLanes(s.bucket(t, i) ^ (fp * s.ones))
		if z == 0 {
			return false
		}
		p := uint64(bits.TrailingZeros64(z)) + 1 - s.f
		xorBits(t.words, i*s.bb+p, fp, uint(s.f))
		t.count--
		return true
	}
	for o, end := i*s.bb, (i+1)*s.bb; o < end; o += s.f {
		if t.get(o, s.f) == fp {
			xorBits(t.words, o, fp, uint(s.f))
			t.count--
			return true
		}
	}
	return false
}

// occupied counts the non-empty slots of t, for checking a decoded table.
func (s *shape) occupied(t *table) uint64 {
	var n uint64
	for i := range t.buckets {
		if s.fast {
			n += uint64(bits.OnesCount64(s.high &^ s.zeroLanes(s.bucket(t, i))))
			continue
		}
		for o, end := i*s.bb, (i+1)*s.bb; o < end; o += s.f {
			if t.get(o, s.f) != 0 {
				n++
			}
		}
	}
	return n
}
