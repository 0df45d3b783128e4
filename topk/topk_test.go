package topk

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// rbStream is the stream given to RedisBloom 2.8.20: item i is x((7i²+i) mod 23).
func rbStream() []string {
	var out []string
	for i := range 200 {
		out = append(out, fmt.Sprint("x", (i*i*7+i)%23))
	}
	return out
}

// RedisBloom's answers to TOPK.RESERVE tk 5 20 3 1, TOPK.ADD tk <stream>,
// TOPK.INCRBY tk x1 10 x2 0 y 5, TOPK.LIST tk WITHCOUNT, TOPK.COUNT and
// TOPK.QUERY tk x0 … x22 y ("" is a null reply). A decay of 1 makes
// RedisBloom's answers independent of its random draws.
const (
	rbAdd   = ",,,,,x7,x1,,,x0,,x8,x1,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,,,,x8,x0,x16,x14,x3,x6,x5,,,,x7,,,,,x0,,x7,,,"
	rbIncr  = ",,,"
	rbList  = "x8,18,x0,18,x20,18,x5,18,x19,18,"
	rbCount = "18,11,0,17,0,18,17,18,0,8,0,0,0,0,16,0,16,0,0,18,18,0,0,5,"
	rbQuery = "1,0,0,0,0,1,0,0,1,0,0,0,0,0,0,0,0,0,0,1,1,0,0,0,"
)

