// Package murmur2 is Austin Appleby's 32-bit MurmurHash2 as RedisBloom's
// Count-Min Sketch and Top-K hash items with it: four bytes at a time read
// little-endian, the length mixed into the seed as a 32-bit value.
package murmur2

import (
	"encoding/binary"
	"unsafe"
)

const (
	m = 0x5bd1e995
	r = 24
)

// Sum32 is MurmurHash2 of key with seed.
func Sum32(key []byte, seed uint32) uint32 {
	h := seed ^ uint32(len(key))
	for len(key) >= 4 {
		k := binary.LittleEndian.Uint32(key)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		key = key[4:]
	}
	switch len(key) {
	case 3:
		h ^= uint32(key[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(key[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(key[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// Sum32String is Sum32 of a string's bytes, without a copy.
func Sum32String(key string, seed uint32) uint32 {
	return Sum32(unsafe.Slice(unsafe.StringData(key), len(key)), seed)
}

// SumRows sets hs[i] to Sum32(key, i) for every i, mixing each 4-byte
// block of key once for all of them: the seeds differ only in the running
// hash.
func SumRows(key []byte, hs []uint32) {
	l := uint32(len(key))
	for i := range hs {
		hs[i] = uint32(i) ^ l
	}
	for len(key) >= 4 {
		k := binary.LittleEndian.Uint32(key)
		k *= m
		k ^= k >> r
		k *= m
		for i := range hs {
			hs[i] = hs[i]*m ^ k
		}
		key = key[4:]
	}
	var tail uint32
	switch len(key) {
	case 3:
		tail ^= uint32(key[2]) << 16
		fallthrough
	case 2:
		tail ^= uint32(key[1]) << 8
		fallthrough
	case 1:
		tail ^= uint32(key[0])
	}
	for i, h := range hs {
		if len(key) > 0 {
			h ^= tail
			h *= m
		}
		h ^= h >> 13
		h *= m
		h ^= h >> 15
		hs[i] = h
	}
}
