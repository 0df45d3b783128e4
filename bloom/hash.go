package bloom

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/bloomkit/bloomkit/internal/batch"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// Hash ids, as the file format records them (Params.Hash): how a key is
// hashed and its probe positions derived from the hash. The function, and
// the derivation, are part of the format: they never change for files that
// carry an id.
const (
	// HashXXH3 hashes a key with the 128-bit XXH3 of its bytes and the
	// filter's seed (XXH3_128bits_withSeed). It is the id of Scalable and
	// Window, and of blocked filters of earlier versions, which read and
	// answer as before. For the classic layout it is the derivation of
	// earlier versions, enhanced double hashing, whose probes fall close
	// to an arithmetic progression and miss the rate by up to thousands of
	// times when m is small (a few thousand bits); files that carry it
	// read and answer as before, and no new classic filter uses it.
	HashXXH3 = format.HashXXH3
	// HashXXH3Remix is the classic layout's id for new filters: the same
	// 128-bit hash as HashXXH3, and every probe re-mixes it, so the k
	// positions behave as independent at every m and FalsePositiveRate is
	// the filter's rate.
	HashXXH3Remix = format.HashXXH3Remix
	// HashXXH3x64 is the blocked layout's id for new filters (NewBlocked,
	// EstimateBlocked, and NewBlockedFromParams when Params.Hash is 0): a
	// key is hashed with the 64-bit XXH3 of its bytes and the seed
	// (XXH3_64bits_withSeed), and that one word picks the block, from the
	// high bits of its product with the block count, and the probes in
	// it, as HashXXH3's low half does. A 64-bit hash is about 40
	// instructions cheaper than the 128-bit one for a 60-byte key, which
	// is most of a lookup (bench/SPEED.md).
	HashXXH3x64 = format.HashXXH3x64
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

// KeyHash is a key's hash, from which a filter derives every probe
// (docs/format.md). Code that already hashes its keys, or keeps hashes
// instead of keys, passes it to AddHash and TestHash, LocateBlock and
// Locate.
//
// A KeyHash made by Params.HashKey (or Hash) remembers what made it: the
// hash function and the seed. A filter whose hash or seed differs refuses
// it: the probes of another hash are not the key's, so an AddHash would put
// the key where Test never looks, and a TestHash would answer false for a
// key that was added, a false negative. AddHash, TestHash, LocateBlock and
// Locate have no error to return, so they panic with a value wrapping
// ErrHashMismatch, as an Add to the zero value panics with ErrZero: the
// mismatch is a program's wiring, not its input, the first call in any test
// finds it, and both quiet answers are wrong (false is the false negative;
// true would make a deduplicating loop drop every item). Code that takes
// hashes from elsewhere checks them first with Params.CheckHash, which
// returns the error.
//
// A KeyHash built from its fields (KeyHash{Lo: lo, Hi: hi}) carries no
// origin, is never refused, and must be what HashKey returns for the
// filter's Params for the filter to answer as it would for the key itself:
// for hash ids HashXXH3 and HashXXH3Remix the 128-bit XXH3 of the key with
// the filter's seed, Lo its low half; for HashXXH3x64 the 64-bit XXH3 in
// both Lo and Hi. Any hash well spread in all 128 bits keeps the rate.
type KeyHash struct {
	Lo, Hi uint64
	seed   uint64 // the seed it was made with, when kind is not 0
	kind   uint8  // the hash function that made it (hashKind…), 0 if built from its fields
}

// The hash functions a KeyHash can come from.
const (
	hashKindNone    = iota // built from its fields: not checked
	hashKindXXH3           // 128-bit XXH3 (ids HashXXH3, HashXXH3Remix)
	hashKindXXH3x64        // 64-bit XXH3 in Lo and Hi (id HashXXH3x64)
	hashKindXXH64          // XXH64 with seed 0 in Lo and Hi (id HashXXH64)
)

// hashKind is the hash function of hash id id; 0, the newest id of a
// Params made by hand, is taken as the classic layout's.
func hashKind(id uint8) uint8 {
	switch id {
	case HashXXH3x64:
		return hashKindXXH3x64
	case HashXXH64:
		return hashKindXXH64
	}
	return hashKindXXH3
}

func hashKindName(kind uint8) string {
	switch kind {
	case hashKindXXH3:
		return "XXH3-128"
	case hashKindXXH3x64:
		return "XXH3-64"
	case hashKindXXH64:
		return "XXH64"
	}
	return "unlabelled"
}

// ErrHashMismatch is the error (wrapped) of a KeyHash made with another
// hash function or seed than the filter's: see KeyHash.
var ErrHashMismatch = errors.New("bloom: key hash made for another filter's hash or seed")

// HashKey returns the hash a filter with parameters p computes for key,
// labelled with p's hash function and seed (see KeyHash). Use the filter's
// own Params (f.Params().HashKey(key)), or Estimate's or EstimateBlocked's:
// a Params made by hand with Hash 0 hashes as the classic layout does, while
// NewBlockedFromParams gives such a Params the blocked layout's newest id.
func (p Params) HashKey(key []byte) KeyHash {
	switch p.Hash {
	case HashXXH3x64:
		var h uint64
		if p.Seed == 0 {
			h = xxh3.Hash(key)
		} else {
			h = xxh3.HashSeed(key, p.Seed)
		}
		return KeyHash{Lo: h, Hi: h, seed: p.Seed, kind: hashKindXXH3x64}
	case HashXXH64:
		h := xxhash.Sum64(key)
		return KeyHash{Lo: h, Hi: h, seed: p.Seed, kind: hashKindXXH64}
	}
	lo, hi := hashBytes(key, p.Seed)
	return KeyHash{Lo: lo, Hi: hi, seed: p.Seed, kind: hashKindXXH3}
}

// HashKeyString is HashKey for a string key.
func (p Params) HashKeyString(key string) KeyHash {
	switch p.Hash {
	case HashXXH3x64:
		var h uint64
		if p.Seed == 0 {
			h = xxh3.HashString(key)
		} else {
			h = xxh3.HashStringSeed(key, p.Seed)
		}
		return KeyHash{Lo: h, Hi: h, seed: p.Seed, kind: hashKindXXH3x64}
	case HashXXH64:
		h := xxhash.Sum64String(key)
		return KeyHash{Lo: h, Hi: h, seed: p.Seed, kind: hashKindXXH64}
	}
	lo, hi := hashString(key, p.Seed)
	return KeyHash{Lo: lo, Hi: hi, seed: p.Seed, kind: hashKindXXH3}
}

// CheckHash returns nil if a filter with parameters p may use h: h was
// built from its fields, or made with p's hash function and seed. It
// returns an error wrapping ErrHashMismatch otherwise, where AddHash,
// TestHash, LocateBlock and Locate would panic.
func (p Params) CheckHash(h KeyHash) error {
	if h.kind == hashKindNone || h.kind == hashKind(p.Hash) && h.seed == p.Seed {
		return nil
	}
	return fmt.Errorf("%w: the hash is %s with seed %#x, the filter (hash id %d) takes %s with seed %#x",
		ErrHashMismatch, hashKindName(h.kind), h.seed, p.Hash, hashKindName(hashKind(p.Hash)), p.Seed)
}

// mustMatch panics with CheckHash's error unless a filter with parameters
// p may use h. The caller tests h.kind != 0 first, so that a hash built
// from its fields costs one comparison.
func mustMatch(p Params, h KeyHash) {
	if p.M == 0 {
		return // the zero value, which holds nothing and refuses adds with ErrZero
	}
	if err := p.CheckHash(h); err != nil {
		panic(err)
	}
}

// Hash returns the 128-bit XXH3 hash a filter with this seed and hash id
// HashXXH3 or HashXXH3Remix computes for key.
//
// Deprecated: Use the filter's Params().HashKey(key), which hashes as the
// filter does whatever its hash id: a blocked filter of hash id
// HashXXH3x64, NewBlocked's, refuses a Hash (see KeyHash).
func Hash(seed uint64, key []byte) KeyHash {
	lo, hi := batch.Sum(key, seed)
	return KeyHash{Lo: lo, Hi: hi, seed: seed, kind: hashKindXXH3}
}

// HashString is Hash for a string key.
//
// Deprecated: Use the filter's Params().HashKeyString(key) (see Hash).
func HashString(seed uint64, key string) KeyHash {
	lo, hi := batch.Sum(key, seed)
	return KeyHash{Lo: lo, Hi: hi, seed: seed, kind: hashKindXXH3}
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
