package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// filter is the method set Filter and Blocked share; the tests run on both.
type filter interface {
	Add([]byte)
	AddString(string)
	AddHash(KeyHash)
	Sync() Sync
	Test([]byte) bool
	TestHash(KeyHash) bool
	TestString(string) bool
	TestAndAdd([]byte) bool
	TestAndAddString(string) bool
	Reset()
	Stats() Stats
	Params() Params
	marshalBinary() ([]byte, error)
	unmarshalBinary([]byte) error
}

// batchAdd and batchTest call AddMany and TestMany on f's layout.
func batchAdd[K Key](f filter, keys []K) {
	switch f := f.(type) {
	case *Filter:
		AddMany(f, keys)
	case *Blocked:
		AddMany(f, keys)
	default:
		panic(fmt.Sprintf("batchAdd of a %T", f))
	}
}

func batchTest[K Key](f filter, keys []K, dst []bool) []bool {
	switch f := f.(type) {
	case *Filter:
		return TestMany(f, keys, dst)
	case *Blocked:
		return TestMany(f, keys, dst)
	}
	panic(fmt.Sprintf("batchTest of a %T", f))
}

type layout struct {
	name string
	new  func(n uint64, p float64) (filter, error)
	// rate is the model's false-positive rate for the filter's m, k at n.
	rate func(Params, uint64) float64
	// decode reads a filter of this layout.
	decode func([]byte) (filter, error)
	// union and clone, typed.
	union func(a, b filter) error
	clone func(filter) filter
	equal func(a, b filter) bool
}

var layouts = []layout{
	{
		name: "classic",
		new:  func(n uint64, p float64) (filter, error) { return New(n, p) },
		rate: func(p Params, n uint64) float64 { return FalsePositiveRate(p.M, n, p.K) },
		decode: func(b []byte) (filter, error) {
			f := new(Filter)
			return f, f.unmarshalBinary(b)
		},
		union: func(a, b filter) error { return a.(*Filter).Union(b.(*Filter)) },
		clone: func(a filter) filter { return a.(*Filter).Clone() },
		equal: func(a, b filter) bool { return a.(*Filter).Equal(b.(*Filter)) },
	},
	{
		name: "blocked",
		new:  func(n uint64, p float64) (filter, error) { return NewBlocked(n, p) },
		rate: func(p Params, n uint64) float64 { return BlockedFalsePositiveRate(p.M, n, p.K) },
		decode: func(b []byte) (filter, error) {
			f := new(Blocked)
			return f, f.unmarshalBinary(b)
		},
		union: func(a, b filter) error { return a.(*Blocked).Union(b.(*Blocked)) },
		clone: func(a filter) filter { return a.(*Blocked).Clone() },
		equal: func(a, b filter) bool { return a.(*Blocked).Equal(b.(*Blocked)) },
	},
}

// key returns the i-th URL-like test key of a set; sets do not overlap.
func key(set string, i int) string {
	return "https://" + set + ".example.com/articles/" + strconv.Itoa(i) + "?ref=feed"
}

func keys(set string, from, to int) []string {
	k := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		k = append(k, key(set, i))
	}
	return k
}

func mustNew(t testing.TB, l layout, n uint64, p float64) filter {
	t.Helper()
	f, err := l.new(n, p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// countFalse counts the keys of absent that test present.
func countFalse(f filter, absent []string) int {
	c := 0
	for _, k := range absent {
		if f.TestString(k) {
			c++
		}
	}
	return c
}

func TestNoFalseNegatives(t *testing.T) {
	statistical(t)
	const n = 1_000_000
	present := keys("present", 0, n)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			f := mustNew(t, l, n, 0.01)
			for _, k := range present {
				f.AddString(k)
			}
			check := func(f filter, how string) {
				t.Helper()
				for _, k := range present {
					if !f.TestString(k) || !f.Test([]byte(k)) {
						t.Fatalf("%s: %q was added but tests absent", how, k)
					}
				}
				res := batchTest(f, present, nil)
				for i, ok := range res {
					if !ok {
						t.Fatalf("%s: TestManyStrings says %q is absent", how, present[i])
					}
				}
			}
			check(f, "in memory")
			b, err := f.marshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			g, err := l.decode(b)
			if err != nil {
				t.Fatal(err)
			}
			check(g, "after save and load")
		})
	}
}

