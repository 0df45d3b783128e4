package bloom

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/bloomkit/bloomkit/internal/bitcount"
)

// Params describes a Bloom filter: its size in bits, its number of probes
// and the hash seed, together with the item count and false-positive rate it
// was planned for. Params returned by Estimate, EstimateBlocked or a
// filter's Params method can be passed to NewFromParams or
// NewBlockedFromParams to build an empty filter of the same shape.
type Params struct {
	// M is the number of bits. For the blocked layout it is a multiple of
	// BlockBits, for the split-block one of SplitBlockBits.
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
	// Hash is the file format's hash id: how a key's probe positions are
	// derived from its hash. 0 means the newest for the layout
	// (HashXXH3Remix for Filter and Counting, HashXXH3x64 for Blocked,
	// HashXXH64 for SplitBlock, its only id); a filter's Params report
	// the id it uses. A filter read from a file keeps the file's id and
	// answers as the filter that wrote it; HashXXH3 for the classic and
	// blocked layouts exists for such files (and for Scalable and Window,
	// whose only id it is).
	Hash uint8
}

// Limits on parameters. They bound what a constructor accepts and what a
// decoder will believe from a file header.
const (
	// MaxK is the largest number of probes per key.
	MaxK = 64
	// MaxBits is the largest filter size in bits: 2^43 bits (1 TiB), enough
	// for about 900 billion keys at a 1% rate, on 64-bit platforms; on
	// 32-bit ones, where a slice holds less than 2 GiB, 2^34 − 512 bits.
	MaxBits = min(1<<43, math.MaxInt/64*BlockBits)
)

// MinRate is the smallest false-positive rate a filter can be sized for,
// the smallest normal float64 (about 2.2e-308): below it the rate formulas
// lose their precision.
const MinRate = 0x1p-1022

// validRate reports whether p is a rate filters can be sized for.
func validRate(p float64) bool { return p >= MinRate && p < 1 }

// ErrInvalidParams is returned (wrapped) when a size, probe count or rate is
// outside what a filter can be built with.
var ErrInvalidParams = errors.New("bloom: invalid parameters")

// OptimalM returns the number of bits a classic Bloom filter needs to hold n
// items with false-positive rate p: ceil(-n ln p / (ln 2)^2), saturating at
// math.MaxUint64. It returns 0 when p is not in [MinRate, 1).
func OptimalM(n uint64, p float64) uint64 {
	if !validRate(p) {
		return 0
	}
	return ceilBits(float64(max(n, 1)) * -math.Log(p) / (math.Ln2 * math.Ln2))
}

