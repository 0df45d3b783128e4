package cuckoo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// keys returns n distinct keys with the given prefix.
func keys(prefix string, from, n int) []string {
	k := make([]string, n)
	for i := range k {
		k[i] = prefix + strconv.Itoa(from+i)
	}
	return k
}

func mustNew(t testing.TB, c Config) *Filter {
	t.Helper()
	f, err := NewWith(c)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDefaults(t *testing.T) {
	f, err := New(1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Config()
	if c.BucketSize != 4 || c.FingerprintBits != 8 || c.MaxKicks != 500 || c.Expansion != 2 || c.NoGrow {
		t.Fatalf("defaults: %+v", c)
	}
	// ⌈1e6 / (4 · 0.94)⌉ buckets.
	if want := uint64(math.Ceil(1e6 / (4 * 0.94))); c.Buckets != want {
		t.Errorf("buckets = %d, want %d", c.Buckets, want)
	}
	if got := float64(f.Stats().SizeBytes*8) / 1e6; got < 8.4 || got > 8.6 {
		t.Errorf("%.2f bits a planned key", got)
	}
	if r := c.Rate; math.Abs(r-(1-math.Pow(1-1.0/255, 8))) > 1e-12 {
		t.Errorf("planned rate %v", r)
	}
}

func TestConfigLimits(t *testing.T) {
	bad := []Config{
		{Capacity: 10, BucketSize: MaxBucketSize + 1},
		{Capacity: 10, FingerprintBits: MinFingerprintBits - 1},
		{Capacity: 10, FingerprintBits: MaxFingerprintBits + 1},
		{Capacity: 10, MaxKicks: MaxMaxKicks + 1},
		{Capacity: 10, Expansion: MaxExpansion + 1},
		{Capacity: 10, Rate: 1},
		{Capacity: 10, Rate: -0.5},
		{Capacity: 10, Rate: math.NaN()},
		{Capacity: 10, Rate: 1e-30}, // would need more than 32 fingerprint bits
		{Buckets: MaxBits},
		{Capacity: math.MaxUint64},
	}
	for _, c := range bad {
		if _, err := NewWith(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
	f := mustNew(t, Config{Capacity: 10, Expansion: 3})
	if e := f.Config().Expansion; e != 4 {
		t.Errorf("expansion 3 rounded to %d, want 4", e)
	}
	f = mustNew(t, Config{Capacity: 1000, Rate: 0.001})
	if b := f.Config().FingerprintBits; b != BitsForRate(0.001, 4) || ExpectedRate(4, b, 1) > 0.001 || ExpectedRate(4, b-1, 1) <= 0.001 {
		t.Errorf("rate 0.001 gave %d-bit fingerprints", b)
	}
}

func TestBasicOperations(t *testing.T) {
	f := mustNew(t, Config{Capacity: 1000, Seed: 7})
	if f.TestString("a") || f.CountString("a") != 0 || f.DeleteString("a") {
		t.Fatal("empty filter claims a key")
	}
	for range 3 {
		if err := f.AddString("a"); err != nil {
			t.Fatal(err)
		}
	}
	if !f.Test([]byte("a")) || f.Count([]byte("a")) < 3 || f.Len() != 3 {
		t.Fatalf("after 3 adds: test %v count %d len %d", f.TestString("a"), f.CountString("a"), f.Len())
	}
	if added, err := f.AddUniqueString("a"); added || err != nil {
		t.Fatalf("AddUnique of a present key: %v %v", added, err)
	}
	if added, err := f.AddUnique([]byte("b")); !added || err != nil || !f.TestString("b") {
		t.Fatalf("AddUnique of a new key: %v %v", added, err)
	}
	for i := 3; i > 0; i-- {
		if !f.Delete([]byte("a")) {
			t.Fatalf("delete %d failed", i)
		}
	}
	if f.TestString("a") || f.DeleteString("a") {
		t.Fatal("a still present after deleting all its copies")
	}
	if !f.TestString("b") || f.Len() != 1 {
		t.Fatal("deleting a lost b")
	}
	g := f.Clone()
	if !g.Equal(f) || !f.Equal(g) {
		t.Fatal("a clone is not Equal to its filter")
	}
	f.Reset()
	if f.TestString("b") || f.Len() != 0 || !g.TestString("b") || g.Len() != 1 {
		t.Fatal("Reset or Clone")
	}
	if f.Equal(g) {
		t.Fatal("Equal after Reset of one of the two")
	}
	f.AddString("b")
	if !f.Equal(g) {
		t.Fatal("not Equal after the same single key was added to both")
	}
	f.AddString("c")
	if f.Equal(g) || g.Equal(f) {
		t.Fatal("Equal though one holds a key more")
	}
}

// TestLoadBeforeFirstFailure fills filters that may not grow until an
// insertion fails and checks how full they got, that every key added tests
// present, and that the failed insertions changed nothing.
func TestLoadBeforeFirstFailure(t *testing.T) {
	cases := []struct {
		c       Config
		minLoad float64
	}{
		{Config{Buckets: 1 << 12, FingerprintBits: 8}, 0.9},
		{Config{Buckets: 5003, FingerprintBits: 12}, 0.9},
		{Config{Buckets: 1 << 13, FingerprintBits: 16}, 0.9},
		{Config{Buckets: 30011, FingerprintBits: 8}, 0.9},
		{Config{Buckets: 4099, BucketSize: 2, FingerprintBits: 12}, 0.8},
		{Config{Buckets: 2003, BucketSize: 8, FingerprintBits: 12}, 0.96}, // 96-bit buckets: the slow path
	}
	for _, tc := range cases {
		c := tc.c
		c.NoGrow, c.Seed = true, 99
		t.Run(fmt.Sprintf("b%d-f%d-n%d", max(4, c.BucketSize), c.FingerprintBits, c.Buckets), func(t *testing.T) {
			f := mustNew(t, c)
			var added []string
			var err error
			for i := 0; ; i++ {
				k := "k" + strconv.Itoa(i)
				if err = f.AddString(k); err != nil {
					break
				}
				added = append(added, k)
			}
			if !errors.Is(err, ErrFull) {
				t.Fatalf("err = %v, want ErrFull", err)
			}
			load := f.Stats().LoadFactor
			t.Logf("load %.4f at the first failure", load)
			if load < tc.minLoad {
				t.Errorf("load %.4f at the first failure, want > %v", load, tc.minLoad)
			}
			if f.Len() != uint64(len(added)) || f.Stats().Tables != 1 {
				t.Fatalf("len %d after %d adds, %d tables", f.Len(), len(added), f.Stats().Tables)
			}
			// Failed insertions lose nothing (TestFailedInsertionUndone
			// checks that they change no bit).
			fails := 0
			for i := 0; i < 2000 && fails < 10; i++ {
				k := "more" + strconv.Itoa(i)
				if err := f.AddString(k); err != nil {
					fails++
					continue
				}
				added = append(added, k)
			}
			if f.Len() != uint64(len(added)) {
				t.Fatalf("len %d after %d successful adds", f.Len(), len(added))
			}
			if fails == 0 {
				t.Fatal("no insertion failed in a full filter")
			}
			for _, k := range added {
				if !f.TestString(k) {
					t.Fatalf("false negative for %q after failed insertions", k)
				}
			}
		})
	}
}

// TestFailedInsertionUndone checks, key by key, that the insertion that
// fails first leaves the table as it found it (not only later ones).
func TestFailedInsertionUndone(t *testing.T) {
	for seed := range uint64(5) {
		f := mustNew(t, Config{Buckets: 257, BucketSize: 4, FingerprintBits: 12, MaxKicks: 100, NoGrow: true, Seed: seed})
		var added []int
		fails := 0
		for i := 0; ; i++ {
			before := f.Clone()
			if err := f.AddString(strconv.Itoa(i)); err != nil {
				if !errors.Is(err, ErrFull) {
					t.Fatal(err)
				}
				if !f.Equal(before) {
					t.Fatalf("seed %d: the failed insertion of key %d changed the filter", seed, i)
				}
				if fails++; fails == 20 {
					break
				}
				continue
			}
			added = append(added, i)
		}
		for _, j := range added {
			if !f.TestString(strconv.Itoa(j)) {
				t.Fatalf("seed %d: key %d lost", seed, j)
			}
		}
		if f.Len() != uint64(len(added)) {
			t.Fatalf("seed %d: len %d after %d successful adds", seed, f.Len(), len(added))
		}
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMultisetProperty runs random sequences of adds, duplicate adds and
// deletions of present keys against a reference multiset, on filters of
// many shapes, small fingerprints (so that keys share fingerprints and
// buckets often) and tables that grow. No key added and not deleted may
// test absent or count fewer copies than it has.
func TestMultisetProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		c := Config{
			Buckets:         uint64(1 + rng.IntN(60)),
			BucketSize:      uint32(1 + rng.IntN(8)),
			FingerprintBits: uint32(MinFingerprintBits + rng.IntN(9)),
			MaxKicks:        uint32(1 + rng.IntN(60)),
			Expansion:       uint32(1 + rng.IntN(4)),
			Seed:            rng.Uint64(),
		}
		if trial%5 == 4 {
			c.BucketSize = uint32(9 + rng.IntN(20)) // buckets wider than 64 bits
		}
		f := mustNew(t, c)
		ref := map[string]int{}
		var present []string // keys with ref > 0, possibly repeated
		total := 0
		universe := 50 + rng.IntN(3000)
		for step := range 4000 {
			switch op := rng.IntN(10); {
			case op < 6 || len(present) == 0:
				k := "key" + strconv.Itoa(rng.IntN(universe))
				err := f.AddString(k)
				if errors.Is(err, ErrTooManyCopies) && f.CountString(k) >= 2*uint64(c.BucketSize) {
					continue // small fingerprints: other keys fill its buckets
				}
				if err != nil {
					t.Fatalf("trial %d: add: %v", trial, err)
				}
				ref[k]++
				total++
				present = append(present, k)
			default:
				j := rng.IntN(len(present))
				k := present[j]
				present[j] = present[len(present)-1]
				present = present[:len(present)-1]
				if !f.DeleteString(k) {
					t.Fatalf("trial %d step %d: delete of present %q failed", trial, step, k)
				}
				ref[k]--
				total--
			}
			if step%97 == 0 || step == 3999 {
				for k, n := range ref {
					if n > 0 && (!f.TestString(k) || f.CountString(k) < uint64(n)) {
						t.Fatalf("trial %d step %d (%+v, %d tables): %q added %d times: test %v count %d",
							trial, step, c, f.Stats().Tables, k, n, f.TestString(k), f.CountString(k))
					}
				}
				if f.Len() != uint64(total) {
					t.Fatalf("len %d, want %d", f.Len(), total)
				}
			}
		}
		// Delete everything that is left: the filter must end empty.
		for _, k := range present {
			if !f.DeleteString(k) {
				t.Fatalf("trial %d: final delete of %q failed", trial, k)
			}
		}
		if f.Len() != 0 || f.Stats().LoadFactor != 0 {
			t.Fatalf("trial %d: %d items left", trial, f.Len())
		}
		for k := range f.tables {
			if f.shape.occupied(&f.tables[k]) != 0 {
				t.Fatalf("trial %d: table %d not empty", trial, k)
			}
		}
	}
}

// TestFalsePositiveRate fills filters to their typical load and measures
// the rate over a million absent keys against ExpectedRate (≈ 2b·load/2^f).
func TestFalsePositiveRate(t *testing.T) {
	cases := []struct {
		Config
		absent int
	}{
		{Config{Capacity: 100_000}, 1_000_000},                      // b = 4, f = 8: about 3%
		{Config{Capacity: 100_000, FingerprintBits: 12}, 1_000_000}, // about 0.2%
		{Config{Capacity: 50_000, BucketSize: 2, FingerprintBits: 10}, 300_000},
	}
	for _, tc := range cases {
		c, absent := tc.Config, tc.absent
		c.Seed = 3
		f := mustNew(t, c)
		for _, k := range keys("in", 0, int(c.Capacity)) {
			if err := f.AddString(k); err != nil {
				t.Fatal(err)
			}
		}
		if f.Stats().Tables != 1 {
			t.Fatalf("%+v: grew to %d tables below its capacity", c, f.Stats().Tables)
		}
		fp := 0
		for i := range absent {
			if f.TestString("out" + strconv.Itoa(i)) {
				fp++
			}
		}
		got := float64(fp) / float64(absent)
		want := ExpectedRate(f.Config().BucketSize, f.Config().FingerprintBits, f.Stats().LoadFactor)
		sigma := math.Sqrt(want * (1 - want) / float64(absent))
		t.Logf("b=%d f=%d load %.3f: measured %.5f, expected %.5f, bound 2b/2^f %.5f",
			f.Config().BucketSize, f.Config().FingerprintBits, f.Stats().LoadFactor, got, want,
			2*float64(f.Config().BucketSize)/math.Ldexp(1, int(f.Config().FingerprintBits)))
		if math.Abs(got-want) > 6*sigma+0.03*want {
			t.Errorf("%+v: measured rate %.5f, expected %.5f", c, got, want)
		}
		if got > f.Config().Rate {
			t.Errorf("%+v: measured rate %.5f above the planned %.5f", c, got, f.Config().Rate)
		}
		if e := f.Stats().EstimatedFPR; math.Abs(e-want) > 1e-12 {
			t.Errorf("EstimatedFPR %v, want %v", e, want)
		}
	}
}

// TestGrowth inserts far more than the capacity: the filter chains tables,
// keeps every key and its rate stays near the sum of its tables' rates.
func TestGrowth(t *testing.T) {
	f := mustNew(t, Config{Capacity: 1000, Seed: 5})
	in := keys("g", 0, 100_000)
	for _, k := range in {
		if err := f.AddString(k); err != nil {
			t.Fatal(err)
		}
	}
	if f.Stats().Tables < 5 {
		t.Fatalf("only %d tables after 100x the capacity", f.Stats().Tables)
	}
	for k := 1; k < len(f.tables); k++ {
		if f.tables[k].buckets != 2*f.tables[k-1].buckets {
			t.Fatalf("table %d has %d buckets after %d", k, f.tables[k].buckets, f.tables[k-1].buckets)
		}
	}
	for _, k := range in {
		if !f.TestString(k) {
			t.Fatalf("false negative for %q", k)
		}
	}
	fp := 0
	const absent = 200_000
	for i := range absent {
		if f.TestString("absent" + strconv.Itoa(i)) {
			fp++
		}
	}
	got, want := float64(fp)/absent, f.Stats().EstimatedFPR
	t.Logf("%d tables, load %.3f, %.2f bits a key, rate %.4f (estimated %.4f)",
		f.Stats().Tables, f.Stats().LoadFactor, float64(f.Stats().SizeBytes*8)/float64(f.Len()), got, want)
	if math.Abs(got-want) > 6*math.Sqrt(want/absent)+0.05*want {
		t.Errorf("measured rate %.4f, estimated %.4f", got, want)
	}
	// Delete every other key: the rest stay.
	for i, k := range in {
		if i%2 == 0 && !f.DeleteString(k) {
			t.Fatalf("delete %q", k)
		}
	}
	for i, k := range in {
		if i%2 == 1 && !f.TestString(k) {
			t.Fatalf("false negative for %q after deletions", k)
		}
	}
}

func TestNoGrowReportsFull(t *testing.T) {
	f := mustNew(t, Config{Buckets: 16, NoGrow: true})
	var err error
	n := 0
	for ; err == nil; n++ {
		err = f.AddString(strconv.Itoa(n))
	}
	if !errors.Is(err, ErrFull) || f.Stats().Tables != 1 || f.Len() != uint64(n-1) {
		t.Fatalf("err %v, %d tables, len %d after %d adds", err, f.Stats().Tables, f.Len(), n)
	}
	if _, err := f.AddUniqueString("surely new " + strconv.Itoa(n)); !errors.Is(err, ErrFull) && err != nil {
		t.Fatal(err)
	}
}

func TestTableLimit(t *testing.T) {
	// 32-bit fingerprints, so that distinct keys do not share one.
	f := mustNew(t, Config{Buckets: 1, BucketSize: 1, FingerprintBits: 32, MaxKicks: 1, Expansion: 1})
	var err error
	for i := 0; err == nil && i < 10_000; i++ {
		err = f.AddString(strconv.Itoa(i))
	}
	if !errors.Is(err, ErrFull) || f.Stats().Tables != MaxTables {
		t.Fatalf("err %v with %d tables, want ErrFull at %d", err, f.Stats().Tables, MaxTables)
	}
}

// TestAltInvolution checks alt on tables of many sizes: the alternate of
// the alternate is the bucket itself, and it stays in range.
func TestAltInvolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := newShape(4, 8)
	for range 2000 {
		nb0 := 1 + rng.Uint64N(1<<20)
		shift := uint(rng.IntN(12))
		tb := table{buckets: nb0 << shift, nb0: nb0, shift: shift}
		_ = s
		i := rng.Uint64N(tb.buckets)
		fp := 1 + rng.Uint64N(255)
		a := tb.alt(i, fp)
		if a >= tb.buckets || tb.alt(a, fp) != i {
			t.Fatalf("nb0 %d shift %d: alt(%d) = %d, alt of that %d", nb0, shift, i, a, tb.alt(a, fp))
		}
		// Nesting: halving a bucket index gives the bucket in the smaller table.
		if shift > 0 {
			small := table{buckets: nb0 << (shift - 1), nb0: nb0, shift: shift - 1}
			if small.alt(i>>1, fp) != a>>1 {
				t.Fatalf("alt does not nest")
			}
		}
	}
}

// TestSWAR compares the register-wide bucket operations with slot by slot
// ones for every shape that fits a register.
func TestSWAR(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for b := uint64(1); b <= 16; b++ {
		for f := uint64(MinFingerprintBits); f <= MaxFingerprintBits && b*f <= 64; f++ {
			fast := newShape(b, f)
			slow := fast
			slow.fast = false
			tb := fast.newTable(7, 0)
			for range 300 {
				i := rng.Uint64N(7)
				fp := 1 + rng.Uint64N(min(fast.fpMask, 5)) // few values: many matches
				switch rng.IntN(3) {
				case 0:
					a, b := tb, tb
					a.words = append([]uint64(nil), tb.words...)
					b.words = append([]uint64(nil), tb.words...)
					if fast.put(&a, i, fp) != slow.put(&b, i, fp) || !slicesEqual(a.words, b.words) {
						t.Fatalf("b=%d f=%d: put differs", b, f)
					}
					tb = a
				case 1:
					a, b := tb, tb
					a.words = append([]uint64(nil), tb.words...)
					b.words = append([]uint64(nil), tb.words...)
					if fast.remove(&a, i, fp) != slow.remove(&b, i, fp) || !slicesEqual(a.words, b.words) {
						t.Fatalf("b=%d f=%d: remove differs", b, f)
					}
					tb = a
				}
				if fast.has(&tb, i, fp) != slow.has(&tb, i, fp) || fast.count(&tb, i, fp) != slow.count(&tb, i, fp) {
					t.Fatalf("b=%d f=%d: has/count differ", b, f)
				}
				if fast.occupied(&tb) != slow.occupied(&tb) || fast.occupied(&tb) != tb.count {
					t.Fatalf("b=%d f=%d: occupied %d/%d, count %d", b, f, fast.occupied(&tb), slow.occupied(&tb), tb.count)
				}
			}
		}
	}
}

func TestBatch(t *testing.T) {
	f := mustNew(t, Config{Capacity: 5000})
	in := keys("batch", 0, 3000)
	bs := make([][]byte, len(in))
	for i, k := range in {
		bs[i] = []byte(k)
	}
	n, err := AddMany(f, bs[:1500])
	if n != 1500 || err != nil {
		t.Fatal(n, err)
	}
	if n, err := AddMany(f, in[1500:]); n != 1500 || err != nil {
		t.Fatal(n, err)
	}
	probe := append(keys("batch", 0, 3000), keys("none", 0, 3000)...)
	got := TestMany(f, probe, nil)
	pb := make([][]byte, len(probe))
	for i, k := range probe {
		pb[i] = []byte(k)
	}
	got2 := TestMany(f, pb, make([]bool, 0, 1))
	for i, k := range probe {
		if got[i] != f.TestString(k) || got2[i] != got[i] {
			t.Fatalf("TestMany differs from Test for %q", k)
		}
		if i < 3000 && !got[i] {
			t.Fatalf("false negative %q", k)
		}
	}
	g := mustNew(t, Config{Buckets: 2, NoGrow: true})
	n, err = AddMany(g, in)
	if !errors.Is(err, ErrFull) || uint64(n) != g.Len() {
		t.Fatalf("AddMany into a full filter: %d, %v, len %d", n, err, g.Len())
	}
}
