package main

// go test benchmarks of bloomkit's cms.Sketch and topk.TopK against
// github.com/tylertreat/BoomFilters' CountMinSketch and TopK (a Count-Min
// Sketch with a heap), one item an op, on a Zipf(1.1) stream of 1M items:
//
//	go test -run TestSketchAccuracy -v; go test -run '^$' -bench Sketch -count 6 | tee sketch.txt; benchstat sketch.txt
//
// Both count-min sketches are sized for ε = 0.001, δ = 0.001 (bloomkit:
// 2000 × 10 32-bit counters as RedisBloom's INITBYPROB; BoomFilters:
// 2719 × 10 64-bit counters); both Top-Ks keep k = 50 (bloomkit: 400 × 5
// buckets, decay 0.9; BoomFilters: its CMS at ε = 0.001, δ = 0.001).

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"
)

const sketchN = 1 << 20

var (
	sketchOnce  sync.Once
	sketchItems [][]byte
	sketchExact map[string]uint64
)

func sketchSetup() {
	sketchOnce.Do(func() {
		r := rand.New(rand.NewPCG(11, 12))
		z := rand.NewZipf(r, 1.1, 1, 1<<24)
		sketchExact = map[string]uint64{}
		sketchItems = make([][]byte, sketchN)
		for i := range sketchItems {
			sketchItems[i] = fmt.Appendf(nil, "user-%d", z.Uint64())
			sketchExact[string(sketchItems[i])]++
		}
	})
}

func BenchmarkSketchCMSIncr(b *testing.B) {
	sketchSetup()
	b.Run("bloomkit", func(b *testing.B) {
		s, _ := cms.NewWithEstimates(0.001, 0.001)
		for i := 0; b.Loop(); i++ {
			s.IncrBy(sketchItems[i&(sketchN-1)], 1)
		}
	})
	b.Run("bloomkit-conservative", func(b *testing.B) {
		s, _ := cms.NewWithEstimates(0.001, 0.001)
		s.Conservative = true
		for i := 0; b.Loop(); i++ {
			s.IncrBy(sketchItems[i&(sketchN-1)], 1)
		}
	})
	b.Run("boomfilters", func(b *testing.B) {
		s := boom.NewCountMinSketch(0.001, 0.001)
		for i := 0; b.Loop(); i++ {
			s.Add(sketchItems[i&(sketchN-1)])
		}
	})
}

func BenchmarkSketchCMSQuery(b *testing.B) {
	sketchSetup()
	s, _ := cms.NewWithEstimates(0.001, 0.001)
	o := boom.NewCountMinSketch(0.001, 0.001)
	for _, it := range sketchItems {
		s.IncrBy(it, 1)
		o.Add(it)
	}
	b.Run("bloomkit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s.Query(sketchItems[i&(sketchN-1)])
		}
	})
	b.Run("boomfilters", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			o.Count(sketchItems[i&(sketchN-1)])
		}
	})
}

func BenchmarkSketchTopKAdd(b *testing.B) {
	sketchSetup()
	b.Run("bloomkit", func(b *testing.B) {
		t, _ := topk.New(50, 400, 5, 0.9)
		for i := 0; b.Loop(); i++ {
			t.Add(sketchItems[i&(sketchN-1)])
		}
	})
	b.Run("boomfilters", func(b *testing.B) {
		t := boom.NewTopK(0.001, 0.001, 50)
		for i := 0; b.Loop(); i++ {
			t.Add(sketchItems[i&(sketchN-1)])
		}
	})
}

// TestSketchAccuracy prints each library's error on the stream: the mean
// and largest overestimate of the count-min sketches over the distinct
// items, and the Top-Ks' recall of the true 50 heaviest.
func TestSketchAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	sketchSetup()
	s, _ := cms.NewWithEstimates(0.001, 0.001)
	c, _ := cms.NewWithEstimates(0.001, 0.001)
	c.Conservative = true
	o := boom.NewCountMinSketch(0.001, 0.001)
	tk, _ := topk.New(50, 400, 5, 0.9)
	ot := boom.NewTopK(0.001, 0.001, 50)
	for _, it := range sketchItems {
		s.IncrBy(it, 1)
		c.IncrBy(it, 1)
		o.Add(it)
		tk.Add(it)
		ot.Add(it)
	}
	var es, ec, eo, ms, mc, mo uint64
	for k, n := range sketchExact {
		a, b, d := uint64(s.QueryString(k))-n, uint64(c.QueryString(k))-n, o.Count([]byte(k))-n
		es, ec, eo = es+a, ec+b, eo+d
		ms, mc, mo = max(ms, a), max(mc, b), max(mo, d)
	}
	m := float64(len(sketchExact))
	t.Logf("CMS over %d distinct items, N = %d: mean/max overestimate bloomkit %.2f/%d, conservative %.2f/%d, boomfilters %.2f/%d",
		len(sketchExact), sketchN, float64(es)/m, ms, float64(ec)/m, mc, float64(eo)/m, mo)
	keys := make([]string, 0, len(sketchExact))
	for k := range sketchExact {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return sketchExact[keys[i]] > sketchExact[keys[j]] })
	top := map[string]bool{}
	for _, k := range keys[:50] {
		top[k] = true
	}
	hb, ho := 0, 0
	for _, it := range tk.List() {
		if top[string(it.Item)] {
			hb++
		}
	}
	for _, e := range ot.Elements() {
		if top[string(e.Data)] {
			ho++
		}
	}
	t.Logf("Top-50 recall: bloomkit %d/50 (%d bytes), boomfilters %d/50", hb, tk.MemUsage(), ho)
}
