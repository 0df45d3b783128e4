package bloom

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/bloomkit/bloomkit/internal/batch"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/zeebo/xxh3"
)

// HashXXH3 identifies, in the file format, the only hash this version uses:
// the 128-bit XXH3 of the key's bytes with the filter's seed
// (XXH3_128bits_withSeed). The function, and the way probe positions are
// derived from it, are part of the format: they never change for files that
// carry this identifier.
const HashXXH3 = format.HashXXH3

// KeyHash is the 128-bit XXH3 hash of a key, from which a filter derives
// every probe (docs/format.md). Code that already hashes its keys, or keeps
// hashes instead of keys, passes it to AddHash and TestHash; it must be
// XXH3-128 of the key with the filter's seed (Hash) for the filter to
// answer as it would for the key itself, and at least well spread in all
// 128 bits for the rate to hold.
type KeyHash struct{ Lo, Hi uint64 }

// Hash returns the hash a filter with this seed computes for key.
func Hash(seed uint64, key []byte) KeyHash {
	lo, hi := batch.Sum(key, seed)
	return KeyHash{lo, hi}
}

// HashString is Hash for a string key.
func HashString(seed uint64, key string) KeyHash {
	lo, hi := batch.Sum(key, seed)
	return KeyHash{lo, hi}
}

// hashBytes and hashString return the two 64-bit halves of the key's
// 128-bit hash, as batch.Sum does, written out for the single-key methods:
// calling xxh3 directly rather than through the generic function measured
// faster at 10 million keys. Seed 0 takes XXH3's unseeded path, which is the
// same hash and faster; TestSeedZeroSameHash and TestXXH3Vectors check both.
func hashBytes(key []byte, seed uint64) (lo, hi uint64) {
	var h xxh3.Uint128
	if seed == 0 {
		h = xxh3.Hash128(key)
	} else {
		h = xxh3.Hash128Seed(key, seed)
	}
	return h.Lo, h.Hi
}

func hashString(key string, seed uint64) (lo, hi uint64) {
	var h xxh3.Uint128
	if seed == 0 {
		h = xxh3.HashString128(key)
	} else {
		h = xxh3.HashString128Seed(key, seed)
	}
	return h.Lo, h.Hi
}

// RandomSeed returns a seed from crypto/rand. A filter with a secret random
// seed resists keys crafted to collide in it (pollution attacks); the seed is
// saved with the filter, so a reloaded filter answers the same.
func RandomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return binary.LittleEndian.Uint64(b[:])
}

// blockSalts are the odd multipliers that spread a key's probes inside its
// block: probe i sets bit (lo * blockSalts[i]) >> 55 of the 512-bit block.
// They are part of the file format and must never change; they are the
// first MaxK outputs of SplitMix64 seeded with 0x626c6f6f6d6b6974
// ("bloomkit"), with the lowest bit set, and TestBlockSalts pins them.
var blockSalts = func() (s [MaxK]uint64) {
	x := uint64(0x626c6f6f6d6b6974)
	for i := range s {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		s[i] = (z ^ (z >> 31)) | 1
	}
	return s
}()