func TestFalsePositiveRate(t *testing.T) {
	statistical(t)
	const n, trials = 1_000_000, 1_000_000
	present := keys("present", 0, n)
	absent := keys("absent", 0, trials)
	for _, l := range layouts {
		for _, p := range []float64{0.1, 0.01, 0.001, 0.0001} {
			t.Run(fmt.Sprintf("%s/p=%g", l.name, p), func(t *testing.T) {
				f := mustNew(t, l, n, p)
				batchAdd(f, present)
				got := countFalse(f, absent)
				model := l.rate(f.Params(), n)
				// The model must be what was asked for: not above the target
				// (beyond k's rounding) and not so far below that memory is
				// wasted.
				if model > 1.01*p || model < 0.7*p {
					t.Errorf("model rate %g for target %g", model, p)
				}
				// The measured count must agree with the model within six
				// standard deviations of a binomial count.
				want := model * trials
				sd := math.Sqrt(want * (1 - model))
				if math.Abs(float64(got)-want) > 6*sd+1 {
					t.Errorf("measured %d false positives in %d, model says %.0f ± %.0f", got, trials, want, sd)
				}
				t.Logf("m=%d k=%d bits/key=%.2f measured %.5f%% model %.5f%% estimated %.5f%%",
					f.Params().M, f.Params().K, float64(f.Params().M)/n, 100*float64(got)/trials, 100*model, 100*f.Stats().EstimatedFPR)
				if e := f.Stats().EstimatedFPR; math.Abs(e-model) > 0.05*model {
					t.Errorf("EstimatedFPR %g, model %g", e, model)
				}
			})
		}
	}
}

func TestApproxCount(t *testing.T) {
	statistical(t)
	const n = 1_000_000
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			f := mustNew(t, l, n, 0.01)
			if c := f.Stats().ApproxCount; c != 0 {
				t.Errorf("empty filter counts %d", c)
			}
			for i := range n {
				f.AddString(key("count", i))
				if i+1 == n/2 || i+1 == n {
					c := f.Stats().ApproxCount
					if math.Abs(float64(c)-float64(i+1)) > 0.03*float64(i+1) {
						t.Errorf("after %d keys ApproxCount = %d", i+1, c)
					}
					t.Logf("after %d keys ApproxCount = %d (%+.3f%%)", i+1, c, 100*(float64(c)/float64(i+1)-1))
				}
			}
			// Adding the same keys again changes nothing.
			before := f.Stats().BitsSet
			batchAdd(f, keys("count", 0, 1000))
			if f.Stats().BitsSet != before {
				t.Error("re-adding keys set new bits")
			}
		})
	}
}

func TestFullFilter(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 10, 0.1)
		for i := range 10_000 {
			f.AddString(key("full", i))
		}
		if f.Stats().FillRatio != 1 || f.Stats().ApproxCount != math.MaxUint64 || f.Stats().EstimatedFPR != 1 {
			t.Errorf("%s: saturated filter: fill %g count %d rate %g", l.name, f.Stats().FillRatio, f.Stats().ApproxCount, f.Stats().EstimatedFPR)
		}
		if !f.TestString("anything") {
			t.Errorf("%s: saturated filter says absent", l.name)
		}
	}
}

func TestUnion(t *testing.T) {
	a, b := keys("a", 0, 50_000), keys("b", 0, 50_000)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			fa, fb, both := mustNew(t, l, 100_000, 0.01), mustNew(t, l, 100_000, 0.01), mustNew(t, l, 100_000, 0.01)
			batchAdd(fa, a)
			batchAdd(fb, b)
			batchAdd(both, a)
			batchAdd(both, b)
			u := l.clone(fa)
			if err := l.union(u, fb); err != nil {
				t.Fatal(err)
			}
			if !l.equal(u, both) {
				t.Error("union differs from the filter built from both key sets")
			}
			if l.equal(u, fa) {
				t.Error("union equals its first operand: clone or union is broken")
			}
			other := mustNew(t, l, 200_000, 0.01)
			if err := l.union(u, other); !errors.Is(err, ErrIncompatible) {
				t.Errorf("union with a differently sized filter: %v", err)
			}
			if !l.equal(u, both) {
				t.Error("a refused union changed the filter")
			}
		})
	}
}

