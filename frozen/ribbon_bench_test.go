package frozen

import (
	"fmt"
	"testing"
)

// BenchmarkRibbon times lookups by hash in a ribbon of a million keys:
// keys it holds (hit) and keys it does not (miss), in an order that
// visits the filter at random.
func BenchmarkRibbon(b *testing.B) {
	n := uint64(1_000_000)
	if testing.Short() {
		n = 50_000 // in cache: the lookup's own cost
	}
	rb, _ := NewRibbonBuilder(0.5, 1)
	for i := range n {
		rb.AddHash(remix(i, 1))
	}
	for _, p := range []float64{0.01, 1.0 / 256, 1e-4} {
		rb.rate = p
		f, err := rb.Build()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("p=%g/hit", p), func(b *testing.B) {
			i := uint64(0)
			for b.Loop() {
				if !f.TestHash(remix(i%n, 1)) {
					b.Fatal("lost a key")
				}
				i += 7919
			}
		})
		b.Run(fmt.Sprintf("p=%g/miss", p), func(b *testing.B) {
			i := uint64(0)
			for b.Loop() {
				f.TestHash(absentHash(i))
				i++
			}
		})
	}
	b.Run("build", func(b *testing.B) {
		rb.rate = 0.01
		for b.Loop() {
			if _, err := rb.Build(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
	})
}