func TestSameAnswersAsRedisBloom(t *testing.T) {
	tk, err := New(5, 20, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, x := range rbStream() {
		e, _ := tk.AddString(x)
		fmt.Fprintf(&b, "%s,", e)
	}
	if b.String() != rbAdd {
		t.Errorf("ADD answers differ:\n got %s\nwant %s", b.String(), rbAdd)
	}
	b.Reset()
	for _, p := range []struct {
		s string
		n uint32
	}{{"x1", 10}, {"x2", 0}, {"y", 5}} {
		e, _ := tk.IncrByString(p.s, p.n)
		fmt.Fprintf(&b, "%s,", e)
	}
	if b.String() != rbIncr {
		t.Errorf("INCRBY answers %s, want %s", b.String(), rbIncr)
	}
	b.Reset()
	for _, it := range tk.List() {
		fmt.Fprintf(&b, "%s,%d,", it.Item, it.Count)
	}
	if b.String() != rbList {
		t.Errorf("LIST %s, want %s", b.String(), rbList)
	}
	var c, q strings.Builder
	for i := range 24 {
		x := fmt.Sprint("x", i)
		if i == 23 {
			x = "y"
		}
		fmt.Fprintf(&c, "%d,", tk.CountString(x))
		v := 0
		if tk.QueryString(x) {
			v = 1
		}
		fmt.Fprintf(&q, "%d,", v)
	}
	if c.String() != rbCount || q.String() != rbQuery {
		t.Errorf("COUNT %s\nwant  %s\nQUERY %s\nwant  %s", c.String(), rbCount, q.String(), rbQuery)
	}
}

func exactTop(stream []uint64, k int) (map[uint64]uint64, []uint64) {
	exact := map[uint64]uint64{}
	for _, x := range stream {
		exact[x]++
	}
	keys := make([]uint64, 0, len(exact))
	for x := range exact {
		keys = append(keys, x)
	}
	slices.SortFunc(keys, func(a, b uint64) int {
		if exact[a] != exact[b] {
			if exact[a] > exact[b] {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	return exact, keys[:min(k, len(keys))]
}

func item(x uint64) []byte { return fmt.Appendf(nil, "item-%d", x) }

// The promise on skewed streams, across sizes: recall of the true top k at
// least 90%, and the top items' counts within 10% (never above the truth
// by more than collisions of the same fingerprint allow: not at all here).
func TestAccuracyPromise(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		k     int
		n     int
		s     float64
		width uint32
	}{{10, 20000, 1.2, 80}, {50, 60000, 1.1, 400}, {100, 100000, 1.3, 800}} {
		z := rand.NewZipf(r, c.s, 1, 1<<20)
		stream := make([]uint64, c.n)
		for i := range stream {
			stream[i] = z.Uint64()
		}
		exact, top := exactTop(stream, c.k)
		tk, _ := New(uint32(c.k), c.width, 5, 0.9)
		for _, x := range stream {
			tk.Add(item(x))
		}
		got := map[string]uint32{}
		for _, it := range tk.List() {
			got[string(it.Item)] = it.Count
		}
		hit := 0
		for _, x := range top {
			if _, ok := got[string(item(x))]; ok {
				hit++
			}
		}
		if float64(hit) < 0.9*float64(len(top)) {
			t.Errorf("k=%d n=%d zipf %.1f: recall %d/%d", c.k, c.n, c.s, hit, len(top))
		}
		for _, x := range top[:c.k/5] {
			cnt := float64(tk.Count(item(x)))
			if cnt > float64(exact[x]) || cnt < 0.9*float64(exact[x]) {
				t.Errorf("k=%d: item %d counted %v, truly %d", c.k, x, cnt, exact[x])
			}
		}
	}
}

// Uniform and adversarial streams: HeavyKeeper promises nothing about
// which of equally light items it lists, but it never reports a count
// above an item's true count, and a heavy item hidden among many distinct
// light ones is found.
func TestUniformAndAdversarial(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{5000, 50000} {
		uni := make([]uint64, n)
		for i := range uni {
			uni[i] = r.Uint64N(uint64(n / 4))
		}
		adv := make([]uint64, 0, n)
		for i := range n {
			adv = append(adv, uint64(1000+i)) // all distinct
			if i%10 == 0 {
				adv = append(adv, 7) // one heavy item, 10% of the stream
			}
		}
		for name, stream := range map[string][]uint64{"uniform": uni, "adversarial": adv} {
			exact, _ := exactTop(stream, 10)
			tk, _ := New(10, 100, 4, 0.9)
			for _, x := range stream {
				tk.Add(item(x))
			}
			for _, it := range tk.List() {
				var x uint64
				fmt.Sscanf(string(it.Item), "item-%d", &x)
				if uint64(it.Count) > exact[x] {
					t.Errorf("%s n=%d: %s listed with %d, truly %d", name, n, it.Item, it.Count, exact[x])
				}
			}
			if name == "adversarial" {
				l := tk.List()
				if len(l) == 0 || !bytes.Equal(l[0].Item, item(7)) || float64(l[0].Count) < 0.9*float64(exact[7]) {
					t.Errorf("n=%d: the heavy item is not first with ≥ 90%% of its %d: %v", n, exact[7], l[:min(len(l), 1)])
				}
			}
		}
	}
}

// An item is in the list (Query) exactly when List reports it, and Add's
// expelled item is the one that leaves.
func TestExpelled(t *testing.T) {
	tk, _ := New(3, 50, 3, 0.9)
	r := rand.New(rand.NewPCG(9, 9))
	for range 3000 {
		x := item(uint64(r.IntN(20)))
		before := tk.List()
		e, ok := tk.Add(x)
		if ok && e != nil {
			if tk.Query(e) {
				t.Fatalf("expelled %s still in the list", e)
			}
			found := false
			for _, it := range before {
				found = found || bytes.Equal(it.Item, e)
			}
			if !found {
				t.Fatalf("expelled %s was not listed before", e)
			}
		}
		if ok && !tk.Query(x) {
			t.Fatalf("%s entered the list but Query says no", x)
		}
	}
}

func TestNewLimits(t *testing.T) {
	for _, p := range [][4]float64{{0, 1, 1, 0.5}, {1, 0, 1, 0.5}, {1, 1, 0, 0.5}, {1, 1, 1, 0}, {1, 1, 1, 1.01}} {
		if _, err := New(uint32(p[0]), uint32(p[1]), uint32(p[2]), p[3]); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("New(%v) = %v", p, err)
		}
	}
	var z TopK
	if e, ok := z.AddString("x"); e != nil || ok || z.QueryString("x") || z.CountString("x") != 0 {
		t.Error("zero TopK answered")
	}
}

// TestListIsStableSortOfHeap checks List against the heap's slots sorted
// by count, highest first, ties kept in heap order, zero counts dropped:
// on lists with many ties, a partly filled heap and an empty one.
func TestListIsStableSortOfHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial, adds := range []int{0, 5, 40, 3000} {
		tk, err := New(50, 400, 5, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		for range adds {
			tk.IncrByString(fmt.Sprint("i", r.IntN(200)), uint32(1+r.IntN(3)))
		}
		ref := slices.Clone(tk.heap)
		slices.SortStableFunc(ref, func(a, b slot) int { return int(b.count) - int(a.count) })
		var want []Item
		for _, x := range ref {
			if x.count > 0 {
				want = append(want, Item{Item: x.item, Count: x.count})
			}
		}
		got := tk.List()
		ties := 0
		for i := 1; i < len(got); i++ {
			if got[i].Count == got[i-1].Count {
				ties++
			}
		}
		if adds >= 3000 && ties == 0 {
			t.Fatalf("trial %d: no ties to order", trial)
		}
		if len(got) != len(want) || (adds == 0) != (got == nil) {
			t.Fatalf("trial %d: %d items, want %d", trial, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].Item, want[i].Item) || got[i].Count != want[i].Count {
				t.Fatalf("trial %d: item %d is %q %d, want %q %d", trial, i, got[i].Item, got[i].Count, want[i].Item, want[i].Count)
			}
		}
	}
}
