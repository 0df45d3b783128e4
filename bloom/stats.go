package bloom

import (
	"math"

	"github.com/bloomkit/bloomkit/internal/bitcount"
)

// Stats is a filter's size and fill, as the Stats method of every type in
// this package reports it. Computing it reads every bit once, which costs
// about as much as copying the filter: ask for it to report or decide, not
// once per key.
type Stats struct {
	// Bits is the filter's size: its bits (Filter, Blocked), its counters
	// (Counting), or the total over its links (Scalable) or generations
	// (Window).
	Bits uint64
	// BitsSet is how many of them are 1: for Counting, how many counters
	// are above zero; for Window, only in the generations that have not
	// expired.
	BitsSet uint64
	// FillRatio is the fraction of the bits that are 1 (for Window, of the
	// bits of the generations that have not expired).
	FillRatio float64
	// ApproxCount estimates how many distinct keys were added, from the
	// bits set (Swamidass and Baldi: after n keys, m(1-(1-1/m)^(kn)) bits
	// are expected to be set, solved for n; the blocked layout's own
	// formula for Blocked): at a filter's planned capacity and a 1% rate,
	// within about 2% of the truth at 1,000 keys, 0.6% at 10,000 and 0.2%
	// at 100,000 (the error shrinks as keys grow); math.MaxUint64 once
	// every bit is set. A
	// Scalable counts its new keys exactly (Len). A Window counts the keys
	// of the generations that have not expired, from the OR of their bits,
	// so a key added in several of them counts once.
	ApproxCount uint64
	// EstimatedFPR is the false-positive rate the filter has now: the
	// chance that an absent key tests present, from how full the bits are
	// (FillRatio^k for the classic layout; the mean over blocks of their
	// fill^k for the blocked one; 1 − Π(1 − rate of each part) for Scalable
	// and Window).
	EstimatedFPR float64
	// Capacity is the number of distinct keys the filter is sized for at
	// its rate: Params().N, or for Scalable the total of its links'
	// capacities (the next key past it adds a link), for Window Items.
	Capacity uint64
	// Saturated is, for Counting, the number of counters stuck at
	// SaturatedCount: keys that share one can no longer be fully removed. A
	// filter used within its planned capacity practically never has any.
	Saturated uint64
	// Parts are the parameters of the blocked filters a Scalable (its links,
	// oldest first; N is a link's capacity and P the rate it was sized for)
	// or a Window (its generations) is made of; nil for the other types.
	Parts []Params
}

// classicStats is the Stats of a classic layout of parameters p with set of
// its bits (or counters) nonzero.
func classicStats(set uint64, p Params) Stats {
	if p.M == 0 {
		return Stats{Capacity: p.N} // a zero value
	}
	fill := float64(set) / float64(p.M)
	return Stats{
		Bits:         p.M,
		BitsSet:      set,
		FillRatio:    fill,
		ApproxCount:  bitcount.Classic(set, p.M, p.K),
		EstimatedFPR: math.Pow(fill, float64(p.K)),
		Capacity:     p.N,
	}
}
