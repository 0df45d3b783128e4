package cms

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Answers of RedisBloom 2.8.20 to CMS.INITBYDIM g 10 3, CMS.INCRBY g
// item0 1 item1 2 … item49 50, then CMS.QUERY g item0 … item49 absent "".
var (
	rbIncr  = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 10, 10, 14, 12, 13, 14, 15, 31, 27, 18, 19, 37, 26, 40, 56, 34, 25, 33, 27, 28, 82, 30, 62, 38, 63, 48, 97, 84, 105, 63, 41, 103, 146, 94, 49, 117, 128, 149, 80, 165, 150, 136}
	rbQuery = []uint32{27, 41, 27, 159, 94, 27, 80, 150, 136, 22, 123, 22, 99, 136, 137, 99, 27, 127, 165, 127, 94, 99, 173, 34, 149, 80, 27, 28, 136, 99, 137, 150, 99, 123, 137, 99, 146, 149, 41, 137, 146, 94, 49, 149, 174, 149, 80, 165, 150, 136, 27, 27}
)

func TestSameAnswersAsRedisBloom(t *testing.T) {
	s, err := New(10, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if got := s.IncrByString(fmt.Sprint("item", i), uint64(i+1)); got != rbIncr[i] {
			t.Errorf("IncrBy item%d = %d, RedisBloom answered %d", i, got, rbIncr[i])
		}
	}
	for i := range 50 {
		if got := s.QueryString(fmt.Sprint("item", i)); got != rbQuery[i] {
			t.Errorf("Query item%d = %d, RedisBloom answered %d", i, got, rbQuery[i])
		}
	}
	if got := s.QueryString("absent"); got != rbQuery[50] {
		t.Errorf("Query absent = %d, want %d", got, rbQuery[50])
	}
	if got := s.Query(nil); got != rbQuery[51] {
		t.Errorf("Query empty = %d, want %d", got, rbQuery[51])
	}
	if s.Count() != 50*51/2 {
		t.Errorf("Count = %d, want %d", s.Count(), 50*51/2)
	}
}

// CMS.INITBYPROB's dimensions, as RedisBloom 2.8.20 reported them.
func TestDimensionsAsRedisBloom(t *testing.T) {
	for _, c := range []struct {
		e, p float64
		w, d uint64
	}{
		{0.1, 0.5, 20, 1}, {0.01, 0.01, 200, 7}, {0.001, 0.001, 2000, 10}, {0.3, 0.25, 7, 2},
		{0.5, 0.125, 4, 3}, {0.07, 0.0625, 29, 4}, {0.0001, 0.000001, 20000, 20}, {0.33, 0.9, 7, 1},
		{0.2, 0.03125, 10, 5}, {0.011, 0.1, 182, 4},
	} {
		w, d, err := Dimensions(c.e, c.p)
		if err != nil || w != c.w || d != c.d {
			t.Errorf("Dimensions(%v, %v) = %d, %d, %v; want %d, %d", c.e, c.p, w, d, err, c.w, c.d)
		}
	}
	for _, bad := range [][2]float64{{0, 0.5}, {1, 0.5}, {0.1, 0}, {0.1, 1}, {math.NaN(), 0.5}, {-1, 0.5}} {
		if _, _, err := Dimensions(bad[0], bad[1]); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("Dimensions(%v) = %v, want ErrInvalidParams", bad, err)
		}
	}
	if _, _, err := Dimensions(1e-300, 0.5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Dimensions(1e-300) = %v, want ErrTooLarge", err)
	}
}

func TestSaturation(t *testing.T) {
	s, _ := New(4, 2)
	if got := s.IncrByString("a", math.MaxUint32-1); got != math.MaxUint32-1 {
		t.Fatalf("IncrBy = %d", got)
	}
	if got := s.IncrByString("a", 5); got != math.MaxUint32 {
		t.Fatalf("IncrBy past the top = %d, want saturation", got)
	}
	s2, _ := New(4, 2)
	if got := s2.IncrByString("b", 1<<32); got != math.MaxUint32 {
		t.Fatalf("IncrBy 2^32 = %d, want saturation", got)
	}
	if s2.Count() != 1<<32 {
		t.Fatalf("Count = %d", s2.Count())
	}
}

