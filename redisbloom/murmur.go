// Package redisbloom implements RedisBloom's own filter types in Go: the
// scalable Bloom filter chain behind BF.* and the cuckoo filter behind CF.*.
// bloomkit's server serves them, and Go programs and the bloom command use
// them to read, test and write RedisBloom dumps in-process.
//
// The types reproduce RedisBloom's sizing, hashing (MurmurHash64A), memory
// layout and dump format bit for bit, so BF.SCANDUMP / CF.SCANDUMP output
// produced here loads into a real RedisBloom with LOADCHUNK and vice versa,
// and every query answers identically, false positives included. The
// recordings in testdata/redisbloom/ (taken from RedisBloom 2.8.20) are
// replayed by the tests. Their Redis RDB encoding (the module values
// RedisBloom saves, at every encoding version 2.x to 8.x write) is in
// DecodeBloomRDB, DecodeCuckooRDB and EncodeRDB.
//
// The types are not safe for concurrent use; callers serialise access.
package redisbloom

import "encoding/binary"

const murmurM = 0xc6a4a7935bd1e995

// MurmurHash64A is Austin Appleby's 64-bit MurmurHash2 as RedisBloom uses it
// (8-byte little-endian blocks, tail bytes folded in from the highest index
// down).
func MurmurHash64A(key []byte, seed uint64) uint64 {
	const r = 47
	h := seed ^ (uint64(len(key)) * murmurM)
	n := len(key) / 8 * 8
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(key[i:])
		k *= murmurM
		k ^= k >> r
		k *= murmurM
		h ^= k
		h *= murmurM
	}
	tail := key[n:]
	switch len(tail) {
	case 7:
		h ^= uint64(tail[6]) << 48
		fallthrough
	case 6:
		h ^= uint64(tail[5]) << 40
		fallthrough
	case 5:
		h ^= uint64(tail[4]) << 32
		fallthrough
	case 4:
		h ^= uint64(tail[3]) << 24
		fallthrough
	case 3:
		h ^= uint64(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint64(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint64(tail[0])
		h *= murmurM
	}
	h ^= h >> r
	h *= murmurM
	h ^= h >> r
	return h
}

// A Guard watches a filter's arrays while a point-in-time image of them is
// read elsewhere: bloomkit's server writes snapshots this way while clients
// keep writing, instead of stopping them (Go cannot fork). A filter with a
// Guard calls Write before it changes bytes of one of its arrays, so the
// Guard can first copy what the image still needs, and calls Release
// instead of freeing an array it no longer needs; the Guard frees released
// arrays with FreeArray once its reader is done with them.
//
// Arrays are identified by the slices the filter holds (Bloom.Link(i).Data,
// Cuckoo.Filters[i]); off and n are byte offsets into them.
type Guard interface {
	Write(array []byte, off, n int)
	Release(array []byte)
}

// FreeArray releases an array a filter handed to Guard.Release. Arrays of
// 1 MiB or more live outside the Go heap and are only returned to the system
// this way; smaller ones are left to the garbage collector.
func FreeArray(b []byte) { freeBytes(b) }

// AllocArray allocates n zero bytes the way the filters here allocate their
// arrays: from 1 MiB on outside the Go heap (zero pages the kernel fills
// lazily, so a large array costs nothing until touched), to be released
// with FreeArray. It lets a Guard's owner keep other filters' arrays under
// the same rules; it fails with ErrTooLarge where Go or the system cannot
// allocate n bytes.
func AllocArray(n uint64) ([]byte, error) { return safeMake(n) }
