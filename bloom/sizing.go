package bloom

import (
	"errors"
	"fmt"
	"math"
)

// Params describes a Bloom filter: its size in bits, its number of probes
// and the hash seed, together with the item count and false-positive rate it
// was planned for. Params returned by Estimate, EstimateBlocked or a
// filter's Params method can be passed to NewFromParams or
// NewBlockedFromParams to build an empty filter of the same shape.
type Params struct {
	// M is the number of bits. For the blocked layout it is a multiple of
	// BlockBits.
	M uint64
	// K is the number of bit positions probed per key.
	K uint32
	// Seed is mixed into the hash of every key. Filters with different seeds
	// set different bits for the same key, so they cannot be combined.
	Seed uint64
	// N is the number of distinct items the filter was sized for (0 when
	// it was sized by hand with M and K).
	N uint64
	// P is the false-positive rate planned at N items (0 when sized by hand).
	P float64
}

// Limits on parameters. They bound what a constructor accepts and what a
// decoder will believe from a file header.
const (
	// MaxK is the largest number of probes per key.
	MaxK = 64
	// MaxBits is the largest filter size in bits (2^43 bits, 1 TiB), enough
	// for about 900 billion keys at a 1% rate.
	MaxBits = 1 << 43
)

// ErrInvalidParams is returned (wrapped) when a size, probe count or rate is
// outside what a filter can be built with.
var ErrInvalidParams = errors.New("bloom: invalid parameters")

// OptimalM returns the number of bits a classic Bloom filter needs to hold n
// items with false-positive rate p: ceil(-n ln p / (ln 2)^2).
// It returns 0 when p is not in (0, 1).
func OptimalM(n uint64, p float64) uint64 {
	if !(p > 0 && p < 1) {
		return 0
	}
	if n == 0 {
		n = 1
	}
	return uint64(math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)))
}

// OptimalK returns the number of probes that minimises the false-positive
// rate of an m-bit filter holding n items: round(m/n ln 2), at least 1 and at
// most MaxK.
func OptimalK(m, n uint64) uint32 {
	if n == 0 {
		n = 1
	}
	k := math.Round(float64(m) / float64(n) * math.Ln2)
	return uint32(max(1, min(k, MaxK)))
}

// FalsePositiveRate returns the expected false-positive rate of a classic
// m-bit filter with k probes after n distinct items were added:
// (1 - (1 - 1/m)^(kn))^k, which is very close to (1 - e^(-kn/m))^k.
func FalsePositiveRate(m, n uint64, k uint32) float64 {
	if m == 0 || k == 0 {
		return 1
	}
	// (1-1/m)^(kn) computed as exp(kn * log1p(-1/m)) to stay exact for huge m.
	unset := math.Exp(float64(k) * float64(n) * math.Log1p(-1/float64(m)))
	return math.Pow(1-unset, float64(k))
}

// Estimate returns the parameters of a classic filter for n items at
// false-positive rate p: M = OptimalM(n, p) and K = OptimalK(M, n).
// For n = 100,000 and p = 0.01 that is M = 958,506 bits and K = 7.
// M and K are 0 when p is not in (0, 1).
func Estimate(n uint64, p float64) Params {
	m := OptimalM(n, p)
	if m == 0 {
		return Params{N: n, P: p}
	}
	return Params{M: m, K: OptimalK(m, n), N: n, P: p}
}

// BlockBits is the size of one block of the blocked layout: one 64-byte
// cache line.
const BlockBits = 512

// BlockedFalsePositiveRate returns the expected false-positive rate of a
// blocked filter of m bits (m/512 blocks) with k probes per key after n
// distinct items were added. Keys spread over blocks unevenly (the number of
// keys in a block follows a Poisson distribution with mean n/blocks), and a
// crowded block answers "present" more often, so the rate is
//
//	sum over j of Poisson(j; n/blocks) * (1 - (1 - 1/512)^(j k))^k
//
// which is higher than FalsePositiveRate(m, n, k).
func BlockedFalsePositiveRate(m, n uint64, k uint32) float64 {
	blocks := m / BlockBits
	if blocks == 0 || k == 0 {
		return 1
	}
	lambda := float64(n) / float64(blocks)
	if lambda == 0 {
		return 0
	}
	q := math.Log1p(-1.0 / BlockBits) // log of (1 - 1/512)
	kf := float64(k)
	// Sum the Poisson terms outward from the mode so that the tails, which
	// underflow, are cut once they stop contributing.
	mode := math.Floor(lambda)
	logPMF := func(j float64) float64 {
		lg, _ := math.Lgamma(j + 1)
		return j*math.Log(lambda) - lambda - lg
	}
	term := func(j float64) float64 {
		return math.Exp(logPMF(j)) * math.Pow(-math.Expm1(j*kf*q), kf)
	}
	sum := 0.0
	for j := mode; j >= 0; j-- {
		t := term(j)
		sum += t
		if t < sum*1e-17 && j < mode-10 {
			break
		}
	}
	for j := mode + 1; ; j++ {
		t := term(j)
		sum += t
		if t < sum*1e-17 && j > mode+10 {
			break
		}
	}
	return min(sum, 1)
}

// EstimateBlocked returns the parameters of a blocked filter for n items at
// false-positive rate p. Blocking costs bits: it searches every k for the
// fewest blocks whose BlockedFalsePositiveRate at n items is at most p, and
// returns the smallest such filter (the fewer probes on a tie). The blocked
// layout needs about 3% more bits than the classic one at p = 1%, 8% more at
// 0.1% and 14% more at 0.01% (docs/sizing.md has the table).
// M and K are 0 when p is not in (0, 1).
func EstimateBlocked(n uint64, p float64) Params {
	if !(p > 0 && p < 1) {
		return Params{N: n, P: p}
	}
	nn := max(n, 1)
	classic := OptimalM(nn, p)
	best := Params{N: n, P: p}
	for k := uint32(1); k <= MaxK; k++ {
		// The blocked layout never needs fewer bits than the classic one, and
		// (for the rates a filter is used at) never more than 4x as many.
		lo := max(1, classic/BlockBits)
		hi := max(lo, 4*classic/BlockBits+1)
		if BlockedFalsePositiveRate(hi*BlockBits, nn, k) > p {
			continue
		}
		for lo < hi {
			mid := lo + (hi-lo)/2
			if BlockedFalsePositiveRate(mid*BlockBits, nn, k) <= p {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if m := lo * BlockBits; best.M == 0 || m < best.M {
			best.M, best.K = m, k
		}
	}
	return best
}

// validate reports whether p describes a buildable filter; blocked filters
// also need M to be a whole number of blocks.
func (p Params) validate(blocked bool) error {
	switch {
	case p.M == 0:
		return fmt.Errorf("%w: m = 0 bits", ErrInvalidParams)
	case p.M > MaxBits:
		return fmt.Errorf("%w: m = %d bits is above the limit of %d", ErrInvalidParams, p.M, uint64(MaxBits))
	case p.K == 0 || p.K > MaxK:
		return fmt.Errorf("%w: k = %d probes, want 1 to %d", ErrInvalidParams, p.K, MaxK)
	case blocked && p.M%BlockBits != 0:
		return fmt.Errorf("%w: m = %d bits is not a multiple of the %d-bit block", ErrInvalidParams, p.M, BlockBits)
	case p.P < 0 || p.P >= 1 || math.IsNaN(p.P):
		return fmt.Errorf("%w: planned rate %v is not in [0, 1)", ErrInvalidParams, p.P)
	}
	return nil
}

func checkRate(p float64) error {
	if !(p > 0 && p < 1) {
		return fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalidParams, p)
	}
	return nil
}