// ceilBits rounds x up to a whole number of bits, saturating at
// math.MaxUint64 (a float64 at or above 2^64 does not convert).
func ceilBits(x float64) uint64 {
	if !(x < 1<<64) {
		return math.MaxUint64
	}
	return uint64(math.Ceil(x))
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
// m-bit filter with k probes after n distinct items were added, its k
// positions independent and uniform (hash id HashXXH3Remix): the chance
// E[(X/m)^k] that an absent key's k probes all find a set bit, where X is
// the number of bits the n·k probes of the items set. The textbook
// (1 − (1 − 1/m)^(kn))^k is (E[X]/m)^k, which is lower: by about
// k(k−1)/2 · Var(X)/E[X]^2 relative, 13% at m = 192, n = 10, k = 13, and
// 0.02% at m = 958,506, n = 100,000, k = 7. Where that term is below 1e-4
// the result is the textbook rate times (1 + that term), within 1e-8 of the
// exact value; otherwise (small m, large k) it is computed exactly from the
// distribution of the bits set (exactRate), which takes up to a few
// milliseconds.
func FalsePositiveRate(m, n uint64, k uint32) float64 {
	if m == 0 || k == 0 {
		return 1
	}
	if n == 0 {
		return 0
	}
	if m == 1 {
		return 1
	}
	mf, kf := float64(m), float64(k)
	t := kf * float64(n) // probes thrown: n·k
	// a = (1-1/m)^t, the chance that a given bit is still 0, computed as
	// exp(t log1p(-1/m)) to stay exact for huge m.
	la := t * math.Log1p(-1/mf)
	a := math.Exp(la)
	fill := -math.Expm1(la)
	base := math.Pow(fill, kf)
	if k == 1 || a == 0 {
		return base // k = 1: E[X/m] exactly; a = 0: every bit set
	}
	// Var(X) = m(a − b) + m²(b − a²) with b = (1−2/m)^t, the chance two
	// given bits are 0; b − a² = a²·((1 − 1/(m−1)²)^t − 1), written so as
	// not to cancel.
	bMinusA2 := a * a * math.Expm1(t*math.Log1p(-1/((mf-1)*(mf-1))))
	varX := mf*(a*fill-bMinusA2) + mf*mf*bMinusA2
	g := kf * (kf - 1) / 2 * varX / (mf * fill * mf * fill)
	if g < 1e-4 {
		return base * (1 + g)
	}
	return exactRate(m, n, k)
}

// exactRate returns E[(X/m)^k] for the classic layout, exactly: the sum
// over j of P(an absent key's k probes fall on j distinct bits) · P(j given
// bits are all set after n·k probes). The second factor comes from the
// number S of set bits among min(k, m) given ones, a chain that gains a bit
// with probability (k' − S)/m per probe, raised to the n·k-th power by
// squaring; every term is a sum of products of probabilities, so nothing
// cancels, unlike the inclusion–exclusion formula of Christensen, Roginsky
// and Jimeno ("A new analysis of the false positive rate of a Bloom
// filter", 2010). It costs O(min(nk², k³ log(nk))).
func exactRate(m, n uint64, k uint32) float64 {
	mf := float64(m)
	kk := int(min(uint64(k), m)) // distinct bits k probes can hit
	t := float64(n) * float64(k)
	if t > 1000*mf {
		// Every bit is set but for a chance below e^-1000.
		return 1
	}
	// Transition matrix of S, upper bidiagonal, kept as a full upper
	// triangle for the powers.
	size := kk + 1
	q := make([]float64, size*size)
	for s := 0; s <= kk; s++ {
		up := float64(kk-s) / mf
		q[s*size+s] = 1 - up
		if s < kk {
			q[s*size+s+1] = up
		}
	}
	v := make([]float64, size) // distribution of S
	v[0] = 1
	tmp := make([]float64, size*size)
	vt := make([]float64, size)
	if t*float64(size) <= math.Log2(t+1)*float64(size*size*size)/3 {
		// Few probes (a small n): one at a time is cheaper than squaring.
		for range uint64(t) {
			for s := size - 1; s >= 1; s-- {
				v[s] = v[s]*q[s*size+s] + v[s-1]*q[(s-1)*size+s]
			}
			v[0] *= q[0]
		}
		t = 0
	}
	for steps := uint64(t); steps > 0; steps >>= 1 {
		if steps&1 == 1 {
			for j := range vt {
				var sum float64
				for i := 0; i <= j; i++ {
					sum += v[i] * q[i*size+j]
				}
				vt[j] = sum
			}
			v, vt = vt, v
		}
		if steps > 1 {
			for i := 0; i < size; i++ {
				for j := i; j < size; j++ {
					var sum float64
					for l := i; l <= j; l++ {
						sum += q[i*size+l] * q[l*size+j]
					}
					tmp[i*size+j] = sum
				}
			}
			q, tmp = tmp, q
		}
	}
	// binom[a][b] = C(a, b) for a, b ≤ kk.
	binom := make([][]float64, kk+1)
	for a := range binom {
		binom[a] = make([]float64, a+1)
		binom[a][0], binom[a][a] = 1, 1
		for b := 1; b < a; b++ {
			binom[a][b] = binom[a-1][b-1] + binom[a-1][b]
		}
	}
	// w[j]: the chance that k probes fall on exactly j distinct bits.
	w := make([]float64, kk+1)
	w[0] = 1
	for probe := 1; probe <= int(k); probe++ {
		for j := min(probe, kk); j >= 1; j-- {
			w[j] = w[j]*float64(j)/mf + w[j-1]*(mf-float64(j-1))/mf
		}
		w[0] = 0
	}
	var rate float64
	for j := 1; j <= kk; j++ {
		// P(j given bits set) = Σ_s P(S = s) · C(s, j) / C(kk, j).
		var all float64
		for s := j; s <= kk; s++ {
			all += v[s] * binom[s][j]
		}
		rate += w[j] * all / binom[kk][j]
	}
	return min(rate, 1)
}

// Estimate returns the parameters of a classic filter for n items at
// false-positive rate p: the textbook M = OptimalM(n, p) and K =
// OptimalK(M, n) — for n = 100,000 and p = 0.01 that is M = 958,506 bits and
// K = 7 — unless that misses p by more than 1%, which rounding k to a whole
// number does for small n, for p above about 1/3 (where the best k is near
// 1) and below 2^−64 (where it is above MaxK). M is then the fewest bits
// that, with the best whole k from 1 to MaxK, give a textbook rate of at
// most 1.01·p. For small filters (a few thousand bits, where the textbook
// rate reads low), bits are then added until FalsePositiveRate, the true
// rate, is at most 1.01·p: for n = 10 and p = 1e-7, M = 341 and K = 22
// rather than 336 and 23. So FalsePositiveRate(M, n, K) ≤ 1.01·p for every
// n and p. Hash is HashXXH3Remix, for which that rate holds. M saturates at
// math.MaxUint64 (New then reports it above MaxBits); M and K are 0 when p
// is not in [MinRate, 1).
func Estimate(n uint64, p float64) Params {
	if !validRate(p) {
		return Params{N: n, P: p}
	}
	m := OptimalM(n, p)
	k := OptimalK(m, n)
	nf := float64(max(n, 1))
	// The fewest bits for a rate within 1% of p, over every whole k: a
	// minimum of functions that all grow with n and fall with p, so that
	// max(m, exact) does too.
	target := min(1.01*p, p+(1-p)/2)
	var exact uint64
	var exactK uint32
	for j := uint32(1); j <= MaxK; j++ {
		if b := minBits(nf, j, target); exact == 0 || b < exact {
			exact, exactK = b, j
		}
	}
	if exact > m {
		m = exact
	}
	// Of the textbook k and the one that achieved exact, keep the one with
	// the lower rate at m (at most 1.01·p).
	if FalsePositiveRate(m, n, exactK) < FalsePositiveRate(m, n, k) {
		k = exactK
	}
	// minBits inverts the textbook formula, which reads low for small m
	// (FalsePositiveRate): there, add bits until the true rate meets the
	// target.
	if FalsePositiveRate(m, max(n, 1), k) > target {
		m, k = fitBits(max(n, 1), m, k, target)
	}
	return Params{M: m, K: k, N: n, P: p, Hash: HashXXH3Remix}
}

// fitBits returns the fewest bits, at least m, for which FalsePositiveRate
// at n items is at most target, with k or a neighbour of it (the fewer
// probes on a tie), and that k.
func fitBits(n, m uint64, k uint32, target float64) (uint64, uint32) {
	bestM, bestK := uint64(0), k
	for kk := max(k, 2) - 1; kk <= min(k+1, MaxK); kk++ {
		ok := func(b uint64) bool { return FalsePositiveRate(b, n, kk) <= target }
		lo, hi := m, m
		for !ok(hi) {
			if hi >= math.MaxUint64/2 {
				hi = 0
				break
			}
			lo, hi = hi+1, 2*hi
		}
		if hi == 0 {
			continue
		}
		for lo < hi {
			mid := lo + (hi-lo)/2
			if ok(mid) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if bestM == 0 || hi < bestM {
			bestM, bestK = hi, kk
		}
	}
	if bestM == 0 {
		return math.MaxUint64, k
	}
	return bestM, bestK
}

// minBits returns the fewest bits m for which FalsePositiveRate(m, n, k)
// ≤ p: (1 − (1 − 1/m)^(kn))^k ≤ p solved for m.
func minBits(n float64, k uint32, p float64) uint64 {
	kf := float64(k)
	l := math.Log1p(-math.Pow(p, 1/kf)) // log(1 − p^(1/k))
	return ceilBits(1 / -math.Expm1(l/(kf*n)))
}

// BlockBits is the size of one block of the blocked layout: one 64-byte
// cache line.
const BlockBits = bitcount.BlockBits

// BlockedFalsePositiveRate returns the expected false-positive rate of a
// blocked filter of m bits (m/512 blocks) with k probes per key after n
// distinct items were added. An absent key tests present when its k probes
// all hit set bits of its block. A block that holds j keys has had jk
// probes thrown at its 512 bits, which leave X of them set, so its rate is
// h_k(j) = E[(X/512)^k] — the mean of fill^k, not (mean fill)^k, which is
// lower and made earlier versions of this model read 1–4% low. The number
// of keys in a block is Binomial(n, 1/blocks), so the rate is
//
//	sum over j of Binomial(j; n, 1/blocks) · h_k(j)
//
// with h_k(j) from the exact distribution of X (blockRates). It is higher
// than FalsePositiveRate(m, n, k). It returns 1 when m < 512 or k is 0.
func BlockedFalsePositiveRate(m, n uint64, k uint32) float64 {
	blocks := m / BlockBits
	if blocks == 0 || k == 0 {
		return 1
	}
	if n == 0 {
		return 0
	}
	h := blockRates(min(k, MaxK))
	if blocks == 1 {
		return rateAt(h, n)
	}
	// Sum the binomial terms outward from the mode, by the ratio of
	// consecutive terms, until they stop contributing; j is an integer so
	// the loops always end.
	q := 1 / float64(blocks)
	nf := float64(n)
	if lambda := nf * q; lambda > float64(len(h))+40*math.Sqrt(lambda)+40 {
		// Practically every block holds more keys than the table: each of
		// them answers "present".
		return 1
	}
	mode := uint64(math.Floor((nf + 1) * q))
	mode = min(mode, n)
	logMode := logBinomialPMF(n, mode, q)
	ratio := q / (1 - q) // term(j+1)/term(j) = (n-j)/(j+1) · ratio
	sum := 0.0
	t := math.Exp(logMode)
	for j := mode; ; j-- {
		sum += t * rateAt(h, j)
		if j == 0 || (t < 1e-18*sum && j+20 < mode) {
			break
		}
		t *= float64(j) / (float64(n-j+1) * ratio)
	}
	t = math.Exp(logMode)
	for j := mode + 1; j <= n; j++ {
		t *= float64(n-j+1) / float64(j) * ratio
		sum += t * rateAt(h, j)
		if t < 1e-18*sum && j > mode+20 {
			break
		}
	}
	return min(sum, 1)
}

// logBinomialPMF returns log P(J = j) for J ~ Binomial(n, q).
func logBinomialPMF(n, j uint64, q float64) float64 {
	// log C(n, j) = sum over i < j of log((n-i)/(j-i)): j is small (keys
	// in one block), so the sum is short and exact for any n.
	var lc float64
	for i := uint64(0); i < j; i++ {
		lc += math.Log(float64(n-i) / float64(j-i))
	}
	return lc + float64(j)*math.Log(q) + float64(n-j)*math.Log1p(-q)
}

// rateAt returns h_k(j) from a table of blockRates, 1 beyond its end.
func rateAt(h []float64, j uint64) float64 {
	if j < uint64(len(h)) {
		return h[j]
	}
	return 1
}

// blockThrows bounds the probes per block the exact block model tabulates:
// a block with more than blockThrows/k keys is counted as answering
// "present" always, which overstates the rate (safe for sizing) by less
// than k·e^-16 for that block. Filters sized by EstimateBlocked have about
// 355 probes per block (half the bits set), so the table reaches far past
// any block that matters.
const blockThrows = 8192

var (
	blockRatesOnce  sync.Once
	blockRatesTable [MaxK + 1][]float64
)

// blockRates returns h_k(j) = E[(X/512)^k] for j = 0, 1, … while jk ≤
// blockThrows, where X is the number of bits set after jk probes thrown
// uniformly at a 512-bit block: the chance that a new key's k probes all
// hit set bits of a block that holds j keys. The distribution of X is
// computed exactly, throw by throw (X grows by one with probability
// (512 − X)/512), once for all k: about 4 million steps, 20 ms.
func blockRates(k uint32) []float64 {
	blockRatesOnce.Do(func() {
		var pow [MaxK + 1][BlockBits + 1]float64 // (x/512)^k
		for k := 1; k <= MaxK; k++ {
			for x := range BlockBits + 1 {
				pow[k][x] = math.Pow(float64(x)/BlockBits, float64(k))
			}
		}
		for k := 1; k <= MaxK; k++ {
			blockRatesTable[k] = make([]float64, 1, blockThrows/k+1) // h_k(0) = 0
		}
		dist := make([]float64, BlockBits+1) // P(X = x) after t throws
		dist[0] = 1
		lo := 0 // dist[x] is 0 below lo
		for t := 1; t <= blockThrows; t++ {
			// X can be at most t: update only what is reachable.
			top := min(t, BlockBits)
			for x := top; x >= max(lo, 1); x-- {
				dist[x] = dist[x]*float64(x)/BlockBits + dist[x-1]*float64(BlockBits-x+1)/BlockBits
			}
			dist[0] = 0
			// The low tail shrinks geometrically towards subnormal numbers,
			// on which every multiplication is a hundred times slower: a
			// chance below 1e-300 weighs nothing in any rate (the smallest
			// value tabulated is about 1e-59), so it is 0 from there on.
			for lo < top && dist[lo] < 1e-300 {
				dist[lo] = 0
				lo++
			}
			for k := 1; k <= MaxK; k++ {
				if t%k != 0 {
					continue
				}
				var e float64
				for x := max(lo, 1); x <= top; x++ {
					e += dist[x] * pow[k][x]
				}
				blockRatesTable[k] = append(blockRatesTable[k], e)
			}
		}
	})
	return blockRatesTable[k]
}

// EstimateBlocked returns the parameters of a blocked filter for n items at
// false-positive rate p. Blocking costs bits: it searches every k for the
// fewest blocks whose BlockedFalsePositiveRate at n items is at most p, and
// returns the smallest such filter (the fewer probes on a tie). The blocked
// layout needs about 3.5% more bits than the classic one at p = 1%, 8% more
// at 0.1% and 15% more at 0.01% (docs/sizing.md has the table).
// M may exceed MaxBits (NewBlocked then reports ErrInvalidParams). M and K
// are 0 when p is not in [MinRate, 1), or when no filter of up to 2^62 bits
// meets p for n items. Hash is HashXXH3x64, the blocked layout's newest id
// (the rate is the same for every blocked id).
func EstimateBlocked(n uint64, p float64) Params {
	if !validRate(p) {
		return Params{N: n, P: p}
	}
	nn := max(n, 1)
	// The search goes past MaxBits, so that a filter too large for this
	// platform is reported by its size (NewBlockedFromParams says it is
	// above MaxBits), not as impossible.
	const maxBlocks = 1 << 53
	// The blocked layout never needs fewer bits than the classic one.
	lo0 := max(1, min(OptimalM(nn, p)/BlockBits, maxBlocks))
	best := Params{N: n, P: p, Hash: HashXXH3x64}
	var bestBlocks uint64
	for k := uint32(1); k <= MaxK; k++ {
		ok := func(blocks uint64) bool { return BlockedFalsePositiveRate(blocks*BlockBits, nn, k) <= p }
		// Find a size that meets p by doubling, up to the best so far or
		// the limit; the rate falls as blocks are added.
		limit := uint64(maxBlocks)
		if bestBlocks != 0 {
			limit = bestBlocks
		}
		lo, hi := lo0, lo0
		found := false
		for {
			if found = ok(hi); found || hi >= limit {
				break
			}
			lo, hi = hi+1, min(2*hi, limit)
		}
		if !found {
			continue
		}
		for lo < hi {
			mid := lo + (hi-lo)/2
			if ok(mid) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if bestBlocks == 0 || hi < bestBlocks {
			bestBlocks = hi
			best.M, best.K = hi*BlockBits, k
		}
	}
	return best
}

// validate reports whether p describes a buildable filter; blocked filters
// also need M to be a whole number of blocks. It returns p with its hash id
// filled in when it was 0 (see Params.Hash).
func (p Params) validate(blocked bool) (Params, error) {
	switch {
	case p.Hash == 0 && blocked:
		p.Hash = HashXXH3x64
	case p.Hash == 0:
		p.Hash = HashXXH3Remix
	case blocked:
		if p.Hash != HashXXH3 && p.Hash != HashXXH3x64 {
			return p, fmt.Errorf("%w: hash id %d, the blocked layout has %d and %d", ErrInvalidParams, p.Hash, HashXXH3, HashXXH3x64)
		}
	case p.Hash != HashXXH3 && p.Hash != HashXXH3Remix:
		return p, fmt.Errorf("%w: hash id %d, want %d or %d", ErrInvalidParams, p.Hash, HashXXH3, HashXXH3Remix)
	}
	return p, p.check(blocked)
}

func (p Params) check(blocked bool) error {
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
	if p > 0 && p < MinRate {
		return fmt.Errorf("%w: false-positive rate %v is below the smallest, MinRate = %g", ErrInvalidParams, p, float64(MinRate))
	}
	if !validRate(p) {
		return fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalidParams, p)
	}
	return nil
}
