package bloom

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func mustCounting(t testing.TB, p Params) *Counting {
	t.Helper()
	c, err := NewCountingFromParams(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// counter returns counter i.
func (c *Counting) counter(i uint64) uint64 { return (c.words[i/16] >> (4 * (i % 16))) & 15 }

// TestCountingMatchesClassic: with the same m, k and seed, a counting filter
// answers exactly as the classic filter of the keys it holds — after adds,
// and after removing some of them (a lost deletion or a wrong probe
// position shows up here).
func TestCountingMatchesClassic(t *testing.T) {
	const n = 50_000
	p := Estimate(n, 0.01)
	p.Seed = 7
	c := mustCounting(t, p)
	all := keys("cm", 0, n)
	for _, k := range all {
		c.AddString(k)
	}
	if c.Stats().Saturated != 0 {
		t.Fatalf("%d counters saturated at the planned load", c.Stats().Saturated)
	}
	same := func(kept []string, what string) {
		t.Helper()
		f, _ := NewFromParams(p)
		batchAdd(f, kept)
		probes := append(keys("probe", 0, 100_000), all...)
		for _, k := range probes {
			if c.TestString(k) != f.TestString(k) {
				t.Fatalf("%s: Test(%q) = %v, the classic filter says %v", what, k, c.TestString(k), f.TestString(k))
			}
		}
		// Counter i is above zero exactly when bit i is set.
		if c.Stats().BitsSet != f.Stats().BitsSet {
			t.Fatalf("%s: %d counters above zero, %d bits set", what, c.Stats().BitsSet, f.Stats().BitsSet)
		}
		for i := range p.M {
			if (c.counter(i) != 0) != (f.words[i/64]>>(i%64)&1 != 0) {
				t.Fatalf("%s: counter %d is %d, bit is %d", what, i, c.counter(i), f.words[i/64]>>(i%64)&1)
			}
		}
	}
	same(all, "after adds")
	for _, k := range all[:n/2] {
		if !c.DeleteString(k) {
			t.Fatalf("Remove(%q) of an added key returned false", k)
		}
	}
	if c.Len() != n/2 {
		t.Errorf("Len = %d after %d adds and %d removes", c.Len(), n, n/2)
	}
	same(all[n/2:], "after removing half")
	for _, k := range all[n/2:] {
		c.Delete([]byte(k))
	}
	if c.Stats().BitsSet != 0 || c.Len() != 0 || c.Stats().ApproxCount != 0 {
		t.Errorf("after removing every key: %d counters above zero, Len %d", c.Stats().BitsSet, c.Len())
	}
}

// TestCountingAgainstMultiset runs random adds and removes against a
// reference multiset: a key added more often than removed always tests
// present, including with counters saturated by a filter far over capacity.
func TestCountingAgainstMultiset(t *testing.T) {
	for _, tc := range []struct {
		name     string
		m        uint64
		k        uint32
		universe int
	}{
		{"many copies", 20_000, 7, 2000}, // keys held ~50 times saturate counters
		{"overfull", 256, 4, 400},        // saturates many counters
		{"tiny", 17, 3, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.m)))
			c := mustCounting(t, Params{M: tc.m, K: tc.k, Seed: 3})
			ref := make([]int, tc.universe)
			var held uint64
			for op := range 100_000 {
				i := rng.IntN(tc.universe)
				k := key("ms", i)
				switch {
				case rng.IntN(2) == 0:
					c.AddString(k)
					ref[i]++
					held++
				case ref[i] > 0:
					if !c.DeleteString(k) {
						t.Fatalf("op %d: Remove of %q (held %d times) returned false", op, k, ref[i])
					}
					ref[i]--
					held--
				default:
					// Removing a key that was never added is only allowed when
					// it tests absent: then nothing may change.
					if !c.TestString(k) {
						before := c.Clone()
						if c.DeleteString(k) || !c.Equal(before) || c.Len() != before.Len() {
							t.Fatalf("op %d: Remove of absent %q changed the filter", op, k)
						}
					}
				}
				if op%2000 == 0 {
					for j, cnt := range ref {
						if cnt > 0 && !c.TestString(key("ms", j)) {
							t.Fatalf("op %d: %q held %d times tests absent (%d saturated)", op, key("ms", j), cnt, c.Stats().Saturated)
						}
						if cnt > 0 && c.CountString(key("ms", j)) < uint64(min(cnt, SaturatedCount)) {
							t.Fatalf("op %d: Count(%q) = %d, held %d times", op, key("ms", j), c.CountString(key("ms", j)), cnt)
						}
					}
				}
			}
			if c.Len() != held {
				t.Errorf("Len %d, reference holds %d", c.Len(), held)
			}
			t.Logf("%d of %d counters saturated", c.Stats().Saturated, tc.m)
			if c.Stats().Saturated == 0 {
				t.Error("no counter saturated: the case tests less than it should")
			}
		})
	}
}

func TestCountingSaturation(t *testing.T) {
	c := mustCounting(t, Params{M: 1000, K: 5})
	for range 20 {
		c.AddString("hot")
	}
	if got := c.CountString("hot"); got != SaturatedCount {
		t.Errorf("Count after 20 adds = %d, want %d", got, SaturatedCount)
	}
	sat := c.Stats().Saturated
	if sat == 0 || sat > 5 {
		t.Errorf("%d counters saturated by one key with 5 probes", sat)
	}
	// A saturated counter is never decremented: the key stays present
	// however often it is removed.
	for i := range 40 {
		if !c.DeleteString("hot") {
			t.Fatalf("remove %d of a saturated key returned false", i)
		}
	}
	if !c.TestString("hot") || c.Stats().Saturated != sat || c.CountString("hot") != SaturatedCount {
		t.Error("removing a saturated key changed its counters")
	}
	// Below saturation, adds and removes balance exactly.
	d := mustCounting(t, Params{M: 1000, K: 5})
	for range 14 {
		d.Add([]byte("warm"))
	}
	if d.Count([]byte("warm")) != 14 {
		t.Errorf("Count after 14 adds = %d", d.Count([]byte("warm")))
	}
	for range 14 {
		d.Delete([]byte("warm"))
	}
	if d.Stats().BitsSet != 0 || d.Test([]byte("warm")) || d.Delete([]byte("warm")) {
		t.Error("14 adds and 14 removes left counters set")
	}
}

