package main

// go test benchmarks of bloomkit's Counting and Scalable against
// github.com/tylertreat/BoomFilters' CountingBloomFilter and
// ScalableBloomFilter, one key an op, 1M keys at p = 1%:
//
//	go test -run '^$' -bench Boom -count 6 | tee boom.txt; benchstat boom.txt
//
// The table in BOOM.md comes from ./cmd/boomcmp.

import (
	"strconv"
	"sync"
	"testing"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/bloomkit/bloomkit/bloom"
)

const (
	boomN     = 1_000_000
	boomP     = 0.01
	boomStart = 10_000 // first capacity of the scalable filters: BoomFilters' default hint
)

var (
	boomOnce                sync.Once
	boomPresent, boomAbsent [][]byte
)

func boomSetup(b *testing.B) {
	boomOnce.Do(func() {
		mk := func(off int) [][]byte {
			keys := make([][]byte, boomN)
			for i := range keys {
				j := uint64(i + off)
				k := append([]byte("https://www.site"), strconv.FormatUint(j%99991, 10)...)
				k = append(k, ".example.com/path/to/article-"...)
				k = strconv.AppendUint(k, j, 10)
				keys[i] = append(k, ".html"...)
			}
			return keys
		}
		boomPresent, boomAbsent = mk(0), mk(boomN)
	})
	b.ResetTimer()
}

// boomFilter is what the benchmarks need of each contender.
type boomFilter struct {
	add    func([]byte)
	test   func([]byte) bool
	remove func([]byte) bool // nil for scalable filters
}

type boomContender struct {
	name string
	make func(b *testing.B) boomFilter
}

var boomContenders = []boomContender{
	{"counting/bloomkit", func(b *testing.B) boomFilter {
		f, err := bloom.NewCounting(boomN, boomP)
		if err != nil {
			b.Fatal(err)
		}
		return boomFilter{f.Add, f.Test, f.Delete}
	}},
	{"counting/BoomFilters", func(b *testing.B) boomFilter {
		f := boom.NewDefaultCountingBloomFilter(boomN, boomP)
		return boomFilter{func(k []byte) { f.Add(k) }, f.Test, f.TestAndRemove}
	}},
	{"scalable/bloomkit", func(b *testing.B) boomFilter {
		f, err := bloom.NewScalable(boomStart, boomP)
		if err != nil {
			b.Fatal(err)
		}
		return boomFilter{add: f.Add, test: f.Test}
	}},
	{"scalable/BoomFilters", func(b *testing.B) boomFilter {
		f := boom.NewDefaultScalableBloomFilter(boomP)
		return boomFilter{add: func(k []byte) { f.Add(k) }, test: f.Test}
	}},
}

// BenchmarkBoomAdd inserts keys into a fresh filter, a new one after every
// n keys (the scalable filters grow while timed, as they do in use).
func BenchmarkBoomAdd(b *testing.B) {
	for _, c := range boomContenders {
		b.Run(c.name, func(b *testing.B) {
			boomSetup(b)
			f := c.make(b)
			for i := 0; b.Loop(); i++ {
				if i%boomN == 0 && i > 0 {
					b.StopTimer()
					f = c.make(b)
					b.StartTimer()
				}
				f.add(boomPresent[i%boomN])
			}
		})
	}
}

func boomFilled(b *testing.B, c boomContender) boomFilter {
	boomSetup(b)
	f := c.make(b)
	for _, k := range boomPresent {
		f.add(k)
	}
	b.ResetTimer()
	return f
}

func BenchmarkBoomTestHit(b *testing.B) {
	for _, c := range boomContenders {
		b.Run(c.name, func(b *testing.B) {
			f := boomFilled(b, c)
			for i := 0; b.Loop(); i++ {
				if !f.test(boomPresent[i%boomN]) {
					b.Fatal("false negative")
				}
			}
		})
	}
}

func BenchmarkBoomTestMiss(b *testing.B) {
	for _, c := range boomContenders {
		b.Run(c.name, func(b *testing.B) {
			f := boomFilled(b, c)
			fp := 0
			for i := 0; b.Loop(); i++ {
				if f.test(boomAbsent[i%boomN]) {
					fp++
				}
			}
			b.ReportMetric(float64(fp)/float64(b.N), "fpr")
		})
	}
}

// BenchmarkBoomRemove removes every key of a full counting filter, then
// refills it untimed.
func BenchmarkBoomRemove(b *testing.B) {
	for _, c := range boomContenders[:2] {
		b.Run(c.name, func(b *testing.B) {
			f := boomFilled(b, c)
			for i := 0; b.Loop(); i++ {
				if i%boomN == 0 && i > 0 {
					b.StopTimer()
					for _, k := range boomPresent {
						f.add(k)
					}
					b.StartTimer()
				}
				if !f.remove(boomPresent[i%boomN]) {
					b.Fatal("an added key could not be removed")
				}
			}
		})
	}
}
