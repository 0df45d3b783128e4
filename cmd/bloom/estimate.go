package main

import (
	"math"

	"github.com/bloomkit/bloomkit/bloom"
)

// This file decides when a filter holds "more than planned". The number of
// distinct keys in a classic or blocked filter is estimated from the bits
// set, and that estimate wanders around the truth: a filter built from
// exactly N keys reads a little above N about half the time. Calling that
// "more than planned" is a false alarm, so the estimate must exceed N by
// more than its statistical noise first.

// noiseSigmas is how many standard deviations of the estimate above N count
// as overfilled: a false alarm then comes about once in 30,000 filters.
const noiseSigmas = 4

// estimateSD is the standard deviation of the key count estimated from the
// bits set of a filter of m bits and k probes holding about n keys. For the
// classic layout: the bits set X have variance
// m·e^(-a)·(1 - (1+a)·e^(-a)) with a = kn/m (occupancy of m bins by kn
// balls), and the estimate n = -(m/k)·ln(1 - X/m) moves by (m/k)/(m - X)
// per bit. In the blocked layout a key's k bits fall in one block, so bits
// come in clumps and the variance is larger; sqrt(k) bounds the difference.
func estimateSD(m uint64, k uint32, n float64, blocked bool) float64 {
	if m == 0 || k == 0 {
		return 0
	}
	mf, kf := float64(m), float64(k)
	a := kf * n / mf
	e := math.Exp(-a)
	varX := mf * e * (1 - (1+a)*e)
	if varX < 1 {
		varX = 1 // at least one bit of uncertainty
	}
	free := mf * e // expected bits still clear
	if free < 1 {
		free = 1
	}
	sd := math.Sqrt(varX) * (mf / kf) / free
	if blocked {
		sd *= math.Sqrt(kf)
	}
	return sd
}

// overPlanned reports whether an estimated count clearly exceeds the
// planned n for a filter of the given parameters, beyond the noise of the
// estimate. Exact counts (exact = true) need no margin.
func overPlanned(est, planned uint64, ps bloom.Params, blocked, exact bool) bool {
	if planned == 0 || est <= planned {
		return false
	}
	if exact {
		return true
	}
	return float64(est) > float64(planned)+noiseSigmas*estimateSD(ps.M, ps.K, float64(planned), blocked)
}

// saturationBound is the largest count the bits of a filter can still
// tell: the estimate with one bit clear. A filter with every bit set holds
// more than this, by an unknown amount.
func saturationBound(m uint64, k uint32) uint64 {
	if m == 0 || k == 0 {
		return 0
	}
	return uint64(float64(m) / float64(k) * math.Log(float64(m)))
}
