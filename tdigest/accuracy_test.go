package tdigest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// inputs are the streams the accuracy promise is tested on.
var inputs = []struct {
	name string
	gen  func(r *rand.Rand, n int) []float64
}{
	{"uniform", func(r *rand.Rand, n int) []float64 { return fill(n, func(int) float64 { return r.Float64() }) }},
	{"normal", func(r *rand.Rand, n int) []float64 { return fill(n, func(int) float64 { return r.NormFloat64() }) }},
	{"lognormal", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 { return math.Exp(2 * r.NormFloat64()) })
	}},
	{"sorted", func(r *rand.Rand, n int) []float64 { return fill(n, func(i int) float64 { return float64(i) }) }},
	{"reversed", func(r *rand.Rand, n int) []float64 { return fill(n, func(i int) float64 { return float64(n - i) }) }},
	{"repeated", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 { return float64(r.IntN(7)) })
	}},
	{"extreme-tails", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 {
			switch r.IntN(100) {
			case 0:
				return 1e300 * r.Float64()
			case 1:
				return -1e300 * r.Float64()
			}
			return r.Float64()
		})
	}},
}

func fill(n int, f func(int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// rankError is how far q lies outside the range of ranks (as fractions of
// n) that v holds in the sorted data.
func rankError(sorted []float64, v, q float64) float64 {
	n := float64(len(sorted))
	lo := float64(sort.SearchFloat64s(sorted, v)) / n
	hi := float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > v })) / n
	switch {
	case q < lo:
		return lo - q
	case q > hi:
		return q - hi
	}
	return 0
}

// TestAccuracy checks the package's promise at compression 100 across
// sizes and inputs: quantile rank error ≤ 0.02 (≤ 0.003 for q outside
// [0.01, 0.99]) and CDF error ≤ 0.025; for few distinct values, a quantile
// between the distinct values around the exact one and CDF error ≤ 0.04.
func TestAccuracy(t *testing.T) {
	sizes := []int{10, 100, 1000, 10_000, 100_000}
	if testing.Short() {
		sizes = sizes[:4]
	}
	qs := []float64{0, 0.0001, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999, 1}
	for _, in := range inputs {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", in.name, n), func(t *testing.T) {
				data := in.gen(rand.New(rand.NewPCG(uint64(n), 7)), n)
				d, _ := New(DefaultCompression)
				for i, x := range data {
					if err := d.Add(x); err != nil {
						t.Fatal(err)
					}
					if i == n/3 { // a query in the middle, as a server sees
						d.Quantile(0.5)
					}
				}
				sorted := slices.Clone(data)
				slices.Sort(sorted)
				if d.Min() != sorted[0] || d.Max() != sorted[n-1] || d.Count() != int64(n) {
					t.Fatalf("min %v max %v count %d, want %v %v %d", d.Min(), d.Max(), d.Count(), sorted[0], sorted[n-1], n)
				}
				discrete := in.name == "repeated"
				var worst, worstTail float64
				for _, q := range qs {
					v := d.Quantile(q)
					e := rankError(sorted, v, q)
					if discrete {
						// Between the distinct values around the exact answer.
						i := min(n-1, int(q*float64(n)))
						lo := sorted[max(0, sort.SearchFloat64s(sorted, sorted[i])-1)]
						j := sort.Search(n, func(k int) bool { return sorted[k] > sorted[i] })
						hi := sorted[min(n-1, j)]
						if !(v >= lo && v <= hi) {
							t.Errorf("q %v: %v outside [%v, %v]", q, v, lo, hi)
						}
						continue
					}
					tail := q < 0.01 || q > 0.99
					if tail {
						worstTail = max(worstTail, e)
					} else {
						worst = max(worst, e)
					}
				}
				// A digest of one value answers NaN (see the package doc).
				var worstCDF float64
				for _, q := range qs {
					x := sorted[min(n-1, int(q*float64(n)))]
					lo := sort.SearchFloat64s(sorted, x)
					hi := sort.Search(n, func(i int) bool { return sorted[i] > x })
					exact := (float64(lo) + float64(hi-lo)/2) / float64(n)
					worstCDF = max(worstCDF, math.Abs(d.CDF(x)-exact))
				}
				cdfBound := 0.025
				if discrete {
					cdfBound = 0.04
				}
				if worst > 0.02 || worstTail > 0.003 || worstCDF > cdfBound {
					t.Errorf("rank error %.4f (tails %.4f), CDF error %.4f", worst, worstTail, worstCDF)
				}
				t.Logf("rank error %.5f tails %.5f cdf %.5f centroids %d", worst, worstTail, worstCDF, d.Info().MergedNodes)
			})
		}
	}
}