func TestUnionRefusesOtherSeed(t *testing.T) {
	p := Estimate(1000, 0.01)
	a, _ := NewFromParams(p)
	p.Seed = 42
	b, _ := NewFromParams(p)
	if err := a.Union(b); !errors.Is(err, ErrIncompatible) {
		t.Errorf("union across seeds: %v", err)
	}
	if err := a.Intersect(b); !errors.Is(err, ErrIncompatible) {
		t.Errorf("intersect across seeds: %v", err)
	}
	c, _ := NewFromParams(Params{M: p.M, K: p.K + 1})
	if err := a.Union(c); !errors.Is(err, ErrIncompatible) {
		t.Errorf("union across k: %v", err)
	}
}

func TestIntersect(t *testing.T) {
	common, onlyA, onlyB := keys("common", 0, 20_000), keys("a", 0, 20_000), keys("b", 0, 20_000)
	fa, _ := New(100_000, 0.01)
	fb, _ := New(100_000, 0.01)
	batchAdd(fa, common)
	batchAdd(fa, onlyA)
	batchAdd(fb, common)
	batchAdd(fb, onlyB)
	if err := fa.Intersect(fb); err != nil {
		t.Fatal(err)
	}
	for _, k := range common {
		if !fa.TestString(k) {
			t.Fatalf("common key %q lost by Intersect", k)
		}
	}
	// Keys of one side only are mostly gone.
	if c := countFalse(fa, onlyA); c > len(onlyA)/10 {
		t.Errorf("%d of %d keys only in a survive the intersection", c, len(onlyA))
	}
}

func TestSeedChangesBits(t *testing.T) {
	p := Estimate(1000, 0.01)
	a, _ := NewFromParams(p)
	p.Seed = RandomSeed()
	b, _ := NewFromParams(p)
	a.AddString("x")
	b.AddString("x")
	if equalWords(a.words, b.words) {
		t.Error("a different seed set the same bits")
	}
	if !b.TestString("x") {
		t.Error("seeded filter lost its key")
	}
}

func TestTestAndAdd(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 10_000, 0.001)
		fresh := 0
		for i := range 10_000 {
			k := []byte(key("taa", i))
			if !f.TestAndAdd(k) {
				fresh++
			}
			if !f.TestAndAdd(k) || !f.Sync().TestAndAdd(k) || !f.TestAndAddString(string(k)) {
				t.Fatalf("%s: second TestAndAdd of %q says new", l.name, k)
			}
		}
		// Every key was new; a few may be reported present (false positives).
		if fresh < 10_000*99/100 {
			t.Errorf("%s: only %d of 10000 new keys reported new", l.name, fresh)
		}
	}
}

func TestBatchMatchesSingle(t *testing.T) {
	// The batch methods are pipelines that probe a key filterAhead or
	// blockedAhead keys after hashing it: batches shorter than, equal to
	// and just above that distance, and much longer ones, must all set and
	// test exactly the bits the single-key methods do. p = 1e-6 gives the
	// classic layout k > filterRingK, whose ring keeps hashes, not positions.
	lens := []int{0, 1, filterAhead - 1, filterAhead, filterAhead + 1, blockedAhead - 1, blockedAhead,
		blockedAhead + 1, blockedRing + 1, 10_001}
	for _, l := range layouts {
		for _, c := range []struct {
			n uint64
			p float64
		}{{10_000, 0.001}, {2_000_000, 0.001}, {20_000, 1e-6}} {
			for _, m := range lens {
				testBatchMatchesSingle(t, l, c.n, c.p, m)
			}
		}
	}
	f, _ := New(20_000, 1e-6)
	if f.Params().K <= filterRingK {
		t.Fatalf("k = %d does not reach the hash-keeping path (k > %d)", f.Params().K, filterRingK)
	}
}

func TestBatchNoAlloc(t *testing.T) {
	// The pipelines keep their ring on the stack: no allocation per call,
	// let alone per key, once dst has room.
	ks := keys("alloc", 0, 1000)
	bs := make([][]byte, len(ks))
	for i, k := range ks {
		bs[i] = []byte(k)
	}
	dst := make([]bool, 0, len(ks))
	for _, l := range layouts {
		for _, p := range []float64{0.01, 1e-6} {
			f := mustNew(t, l, 100_000, p)
			for name, fn := range map[string]func(){
				"AddManyStrings":  func() { batchAdd(f, ks) },
				"AddMany":         func() { batchAdd(f, bs) },
				"TestManyStrings": func() { dst = batchTest(f, ks, dst[:0]) },
				"TestMany":        func() { dst = batchTest(f, bs, dst[:0]) },
			} {
				if a := testing.AllocsPerRun(20, fn); a != 0 {
					t.Errorf("%s p=%g: %s allocates %.1f times a call", l.name, p, name, a)
				}
			}
		}
	}
}

