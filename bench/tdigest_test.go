package main

// go test benchmarks and an accuracy comparison of bloomkit's t-digest
// (RedisBloom's algorithm) against github.com/caio/go-tdigest and
// github.com/influxdata/tdigest, all at compression 100:
//
//	go test -run 'TestTDigestAccuracy' -v          # rank error per library and input
//	go test -run '^$' -bench 'TDigest' -count 10   # Add and Quantile speed
//
// TDIGEST.md records a run.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/bloomkit/bloomkit/tdigest"
	caio "github.com/caio/go-tdigest/v4"
	influx "github.com/influxdata/tdigest"
)

// quantiler is what the t-digest comparisons use.
type quantiler interface {
	add(x float64)
	quantile(q float64) float64
}

type tdLib struct {
	name string
	make func() quantiler
}

var tdLibs = []tdLib{
	{"bloomkit", func() quantiler {
		d, err := tdigest.New(100)
		if err != nil {
			panic(err)
		}
		return tdBK{d}
	}},
	{"caio", func() quantiler {
		d, err := caio.New(caio.Compression(100))
		if err != nil {
			panic(err)
		}
		return tdCaio{d}
	}},
	{"influxdata", func() quantiler { return tdInflux{influx.NewWithCompression(100)} }},
}

type tdBK struct{ d *tdigest.Digest }

func (t tdBK) add(x float64)              { _ = t.d.Add(x) }
func (t tdBK) quantile(q float64) float64 { return t.d.Quantile(q) }

type tdCaio struct{ d *caio.TDigest }

func (t tdCaio) add(x float64)              { _ = t.d.Add(x) }
func (t tdCaio) quantile(q float64) float64 { return t.d.Quantile(q) }

type tdInflux struct{ d *influx.TDigest }

func (t tdInflux) add(x float64)              { t.d.Add(x, 1) }
func (t tdInflux) quantile(q float64) float64 { return t.d.Quantile(q) }

var tdInputs = []struct {
	name string
	gen  func(r *rand.Rand, i, n int) float64
}{
	{"uniform", func(r *rand.Rand, _, _ int) float64 { return r.Float64() }},
	{"normal", func(r *rand.Rand, _, _ int) float64 { return r.NormFloat64() }},
	{"lognormal", func(r *rand.Rand, _, _ int) float64 { return math.Exp(2 * r.NormFloat64()) }},
	{"sorted", func(_ *rand.Rand, i, _ int) float64 { return float64(i) }},
	{"reversed", func(_ *rand.Rand, i, n int) float64 { return float64(n - i) }},
}

// TestTDigestAccuracy reports each library's worst rank error (how far
// the true rank of the answer lies from q·n, as a fraction of n) over
// quantiles from 0.001 to 0.999, in the middle (0.01–0.99) and the tails.
func TestTDigestAccuracy(t *testing.T) {
	const n = 200_000
	qs := []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999}
	for _, in := range tdInputs {
		data := make([]float64, n)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range data {
			data[i] = in.gen(r, i, n)
		}
		sorted := slices.Clone(data)
		slices.Sort(sorted)
		for _, lib := range tdLibs {
			d := lib.make()
			for _, x := range data {
				d.add(x)
			}
			var mid, tail float64
			for _, q := range qs {
				v := d.quantile(q)
				lo := float64(sort.SearchFloat64s(sorted, v)) / n
				hi := float64(sort.Search(n, func(i int) bool { return sorted[i] > v })) / n
				e := max(lo-q, q-hi, 0)
				if q < 0.01 || q > 0.99 {
					tail = max(tail, e)
				} else {
					mid = max(mid, e)
				}
			}
			t.Logf("%-10s %-11s rank error: middle %.5f tails %.5f", in.name, lib.name, mid, tail)
		}
	}
}

func BenchmarkTDigestAdd(b *testing.B) {
	for _, lib := range tdLibs {
		b.Run(lib.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			xs := make([]float64, 1<<16)
			for i := range xs {
				xs[i] = r.NormFloat64()
			}
			d := lib.make()
			b.ResetTimer()
			for i := range b.N {
				d.add(xs[i&(len(xs)-1)])
			}
		})
	}
}

func BenchmarkTDigestQuantile(b *testing.B) {
	for _, lib := range tdLibs {
		b.Run(lib.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			d := lib.make()
			for range 100_000 {
				d.add(r.NormFloat64())
			}
			b.ResetTimer()
			sink := 0.0
			for i := range b.N {
				sink += d.quantile(float64(i%999+1) / 1000)
			}
			_ = fmt.Sprint(sink)
		})
	}
}
