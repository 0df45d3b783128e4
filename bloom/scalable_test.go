package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func mustScalable(t testing.TB, c ScalableConfig) *Scalable {
	t.Helper()
	s, err := NewScalableWith(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScalableGrowth is the growth promise's test: start at capacity 1,000, insert
// 1,000,000 keys; no false negatives, and the measured rate over 1,000,000
// absent keys is at most p.
func TestScalableGrowth(t *testing.T) {
	statistical(t)
	const trials, p = 1_000_000, 0.01
	for _, c := range []ScalableConfig{
		{Capacity: 1000, Rate: p},
		// And a smaller run of another shape: 100x growth by 4s.
		{Capacity: 1000, Rate: p, Growth: 4, Tightening: 0.5},
	} {
		n := 1_000_000
		if c.Growth == 4 {
			n = 100_000
		}
		c = c.withDefaults()
		t.Run(fmt.Sprintf("growth=%d,r=%g", c.Growth, c.Tightening), func(t *testing.T) {
			s := mustScalable(t, c)
			present := keys("present", 0, n)
			fresh := 0
			for _, k := range present {
				if added, err := s.TryAddString(k); err != nil {
					t.Fatal(err)
				} else if added {
					fresh++
				}
			}
			if s.Len() != uint64(fresh) {
				t.Errorf("Count = %d, %d adds were new", s.Len(), fresh)
			}
			// A few new keys test present already (false positives) and are
			// not added; never more than the compound rate allows.
			if skipped := n - fresh; float64(skipped) > p*float64(n) {
				t.Errorf("%d of %d new keys were taken for present", skipped, n)
			}
			for _, k := range present {
				if !s.TestString(k) {
					t.Fatalf("%q was added but tests absent", k)
				}
			}
			// Every link but the last is full: it holds its capacity, or
			// (rarely, and then nearly) its rate reached the planned one. The
			// chain is as short as the growth factor allows.
			var capSum uint64
			for i := range len(s.Stats().Parts) {
				l := s.links[i]
				if i < len(s.Stats().Parts)-1 && (l.items > l.capacity || l.items < l.capacity*9/10) {
					t.Errorf("link %d holds %d items, capacity %d", i, l.items, l.capacity)
				}
				if i < len(s.Stats().Parts)-1 && l.items < l.capacity && l.f.Stats().EstimatedFPR < 0.999*l.share {
					t.Errorf("link %d closed at %d of %d items with rate %g below its share %g", i, l.items, l.capacity, l.f.Stats().EstimatedFPR, l.share)
				}
				if want := c.linkRate(i); l.share != want || l.f.params.P != planMargin*want {
					t.Errorf("link %d: share %g, planned %g; want %g and %g", i, l.share, l.f.params.P, want, planMargin*want)
				}
				if e := l.f.Stats().EstimatedFPR; math.Abs(l.load-e*float64(l.blocks)) > 1e-9*float64(l.blocks) {
					t.Errorf("link %d: load %g, its bits say %g", i, l.load, e*float64(l.blocks))
				}
				want := c.Capacity * uint64(math.Pow(float64(c.Growth), float64(i)))
				if l.capacity != want {
					t.Errorf("link %d capacity %d, want %d", i, l.capacity, want)
				}
				capSum += l.capacity
			}
			if last := s.links[len(s.Stats().Parts)-1]; capSum-last.capacity >= uint64(fresh) || last.items > last.capacity {
				t.Errorf("%d links of total capacity %d for %d items: chain too long or too short", len(s.Stats().Parts), capSum, fresh)
			}
			if s.Stats().Capacity != capSum {
				t.Errorf("Capacity() = %d, links sum to %d", s.Stats().Capacity, capSum)
			}
			got := countFalseScalable(s, keys("absent", 0, trials))
			rate := float64(got) / trials
			// The bound on the compound rate: the sum of the links' planned
			// rates, at most p.
			bound := 0.0
			for i := range len(s.Stats().Parts) {
				bound += BlockedFalsePositiveRate(s.Stats().Parts[i].M, s.links[i].items, s.Stats().Parts[i].K)
			}
			if bound > p {
				t.Errorf("sum of the links' model rates %g is above p = %g", bound, p)
			}
			// The measured rate must be at most p, and at most the model sum
			// plus six standard deviations.
			sd := math.Sqrt(bound * trials)
			if rate > p || float64(got) > bound*trials+6*sd+1 {
				t.Errorf("measured rate %g (%d of %d); model sum %g, target %g", rate, got, trials, bound, p)
			}
			if e := s.Stats().EstimatedFPR; e > p || math.Abs(e-bound) > 0.1*bound {
				t.Errorf("EstimatedFPR %g, model sum %g", e, bound)
			}
			t.Logf("%d keys: %d links, %d bits (%.2f bits/key), measured rate %.5f%%, model %.5f%%, estimated %.5f%%",
				n, len(s.Stats().Parts), s.Stats().Bits, float64(s.Stats().Bits)/float64(n), 100*rate, 100*bound, 100*s.Stats().EstimatedFPR)
		})
	}
}

func countFalseScalable(s *Scalable, absent []string) int {
	c := 0
	for _, k := range absent {
		if s.TestString(k) {
			c++
		}
	}
	return c
}

func TestScalableCompoundBound(t *testing.T) {
	// The planned rates of however many links sum to at most p.
	for _, r := range []float64{0.1, 0.5, 0.8, 0.9, 0.99} {
		c := ScalableConfig{Rate: 0.01, Tightening: r}
		sum := 0.0
		for i := range MaxLinks {
			sum += c.linkRate(i)
		}
		if sum > c.Rate*(1+1e-12) {
			t.Errorf("r = %g: %d links sum to %g > %g", r, MaxLinks, sum, c.Rate)
		}
		if c.linkRate(0) != c.Rate*(1-r) {
			t.Errorf("r = %g: first link rate %g", r, c.linkRate(0))
		}
	}
}

func TestScalableDuplicatesAndCount(t *testing.T) {
	s := mustScalable(t, ScalableConfig{Capacity: 100, Rate: 0.001})
	for range 3 {
		for i := range 50 {
			s.AddString(key("dup", i))
		}
	}
	if s.Len() != 50 || len(s.Stats().Parts) != 1 {
		t.Errorf("50 keys added three times: Count %d, %d links", s.Len(), len(s.Stats().Parts))
	}
	if !s.TestAndAdd([]byte(key("dup", 7))) || s.Len() != 50 {
		t.Error("TestAndAdd of a present key says new or counts it")
	}
	if s.TestAndAddString(key("new", 0)) || s.Len() != 51 {
		t.Error("TestAndAdd of a new key says present or does not count it")
	}
	if added, err := s.TryAdd([]byte(key("dup", 3))); added || err != nil {
		t.Errorf("TryAdd of a present key: %v %v", added, err)
	}
	if s.Stats().ApproxCount != s.Len() {
		t.Error("ApproxCount differs from Count")
	}
}

func TestScalableNonScaling(t *testing.T) {
	s := mustScalable(t, ScalableConfig{Capacity: 1000, Rate: 0.01, NonScaling: true})
	added := 0
	var full error
	for i := 0; full == nil; i++ {
		var ok bool
		ok, full = s.TryAddString(key("ns", i))
		if ok {
			added++
		}
		if i > 10_000 {
			t.Fatal("a non-scaling filter never filled up")
		}
	}
	if !errors.Is(full, ErrFull) || added != 1000 || len(s.Stats().Parts) != 1 || s.Len() != 1000 {
		t.Fatalf("after %d adds: err %v, %d links, Count %d", added, full, len(s.Stats().Parts), s.Len())
	}
	before := s.Clone()
	// Refused: nothing changes. A present key is still just present.
	if ok, err := s.TryAddString("one more"); ok || !errors.Is(err, ErrFull) || !s.Equal(before) {
		t.Errorf("TryAdd on a full filter: %v %v, changed: %v", ok, err, !s.Equal(before))
	}
	if ok, err := s.TryAddString(key("ns", 5)); ok || err != nil {
		t.Errorf("TryAdd of a present key on a full filter: %v %v", ok, err)
	}
	// Add never loses a key, full or not.
	s.AddString("one more")
	if !s.TestString("one more") || s.Len() != 1001 || len(s.Stats().Parts) != 1 {
		t.Error("Add on a full non-scaling filter lost the key or grew")
	}
}

func TestScalableGrowthLimit(t *testing.T) {
	// A filter that cannot grow further reports ErrFull, and Add keeps
	// every key all the same.
	s := mustScalable(t, ScalableConfig{Capacity: 1000, Rate: 0.5, Growth: MaxGrowth, MaxBytes: 64 << 10})
	s.links[0].items = s.links[0].capacity // pretend it is full
	if _, err := s.TryAddString("x"); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "MaxBytes") {
		t.Fatalf("growth beyond MaxBytes: %v", err)
	}
	s.AddString("x")
	if !s.TestString("x") || len(s.Stats().Parts) != 1 {
		t.Error("Add on a filter that cannot grow lost the key")
	}
	if _, err := NewScalableWith(ScalableConfig{Capacity: math.MaxUint64, Rate: 0.01}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("an impossible first link: %v", err)
	}
	for _, c := range []ScalableConfig{
		{Capacity: 10, Rate: 1},
		{Capacity: 10, Rate: math.NaN()},
		{Capacity: 10, Rate: 0.01, Tightening: 1},
		{Capacity: 10, Rate: 0.01, Tightening: -0.5},
	} {
		if _, err := NewScalableWith(c); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
	// Growth 1 makes links of equal capacity until MaxLinks.
	g := mustScalable(t, ScalableConfig{Capacity: 10, Rate: 0.01, Growth: 1})
	var err error
	for i := 0; err == nil; i++ {
		_, err = g.TryAddString(key("g1", i))
	}
	if !errors.Is(err, ErrFull) || len(g.Stats().Parts) > MaxLinks {
		t.Errorf("growth 1: %v after %d links", err, len(g.Stats().Parts))
	}
	for i := range len(g.Stats().Parts) {
		if g.links[i].capacity != 10 {
			t.Fatalf("growth 1: link %d has capacity %d", i, g.links[i].capacity)
		}
	}
}

func TestScalableRoundTrip(t *testing.T) {
	s := mustScalable(t, ScalableConfig{Capacity: 500, Rate: 0.01, Growth: 3, Tightening: 0.7, Seed: 99})
	ks := keys("rt", 0, 10_000)
	for _, k := range ks {
		s.AddString(k)
	}
	b, err := s.marshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var u Scalable
	if err := u.unmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !u.Equal(s) || u.Config() != s.Config() || !slices.Equal(u.Stats().Parts, s.Stats().Parts) {
		t.Fatal("round trip changed the filter")
	}
	for _, k := range ks {
		if !u.TestString(k) {
			t.Fatalf("%q lost in the round trip", k)
		}
	}
	// The copy grows exactly as the original does.
	more := keys("more", 0, 20_000)
	for _, k := range more {
		s.AddString(k)
		u.AddString(k)
	}
	if !u.Equal(s) {
		t.Error("the decoded filter grew differently")
	}
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	g, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if gs, ok := g.(*Scalable); !ok || !gs.Equal(s) {
		t.Error("Read returned another filter")
	}
	// Clear keeps one empty link.
	s.Reset()
	if len(s.Stats().Parts) != 1 || s.Len() != 0 || s.TestString(ks[0]) || s.Stats().FillRatio != 0 {
		t.Error("Clear left keys or links")
	}
}

// TestScalableChainTest: the chain's lookup (probe masks shared by links
// with the same probe count) answers exactly as testing each link's
// blocked filter, including for chains with more probe counts than it
// builds masks for.
func TestScalableChainTest(t *testing.T) {
	grown := mustScalable(t, ScalableConfig{Capacity: 100, Rate: 0.01, Tightening: 0.3})
	for _, k := range keys("chain", 0, 20_000) {
		grown.AddString(k)
	}
	// A hand-made chain of links with k = 1 ... 9: more levels than masks.
	var hand Scalable
	hand.cfg = ScalableConfig{Capacity: 100, Rate: 0.01, Growth: 1, Tightening: 0.5}.withDefaults()
	for k := uint32(1); k <= maxLevels+3; k++ {
		f, err := NewBlockedFromParams(Params{M: 4096, K: k})
		if err != nil {
			t.Fatal(err)
		}
		batchAdd(f, keys("hand", int(k)*100, int(k)*100+100))
		hand.links = append(hand.links, newLink(f, 100, 100))
	}
	hand.index()
	if len(hand.levels) <= maxLevels || len(grown.levels) < 3 {
		t.Fatalf("the cases do not cover the levels: %v and %v", hand.levels, grown.levels)
	}
	for _, s := range []*Scalable{grown, &hand} {
		hits := 0
		for _, k := range append(keys("chain", 0, 20_000), keys("absent", 0, 20_000)...) {
			lo, hi := hashString(k, s.cfg.Seed)
			want := false
			for _, l := range s.links {
				want = want || l.f.test(lo, hi)
			}
			if got := s.test(lo, hi); got != want {
				t.Fatalf("levels %v: chain test of %q = %v, the links say %v", s.levels, k, got, want)
			}
			if want {
				hits++
			}
		}
		t.Logf("%d links, levels %v: %d present of 40000", len(s.links), s.levels, hits)
	}
}

// BenchmarkScalableAfterGrowth compares lookups in a scalable filter that
// grew 1,000-fold (capacity n/1000, then n keys: 10 links with growth 2)
// with a fresh one-link filter holding the same keys, at n = 50,000 (all in
// cache) and 1,000,000 (TestScalableGrowth's size). The ratios are in
// docs/filters.md:
//
//	go test -run '^$' -bench ScalableAfterGrowth -count 5 ./bloom
func BenchmarkScalableAfterGrowth(b *testing.B) {
	for _, n := range []int{50_000, 1_000_000} {
		present, absent := keys("present", 0, n), keys("absent", 0, n)
		for _, c := range []struct {
			name string
			cfg  ScalableConfig
		}{
			{"fresh", ScalableConfig{Capacity: uint64(n), Rate: 0.01}},
			{"grown1000x", ScalableConfig{Capacity: uint64(n) / 1000, Rate: 0.01}},
			{"grown1000x-growth4", ScalableConfig{Capacity: uint64(n) / 1000, Rate: 0.01, Growth: 4}},
		} {
			s := mustScalable(b, c.cfg)
			for _, k := range present {
				s.AddString(k)
			}
			name := fmt.Sprintf("n=%d/%s/links=%d", n, c.name, len(s.Stats().Parts))
			b.Run(name+"/hit", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if !s.TestString(present[i%n]) {
						b.Fatal("false negative")
					}
				}
			})
			b.Run(name+"/miss", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					s.TestString(absent[i%n])
				}
			})
		}
	}
}
