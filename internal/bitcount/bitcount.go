// Package bitcount counts the bits set in a filter's array and estimates
// from that count how many keys were added: one copy of the arithmetic for
// the bloom package's Stats, RedisBloom-layout merges and the server's
// native keys.
package bitcount

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Ones returns the number of bits set in p.
func Ones(p []byte) uint64 {
	var n uint64
	for len(p) >= 8 {
		n += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(p)))
		p = p[8:]
	}
	for _, c := range p {
		n += uint64(bits.OnesCount8(c))
	}
	return n
}

// BlockBits is the size of a blocked filter's block: one 64-byte cache
// line.
const BlockBits = 512

// Classic estimates how many distinct keys set the set bits of a classic
// Bloom filter of m bits and k probes a key: the n for which the expected
// number of set bits, m·(1 − (1 − 1/m)^(k·n)), is set. It returns
// math.MaxUint64 when every bit is set (any n fits).
func Classic(set, m uint64, k uint32) uint64 {
	if set >= m {
		return math.MaxUint64
	}
	n := math.Log1p(-float64(set)/float64(m)) / (float64(k) * math.Log1p(-1/float64(m)))
	return uint64(math.Round(n))
}

// Blocked is Classic for a blocked filter of m bits: m/512 blocks of 512
// bits, a key's k probes all in one block. With keys spread over blocks as
// a Poisson process of mean λ = n/blocks, the expected fill is
// 1 − exp(−λ(1 − (1 − 1/512)^k)); this is solved for n. It returns
// math.MaxUint64 when every bit is set.
func Blocked(set, m uint64, k uint32) uint64 {
	if set >= m {
		return math.MaxUint64
	}
	fill := float64(set) / float64(m)
	perKey := -math.Expm1(float64(k) * math.Log1p(-1.0/BlockBits)) // 1 - (1-1/512)^k
	lambda := -math.Log1p(-fill) / perKey
	return uint64(math.Round(lambda * float64(m/BlockBits)))
}
