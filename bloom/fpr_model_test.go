package bloom

import (
	"math"
	"testing"
)

// occupancyRate is E[(X/m)^k] computed the slow, obvious way: the
// distribution of X, the bits set, throw by throw for all n·k probes.
func occupancyRate(m, n uint64, k uint32) float64 {
	d := make([]float64, m+1)
	d[0] = 1
	for t := uint64(1); t <= n*uint64(k); t++ {
		for x := min(t, m); x >= 1; x-- {
			d[x] = d[x]*float64(x)/float64(m) + d[x-1]*float64(m-x+1)/float64(m)
		}
		d[0] = 0
	}
	var s float64
	for x, p := range d {
		s += p * math.Pow(float64(x)/float64(m), float64(k))
	}
	return s
}

// TestFalsePositiveRateExact checks the classic model against the slow
// occupancy computation wherever that is affordable: small filters, where
// the textbook formula is 10-30% low, and the approximated path against
// the exact one at the sizes where they meet.
func TestFalsePositiveRateExact(t *testing.T) {
	statistical(t)
	for _, c := range []struct {
		m, n uint64
		k    uint32
	}{
		{192, 10, 13}, {336, 10, 23}, {288, 10, 20}, {64, 3, 13}, {336, 30, 23},
		{10, 2, 30}, {5, 1, 64}, {1000, 10, 64}, {2876, 100, 20}, {9586, 1000, 7},
		{100, 100, 1}, {100, 1, 2}, {50, 7, 3},
	} {
		want := occupancyRate(c.m, c.n, c.k)
		got := FalsePositiveRate(c.m, c.n, c.k)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("FalsePositiveRate(%d, %d, %d) = %.10g, the occupancy distribution gives %.10g", c.m, c.n, c.k, got, want)
		}
		if ex := exactRate(c.m, c.n, c.k); math.Abs(ex-want) > 1e-9*want {
			t.Errorf("exactRate(%d, %d, %d) = %.10g, want %.10g", c.m, c.n, c.k, ex, want)
		}
	}
	// Where FalsePositiveRate switches to its approximation, the two agree.
	for _, c := range []struct {
		m, n uint64
		k    uint32
	}{
		{73_000, 7_600, 7}, {200_000, 20_000, 7}, {6_000_000, 65_000, 64}, {1_000_000, 50_000, 14},
	} {
		ex, got := exactRate(c.m, c.n, c.k), FalsePositiveRate(c.m, c.n, c.k)
		if math.Abs(got-ex) > 1e-7*ex {
			t.Errorf("FalsePositiveRate(%d, %d, %d) = %.10g, exactRate %.10g", c.m, c.n, c.k, got, ex)
		}
	}
}