func testBatchMatchesSingle(t *testing.T, l layout, n uint64, p float64, m int) {
	a, b := mustNew(t, l, n, p), mustNew(t, l, n, p)
	name := fmt.Sprintf("%s n=%d p=%g, %d keys", l.name, n, p, m)
	ks := keys("batch", 0, m)
	bs := make([][]byte, len(ks))
	for i, k := range ks {
		a.Add([]byte(k))
		bs[i] = []byte(k)
	}
	batchAdd(b, bs)
	if !l.equal(a, b) {
		t.Errorf("%s: AddMany set other bits than Add", name)
	}
	c := mustNew(t, l, n, p)
	batchAdd(c, ks)
	if !l.equal(a, c) {
		t.Errorf("%s: AddManyStrings set other bits than Add", name)
	}
	// Half the probes were added, half not (some of those false positives).
	probe := append(keys("batch", m/2, m/2+m/2), keys("probe", 0, m-m/2)...)
	pb := make([][]byte, len(probe))
	for i := range probe {
		pb[i] = []byte(probe[i])
	}
	prefix := []bool{true, false, true}
	got := batchTest(a, probe, nil)
	gotB := batchTest(a, pb, append(make([]bool, 0, 10), prefix...))
	if len(got) != len(probe) || len(gotB) != len(prefix)+len(probe) {
		t.Fatalf("%s: TestMany returned %d and %d results for %d keys", name, len(got), len(gotB), len(probe))
	}
	if !slices.Equal(gotB[:len(prefix)], prefix) {
		t.Errorf("%s: TestMany changed dst's elements before its length: %v", name, gotB[:len(prefix)])
	}
	for i, k := range probe {
		if want := a.TestString(k); got[i] != want || gotB[len(prefix)+i] != want {
			t.Fatalf("%s: TestMany(%q) = %v/%v, Test = %v", name, k, got[i], gotB[len(prefix)+i], want)
		}
	}
}

func TestConcurrentAddSync(t *testing.T) {
	// Run with -race: the Sync view's methods must be race-free together.
	const goroutines, per = 8, 20_000
	for _, l := range layouts {
		f := mustNew(t, l, goroutines*per, 0.01)
		s := f.Sync()
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				set := "g" + strconv.Itoa(g)
				for i := range per {
					k := key(set, i)
					switch i % 3 {
					case 0:
						s.AddString(k)
					case 1:
						s.TestAndAdd([]byte(k))
					default:
						s.AddHash(f.Params().HashKeyString(k))
					}
					if !s.TestString(key(set, i/2)) || !s.Test([]byte(k)) || !s.TestHash(f.Params().HashKeyString(k)) {
						t.Errorf("%s: key tests absent after a concurrent add", l.name)
						return
					}
				}
			}()
		}
		wg.Wait()
		for g := range goroutines {
			for i := range per {
				if !f.TestString(key("g"+strconv.Itoa(g), i)) {
					t.Fatalf("%s: concurrent add lost %q", l.name, key("g"+strconv.Itoa(g), i))
				}
			}
		}
		// The same keys added by one goroutine give the same bits.
		g := mustNew(t, l, goroutines*per, 0.01)
		for gi := range goroutines {
			batchAdd(g, keys("g"+strconv.Itoa(gi), 0, per))
		}
		if !l.equal(f, g) {
			t.Errorf("%s: concurrent adds set other bits than sequential ones", l.name)
		}
	}
}

func TestClearAndEmpty(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 1000, 0.01)
		if f.TestString("x") || f.Stats().FillRatio != 0 || f.Stats().EstimatedFPR != 0 {
			t.Errorf("%s: new filter is not empty", l.name)
		}
		f.AddString("x")
		if !f.TestString("x") || f.Stats().BitsSet == 0 {
			t.Errorf("%s: key not added", l.name)
		}
		f.Reset()
		if f.TestString("x") || f.Stats().BitsSet != 0 {
			t.Errorf("%s: Clear left bits", l.name)
		}
	}
}