func TestMerge(t *testing.T) {
	a, _ := New(50, 4)
	b, _ := New(50, 4)
	for i := range 200 {
		a.IncrByString(fmt.Sprint(i), 3)
		b.IncrByString(fmt.Sprint(i%50), 1)
	}
	d, _ := New(50, 4)
	if err := d.Merge([]*Sketch{a, b}, []int64{2, 3}); err != nil {
		t.Fatal(err)
	}
	for j := range d.counters {
		if d.counters[j] != 2*a.counters[j]+3*b.counters[j] {
			t.Fatalf("counter %d = %d", j, d.counters[j])
		}
	}
	if d.Count() != 2*600+3*200 {
		t.Fatalf("Count = %d", d.Count())
	}
	// Into one of its sources, with a negative weight.
	saved := a.Clone()
	if err := a.Merge([]*Sketch{a, a}, []int64{3, -1}); err != nil {
		t.Fatal(err)
	}
	for j := range a.counters {
		if a.counters[j] != 2*saved.counters[j] {
			t.Fatalf("self merge: counter %d = %d, want %d", j, a.counters[j], 2*saved.counters[j])
		}
	}
	// A negative result changes nothing.
	before := d.Clone()
	if err := d.Merge([]*Sketch{a, b}, []int64{-1, 0}); !errors.Is(err, ErrOverflow) {
		t.Fatalf("negative merge: %v", err)
	}
	if fmt.Sprint(before.counters) != fmt.Sprint(d.counters) || before.count != d.count {
		t.Fatal("a failed merge changed the sketch")
	}
	big, _ := New(50, 4)
	big.IncrByString("x", math.MaxUint32)
	if err := d.Merge([]*Sketch{big, big}, nil); !errors.Is(err, ErrOverflow) {
		t.Fatalf("overflowing merge: %v", err)
	}
	other, _ := New(51, 4)
	if err := d.Merge([]*Sketch{other}, nil); !errors.Is(err, ErrMismatch) {
		t.Fatalf("mismatched merge: %v", err)
	}
}

func TestMulCount(t *testing.T) {
	for _, c := range []struct {
		count uint64
		w     int64
		want  int64
		ok    bool
	}{
		{5, 3, 15, true}, {5, -3, -15, true}, {1 << 63, -1, math.MinInt64, true}, {1 << 63, 1, 0, false},
		{math.MaxUint64, 0, 0, true}, {1 << 62, 2, 0, false}, {1 << 62, -2, math.MinInt64, true},
	} {
		got, ok := mulCount(c.count, c.w)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("mulCount(%d, %d) = %d, %v", c.count, c.w, got, ok)
		}
	}
}

// zipf, uniform and adversarial streams of n increments over a universe.
func streams(n int, r *rand.Rand) map[string][]uint64 {
	z := rand.NewZipf(r, 1.1, 1, 1<<20)
	out := map[string][]uint64{}
	for range n {
		out["zipf"] = append(out["zipf"], z.Uint64())
		out["uniform"] = append(out["uniform"], r.Uint64N(uint64(n)))
	}
	// Adversarial: every item once (the most collisions a stream of n can
	// cause), then one heavy item carrying as much as all of them.
	for i := range n / 2 {
		out["adversarial"] = append(out["adversarial"], uint64(i))
	}
	for range n / 2 {
		out["adversarial"] = append(out["adversarial"], math.MaxUint64)
	}
	return out
}

// The promise, across sizes and streams: no estimate is below the truth,
// and the share of items overestimated by more than 2N/width is at most
// 2^−depth (plus a 4σ binomial margin for the items measured).
func TestAccuracyPromise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2000, 40000} {
		for name, stream := range streams(n, r) {
			exact := map[uint64]uint64{}
			for _, x := range stream {
				exact[x]++
			}
			for _, dims := range [][2]uint64{{16, 1}, {64, 2}, {256, 3}, {2048, 4}, {8192, 6}} {
				for _, conservative := range []bool{false, true} {
					s, _ := New(dims[0], dims[1])
					s.Conservative = conservative
					var key [8]byte
					item := func(x uint64) []byte {
						for i := range 8 {
							key[i] = byte(x >> (8 * i))
						}
						return key[:]
					}
					for _, x := range stream {
						s.IncrBy(item(x), 1)
					}
					bound := 2 * float64(len(stream)) / float64(dims[0])
					bad := 0
					for x, c := range exact {
						est := uint64(s.Query(item(x)))
						if est < c {
							t.Fatalf("%s n=%d %v: item %d estimated %d below its count %d", name, n, dims, x, est, c)
						}
						if float64(est-c) > bound {
							bad++
						}
					}
					p := math.Pow(2, -float64(dims[1]))
					m := float64(len(exact))
					limit := p*m + 4*math.Sqrt(p*(1-p)*m) + 1
					if float64(bad) > limit {
						t.Errorf("%s n=%d %dx%d conservative=%v: %d of %d items overestimated by more than %.0f, promise allows %.1f",
							name, n, dims[0], dims[1], conservative, bad, len(exact), bound, limit)
					}
				}
			}
		}
	}
}