func TestCountingFalsePositiveRate(t *testing.T) {
	statistical(t)
	const n, trials = 100_000, 400_000
	for _, p := range []float64{0.01, 0.001} {
		c, err := NewCounting(n, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys("present", 0, n) {
			c.AddString(k)
		}
		got := 0
		for _, k := range keys("absent", 0, trials) {
			if c.TestString(k) {
				got++
			}
		}
		pr := c.Params()
		model := FalsePositiveRate(pr.M, n, pr.K)
		want := model * trials
		sd := math.Sqrt(want * (1 - model))
		if math.Abs(float64(got)-want) > 6*sd+1 || model > 1.01*p {
			t.Errorf("p=%g: %d false positives in %d, model %.0f ± %.0f", p, got, trials, want, sd)
		}
		if e := c.Stats().EstimatedFPR; math.Abs(e-model) > 0.05*model {
			t.Errorf("p=%g: EstimatedFPR %g, model %g", p, e, model)
		}
		if a := c.Stats().ApproxCount; math.Abs(float64(a)-n) > 0.03*n {
			t.Errorf("p=%g: ApproxCount %d for %d keys", p, a, n)
		}
		t.Logf("p=%g m=%d k=%d: measured %.4f%%, model %.4f%%, %d bytes", p, pr.M, pr.K, 100*float64(got)/trials, 100*model, len(c.words)*8)
	}
}

func TestCountingTestAndAdd(t *testing.T) {
	c, _ := NewCounting(1000, 0.001)
	if c.TestAndAddString("a") || !c.TestAndAddString("a") || !c.TestAndAdd([]byte("a")) {
		t.Error("TestAndAdd answers wrong")
	}
	if c.CountString("a") != 3 || c.Len() != 3 {
		t.Errorf("three adds: Count %d, Len %d", c.CountString("a"), c.Len())
	}
	c.Reset()
	if c.TestString("a") || c.Len() != 0 || c.Stats().FillRatio != 0 || c.Stats().EstimatedFPR != 0 {
		t.Error("Clear left keys")
	}
}

func TestCountingParams(t *testing.T) {
	for _, p := range []Params{{M: 0, K: 3}, {M: 10, K: 0}, {M: MaxCounters + 1, K: 3}, {M: 100, K: MaxK + 1}} {
		if _, err := NewCountingFromParams(p); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: err = %v", p, err)
		}
	}
	if _, err := NewCounting(100, 1.5); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("rate 1.5: %v", err)
	}
	c, err := NewCountingFromParams(Params{M: 1001, K: 4})
	if err != nil || c.Params().M != 1001 || len(c.words) != 63 {
		t.Errorf("NewCountingFromParams(Params{M: 1001, K: 4}): %v, %d words", err, len(c.words))
	}
	// The same sizing as the classic filter.
	d, _ := NewCounting(12345, 0.02)
	if e := Estimate(12345, 0.02); d.Params() != e {
		t.Errorf("Params %+v, Estimate %+v", d.Params(), e)
	}
}

func TestCountingRoundTrip(t *testing.T) {
	c := mustCounting(t, Params{M: 10_007, K: 5, Seed: 11, N: 1000, P: 0.01})
	for i := range 1000 {
		c.AddString(key("rt", i%700))
	}
	c.DeleteString(key("rt", 1))
	b, err := c.marshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var d Counting
	if err := d.unmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !d.Equal(c) || d.Params() != c.Params() || d.Len() != c.Len() {
		t.Fatal("round trip changed the filter")
	}
	for i := range 700 {
		if d.CountString(key("rt", i)) != c.CountString(key("rt", i)) {
			t.Fatalf("Count(%q) changed in the round trip", key("rt", i))
		}
	}
	g, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if gc, ok := g.(*Counting); !ok || !gc.Equal(c) || gc.Len() != c.Len() {
		t.Error("Read returned another filter")
	}
	// A counter set beyond m is corruption.
	bad := append([]byte(nil), b...)
	bad[len(bad)-5] |= 0xf0
	if err := d.unmarshalBinary(resign(bad)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("counter beyond m: %v", err)
	}
}

// TestSaturatedCountName: SaturatedCount is a counter's largest value,
// what Count returns for a key added more often; the deprecated
// CounterMax is the same constant, and MaxCounters, a size, is not.
func TestSaturatedCountName(t *testing.T) {
	if SaturatedCount != 15 || CounterMax != SaturatedCount || MaxCounters != MaxBits/4 {
		t.Fatalf("SaturatedCount %d, CounterMax %d, MaxCounters %d", SaturatedCount, CounterMax, uint64(MaxCounters))
	}
	c, err := NewCountingFromParams(Params{M: 1000, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	for range SaturatedCount + 5 {
		c.AddString("hot")
	}
	if got := c.CountString("hot"); got != SaturatedCount {
		t.Errorf("Count after %d adds = %d, want SaturatedCount", SaturatedCount+5, got)
	}
}
