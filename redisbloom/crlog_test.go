package redisbloom

import (
	"math"
	"testing"
)

// The bits per entry of a link are RedisBloom's to the last bit: computed
// with a correctly rounded logarithm, as the C library's. Go's math.Log(0.01)
// is one unit in the last place off, so a filter of error 0.02 (its first
// link 0.01) had a header different from RedisBloom 2.8.20's.
func TestBitsPerEntryAsRedisBloom(t *testing.T) {
	// Values read from RedisBloom 2.8.20's SCANDUMP headers and glibc's log.
	for _, c := range []struct {
		e   float64
		bpe uint64
	}{
		{0.01, 0x40232b8cc58a1688},
		{0.005, 0x40260e35b22f86e9},
		{0.001, 0x402cc153284f21cd},
		{0.0005, 0x402fa3fc14f4922e},
		{0.02, 0x402048e3d8e4a628},
		{0.015, 0x40217b76296fd9c1},
		{0.03, 0x401d319a7994d2c0},
	} {
		sz, err := SizeLink(100, c.e)
		if err != nil {
			t.Fatal(err)
		}
		if got := math.Float64bits(sz.BPE); got != c.bpe {
			t.Errorf("bits per entry at %v = %#x, want %#x (RedisBloom's)", c.e, got, c.bpe)
		}
	}
}

// logOf is within half a unit in the last place: its answer never
// differs from math.Log's by more than one unit.
func TestLogOfNearMathLog(t *testing.T) {
	for _, x := range []float64{1e-300, 1e-9, 0.1, 0.3, 0.5, 0.9999, 2, 10, 1e300} {
		got, want := logOf(x), math.Log(x)
		if d := math.Abs(got - want); d > 2*math.Abs(math.Nextafter(want, 0)-want) {
			t.Errorf("logOf(%v) = %v, math.Log %v", x, got, want)
		}
	}
}

func BenchmarkLogOfUncached(b *testing.B) {
	for i := 0; i < b.N; i++ {
		x := 0.001 + float64(i%1000)*1e-6
		logCache.Delete(math.Float64bits(x))
		logOf(x)
	}
}
