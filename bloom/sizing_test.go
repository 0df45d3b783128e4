package bloom

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/zeebo/xxh3"
)

func TestTextbookSizing(t *testing.T) {
	p := Estimate(100_000, 0.01)
	if p.M != 958_506 || p.K != 7 {
		t.Errorf("Estimate(100000, 0.01) = m %d k %d, want m 958506 k 7", p.M, p.K)
	}
	p = Estimate(1_000_000, 0.01)
	if p.M < 9_580_000 || p.M > 9_590_000 || p.K != 7 {
		t.Errorf("Estimate(1e6, 0.01) = m %d k %d, want about 9.585 million bits and k 7", p.M, p.K)
	}
	if mib := float64(p.M) / 8 / (1 << 20); math.Abs(mib-1.14) > 0.005 {
		t.Errorf("1e6 items at 1%% take %.3f MiB, want 1.14", mib)
	}
	if r := FalsePositiveRate(20_000_000, 1_000_000, 10); math.Abs(r-0.0000889)/0.0000889 > 0.005 {
		t.Errorf("FalsePositiveRate(m=20n, k=10) = %g, want about 0.0000889", r)
	}
	if mib := float64(OptimalM(100_000_000, 0.01)) / 8 / (1 << 20); math.Abs(mib-114.3) > 0.1 {
		t.Errorf("100 million URLs at 1%% take %.2f MiB, want about 114", mib)
	}
}

func TestEstimateMeetsRate(t *testing.T) {
	for _, n := range []uint64{1, 10, 1000, 1_000_000, 1_000_000_000} {
		for _, p := range []float64{0.5, 0.1, 0.01, 0.001, 1e-4, 1e-6} {
			e := Estimate(n, p)
			// k is rounded to a whole number, which can cost up to ~1%.
			if r := FalsePositiveRate(e.M, n, e.K); r > p*1.01 && n >= 1000 {
				t.Errorf("classic n=%d p=%g: m=%d k=%d gives rate %g", n, p, e.M, e.K, r)
			}
			b := EstimateBlocked(n, p)
			if b.M == 0 && Estimate(n, p).M > MaxBits {
				continue // too large for this platform
			}
			if b.M%BlockBits != 0 || b.K == 0 {
				t.Fatalf("blocked n=%d p=%g: m=%d k=%d", n, p, b.M, b.K)
			}
			if r := BlockedFalsePositiveRate(b.M, n, b.K); r > p {
				t.Errorf("blocked n=%d p=%g: m=%d k=%d gives rate %g", n, p, b.M, b.K, r)
			}
			// One block fewer must miss the target, or the estimate wastes bits.
			if b.M > BlockBits {
				if r := BlockedFalsePositiveRate(b.M-BlockBits, n, b.K); r <= p && n >= 1000 {
					t.Errorf("blocked n=%d p=%g: one block fewer still gives %g", n, p, r)
				}
			}
			if n >= 1000 && b.M < e.M {
				t.Errorf("blocked n=%d p=%g needs %d bits, fewer than classic %d", n, p, b.M, e.M)
			}
		}
	}
}

func TestBlockedRateFormula(t *testing.T) {
	// The blocked layout never beats the classic one at the same m, n, k.
	for _, k := range []uint32{1, 4, 8, 16} {
		for _, n := range []uint64{1 << 10, 1 << 16, 1 << 20} {
			m := uint64(1 << 24)
			if c, b := FalsePositiveRate(m, n, k), BlockedFalsePositiveRate(m, n, k); b < c*(1-1e-6) {
				t.Errorf("m=%d n=%d k=%d: blocked %g below classic %g", m, n, k, b, c)
			}
		}
	}
	// One block holds every key: with one probe, n keys leave a bit unset
	// with probability (511/512)^n, exactly.
	for _, n := range []uint64{1, 10, 1000} {
		want := -math.Expm1(float64(n) * math.Log1p(-1.0/BlockBits))
		if got := BlockedFalsePositiveRate(BlockBits, n, 1); math.Abs(got-want) > 1e-12 {
			t.Errorf("one block, %d keys: %g, want %g", n, got, want)
		}
	}
	// Two blocks, one key, one probe: the key's block has one bit set.
	if got, want := BlockedFalsePositiveRate(2*BlockBits, 1, 1), 0.5/BlockBits; math.Abs(got-want) > 1e-15 {
		t.Errorf("two blocks, one key: %g, want %g", got, want)
	}
	if BlockedFalsePositiveRate(BlockBits, 0, 3) != 0 {
		t.Error("empty blocked filter has a nonzero rate")
	}
}