func TestEmptyAndBinaryKeys(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 1000, 0.001)
		odd := [][]byte{nil, {}, {0}, {0, 0}, {0xff, 0xfe}, bytes.Repeat([]byte{7}, 1<<20)}
		f.Add(odd[0])
		if !f.Test(nil) || !f.Test([]byte{}) || !f.TestString("") {
			t.Errorf("%s: empty key lost", l.name)
		}
		for _, k := range odd[2:] {
			f.Add(k)
		}
		for _, k := range odd {
			if !f.Test(k) {
				t.Errorf("%s: key %x lost", l.name, k[:min(len(k), 8)])
			}
		}
	}
}

func TestCloneIsIndependent(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 1000, 0.01)
		f.AddString("a")
		g := l.clone(f)
		g.AddString("b")
		if !l.equal(f, l.clone(f)) || l.equal(f, g) {
			t.Errorf("%s: clone shares bits with its original", l.name)
		}
	}
}

func TestBlockedAlignment(t *testing.T) {
	for _, n := range []uint64{1, 3, 100, 10_000} {
		f, _ := NewBlocked(n, 0.01)
		g := f.Clone()
		var h Blocked
		b, _ := f.marshalBinary()
		if err := h.unmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		for _, x := range []*Blocked{f, g, &h} {
			if addr := uintptr(unsafePointer(&x.words[0])); addr%64 != 0 {
				t.Errorf("n=%d: blocks start at %#x, not on a cache line", n, addr)
			}
		}
	}
}

func TestLocateMatchesBlocked(t *testing.T) {
	f, _ := NewBlocked(10_000, 0.01)
	var offs []uint16
	for i := range 2000 {
		k := []byte(key("locate", i))
		f.Add(k)
		var b uint64
		b, offs = LocateBlock(f.Params(), f.Params().HashKey(k), offs[:0])
		if b >= f.blocks || len(offs) != int(f.params.K) {
			t.Fatalf("LocateBlock(%q) = block %d, %d offsets", k, b, len(offs))
		}
		for _, o := range offs {
			if f.words[8*b+uint64(o/64)]&(1<<(o%64)) == 0 {
				t.Fatalf("LocateBlock(%q) names bit %d of block %d, which Add did not set", k, o, b)
			}
		}
	}
	// And the other way: setting exactly the located bits makes Test true.
	g, _ := NewBlockedFromParams(f.Params())
	b, offs := LocateBlock(g.Params(), g.Params().HashKeyString("x"), nil)
	for _, o := range offs {
		g.words[8*b+uint64(o/64)] |= 1 << (o % 64)
	}
	if !g.TestString("x") || g.Stats().BitsSet == 0 {
		t.Error("bits set from LocateBlock do not make the key present")
	}
}

func TestLocateMatchesFilter(t *testing.T) {
	p := Estimate(10_000, 0.01)
	p.Seed = 99
	f, _ := NewFromParams(p)
	g, _ := NewFromParams(p)
	var pos []uint64
	for i := range 2000 {
		k := key("locate", i)
		f.AddString(k)
		pos = Locate(p, p.HashKeyString(k), pos[:0])
		if len(pos) != int(p.K) {
			t.Fatalf("Locate(%q) gave %d positions", k, len(pos))
		}
		for _, x := range pos {
			if x >= p.M {
				t.Fatalf("Locate(%q) names bit %d of %d", k, x, p.M)
			}
			g.words[x/64] |= 1 << (x % 64)
		}
	}
	if !f.Equal(g) {
		t.Error("setting the located bits does not give the filter Add builds")
	}
}

// TestHashEntryPoints: AddHash and TestHash with Params.HashKey act as
// Add and Test with the key, for both layouts and their Sync views.
func TestHashEntryPoints(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 10_000, 0.01)
		g := mustNew(t, l, 10_000, 0.01)
		p := f.Params()
		for i := range 3000 {
			k := key("hash", i)
			f.AddString(k)
			if i%2 == 0 {
				g.AddHash(p.HashKeyString(k))
			} else {
				g.Sync().AddHash(p.HashKey([]byte(k)))
			}
		}
		if !l.equal(f, g) {
			t.Errorf("%s: AddHash set other bits than Add", l.name)
		}
		for i := range 6000 {
			k := key("hash", i)
			h := p.HashKeyString(k)
			if f.TestString(k) != g.TestHash(h) || f.TestString(k) != g.Sync().TestHash(h) {
				t.Fatalf("%s: TestHash(%q) differs from TestString", l.name, k)
			}
		}
	}
}
