package generation_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/generation"
)

func TestLength(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		g      int
		want   int64
	}{{time.Hour, 4, int64(15 * time.Minute)}, {10, 3, 4}, {9, 3, 3}, {1, 1, 1}, {1, 64, 1}} {
		if got := generation.Length(c.period, c.g); got != c.want {
			t.Errorf("Length(%d, %d) = %d, want %d", c.period, c.g, got, c.want)
		}
	}
}

func TestAtRoundsDown(t *testing.T) {
	for _, c := range []struct{ ns, d, want int64 }{
		{0, 10, 0}, {9, 10, 0}, {10, 10, 1}, {-1, 10, -1}, {-10, 10, -1}, {-11, 10, -2},
	} {
		if got := generation.At(time.Unix(0, c.ns), c.d); got != c.want {
			t.Errorf("At(%d ns, %d) = %d, want %d", c.ns, c.d, got, c.want)
		}
	}
}

func TestSlot(t *testing.T) {
	for g := int64(-12); g <= 12; g++ {
		s := generation.Slot(g, 5)
		if s < 0 || s >= 5 || (g-int64(s))%5 != 0 {
			t.Errorf("Slot(%d, 5) = %d", g, s)
		}
	}
}

func TestLive(t *testing.T) {
	for _, c := range []struct {
		cur, clock     int64
		g              int
		wantLo, wantHi int64
	}{
		{10, 10, 4, 6, 10},  // the clock at the newest: all G+1
		{10, 12, 4, 8, 10},  // two generations on: two have expired
		{10, 20, 4, 16, 10}, // far on: none (lo > hi)
		{10, 3, 4, 6, 10},   // a clock behind the window forgets nothing
	} {
		lo, hi := generation.Live(c.cur, c.clock, c.g)
		if lo != c.wantLo || hi != c.wantHi {
			t.Errorf("Live(%d, %d, %d) = [%d, %d], want [%d, %d]", c.cur, c.clock, c.g, lo, hi, c.wantLo, c.wantHi)
		}
	}
}

func TestExpiring(t *testing.T) {
	for _, c := range []struct {
		cur, to        int64
		g              int
		wantLo, wantHi int64
	}{
		{10, 11, 4, 11, 11},
		{10, 13, 4, 11, 13},
		{10, 1000, 4, 996, 1000}, // at most G+1 slots, however far
	} {
		lo, hi := generation.Expiring(c.cur, c.to, c.g)
		if lo != c.wantLo || hi != c.wantHi {
			t.Errorf("Expiring(%d, %d, %d) = [%d, %d], want [%d, %d]", c.cur, c.to, c.g, lo, hi, c.wantLo, c.wantHi)
		}
	}
}

// A one-hour window in four generations, read 40 minutes after its newest
// generation began.
func Example() {
	d := generation.Length(time.Hour, 4)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cur := generation.At(start, d)
	lo, hi := generation.Live(cur, generation.At(start.Add(40*time.Minute), d), 4)
	fmt.Println(time.Duration(d), hi-lo+1, "live generations; newest in slot", generation.Slot(cur, 5))
	// Output: 15m0s 3 live generations; newest in slot 4
}