func TestInvalidParams(t *testing.T) {
	for _, p := range []float64{0, 1, -0.5, 2, math.NaN(), math.Inf(1)} {
		if _, err := New(1000, p); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("New(1000, %v): err = %v", p, err)
		}
		if _, err := NewBlocked(1000, p); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewBlocked(1000, %v): err = %v", p, err)
		}
	}
	for _, c := range []struct {
		m uint64
		k uint32
	}{{0, 3}, {100, 0}, {100, MaxK + 1}, {MaxBits + 1, 3}} {
		if _, err := NewFromParams(Params{M: c.m, K: c.k}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewFromParams(Params{M: %d, K: %d}): err = %v", c.m, c.k, err)
		}
		if _, err := NewBlockedFromParams(Params{M: c.m, K: c.k}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewBlockedFromParams(Params{M: %d, K: %d}): err = %v", c.m, c.k, err)
		}
	}
	if _, err := NewBlockedFromParams(Params{M: 1000, K: 3}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("blocked m not a multiple of 512: err = %v", err)
	}
}

// TestSizingEdges: every p in (0, 1) and every n give a filter that meets
// p, or ErrInvalidParams; nothing hangs, overflows or panics. Each case
// names the defect it once had.
func TestSizingEdges(t *testing.T) {
	// k forced to 1 gave 0.990 at p = 0.9; NewBlocked(1e6, 0.99) failed
	// with "m = 0 bits". Estimate promises 1.01·p (k is whole), EstimateBlocked p.
	for _, p := range []float64{0.5, 0.6, 0.7, 0.9, 0.99, 0.999999} {
		e := Estimate(1_000_000, p)
		if r := FalsePositiveRate(e.M, 1_000_000, e.K); r > 1.01*p {
			t.Errorf("Estimate(1e6, %g) = m %d k %d: rate %g", p, e.M, e.K, r)
		}
		f, err := NewBlocked(1_000_000, p)
		if err != nil {
			t.Errorf("NewBlocked(1e6, %g): %v", p, err)
			continue
		}
		if r := BlockedFalsePositiveRate(f.Params().M, 1_000_000, f.Params().K); r > p {
			t.Errorf("NewBlocked(1e6, %g): rate %g", p, r)
		}
	}
	// Below 2^-64 the best k is above MaxK: the rate must still be met
	// (within 1%).
	for _, p := range []float64{1e-20, 1e-30, 1e-100} {
		e := Estimate(1000, p)
		if r := FalsePositiveRate(e.M, 1000, e.K); e.K != MaxK || r > 1.01*p {
			t.Errorf("Estimate(1000, %g) = m %d k %d: rate %g", p, e.M, e.K, r)
		}
	}
	// OptimalM(2^62, 0.01) returned 2^63: a float above 2^64 converted.
	if m := OptimalM(1<<62, 0.01); m != math.MaxUint64 {
		t.Errorf("OptimalM(2^62, 0.01) = %d, want math.MaxUint64 (saturated)", m)
	}
	// BlockedFalsePositiveRate(512, 2^53, 7) never returned: j-- on a float
	// at 2^53 does not change it.
	done := make(chan float64, 1)
	go func() { done <- BlockedFalsePositiveRate(512, 1<<53, 7) }()
	select {
	case r := <-done:
		if r != 1 {
			t.Errorf("one block of 2^53 keys: rate %g, want 1", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("BlockedFalsePositiveRate(512, 2^53, 7) hangs")
	}
	// Sizes beyond the platform's limit are errors, not panics (on 386,
	// NewWithParams(1<<36, 3), now NewFromParams, panicked in makeslice).
	for _, m := range []uint64{MaxBits + 1, 1 << 44, math.MaxUint64} {
		if _, err := NewFromParams(Params{M: m, K: 3}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewFromParams(Params{M: %d, K: 3}): err = %v", m, err)
		}
		if _, err := NewBlockedFromParams(Params{M: m, K: 3}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewBlockedFromParams(Params{M: %d, K: 3}): err = %v", m, err)
		}
	}
	if MaxBits < 1<<36 {
		if _, err := NewFromParams(Params{M: 1 << 36, K: 3}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewFromParams(Params{M: 2^36, K: 3}) on a 32-bit platform: err = %v", err)
		}
	}
	// Every n, every p: a filter that fits, or ErrInvalidParams.
	for _, n := range []uint64{0, 1, 1000, 1 << 40, 1 << 62, math.MaxUint64} {
		for _, p := range []float64{math.SmallestNonzeroFloat64, 1e-300, 1e-20, 1e-6, 0.01, 0.5, 0.9, math.Nextafter(1, 0)} {
			for _, l := range []struct {
				name string
				p    Params
				rate func(m, n uint64, k uint32) float64
			}{{"classic", Estimate(n, p), FalsePositiveRate}, {"blocked", EstimateBlocked(n, p), BlockedFalsePositiveRate}} {
				e := l.p
				if e.M == 0 || e.M > MaxBits {
					// Must be refused, with ErrInvalidParams.
					var err error
					if l.name == "classic" {
						_, err = New(n, p)
					} else {
						_, err = NewBlocked(n, p)
					}
					if !errors.Is(err, ErrInvalidParams) {
						t.Errorf("%s n=%d p=%g: m=%d, err = %v", l.name, n, p, e.M, err)
					}
					continue
				}
				if r := l.rate(e.M, n, e.K); r > p*1.01 {
					t.Errorf("%s n=%d p=%g: m=%d k=%d gives rate %g", l.name, n, p, e.M, e.K, r)
				}
			}
		}
	}
}

func TestBlockSalts(t *testing.T) {
	// The salts are part of the file format: pin a few of them.
	want := map[int]uint64{0: 0xf49375d473ce9f29, 1: 0xe35d09253959c8d5, MaxK - 1: 0xc45dbbb1373db0e7}
	for i, w := range want {
		if blockSalts[i] != w {
			t.Errorf("blockSalts[%d] = %#x, want %#x", i, blockSalts[i], w)
		}
	}
	for i, s := range blockSalts {
		if s&1 == 0 {
			t.Errorf("blockSalts[%d] is even", i)
		}
	}
}

func TestSeedZeroSameHash(t *testing.T) {
	// hashBytes takes a faster path for seed 0; it must be the same function.
	for n := range 300 {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(i*7 + n)
		}
		h := xxh3.Hash128Seed(key, 0)
		if lo, hi := hashBytes(key, 0); lo != h.Lo || hi != h.Hi {
			t.Fatalf("len %d: seed-0 fast path differs from Hash128Seed", n)
		}
		if lo, hi := hashString(string(key), 0); lo != h.Lo || hi != h.Hi {
			t.Fatalf("len %d: string seed-0 fast path differs", n)
		}
		h = xxh3.Hash128Seed(key, 99)
		if lo, hi := hashBytes(key, 99); lo != h.Lo || hi != h.Hi {
			t.Fatalf("len %d: seeded hash differs", n)
		}
	}
}

// BenchmarkBlockRatesTable is the first EstimateBlocked of a process: the
// exact block model's table, built once. Every `bloom build --type blocked`
// and every server that sizes a blocked filter pays it. It was 456 ms while
// the model's low tail decayed through subnormal numbers, and is 15 ms now
// that it stops at 1e-300 (both on the same 2-core machine).
func BenchmarkBlockRatesTable(b *testing.B) {
	for range b.N {
		blockRatesOnce = sync.Once{}
		blockRates(1)
	}
}
