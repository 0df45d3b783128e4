package bloom

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

// decodeErrors are the errors a decoder may return on bad input.
var decodeErrors = []error{ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated, ErrTooLarge}

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	for _, e := range decodeErrors {
		if errors.Is(err, e) {
			return
		}
	}
	t.Fatalf("decode error %v is none of the documented ones", err)
}

func addSeeds(f *testing.F) {
	small, _ := NewFromParams(Params{M: 200, K: 3})
	small.AddString("seed")
	blk, _ := NewBlocked(50, 0.1)
	blk.AddString("seed")
	for _, enc := range []func() ([]byte, error){small.marshalBinary, blk.marshalBinary} {
		b, err := enc()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:headerSize])
		f.Add(resign(append([]byte(nil), b...)))
	}
	f.Add(forgedHuge()[:headerSize+64])
	f.Add([]byte(Magic))
}

// FuzzFilterDecode: no input may panic the classic decoder or make it
// allocate without bound; what decodes re-encodes to the same bytes.
func FuzzFilterDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g Filter
		if err := g.unmarshalBinary(data); err != nil {
			checkDecodeError(t, err)
			return
		}
		g.TestString("probe")
		_ = g.Stats()
		again, err := g.marshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decoded filter re-encodes differently")
		}
	})
}

// FuzzBlockedDecode is FuzzFilterDecode for the blocked layout.
func FuzzBlockedDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g Blocked
		if err := g.unmarshalBinary(data); err != nil {
			checkDecodeError(t, err)
			return
		}
		g.TestString("probe")
		_ = g.Stats()
		again, err := g.marshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decoded filter re-encodes differently")
		}
	})
}

// FuzzSizing: the sizing functions return quickly for every n and p, and
// the size they give never shrinks when n grows or p falls (a blocked size
// of 0, "no filter up to MaxBits meets p", counts as infinite).
func FuzzSizing(f *testing.F) {
	f.Add(uint64(1_000_000), 0.01, uint64(1), 0.5)
	f.Add(uint64(1_000_000), 0.9, uint64(1000), 0.99)
	f.Add(uint64(1), 1e-20, uint64(1), 0.999)
	f.Add(uint64(1<<62), 0.01, uint64(1<<62), 0.1)
	f.Add(uint64(0), 0.5, uint64(0), 0.9999)
	f.Add(uint64(100), 0x1p-64, uint64(3), 0.5)
	f.Fuzz(func(t *testing.T, n uint64, p float64, dn uint64, shrink float64) {
		if !(shrink > 0 && shrink <= 1) {
			shrink = 0.5
		}
		n2 := n + dn
		if n2 < n {
			n2 = math.MaxUint64
		}
		p2 := p * shrink
		start := time.Now()
		e, e2, e3 := Estimate(n, p), Estimate(n2, p), Estimate(n, p2)
		b, b2, b3 := EstimateBlocked(n, p), EstimateBlocked(n2, p), EstimateBlocked(n, p2)
		m, m2, m3 := OptimalM(n, p), OptimalM(n2, p), OptimalM(n, p2)
		// The bound is for runaway loops (seconds to hours), not a speed
		// claim: the race detector makes this code 10-20 times slower, and
		// a loaded machine slower again (Estimate(100, 2^-64): 0.1 s plain,
		// 7 s under -race at load average 18).
		limit := 2 * time.Second
		if raceEnabled {
			limit = 60 * time.Second
		}
		if d := time.Since(start); d > limit {
			t.Fatalf("sizing n=%d p=%g took %v", n, p, d)
		}
		if !validRate(p) {
			if e.M != 0 || b.M != 0 || m != 0 {
				t.Fatalf("rate %g not in [MinRate, 1) gave m = %d, %d, %d", p, e.M, b.M, m)
			}
			return
		}
		inf := func(m uint64) uint64 {
			if m == 0 {
				return math.MaxUint64
			}
			return m
		}
		if e2.M < e.M || m2 < m || inf(b2.M) < inf(b.M) {
			t.Fatalf("p=%g: n=%d gives m=%d/%d/%d, more keys n=%d give %d/%d/%d", p, n, e.M, m, b.M, n2, e2.M, m2, b2.M)
		}
		if validRate(p2) && (e3.M < e.M || m3 < m || inf(b3.M) < inf(b.M)) {
			t.Fatalf("n=%d: p=%g gives m=%d/%d/%d, lower p=%g gives %d/%d/%d", n, p, e.M, m, b.M, p2, e3.M, m3, b3.M)
		}
		if b.M != 0 && (b.M%BlockBits != 0 || b.K == 0 || b.K > MaxK || BlockedFalsePositiveRate(b.M, n, b.K) > p) {
			t.Fatalf("EstimateBlocked(%d, %g) = %+v", n, p, b)
		}
		if e.M != 0 && e.K >= 1 && e.K <= MaxK && e.M <= MaxBits {
			if r := FalsePositiveRate(e.M, n, e.K); r > 1.01*p*(1+1e-9) {
				t.Fatalf("Estimate(%d, %g) = %+v: rate %g", n, p, e, r)
			}
		}
	})
}
