// Package generation is the clock arithmetic of a sliding window of
// filters, shared by bloom.Window and the server's window keys so that both
// cut time the same way.
//
// A window of period T in G generations cuts time into generations of
// length d = ⌈T/G⌉ nanoseconds, aligned to the Unix epoch: generation g
// covers [g·d, (g+1)·d). It holds the G+1 newest generations, generation g
// in slot g mod (G+1) of a ring; the newest one, cur, takes new keys.
package generation

import "time"

// Length returns d = ⌈period/g⌉, the length of a generation in
// nanoseconds, for period > 0 and g ≥ 1.
func Length(period time.Duration, g int) int64 {
	return int64((uint64(period) + uint64(g) - 1) / uint64(g))
}

// Rate returns the false-positive rate each generation is sized for, for a
// window promising rate: rate/2, so that the G oldest live generations
// together and the newest one each add at most half of it (see
// bloom.Window).
func Rate(rate float64) float64 { return rate / 2 }

// At returns the generation that t falls in for generations of length d:
// ⌊t/d⌋, t in Unix nanoseconds (rounded down before the epoch too).
func At(t time.Time, d int64) int64 {
	ns := t.UnixNano()
	g := ns / d
	if ns%d < 0 {
		g--
	}
	return g
}

// Slot returns the slot of generation g in a ring of n slots: g mod n in
// [0, n).
func Slot(g int64, n int) int {
	r := g % int64(n)
	if r < 0 {
		r += int64(n)
	}
	return int(r)
}

// Live returns the generations [lo, hi] a read sees in a window of G
// generations whose newest is cur when the clock is in generation clock:
// the last G+1 by the clock, of those the window holds. A clock behind the
// window counts as standing at cur, so keys are never forgotten early.
func Live(cur, clock int64, g int) (lo, hi int64) {
	return max(cur, clock) - int64(g), cur
}

// Expiring returns the generations [lo, hi] whose slots a window of G
// generations must empty when it moves from cur forward to to (to > cur):
// those entering the ring, at most G+1 however far it moves.
func Expiring(cur, to int64, g int) (lo, hi int64) {
	return max(cur+1, to-int64(g)), to
}
