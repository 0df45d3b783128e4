package bloom

import (
	"strconv"
	"testing"
)

// Benchmarks for `go test -bench`; compare runs with benchstat. The
// comparison against other libraries lives in ../bench.

const benchN = 1 << 20

var benchKeys = func() []string {
	k := make([]string, benchN)
	for i := range k {
		k[i] = "https://www.site" + strconv.Itoa(i%9973) + ".example.com/path/to/article-" + strconv.Itoa(i) + ".html"
	}
	return k
}()

// benchOrder visits the keys in order, as a stream of keys arrives; the
// filter's memory is visited at random all the same, since keys hash to
// random positions.
func benchOrder(i int) int { return i & (benchN - 1) }

func benchLayouts(b *testing.B, run func(b *testing.B, f filter)) {
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			f := mustNew(b, l, benchN, 0.01)
			run(b, f)
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	benchLayouts(b, func(b *testing.B, f filter) {
		for i := 0; b.Loop(); i++ {
			f.AddString(benchKeys[benchOrder(i)])
		}
	})
}

func BenchmarkAddSync(b *testing.B) {
	benchLayouts(b, func(b *testing.B, f filter) {
		s := f.Sync()
		for i := 0; b.Loop(); i++ {
			s.AddString(benchKeys[benchOrder(i)])
		}
	})
}

func BenchmarkTestHit(b *testing.B) {
	benchLayouts(b, func(b *testing.B, f filter) {
		batchAdd(f, benchKeys)
		for i := 0; b.Loop(); i++ {
			if !f.TestString(benchKeys[benchOrder(i)]) {
				b.Fatal("false negative")
			}
		}
	})
}

func BenchmarkTestMiss(b *testing.B) {
	benchLayouts(b, func(b *testing.B, f filter) {
		batchAdd(f, benchKeys[:benchN/2])
		for i := 0; b.Loop(); i++ {
			f.TestString(benchKeys[benchN/2+benchOrder(i)/2])
		}
	})
}

func BenchmarkTestMany(b *testing.B) {
	benchLayouts(b, func(b *testing.B, f filter) {
		batchAdd(f, benchKeys[:benchN/2])
		out := make([]bool, 0, 1024)
		b.ResetTimer()
		for i := 0; i < b.N; i += 1024 {
			off := benchOrder(i) &^ 1023
			out = batchTest(f, benchKeys[off:off+1024], out[:0])
		}
	})
}

// BenchmarkConcurrent adds and tests from b's parallelism; run it with
// -cpu 1,2 to see how the Sync view scales across cores.
func BenchmarkConcurrent(b *testing.B) {
	benchLayouts(b, func(b *testing.B, f filter) {
		s := f.Sync()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				k := benchKeys[benchOrder(i)]
				if i&1 == 0 {
					s.AddString(k)
				} else {
					s.TestString(k)
				}
				i++
			}
		})
	})
}