// Conservative update is never looser than the plain one on the same stream.
func TestConservativeTighter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	plain, _ := New(128, 3)
	cons, _ := New(128, 3)
	cons.Conservative = true
	var items []string
	for range 20000 {
		x := fmt.Sprint(r.IntN(3000))
		items = append(items, x)
		plain.IncrByString(x, 1)
		cons.IncrByString(x, 1)
	}
	var sp, sc uint64
	for _, x := range items[:3000] {
		a, b := plain.QueryString(x), cons.QueryString(x)
		if b > a {
			t.Fatalf("conservative estimate %d above plain %d for %s", b, a, x)
		}
		sp += uint64(a)
		sc += uint64(b)
	}
	if sc >= sp {
		t.Fatalf("conservative total %d not below plain %d", sc, sp)
	}
}

func TestNewLimits(t *testing.T) {
	for _, d := range [][2]uint64{{0, 1}, {1, 0}} {
		if _, err := New(d[0], d[1]); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("New(%v) = %v", d, err)
		}
	}
	if _, err := New(MaxCells, 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("New(MaxCells, 2) = %v", err)
	}
	var z Sketch
	if z.Add([]byte("x")) != 0 || z.QueryString("x") != 0 {
		t.Error("zero sketch answered")
	}
	if _, err := z.MarshalBinary(); !errors.Is(err, ErrZero) {
		t.Errorf("zero MarshalBinary = %v", err)
	}
}

// BenchmarkMerge merges ten 20000 × 10 sketches (2,000,000 counters read).
func BenchmarkMerge(b *testing.B) {
	var srcs []*Sketch
	for i := range 10 {
		s, _ := New(20000, 10)
		for j := range 20000 {
			s.IncrByString(fmt.Sprint(i, j), 3)
		}
		srcs = append(srcs, s)
	}
	d, _ := New(20000, 10)
	b.SetBytes(int64(4 * 20000 * 10 * len(srcs)))
	b.ResetTimer()
	for range b.N {
		if err := d.Merge(srcs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMergeWeightedMatchesDirectSum checks Merge against the weighted sum
// computed counter by counter, over sketches wider than one block, with
// negative weights, the destination among the sources, results at the
// edges of a counter's range, and weights large enough to take the
// checked path.
func TestMergeWeightedMatchesDirectSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const width, depth = 3001, 3 // 9003 counters: more than four blocks
	fill := func(max uint32) *Sketch {
		s, _ := New(width, depth)
		for j := range s.counters {
			s.counters[j] = uint32(r.Uint64N(uint64(max) + 1))
		}
		s.count = uint64(r.Uint64N(1 << 20))
		return s
	}
	var merged, refused int
	for trial := range 60 {
		srcs := []*Sketch{fill(1000), fill(1000), fill(1000)}
		ws := []int64{int64(r.IntN(5)) - 1, int64(r.IntN(4)), int64(r.IntN(4)) + 1}
		switch trial % 4 {
		case 1: // the largest counter fits exactly, or is one too many
			srcs[0].counters[7777] = math.MaxUint32 - uint32(trial%8/4)
			ws = []int64{1, 0, 0}
			if trial%8 >= 4 {
				srcs[1].counters[7777] = 1
				ws = []int64{1, 1, 0}
			}
		case 2: // a weight of 2^31 (the checked path), on zero counters
			clear(srcs[1].counters)
			srcs[1].count = 0
			ws[1] = 1 << 31
		}
		dest := fill(5)
		if trial%3 == 0 {
			srcs[2] = dest // into one of its sources
		}
		want := make([]int64, len(dest.counters))
		ok := true
		for j := range want {
			for k, s := range srcs {
				want[j] += int64(s.counters[j]) * ws[k]
			}
			ok = ok && want[j] >= 0 && want[j] <= math.MaxUint32
		}
		var count int64
		for k, s := range srcs {
			count += int64(s.count) * ws[k]
		}
		ok = ok && count >= 0
		before := dest.Clone()
		err := dest.Merge(srcs, ws)
		if !ok {
			if !errors.Is(err, ErrOverflow) {
				t.Fatalf("trial %d (weights %v): err %v, want ErrOverflow", trial, ws, err)
			}
			if !slices.Equal(before.counters, dest.counters) || before.count != dest.count {
				t.Fatalf("trial %d: a failed merge changed the sketch", trial)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("trial %d (weights %v): %v", trial, ws, err)
		}
		for j, v := range want {
			if int64(dest.counters[j]) != v {
				t.Fatalf("trial %d (weights %v): counter %d = %d, want %d", trial, ws, j, dest.counters[j], v)
			}
		}
		if int64(dest.count) != count {
			t.Fatalf("trial %d: count %d, want %d", trial, dest.count, count)
		}
		merged++
	}
	if merged < 10 || refused < 5 {
		t.Fatalf("%d merges and %d refusals: the trials miss a case", merged, refused)
	}
}
