package bloom

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"

	"github.com/bloomkit/bloomkit/internal/batch"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/zeebo/xxh3"
)

// Hash ids, as the file format records them (Params.Hash). Both hash a key
// with the 128-bit XXH3 of its bytes and the filter's seed
// (XXH3_128bits_withSeed); they differ in how the classic layout (Filter,
// Counting) derives its k probe positions from that hash. The function, and
// the derivation, are part of the format: they never change for files that
// carry an id.
const (
	// HashXXH3 is the blocked layout's only id. For the classic layout it
	// is the derivation of earlier versions, enhanced double hashing, whose
	// probes fall close to an arithmetic progression and miss the rate by
	// up to thousands of times when m is small (a few thousand bits); files
	// that carry it read and answer as before, and no new classic filter
	// uses it.
	HashXXH3 = format.HashXXH3
	// HashXXH3Remix is the classic layout's id for new filters: every
	// probe re-mixes the hash, so the k positions behave as independent at
	// every m and FalsePositiveRate is the filter's rate.
	HashXXH3Remix = format.HashXXH3Remix
)

// The k probe positions of a key hashed to (lo, hi) in the classic layout,
// hash id HashXXH3Remix: x_0 = lo, x_{i+1} = x_i·probeMul + hi (a linear
// congruential sequence whose increment is the key's), each x_i mapped to
// [0, m) as (x_i·m) >> 64, the high half of the 128-bit product. Mapping
// the high bits of x_i keeps every bit of lo and hi in play at every m:
// probe i depends on x_0 through probeMul^i, a different odd multiplier for
// each i, and on hi through a different sum of them, where the old
// derivation's positions moved by nearly the same step each probe. It costs
// one multiplication a probe more than enhanced double hashing and no
// more instructions (bench/SPEED.md). probeMul is a spectrally good 64-bit
// LCG multiplier (Steele and Vigna, "Computationally easy, spectrally good
// multipliers for congruential pseudorandom number generators", 2021).
// TestRemixPositions pins the derivation.
const probeMul = 0xd1342543de82ef95

// probePos maps a probe's state to a bit position in [0, m).
func probePos(x, m uint64) uint64 {
	hi, _ := bits.Mul64(x, m)
	return hi
}

// nextProbe returns the state of the probe after x of the key whose hash's
// high half is y.
func nextProbe(x, y uint64) uint64 { return x*probeMul + y }

// probeMulVar is probeMul for the probe loops, written out there as
// x = x*c + y with c := probeMulVar and pos, _ := bits.Mul64(x, m): held in
// a variable, the multiplier stays in a register, where the compiler loads
// the constant again for every probe; with that, and without the inline
// marks of calling probePos and nextProbe, the loop has one instruction
// more per probe than the old derivation's (bench/SPEED.md).
var probeMulVar uint64 = probeMul

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
